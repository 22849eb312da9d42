//! `trouble.test` (on when [`crate::FarmConfig::trouble_pages`] > 0): a few
//! problem pages on the same host as a few hundred ordinary ones, the
//! worst case for a crawler's promise that nothing within the depth is
//! lost. One host, so its politeness state is shared by all of them:
//!
//! - `/`, `/p/1` … `/p/N-1`: ordinary pages, each with its own text, linking
//!   to its [`FANOUT`] children (page `k` to `k*FANOUT+1 ..= k*FANOUT+FANOUT`),
//!   so the site is a few hops deep;
//! - `/always-503`: always `503` with `Retry-After: 5`;
//! - `/trickle`: `200`, then 16 bytes a second for `trickle` (60 s by default);
//! - `/slow/0` … `/slow/9`: bodies sent in two halves `slow` apart;
//! - `/limited/0` … `/limited/19`: a rate-limited area, as nginx's
//!   `limit_req` of [`LIMIT_RATE`] requests a second with a burst of
//!   [`LIMIT_BURST`] ([`crate::limited::LimitReq`]); past it, `429`
//!   without `Retry-After`;
//! - `/loop/a` ↔ `/loop/b`: a redirect loop;
//! - a burst: from the host's [`BURST_AFTER`]th page request on, every page
//!   request is answered `500` for `burst` (robots.txt is not), then the
//!   server recovers.
//!
//! Every ordinary page links to `/always-503`, `/trickle`, `/loop/a`, one
//! slow page and one limited page. [`reachable`] is the breadth-first truth.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::limited::LimitReq;

use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};

use super::body::{self, FarmBody};
use super::server::{self, HTML};

/// The host's name.
pub const HOST: &str = "trouble.test";
/// Children of each ordinary page.
pub const FANOUT: u32 = 8;
/// Slow pages and rate-limited pages.
pub const SLOW: u32 = 10;
pub const LIMITED: u32 = 20;
/// Requests a second the limited area admits, and how many more at once.
pub const LIMIT_RATE: f64 = 10.0;
pub const LIMIT_BURST: u32 = 5;
/// The page request that starts the burst (counting from 1).
pub const BURST_AFTER: u64 = 60;
/// The problem URLs every ordinary page links to, besides its slow and
/// limited page.
pub const PROBLEMS: [&str; 3] = ["/always-503", "/trickle", "/loop/a"];

/// A duration in whole milliseconds, as the burst's length is kept.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The host's settings and state.
pub(crate) struct Trouble {
    pages: u32,
    /// The burst's length, ms (0: none); [`Trouble::set_burst`] changes it.
    burst_ms: AtomicU64,
    trickle: Duration,
    slow: Duration,
    page_requests: AtomicU64,
    burst_started: Mutex<Option<Instant>>,
    /// The limited area's limit.
    limit: LimitReq,
}

impl Trouble {
    pub(crate) fn new(pages: u32, burst: Duration, trickle: Duration, slow: Duration) -> Self {
        Self {
            pages,
            burst_ms: AtomicU64::new(millis(burst)),
            trickle,
            slow,
            page_requests: AtomicU64::new(0),
            burst_started: Mutex::new(None),
            limit: LimitReq::new(LIMIT_RATE, LIMIT_BURST),
        }
    }

    /// Starts over (a stats reset): no burst yet, an empty limit.
    pub(crate) fn reset(&self) {
        self.page_requests.store(0, Ordering::SeqCst);
        *lock(&self.burst_started) = None;
        self.limit.reset();
    }

    /// Sets the burst's length for the crawls to come (0: no burst), so
    /// that one test web serves the same host with and without it.
    pub(crate) fn set_burst(&self, burst: Duration) {
        self.burst_ms.store(millis(burst), Ordering::SeqCst);
    }

    /// Whether a page request now falls in the burst.
    fn in_burst(&self) -> bool {
        let n = self.page_requests.fetch_add(1, Ordering::SeqCst) + 1;
        let burst = Duration::from_millis(self.burst_ms.load(Ordering::SeqCst));
        if burst.is_zero() || n < BURST_AFTER {
            return false;
        }
        let now = Instant::now();
        let started = *lock(&self.burst_started).get_or_insert(now);
        now.duration_since(started) < burst
    }

    pub(crate) fn respond(&self, path: &str) -> Response<FarmBody> {
        if path == "/robots.txt" {
            return server::typed(StatusCode::OK, "text/plain", "User-agent: *\nAllow: /\n".into());
        }
        if self.in_burst() {
            return server::html(
                StatusCode::INTERNAL_SERVER_ERROR,
                "<h1>500 Internal Server Error</h1><p>Out of file descriptors.</p>",
            );
        }
        match path {
            "/always-503" => {
                let mut r = server::html(StatusCode::SERVICE_UNAVAILABLE, "<h1>503 Service Unavailable</h1>");
                r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("5"));
                r
            }
            "/trickle" => server::with_body(
                StatusCode::OK,
                HTML,
                body::drip(self.trickle, Duration::from_secs(1), b"sixteen bytes.. "),
            ),
            "/loop/a" => server::redirect(StatusCode::FOUND, "/loop/b"),
            "/loop/b" => server::redirect(StatusCode::FOUND, "/loop/a"),
            _ => {
                if let Some(i) = number(path, "/slow/").filter(|&i| i < SLOW) {
                    return server::with_body(StatusCode::OK, HTML, body::halves(problem_page("Slow", i), self.slow));
                }
                if let Some(i) = number(path, "/limited/").filter(|&i| i < LIMITED) {
                    if !self.limit.admit() {
                        return server::html(StatusCode::TOO_MANY_REQUESTS, "<h1>429 Too Many Requests</h1>");
                    }
                    return server::html(StatusCode::OK, problem_page("Limited", i));
                }
                match page_number(path).filter(|&k| k < self.pages) {
                    Some(k) => server::html(StatusCode::OK, ordinary(k, self.pages)),
                    None => server::not_found(),
                }
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn number(path: &str, prefix: &str) -> Option<u32> {
    let n = path.strip_prefix(prefix)?;
    (!n.starts_with('0') || n == "0").then(|| n.parse().ok()).flatten()
}

/// The ordinary page a path names: 0 for `/`, `k` for `/p/k`.
fn page_number(path: &str) -> Option<u32> {
    if path == "/" {
        return Some(0);
    }
    number(path, "/p/").filter(|&k| k > 0)
}

fn page_path(k: u32) -> String {
    if k == 0 {
        "/".into()
    } else {
        format!("/p/{k}")
    }
}

/// Children of ordinary page `k` on a site of `pages`.
fn children(k: u32, pages: u32) -> impl Iterator<Item = u32> {
    let first = u64::from(k) * u64::from(FANOUT) + 1;
    (first..first + u64::from(FANOUT)).filter(move |&c| c < u64::from(pages)).map(|c| c as u32)
}

/// The links of ordinary page `k`, as paths.
fn links(k: u32, pages: u32) -> Vec<String> {
    let mut out: Vec<String> = children(k, pages).map(page_path).collect();
    out.extend(PROBLEMS.iter().map(|p| (*p).to_string()));
    out.push(format!("/slow/{}", k % SLOW));
    out.push(format!("/limited/{}", k % LIMITED));
    out
}

fn ordinary(k: u32, pages: u32) -> String {
    use std::fmt::Write as _;
    let mut h = format!(
        "<!DOCTYPE html>\n<html><head><title>Trouble page {k}</title></head><body><h1>Trouble page {k}</h1>\n\
         <p>Page {k} of the trouble host holds its own words: {} and {} stand beside the number {k}, \
         so that no two pages of this host have the same text.</p>\n<ul>\n",
        WORDS[k as usize % WORDS.len()],
        WORDS[(k as usize / WORDS.len()) % WORDS.len()]
    );
    for l in links(k, pages) {
        let _ = writeln!(h, "<li><a href=\"{l}\">{l}</a></li>");
    }
    h.push_str("</ul></body></html>\n");
    h
}

fn problem_page(kind: &str, i: u32) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><title>{kind} page {i}</title></head><body><h1>{kind} page {i}</h1>\
         <p>This {kind} page number {i} is here in full, with enough words to be a page of its own.</p></body></html>\n"
    )
}

const WORDS: [&str; 12] =
    ["amber", "birch", "cedar", "dune", "ember", "fjord", "glade", "heath", "islet", "juniper", "kelp", "lagoon"];

/// Every URL of `trouble.test` (origin `origin`, e.g. `http://trouble.test`)
/// within `depth` hops of `/`, breadth-first: what a crawl of that depth
/// must end with a row for (redirect targets are rows of their source URL).
#[must_use]
pub fn reachable(origin: &str, pages: u32, depth: u32) -> BTreeSet<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut frontier = vec![0u32];
    seen.insert(format!("{origin}/"));
    for _ in 0..depth {
        let mut next = Vec::new();
        for k in frontier {
            for l in links(k, pages) {
                if seen.insert(format!("{origin}{l}")) {
                    if let Some(c) = page_number(&l) {
                        next.push(c);
                    }
                }
            }
        }
        frontier = next;
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_truth_grows_with_the_depth_and_holds_every_page() {
        let o = "http://trouble.test";
        assert_eq!(reachable(o, 380, 0).len(), 1);
        // Depth 1: the home page's 8 children and its 5 problem links.
        assert_eq!(reachable(o, 380, 1).len(), 1 + 8 + 5);
        let all = reachable(o, 380, 4);
        assert!((0..380).all(|k| all.contains(&format!("{o}{}", page_path(k)))));
        assert_eq!(all.len(), 380 + 3 + SLOW as usize + LIMITED as usize);
        assert!(reachable(o, 380, 2).len() < reachable(o, 380, 3).len());
    }

    #[test]
    fn the_burst_starts_at_its_request_and_ends() {
        let t = Trouble::new(10, Duration::from_millis(200), Duration::ZERO, Duration::ZERO);
        for _ in 1..BURST_AFTER {
            assert_eq!(t.respond("/").status(), StatusCode::OK);
        }
        assert_eq!(t.respond("/").status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(t.respond("/robots.txt").status(), StatusCode::OK, "robots.txt is not in the burst");
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(t.respond("/").status(), StatusCode::OK, "recovered");
    }

    #[test]
    fn a_burst_set_to_nothing_never_starts_and_one_set_again_does() {
        let t = Trouble::new(10, Duration::from_secs(60), Duration::ZERO, Duration::ZERO);
        t.set_burst(Duration::ZERO);
        assert!((0..2 * BURST_AFTER).all(|_| t.respond("/").status() == StatusCode::OK), "no burst");
        t.set_burst(Duration::from_secs(60));
        t.reset();
        let statuses: Vec<u16> = (0..BURST_AFTER).map(|_| t.respond("/").status().as_u16()).collect();
        assert_eq!(statuses.iter().filter(|&&s| s == 500).count(), 1, "the burst starts at its request again");
    }

    #[test]
    fn the_limited_area_answers_429_past_its_limit() {
        let t = Trouble::new(10, Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let statuses: Vec<u16> = (0..8).map(|i| t.respond(&format!("/limited/{i}")).status().as_u16()).collect();
        assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 429, 429]);
        assert!(t.respond("/limited/9").headers().get(RETRY_AFTER).is_none(), "no Retry-After, as nginx");
        assert_eq!(t.respond("/p/1").status(), StatusCode::OK, "the rest of the host is not limited");
        assert_eq!(t.respond("/limited/20").status(), StatusCode::NOT_FOUND);
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(t.respond("/limited/1").status(), StatusCode::OK, "drained");
    }
}
