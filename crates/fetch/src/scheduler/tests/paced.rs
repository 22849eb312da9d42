//! The pace and the tail through the exchange seam, on tokio's paused
//! clock: a server that rate-limits as nginx's `limit_req` does, and hosts
//! whose URLs wait for their pace beside URLs that wait for their own retry.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;
use url::Url;

use super::{pages, polite, status, Carried, Scripted};
use crate::scheduler::{LayerTail, PartitionFetch};
use crate::{ErrorKind, Exchange, FetchConfig, Fetched, Fetcher, Request, Response, UrlSource};

/// Pages behind nginx's `limit_req` with `nodelay` (a leaky bucket: `RATE`
/// requests a second, `BURST` more at once, `429` without `Retry-After`
/// beyond them), each answered in 2 ms; robots.txt is not limited.
#[derive(Default)]
struct Limited {
    /// The bucket's excess and when it was last set.
    bucket: Mutex<(f64, Option<Instant>)>,
    pages: AtomicUsize,
    refused: AtomicUsize,
}

impl Limited {
    const RATE: f64 = 10.0;
    const BURST: f64 = 5.0;

    fn admit(&self, now: Instant) -> bool {
        let mut b = self.bucket.lock().expect("bucket");
        let excess = match b.1 {
            None => 0.0,
            Some(last) => (b.0 - Self::RATE * (now - last).as_secs_f64() + 1.0).max(0.0),
        };
        if excess > Self::BURST {
            return false;
        }
        *b = (excess, Some(now));
        true
    }
}

impl Exchange for Limited {
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        let page = req.url.path() != "/robots.txt";
        let at = Instant::now();
        let admitted = !page || self.admit(at);
        if page {
            self.pages.fetch_add(1, Ordering::SeqCst);
            self.refused.fetch_add(usize::from(!admitted), Ordering::SeqCst);
        }
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let code = match (page, admitted) {
                (false, _) => 404,
                (true, true) => 200,
                (true, false) => 429,
            };
            Ok(Response { elapsed: at.elapsed(), ..status(code, None) })
        })
    }
}

/// Crawls `input` as one partition of a layer of one, with its tail seat
/// (stragglers after `after`).
async fn crawl_in_a_layer(fetcher: &Fetcher, input: &dyn UrlSource, after: Duration) -> (Vec<Fetched>, PartitionFetch) {
    let tail = LayerTail::new(1, after);
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let collect = async {
        let mut out = Vec::new();
        while let Some(f) = rx.recv().await {
            out.push(f);
        }
        out
    };
    let (report, mut fetched) =
        tokio::join!(fetcher.fetch_partition(input, |_| true, None, Some(tail.seat()), tx), collect);
    fetched.sort_by_key(|f| f.id);
    (fetched, report)
}

#[tokio::test(start_paused = true)]
async fn a_host_limited_to_ten_requests_a_second_is_crawled_at_that_rate_with_few_refusals() {
    let web = Arc::new(Limited::default());
    // The run's default backoff (500 ms), which a 429 without Retry-After does not wait.
    let backoff = Duration::from_millis(500);
    let cfg = FetchConfig { retries: 2, backoff, ..polite(64, 16, Duration::ZERO) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = pages(300, &[]);
    let t = Instant::now();
    let (fetched, report) = crawl_in_a_layer(&fetcher, &input, Duration::from_secs(1)).await;
    let took = Instant::now() - t;
    let (asked, refused) = (web.pages.load(Ordering::SeqCst), web.refused.load(Ordering::SeqCst));
    eprintln!("{took:?} (virtual) for 300 URLs: {asked} requests, {refused} refused, {} rate cuts", report.backoffs);
    // Every URL fetched in this layer: a 429 is retried at the host's pace,
    // not after a backoff of its own that would make it a straggler.
    assert_eq!(fetched.len(), 300);
    assert!(fetched.iter().all(|f| f.response.as_ref().is_some_and(|r| r.status == 200)), "every URL a 200");
    assert!(report.carried.is_empty(), "{} carried", report.carried.len());
    assert!(refused * 10 < asked, "{refused} of {asked} refused");
    // At the server's rate: 294 URLs past its burst take 29.4 s; the pace
    // finds the rate within half as much again (the doubling backoff took
    // 2 s between requests, and 5 retries did not get some URLs through).
    assert!(took >= Duration::from_millis(29_000), "faster than the server allows: {took:?}");
    assert!(took <= Duration::from_secs(45), "{took:?}");
    // The summary's line for the host.
    let line = report.host_paces.iter().find(|p| p.host == "http://a.test").expect("a line for the host");
    assert_eq!((line.too_many, line.why.as_str()), (refused as u64, "refusals"), "{line:?}");
    assert_eq!(report.late_host.as_ref().map(|l| l.host.as_str()), Some("http://a.test"));
}

/// A few URLs refused at once: each is retried at its host's next turn,
/// not after a backoff of its own (500 ms, more than the straggler
/// threshold here), so none is left waiting alone at the end of the layer,
/// handed on as a straggler.
#[tokio::test(start_paused = true)]
async fn a_429_without_retry_after_is_retried_at_its_hosts_pace_and_not_handed_on() {
    for n in [12, 24, 40] {
        let web = Arc::new(Limited::default());
        let backoff = Duration::from_millis(500);
        let cfg = FetchConfig { retries: 2, backoff, ..polite(64, 16, Duration::ZERO) };
        let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
        let (fetched, report) = crawl_in_a_layer(&fetcher, &pages(n, &[]), Duration::from_millis(300)).await;
        assert!(web.refused.load(Ordering::SeqCst) > 0, "{n} URLs: the limit was met");
        assert_eq!((fetched.len(), report.carried.len(), report.stragglers_waiting), (n, 0, 0), "{n} URLs: {report:?}");
    }
}

/// Two hosts of one partition: `slow.test` paced 2 s apart (its
/// Crawl-delay), `a.test` quick but with one URL whose server asks for
/// 5 s. When the rest is done, the URLs waiting for `slow.test`'s pace are
/// fetched in this layer; the URL waiting out its own `Retry-After` goes on.
#[tokio::test(start_paused = true)]
async fn urls_waiting_for_their_hosts_pace_are_no_stragglers_but_a_retry_after_is() {
    let web = Scripted::new(|url: &Url, _, _| match (url.host_str(), url.path()) {
        (_, "/robots.txt") if url.host_str() == Some("slow.test") => {
            Response { body: bytes::Bytes::from_static(b"User-agent: *\nCrawl-delay: 2\n"), ..status(200, None) }
        }
        (_, "/robots.txt") => status(404, None),
        (Some("a.test"), "/bad") => status(503, Some(5)),
        _ => status(200, None),
    });
    let cfg = FetchConfig { retries: 2, ..polite(8, 2, Duration::ZERO) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let mut urls: Vec<(String, u32)> = vec![("http://a.test/bad".into(), 0)];
    urls.extend((0..3).map(|i| (format!("http://slow.test/p/{i}"), 0)));
    urls.extend((0..10).map(|i| (format!("http://a.test/p/{i}"), 0)));
    let input = Carried(urls);
    let (fetched, report) = crawl_in_a_layer(&fetcher, &input, Duration::from_secs(1)).await;
    let done: Vec<&str> = fetched.iter().map(|f| f.url.as_str()).collect();
    // All of slow.test, at its pace, in this layer.
    assert!((0..3).all(|i| done.contains(&format!("http://slow.test/p/{i}").as_str())), "{done:?}");
    let slow: Vec<Instant> = web
        .calls
        .lock()
        .expect("calls")
        .iter()
        .filter(|(u, _)| u.host_str() == Some("slow.test") && u.path() != "/robots.txt")
        .map(|(_, at)| *at)
        .collect();
    assert!(slow.windows(2).all(|w| w[1] - w[0] >= Duration::from_secs(2)), "its Crawl-delay held");
    // /bad waits 5 s for its retry when everything else is done: it goes on.
    assert_eq!(report.carried, vec![0], "only the URL that waits out its own Retry-After: {report:?}");
    assert_eq!(report.stragglers_waiting, 1);
    // The summary's lines: slow.test at its Crawl-delay.
    let slow = report.host_paces.iter().find(|p| p.host == "http://slow.test").expect("slow.test's line");
    assert_eq!((slow.delay_ms, slow.why.as_str()), (2000, "crawl-delay"));
    let a = report.host_paces.iter().find(|p| p.host == "http://a.test").expect("a.test's line");
    assert!(a.retry_after >= 1, "{a:?}");
}

/// A URL to retry at its host's next turn is not held by another URL of
/// the host that waits out a `Retry-After` (the host's entry in the heap
/// moves earlier): here the 429's retry goes out once the host's 1 s pause
/// for the other URL's ask is over, not 5 s later with that URL.
#[tokio::test(start_paused = true)]
async fn a_retry_at_the_hosts_next_turn_is_not_held_by_another_urls_retry_after() {
    struct Two(Mutex<Vec<(String, Instant)>>);
    impl Exchange for Two {
        fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
            let path = req.url.path().to_string();
            let mut calls = self.0.lock().expect("calls");
            let first = !calls.iter().any(|(p, _)| *p == path);
            calls.push((path.clone(), Instant::now()));
            Box::pin(async move {
                // The ask comes back first, the 429 right after it.
                let (code, retry_after, ms) = match path.as_str() {
                    "/robots.txt" => (404, None, 1),
                    "/ask" if first => (503, Some(5), 5),
                    "/refused" if first => (429, None, 10),
                    _ => (200, None, 5),
                };
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(status(code, retry_after))
            })
        }
    }
    let web = Arc::new(Two(Mutex::new(Vec::new())));
    let cfg = FetchConfig { retries: 2, ..polite(8, 2, Duration::ZERO) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = Carried(vec![("http://a.test/ask".into(), 0), ("http://a.test/refused".into(), 0)]);
    let (fetched, _) = super::crawl(&fetcher, &input).await;
    assert_eq!(fetched.len(), 2);
    let calls = web.0.lock().expect("calls");
    let refused: Vec<Instant> = calls.iter().filter(|(p, _)| p == "/refused").map(|(_, t)| *t).collect();
    assert_eq!(refused.len(), 2, "{calls:?}");
    let waited = refused[1] - refused[0];
    assert!(waited < Duration::from_millis(1500), "the 429's retry waited {waited:?}");
}
