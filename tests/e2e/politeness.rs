//! Adaptive politeness against the test web: a host's delay follows its
//! response times, slows down at once on 429s and finds the rate the
//! server allows (docs/src/politeness.md).

use crate::common;

use common::{crawl_ok, Web};
use testweb::FarmConfig;

/// Gaps between request arrivals at each regular site, from the test web's
/// own log, leaving out each host's first `skip` requests (robots.txt and
/// the pages before any answer could be measured).
fn gaps(web: &Web, skip: usize) -> Vec<f64> {
    let stats = web.farm.stats();
    let mut out = Vec::new();
    for (name, h) in &stats.hosts {
        if !name.starts_with('s') {
            continue;
        }
        let at: Vec<f64> = h.log.iter().map(|r| r.at_ms).collect();
        out.extend(at.windows(2).skip(skip).map(|w| w[1] - w[0]));
    }
    out.sort_by(f64::total_cmp);
    out
}

fn median(v: &[f64]) -> f64 {
    v[v.len() / 2]
}

#[test]
fn slow_answers_stretch_a_hosts_delay_by_the_factor() {
    let cfg = FarmConfig {
        sites: 2,
        pages: 12,
        faults: false,
        latency_ms: (60, 80),
        log_requests: true,
        seed: 3,
        ..FarmConfig::default()
    };
    let web = Web::start(cfg);
    let run = |name: &str, factor: &str| {
        web.farm.reset_stats();
        let data = web.dir(name);
        let args = ["--delay", "0", "--per-host", "1", "--delay-factor", factor, "--partitions", "2"];
        let summary = crawl_ok(&web.run_args(&data, 1, &args));
        (summary, gaps(&web, 3))
    };
    let (fixed_summary, fixed) = run("fixed", "0");
    let (summary, adaptive) = run("adaptive", "2");
    let (f, a) = (median(&fixed), median(&adaptive));
    eprintln!("median gap between requests to a host: factor 0 {f:.0} ms, factor 2 {a:.0} ms");
    // With no delay, one connection: the next request follows the answer
    // (60-80 ms). At factor 2 it waits twice the mean answer time.
    assert!(f >= 55.0, "factor 0: the answer time, {f} ms");
    assert!(a >= 120.0 && a > 1.6 * f, "factor 2: {a} ms against {f} ms");
    assert!(adaptive[0] >= 100.0, "no gap under the factor once answers were timed: {adaptive:?}");
    let slowed = |s: &serde_json::Value| s["layers"][1]["hosts_slowed"].as_u64().unwrap_or(0);
    assert_eq!(slowed(&fixed_summary), 0);
    assert!(slowed(&summary) >= 2, "both sites (and the blogs they link to): {summary}");
    assert!(summary["layers"][1]["max_delay_ms"].as_u64().is_some_and(|d| d >= 120), "{summary}");
}

#[test]
fn a_rate_limited_host_is_backed_off_and_recovers() {
    let cfg = FarmConfig {
        sites: 1,
        pages: 40,
        faults: false,
        rate_limit_ms: 150,
        log_requests: true,
        seed: 4,
        ..FarmConfig::default()
    };
    let web = Web::start(cfg);
    let data = web.dir("data");
    let args = ["--delay", "0", "--per-host", "1", "--delay-factor", "0", "--retries", "4", "--partitions", "1"];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let stats = web.farm.stats();
    let host = stats.hosts.values().find(|h| h.requests > 10).expect("the site");
    let too_many = host.statuses.get(&429).copied().unwrap_or(0);
    let ok = host.statuses.get(&200).copied().unwrap_or(0);
    eprintln!("{} requests: {ok} answered 200, {too_many} answered 429; {summary}", host.requests);
    assert!(too_many >= 1, "the crawl met the limit");
    // Without a pace every other request would be refused; paced, the
    // host's rate holds below the limit between rare probes past it.
    assert!(too_many * 5 < ok, "{too_many} refused against {ok} answered");
    // After each 429 the rate is cut at once: the next request waits
    // longer than the gap the server refused, 1/0.7 of it as a rule (at
    // least 250 ms after the first 429); a request sent late on a busy
    // machine can stretch one refused gap, never the cut below it.
    let log = &host.log;
    let mut ratios = Vec::new();
    for (i, r) in log.iter().enumerate().skip(1).filter(|(_, r)| r.status == 429) {
        let refused = r.at_ms - log[i - 1].at_ms;
        if let Some(next) = log.get(i + 1) {
            let gap = next.at_ms - r.at_ms;
            assert!(gap >= 0.9 * refused, "{gap} ms after a 429 to a request {refused} ms after the one before");
            ratios.push(gap / refused.max(1.0));
        }
    }
    ratios.sort_by(f64::total_cmp);
    assert!(ratios.is_empty() || median(&ratios) >= 1.3, "gaps after a 429 over the gap refused: {ratios:?}");
    assert_eq!(summary["errors"].as_u64(), Some(0), "every page in the end: {summary}");
    let backoffs: u64 = (0..2).filter_map(|l| summary["layers"][l]["backoffs"].as_u64()).sum();
    let all_429: u64 = stats.hosts.values().map(|h| h.statuses.get(&429).copied().unwrap_or(0)).sum();
    assert_eq!(backoffs, all_429, "each 429 backed its host off (the site's and its blog's)");
}

/// A host all of whose pages are behind nginx's `limit_req` (10 requests a
/// second, burst 5, `429` without `Retry-After` beyond it), crawled as a
/// new user would: no delay, 16 connections. Its pace finds the rate the
/// server allows and holds it: every URL ends as a 200 row, fewer than one
/// request in ten is refused (the server's own count), and its URLs,
/// waiting only for the host's pace, are no stragglers, so no layer hands
/// them on one at a time (docs/src/politeness.md).
#[test]
fn a_host_that_asks_for_slower_requests_is_crawled_at_the_rate_it_allows() {
    const PAGES: u32 = 300;
    const ORIGIN: &str = "http://limited.test";
    let farm = testweb::Farm::start_background(FarmConfig {
        sites: 1,
        pages: 5,
        faults: false,
        log_requests: true,
        limited_pages: PAGES,
        ..FarmConfig::default()
    })
    .expect("farm");
    let web = Web::with_seeds(farm, &[format!("{ORIGIN}/")]);
    let data = web.dir("data");
    let s = web.crawl(&data, 3, &["--delay", "0", "--per-host", "16", "--partitions", "2"]);
    let layers = s["layers"].as_array().expect("layers");
    for l in layers {
        eprintln!(
            "layer {}: {} input, {} fetched, {} carried ({} stragglers), {:.1} s; {} rate cuts, longest delay {} ms",
            l["layer"],
            l["input"],
            l["fetched"],
            l["carried"],
            l["stragglers"],
            l["seconds"],
            l["backoffs"],
            l["max_delay_ms"]
        );
    }
    eprintln!("{} s in all; hosts: {}", s["seconds"], s["hosts"]);

    // Every URL a 200 row.
    let docs = common::read_docs(&data);
    let truth = testweb::limited::reachable(ORIGIN, PAGES, 3);
    let ok: std::collections::BTreeSet<&str> =
        docs.iter().filter(|d| d.status == 200 && d.error.is_none()).map(|d| d.url.as_str()).collect();
    let missing: Vec<&String> = truth.iter().filter(|u| !ok.contains(u.as_str())).collect();
    let not_ok: Vec<(&str, i32)> =
        docs.iter().filter(|d| d.status != 200).map(|d| (d.url.as_str(), d.status)).collect();
    assert!(
        missing.is_empty(),
        "{} of {PAGES} URLs not fetched with 200: {missing:?}; rows not 200: {not_ok:?}",
        missing.len()
    );
    assert_eq!(docs.len(), truth.len(), "one row per URL");

    // The server's count: fewer than one page request in ten refused.
    let stats = web.farm.stats();
    let host = &stats.hosts["limited.test"];
    let refused = host.statuses.get(&429).copied().unwrap_or(0);
    let pages = host.requests - host.robots_requests;
    eprintln!("{pages} page requests, {refused} answered 429");
    assert!(refused >= 1, "the crawl met the limit: {:?}", host.statuses);
    assert!(refused * 10 < pages, "{refused} of {pages} page requests refused");
    // ... and the summary reports them, with the pace the host ended at.
    let line = s["hosts"].as_array().and_then(|h| h.iter().find(|h| h["host"] == ORIGIN)).expect("a line for the host");
    assert_eq!(line["too_many"].as_u64(), Some(refused), "{line}");
    assert_eq!(line["why"], "refusals", "{line}");

    // Waiting for its pace is no straggling: no URL handed on, no catch-up layer.
    let stragglers: u64 = layers.iter().map(|l| l["stragglers"].as_u64().unwrap_or(0)).sum();
    assert_eq!((layers.len(), stragglers), (4, 0), "layers 0 to 3 and nothing handed on: {}", s["layers"]);
    assert_eq!(s["not_requested"], 0);
}

/// URLs that wait for nothing but their host's pace are no stragglers:
/// `crawldelay.test` asks for a second between requests (robots.txt
/// `Crawl-delay: 1`), and with a straggler threshold of half a second its
/// pages of layer 1 are still fetched in layer 1, beside a quick site,
/// rather than handed on to the next layer one at a time.
#[test]
fn urls_waiting_for_their_hosts_crawl_delay_are_fetched_in_their_layer() {
    let farm = testweb::Farm::start_background(FarmConfig {
        sites: 1,
        pages: 20,
        faults: true,
        log_requests: true,
        ..FarmConfig::default()
    })
    .expect("farm");
    let web = Web::with_seeds(farm, &["http://crawldelay.test/".into(), "http://s000.test/".into()]);
    let data = web.dir("data");
    let s = web.crawl(&data, 2, &["--delay", "0", "--per-host", "2", "--straggler-after", "500ms"]);
    let layers = s["layers"].as_array().expect("layers");
    for l in layers {
        eprintln!(
            "layer {}: {} input, {} fetched, {} stragglers, {:.1} s",
            l["layer"], l["input"], l["fetched"], l["stragglers"], l["seconds"]
        );
    }
    let docs = common::read_docs(&data);
    let pages: Vec<(&str, i32, i32)> = docs
        .iter()
        .filter(|d| d.url.starts_with("http://crawldelay.test/p/"))
        .map(|d| (d.url.as_str(), d.layer, d.status))
        .collect();
    assert_eq!(pages.len(), 3, "its pages /p/1 to /p/3: {pages:?}");
    assert!(
        pages.iter().all(|&(_, layer, status)| layer == 1 && status == 200),
        "each page in its own layer: {pages:?}"
    );
    let stragglers: u64 = layers.iter().map(|l| l["stragglers"].as_u64().unwrap_or(0)).sum();
    assert_eq!((layers.len(), stragglers), (3, 0), "{}", s["layers"]);
    // Its Crawl-delay held, from the server's log.
    if let Err(e) = web.farm.stats().hosts["crawldelay.test"].spaced(1000.0) {
        panic!("crawldelay.test: {e}");
    }
}
