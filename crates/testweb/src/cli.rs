//! `layercrawl webfarm`: serve the test web until Ctrl-C. Prints the start
//! URLs and the resolve rule first, as a valid seeds file (`#` lines are
//! comments there), so `layercrawl webfarm > seeds.txt &` works.

use std::io::Write as _;
use std::net::SocketAddr;

use super::{Farm, FarmConfig, FarmError};

/// `on` or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// Serve the generated test web on loopback until Ctrl-C (options of `layercrawl webfarm`).
#[derive(Clone, Debug, clap::Args)]
pub struct WebfarmArgs {
    /// Regular sites (s000.test, s001.test, …).
    #[arg(long, default_value_t = 20)]
    pub sites: u32,
    /// Article pages per site.
    #[arg(long, default_value_t = 200)]
    pub pages: u32,
    /// Seed of the generated content (same seed, same web).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Latency per response in ms, uniform in MIN-MAX (or a single value).
    #[arg(long, default_value = "0-0", value_parser = parse_latency)]
    pub latency: (u32, u32),
    /// Serve the fault, charset and robots special hosts.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub faults: OnOff,
    /// Approximate size of an article page, KiB.
    #[arg(long, default_value_t = 8)]
    pub page_kb: u32,
    /// Duration of the slow-headers and trickle faults, ms.
    #[arg(long, default_value_t = 3000)]
    pub slow_ms: u64,
    /// Keep a per-host request log in /__farm/stats.
    #[arg(long)]
    pub log_requests: bool,
    /// Serve the shop host shop.test (product pages with typed fields; truth at /__farm/shop).
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub shop: OnOff,
    /// Products of the shop (1-99999).
    #[arg(long, default_value_t = 60)]
    pub shop_products: u32,
    /// Regular sites answer 429 (no Retry-After) to a request arriving sooner
    /// than this many ms after the previous one to the host (0: off).
    #[arg(long, default_value_t = 0)]
    pub rate_limit: u32,
    /// Serve sitemaps: robots.txt Sitemap lines, an index, a gzip sitemap, /sitemap.xml on blogs.
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub sitemaps: OnOff,
    /// Serve script-built pages under /app/ on every site (a script shell
    /// whose links exist only after its scripts run; for rendering).
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub apps: OnOff,
    /// Forward proxies to start beside the web (plain HTTP and CONNECT),
    /// each counting its traffic (/__farm/proxies).
    #[arg(long, default_value_t = 0)]
    pub proxies: u32,
    /// Serve a topical magazine under /topics/ on every site with this many
    /// articles per site (for focused crawling; 0: none).
    #[arg(long, default_value_t = 0)]
    pub topics: u32,
    /// Serve articles about a small knowledge base's companies under /kb/
    /// on every site, this many per site, with the knowledge base at
    /// /__farm/kb.csv (for entity recognition; 0: none).
    #[arg(long, default_value_t = 0)]
    pub kb: u32,
    /// Serve trouble.test with this many ordinary pages beside its problem
    /// pages (an always-503, a trickle, slow bodies, a 429 area, a
    /// redirect loop and a 5xx burst; 0: off).
    #[arg(long, default_value_t = 0)]
    pub trouble_pages: u32,
    /// How long trouble.test's 5xx burst lasts, ms (0: none).
    #[arg(long, default_value_t = 30_000)]
    pub trouble_burst_ms: u64,
    /// Serve limited.test with this many pages, every one behind a rate
    /// limit as nginx's limit_req sets one (10 requests a second, burst 5,
    /// 429 without Retry-After beyond; 0: off).
    #[arg(long, default_value_t = 0)]
    pub limited_pages: u32,
}

impl WebfarmArgs {
    /// The farm settings these options describe.
    #[must_use]
    pub fn config(&self) -> FarmConfig {
        FarmConfig {
            sites: self.sites,
            pages: self.pages,
            seed: self.seed,
            faults: self.faults == OnOff::On,
            latency_ms: self.latency,
            page_kb: self.page_kb,
            listen: self.listen,
            slow_ms: self.slow_ms,
            log_requests: self.log_requests,
            shop: self.shop == OnOff::On,
            shop_products: self.shop_products,
            rate_limit_ms: self.rate_limit,
            sitemaps: self.sitemaps == OnOff::On,
            proxies: self.proxies,
            apps: self.apps == OnOff::On,
            topics: self.topics,
            kb: self.kb,
            trouble_pages: self.trouble_pages,
            trouble_burst_ms: self.trouble_burst_ms,
            limited_pages: self.limited_pages,
            ..FarmConfig::default()
        }
    }
}

/// `MIN-MAX` or `N` milliseconds.
fn parse_latency(s: &str) -> Result<(u32, u32), String> {
    let num = |t: &str| t.trim().parse::<u32>().map_err(|e| format!("{t:?} is not a number of milliseconds: {e}"));
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (num(a)?, num(b)?),
        None => {
            let v = num(s)?;
            (v, v)
        }
    };
    if lo > hi {
        return Err(format!("minimum {lo} is above maximum {hi}"));
    }
    Ok((lo, hi))
}

/// Serves the test web until Ctrl-C.
///
/// # Errors
/// When the settings are invalid, the address cannot be bound, or the
/// runtime cannot start.
pub fn run_webfarm(args: WebfarmArgs) -> Result<(), FarmError> {
    let cfg = args.config();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(FarmError::Runtime)?;
    rt.block_on(async move {
        let farm = Farm::start(cfg.clone()).await?;
        let addr = farm.connect_addr();
        let mut out = std::io::stdout().lock();
        let faults = if cfg.faults { "on" } else { "off" };
        let _ = writeln!(out, "# layercrawl test web: {} sites x {} pages, seed {}, faults {faults}, listening on {}", cfg.sites, cfg.pages, cfg.seed, farm.addr());
        let _ = writeln!(out, "# resolve rule: {}", farm.resolve_rule());
        let _ = writeln!(out, "#   layercrawl run --seeds SEEDS --depth 3 --resolve '{}' --allow-private", farm.resolve_rule());
        let _ = writeln!(out, "#   curl --resolve s000.test:{0}:127.0.0.1 http://s000.test:{0}/   (or: curl -H 'Host: s000.test' http://{1}/)", addr.port(), addr);
        let _ = writeln!(out, "# stats: http://{addr}/__farm/stats  truth: http://{addr}/__farm/truth?depth=3  faults: http://{addr}/__farm/faults");
        if cfg.shop {
            let _ = writeln!(out, "# shop: http://shop.test/ with {} products, truth: http://{addr}/__farm/shop", cfg.shop_products);
        }
        for p in farm.proxy_addrs() {
            let _ = writeln!(out, "# proxy: http://{p}  (curl -x http://{p} http://s000.test/; counts at http://{addr}/__farm/proxies)");
        }
        let _ = writeln!(out, "# start URLs (Ctrl-C stops):");
        for u in farm.start_urls() {
            let _ = writeln!(out, "{u}");
        }
        let _ = out.flush();
        drop(out);
        tokio::signal::ctrl_c().await.map_err(FarmError::Signal)?;
        eprintln!("test web: stopping");
        farm.shutdown();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_parses_ranges_and_single_values() {
        assert_eq!(parse_latency("100-300"), Ok((100, 300)));
        assert_eq!(parse_latency("50"), Ok((50, 50)));
        assert!(parse_latency("300-100").is_err());
        assert!(parse_latency("x").is_err());
    }

    #[test]
    fn shop_flags_default_to_off_and_sixty_products() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: WebfarmArgs,
        }
        let cfg = |argv: &[&str]| <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.args.config());
        let off = cfg(&["webfarm"]).expect("defaults");
        assert_eq!((off.shop, off.shop_products), (false, 60));
        let on = cfg(&["webfarm", "--shop", "on", "--shop-products", "25"]).expect("shop flags");
        assert_eq!((on.shop, on.shop_products), (true, 25));
        assert!(cfg(&["webfarm", "--shop", "yes"]).is_err());
    }
}
