//! The DNS cache against a real DNS server on loopback: dnsmasq (Debian's
//! `dnsmasq-base`, installed by `scripts/dnsmasq.sh`) answers the test
//! web's names; its own query log says how often each name was asked
//! (docs/src/dns.md).

use crate::common;

use common::dnsmasq::Dns;
use common::{crawl_ok, read_docs};
use testweb::{Farm, FarmConfig};

/// Seeds that name the test web's port: DNS gives the address, the URL the
/// port, and the sites' links are relative, so they keep it.
fn seeds(farm: &Farm, dir: &std::path::Path, extra: &[&str]) -> std::path::PathBuf {
    let port = farm.addr().port();
    let mut lines: Vec<String> =
        farm.start_urls().iter().map(|u| u.replace(".test/", &format!(".test:{port}/"))).collect();
    lines.extend(extra.iter().map(|p| format!("http://missing.test:{port}{p}")));
    let path = dir.join("seeds.txt");
    std::fs::write(&path, lines.join("\n")).expect("seeds");
    path
}

fn run(dns: &Dns, seeds: &std::path::Path, data: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let server = format!("127.0.0.1:{}", dns.port);
    let mut args: Vec<String> = ["run", "--seeds", &seeds.display().to_string(), "--depth", "2"]
        .into_iter()
        .chain(["--data", &data.display().to_string(), "--dns", &server, "--scope", "host"])
        .chain(["--allow-private", "--json", "--quiet", "--partitions", "2"])
        .map(String::from)
        .collect();
    args.extend(extra.iter().map(|s| (*s).to_string()));
    crawl_ok(&args)
}

#[test]
fn each_name_is_asked_once_per_ttl_and_a_missing_one_once() {
    let farm =
        Farm::start_background(FarmConfig { sites: 2, pages: 30, faults: false, seed: 6, ..FarmConfig::default() })
            .expect("test web");
    let tmp = tempfile::tempdir().expect("tmp");
    let seeds = seeds(&farm, tmp.path(), &["/a", "/b", "/c"]);
    let dns = Dns::start(600);
    let summary = run(&dns, &seeds, &tmp.path().join("data"), &["--delay", "0"]);
    let asked = dns.queries();
    eprintln!("queries: {asked:?}");
    // Two sites and the missing name: each asked once over the whole crawl
    // (three layers, dozens of connections), the missing one negatively cached.
    assert_eq!(asked.get("s000.test"), Some(&1), "{asked:?}");
    assert_eq!(asked.get("s001.test"), Some(&1), "{asked:?}");
    assert_eq!(asked.get("missing.test"), Some(&1), "{asked:?}");
    let docs = read_docs(&tmp.path().join("data"));
    let missing: Vec<_> = docs.iter().filter(|d| d.host == "missing.test").collect();
    assert_eq!(missing.len(), 3);
    assert!(missing.iter().all(|d| d.error.as_deref() == Some("dns")), "{missing:?}");
    assert!(docs.iter().filter(|d| d.status == 200).count() > 40, "the sites were crawled through DNS");
    // The summary counts what the cache did, layer by layer.
    let sum = |k: &str| (0..3).filter_map(|l| summary["layers"][l][k].as_u64()).sum::<u64>();
    assert_eq!(sum("dns_queries"), 3, "{summary}");
    assert_eq!(sum("dns_failures"), 1, "{summary}");
    assert!(sum("dns_cached") >= 2, "{summary}");
}

#[test]
fn a_short_ttl_is_honoured() {
    let farm =
        Farm::start_background(FarmConfig { sites: 1, pages: 30, faults: false, seed: 6, ..FarmConfig::default() })
            .expect("test web");
    let tmp = tempfile::tempdir().expect("tmp");
    let seeds = seeds(&farm, tmp.path(), &[]);
    let dns = Dns::start(1);
    let started = std::time::Instant::now();
    // One connection at a time, 150 ms apart, a fresh connection per
    // request (no keep-alive past the delay would matter here): the crawl
    // lasts seconds, the answer one.
    run(&dns, &seeds, &tmp.path().join("data"), &["--delay", "150", "--per-host", "1", "--delay-factor", "0"]);
    let secs = started.elapsed().as_secs_f64();
    let asked = dns.queries();
    let n = f64::from(*asked.get("s000.test").unwrap_or(&0));
    eprintln!("{n} queries in {secs:.1} s at a 1 s TTL");
    // The cache asks again only once the TTL has run out, and only when a
    // new connection needs the address: at most once a second.
    assert!(n >= 1.0 && n <= secs + 1.0, "{n} queries in {secs:.1} s");
}
