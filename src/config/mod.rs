//! Configuration: flags and a job file become one validated [`CrawlConfig`].
//!
//! Step one is [`RunOptions`]: each option declared once, with its default,
//! in a struct per concern that both clap and serde read, so a job file
//! takes the flags' keys ([`RunOptions::with_job`] lays the flags given over
//! it). Step two, [`CrawlConfig::from_options`], checks what needs more
//! than one value, the files named and the features built, naming the
//! option at fault.

mod capabilities;
mod limits;
mod options;
mod settings;

use std::path::PathBuf;
use std::time::Duration;

// The value types of options, in the vocabulary (the fetcher's
// settings use them too).
pub use crate::vocab::values;
pub use options::{
    single_pages, Addresses, ExecutorKind, Executors, Focus, Given, Limits, Network, Noise, Output, PageBudget,
    Politeness, Rendering, RunOptions,
};
pub use settings::{load_run, PageSettings, RulesSource, RunSettings};
pub use values::parse_duration;
pub use values::{parse_percent, parse_size};

use capabilities::{entity_settings, proxy_config, render_config};

use crate::fetch::FetchConfig;
use crate::parse::ParseConfig;

pub use crate::scope::Scope;

/// Which response bodies are stored in the `body` column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
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

/// What the noise filter does (docs/src/noise-filter.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
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

/// Settings of the optimise step between layers: noise filter and dedup (docs/src/noise-filter.md, docs/src/dedup.md).
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
    Kubernetes(crate::exec::KubeConfig),
}

/// Everything a run needs, validated.
#[derive(Clone, Debug)]
pub struct CrawlConfig {
    pub seeds: PathBuf,
    pub depth: u32,
    pub data: String,
    pub partitions: u32,
    pub scope: Scope,
    /// Links marked nofollow: obeyed or ignored (`--nofollow`).
    pub nofollow: values::Nofollow,
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
    /// Trim cross-page boilerplate off `main_text` (`--site-boilerplate`).
    pub site_boilerplate: bool,
    pub optimise: OptimiseConfig,
    /// URL normalisation: which query parameters are stripped.
    pub urls: std::sync::Arc<crate::urlnorm::UrlPolicy>,
    pub executor: ExecutorChoice,
    /// Wait for another run holding the data location (`--wait`).
    pub wait: bool,
    /// The run's lease expiry (`--lease-expiry`).
    pub lease_expiry: Duration,
    /// Print the Kubernetes Jobs and exit (`--dry-run`).
    pub dry_run: bool,
    pub json: bool,
    pub quiet: bool,
    /// The extractors, whose columns follow the core
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
    pub budget: PageBudget,
    /// Last night's crawl (`--previous`): its data location.
    pub previous: Option<String>,
    /// `--sitemaps`: at most this many URLs per host from the seeds' sitemaps.
    pub sitemaps: Option<usize>,
    /// `--warc`: every exchange as WARC records beside `doc`.
    pub warc: bool,
    /// Where the pages are published as they are committed (`--sink`).
    pub sink: Option<crate::sink::SinkUrl>,
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
    /// The configuration of options built in code: a job file they name is
    /// read, and the options that differ from their defaults win over it
    /// ([`Given::NotDefault`]); then as [`Self::from_options`].
    ///
    /// # Errors
    /// The job file's problem, or the first invalid or missing option.
    pub fn from_sources(options: &RunOptions) -> Result<Self, ConfigError> {
        Self::from_options(&options.with_job(&Given::NotDefault)?)
    }

    /// Checks the options (job file already merged, see
    /// [`RunOptions::with_job`]) and builds the configuration: ranges,
    /// options that need one another, the files they name, and the cargo
    /// features a value needs.
    ///
    /// # Errors
    /// The first invalid or missing option, by name.
    pub fn from_options(o: &RunOptions) -> Result<Self, ConfigError> {
        let (politeness, limits, output, noise, focus) = (&o.politeness, &o.limits, &o.output, &o.noise, &o.focus);
        let proxy = proxy_config(&o.network)?;
        let mut render = render_config(&o.rendering)?;
        let governor = limits::governor_config(limits);
        let entities = entity_settings(focus)?;
        let seeds = o.seeds.clone().ok_or(ConfigError::Missing("seeds"))?;
        let depth = o.depth.ok_or(ConfigError::Missing("depth"))?;
        check("depth", depth, 0..=1000)?;
        check("partitions", o.partitions, 1..=100_000)?;
        check("concurrency", politeness.concurrency, 1..=100_000)?;
        check("per-host", politeness.per_host, 1..=1000)?;
        let straggler_after = limits.straggler_after.0;
        if limits.speed_time.0.is_zero() {
            return Err(bad("speed-time", "0; give a window such as 10s (turn the check off with --speed-limit 0)"));
        }
        let delay_factor = politeness.delay_factor;
        if !(delay_factor.is_finite() && (0.0..=100.0).contains(&delay_factor)) {
            return Err(bad("delay-factor", format!("{delay_factor}; allowed 0 (off) to 100")));
        }
        check("sitemap-urls", focus.sitemap_urls, 1..=usize::MAX)?;
        let sitemaps = focus.sitemaps.then_some(focus.sitemap_urls);
        check("max-body", limits.max_body, 1..=u64::MAX)?;
        let order = focus.order;
        if order == crate::focus::Order::Learned && !crate::focus::learned::BUILT {
            return Err(crate::error::NotBuilt::new("--order learned", "learned").into());
        }
        if limits.budget.max_pages == Some(0) {
            return Err(bad("max-pages", "must be at least 1 (leave it out for no limit)"));
        }
        if limits.max_pages_per_host == Some(0) {
            return Err(bad("max-pages-per-host", "must be at least 1 (leave it out for no limit)"));
        }
        if !(noise.noise_ratio > 0.0 && noise.noise_ratio <= 1.0) {
            return Err(bad("noise-ratio", format!("{}; allowed 0 < r <= 1", noise.noise_ratio)));
        }
        let (text_format, store_text) = (output.text_format, output.store_text);
        let sink = match output.sink.as_deref() {
            // Its scheme names the kind of sink, which checks the rest.
            Some(url) => Some(crate::sink::SinkUrl::parse(url).map_err(|e| match e {
                // A kind this build lacks: refused as any flag whose feature is off.
                crate::sink::UrlError::NotBuilt(e) => ConfigError::NotBuilt(e),
                e => bad("sink", e.to_string()),
            })?),
            None => None,
        };
        let rules = match &focus.rules {
            Some(path) => {
                let text = std::fs::read_to_string(path)
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
        let plan = match &focus.plan {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| bad("plan", format!("cannot read {}: {e}", path.display())))?;
                let source = crate::focus::PlanSource { file: path.display().to_string(), text };
                source.compile()?;
                Some(source)
            }
            None => None,
        };
        let truth = match &focus.truth {
            Some(path) => Some(crate::focus::truth::Truth::read(path).map_err(|e| bad("truth", e))?),
            None => None,
        };
        if matches!(order, crate::focus::Order::Ant | crate::focus::Order::Learned) && plan.is_none() {
            let name = if order == crate::focus::Order::Ant { "ant" } else { "learned" };
            return Err(bad(
                "order",
                format!("{name} learns from the pages' relevance to a crawl plan: add --plan FILE (or plan = \"FILE\" in the job file), or use --order best-first or bfs"),
            ));
        }
        if !(noise.cluster_sim > 0.0 && noise.cluster_sim <= 1.0) {
            return Err(bad("cluster-sim", format!("{}; allowed 0 < s <= 1", noise.cluster_sim)));
        }
        let noise_patterns = match &noise.noise_patterns {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| bad("noise-patterns", format!("cannot read {}: {e}", path.display())))?
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
            None => Vec::new(),
        };
        let urls = std::sync::Arc::new(crate::urlnorm::UrlPolicy::new(noise.strip_params.0.iter().cloned()));
        check("cache-entries", noise.cache_entries, 1024..=1 << 30)?;
        check("max-query-variants", noise.max_query_variants, 1..=usize::MAX)?;
        let user_agent = &politeness.user_agent;
        if user_agent.trim().is_empty() || user_agent.contains(['\r', '\n']) {
            return Err(bad("user-agent", "must be a non-empty single line"));
        }
        let ex = &o.executors;
        let workers = ex.workers.unwrap_or_else(crate::error::cores);
        let lease_expiry = ex.lease_expiry.0;
        if lease_expiry < crate::store::lease::MIN_EXPIRY || lease_expiry > Duration::from_secs(3600) {
            return Err(bad("lease-expiry", format!("{}; allowed 6s to 1h", ex.lease_expiry)));
        }
        check("workers", workers, 1..=10_000)?;
        let executor = match ex.executor {
            ExecutorKind::Local => ExecutorChoice::Local,
            ExecutorKind::Processes => ExecutorChoice::Processes { workers },
            ExecutorKind::Kubernetes if !crate::exec::KUBERNETES_BUILT => {
                return Err(crate::error::NotBuilt::new("--executor kubernetes", "kubernetes").into());
            }
            ExecutorKind::Kubernetes => ExecutorChoice::Kubernetes(crate::exec::KubeConfig {
                workers,
                image: ex.image.clone().ok_or_else(|| {
                    bad("image", "--executor kubernetes needs the task pods' image (--image, or LAYERCRAWL_IMAGE)")
                })?,
                namespace: ex.namespace.clone(),
                worker_secret: ex.worker_secret.clone(),
                service_account: ex.service_account.clone(),
                seccomp_profile: ex.worker_seccomp_profile.clone(),
                owner: crate::exec::OwnerPod::from_env(),
            }),
        };
        let data = o.data.clone();
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
        if ex.dry_run && !matches!(executor, ExecutorChoice::Kubernetes(_)) {
            return Err(bad("dry-run", "prints the Jobs of --executor kubernetes; give that executor"));
        }
        let (rendering, render_timeout) = (render.active(), render.timeout);
        let timeout = limits.timeout.0;
        Ok(Self {
            seeds,
            depth,
            data,
            partitions: o.partitions,
            scope: o.scope,
            nofollow: o.nofollow,
            layer_timeout: limits.layer_timeout.map(|s| s.0),
            store_body: output.store_body,
            compression: output.compression,
            fetch: FetchConfig {
                politeness: politeness.clone(),
                connect_timeout: timeout.min(Duration::from_secs(10)),
                timeout,
                max_body: limits.max_body,
                max_redirects: 10,
                retries: limits.retries,
                backoff: Duration::from_millis(500),
                resolve: o.network.addresses.resolve.clone(),
                dns: o.network.dns.iter().map(|d| d.0).collect(),
                allow_private: o.network.addresses.allow_private.clone(),
                proxy,
                render,
                max_pages_per_host: limits.max_pages_per_host,
                // A page being rendered is in flight for up to the render
                // timeout (and the browser's start): not a straggler before.
                straggler_after: straggler_after.map(|d| if rendering { d.max(render_timeout) } else { d }),
                host_down_after: limits.host_down_after.0,
                speed_limit: limits.speed_limit,
                speed_time: limits.speed_time.0,
                urls: std::sync::Arc::clone(&urls),
                governor,
                capture: output.warc,
            },
            parse: ParseConfig {
                noise_ratio: noise.noise_ratio,
                urls: std::sync::Arc::clone(&urls),
                ..ParseConfig::default()
            },
            text_format,
            store_text,
            site_boilerplate: output.site_boilerplate.on(),
            urls,
            optimise: OptimiseConfig {
                denoise: noise.denoise,
                cluster: crate::denoise::cluster::ClusterConfig { sim: noise.cluster_sim, ..Default::default() },
                noise_patterns,
                cache_entries: noise.cache_entries,
                max_query_variants: noise.max_query_variants,
                order,
            },
            executor,
            wait: ex.wait,
            lease_expiry: ex.lease_expiry.0,
            dry_run: ex.dry_run,
            json: o.json,
            quiet: o.quiet,
            extractors: crate::extract::Extractors::of_run(text_format, store_text, plan.as_ref(), entities.as_ref())
                .map_err(|e| match e {
                crate::extract::RunExtractorsError::Plan(e) => ConfigError::Plan(e),
                crate::extract::RunExtractorsError::Entities(e) => bad(capabilities::ENTITIES, e.to_string()),
            })?,
            rules,
            plan,
            entities,
            budget: limits.budget,
            truth,
            previous: focus.previous.clone(),
            sitemaps,
            warc: output.warc,
            sink,
        })
    }
}

/// Checks that an option's value is in its range.
fn check<T>(option: &'static str, value: T, range: std::ops::RangeInclusive<T>) -> Result<(), ConfigError>
where
    T: PartialOrd + std::fmt::Display + Copy + Bounded,
{
    if range.contains(&value) {
        return Ok(());
    }
    let allowed = if *range.end() == T::MAX {
        format!("{} or more", range.start())
    } else {
        format!("{}..={}", range.start(), range.end())
    };
    Err(bad(option, format!("{value}; allowed {allowed}")))
}

/// The largest value of an integer type, to print an open range.
trait Bounded {
    const MAX: Self;
}

impl Bounded for u32 {
    const MAX: Self = u32::MAX;
}
impl Bounded for u64 {
    const MAX: Self = u64::MAX;
}
impl Bounded for usize {
    const MAX: Self = usize::MAX;
}

#[cfg(test)]
mod tests;
