//! The fetch stage's settings. They live here, not in `crate::config`,
//! so that `fetch/` depends on nothing above it: `config/` builds a
//! [`FetchConfig`] from flags and the job file, and the fetcher (and any
//! other program driving it) needs only this module (ARCHITECTURE.md,
//! "Invariants").

use std::time::Duration;

use super::resolve::ResolveRule;

/// Fetch-stage settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FetchConfig {
    pub concurrency: usize,
    pub per_host: usize,
    pub delay: Duration,
    /// A host's delay is at least this many times the mean time of its
    /// latest responses (adaptive politeness; 0: response times do not
    /// count). See `scheduler/pace.rs`.
    #[serde(default = "default_delay_factor")]
    pub delay_factor: f64,
    /// Longest delay adaptive politeness sets (never lowers `delay` or a
    /// robots.txt Crawl-delay).
    #[serde(default = "default_max_delay")]
    pub max_delay: Duration,
    pub user_agent: String,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub max_body: u64,
    pub max_redirects: u32,
    /// Retries of a transient failure (408/429/5xx, timeout, reset, refused).
    pub retries: u32,
    /// First backoff before a retry without Retry-After; doubles each time.
    pub backoff: Duration,
    pub resolve: Vec<ResolveRule>,
    /// DNS servers (`--dns`); empty: the system's (`/etc/resolv.conf`).
    #[serde(default)]
    pub dns: Vec<std::net::SocketAddr>,
    /// Which private addresses may be reached (`--allow-private`).
    pub allow_private: super::resolve::AllowPrivate,
    /// Forward proxies; none: requests go direct.
    #[serde(default)]
    pub proxy: ProxyConfig,
    /// Rendering in headless Chromium; `never` by default.
    #[serde(default)]
    pub render: super::render::RenderConfig,
    pub max_pages_per_host: Option<u64>,
    /// When the rest of a layer is done, requests in flight this long (and
    /// at least 8 times the layer's median request time) and URLs whose host
    /// may not start before then are stragglers: they go on into the next
    /// layer instead of holding this one. `None`: off.
    pub straggler_after: Option<Duration>,
    /// A host failing this long without a good answer is down: its queued
    /// URLs end as `host_down` rows (`scheduler/breaker.rs`).
    #[serde(default = "default_host_down_after")]
    pub host_down_after: Duration,
    /// A body slower than `speed_limit` bytes a second over `speed_time`
    /// ends as a `too_slow` error (0: no limit).
    #[serde(default = "default_speed_limit")]
    pub speed_limit: u64,
    #[serde(default = "default_speed_time")]
    pub speed_time: Duration,
    /// How redirect targets are normalised (written once in the run's
    /// settings, beside the parse's: `config::RunSettings`).
    #[serde(skip)]
    pub urls: std::sync::Arc<crate::urlnorm::UrlPolicy>,
    /// The resource governor (`--max-memory`, `--cpu-target`); off by default.
    #[serde(default)]
    pub governor: super::governor::GovernorConfig,
    /// Keep each exchange's request and response headers and each redirect
    /// hop ([`super::Capture`], [`super::Fetched::hops`]) for the archive
    /// (`--warc`); off by default.
    #[serde(skip)]
    pub capture: bool,
}

/// The default `--timeout`, `--max-body` and `--user-agent`.
/// Connections at once to one host (`--per-host`).
pub const DEFAULT_PER_HOST: usize = 2;
/// Least time between two requests to one host, in ms (`--delay`).
pub const DEFAULT_DELAY_MS: u64 = 250;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_BODY: u64 = 10 << 20;
pub const DEFAULT_USER_AGENT: &str = concat!("layercrawl/", env!("CARGO_PKG_VERSION"));

/// The default `--delay-factor`.
pub const DEFAULT_DELAY_FACTOR: f64 = 2.0;
/// The default `--max-delay`.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(30);

/// The default `--host-down-after`.
pub const DEFAULT_HOST_DOWN_AFTER: Duration = Duration::from_secs(300);
/// The default `--speed-limit` (bytes a second) and `--speed-time`.
pub const DEFAULT_SPEED_LIMIT: u64 = 1024;
pub const DEFAULT_SPEED_TIME: Duration = Duration::from_secs(10);

fn default_host_down_after() -> Duration {
    DEFAULT_HOST_DOWN_AFTER
}

fn default_speed_limit() -> u64 {
    DEFAULT_SPEED_LIMIT
}

fn default_speed_time() -> Duration {
    DEFAULT_SPEED_TIME
}

fn default_delay_factor() -> f64 {
    DEFAULT_DELAY_FACTOR
}

fn default_max_delay() -> Duration {
    DEFAULT_MAX_DELAY
}

impl FetchConfig {
    /// Settings for fetching single pages outside a crawl (`layercrawl
    /// rules test`, the rule editor): the crawl's defaults for timeouts,
    /// body size, user agent and connections per host, no retries, `delay`
    /// between two requests to one host. The commands set the politeness
    /// options they share with `run` over it (`config::single_pages`).
    #[must_use]
    pub fn single_pages(resolve: Vec<ResolveRule>, allow_private: bool, delay: Duration) -> Self {
        Self {
            concurrency: 8,
            per_host: DEFAULT_PER_HOST,
            delay,
            delay_factor: 0.0,
            max_delay: DEFAULT_MAX_DELAY,
            user_agent: DEFAULT_USER_AGENT.to_string(),
            connect_timeout: Duration::from_secs(10),
            timeout: DEFAULT_TIMEOUT,
            max_body: DEFAULT_MAX_BODY,
            max_redirects: 10,
            retries: 0,
            backoff: Duration::from_millis(500),
            resolve,
            dns: Vec::new(),
            allow_private: allow_private.into(),
            proxy: ProxyConfig::default(),
            render: super::render::RenderConfig::default(),
            max_pages_per_host: None,
            host_down_after: DEFAULT_HOST_DOWN_AFTER,
            speed_limit: DEFAULT_SPEED_LIMIT,
            speed_time: DEFAULT_SPEED_TIME,
            straggler_after: None,
            urls: std::sync::Arc::new(crate::urlnorm::UrlPolicy::default()),
            governor: super::governor::GovernorConfig::default(),
            capture: false,
        }
    }
}

/// The proxy settings (`--proxy`, `--proxies`, `--proxy-delay`,
/// `--proxy-concurrency`, `--proxy-retry`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ProxyConfig {
    /// Proxy URLs without credentials (`http://host:port`); empty: direct.
    pub urls: Vec<String>,
    /// Least time between two request starts through one proxy.
    pub delay: Duration,
    /// Requests at once through one proxy.
    pub concurrency: u32,
    /// First time out of service for a failing proxy.
    pub retry: Duration,
    /// The proxies' credentials: never written with the settings, so a
    /// unit of work in another process has none here and reads the
    /// environment ([`credentials`]).
    #[serde(skip)]
    pub auth: super::proxy::credentials::ProxyAuth,
}

/// The default `--proxy-concurrency`.
pub const DEFAULT_CONCURRENCY: u32 = 16;
/// The default `--proxy-retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(30);

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            urls: Vec::new(),
            delay: Duration::ZERO,
            concurrency: DEFAULT_CONCURRENCY,
            retry: DEFAULT_RETRY,
            auth: super::proxy::credentials::ProxyAuth::default(),
        }
    }
}
