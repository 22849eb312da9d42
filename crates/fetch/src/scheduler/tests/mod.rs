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
use crate::robots::origin_of;
use crate::vocab::values::{Millis, Span};
use crate::{ErrorKind, Exchange, FetchConfig, Fetched, Fetcher, Request, Response};

mod paced;

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

/// [`config`] with `concurrency` requests at once, `per_host` per host
/// and `delay` between two to one host.
fn polite(concurrency: usize, per_host: usize, delay: Duration) -> FetchConfig {
    let mut cfg = config();
    let p = &mut cfg.politeness;
    (p.concurrency, p.per_host, p.delay) = (concurrency, per_host, Millis(delay));
    cfg
}

fn config() -> FetchConfig {
    FetchConfig {
        politeness: crate::Politeness {
            concurrency: 8,
            per_host: 1,
            delay: Millis(DELAY),
            delay_factor: crate::DEFAULT_DELAY_FACTOR,
            max_delay: Span(crate::DEFAULT_MAX_DELAY),
            user_agent: "layercrawl-test/1".into(),
        },
        connect_timeout: Duration::from_secs(1),
        timeout: Duration::from_secs(1),
        max_body: 1 << 20,
        max_redirects: 5,
        retries: 1,
        backoff: Duration::from_millis(10),
        resolve: Vec::new(),
        dns: Vec::new(),
        allow_private: crate::resolve::AllowPrivate::None,
        proxy: crate::proxy::ProxyConfig::default(),
        render: crate::render::RenderConfig::default(),
        max_pages_per_host: None,
        straggler_after: None,
        host_down_after: crate::DEFAULT_HOST_DOWN_AFTER,
        speed_limit: 0,
        speed_time: crate::DEFAULT_SPEED_TIME,
        urls: Arc::default(),
        governor: crate::governor::GovernorConfig::default(),
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

/// An exchange answering by a test's script: the URL, how often its path
/// was asked before, and the (virtual) time since the exchange was made.
struct Scripted<F> {
    answer: F,
    calls: Mutex<Vec<(Url, Instant)>>,
    start: Instant,
}

impl<F> Scripted<F>
where
    F: Fn(&Url, usize, Duration) -> Response + Send + Sync + 'static,
{
    fn new(answer: F) -> Arc<Self> {
        Arc::new(Self { answer, calls: Mutex::new(Vec::new()), start: Instant::now() })
    }

    fn asked(&self, path: &str) -> usize {
        self.calls.lock().expect("calls").iter().filter(|(u, _)| u.path() == path).count()
    }

    fn pages_asked(&self) -> usize {
        self.calls.lock().expect("calls").iter().filter(|(u, _)| u.path() != "/robots.txt").count()
    }
}

impl<F> Exchange for Scripted<F>
where
    F: Fn(&Url, usize, Duration) -> Response + Send + Sync + 'static,
{
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        let before = self.asked(req.url.path());
        let since = self.start.elapsed();
        if let Ok(mut calls) = self.calls.lock() {
            calls.push((req.url.clone(), Instant::now()));
        }
        let resp = (self.answer)(req.url, before, since);
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(resp)
        })
    }
}

fn status(code: u16, retry_after: Option<u64>) -> Response {
    let body = if code == 200 { "<html><title>page</title><p>words</p></html>" } else { "busy" };
    Response {
        status: code,
        content_type: Some("text/html".into()),
        body: Bytes::from_static(body.as_bytes()),
        received: body.len() as u64,
        retry_after,
        ..Response::default()
    }
}

/// Input URLs with the retries each spent in an earlier layer.
struct Carried(Vec<(String, u32)>);

impl UrlSource for Carried {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn url(&self, id: usize) -> std::io::Result<String> {
        Ok(self.0[id].0.clone())
    }
    fn start(&self, id: usize) -> std::io::Result<(String, u32)> {
        Ok(self.0[id].clone())
    }
}

async fn crawl(fetcher: &Fetcher, input: &dyn UrlSource) -> (Vec<Fetched>, super::PartitionFetch) {
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let collect = async {
        let mut out = Vec::new();
        while let Some(f) = rx.recv().await {
            out.push(f);
        }
        out
    };
    let (report, mut fetched) = tokio::join!(fetcher.fetch_partition(input, |_| true, None, None, tx), collect);
    fetched.sort_by_key(|f| f.id);
    (fetched, report)
}

fn pages(n: usize, extra: &[&str]) -> Carried {
    let mut urls: Vec<(String, u32)> = extra.iter().map(|p| (format!("http://a.test{p}"), 0)).collect();
    urls.extend((0..n).map(|i| (format!("http://a.test/p/{i}"), 0)));
    Carried(urls)
}

#[tokio::test(start_paused = true)]
async fn a_url_that_asks_for_a_pause_waits_alone_and_ends_as_its_error_after_its_retries() {
    let web = Scripted::new(|url: &Url, _, _| match url.path() {
        "/bad" => status(503, Some(5)),
        _ => status(200, None),
    });
    let cfg = FetchConfig { retries: 2, ..config() };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = pages(40, &["/bad"]);
    let t = Instant::now();
    let (fetched, report) = crawl(&fetcher, &input).await;
    assert_eq!(fetched.len(), 41, "every URL is a row");
    assert!(report.carried.is_empty());
    let bad = &fetched[0];
    assert_eq!(bad.response.as_ref().map(|r| r.status), Some(503), "its own error after its retries");
    assert_eq!(web.asked("/bad"), 3, "one request and two retries");
    assert!(fetched[1..].iter().all(|f| f.response.as_ref().is_some_and(|r| r.status == 200)));
    // One pause of the host (the first Retry-After); the retries wait alone.
    assert_eq!(report.host_pauses, 1, "{report:?}");
    let calls = web.calls.lock().expect("calls");
    let last_good = calls.iter().filter(|(u, _)| u.path().starts_with("/p/")).map(|(_, at)| *at).max().expect("pages");
    let bad_at: Vec<Instant> = calls.iter().filter(|(u, _)| u.path() == "/bad").map(|(_, at)| *at).collect();
    assert!(bad_at.windows(2).all(|w| w[1] - w[0] >= Duration::from_secs(5)), "each retry after its Retry-After");
    // The host's 40 other pages went on while the URL waited: they were
    // done long before its last retry (10 s after its first answer).
    assert!(last_good < bad_at[2], "{:?} vs {:?}", last_good - t, bad_at[2] - t);
}

/// A host whose pages all answer 500 for `outage` and 200 after it,
/// crawled with `n` URLs: the rows, the report, and the page requests the
/// host got during the outage.
async fn through_an_outage(outage: Duration, n: usize) -> (Vec<Fetched>, super::PartitionFetch, usize) {
    let web = Scripted::new(move |url: &Url, _, since| match url.path() {
        "/robots.txt" => status(404, None),
        _ if since < outage => status(500, None),
        _ => status(200, None),
    });
    let cfg = FetchConfig { retries: 2, backoff: Duration::from_millis(500), ..polite(8, 2, DELAY) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let (fetched, report) = crawl(&fetcher, &pages(n, &[])).await;
    let calls = web.calls.lock().expect("calls");
    let during = calls.iter().filter(|(u, at)| u.path() != "/robots.txt" && *at - web.start < outage).count();
    (fetched, report, during)
}

#[tokio::test(start_paused = true)]
async fn a_burst_opens_the_breaker_and_every_url_is_fetched_when_the_host_recovers() {
    let (fetched, report, during) = through_an_outage(Duration::from_secs(12), 30).await;
    assert_eq!(fetched.len(), 30);
    assert!(report.carried.is_empty());
    let statuses: Vec<u16> = fetched.iter().map(|f| f.response.as_ref().map_or(0, |r| r.status)).collect();
    assert!(statuses.iter().all(|&s| s == 200), "every URL fetched once the host recovered: {statuses:?}");
    assert!(report.breaker_opens >= 1, "{report:?}");
    assert_eq!(report.hosts_down, 0);
    // While it failed, the host got the burst that opened the breaker (two
    // in flight) and one probe at a time (1, 2, 4, 5 s apart), not a retry
    // storm.
    assert!(during <= super::breaker::OPEN_AFTER as usize + 2 + 5, "{during} requests during the outage");
}

/// Few URLs, a long outage: every probe is a URL tried before, and none of
/// them spends its retries on the host's outage.
#[tokio::test(start_paused = true)]
async fn a_long_outage_spends_no_urls_retries_and_every_url_is_fetched_after_it() {
    let (fetched, report, during) = through_an_outage(Duration::from_secs(40), 3).await;
    assert_eq!(fetched.len(), 3);
    let statuses: Vec<u16> = fetched.iter().map(|f| f.response.as_ref().map_or(0, |r| r.status)).collect();
    assert_eq!(statuses, [200; 3], "every URL fetched once the host was back");
    assert!(report.breaker_opens >= 1, "{report:?}");
    // The probes were URLs tried before (there are only three), each
    // failing in the outage: counted, they would have ended the URLs as
    // 500 rows after their two retries. Still one probe at a time, 1 to 5 s
    // apart.
    assert!(during > 3 * 3, "{during} requests during the outage: more than three URLs' tries");
    assert!(during <= super::breaker::OPEN_AFTER as usize + 2 + 12, "{during} requests during the outage");
}

#[tokio::test(start_paused = true)]
async fn a_host_that_never_recovers_is_down_and_each_of_its_urls_ends_as_a_row() {
    let web = Scripted::new(|url: &Url, _, _| match url.path() {
        "/robots.txt" => status(404, None),
        _ => status(502, None),
    });
    let cfg = FetchConfig { retries: 2, host_down_after: Duration::from_secs(40), ..polite(8, 2, DELAY) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = pages(50, &[]);
    let t = Instant::now();
    let (fetched, report) = crawl(&fetcher, &input).await;
    assert_eq!(fetched.len(), 50, "every URL is a row");
    assert!(report.carried.is_empty());
    let down = fetched.iter().filter(|f| f.error.as_ref().is_some_and(|e| e.0 == ErrorKind::HostDown)).count();
    let failed = fetched.iter().filter(|f| f.response.as_ref().is_some_and(|r| r.status == 502)).count();
    assert_eq!(down + failed, 50, "each URL failed after its retries, or ended as host_down");
    assert!(down > 30, "{down} host_down rows");
    assert_eq!(report.hosts_down, 1);
    assert!(web.pages_asked() < 25, "{} requests to a dead host", web.pages_asked());
    let took = Instant::now() - t;
    assert!(took >= Duration::from_secs(40) && took < Duration::from_secs(80), "{took:?}");
    let detail = &fetched.iter().find_map(|f| f.error.as_ref().filter(|e| e.0 == ErrorKind::HostDown)).expect("one").1;
    assert!(detail.contains("http://a.test") && detail.contains("no request was sent"), "{detail}");
}

/// Answers at once, but leaves `/silent` on any host, and every page of
/// `mute.test`, unanswered: after the low-speed window the request ends as
/// `too_slow`, as the client's exchange ends it.
#[derive(Default)]
struct Silent {
    calls: Mutex<Vec<Url>>,
}

impl Silent {
    const WINDOW: Duration = Duration::from_secs(10);

    fn asked(&self, host: &str, path: &str) -> usize {
        let calls = self.calls.lock().expect("calls");
        calls.iter().filter(|u| u.host_str() == Some(host) && u.path() == path).count()
    }
}

impl Exchange for Silent {
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        self.calls.lock().expect("calls").push(req.url.clone());
        let page = req.url.path() != "/robots.txt";
        let silent = page && (req.url.path() == "/silent" || req.url.host_str() == Some("mute.test"));
        Box::pin(async move {
            if silent {
                tokio::time::sleep(Self::WINDOW).await;
                return Err((ErrorKind::TooSlow, "no answer within 10 s (--speed-time); cut off".into()));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(if page { status(200, None) } else { status(404, None) })
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_silent_url_is_retried_once_unless_its_host_answered_others_meanwhile() {
    let web = Arc::new(Silent::default());
    let cfg = FetchConfig { retries: 2, ..polite(8, 2, DELAY) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = Urls(vec![
        "http://a.test/silent".into(),
        "http://a.test/one".into(),
        "http://a.test/two".into(),
        "http://b.test/silent".into(),
    ]);
    let (fetched, report) = crawl(&fetcher, &input).await;
    assert_eq!(fetched.len(), 4, "every URL is a row");
    assert!(report.carried.is_empty());
    for f in [&fetched[0], &fetched[3]] {
        assert_eq!(f.error.as_ref().map(|e| e.0), Some(ErrorKind::TooSlow), "{}", f.url);
    }
    // a.test answered its other pages while /silent waited: the silence is
    // that URL's, and a second window would only lengthen the crawl.
    assert_eq!(web.asked("a.test", "/silent"), 1, "not retried on a host that serves");
    // b.test answered nothing meanwhile: maybe a hiccup of the host, one retry.
    assert_eq!(web.asked("b.test", "/silent"), 2, "retried once on a host that said nothing else");
}

#[tokio::test(start_paused = true)]
async fn a_host_that_answers_nothing_opens_its_breaker() {
    let web = Arc::new(Silent::default());
    let cfg = FetchConfig { retries: 1, ..polite(8, 2, DELAY) };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = Urls((0..20).map(|i| format!("http://mute.test/p/{i}")).collect());
    let (fetched, report) = crawl(&fetcher, &input).await;
    assert_eq!(fetched.len(), 20, "every URL is a row");
    assert!(fetched.iter().all(|f| f.error.is_some()), "none answered");
    // Five silent windows in a row open the breaker: then one probe at a
    // time, not two connections held open window after window.
    assert!(report.breaker_opens >= 1, "{report:?}");
    let pages: usize = (0..20).map(|i| web.asked("mute.test", &format!("/p/{i}"))).sum();
    assert!(pages < 40, "{pages} requests for 20 URLs of a host that answers nothing");
}

#[tokio::test(start_paused = true)]
async fn a_urls_retries_count_across_layers() {
    let web = Scripted::new(|url: &Url, _, _| match url.path() {
        "/robots.txt" => status(404, None),
        _ => status(503, None),
    });
    let cfg = FetchConfig { retries: 2, ..config() };
    let fetcher = Fetcher::with_exchange(&cfg, Arc::clone(&web) as Arc<dyn Exchange>);
    let input = Carried(vec![("http://a.test/spent".into(), 2), ("http://a.test/one-left".into(), 1)]);
    let (fetched, report) = crawl(&fetcher, &input).await;
    assert_eq!(fetched.len(), 2);
    assert_eq!((web.asked("/spent"), web.asked("/one-left")), (1, 2), "retries spent before are not given again");
    assert_eq!(report.retries, 1);
}

#[tokio::test(start_paused = true)]
async fn nothing_is_requested_once_the_runs_fence_has_run_out() {
    let web = Scripted::new(|_: &Url, _, _| status(200, None));
    let fence = crate::fence::Fence::new(Duration::from_secs(40));
    let fetcher =
        Fetcher::with_exchange(&config(), Arc::clone(&web) as Arc<dyn Exchange>).with_fence(Arc::clone(&fence));
    // Half the pages go out; then the lease cannot be renewed any more.
    let input = pages(40, &[]);
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let run = fetcher.fetch_partition(&input, |_| true, None, None, tx);
    let watch = async {
        let mut got = 0;
        while rx.recv().await.is_some() {
            got += 1;
            if got == 20 {
                fence.revoke();
            }
        }
        got
    };
    let (report, got) = tokio::join!(run, watch);
    let asked = web.pages_asked();
    assert!((20..=22).contains(&asked), "{asked} requests; none after the fence ran out but those in flight");
    assert_eq!(got + report.carried.len(), 40, "the rest carried, not lost");
    assert!(fetcher.fenced());
}
