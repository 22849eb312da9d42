//! Fetching through a pool of forward proxies (`--proxy`, `--proxies`):
//! an [`Exchange`] that sends each request through one proxy of the pool
//! (docs/src/proxies.md). [`pool`] decides which; this module reads the
//! proxy list, holds one HTTP client per proxy and judges each answer.
//!
//! - **The SSRF guard.** The proxy, not the crawler, connects to the
//!   target. So before a request leaves, the target's host is resolved here
//!   (with `--resolve` rules and the DNS cache, like a direct request) and
//!   every address checked against the address policy; a request the
//!   policy refuses never reaches a proxy. Nor is a proxy ever handed the
//!   name, which it would resolve again (a DNS answer may change between
//!   two lookups): each client reaches its proxy through a [`Relay`] on
//!   loopback, which resolves and checks the target once more and asks the
//!   proxy for that checked address (`CONNECT 203.0.113.7:443`, TLS and
//!   its certificate check still for the name; `GET http://203.0.113.7/…`
//!   with the name's `Host`).
//! - **A proxy's failure is not the page's.** A proxy that refuses the
//!   connection or the tunnel never passed the request on, so it is sent
//!   again at once through another proxy (two more at most); a 407, 502 or
//!   504 answer goes back to the scheduler like any answer (its retries
//!   take another proxy) and counts against the proxy's health.
//! - **Politeness is per target host**, kept by the scheduler before any
//!   proxy is chosen.
//! - **Credentials stay in memory** ([`credentials`]): the settings name a
//!   proxy by its URL without `user:password@`, and no message shows them.

pub mod credentials;
pub mod pool;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use url::Url;

use super::client;
use super::config::FetchConfig;
use super::exchange::{Exchange, Request};
use super::relay::{ProxyHop, Relay, Upstream};
use super::resolve::{AddressPolicy, PolicyResolver, ResolveError};
use super::{ErrorKind, FetchError, Response};
use credentials::Credentials;
pub use credentials::ProxyAuth;
use pool::{Lease, Limits, Pool, Verdict};

/// How many proxies one request may try when proxies refuse it.
const TRIES: usize = 3;

pub use super::config::{ProxyConfig, DEFAULT_CONCURRENCY, DEFAULT_RETRY};
pub use crate::store::manifest::ProxyUse;

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
/// scheme's default when left out). Its userinfo, if any, is kept; see
/// [`split_proxy`].
///
/// # Errors
/// A sentence naming what is wrong, quoting the URL without its userinfo.
pub fn parse_proxy(s: &str) -> Result<Url, String> {
    // The text may hold a password: messages quote it redacted.
    let shown = credentials::redact(s.trim());
    // Without `://`, `user:pw@host` or `host:port` would parse with the user
    // or the host as the scheme.
    if !s.contains("://") {
        return Err(format!("{shown:?} is not a proxy URL (scheme://host:port); e.g. http://10.0.0.5:3128"));
    }
    let url =
        Url::parse(s.trim()).map_err(|e| format!("{shown:?} is not a proxy URL ({e}); e.g. http://10.0.0.5:3128"))?;
    match url.scheme() {
        "http" | "https" => {}
        other => return Err(format!("{shown:?}: {other}:// proxies are not supported; use http:// or https://")),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{shown:?} names no host"));
    }
    if !matches!(url.path(), "" | "/") || url.query().is_some() {
        return Err(format!("{shown:?}: a proxy URL is scheme://host:port, with no path"));
    }
    Ok(url)
}

/// A proxy URL checked ([`parse_proxy`]) and split into the URL without
/// userinfo, as the settings keep it (`http://host:port`), and the
/// credentials it carried.
///
/// # Errors
/// As [`parse_proxy`].
pub fn split_proxy(s: &str) -> Result<(String, Option<Credentials>), String> {
    let mut url = parse_proxy(s)?;
    let creds = credentials::take_userinfo(&mut url);
    Ok((url.as_str().trim_end_matches('/').to_string(), creds))
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

/// What comes after a relay that goes where the crawl goes: the first
/// proxy of the pool, or straight to the address when there is none.
///
/// # Errors
/// As [`ProxyExchange::new`].
pub fn first_upstream(cfg: &FetchConfig) -> Result<Upstream, FetchError> {
    match cfg.proxy.urls.first() {
        None => Ok(Upstream::Direct),
        Some(raw) => Ok(Upstream::Proxy(hop(cfg, raw, env_credentials(cfg)?.as_ref())?.1)),
    }
}

/// The credentials of every proxy from the environment, when the run's own
/// process does not hold them in memory (a unit of work in another process).
fn env_credentials(cfg: &FetchConfig) -> Result<Option<Credentials>, FetchError> {
    if cfg.proxy.auth.is_empty() {
        Credentials::from_env().map_err(|e| FetchError::Client(format!("proxy credentials: {e}")))
    } else {
        Ok(None)
    }
}

/// The proxy URL `raw` (without credentials) and the hop to it, with its
/// credentials: its own, the run's for it, or `from_env`.
fn hop(cfg: &FetchConfig, raw: &str, from_env: Option<&Credentials>) -> Result<(Url, ProxyHop), FetchError> {
    let (bare, own) = split_proxy(raw).map_err(FetchError::Client)?;
    let url = parse_proxy(&bare).map_err(FetchError::Client)?;
    let creds = own.as_ref().or_else(|| cfg.proxy.auth.for_proxy(&bare)).or(from_env);
    let hop = ProxyHop::new(&url, creds.map(Credentials::basic))
        .map_err(|e| FetchError::Client(format!("proxy {}: {e}", display_name(&url))))?;
    Ok((url, hop))
}

/// The proxied exchange: one client per proxy, the pool choosing.
pub struct ProxyExchange {
    clients: Vec<reqwest::Client>,
    /// Each client's way to its proxy, by the checked address.
    relays: Vec<Relay>,
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
        let policy = AddressPolicy::new(cfg.allow_private.clone());
        let resolver = PolicyResolver::new(cfg.resolve.clone(), policy.clone()).with_cache(dns);
        let from_env = env_credentials(cfg)?;
        let (mut clients, mut relays, mut names, mut targets) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for raw in &cfg.proxy.urls {
            let (url, hop) = hop(cfg, raw, from_env.as_ref())?;
            let relay = Relay::bind(resolver.clone(), Upstream::Proxy(hop), cfg.connect_timeout)
                .map_err(|e| FetchError::Client(format!("proxy {}: no loopback relay: {e}", display_name(&url))))?;
            let proxy = reqwest::Proxy::all(relay.url())
                .map_err(|e| FetchError::Client(format!("proxy {}: {e}", display_name(&url))))?
                .basic_auth(crate::relay::USER, relay.password());
            relays.push(relay);
            let client = client::builder(cfg)
                // Connections to one proxy carry many hosts' requests.
                .pool_max_idle_per_host(usize::try_from(cfg.proxy.concurrency).unwrap_or(usize::MAX))
                .proxy(proxy)
                .build()
                .map_err(|e| FetchError::Client(client::build_error(&e)))?;
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
            relays,
            pool: Arc::new(Pool::new(names, targets, limits)),
            resolver,
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
        for relay in &self.relays {
            relay.serve().map_err(|e| (ErrorKind::Internal, e))?;
        }
        let domain = crate::urlnorm::registrable_domain(&host);
        let until = tokio::time::Instant::now() + self.wait;
        let mut tried = Vec::new();
        loop {
            let lease: Lease =
                self.pool.acquire(&host, &domain, &tried, until).await.map_err(|e| (ErrorKind::Connect, e))?;
            let i = lease.index;
            let mut result =
                client::exchange(&self.clients[i], &self.policy, req, self.capture.as_deref(), self.min_speed).await;
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
        // Messages quote a bad URL without its userinfo.
        for bad in ["socks5://u:s3cret@h:1080", "http://u:s3cret@h:3128/path", "http://u:s3cret@:3128", "u:s3cret@h"] {
            let err = parse_proxy(bad).expect_err(bad);
            assert!(!err.contains("s3cret") && !err.contains("u:"), "{bad}: {err}");
        }
        let (bare, creds) = split_proxy(" http://u:s3cret@10.0.0.5:3128 ").expect("ok");
        assert_eq!(bare, "http://10.0.0.5:3128");
        assert_eq!(
            creds.map(|c| (c.user().to_string(), c.password().to_string())),
            Some(("u".into(), "s3cret".into()))
        );
        assert_eq!(split_proxy("http://[::1]:3128").expect("ok"), ("http://[::1]:3128".to_string(), None));
    }

    /// A forward proxy on loopback that wants `Basic alice:s3cret`: 200 with
    /// it, 407 without. Returns its address and the Proxy-Authorization
    /// headers it was sent.
    async fn authenticating_proxy() -> (std::net::SocketAddr, Arc<std::sync::Mutex<Vec<Option<String>>>>) {
        use base64::Engine as _;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let want = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("alice:s3cret"));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let (log, want) = (Arc::clone(&log), want.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            // The pool's health check connects and closes.
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let auth = head.lines().find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("proxy-authorization").then(|| v.trim().to_string())
                    });
                    let ok = auth.as_deref() == Some(want.as_str());
                    log.lock().expect("log").push(auth);
                    let answer: &[u8] = if ok {
                        b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                    } else {
                        b"HTTP/1.1 407 Proxy Authentication Required\r\nproxy-authenticate: Basic\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    };
                    let _ = conn.write_all(answer).await;
                });
            }
        });
        (addr, seen)
    }

    #[tokio::test]
    async fn credentials_kept_in_memory_authenticate_with_the_proxy() {
        let (addr, seen) = authenticating_proxy().await;
        let rule = crate::resolve::ResolveRule::parse("site.test=127.0.0.1:9").expect("rule");
        let target = Url::parse("http://site.test/").expect("url");
        let bare = format!("http://{addr}");
        let status = |auth: ProxyAuth| {
            let mut cfg = FetchConfig::single_pages(vec![rule.clone()], true, crate::Politeness::unpaced());
            cfg.proxy.urls = vec![bare.clone()];
            cfg.proxy.auth = auth;
            let target = &target;
            async move {
                let exchange = ProxyExchange::new(&cfg, None).expect("exchange");
                exchange.get(Request::get(target, 1 << 20)).await.expect("an answer").status
            }
        };
        // As a --proxy URL's userinfo leaves them: in memory, by proxy.
        let mine = ProxyAuth { by_proxy: vec![(bare.clone(), Credentials::new("alice", "s3cret"))], shared: None };
        assert_eq!(status(mine).await, 200);
        // As a task reads them from the environment: shared by every proxy.
        let shared = ProxyAuth { by_proxy: Vec::new(), shared: Some(Credentials::new("alice", "s3cret")) };
        assert_eq!(status(shared).await, 200);
        // The proxy does check them.
        let wrong = ProxyAuth { by_proxy: Vec::new(), shared: Some(Credentials::new("alice", "guess")) };
        assert_eq!(status(wrong).await, 407);
        let seen = seen.lock().expect("log").clone();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen.iter().all(Option::is_some), "each request carried Proxy-Authorization: {seen:?}");
    }

    /// A forward proxy on loopback that logs each request line it is
    /// sent and, like a real proxy, resolves a name itself: here every name
    /// resolves to `canary` (what a rebinding DNS answer would hand it).
    async fn resolving_proxy(
        canary: std::net::SocketAddr,
    ) -> (std::net::SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let log = Arc::clone(&log);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match conn.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let line = text.lines().next().unwrap_or_default().to_string();
                    log.lock().expect("log").push(line.clone());
                    let target = line.split(' ').nth(1).unwrap_or_default();
                    let connect = line.starts_with("CONNECT ");
                    let authority = if connect {
                        target.to_string()
                    } else {
                        let url = Url::parse(target).expect("absolute-form");
                        format!("{}:{}", url.host_str().unwrap_or_default(), url.port_or_known_default().unwrap_or(80))
                    };
                    let to = match authority.parse::<std::net::SocketAddr>() {
                        Ok(a) => a,
                        Err(_) => canary,
                    };
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(to).await else { return };
                    if connect {
                        let _ = conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await;
                    } else {
                        let _ = upstream.write_all(&head).await;
                    }
                    let _ = tokio::io::copy_bidirectional(&mut conn, &mut upstream).await;
                });
            }
        });
        (addr, seen)
    }

    /// The proxy is asked for the address the crawl checked, never for the
    /// name, so a proxy that would resolve the name elsewhere (a blocked
    /// canary here) never gets the chance.
    #[tokio::test]
    async fn the_proxy_is_sent_the_checked_address_never_the_name() {
        use crate::relay::tests::{canary, server};
        use crate::resolve::{AllowPrivate, ResolveRule};
        let (site, hosts) = server("127.0.0.17").await;
        let (canary, knocks) = canary("127.0.0.66").await;
        let (proxy, seen) = resolving_proxy(canary).await;
        let mut cfg = FetchConfig::single_pages(
            vec![ResolveRule::parse(&format!("site.test={site}")).expect("rule")],
            false,
            crate::Politeness::unpaced(),
        );
        cfg.allow_private = AllowPrivate::parse_list("127.0.0.17").expect("list");
        cfg.proxy.urls = vec![format!("http://{proxy}")];
        let exchange = ProxyExchange::new(&cfg, None).expect("exchange");

        let page = Url::parse("http://site.test/page").expect("url");
        let r = exchange.get(Request::get(&page, 1 << 20)).await.expect("an answer");
        assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
        assert_eq!(*hosts.lock().expect("log"), ["site.test"], "the server is asked for the name's page");
        // https: the tunnel goes to the checked address; TLS (here against a
        // plain server, so it fails) is the crawler's own, for the name.
        let secure = Url::parse("https://site.test/").expect("url");
        assert!(exchange.get(Request::get(&secure, 1 << 20)).await.is_err(), "no TLS server there");
        // Refused before any proxy is asked.
        let blocked = Url::parse(&format!("http://{canary}/")).expect("url");
        let err = exchange.get(Request::get(&blocked, 1 << 20)).await.expect_err("blocked");
        assert_eq!(err.0, ErrorKind::Blocked, "{err:?}");

        let seen = seen.lock().expect("log").clone();
        assert!(seen.contains(&format!("GET http://{site}/page HTTP/1.1")), "{seen:?}");
        assert!(seen.iter().any(|l| l.starts_with(&format!("CONNECT {site} "))), "{seen:?}");
        assert!(seen.iter().all(|l| !l.contains("site.test")), "a name reached the proxy: {seen:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(knocks.load(std::sync::atomic::Ordering::SeqCst), 0, "the canary was reached");
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
