//! Configuration: raw flags and a job file become one validated [`CrawlConfig`].
//!
//! Step one is [`RunArgs`] (clap) and [`JobFile`] (TOML), both all-optional;
//! step two, [`CrawlConfig::from_sources`], merges them (flags win), applies
//! defaults and checks every value, naming the option at fault.

mod args;
mod capabilities;
mod job;
mod limits;
mod settings;

use std::path::PathBuf;
use std::time::Duration;

pub use args::RunArgs;
pub use job::JobFile;
pub use limits::{parse_percent, parse_size};
pub use settings::{PageSettings, RulesSource, RunSettings};

use capabilities::{entity_settings, proxy_config, render_config};

use crate::fetch::resolve::{AllowPrivate, ResolveRule};
use crate::fetch::FetchConfig;
use crate::parse::ParseConfig;

pub use crate::scope::Scope;

/// Which response bodies are stored in the `body` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyPolicy {
    /// HTML pages only (the default: what notebooks re-parse).
    Html,
    /// Every body, including PDFs and images.
    All,
    /// None (the `text` column still has the main text).
    None,
}

impl std::str::FromStr for BodyPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "html" => Ok(Self::Html),
            "all" => Ok(Self::All),
            "none" => Ok(Self::None),
            _ => Err(format!("{s:?} is not a body policy; allowed: html, all, none")),
        }
    }
}

/// What the noise filter does (README, "The noise filter").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Denoise {
    /// No noise filter: every in-scope, followable link is followed.
    Off,
    /// Label noise links as `drop` would, but follow them all, to measure
    /// what the filter would cost.
    Mark,
    /// The default: links in navigation blocks are labelled `dom_ratio` but
    /// followed; link targets are dropped on evidence, when they resemble a
    /// URL cluster whose fetched pages were copies, client errors or
    /// redirects off the site.
    Drop,
    /// The literal method: links in navigation blocks are not followed, nor
    /// clusters made mostly of them, nor strong deviants of a cluster. It
    /// misses most pages of sites that are reached through menus and tables
    /// of contents.
    Strict,
}

impl Denoise {
    /// How link targets are judged noise in this mode.
    #[must_use]
    pub fn method(self) -> crate::denoise::Method {
        match self {
            Self::Strict => crate::denoise::Method::Strict,
            _ => crate::denoise::Method::Evidence,
        }
    }

    /// Whether links that the DOM prefilter flags are followed.
    #[must_use]
    pub fn follows_suspects(self) -> bool {
        self != Self::Strict
    }
}

impl std::str::FromStr for Denoise {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(Self::Off),
            "mark" => Ok(Self::Mark),
            "drop" => Ok(Self::Drop),
            "strict" => Ok(Self::Strict),
            _ => Err(format!("{s:?} is not a denoise mode; allowed: off, mark, drop, strict")),
        }
    }
}

/// Settings of the optimise step between layers: noise filter and dedup (README, "The URL optimiser").
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct OptimiseConfig {
    pub denoise: Denoise,
    pub cluster: crate::denoise::cluster::ClusterConfig,
    /// Known noise URLs (or URL patterns) that mark the clusters they resemble.
    pub noise_patterns: Vec<String>,
    /// Entries of the weighted cache lists in front of the visited store, shared out over the partitions.
    pub cache_entries: usize,
    /// Distinct queries followed per host and path in one layer (faceted
    /// search and calendar traps); the rest are labelled `trap`.
    pub max_query_variants: usize,
    /// In what order a layer's input is written, and so fetched per host
    /// and cut by a page budget (`--order`).
    #[serde(default)]
    pub order: crate::focus::Order,
}

/// Where a run's tasks run (`--executor`).
#[derive(Clone, Debug)]
pub enum ExecutorChoice {
    /// In the driver's process.
    Local,
    /// Child processes of this program, `workers` at a time.
    Processes { workers: usize },
    /// Kubernetes Indexed Jobs.
    Kubernetes(crate::exec::KubeSettings),
}

/// Everything a run needs, validated.
#[derive(Clone, Debug)]
pub struct CrawlConfig {
    pub seeds: PathBuf,
    pub depth: u32,
    pub data: String,
    pub partitions: u32,
    pub scope: Scope,
    pub layer_timeout: Option<Duration>,
    pub store_body: BodyPolicy,
    /// How the Parquet files are compressed.
    pub compression: crate::store::Compression,
    pub fetch: FetchConfig,
    pub parse: ParseConfig,
    /// How the main text is rendered (`--text-format`), and which of
    /// `text` and `main_text` are stored (`--store-text`).
    pub text_format: crate::extract::main_text::TextFormat,
    pub store_text: crate::extract::main_text::StoreText,
    pub optimise: OptimiseConfig,
    /// URL normalisation: which query parameters are stripped.
    pub urls: std::sync::Arc<crate::urlnorm::UrlPolicy>,
    pub executor: ExecutorChoice,
    /// Wait for another run holding the data location (`--wait`).
    pub wait: bool,
    /// Print the Kubernetes Jobs and exit (`--dry-run`).
    pub dry_run: bool,
    pub json: bool,
    pub quiet: bool,
    /// The extract stage's extractors, whose columns follow the core
    /// columns of `doc`; none unless a library caller registers some.
    pub extractors: crate::extract::Extractors,
    /// The rules file (`--rules`), checked.
    pub rules: Option<RulesSource>,
    /// The crawl plan (`--plan`), checked.
    pub plan: Option<crate::focus::PlanSource>,
    /// The relevant URLs a crawl is measured against (`--truth`).
    pub truth: Option<crate::focus::truth::Truth>,
    /// The knowledge base and its settings (`--entities`), checked.
    pub entities: Option<crate::extract::entities::EntitiesSource>,
    /// Pages fetched per layer at most (`--max-pages`).
    pub max_pages: Option<u64>,
    /// Last night's crawl (`--previous`): its data location.
    pub previous: Option<String>,
    /// `--sitemaps`: at most this many URLs per host from the seeds' sitemaps.
    pub sitemaps: Option<usize>,
    /// `--warc`: every exchange as WARC records beside `doc`.
    pub warc: bool,
    /// Where the pages are published as they are committed (`--sink`).
    pub sink: Option<crate::sink::SinkSpec>,
}

/// A configuration problem, naming the option and what is allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("job file {}: {reason}", path.display())]
    Job { path: PathBuf, reason: String },
    #[error("option `{option}`: {reason}")]
    Value { option: &'static str, reason: String },
    /// A flag's value needs a cargo feature this build lacks.
    #[error(transparent)]
    NotBuilt(#[from] crate::error::NotBuilt),
    #[error("option `{0}` is required (give the flag --{0} or set it in the job file)")]
    Missing(&'static str),
    /// Every problem of the rules file, one a line with its position.
    #[error("{0}")]
    Rules(#[from] crate::rules::RulesError),
    /// Every problem of the plan file, one a line with its position.
    #[error("{0}")]
    Plan(#[from] crate::focus::PlanError),
}

fn bad(option: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Value { option, reason: reason.into() }
}

impl CrawlConfig {
    /// Merges flags over the job file (if any), applies defaults, validates.
    ///
    /// # Errors
    /// The first invalid or missing option, by name.
    pub fn from_sources(args: &RunArgs) -> Result<Self, ConfigError> {
        let job = match &args.job {
            Some(path) => JobFile::load(path)?,
            None => JobFile::default(),
        };
        let proxy = proxy_config(args, &job)?;
        let mut render = render_config(args, &job)?;
        let governor = limits::governor_config(args, &job)?;
        let entities = entity_settings(args, &job)?;
        let seeds = args.seeds.clone().or(job.seeds).ok_or(ConfigError::Missing("seeds"))?;
        let depth = args.depth.or(job.depth).ok_or(ConfigError::Missing("depth"))?;
        if depth > 1000 {
            return Err(bad("depth", format!("{depth} is too deep; allowed 0..=1000")));
        }
        let partitions = args.partitions.or(job.partitions).unwrap_or(16);
        if !(1..=100_000).contains(&partitions) {
            return Err(bad("partitions", format!("{partitions}; allowed 1..=100000")));
        }
        let concurrency = args.concurrency.or(job.concurrency).unwrap_or(256);
        if !(1..=100_000).contains(&concurrency) {
            return Err(bad("concurrency", format!("{concurrency}; allowed 1..=100000")));
        }
        let per_host = args.per_host.or(job.per_host).unwrap_or(2);
        if !(1..=1000).contains(&per_host) {
            return Err(bad("per-host", format!("{per_host}; allowed 1..=1000")));
        }
        let scope = match args.scope.clone().or(job.scope) {
            Some(s) => s.parse().map_err(|e| bad("scope", e))?,
            None => Scope::Domain,
        };
        let store_body = match args.store_body.clone().or(job.store_body) {
            Some(s) => s.parse().map_err(|e| bad("store-body", e))?,
            None => BodyPolicy::Html,
        };
        let compression = match args.compression.clone().or(job.compression) {
            Some(s) => s.parse().map_err(|e| bad("compression", e))?,
            None => crate::store::Compression::default(),
        };
        let layer_timeout = args
            .layer_timeout
            .clone()
            .or(job.layer_timeout)
            .map(|s| parse_duration(&s).map_err(|e| bad("layer-timeout", e)))
            .transpose()?;
        let straggler_after = match args.straggler_after.clone().or(job.straggler_after) {
            Some(s) if s == "off" => None,
            Some(s) => match parse_duration(&s).map_err(|e| bad("straggler-after", format!("{e}, or off")))? {
                d if d.is_zero() => None,
                d => Some(d),
            },
            None => Some(Duration::from_secs(1)),
        };
        let host_down_after = args
            .host_down_after
            .clone()
            .or(job.host_down_after)
            .map(|s| parse_duration(&s).map_err(|e| bad("host-down-after", e)))
            .transpose()?
            .unwrap_or(crate::fetch::DEFAULT_HOST_DOWN_AFTER);
        let speed_time = args
            .speed_time
            .clone()
            .or(job.speed_time)
            .map(|s| parse_duration(&s).map_err(|e| bad("speed-time", e)))
            .transpose()?
            .unwrap_or(crate::fetch::DEFAULT_SPEED_TIME);
        if speed_time.is_zero() {
            return Err(bad("speed-time", "0; give a window such as 10s (turn the check off with --speed-limit 0)"));
        }
        let speed_limit = args.speed_limit.or(job.speed_limit).unwrap_or(crate::fetch::DEFAULT_SPEED_LIMIT);
        let timeout = args
            .timeout
            .clone()
            .or(job.timeout)
            .map(|s| parse_duration(&s).map_err(|e| bad("timeout", e)))
            .transpose()?
            .unwrap_or(Duration::from_secs(30));
        let delay_factor = args.delay_factor.or(job.delay_factor).unwrap_or(crate::fetch::DEFAULT_DELAY_FACTOR);
        if !(delay_factor.is_finite() && (0.0..=100.0).contains(&delay_factor)) {
            return Err(bad("delay-factor", format!("{delay_factor}; allowed 0 (off) to 100 (default 2)")));
        }
        let max_delay = args
            .max_delay
            .clone()
            .or(job.max_delay)
            .map(|s| parse_duration(&s).map_err(|e| bad("max-delay", e)))
            .transpose()?
            .unwrap_or(crate::fetch::DEFAULT_MAX_DELAY);
        let sitemap_urls = args.sitemap_urls.or(job.sitemap_urls).unwrap_or(50_000);
        if sitemap_urls == 0 {
            return Err(bad("sitemap-urls", "0; allowed 1 or more (default 50000)".to_string()));
        }
        let sitemaps = (args.sitemaps || job.sitemaps.unwrap_or(false)).then_some(sitemap_urls);
        let warc = args.warc || job.warc.unwrap_or(false);
        let mut dns = Vec::new();
        for s in job.dns.iter().chain(&args.dns) {
            let addr = s
                .trim()
                .parse::<std::net::SocketAddr>()
                .or_else(|_| s.trim().parse::<std::net::IpAddr>().map(|ip| std::net::SocketAddr::new(ip, 53)));
            dns.push(addr.map_err(|_| bad("dns", format!("{s:?} is not IP or IP:PORT (e.g. 127.0.0.1:5353)")))?);
        }
        let mut resolve = Vec::new();
        for rule in job.resolve.iter().chain(&args.resolve) {
            resolve.push(ResolveRule::parse(rule).map_err(|e| bad("resolve", e))?);
        }
        // The bare flag allows every private address; a list, only those.
        let allow_private = match &args.allow_private {
            Some(None) => AllowPrivate::All,
            Some(Some(list)) => AllowPrivate::parse_list(list).map_err(|e| bad("allow-private", e))?,
            None => job.allow_private.clone().unwrap_or_default(),
        };
        let max_body = args.max_body.or(job.max_body).unwrap_or(10 << 20);
        if max_body == 0 {
            return Err(bad("max-body", "must be at least 1 byte"));
        }
        let order = match args.order.clone().or(job.order) {
            Some(s) => s.parse().map_err(|e| bad("order", e))?,
            None => crate::focus::Order::BestFirst,
        };
        if order == crate::focus::Order::Learned && !crate::focus::learned::BUILT {
            return Err(crate::error::NotBuilt::new("--order learned", "learned").into());
        }
        let max_pages = args.max_pages.or(job.max_pages);
        if max_pages == Some(0) {
            return Err(bad("max-pages", "must be at least 1 (leave it out for no limit)"));
        }
        let max_pages_per_host = args.max_pages_per_host.or(job.max_pages_per_host);
        if max_pages_per_host == Some(0) {
            return Err(bad("max-pages-per-host", "must be at least 1 (leave it out for no limit)"));
        }
        let denoise = match args.denoise.clone().or(job.denoise) {
            Some(s) => s.parse().map_err(|e| bad("denoise", e))?,
            None => Denoise::Drop,
        };
        let noise_ratio = args.noise_ratio.or(job.noise_ratio).unwrap_or(0.25);
        if !(noise_ratio > 0.0 && noise_ratio <= 1.0) {
            return Err(bad("noise-ratio", format!("{noise_ratio}; allowed 0 < r <= 1 (default 0.25)")));
        }
        let text_format = match args.text_format.clone().or(job.text_format) {
            Some(s) => s.parse().map_err(|e| bad("text-format", e))?,
            None => crate::extract::main_text::TextFormat::Plain,
        };
        let store_text = match args.store_text.clone().or(job.store_text) {
            Some(s) => s.parse().map_err(|e| bad("store-text", e))?,
            None => crate::extract::main_text::StoreText::Both,
        };
        let sink = args.sink.clone().or(job.sink);
        if sink.is_some() && !crate::sink::BUILT {
            return Err(crate::error::NotBuilt::new("--sink", "kafka").into());
        }
        let sink = sink.map(|u| crate::sink::SinkSpec::parse(&u).map_err(|e| bad("sink", e)));
        let sink = sink.transpose()?;
        let rules = match args.rules.clone().or(job.rules) {
            Some(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| bad("rules", format!("cannot read {}: {e}", path.display())))?;
                let source = RulesSource { file: path.display().to_string(), text };
                let compiled = source.compile()?;
                sink.as_ref().map(|s| s.check_rules(&compiled)).transpose().map_err(|e| bad("rules", e))?;
                // Rules with `render = true`: their pages are rendered.
                for rule in compiled.list.iter().filter(|r| r.render) {
                    render.rule_patterns.extend(rule.urls.iter().map(|p| p.text.clone()));
                }
                if !render.rule_patterns.is_empty() && !crate::fetch::render::BUILT {
                    return Err(crate::error::NotBuilt::new("a rule with render = true", "render").into());
                }
                if !render.rule_patterns.is_empty() && render.chromium.is_none() {
                    render.chromium = Some(
                        crate::fetch::render::find_chromium(None)
                            .map_err(|e| bad("rules", format!("a rule says render = true: {e}")))?,
                    );
                }
                Some(source)
            }
            None => None,
        };
        let plan = match args.plan.clone().or(job.plan) {
            Some(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| bad("plan", format!("cannot read {}: {e}", path.display())))?;
                let source = crate::focus::PlanSource { file: path.display().to_string(), text };
                source.compile()?;
                Some(source)
            }
            None => None,
        };
        let truth = match args.truth.clone().or(job.truth) {
            Some(path) => Some(crate::focus::truth::Truth::read(&path).map_err(|e| bad("truth", e))?),
            None => None,
        };
        if matches!(order, crate::focus::Order::Ant | crate::focus::Order::Learned) && plan.is_none() {
            let name = if order == crate::focus::Order::Ant { "ant" } else { "learned" };
            return Err(bad(
                "order",
                format!("{name} learns from the pages' relevance to a crawl plan: add --plan FILE (or plan = \"FILE\" in the job file), or use --order best-first or bfs"),
            ));
        }
        let cluster_sim =
            args.cluster_sim.or(job.cluster_sim).unwrap_or(crate::denoise::cluster::ClusterConfig::default().sim);
        if !(cluster_sim > 0.0 && cluster_sim <= 1.0) {
            return Err(bad("cluster-sim", format!("{cluster_sim}; allowed 0 < s <= 1")));
        }
        let noise_patterns = match args.noise_patterns.clone().or(job.noise_patterns) {
            Some(path) => std::fs::read_to_string(&path)
                .map_err(|e| bad("noise-patterns", format!("cannot read {}: {e}", path.display())))?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        let urls = std::sync::Arc::new(match (&args.strip_params, job.strip_params) {
            (Some(list), _) => crate::urlnorm::UrlPolicy::new(list.split(',').map(str::to_string)),
            (None, Some(list)) => crate::urlnorm::UrlPolicy::new(list),
            (None, None) => crate::urlnorm::UrlPolicy::default(),
        });
        let cache_entries = args.cache_entries.or(job.cache_entries).unwrap_or(1 << 18);
        if !(1024..=1 << 30).contains(&cache_entries) {
            return Err(bad("cache-entries", format!("{cache_entries}; allowed 1024..=1073741824")));
        }
        let max_query_variants = args.max_query_variants.or(job.max_query_variants).unwrap_or(100);
        if max_query_variants == 0 {
            return Err(bad("max-query-variants", "must be at least 1"));
        }
        let user_agent = args
            .user_agent
            .clone()
            .or(job.user_agent)
            .unwrap_or_else(|| format!("layercrawl/{}", env!("CARGO_PKG_VERSION")));
        if user_agent.trim().is_empty() || user_agent.contains(['\r', '\n']) {
            return Err(bad("user-agent", "must be a non-empty single line"));
        }
        let workers = args.workers.or(job.workers).unwrap_or_else(crate::error::cores);
        if !(1..=10_000).contains(&workers) {
            return Err(bad("workers", format!("{workers}; allowed 1..=10000")));
        }
        let executor = match args.executor.clone().or(job.executor).as_deref() {
            None | Some("local") => ExecutorChoice::Local,
            Some("processes") => ExecutorChoice::Processes { workers },
            Some("kubernetes") if !crate::exec::KUBERNETES_BUILT => {
                return Err(crate::error::NotBuilt::new("--executor kubernetes", "kubernetes").into());
            }
            Some("kubernetes") => ExecutorChoice::Kubernetes(crate::exec::KubeSettings {
                workers,
                image: args.image.clone().or(job.image).ok_or_else(|| {
                    bad("image", "--executor kubernetes needs the task pods' image (--image, or LAYERCRAWL_IMAGE)")
                })?,
                namespace: args.namespace.clone().or(job.namespace),
                worker_secret: args.worker_secret.clone().or(job.worker_secret),
                service_account: args
                    .service_account
                    .clone()
                    .or(job.service_account)
                    .unwrap_or_else(|| "layercrawl-worker".into()),
                owner: crate::exec::OwnerPod::from_env(),
            }),
            Some(other) => {
                return Err(bad("executor", format!("{other:?}; allowed: local, processes, kubernetes")));
            }
        };
        let data = args.data.clone().or(job.data).unwrap_or_else(|| "data".to_string());
        if data.starts_with("memory://") && !matches!(executor, ExecutorChoice::Local) {
            return Err(bad(
                "executor",
                "a memory:// store lives in the driver's process, where tasks in other processes cannot see it; use --executor local, or a folder or object store",
            ));
        }
        if !proxy.auth.by_proxy.is_empty() && !matches!(executor, ExecutorChoice::Local) {
            // They are never written to the data store, so the tasks would
            // go through the proxies without them (407 on every request).
            use crate::fetch::proxy::credentials::{ENV, ENV_FILE};
            return Err(bad(
                "proxy",
                format!(
                    "credentials in a proxy URL stay in this process, and the tasks of another executor run in other processes: give them to the tasks in {ENV} or {ENV_FILE} (with --executor kubernetes, through --worker-secret)"
                ),
            ));
        }
        if args.dry_run && !matches!(executor, ExecutorChoice::Kubernetes(_)) {
            return Err(bad("dry-run", "prints the Jobs of --executor kubernetes; give that executor"));
        }
        let (rendering, render_timeout) = (render.active(), render.timeout);
        Ok(Self {
            seeds,
            depth,
            data,
            partitions,
            scope,
            layer_timeout,
            store_body,
            compression,
            fetch: FetchConfig {
                concurrency,
                per_host,
                delay: Duration::from_millis(args.delay.or(job.delay).unwrap_or(250)),
                delay_factor,
                max_delay,
                user_agent,
                connect_timeout: timeout.min(Duration::from_secs(10)),
                timeout,
                max_body,
                max_redirects: 10,
                retries: args.retries.or(job.retries).unwrap_or(2),
                backoff: Duration::from_millis(500),
                resolve,
                dns,
                allow_private,
                proxy,
                render,
                max_pages_per_host,
                // A page being rendered is in flight for up to the render
                // timeout (and the browser's start): not a straggler before.
                straggler_after: straggler_after.map(|d| if rendering { d.max(render_timeout) } else { d }),
                host_down_after,
                speed_limit,
                speed_time,
                urls: std::sync::Arc::clone(&urls),
                governor,
                capture: warc,
            },
            parse: ParseConfig { noise_ratio, urls: std::sync::Arc::clone(&urls), ..ParseConfig::default() },
            text_format,
            store_text,
            urls,
            optimise: OptimiseConfig {
                denoise,
                cluster: crate::denoise::cluster::ClusterConfig { sim: cluster_sim, ..Default::default() },
                noise_patterns,
                cache_entries,
                max_query_variants,
                order,
            },
            executor,
            wait: args.wait || job.wait.unwrap_or(false),
            dry_run: args.dry_run,
            json: args.json,
            quiet: args.quiet,
            extractors: crate::extract::Extractors::of_run(text_format, store_text, plan.as_ref(), entities.as_ref())
                .map_err(|e| match e {
                crate::extract::RunExtractorsError::Plan(e) => ConfigError::Plan(e),
                crate::extract::RunExtractorsError::Entities(e) => bad("entities", e.to_string()),
            })?,
            rules,
            plan,
            entities,
            max_pages,
            truth,
            previous: args.previous.clone().or(job.previous),
            sitemaps,
            warc,
            sink,
        })
    }
}

/// Parses `250ms`, `30s`, `5m`, `2h` or a bare number of seconds.
///
/// # Errors
/// A message with the accepted forms.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a duration; use e.g. 250ms, 30s, 5m, 2h"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("{s:?}: unknown unit {other:?}; use ms, s, m or h")),
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 30.0 * 86400.0 {
        return Err(format!("{s:?} is out of range (0 < d <= 30 days)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests;
