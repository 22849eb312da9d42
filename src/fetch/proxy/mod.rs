//! Fetching through a pool of forward proxies (`--proxy`, `--proxies`):
//! an [`Exchange`] that sends each request through one proxy of the pool
//! (README, "Proxies"). [`pool`] decides which; this module reads the
//! proxy list, holds one HTTP client per proxy and judges each answer.
//!
//! - **The SSRF guard.** The proxy, not the crawler, connects to the
//!   target. So before a request leaves, the target's host is resolved here
//!   (with `--resolve` rules and the DNS cache, like a direct request) and
//!   every address checked against the address policy; a request the
//!   policy refuses never reaches a proxy. The proxy resolves the name
//!   again itself: proxies are the operator's own machines, trusted to
//!   answer for the same names.
//! - **A proxy's failure is not the page's.** A proxy that refuses the
//!   connection or the tunnel never passed the request on, so it is sent
//!   again at once through another proxy (two more at most); a 407, 502 or
//!   504 answer goes back to the scheduler like any answer (its retries
//!   take another proxy) and counts against the proxy's health.
//! - **Politeness is per target host**, kept by the scheduler before any
//!   proxy is chosen.

pub mod pool;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;

use super::client;
use super::config::FetchConfig;
use super::exchange::{Exchange, Request};
use super::resolve::{AddressPolicy, PolicyResolver, ResolveError};
use super::{ErrorKind, FetchError, Response};
use pool::{Lease, Limits, Pool, Verdict};

/// How many proxies one request may try when proxies refuse it.
const TRIES: usize = 3;

/// The proxy settings (`--proxy`, `--proxies`, `--proxy-delay`,
/// `--proxy-concurrency`, `--proxy-retry`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ProxyConfig {
    /// Proxy URLs (`http://[user:password@]host:port`); empty: direct.
    pub urls: Vec<String>,
    /// Least time between two request starts through one proxy.
    pub delay: Duration,
    /// Requests at once through one proxy.
    pub concurrency: u32,
    /// First time out of service for a failing proxy.
    pub retry: Duration,
}

/// The default `--proxy-concurrency`.
pub const DEFAULT_CONCURRENCY: u32 = 16;
/// The default `--proxy-retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(30);

impl Default for ProxyConfig {
    fn default() -> Self {
        Self { urls: Vec::new(), delay: Duration::ZERO, concurrency: DEFAULT_CONCURRENCY, retry: DEFAULT_RETRY }
    }
}

/// What went through one proxy (a partition's share, in its manifest).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProxyUse {
    /// The proxy's URL without credentials.
    pub proxy: String,
    /// Requests sent through it, failed ones included.
    pub requests: u64,
    /// Requests it failed (refused, 407, 502, 504).
    pub failures: u64,
    /// Times it was taken out of service, and put back.
    pub evictions: u64,
    pub recoveries: u64,
    /// Sum of its answered requests' response times, ms.
    pub ms: u64,
}

impl ProxyUse {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Self) {
        self.requests += other.requests;
        self.failures += other.failures;
        self.evictions += other.evictions;
        self.recoveries += other.recoveries;
        self.ms += other.ms;
    }
}

/// Sums per-proxy uses by proxy name, keeping the first-seen order.
pub fn merge_uses<'a>(into: &mut Vec<ProxyUse>, more: impl IntoIterator<Item = &'a ProxyUse>) {
    for u in more {
        match into.iter_mut().find(|t| t.proxy == u.proxy) {
            Some(t) => t.add(u),
            None => into.push(u.clone()),
        }
    }
}

/// A proxy URL, checked: `http` or `https`, a host, and a port (the
/// scheme's default when left out).
///
/// # Errors
/// A sentence naming what is wrong.
pub fn parse_proxy(s: &str) -> Result<Url, String> {
    let url = Url::parse(s.trim()).map_err(|e| format!("{s:?} is not a proxy URL ({e}); e.g. http://10.0.0.5:3128"))?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(format!("{s:?}: {other}:// proxies are not supported; use http:// or https://")),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{s:?} names no host"));
    }
    if !matches!(url.path(), "" | "/") || url.query().is_some() {
        return Err(format!("{s:?}: a proxy URL is scheme://host:port, with no path"));
    }
    Ok(url)
}

/// Reads a proxies file: one URL a line, blank lines and `#` comments
/// allowed.
///
/// # Errors
/// The file and line at fault.
pub fn read_proxies_file(path: &std::path::Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        parse_proxy(line).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        out.push(line.to_string());
    }
    if out.is_empty() {
        return Err(format!("{} lists no proxy", path.display()));
    }
    Ok(out)
}

/// The URL as shown in logs and the summary: without credentials.
#[must_use]
pub fn display_name(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port_or_known_default() {
        Some(p) => format!("{}://{host}:{p}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// The proxied exchange: one client per proxy, the pool choosing.
pub struct ProxyExchange {
    clients: Vec<reqwest::Client>,
    pool: Arc<Pool>,
    /// Resolves and checks the target before a request is sent.
    resolver: PolicyResolver,
    policy: AddressPolicy,
    /// How long a request may wait for a proxy.
    wait: Duration,
    /// The user agent, when each exchange is captured (`--warc`).
    capture: Option<Arc<str>>,
    min_speed: Option<client::MinSpeed>,
}

impl ProxyExchange {
    /// Builds a client per proxy of `cfg.proxy`.
    ///
    /// # Errors
    /// A proxy URL that does not parse, or a client that cannot be built.
    pub fn new(cfg: &FetchConfig, dns: Option<Arc<super::dns::DnsCache>>) -> Result<Self, FetchError> {
        let policy = AddressPolicy { allow_private: cfg.allow_private };
        let (mut clients, mut names, mut targets) = (Vec::new(), Vec::new(), Vec::new());
        for raw in &cfg.proxy.urls {
            let url = parse_proxy(raw).map_err(FetchError::Client)?;
            let proxy = reqwest::Proxy::all(url.as_str()).map_err(|e| FetchError::Client(format!("{raw}: {e}")))?;
            let client = client::builder(cfg)
                // Connections to one proxy carry many hosts' requests.
                .pool_max_idle_per_host(usize::try_from(cfg.proxy.concurrency).unwrap_or(usize::MAX))
                .proxy(proxy)
                .build()
                .map_err(|e| FetchError::Client(e.to_string()))?;
            clients.push(client);
            let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
            let port = url.port_or_known_default().unwrap_or(80);
            targets.push(if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") });
            names.push(display_name(&url));
        }
        if clients.is_empty() {
            return Err(FetchError::Client("the proxy pool has no proxy".into()));
        }
        let limits =
            Limits { concurrency: cfg.proxy.concurrency.max(1), delay: cfg.proxy.delay, retry: cfg.proxy.retry };
        Ok(Self {
            clients,
            pool: Arc::new(Pool::new(names, targets, limits)),
            resolver: PolicyResolver::new(cfg.resolve.clone(), policy).with_cache(dns),
            policy,
            wait: cfg.timeout,
            capture: client::capturing(cfg),
            min_speed: client::MinSpeed::of(cfg),
        })
    }

    /// The pool, for the partition's counts.
    #[must_use]
    pub fn pool(&self) -> Arc<Pool> {
        Arc::clone(&self.pool)
    }

    async fn send(&self, req: Request<'_>) -> Result<Response, (ErrorKind, String)> {
        let host = req.url.host_str().unwrap_or("").to_ascii_lowercase();
        if client::literal_ip(req.url).is_none() {
            self.resolver.lookup(&host).await.map_err(|e| match e {
                ResolveError::Blocked { .. } => (ErrorKind::Blocked, e.to_string()),
                ResolveError::Dns { .. } => (ErrorKind::Dns, e.to_string()),
            })?;
        }
        let domain = crate::urlnorm::registrable_domain(&host);
        let until = tokio::time::Instant::now() + self.wait;
        let mut tried = Vec::new();
        loop {
            let lease: Lease =
                self.pool.acquire(&host, &domain, &tried, until).await.map_err(|e| (ErrorKind::Connect, e))?;
            let i = lease.index;
            let mut result =
                client::exchange(&self.clients[i], self.policy, req, self.capture.as_deref(), self.min_speed).await;
            if let Ok(Some(c)) = result.as_mut().map(|r| r.capture.as_mut()) {
                // The proxy's address, not the server's.
                c.remote_ip = None;
            }
            match &result {
                Ok(r) if matches!(r.status, 407 | 502 | 504) => lease.finish(Verdict::ProxyFailed),
                Ok(r) => lease.finish(Verdict::Answered(r.elapsed)),
                Err((ErrorKind::Connect, detail)) => {
                    lease.finish(Verdict::ProxyFailed);
                    tried.push(i);
                    tracing::debug!("{}: proxy {} failed: {detail}", req.url, self.pool.name(i));
                    if tried.len() < TRIES.min(self.clients.len()) {
                        continue;
                    }
                    return Err((ErrorKind::Connect, format!("through proxy {}: {detail}", self.pool.name(i))));
                }
                Err(_) => lease.finish(Verdict::Neither),
            }
            return result;
        }
    }
}

impl Exchange for ProxyExchange {
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        Box::pin(self.send(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls_are_checked_and_shown_without_credentials() {
        let url = parse_proxy("http://user:secret@10.0.0.5:3128").expect("ok");
        assert_eq!(display_name(&url), "http://10.0.0.5:3128");
        assert_eq!(display_name(&parse_proxy("http://proxy.lan").expect("ok")), "http://proxy.lan:80");
        for (bad, says) in [
            ("socks5://h:1080", "not supported"),
            ("10.0.0.5:3128", "not a proxy URL"),
            ("http://h:3128/path", "no path"),
        ] {
            let err = parse_proxy(bad).expect_err(bad);
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn a_proxies_file_names_the_line_at_fault() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("proxies.txt");
        std::fs::write(&path, "# pool\nhttp://127.0.0.1:3128\n\nhttp://127.0.0.1:3129  # second\n").expect("write");
        assert_eq!(read_proxies_file(&path).expect("ok"), ["http://127.0.0.1:3128", "http://127.0.0.1:3129"]);
        std::fs::write(&path, "http://127.0.0.1:3128\nftp://x:21\n").expect("write");
        let err = read_proxies_file(&path).expect_err("bad line");
        assert!(err.contains("proxies.txt:2:") && err.contains("ftp"), "{err}");
        std::fs::write(&path, "# nothing\n").expect("write");
        assert!(read_proxies_file(&path).expect_err("empty").contains("lists no proxy"));
    }
}
