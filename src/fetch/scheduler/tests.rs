//! The scheduler through the exchange seam: a canned [`Exchange`] records
//! every request, so the test sees that robots.txt, politeness, retries and
//! redirects all happen in the scheduler and reach the network only through
//! the trait. The end-to-end tests (`tests/`) crawl real servers on
//! loopback; this one checks the seam itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::time::Instant;
use url::Url;

use super::UrlSource;
use crate::fetch::robots::origin_of;
use crate::fetch::{ErrorKind, Exchange, FetchConfig, Fetched, Fetcher, Request, Response};

const DELAY: Duration = Duration::from_millis(40);

/// One request as the exchange saw it.
struct Call {
    url: Url,
    at: Instant,
    max_body: u64,
}

/// Answers from a fixed table and records every call.
#[derive(Default)]
struct Canned {
    calls: Mutex<Vec<Call>>,
    in_flight: Mutex<HashMap<String, usize>>,
    most_in_flight: Mutex<usize>,
}

impl Canned {
    fn answer(&self, url: &Url) -> Result<Response, (ErrorKind, String)> {
        let ok = |status: u16, body: &'static str| Response {
            status,
            content_type: Some("text/html".into()),
            body: Bytes::from_static(body.as_bytes()),
            received: body.len() as u64,
            ..Response::default()
        };
        let asked = |path: &str| self.calls.lock().map_or(0, |c| c.iter().filter(|c| c.url.path() == path).count());
        match (url.host_str(), url.path()) {
            (Some("a.test"), "/robots.txt") => Ok(ok(200, "User-agent: *\nDisallow: /private\n")),
            (Some("b.test"), "/robots.txt") => Err((ErrorKind::Connect, "refused".into())),
            (_, "/moved") => Ok(Response { location: Some("/target".into()), ..ok(301, "") }),
            (_, "/flaky") if asked("/flaky") == 1 => Ok(ok(503, "busy")),
            _ => Ok(ok(200, "<html><title>page</title></html>")),
        }
    }

    fn calls_to(&self, host: &str) -> Vec<(String, Instant)> {
        let calls = self.calls.lock().expect("calls");
        calls.iter().filter(|c| c.url.host_str() == Some(host)).map(|c| (c.url.path().to_string(), c.at)).collect()
    }
}

impl Exchange for Canned {
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        let (url, max_body) = (req.url, req.max_body);
        // Recorded when called: the scheduler stamps a request as sent right
        // before it calls the exchange, so this is the moment it went out.
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(Call { url: url.clone(), at: Instant::now(), max_body });
        }
        Box::pin(async move {
            let origin = origin_of(url);
            if let Ok(mut m) = self.in_flight.lock() {
                let n = m.entry(origin.clone()).or_default();
                *n += 1;
                if let Ok(mut most) = self.most_in_flight.lock() {
                    *most = (*most).max(*n);
                }
            }
            // Long enough that a second request to the host would overlap.
            tokio::time::sleep(Duration::from_millis(5)).await;
            if let Ok(mut m) = self.in_flight.lock() {
                *m.entry(origin).or_default() -= 1;
            }
            self.answer(url)
        })
    }
}

struct Urls(Vec<String>);

impl UrlSource for Urls {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn url(&self, id: usize) -> std::io::Result<String> {
        self.0.get(id).cloned().ok_or_else(|| std::io::Error::other("no such id"))
    }
}

fn config() -> FetchConfig {
    FetchConfig {
        concurrency: 8,
        per_host: 1,
        delay: DELAY,
        delay_factor: crate::fetch::DEFAULT_DELAY_FACTOR,
        max_delay: crate::fetch::DEFAULT_MAX_DELAY,
        user_agent: "layercrawl-test/1".into(),
        connect_timeout: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        max_body: 1 << 20,
        max_redirects: 5,
        retries: 1,
        backoff: Duration::from_millis(10),
        resolve: Vec::new(),
        dns: Vec::new(),
        allow_private: false,
        proxy: crate::fetch::proxy::ProxyConfig::default(),
        render: crate::fetch::render::RenderConfig::default(),
        max_pages_per_host: None,
        straggler_after: None,
        urls: Arc::default(),
        governor: crate::fetch::governor::GovernorConfig::default(),
        capture: false,
    }
}

#[tokio::test]
async fn every_request_goes_through_the_exchange_politely() {
    let canned = Arc::new(Canned::default());
    let fetcher = Fetcher::with_exchange(&config(), Arc::clone(&canned) as Arc<dyn Exchange>);
    let input = ["/", "/one", "/private/x", "/moved", "/flaky"].iter().map(|p| format!("http://a.test{p}"));
    let input = Urls(input.chain(["http://b.test/".into(), "http://b.test/p".into()]).collect());
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let report = fetcher.fetch_partition(&input, |_| true, None, None, tx).await;
    let mut fetched: Vec<Fetched> = Vec::new();
    while let Some(f) = rx.recv().await {
        fetched.push(f);
    }
    fetched.sort_by_key(|f| f.id);
    assert_eq!(fetched.iter().map(|f| f.id).collect::<Vec<_>>(), (0..input.len()).collect::<Vec<_>>());
    assert!(report.carried.is_empty(), "{:?}", report.carried);
    let by_path = |i: usize| (&fetched[i], fetched[i].error.as_ref().map(|e| e.0));

    // robots.txt first, once per origin, through the exchange, at the robots size cap.
    let a = canned.calls_to("a.test");
    let paths: Vec<&str> = a.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths.first(), Some(&"/robots.txt"));
    assert_eq!(paths.iter().filter(|p| **p == "/robots.txt").count(), 1);
    assert_eq!(canned.calls_to("b.test").into_iter().map(|c| c.0).collect::<Vec<_>>(), ["/robots.txt"]);
    let robots_caps: Vec<u64> = canned
        .calls
        .lock()
        .expect("calls")
        .iter()
        .filter(|c| c.url.path() == "/robots.txt")
        .map(|c| c.max_body)
        .collect();
    assert_eq!(robots_caps, [512 * 1024, 512 * 1024]);
    assert_eq!((report.robots_requests, report.requests), (2, canned.calls.lock().expect("calls").len() as u64));

    // Disallowed: never asked for. Unreachable robots.txt: the host's pages fail, unrequested.
    assert!(!paths.contains(&"/private/x"));
    assert_eq!(by_path(2).1, Some(ErrorKind::Robots));
    assert_eq!((by_path(5).1, by_path(6).1), (Some(ErrorKind::Connect), Some(ErrorKind::Connect)));

    // A redirect hop is a request of its own; a 503 is retried through the exchange.
    let (moved, _) = by_path(3);
    assert_eq!((moved.final_url.as_str(), moved.redirects), ("http://a.test/target", 1));
    assert!(paths.contains(&"/target"));
    assert_eq!(paths.iter().filter(|p| **p == "/flaky").count(), 2);
    assert_eq!((by_path(4).0.response.as_ref().map(|r| r.status), report.retries), (Some(200), 1));

    // Politeness: one request at a time per host, starts spaced by the delay.
    assert_eq!(*canned.most_in_flight.lock().expect("most"), 1);
    for pair in a.windows(2) {
        let gap = pair[1].1 - pair[0].1;
        // The stamps are in microseconds; allow their rounding.
        assert!(gap + Duration::from_millis(1) >= DELAY, "{} after {}: {gap:?}", pair[1].0, pair[0].0);
    }
}
