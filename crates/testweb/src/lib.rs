//! The test web: a generated, deterministic multi-host web on loopback,
//! for layercrawl's tests, benchmarks, `layercrawl demo` and
//! `layercrawl webfarm`, with the ground truth to check a crawl against and
//! a politeness audit measured by the server. It is its own crate so the
//! crawler library does not carry it: only the binary and the tests and
//! benches depend on it.
//!
//! **Sites.** Many hosts share one listener and are told apart by the Host
//! header: regular sites `s000.test`, `s001.test`, … (each its own
//! registrable domain, some with a `blog.sNNN.test` sub-host) and, with
//! [`FarmConfig::faults`] on, `faults.test`, `charset.test`,
//! `robots500.test`, `crawldelay.test`, `ratelimit.test` and
//! `norobots.test`, and with [`FarmConfig::shop`] on, `shop.test`. A
//! crawler reaches them with the resolve rule
//! `*.test=127.0.0.1:PORT` ([`Farm::resolve_rule`]); any other host answers
//! 404, so nothing leaves loopback. Pages are generated on request from
//! `xxh3(seed, site, page)`; nothing is materialised, and the same seed
//! gives the same web on every run.
//!
//! **Page kinds.** A regular site has a home page, section, tag and blog
//! lists with pagination, articles (with print views, AMP copies, comment-
//! reply and share URLs, URL variants that duplicate them), utility pages,
//! a members area behind robots.txt, mirrors, linked files (CSS, JS,
//! images, PDF, RSS) and three traps (an endless calendar, an ever-deeper
//! relative path, a faceted search). [`Farm::page_kind`] names the kind of
//! a URL.
//!
//! **Faults.** `faults.test` serves every HTTP-level fault at its own path
//! (error statuses, redirects and loops, slow headers, trickles, resets,
//! oversized and compressed bodies, wrong content types, `Retry-After`),
//! `charset.test` the same page in several encodings declared in different
//! places, and the small robots and rate-limit hosts their one difference.
//! [`Farm::fault_cases`] lists every fault URL with what a correct crawler
//! records for it.
//!
//! **Shop.** With [`FarmConfig::shop`] on, `shop.test` is an online shop:
//! a home page, paginated listings (`/products?page=N`, ten product cards
//! each), product pages (`/product/K`) whose typed fields (price in four
//! formats, currency, availability, release date, authors, rating, stock
//! count, and the same as schema.org JSON-LD) sit in markup made awkward on
//! purpose (generated ids, varying layout, products without a price or with
//! `Call us`), promotion, about and help pages, and a cart robots.txt
//! disallows. [`Farm::shop_products`] is its ground truth, field by field,
//! for scoring crawl rules that extract fields; [`Farm::shop_listing_pages`]
//! lists the listings.
//!
//! **Ground truth.** [`Farm::truth`] runs a BFS over the same renderer that
//! serves the pages, so truth and served HTML cannot drift apart: the
//! content pages and pages reachable within a depth, duplicate and
//! near-duplicate groups, trap families and robots-disallowed links.
//! [`Farm::page_links`] gives every link of a page with its [`LinkRole`]
//! (navigation and boilerplate or content), which scores a noise filter.
//! [`Farm::stats`] is the politeness audit: per host the request count,
//! the smallest gap between requests, the most in flight at once and
//! requests for disallowed paths. The same is served as JSON under
//! `/__farm/` (`stats`, `reset`, `faults`, `truth`, `links`, `shop`) for
//! processes that only have the URL, e.g. `layercrawl webfarm`.
//!
//! **How tests use it.** A test starts a farm on a free port (synchronous
//! code with [`Farm::start_background`], async code with [`Farm::start`]),
//! writes [`Farm::start_urls`] as the seeds, crawls with the resolve rule
//! and loopback allowed, and compares what it read back with the truth and
//! the stats. Dropping the [`Farm`] stops it.
//!
//! ```no_run
//! use testweb::{Farm, FarmConfig};
//! let farm = Farm::start_background(FarmConfig { sites: 4, pages: 50, ..FarmConfig::default() }).expect("start");
//! println!("{} {:?}", farm.resolve_rule(), farm.start_urls());
//! let truth = farm.truth(&farm.start_urls(), 3);
//! println!("{} content pages within 3 hops", truth.content_pages.len());
//! farm.shutdown();
//! ```

mod apps;
mod article;
mod body;
mod charset;
mod cli;
mod farm_truth;
mod faults;
mod files;
pub mod kb;
mod kinds;
pub mod limited;
mod pages;
mod proxy;
mod render;
mod rng;
mod server;
mod shop;
mod site;
mod sitemaps;
mod stats;
pub mod topics;
mod traps;
pub mod trouble;
mod truth;
mod validators;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

pub use cli::{run_webfarm, OnOff, WebfarmArgs};
pub use faults::FaultCase;
pub use proxy::ProxyStats;
pub use shop::ShopProduct;
pub use stats::{in_flight, spacing, FarmStats, HostStats, RequestLog, RequestSpan, LAG_MS};
pub use truth::{LinkRole, TrapFamily, Truth, TruthLink};

use site::{HostId, Special, World};
use stats::LiveStats;

/// How to build and serve the test web.
#[derive(Clone, Debug)]
pub struct FarmConfig {
    /// Regular sites (`s000.test` …).
    pub sites: u32,
    /// Article pages per site.
    pub pages: u32,
    pub seed: u64,
    /// Serve the fault, charset and robots special hosts.
    pub faults: bool,
    /// Uniform latency per response, `min..=max` ms; `(0, 0)` for none.
    pub latency_ms: (u32, u32),
    /// Approximate size of an article page's HTML.
    pub page_kb: u32,
    pub listen: SocketAddr,
    /// How slow the slow-headers and trickle faults are.
    pub slow_ms: u64,
    /// Keep a bounded per-host request log in the stats.
    pub log_requests: bool,
    /// Serve the shop host `shop.test` (off: the web is exactly as without it).
    pub shop: bool,
    /// Products of the shop, `1..=99999` (with `shop` on).
    pub shop_products: u32,
    /// A regular site answers 429 (without Retry-After) to a request that
    /// arrives sooner than this many ms after the previous one to its host,
    /// as an overloaded server would; 0: off.
    pub rate_limit_ms: u32,
    /// Serve sitemaps (robots.txt `Sitemap:` lines, an index, a gzip file;
    /// off: the web is exactly as without them).
    pub sitemaps: bool,
    /// Forward proxies to start beside the web (plain HTTP and CONNECT),
    /// each counting what went through it; 0: none.
    pub proxies: u32,
    /// Serve script-built pages under `/app/` on every regular site (a
    /// script shell whose links exist only after its scripts run).
    pub apps: bool,
    /// Serve a topical magazine under `/topics/` on every regular site,
    /// with this many articles per site ([`topics`]); 0: none.
    pub topics: u32,
    /// Serve articles that mention a small knowledge base's entities
    /// under `/kb/` on every regular site, this many per site ([`kb`]);
    /// 0: none.
    pub kb: u32,
    /// Serve `trouble.test` ([`trouble`]) with this many ordinary pages
    /// beside its problem pages; 0: off (the web is exactly as without it).
    pub trouble_pages: u32,
    /// `trouble.test`: how long its 5xx burst lasts, ms (0: no burst); how
    /// long its trickling page drips; how long its slow pages pause.
    pub trouble_burst_ms: u64,
    pub trouble_trickle_ms: u64,
    pub trouble_slow_ms: u64,
    /// Serve `limited.test` ([`limited`]: every page behind nginx's
    /// `limit_req` of 10 requests a second, burst 5) with this many pages;
    /// 0: off (the web is exactly as without it).
    pub limited_pages: u32,
}

impl Default for FarmConfig {
    fn default() -> Self {
        Self {
            sites: 20,
            pages: 200,
            seed: 1,
            faults: true,
            latency_ms: (0, 0),
            page_kb: 8,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            slow_ms: 3000,
            log_requests: false,
            shop: false,
            shop_products: 60,
            rate_limit_ms: 0,
            sitemaps: false,
            proxies: 0,
            apps: false,
            topics: 0,
            kb: 0,
            trouble_pages: 0,
            trouble_burst_ms: 30_000,
            trouble_trickle_ms: 60_000,
            trouble_slow_ms: 1500,
            limited_pages: 0,
        }
    }
}

/// Why the test web could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FarmError {
    #[error("the test web cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("cannot start the test web's async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("invalid test web setting: {0}")]
    Config(String),
    #[error("waiting for Ctrl-C failed: {0}")]
    Signal(std::io::Error),
    #[error("the test web's thread ended before it started serving")]
    Thread,
}

/// State shared by every connection.
pub(crate) struct Core {
    world: World,
    stats: Arc<LiveStats>,
    latency_ms: (u32, u32),
    slow_ms: u64,
    rate_limit_ms: u32,
    sitemaps: bool,
    apps: bool,
    /// Articles per site of the topical section; 0: none.
    topics: u32,
    /// Articles per site of the knowledge-base section; 0: none.
    kb: u32,
    /// The forward proxies (`FarmConfig::proxies`).
    proxies: Vec<proxy::ProxyLive>,
    /// `trouble.test` and `limited.test`, when on.
    trouble: Option<trouble::Trouble>,
    limited: Option<limited::Limited>,
    /// Set once `/503-once` has answered 503 (cleared by a stats reset).
    once_503: AtomicBool,
    /// `/wait-then-ok` answered its first 503 already.
    once_wait: AtomicBool,
    /// Requests so far, the latency PRNG's counter.
    requests: AtomicU64,
    /// Which night it is (see `validators`): 0 until a test moves it.
    edition: std::sync::atomic::AtomicU32,
}

impl Core {
    fn new(cfg: &FarmConfig) -> Result<Self, FarmError> {
        if cfg.latency_ms.0 > cfg.latency_ms.1 {
            return Err(FarmError::Config(format!(
                "latency minimum {} ms is above its maximum {} ms",
                cfg.latency_ms.0, cfg.latency_ms.1
            )));
        }
        if cfg.sites == 0 || cfg.sites > 100_000 {
            return Err(FarmError::Config(format!("sites must be 1..=100000, not {}", cfg.sites)));
        }
        if cfg.pages == 0 {
            return Err(FarmError::Config("pages must be at least 1".into()));
        }
        if cfg.shop && !(1..=shop::MAX_PRODUCTS).contains(&cfg.shop_products) {
            return Err(FarmError::Config(format!(
                "shop products must be 1..={}, not {}",
                shop::MAX_PRODUCTS,
                cfg.shop_products
            )));
        }
        let mut world = World::new(cfg.seed, cfg.sites, cfg.pages, cfg.faults, cfg.page_kb);
        if cfg.shop {
            world = world.with_shop(cfg.shop_products);
        }
        let mut names = Vec::with_capacity(2 * cfg.sites as usize + Special::ALL.len());
        for n in 0..cfg.sites {
            names.push(host_name(&world, HostId::Site(n)));
        }
        for n in 0..cfg.sites {
            names.push(host_name(&world, HostId::Blog(n)));
        }
        names.extend(Special::ALL.iter().map(|s| s.host().to_string()));
        if cfg.shop {
            // The slot of `HostId::Shop`, right after the special hosts.
            names.push(shop::HOST.to_string());
        }
        Ok(Self {
            stats: Arc::new(LiveStats::new(names, cfg.log_requests)),
            world,
            latency_ms: cfg.latency_ms,
            slow_ms: cfg.slow_ms,
            rate_limit_ms: cfg.rate_limit_ms,
            sitemaps: cfg.sitemaps,
            apps: cfg.apps,
            topics: cfg.topics,
            kb: cfg.kb,
            proxies: Vec::new(),
            trouble: (cfg.trouble_pages > 0).then(|| {
                trouble::Trouble::new(
                    cfg.trouble_pages,
                    std::time::Duration::from_millis(cfg.trouble_burst_ms),
                    std::time::Duration::from_millis(cfg.trouble_trickle_ms),
                    std::time::Duration::from_millis(cfg.trouble_slow_ms),
                )
            }),
            limited: (cfg.limited_pages > 0).then(|| limited::Limited::new(cfg.limited_pages)),
            once_503: AtomicBool::new(false),
            once_wait: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            edition: std::sync::atomic::AtomicU32::new(0),
        })
    }

    fn start_urls(&self) -> Vec<String> {
        let w = &self.world;
        let mut out: Vec<String> = (0..w.sites).map(|n| w.origin(HostId::Site(n)) + "/").collect();
        if w.faults {
            out.extend(Special::ALL.iter().map(|s| format!("http://{}/", s.host())));
        }
        if w.shop.is_some() {
            out.push(format!("http://{}/", shop::HOST));
        }
        if self.trouble.is_some() {
            out.push(format!("http://{}/", trouble::HOST));
        }
        if self.limited.is_some() {
            out.push(format!("http://{}/", limited::HOST));
        }
        out
    }

    fn reset(&self) {
        self.stats.reset();
        for p in &self.proxies {
            p.reset();
        }
        self.once_503.store(false, Ordering::SeqCst);
        self.once_wait.store(false, Ordering::SeqCst);
        if let Some(t) = &self.trouble {
            t.reset();
        }
        if let Some(l) = &self.limited {
            l.reset();
        }
    }
}

fn host_name(world: &World, h: HostId) -> String {
    world.origin(h).split_off("http://".len())
}

/// A running test web. Dropping it (or [`Farm::shutdown`]) stops it.
pub struct Farm {
    core: Arc<Core>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    /// The serving thread of [`Farm::start_background`].
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Farm {
    /// Binds `cfg.listen` and serves on the current tokio runtime.
    ///
    /// # Errors
    /// When the settings are invalid or the address cannot be bound.
    pub async fn start(cfg: FarmConfig) -> Result<Farm, FarmError> {
        let (core, addr, stop) = bind(&cfg).await?;
        Ok(Farm { core, addr, stop, thread: None })
    }

    /// Starts the farm on its own thread with its own two-worker runtime,
    /// for synchronous tests and benchmarks.
    ///
    /// # Errors
    /// As [`Farm::start`], or when the runtime or thread cannot start.
    pub fn start_background(cfg: FarmConfig) -> Result<Farm, FarmError> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("testweb".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("testweb-worker")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(FarmError::Runtime(e)));
                        return;
                    }
                };
                rt.block_on(async move {
                    match bind(&cfg).await {
                        Ok((core, addr, stop)) => {
                            let mut stopped = stop.subscribe();
                            if ready_tx.send(Ok((core, addr, stop))).is_ok() {
                                // Serve until the Farm handle says stop (or is gone).
                                let _ = stopped.changed().await;
                            }
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                        }
                    }
                });
            })
            .map_err(FarmError::Runtime)?;
        let (core, addr, stop) = ready_rx.recv().map_err(|_| FarmError::Thread)??;
        Ok(Farm { core, addr, stop, thread: Some(thread) })
    }

    /// The bound address (the real port when started on port 0).
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The crawler's resolve override, e.g. `*.test=127.0.0.1:8080`.
    #[must_use]
    pub fn resolve_rule(&self) -> String {
        format!("*.test={}", self.connect_addr())
    }

    /// The address to connect to (loopback when bound to the unspecified address).
    fn connect_addr(&self) -> SocketAddr {
        let mut a = self.addr;
        if a.ip().is_unspecified() {
            a.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        a
    }

    /// One home URL per regular site, then the special hosts when faults
    /// are on, then `http://shop.test/` when the shop is on.
    #[must_use]
    pub fn start_urls(&self) -> Vec<String> {
        self.core.start_urls()
    }

    /// A snapshot of the politeness audit (the JSON of `/__farm/stats`).
    #[must_use]
    pub fn stats(&self) -> FarmStats {
        self.core.stats.snapshot()
    }

    /// Clears the stats (and re-arms `/503-once`).
    pub fn reset_stats(&self) {
        self.core.reset();
    }

    /// Sets how long `trouble.test`'s 5xx burst lasts from now on (0: no
    /// burst; it still starts at the host's [`trouble::BURST_AFTER`]th page
    /// request after a [`Farm::reset_stats`]).
    pub fn set_trouble_burst(&self, burst: std::time::Duration) {
        if let Some(t) = &self.core.trouble {
            t.set_burst(burst);
        }
    }

    /// Every URL the sites' and blogs' sitemaps list, with its `lastmod`
    /// (empty unless the web serves sitemaps).
    #[must_use]
    pub fn sitemap_urls(&self) -> Vec<(String, String)> {
        if !self.core.sitemaps {
            return Vec::new();
        }
        let w = &self.core.world;
        (0..w.sites)
            .flat_map(|n| std::iter::once(HostId::Site(n)).chain(w.site(n).has_blog.then_some(HostId::Blog(n))))
            .flat_map(|h| sitemaps::listed(w, h))
            .collect()
    }

    /// The forward proxies' addresses (`FarmConfig::proxies`), in order.
    #[must_use]
    pub fn proxy_addrs(&self) -> Vec<SocketAddr> {
        self.core.proxies.iter().map(|p| p.addr).collect()
    }

    /// What went through each proxy.
    #[must_use]
    pub fn proxy_stats(&self) -> Vec<proxy::ProxyStats> {
        self.core.proxies.iter().map(proxy::ProxyLive::snapshot).collect()
    }

    /// Takes proxy `i` down (it answers 502 to everything) or brings it back.
    pub fn set_proxy_down(&self, i: usize, down: bool) {
        if let Some(p) = self.core.proxies.get(i) {
            p.down.store(down, Ordering::SeqCst);
        }
    }

    /// Makes a night pass: edition `n` changes one regular page in ten
    /// (their ETag and Last-Modified with them); edition 0 is the web as
    /// it starts. Also `/__farm/edition?n=N`.
    pub fn set_edition(&self, n: u32) {
        self.core.edition.store(n, Ordering::SeqCst);
    }

    /// Stops serving and waits for the serving thread, if any.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Farm {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn bind(cfg: &FarmConfig) -> Result<(Arc<Core>, SocketAddr, watch::Sender<bool>), FarmError> {
    let mut core = Core::new(cfg)?;
    if cfg.faults {
        // The gzip bomb compresses 1 GiB once, a second or more on a
        // loaded machine: built before the first request, it is not a
        // crawler's first request to it that waits (past a test's 2 s
        // timeout, which then saw `timeout` instead of `too_large`).
        let _ = tokio::task::spawn_blocking(body::gzip_bomb).await;
    }
    let listener =
        TcpListener::bind(cfg.listen).await.map_err(|source| FarmError::Bind { addr: cfg.listen, source })?;
    let addr = listener.local_addr().map_err(|source| FarmError::Bind { addr: cfg.listen, source })?;
    let mut proxies = Vec::new();
    for _ in 0..cfg.proxies {
        let at = SocketAddr::new(cfg.listen.ip(), 0);
        let l = TcpListener::bind(at).await.map_err(|source| FarmError::Bind { addr: at, source })?;
        let a = l.local_addr().map_err(|source| FarmError::Bind { addr: at, source })?;
        core.proxies.push(proxy::ProxyLive::new(a));
        proxies.push(l);
    }
    let core = Arc::new(core);
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(server::accept_loop(listener, Arc::clone(&core), stopped.clone()));
    let started = std::time::Instant::now();
    for (i, l) in proxies.into_iter().enumerate() {
        tokio::spawn(proxy::accept_loop(l, Arc::clone(&core), i, addr, started, stopped.clone()));
    }
    Ok((core, addr, stop))
}

#[cfg(test)]
mod tests;
