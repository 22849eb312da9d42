//! Raw command-line options of `layercrawl run` (step one of two).
//!
//! Every option is an `Option` so that a job file can fill what the flags
//! leave out; the defaults are applied later, by `CrawlConfig::from_sources`.
//! clap therefore knows none of them, so each help text states its default as
//! `[default: …]`, and a test checks that value against `from_sources`.

use std::path::PathBuf;

/// Options of `layercrawl run`. Every option may also come from the job
/// file (same name, e.g. `per-host = 2`); a flag given here wins.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct RunArgs {
    /// Seeds file: one URL a line; blank lines and `#` comments allowed.
    #[arg(long, value_name = "FILE")]
    pub seeds: Option<PathBuf>,
    /// Follow links at most N hops from the seeds (layer 0 is the seeds).
    #[arg(long, value_name = "N")]
    pub depth: Option<u32>,
    /// Data location: a folder or a file:// / memory:// URL (a relative
    /// folder is relative to the working directory). [default: data]
    #[arg(long, value_name = "DIR|URL")]
    pub data: Option<String>,
    /// Job file (TOML) with any of these options; flags override it.
    #[arg(long, value_name = "FILE")]
    pub job: Option<PathBuf>,
    /// Number of partitions (map tasks) per layer; fixed for a data dir. [default: 16]
    #[arg(long, value_name = "P")]
    pub partitions: Option<u32>,
    /// Requests in flight at once, over all hosts. [default: 256]
    #[arg(long, value_name = "C")]
    pub concurrency: Option<usize>,
    /// Connections at once to one host. [default: 2]
    #[arg(long, value_name = "K")]
    pub per_host: Option<usize>,
    /// Minimum delay between two requests to one host, in ms (robots.txt
    /// Crawl-delay raises it). [default: 250]
    #[arg(long, value_name = "MS")]
    pub delay: Option<u64>,
    /// DNS server to ask (IP:PORT), repeatable; the system's
    /// (/etc/resolv.conf) when none. Answers are cached for their TTL.
    #[arg(long, value_name = "IP:PORT")]
    pub dns: Vec<String>,
    /// Render pages in headless Chromium: never, auto (pages whose HTML is a
    /// script shell) or always (every HTML page). [default: never]
    #[arg(long, value_name = "never|auto|always")]
    pub render: Option<String>,
    /// Chromium tabs open at once for rendering. [default: 4]
    #[arg(long, value_name = "N")]
    pub render_tabs: Option<usize>,
    /// Time a page has to load and settle in Chromium. [default: 10s]
    #[arg(long, value_name = "DURATION")]
    pub render_timeout: Option<String>,
    /// Render at most N pages in the run; later ones are kept as fetched.
    /// No limit when not given.
    #[arg(long, value_name = "N")]
    pub render_max: Option<u64>,
    /// The Chromium to render with; `chromium` on the PATH when not given.
    #[arg(long, value_name = "PATH")]
    pub chromium: Option<PathBuf>,
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
    /// Least time between two requests through one proxy, in ms. [default: 0]
    #[arg(long, value_name = "MS")]
    pub proxy_delay: Option<u64>,
    /// Requests at once through one proxy. [default: 16]
    #[arg(long, value_name = "N")]
    pub proxy_concurrency: Option<u32>,
    /// How long a failing proxy stays out of service before it is checked
    /// and tried again (doubling while it keeps failing, up to 10m). [default: 30s]
    #[arg(long, value_name = "DURATION")]
    pub proxy_retry: Option<String>,
    /// Adaptive politeness: a host's delay is at least F times the mean time
    /// of its last 8 responses (0: off); 429, 503 and timeouts back it off
    /// further, good answers bring it back. [default: 2]
    #[arg(long, value_name = "F")]
    pub delay_factor: Option<f64>,
    /// Longest delay adaptive politeness sets (never lowers --delay or a
    /// robots.txt Crawl-delay). [default: 30s]
    #[arg(long, value_name = "DURATION")]
    pub max_delay: Option<String>,
    /// Which links to follow: same host as a seed, same registrable domain
    /// as a seed, or any. [default: domain]
    #[arg(long, value_name = "host|domain|any")]
    pub scope: Option<String>,
    /// The order of a layer's input, which each host's URLs are fetched in
    /// and a page budget cuts: best-first (with --plan, the best link score
    /// first; URL order without a plan), bfs (URL order), ant (with
    /// --plan: the link score times the pheromone of the target's URL
    /// cluster, learned from the relevance of its pages fetched so far) or
    /// learned (with --plan: drawn cluster by cluster by a DQN over the
    /// link score, the cluster's harvest and a learned code of the URL,
    /// trained on the crawl's own pages). [default: best-first]
    #[arg(long, value_name = "best-first|bfs|ant|learned")]
    pub order: Option<String>,
    /// Fetch at most N pages in one layer, shared among the partitions in
    /// proportion to their input; each takes the first of its input (best
    /// first with --plan) and carries the rest over. No limit when not given.
    #[arg(long, value_name = "N")]
    pub max_pages: Option<u64>,
    /// Fetch at most M pages per host in one layer; the rest is carried over.
    /// No limit when not given.
    #[arg(long, value_name = "M")]
    pub max_pages_per_host: Option<u64>,
    /// Time budget of one layer (e.g. 30m, 90s); unfetched URLs are carried
    /// into the next layer. No limit when not given.
    #[arg(long, value_name = "DURATION")]
    pub layer_timeout: Option<String>,
    /// When the rest of a layer is done, a request in flight this long (and
    /// 8 times the layer's median request time), or a URL that must wait as
    /// long for its host (Retry-After, backoff), no longer holds the layer:
    /// it goes on into the next one (after the last layer: state/carry, for
    /// a deeper re-run). `off` waits for everything. [default: 1s]
    #[arg(long, value_name = "DURATION|off")]
    pub straggler_after: Option<String>,
    /// A host that keeps failing (5xx, timeouts, refused connections) is
    /// paused and probed; failing this long without one good answer, it is
    /// down: its remaining URLs end as `host_down` rows. [default: 5m]
    #[arg(long, value_name = "DURATION")]
    pub host_down_after: Option<String>,
    /// An exchange slower than this many bytes per second over
    /// --speed-time, from the request on (headers not within it too),
    /// ends as a `too_slow` error row, like curl's --speed-limit (0: off).
    /// [default: 1024]
    #[arg(long, value_name = "BYTES")]
    pub speed_limit: Option<u64>,
    /// The window of --speed-limit. [default: 10s]
    #[arg(long, value_name = "DURATION")]
    pub speed_time: Option<String>,
    /// Resolve a host (or `*.suffix`) to IP:PORT, like curl's --resolve.
    /// Repeatable.
    #[arg(long, value_name = "RULE")]
    pub resolve: Vec<String>,
    /// User-Agent header (its first word is the robots.txt product token).
    /// [default: layercrawl/VERSION]
    #[arg(
        long,
        value_name = "UA",
        help = concat!(
            "User-Agent header (its first word is the robots.txt product token). [default: layercrawl/",
            env!("CARGO_PKG_VERSION"),
            "]"
        )
    )]
    pub user_agent: Option<String>,
    /// Allow connections to loopback and private addresses (off by default
    /// so a crawler in a cloud pod cannot reach its own network); with a
    /// list of addresses or CIDR ranges (`10.1.2.3,127.0.0.0/8`), only
    /// those. Cloud metadata endpoints stay blocked either way.
    #[arg(long, value_name = "ADDRS", num_args = 0..=1)]
    pub allow_private: Option<Option<String>>,
    /// Per-request total timeout (e.g. 30s); connecting gets at most 10s of
    /// it. [default: 30s]
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
    /// Retries of a transient failure (408, 429, 5xx, timeout, reset);
    /// Retry-After is honoured, else exponential backoff. A timeout or
    /// too_slow is retried once at most, a 429 up to 5 times. [default: 2]
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// Largest body kept, in bytes (longer bodies are truncated and flagged);
    /// the default is 10 MiB. [default: 10485760]
    #[arg(long, value_name = "BYTES")]
    pub max_body: Option<u64>,
    /// Resident memory to stay under (512M, 2G, 1.5GiB): above 90 % of it,
    /// fewer requests are sent at once and rows are written in smaller
    /// batches. No limit when not given.
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<String>,
    /// CPU use to stay under, in percent of all cores (1-100): above it,
    /// fewer requests are sent at once. No limit when not given.
    #[arg(long, value_name = "PERCENT")]
    pub cpu_target: Option<String>,
    /// Which bodies go into the `body` column: html, all or none. [default: html]
    #[arg(long, value_name = "html|all|none")]
    pub store_body: Option<String>,
    /// Compression of the Parquet files written: zstd (level 1), zstd:N
    /// (N in 1..=22; higher is smaller and slower) or none. [default: zstd]
    #[arg(long, value_name = "zstd|zstd:N|none")]
    pub compression: Option<String>,
    /// Noise filter: drop (do not follow link targets on evidence of what
    /// fetched pages like them were), strict (also drop every link in a
    /// navigation block), mark (label as drop would, follow all) or off.
    /// [default: drop]
    #[arg(long, value_name = "off|mark|drop|strict")]
    pub denoise: Option<String>,
    /// How the `main_text` column is rendered: plain (one line per
    /// paragraph, heading, list item) or markdown (headings, lists, quotes
    /// and code marked). [default: plain]
    #[arg(long, value_name = "plain|markdown")]
    pub text_format: Option<String>,
    /// Which text columns are filled: both (`text`, all visible text, and
    /// `main_text`, the article), main, visible or none; a column left out
    /// is null. [default: both]
    #[arg(long, value_name = "both|main|visible|none")]
    pub store_text: Option<String>,
    /// Rules file (TOML): typed fields per URL pattern into
    /// `items/rule=NAME/`, and which links matched pages follow.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Crawl plan (TOML): keyword groups scoring each page's `relevance`,
    /// page roles (`role`), and seed templates whose URLs join the seeds.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// The URLs known to be relevant, one a line: each layer's summary
    /// then gives the truth URLs fetched and the target recall so far.
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// Knowledge base (CSV or JSON Lines: id, name, aliases, type, prior,
    /// context): its entities' mentions in each page's main text go to
    /// `entities/`, the relations between them to `relations/`.
    #[arg(long, value_name = "FILE")]
    pub entities: Option<PathBuf>,
    /// Relation patterns, one a line (`predicate: template`), used with
    /// the built-in ones (with --entities).
    #[arg(long, value_name = "FILE")]
    pub relations: Option<PathBuf>,
    /// Entity ids or types, comma-separated: the links of pages that
    /// mention them are fetched first (with --entities).
    #[arg(long, value_name = "LIST")]
    pub prefer_entities: Option<String>,
    /// Entity links scoring below this (0 to 1) are dropped (with
    /// --entities). [default: 0.35]
    #[arg(long, value_name = "S")]
    pub entity_threshold: Option<f64>,
    /// Last night's crawl (a finished data location): requests carry its
    /// ETag and Last-Modified, and a page the server says is unchanged
    /// (304) is carried forward from it with `unchanged = true`.
    #[arg(long, value_name = "DATA")]
    pub previous: Option<String>,
    /// Read the seeds' sitemaps (robots.txt `Sitemap:` lines, else
    /// /sitemap.xml; indexes and gzip followed) and put their URLs into
    /// layer 1.
    #[arg(long)]
    pub sitemaps: bool,
    /// Also write every request and response as WARC/1.1 records, with a
    /// CDXJ index, under `warc/layer=L/` (for web archives).
    #[arg(long)]
    pub warc: bool,
    /// URLs taken from one host's sitemaps at most. [default: 50000]
    #[arg(long, value_name = "N")]
    pub sitemap_urls: Option<usize>,
    /// Link-text ratio above which a DOM block is navigation. [default: 0.25]
    #[arg(long, value_name = "R")]
    pub noise_ratio: Option<f32>,
    /// LCS similarity for a URL to join a cluster (single-pass clustering).
    /// [default: 0.8]
    #[arg(long, value_name = "S")]
    pub cluster_sim: Option<f32>,
    /// File of known noise URLs, one a line: clusters resembling them are noise.
    #[arg(long, value_name = "FILE")]
    pub noise_patterns: Option<PathBuf>,
    /// Distinct query strings followed per host and path in one layer
    /// (faceted-search traps); the rest are labelled `trap`. [default: 100]
    #[arg(long, value_name = "N")]
    pub max_query_variants: Option<usize>,
    /// Query parameters removed from every URL, comma-separated (`*` ends a
    /// prefix); replaces the default list of tracking and session ids
    /// ([`crate::urlnorm::STRIPPED_PARAMS`]). An empty value strips none.
    #[arg(long, value_name = "LIST", help = strip_params_help())]
    pub strip_params: Option<String>,
    /// Entries of the dedup cache lists, over all partitions (about 40
    /// bytes each): with one layer's candidates, what dedup keeps in memory.
    /// [default: 262144]
    #[arg(long, value_name = "N")]
    pub cache_entries: Option<usize>,
    /// Publish every fetched page to Kafka (docs/src/kafka.md): one JSON
    /// message per page, keyed by URL, on topic PREFIX.RULE, PREFIX.ROLE or
    /// PREFIX.pages; each partition's pages in one transaction tied to its
    /// commit, so a resumed crawl publishes nothing twice.
    #[arg(long, value_name = "kafka://BROKERS/PREFIX")]
    pub sink: Option<String>,
    /// Where the tasks of each layer run: in this process (local), as
    /// child processes of this program, W at a time (processes), or as
    /// Kubernetes Indexed Jobs (kubernetes; docs/src/cluster.md).
    /// [default: local]
    #[arg(long, value_name = "local|processes|kubernetes")]
    pub executor: Option<String>,
    /// Tasks at once with --executor processes or kubernetes (default: the
    /// number of cores).
    #[arg(long, value_name = "W")]
    pub workers: Option<usize>,
    /// Kubernetes: the task pods' image (env LAYERCRAWL_IMAGE).
    #[arg(long, value_name = "IMAGE", env = "LAYERCRAWL_IMAGE")]
    pub image: Option<String>,
    /// Kubernetes: the namespace of the Jobs (default: the driver pod's own).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Kubernetes: a Secret whose keys become the task pods' environment
    /// (storage credentials).
    #[arg(long, value_name = "NAME")]
    pub worker_secret: Option<String>,
    /// Kubernetes: the task pods' ServiceAccount. [default: layercrawl-worker]
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    /// Print the Kubernetes Jobs the run would create (for the first layer
    /// and the merge), and exit.
    #[arg(long)]
    pub dry_run: bool,
    /// When another run holds the data location, wait for it to finish
    /// instead of refusing (exit code 2).
    #[arg(long)]
    pub wait: bool,
    /// Print the summary as JSON on stdout (for cron and scripts).
    #[arg(long)]
    pub json: bool,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

/// The `--strip-params` help, with the default list spelled out from the
/// list normalisation actually uses, so the two cannot drift apart.
fn strip_params_help() -> String {
    format!(
        "Query parameters removed from every URL, comma-separated (`*` ends a prefix); replaces the default list of \
         tracking and session ids. An empty value strips none. [default: {}]",
        crate::urlnorm::STRIPPED_PARAMS.join(",")
    )
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, FromArgMatches as _};

    use super::RunArgs;
    use crate::config::CrawlConfig;

    fn parse(extra: &[&str]) -> RunArgs {
        let argv = ["run", "--seeds", "s.txt", "--depth", "2"].iter().chain(extra);
        let matches = RunArgs::augment_args(clap::Command::new("run")).get_matches_from(argv);
        RunArgs::from_arg_matches(&matches).expect("valid flags")
    }

    /// Giving an option the value its help calls the default must build the
    /// very configuration that leaving it out builds.
    #[test]
    fn help_defaults_are_the_applied_defaults() {
        let config = |a: &RunArgs| format!("{:?}", CrawlConfig::from_sources(a).expect("config"));
        let defaults = config(&parse(&[]));
        let cmd = RunArgs::augment_args(clap::Command::new("run"));
        let mut checked = 0;
        for arg in cmd.get_arguments() {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let Some((_, value)) = help.rsplit_once("[default: ") else { continue };
            let value = value.strip_suffix(']').expect("`[default: …]` ends the help");
            let long = arg.get_long().expect("a long flag");
            let flag = format!("--{long}={value}");
            assert_eq!(config(&parse(&[&flag])), defaults, "{flag} is not what leaving --{long} out gives");
            checked += 1;
        }
        assert!(checked >= 21, "only {checked} options state a default");
    }
}
