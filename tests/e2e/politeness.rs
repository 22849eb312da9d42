//! Adaptive politeness against the test web: a host's delay follows its
//! response times, backs off on 429s and recovers (docs/src/politeness.md).

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
    // Without backoff every other request would be refused (the retry
    // waits, the next page does not); backed off, it takes CALM good
    // answers before the host is tried at full speed again.
    assert!(too_many * 5 < ok, "{too_many} refused against {ok} answered");
    // After each 429 the next request waits the backoff (250 ms).
    let log = &host.log;
    for (i, r) in log.iter().enumerate().filter(|(_, r)| r.status == 429) {
        if let Some(next) = log.get(i + 1) {
            assert!(next.at_ms - r.at_ms >= 240.0, "{} ms after a 429", next.at_ms - r.at_ms);
        }
    }
    assert_eq!(summary["errors"].as_u64(), Some(0), "every page in the end: {summary}");
    let backoffs: u64 = (0..2).filter_map(|l| summary["layers"][l]["backoffs"].as_u64()).sum();
    let all_429: u64 = stats.hosts.values().map(|h| h.statuses.get(&429).copied().unwrap_or(0)).sum();
    assert_eq!(backoffs, all_429, "each 429 backed its host off (the site's and its blog's)");
}
