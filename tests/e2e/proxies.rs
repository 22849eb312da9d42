//! Crawling through a pool of forward proxies (docs/src/proxies.md): the test
//! web's proxies count what went through each, so these tests check the
//! spread, the per-proxy delays, and failing proxies taken out and back.

use crate::common;

use std::time::{Duration, Instant};

use common::{crawl_ok, read_docs, Web};
use testweb::FarmConfig;

fn farm(sites: u32, pages: u32, proxies: u32, seed: u64) -> Web {
    Web::start(FarmConfig { sites, pages, faults: false, proxies, log_requests: true, seed, ..FarmConfig::default() })
}

/// `--proxy URL` for each of the web's proxies.
fn proxy_args(web: &Web) -> Vec<String> {
    web.farm.proxy_addrs().iter().flat_map(|a| ["--proxy".to_string(), format!("http://{a}")]).collect()
}

/// The summary's per-proxy counts, summed over layers, in pool order.
fn summary_uses(summary: &serde_json::Value) -> Vec<(String, u64, u64, u64, u64)> {
    let mut out: Vec<(String, u64, u64, u64, u64)> = Vec::new();
    for layer in summary["layers"].as_array().expect("layers") {
        for p in layer["proxies"].as_array().into_iter().flatten() {
            let name = p["proxy"].as_str().expect("name").to_string();
            let n = |k: &str| p[k].as_u64().expect(k);
            let row = (name.clone(), n("requests"), n("failures"), n("evictions"), n("recoveries"));
            match out.iter_mut().find(|r| r.0 == name) {
                Some(r) => (r.1, r.2, r.3, r.4) = (r.1 + row.1, r.2 + row.2, r.3 + row.3, r.4 + row.4),
                None => out.push(row),
            }
        }
    }
    out
}

#[test]
fn requests_spread_over_the_pool_and_each_site_over_every_proxy() {
    let web = farm(6, 24, 3, 21);
    let data = web.dir("data");
    let mut args = vec!["--delay", "0", "--delay-factor", "0", "--partitions", "2"];
    let proxies = proxy_args(&web);
    args.extend(proxies.iter().map(String::as_str));
    let summary = crawl_ok(&web.run_args(&data, 2, &args));
    let stats = web.farm.stats();
    let served: u64 = stats.hosts.values().map(|h| h.requests).sum();
    let through = web.farm.proxy_stats();
    let counts: Vec<u64> = through.iter().map(|p| p.requests).collect();
    eprintln!("requests through each proxy: {counts:?}, the web served {served}");
    assert_eq!(counts.iter().sum::<u64>(), served, "every request went through a proxy");
    assert!(served > 150, "a real crawl: {served}");
    #[allow(clippy::cast_precision_loss)]
    let mean = served as f64 / 3.0;
    for (p, &n) in through.iter().zip(&counts) {
        #[allow(clippy::cast_precision_loss)]
        let share = n as f64 / mean;
        assert!((0.75..=1.25).contains(&share), "{}: {n} requests against a mean of {mean:.0}", p.addr);
        for site in stats.hosts.keys().filter(|h| h.starts_with('s') && stats.hosts[*h].requests >= 6) {
            assert!(p.hosts.get(site).copied().unwrap_or(0) >= 1, "{site} never went through {}", p.addr);
        }
    }
    // The summary's counts are the proxies' own, and all pages are there.
    let uses = summary_uses(&summary);
    assert_eq!(uses.iter().map(|u| u.1).collect::<Vec<_>>(), counts, "{summary}");
    assert!(uses.iter().all(|u| u.2 == 0 && u.3 == 0), "no failures: {uses:?}");
    let docs = read_docs(&data);
    let bad: Vec<_> = docs
        .iter()
        .filter(|d| d.error.as_deref().is_some_and(|e| e != "robots") || d.status >= 500)
        .map(|d| (&d.url, &d.error_detail))
        .collect();
    assert!(bad.is_empty(), "every page fetched through the proxies: {bad:?}");
    assert!(docs.iter().filter(|d| d.text.as_deref().is_some_and(|t| !t.is_empty())).count() > 100);
}

#[test]
fn each_proxy_keeps_its_minimum_delay() {
    let web = farm(4, 10, 2, 22);
    let data = web.dir("data");
    let mut args = vec!["--delay", "0", "--delay-factor", "0", "--proxy-delay", "120", "--partitions", "1"];
    let proxies = proxy_args(&web);
    args.extend(proxies.iter().map(String::as_str));
    let started = Instant::now();
    crawl_ok(&web.run_args(&data, 1, &args));
    let took = started.elapsed();
    let mut total = 0;
    for p in web.farm.proxy_stats() {
        let at: Vec<f64> = p.log.iter().map(|(_, ms)| *ms).collect();
        eprintln!("{}: {} requests", p.addr, at.len());
        assert!(at.len() >= 10, "{}: {}", p.addr, at.len());
        // Starts are 120 ms apart; the proxy's clock sees them late by
        // varying amounts (a request that waited for a connection, a
        // loaded machine), so the check is over runs with one lag.
        if let Err(e) = testweb::spacing(&at, 120.0, testweb::LAG_MS) {
            panic!("{}: {e}", p.addr);
        }
        total += at.len();
    }
    // Two proxies, 120 ms each: the crawl cannot beat 60 ms a request.
    assert!(took >= Duration::from_millis(60 * (total as u64 - 2)), "{total} requests in {took:?}");
}

#[test]
fn a_failing_proxy_is_taken_out_and_tried_again_later() {
    let web = farm(4, 40, 3, 23);
    // Proxy 1 answers 502 to everything until set up again; a fourth proxy
    // does not even listen.
    web.farm.set_proxy_down(1, true);
    // Bound and not listening: connections are refused, and the port stays
    // this test's for the whole crawl (a port let go could be taken by
    // another test's listener).
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let _in_rt = rt.enter();
    let dead = tokio::net::TcpSocket::new_v4().expect("socket");
    dead.bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let dead_addr = dead.local_addr().expect("addr");
    let data = web.dir("data");
    let mut args = vec![
        "--delay",
        "100",
        "--delay-factor",
        "0",
        "--per-host",
        "1",
        "--retries",
        "4",
        "--proxy-retry",
        "300ms",
        "--partitions",
        "2",
    ];
    let mut proxies = proxy_args(&web);
    let dead_proxy = format!("http://{dead_addr}");
    proxies.extend(["--proxy".to_string(), dead_proxy.clone()]);
    args.extend(proxies.iter().map(String::as_str));
    let run = web.run_args(&data, 2, &args);
    let crawl = std::thread::spawn(move || crawl_ok(&run));
    std::thread::sleep(Duration::from_millis(1200));
    web.farm.set_proxy_down(1, false);
    let summary = crawl.join().expect("crawl");
    let stats = web.farm.proxy_stats();
    let uses = summary_uses(&summary);
    eprintln!("proxies: {stats:#?}\nsummary: {uses:?}");
    // Every page arrived: the 502s were retried through other proxies.
    let docs = read_docs(&data);
    let bad: Vec<_> = docs
        .iter()
        .filter(|d| d.error.as_deref().is_some_and(|e| e != "robots") || d.status >= 500)
        .map(|d| (&d.url, &d.error_detail))
        .collect();
    assert!(docs.len() > 100 && bad.is_empty(), "every page fetched ({} rows): {bad:?}", docs.len());
    let down = &uses[1];
    assert!(down.3 >= 1 && down.4 >= 1, "proxy 1 taken out and back: {down:?}");
    // While down it saw few requests: 3 before it was taken out, then one
    // trial each time its health check passed.
    assert!(stats[1].refused >= 3 && stats[1].refused <= 3 + 2 * 4, "{}", stats[1].refused);
    assert!(stats[1].requests >= 10, "back in service it carried its share: {}", stats[1].requests);
    let dead = uses.iter().find(|u| u.0 == dead_proxy).expect("the dead proxy in the summary");
    assert_eq!(dead.1, 0, "no request was sent to a proxy that does not listen");
    assert!(dead.3 >= 1, "{dead:?}");
}
