//! robots.txt: fetched once per origin, cached for the whole run.
//!
//! Interpretation follows RFC 9309 §2.3.1: a 2xx file is obeyed; 4xx means
//! "no rules" (allow all); 5xx or no answer means "complete disallow", the
//! RFC's rule while a server is failing. Redirects of robots.txt are not
//! followed (treated as unavailable, which the RFC permits after none).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use robotxt::{AccessResult, Robots};
use url::Url;

use super::{ErrorKind, Response};

/// The rules for one origin plus what the fetch found.
#[derive(Debug)]
pub struct RobotsRules {
    robots: Robots,
    /// Status of the robots.txt response, 0 if none.
    pub status: u16,
    /// Why robots.txt got no response at all (the host is blocked, does not
    /// resolve, refuses connections...): its pages fail for the same reason.
    pub unreachable: Option<(ErrorKind, String)>,
}

impl RobotsRules {
    /// Builds rules from the robots.txt exchange (`None`: no response).
    #[must_use]
    pub fn from_exchange(resp: Result<&Response, &(ErrorKind, String)>, agent: &str) -> Self {
        let (access, status) = match resp {
            Ok(r) if (200..300).contains(&r.status) && r.body_error.is_none() => {
                (AccessResult::Successful(&r.body[..]), r.status)
            }
            Ok(r) if r.status >= 500 || r.body_error.is_some() => (AccessResult::Unreachable, r.status),
            Ok(r) => (AccessResult::Unavailable, r.status),
            Err(_) => (AccessResult::Unreachable, 0),
        };
        let unreachable =
            resp.err().map(|(kind, detail)| (*kind, format!("robots.txt could not be fetched: {detail}")));
        Self { robots: Robots::from_access(access, agent), status, unreachable }
    }

    /// Whether `url` may be fetched.
    #[must_use]
    pub fn allows(&self, url: &Url) -> bool {
        self.robots.is_url_allowed(url)
    }

    /// The sitemaps the file lists (`Sitemap:` lines).
    #[must_use]
    pub fn sitemaps(&self) -> &[Url] {
        self.robots.sitemaps()
    }

    /// The file's Crawl-delay for this agent, capped at 60 s so one site
    /// cannot stall a layer; what does not fit the layer is carried over.
    #[must_use]
    pub fn crawl_delay(&self) -> Option<Duration> {
        self.robots.crawl_delay().map(|d| d.min(Duration::from_secs(60)))
    }
}

/// The product token robots.txt groups are matched against: the
/// User-Agent's first word without its version (`layercrawl/0.1` → `layercrawl`).
#[must_use]
pub fn product_token(user_agent: &str) -> String {
    user_agent.split(['/', ' ']).next().unwrap_or("layercrawl").to_ascii_lowercase()
}

/// Rules by origin (`scheme://host:port`), shared by every partition of a run.
#[derive(Clone, Debug, Default)]
pub struct RobotsCache {
    inner: Arc<Mutex<HashMap<String, Arc<RobotsRules>>>>,
}

impl RobotsCache {
    #[must_use]
    pub fn get(&self, origin: &str) -> Option<Arc<RobotsRules>> {
        self.inner.lock().ok().and_then(|m| m.get(origin).cloned())
    }

    pub fn insert(&self, origin: String, rules: Arc<RobotsRules>) {
        if let Ok(mut m) = self.inner.lock() {
            m.insert(origin, rules);
        }
    }
}

/// `scheme://host[:port]` of a URL: the unit robots.txt and politeness apply to.
#[must_use]
pub fn origin_of(url: &Url) -> String {
    url.origin().ascii_serialization()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(status: u16, body: &'static [u8]) -> Response {
        Response { status, body: bytes::Bytes::from_static(body), ..Response::default() }
    }

    #[test]
    fn rfc9309_access_rules() {
        let u = |p: &str| Url::parse(&format!("http://a.test{p}")).expect("url");
        let ok = RobotsRules::from_exchange(
            Ok(&resp(200, b"User-agent: *\nDisallow: /private/\nCrawl-delay: 2\n")),
            "layercrawl",
        );
        assert!(ok.allows(&u("/public")) && !ok.allows(&u("/private/x")));
        assert_eq!(ok.crawl_delay(), Some(Duration::from_secs(2)));
        let missing = RobotsRules::from_exchange(Ok(&resp(404, b"")), "layercrawl");
        assert!(missing.allows(&u("/private/x")));
        let failing = RobotsRules::from_exchange(Ok(&resp(500, b"")), "layercrawl");
        assert!(!failing.allows(&u("/anything")));
        assert!(failing.allows(&u("/robots.txt")));
        let err = (ErrorKind::Connect, "connection refused".to_string());
        let none = RobotsRules::from_exchange(Err(&err), "layercrawl");
        assert!(!none.allows(&u("/")));
        assert_eq!(none.unreachable.as_ref().map(|e| e.0), Some(ErrorKind::Connect));
    }

    #[test]
    fn agent_specific_group_wins() {
        let txt: &'static [u8] = b"User-agent: layercrawl\nDisallow: /only-us\n\nUser-agent: *\nDisallow: /\n";
        let r = RobotsRules::from_exchange(Ok(&resp(200, txt)), &product_token("layercrawl/0.1 (+nightly)"));
        let u = |p: &str| Url::parse(&format!("http://a.test{p}")).expect("url");
        assert!(r.allows(&u("/page")) && !r.allows(&u("/only-us")));
    }
}
