//! The plain HTTP [`Exchange`]: a single request, no redirect following
//! (redirect hops go back through the scheduler so politeness applies to
//! each).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use url::Url;

use super::capture::{self, Capture};
use super::config::FetchConfig;
use super::exchange::{Exchange, Request};
use super::resolve::{AddressPolicy, PolicyResolver, ResolveError};
use super::{ErrorKind, FetchError, Response};

/// The HTTP exchange: one shared client (keep-alive pool, rustls,
/// gzip/brotli/deflate) whose resolver holds the SSRF guard, so the check
/// runs on the address actually connected to (see [`Exchange`]).
#[derive(Clone, Debug)]
pub struct HttpExchange {
    client: reqwest::Client,
    policy: AddressPolicy,
    /// The user agent, when each exchange is captured (`--warc`).
    capture: Option<Arc<str>>,
    min_speed: Option<MinSpeed>,
}

/// The low-speed limit (`--speed-limit`, `--speed-time`), as curl's: an
/// exchange that brings fewer than `bytes` a second over a window of
/// `window`, from the request on, is cut off and ends as a `too_slow`
/// error, keeping what arrived: headers that do not come within the first
/// window, or a body that trickles. Such a page would otherwise hold its
/// request, and the end of its layer, until the timeout; it counts as that
/// one URL's failure, not its host's. Headers that did not come are retried
/// once; a body that trickled is not.
#[derive(Clone, Copy, Debug)]
pub(super) struct MinSpeed {
    pub bytes: u64,
    pub window: Duration,
}

impl MinSpeed {
    pub(super) fn of(cfg: &FetchConfig) -> Option<Self> {
        (cfg.speed_limit > 0 && !cfg.speed_time.is_zero())
            .then_some(Self { bytes: cfg.speed_limit, window: cfg.speed_time })
    }

    /// Bytes a window must bring at least.
    fn floor(self) -> u64 {
        u64::try_from(u128::from(self.bytes) * self.window.as_millis() / 1000).unwrap_or(u64::MAX)
    }
}

impl HttpExchange {
    /// Builds the shared HTTP client.
    ///
    /// # Errors
    /// When the TLS backend cannot be initialised.
    pub fn new(cfg: &FetchConfig, dns: Option<std::sync::Arc<super::dns::DnsCache>>) -> Result<Self, FetchError> {
        let policy = AddressPolicy::new(cfg.allow_private.clone());
        let client = builder(cfg)
            // Proxies are never taken from the environment (HTTP_PROXY and
            // the like): a crawler that silently sent its traffic elsewhere
            // would crawl from another address than the one configured.
            // Configured proxies (`--proxy`) go through `super::proxy`.
            .no_proxy()
            .dns_resolver(PolicyResolver::new(cfg.resolve.clone(), policy.clone()).with_cache(dns))
            .build()
            .map_err(|e| FetchError::Client(build_error(&e)))?;
        Ok(Self { client, policy, capture: capturing(cfg), min_speed: MinSpeed::of(cfg) })
    }
}

impl Exchange for HttpExchange {
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        Box::pin(exchange(&self.client, &self.policy, req, self.capture.as_deref(), self.min_speed))
    }
}

/// The user agent to capture exchanges with, when `cfg` asks for captures.
pub(super) fn capturing(cfg: &FetchConfig) -> Option<Arc<str>> {
    cfg.capture.then(|| Arc::from(cfg.politeness.user_agent.as_str()))
}

/// The client settings every exchange shares: no redirects followed,
/// timeouts, the keep-alive pool, the user agent.
pub(super) fn builder(cfg: &FetchConfig) -> reqwest::ClientBuilder {
    layercrawl_store::tls::install_provider();
    reqwest::Client::builder()
        .user_agent(cfg.politeness.user_agent.clone())
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(cfg.connect_timeout)
        .timeout(cfg.timeout)
        .read_timeout(cfg.timeout.min(Duration::from_secs(20)))
        .pool_max_idle_per_host(cfg.politeness.per_host.max(1))
        .pool_idle_timeout(idle_timeout(cfg.politeness.min_delay()))
        .tcp_nodelay(true)
}

/// Why the client could not be built, with the causes reqwest's own
/// message leaves out (it says only "builder error"). The usual cause is a
/// machine or container image without CA certificates, which the TLS
/// verifier loads when the client is built (docs/src/cluster.md, "The
/// image"): that one says what to install.
pub(super) fn build_error(e: &reqwest::Error) -> String {
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        causes.push(s.to_string());
        source = s.source();
    }
    let detail = if causes.is_empty() { e.to_string() } else { causes.join(": ") };
    if detail.to_ascii_lowercase().contains("certificate") {
        format!(
            "{detail}: no CA certificates were found, which HTTPS needs (install them, e.g. Debian's \
             ca-certificates package, or point SSL_CERT_FILE at a PEM bundle)"
        )
    } else {
        detail
    }
}

/// How long a keep-alive connection may sit idle in the pool: twice the
/// request spacing, at least 3 s, so a host's next request finds it.
/// Longer only keeps surplus: the client opens a new connection when a
/// host's next request starts before the previous one's connection is back
/// in the pool, and on a busy crawl those extras sink to the bottom of the
/// host's idle list. At 30 s they lasted a whole layer: a 1.35 M-page crawl
/// of 320 sites peaked at 368 MB, 335 MB at 3 s (one pair of runs), and 1,580
/// sockets in a 320-site depth-2 crawl became 1,427. A host whose
/// Crawl-delay is longer reconnects for each request, which at that pace
/// costs little.
fn idle_timeout(delay: Duration) -> Duration {
    (delay * 2).max(Duration::from_secs(3))
}

/// Performs one GET of `req.url`, reading at most `req.max_body` bytes of
/// the (decompressed) body; with `capture` (the user agent), the exchange
/// is kept for the archive ([`Capture`]). Failures are values, never
/// panics or errors.
pub(super) async fn exchange(
    client: &reqwest::Client,
    policy: &AddressPolicy,
    req: Request<'_>,
    capture: Option<&str>,
    min_speed: Option<MinSpeed>,
) -> Result<Response, (ErrorKind, String)> {
    let Request { url, max_body, validators } = req;
    // IP-literal hosts skip the resolver inside the client: check them here.
    if let Some(ip) = literal_ip(url) {
        if let Err(class) = policy.check(ip) {
            return Err((
                ErrorKind::Blocked,
                format!("{ip} is a {class} address, which the crawl may not reach (allow with --allow-private)"),
            ));
        }
    }
    let start = Instant::now();
    let sent_at = std::time::SystemTime::now();
    let mut request = client.get(url.clone());
    let sent = capture.map(|agent| capture::request_headers(agent, url, validators));
    if let Some(headers) = &sent {
        // Every header but Host, which the client derives from the URL as
        // the captured one was.
        for (name, value) in headers.iter().filter(|(n, _)| *n != reqwest::header::HOST) {
            request = request.header(name, value);
        }
    } else if let Some(v) = validators {
        if let Some(etag) = &v.etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(date) = &v.last_modified {
            request = request.header(reqwest::header::IF_MODIFIED_SINCE, date);
        }
    }
    // The low-speed window starts with the request, as curl's does: a
    // server that sends not even its headers within it is cut off too.
    let answer = match min_speed {
        Some(m) => match tokio::time::timeout(m.window, request.send()).await {
            Ok(answer) => answer,
            Err(_) => {
                let detail = format!("no answer within {} s (--speed-time); cut off", m.window.as_secs_f64());
                return Err((ErrorKind::TooSlow, detail));
            }
        },
        None => request.send().await,
    };
    let mut resp = answer.map_err(|e| classify(&e))?;
    let status = resp.status().as_u16();
    let header =
        |name: reqwest::header::HeaderName| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let location = header(reqwest::header::LOCATION);
    let etag = header(reqwest::header::ETAG);
    let last_modified = header(reqwest::header::LAST_MODIFIED);
    let retry_after =
        header(reqwest::header::RETRY_AFTER).and_then(|v| parse_retry_after(&v, std::time::SystemTime::now()));
    let capture = sent.map(|request| {
        Box::new(Capture {
            url: url.clone(),
            sent_at,
            request,
            status,
            version: resp.version(),
            reason: resp
                .extensions()
                .get::<hyper::ext::ReasonPhrase>()
                .map(|r| String::from_utf8_lossy(r.as_bytes()).into_owned()),
            // Moved, not copied: nothing reads them from the client after this.
            headers: std::mem::take(resp.headers_mut()),
            remote_ip: resp.remote_addr().map(|a| a.ip()),
            served_body: None,
        })
    });
    // Sized once from Content-Length (bounded by the body limit), so a
    // body arriving in many chunks is copied once, not regrown.
    let expected = resp.content_length().unwrap_or(0).min(max_body);
    let mut body = BytesMut::with_capacity(usize::try_from(expected).unwrap_or(0));
    let mut received: u64 = 0;
    let mut truncated = false;
    // The low-speed window: its end, and what it has brought so far.
    let mut window = min_speed.map(|m| (tokio::time::Instant::now() + m.window, 0u64));
    // Why the body ended early, if it did: what arrived is kept.
    let mut cut: Option<(ErrorKind, String)> = None;
    loop {
        let next = match window {
            Some((end, _)) => match tokio::time::timeout_at(end, resp.chunk()).await {
                Ok(next) => next,
                // Nothing at all before the window ended: checked below.
                Err(_) => Ok(Some(Bytes::new())),
            },
            None => resp.chunk().await,
        };
        let chunk = match next {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                let (kind, detail) = classify(&e);
                // A body cut mid-way is a reset; keep what arrived for the record.
                cut = Some((if kind == ErrorKind::Timeout { kind } else { ErrorKind::Reset }, detail));
                break;
            }
        };
        received += chunk.len() as u64;
        let room = usize::try_from(max_body.saturating_sub(body.len() as u64)).unwrap_or(usize::MAX);
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
        if let (Some(m), Some((end, got))) = (min_speed, window.as_mut()) {
            *got += chunk.len() as u64;
            let now = tokio::time::Instant::now();
            if now >= *end {
                if *got < m.floor() {
                    let detail = format!(
                        "body slower than {} bytes/s over {} s ({} bytes in the last window, {} before it); cut off",
                        m.bytes,
                        m.window.as_secs_f64(),
                        *got,
                        received - *got
                    );
                    cut = Some((ErrorKind::TooSlow, detail));
                    break;
                }
                *end = now + m.window;
                *got = 0;
            }
        }
    }
    Ok(Response {
        status,
        content_type,
        location,
        retry_after,
        etag,
        last_modified,
        body: body.freeze(),
        received,
        truncated: truncated || cut.is_some(),
        elapsed: start.elapsed(),
        body_error: cut,
        rendered: false,
        capture,
    })
}

/// Retry-After is delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
fn parse_retry_after(v: &str, now: std::time::SystemTime) -> Option<u64> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(secs);
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).map_or(0, |d| d.as_secs()))
}

pub(super) fn literal_ip(url: &Url) -> Option<std::net::IpAddr> {
    match url.host()? {
        url::Host::Ipv4(v4) => Some(v4.into()),
        url::Host::Ipv6(v6) => Some(v6.into()),
        url::Host::Domain(_) => None,
    }
}

/// Maps a client error to an error kind and a one-line detail.
fn classify(e: &reqwest::Error) -> (ErrorKind, String) {
    // Our resolver's errors travel inside the client's error chain.
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(r) = s.downcast_ref::<ResolveError>() {
            let kind = match r {
                ResolveError::Blocked { .. } => ErrorKind::Blocked,
                _ => ErrorKind::Dns,
            };
            return (kind, r.to_string());
        }
        src = s.source();
    }
    let kind = if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() {
        ErrorKind::Connect
    } else if e.is_decode() {
        ErrorKind::Decode
    } else if e.is_body() {
        ErrorKind::Reset
    } else {
        ErrorKind::Connect
    };
    (kind, error_chain(e))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let m = inner.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_connections_outlast_the_request_spacing() {
        assert_eq!(idle_timeout(Duration::ZERO), Duration::from_secs(3), "no delay: the floor");
        assert_eq!(idle_timeout(Duration::from_secs(1)), Duration::from_secs(3));
        assert_eq!(idle_timeout(Duration::from_millis(2500)), Duration::from_secs(5), "twice the spacing");
    }

    #[test]
    fn ip_literal_urls_are_checked_before_any_connection() {
        // exchange() checks these before asking the client for a connection;
        // the check itself is pure, so this test sends nothing anywhere.
        let deny = AddressPolicy::default();
        for (u, blocked) in [
            ("http://127.0.0.1:8080/", true),
            ("http://10.0.0.7/", true),
            ("http://[::1]/", true),
            ("http://169.254.169.254/latest/meta-data/", true),
            ("http://[::ffff:192.168.1.1]/", true),
            ("http://93.184.216.34/", false),
            ("http://example.org/", false),
        ] {
            let url = Url::parse(u).expect("url");
            let refused = literal_ip(&url).is_some_and(|ip| deny.check(ip).is_err());
            assert_eq!(refused, blocked, "{u}");
        }
    }

    #[test]
    fn retry_after_in_seconds_or_as_a_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // Wed, 21 Oct 2015 07:28:00 GMT
        assert_eq!(parse_retry_after(" 120 ", now), Some(120));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), Some(30));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), Some(0), "a past date means now");
        assert_eq!(parse_retry_after("soon", now), None);
    }
}
