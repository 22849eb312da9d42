//! The options of fetching: politeness, limits, the network (DNS, proxies,
//! private addresses) and rendering.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::values::{DnsServer, Percent, Size, Span, SpanOrOff};
// The fetcher's own settings struct is also its options (declared
// once, in the fetch crate).
use crate::fetch::render::RenderMode;
use crate::fetch::resolve::{AllowPrivate, ResolveRule};
pub use crate::fetch::Politeness;

/// The fetch settings of the commands that fetch single pages outside a
/// crawl (`studio`, `rules test`): their politeness and addresses,
/// declared once for them and `run`, over the fetcher's settings for
/// single pages (no retries).
#[must_use]
pub fn single_pages(politeness: &Politeness, addresses: &Addresses) -> crate::fetch::FetchConfig {
    let mut cfg = crate::fetch::FetchConfig::single_pages(addresses.resolve.clone(), false, politeness.clone());
    cfg.allow_private = addresses.allow_private.clone();
    cfg
}

/// What a run may spend, and when a request or a host has failed
/// (docs/src/running.md).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Limits and failures")]
pub struct Limits {
    #[command(flatten)]
    #[serde(flatten)]
    pub budget: PageBudget,
    /// Fetch at most M pages per host in one layer; the rest is carried over.
    /// No limit when not given.
    #[arg(long, value_name = "M")]
    pub max_pages_per_host: Option<u64>,
    /// Time budget of one layer (e.g. 30m, 90s); unfetched URLs are carried
    /// into the next layer. No limit when not given.
    #[arg(long, value_name = "DURATION")]
    pub layer_timeout: Option<Span>,
    /// When the rest of a layer is done, a request in flight this long (and
    /// 8 times the layer's median request time), or a URL that must wait as
    /// long for its own retry (Retry-After, backoff) or its host's pause,
    /// no longer holds the layer: it goes on into the next one (the last
    /// layer waits for its stragglers). A URL waiting only for its host's
    /// pace is no straggler. `off` waits for everything.
    #[arg(long, value_name = "DURATION|off", default_value_t = SpanOrOff(Some(std::time::Duration::from_secs(1))))]
    pub straggler_after: SpanOrOff,
    /// A host that keeps failing (5xx, timeouts, refused connections) is
    /// paused and probed; failing this long without one good answer, it is
    /// down: its remaining URLs end as `host_down` rows.
    #[arg(long, value_name = "DURATION", default_value_t = Span(crate::fetch::DEFAULT_HOST_DOWN_AFTER))]
    pub host_down_after: Span,
    /// An exchange slower than this many bytes per second over
    /// --speed-time, from the request on (headers not within it too),
    /// ends as a `too_slow` error row, like curl's --speed-limit (0: off).
    #[arg(long, value_name = "BYTES", default_value_t = crate::fetch::DEFAULT_SPEED_LIMIT)]
    pub speed_limit: u64,
    /// The window of --speed-limit.
    #[arg(long, value_name = "DURATION", default_value_t = Span(crate::fetch::DEFAULT_SPEED_TIME))]
    pub speed_time: Span,
    /// Per-request total timeout (e.g. 30s); connecting gets at most 10s of
    /// it.
    #[arg(long, value_name = "DURATION", default_value_t = Span(crate::fetch::DEFAULT_TIMEOUT))]
    pub timeout: Span,
    /// Retries of a transient failure (408, 429, 5xx, timeout, reset);
    /// Retry-After is honoured, else exponential backoff. An answer that
    /// does not come in time is retried once at most (not at all when its
    /// host answered other requests meanwhile), a body that comes too
    /// slowly not at all, a 429 up to 5 times.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub retries: u32,
    /// Largest body kept, in bytes (longer bodies are truncated and
    /// flagged); the default is 10 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = crate::fetch::DEFAULT_MAX_BODY)]
    pub max_body: u64,
    /// Resident memory to stay under (512M, 2G, 1.5GiB): above 90 % of it,
    /// fewer requests are sent at once and rows are written in smaller
    /// batches. No limit when not given.
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<Size>,
    /// CPU use to stay under, in percent of all cores (1-100): above it,
    /// fewer requests are sent at once. No limit when not given.
    #[arg(long, value_name = "PERCENT")]
    pub cpu_target: Option<Percent>,
}

/// A layer's page budget: the option, and the setting the map tasks and
/// the optimise step read (`PageSettings::budget`, `OptimiseCtx::budget`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
pub struct PageBudget {
    /// Fetch at most N pages in one layer, shared among the partitions in
    /// proportion to their input; each takes the first of its input (best
    /// first with --plan) and carries the rest over. No limit when not given.
    #[arg(long, value_name = "N")]
    // The settings file of a crawl started before this struct used the
    // field's own name.
    #[serde(alias = "max_pages")]
    pub max_pages: Option<u64>,
}

/// Which addresses requests may reach: resolve rules and private
/// addresses. `run`, `studio` and `rules test` share it.
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Network")]
pub struct Addresses {
    /// Resolve a host (or `*.suffix`) to IP:PORT, like curl's --resolve.
    /// Repeatable.
    #[arg(long, value_name = "RULE")]
    pub resolve: Vec<ResolveRule>,
    /// Allow connections to loopback and private addresses (off by default
    /// so a crawler in a cloud pod cannot reach its own network); with a
    /// list of addresses or CIDR ranges (`10.1.2.3,127.0.0.0/8`), only
    /// those. Cloud metadata endpoints stay blocked either way.
    #[arg(long, value_name = "ADDRS", num_args = 0..=1, default_value_t = AllowPrivate::None, default_missing_value = "all")]
    pub allow_private: AllowPrivate,
}

/// Where requests go: DNS, resolve rules, private addresses and proxies
/// (docs/src/security.md, docs/src/proxies.md).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Network")]
pub struct Network {
    /// DNS server to ask (IP:PORT), repeatable; the system's
    /// (/etc/resolv.conf) when none. Answers are cached for their TTL.
    #[arg(long, value_name = "IP:PORT")]
    pub dns: Vec<DnsServer>,
    #[command(flatten)]
    #[serde(flatten)]
    pub addresses: Addresses,
    /// Send every request through this forward proxy (http://host:port);
    /// repeatable: a pool. Politeness stays per target host. Credentials
    /// come from the environment: LAYERCRAWL_PROXY_CREDENTIALS=user:password,
    /// or LAYERCRAWL_PROXY_CREDENTIALS_FILE naming a file that holds
    /// user:password; tasks in other processes read the same. A URL's own
    /// user:password@ is used by this process only (--executor local) and
    /// never written to the data store.
    #[arg(long, value_name = "URL")]
    pub proxy: Vec<String>,
    /// Proxies file: one proxy URL a line; blank lines and `#` comments
    /// allowed. Adds to --proxy (credentials as there).
    #[arg(long, value_name = "FILE")]
    pub proxies: Option<PathBuf>,
    /// Least time between two requests through one proxy, in ms.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub proxy_delay: u64,
    /// Requests at once through one proxy.
    #[arg(long, value_name = "N", default_value_t = crate::fetch::proxy::DEFAULT_CONCURRENCY)]
    pub proxy_concurrency: u32,
    /// How long a failing proxy stays out of service before it is checked
    /// and tried again (doubling while it keeps failing, up to 10m).
    #[arg(long, value_name = "DURATION", default_value_t = Span(crate::fetch::proxy::DEFAULT_RETRY))]
    pub proxy_retry: Span,
}

/// Rendering pages in headless Chromium (docs/src/rendering.md).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Rendering")]
pub struct Rendering {
    /// Render pages in headless Chromium: never, auto (pages whose HTML is a
    /// script shell) or always (every HTML page).
    #[arg(long, value_name = "never|auto|always", value_enum, default_value_t = RenderMode::Never)]
    pub render: RenderMode,
    /// Chromium tabs open at once for rendering.
    #[arg(long, value_name = "N", default_value_t = crate::fetch::render::DEFAULT_TABS)]
    pub render_tabs: usize,
    /// Time a page has to load and settle in Chromium.
    #[arg(long, value_name = "DURATION", default_value_t = Span(crate::fetch::render::DEFAULT_TIMEOUT))]
    pub render_timeout: Span,
    /// Render at most N pages in the run; later ones are kept as fetched.
    /// No limit when not given.
    #[arg(long, value_name = "N")]
    pub render_max: Option<u64>,
    /// The Chromium to render with; `chromium` on the PATH when not given.
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    /// Render with Chromium's sandbox off, where it cannot run (no user
    /// namespaces, a seccomp profile that forbids them) and only for pages
    /// you trust: a page that takes over the renderer then runs as the
    /// crawler's user. Warned about on every run. Without it, a run whose
    /// Chromium cannot start sandboxed is refused at start (docs/src/security.md).
    #[arg(long)]
    pub render_no_sandbox: bool,
}
