//! The `dns` scenario: the cpu scenario's web crawled to depth 2 through a
//! real DNS server on loopback (dnsmasq, TTL 600 s) instead of `--resolve`
//! rules: queries the server saw (its own log) against the lookups the
//! crawl made, and the crawl's time beside the same crawl with the rules.

use std::path::Path;

use super::{crawl, FarmProcess, Table, CPU_CRAWL, CPU_WEB};
use crate::dnsmasq::Dns;

pub(super) fn dns(tmp: &Path, table: &mut Table) {
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let port = farm.addr.rsplit(':').next().expect("a port").to_string();
    // The port in the seeds: DNS gives the address, the sites' relative
    // links keep the port.
    let seeds = tmp.join("dns-seeds.txt");
    let lines: Vec<String> = farm.seeds.iter().map(|u| u.replace(".test/", &format!(".test:{port}/"))).collect();
    std::fs::write(&seeds, lines.join("\n")).expect("seeds");
    let server = Dns::start(600);
    let data = tmp.join("dns-data");
    let mut args: Vec<String> = ["run", "--seeds", &seeds.display().to_string(), "--depth", "2"]
        .into_iter()
        .chain(["--data", &data.display().to_string(), "--dns", &format!("127.0.0.1:{}", server.port)])
        .chain(["--scope", "host", "--allow-private", "--json", "--quiet"])
        .map(String::from)
        .collect();
    args.extend(CPU_CRAWL.map(String::from));
    let through_dns = crawl(&args);
    let asked = server.queries();
    let _ = std::fs::remove_dir_all(&data);
    let sum = |k: &str| -> f64 { (0..3).filter_map(|l| through_dns.summary["layers"][l][k].as_f64()).sum() };
    let (queries, cached) = (sum("dns_queries"), sum("dns_cached"));
    let server_queries: u32 =
        asked.iter().filter(|(n, _)| n.ends_with(".test") && *n != "ping.test").map(|(_, c)| c).sum();
    println!(
        "  dns: {} pages; {queries} queries by the crawl ({server_queries} A queries seen by the server), {cached} lookups from the cache",
        through_dns.summary["fetched"]
    );
    table.add("dns", "hosts", asked.len().saturating_sub(1) as f64, "hosts");
    table.add("dns", "A queries the DNS server saw (600 s TTL)", f64::from(server_queries), "queries");
    table.add("dns", "lookups answered by the cache", cached, "lookups");
    table.add("dns", "lookups saved (cached / all)", cached / (cached + queries).max(1.0), "ratio");
    farm.stop();
}
