//! The fetcher's settings. They live here, not in `crate::config`,
//! so that `fetch/` depends on nothing above it: `config/` builds a
//! [`FetchConfig`] from flags and the job file, and the fetcher (and any
//! other program driving it) needs only this module (ARCHITECTURE.md,
//! "Invariants").

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::resolve::ResolveRule;
use crate::vocab::values::{Millis, Span};

/// How hard one host and all hosts are pressed (docs/src/politeness.md):
/// declared once, as the command line's options (clap), the job file's
/// keys and the settings the scheduler reads (serde), for `run`, `studio`
/// and `rules test` alike.
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Politeness")]
pub struct Politeness {
    /// Requests in flight at once, over all hosts.
    #[arg(long, value_name = "C", default_value_t = 256)]
    pub concurrency: usize,
    /// Connections at once to one host.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_PER_HOST)]
    pub per_host: usize,
    /// Minimum delay between two requests to one host, in ms (robots.txt
    /// Crawl-delay raises it).
    #[arg(long, value_name = "MS", default_value_t = Millis(Duration::from_millis(DEFAULT_DELAY_MS)))]
    pub delay: Millis,
    /// Adaptive politeness: a host's delay is at least F times the mean time
    /// of its last 8 responses (0: off); 429s, 503s and timeouts cut its
    /// rate at once, calm answers raise it again.
    #[arg(long, value_name = "F", default_value_t = DEFAULT_DELAY_FACTOR)]
    pub delay_factor: f64,
    /// Longest delay adaptive politeness sets (never lowers --delay or a
    /// robots.txt Crawl-delay).
    #[arg(long, value_name = "DURATION", default_value_t = Span(DEFAULT_MAX_DELAY))]
    pub max_delay: Span,
    /// User-Agent header (its first word is the robots.txt product token).
    #[arg(long, value_name = "UA", default_value = DEFAULT_USER_AGENT)]
    pub user_agent: String,
}

impl Default for Politeness {
    /// What an empty command line parses to: the defaults above, said once.
    fn default() -> Self {
        #[derive(clap::Parser)]
        struct Empty {
            #[command(flatten)]
            politeness: Politeness,
        }
        <Empty as clap::Parser>::parse_from(["layercrawl"]).politeness
    }
}

impl Politeness {
    /// A few requests at a time, no delay and no adaptive politeness: for a
    /// program that fetches a few pages of its own server.
    #[must_use]
    pub fn unpaced() -> Self {
        Self { concurrency: 8, delay: Millis(Duration::ZERO), delay_factor: 0.0, ..Self::default() }
    }

    /// The least time between two requests to one host.
    #[must_use]
    pub fn min_delay(&self) -> Duration {
        self.delay.0
    }
}

/// Fetch-stage settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FetchConfig {
    /// Connections, delays and the user agent (adaptive politeness:
    /// `scheduler/pace.rs`).
    #[serde(flatten)]
    pub politeness: Politeness,
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

impl FetchConfig {
    /// Settings for fetching single pages outside a crawl (`layercrawl
    /// rules test`, the rule editor): the crawl's defaults for timeouts and
    /// body size, no retries, and the politeness given (the options those
    /// commands share with `run`, or [`Politeness::unpaced`]).
    #[must_use]
    pub fn single_pages(resolve: Vec<ResolveRule>, allow_private: bool, politeness: Politeness) -> Self {
        Self {
            politeness,
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
