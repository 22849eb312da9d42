//! Rate limiting as nginx's `limit_req` does it, and `limited.test`, a host
//! all of whose pages are behind it.
//!
//! [`LimitReq`] is nginx's leaky bucket (`limit_req_zone ... rate=R r/s;
//! limit_req zone=... burst=B nodelay; limit_req_status 429;`): each
//! request admitted adds one to the bucket's excess, which drains at `R` a
//! second; a request that would take the excess past `B` is refused with
//! `429` and no `Retry-After`, and leaves the bucket as it was. So after
//! a pause it admits `B + 1` requests at once, and then `R` a second.
//!
//! `limited.test` (on when [`crate::FarmConfig::limited_pages`] > 0):
//! `/` and `/p/1` … `/p/N-1`, page `k` linking to its [`FANOUT`] children
//! (`k*FANOUT+1 ..= k*FANOUT+FANOUT`), so that the site is a few hops
//! deep; every page request passes one [`LimitReq`] of [`RATE`] requests a
//! second with a burst of [`BURST`] (robots.txt is not limited).
//! [`reachable`] is the breadth-first truth.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Instant;

use hyper::{Response, StatusCode};

use super::body::FarmBody;
use super::server;

/// The host's name.
pub const HOST: &str = "limited.test";
/// Requests a second the host admits, and how many more at once.
pub const RATE: f64 = 10.0;
pub const BURST: u32 = 5;
/// Children of each page.
pub const FANOUT: u32 = 8;

/// nginx's `limit_req` with `nodelay`: see the module doc.
#[derive(Debug)]
pub struct LimitReq {
    rate: f64,
    burst: f64,
    /// The excess (requests above the rate) and when it was last set.
    state: Mutex<(f64, Option<Instant>)>,
}

impl LimitReq {
    /// `rate` requests a second, `burst` more at once.
    #[must_use]
    pub fn new(rate: f64, burst: u32) -> Self {
        Self { rate, burst: f64::from(burst), state: Mutex::new((0.0, None)) }
    }

    /// Whether a request arriving now is admitted.
    pub fn admit(&self) -> bool {
        self.admit_at(Instant::now())
    }

    /// Whether a request arriving at `now` is admitted.
    pub fn admit_at(&self, now: Instant) -> bool {
        let mut s = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let excess = match s.1 {
            // As nginx: the first request of a key sets it up at no excess.
            None => 0.0,
            Some(last) => (s.0 - self.rate * now.saturating_duration_since(last).as_secs_f64() + 1.0).max(0.0),
        };
        if excess > self.burst {
            return false;
        }
        *s = (excess, Some(now));
        true
    }

    /// Starts over, as a fresh key.
    pub fn reset(&self) {
        *self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = (0.0, None);
    }
}

/// `limited.test`'s settings and its limit.
pub(crate) struct Limited {
    pages: u32,
    limit: LimitReq,
}

impl Limited {
    pub(crate) fn new(pages: u32) -> Self {
        Self { pages, limit: LimitReq::new(RATE, BURST) }
    }

    pub(crate) fn reset(&self) {
        self.limit.reset();
    }

    pub(crate) fn respond(&self, path: &str) -> Response<FarmBody> {
        if path == "/robots.txt" {
            return server::typed(StatusCode::OK, "text/plain", "User-agent: *\nAllow: /\n".into());
        }
        if !self.limit.admit() {
            return server::html(
                StatusCode::TOO_MANY_REQUESTS,
                "<html><head><title>429 Too Many Requests</title></head><body><center><h1>429 Too Many Requests</h1></center><hr><center>nginx</center></body></html>\n",
            );
        }
        match page_number(path).filter(|&k| k < self.pages) {
            Some(k) => server::html(StatusCode::OK, page(k, self.pages)),
            None => server::not_found(),
        }
    }
}

/// The page a path names: 0 for `/`, `k` for `/p/k`.
fn page_number(path: &str) -> Option<u32> {
    if path == "/" {
        return Some(0);
    }
    let n = path.strip_prefix("/p/")?;
    n.parse().ok().filter(|&k: &u32| k > 0 && !n.starts_with('0'))
}

fn page_path(k: u32) -> String {
    if k == 0 {
        "/".into()
    } else {
        format!("/p/{k}")
    }
}

fn children(k: u32, pages: u32) -> impl Iterator<Item = u32> {
    let first = u64::from(k) * u64::from(FANOUT) + 1;
    (first..first + u64::from(FANOUT)).filter(move |&c| c < u64::from(pages)).map(|c| c as u32)
}

fn page(k: u32, pages: u32) -> String {
    let mut h = format!(
        "<!DOCTYPE html>\n<html><head><title>Limited page {k}</title></head><body><h1>Limited page {k}</h1>\n\
         <p>Page {k} of a host that admits ten requests a second: its server refuses the rest with 429, \
         and this page, number {k}, is worth the wait.</p>\n<ul>\n"
    );
    for c in children(k, pages) {
        let _ = writeln!(h, "<li><a href=\"{0}\">{0}</a></li>", page_path(c));
    }
    h.push_str("</ul></body></html>\n");
    h
}

/// Every URL of `limited.test` (origin `origin`) within `depth` hops of `/`.
#[must_use]
pub fn reachable(origin: &str, pages: u32, depth: u32) -> BTreeSet<String> {
    let mut seen = BTreeSet::from([format!("{origin}/")]);
    let mut frontier = vec![0u32];
    for _ in 0..depth {
        let next: Vec<u32> = frontier.iter().flat_map(|&k| children(k, pages)).collect();
        seen.extend(next.iter().map(|&c| format!("{origin}{}", page_path(c))));
        frontier = next;
    }
    seen
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn limit_req_admits_its_burst_at_once_and_then_its_rate() {
        let l = LimitReq::new(10.0, 5);
        let t = Instant::now();
        let at_once: Vec<bool> = (0..8).map(|_| l.admit_at(t)).collect();
        assert_eq!(at_once, [true, true, true, true, true, true, false, false], "the first, and a burst of five");
        // 100 ms drains one: one more, and a refusal does not fill it.
        let t = t + Duration::from_millis(100);
        assert_eq!([l.admit_at(t), l.admit_at(t)], [true, false]);
        // At the rate, every request; a second's pause, the whole burst again.
        let admitted = (1..=20).filter(|i| l.admit_at(t + Duration::from_millis(100 * i))).count();
        assert_eq!(admitted, 20);
        let later = t + Duration::from_secs(4);
        assert_eq!((0..8).filter(|_| l.admit_at(later)).count(), 6);
        l.reset();
        assert!(l.admit_at(later), "a fresh key");
    }

    #[test]
    fn the_site_is_a_tree_whose_depth_three_holds_three_hundred_pages() {
        let o = "http://limited.test";
        assert_eq!(reachable(o, 300, 0).len(), 1);
        assert_eq!(reachable(o, 300, 1).len(), 1 + 8);
        assert_eq!(reachable(o, 300, 3).len(), 300);
        assert!(reachable(o, 300, 3).contains("http://limited.test/p/299"));
        let home = Limited::new(300).respond("/");
        assert_eq!(home.status(), StatusCode::OK);
        assert_eq!(Limited::new(300).respond("/p/300").status(), StatusCode::NOT_FOUND);
        assert_eq!(Limited::new(300).respond("/p/01").status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn past_its_burst_the_host_answers_429_without_retry_after_but_robots_txt_always() {
        let site = Limited::new(300);
        let statuses: Vec<u16> = (0..8).map(|i| site.respond(&format!("/p/{}", i + 1)).status().as_u16()).collect();
        assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 429, 429]);
        let refused = site.respond("/p/9");
        assert!(refused.headers().get(hyper::header::RETRY_AFTER).is_none());
        assert_eq!(site.respond("/robots.txt").status(), StatusCode::OK);
    }
}
