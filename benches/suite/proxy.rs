//! The `proxy` scenario: the cpu scenario's crawl (depth 3) straight to the
//! test web against the same crawl through two of the test web's forward
//! proxies (`--proxy` twice), pair by pair: what the proxy pool costs the
//! crawler (docs/src/proxies.md). The proxies run inside the test web's
//! process, so its CPU is shown apart.

use std::path::Path;

use super::{crawl, env_u32, median, FarmProcess, Table, CPU_CRAWL, CPU_WEB};

pub(super) fn proxy(tmp: &Path, table: &mut Table) {
    let pairs = env_u32("SUITE_RUNS", 3).max(1);
    let mut web: Vec<&str> = CPU_WEB.to_vec();
    web.extend(["--proxies", "2"]);
    let farm = FarmProcess::start(&web, 50);
    assert_eq!(farm.proxies.len(), 2, "the test web prints its proxies");
    let seeds = farm.write_seeds(tmp, "proxy-seeds.txt");
    let run = |data: &Path, proxied: bool| {
        let mut a = farm.crawl_args(&seeds, data, 3);
        a.extend(CPU_CRAWL.map(String::from));
        if proxied {
            for p in &farm.proxies {
                a.extend(["--proxy".to_string(), p.clone()]);
            }
        }
        let web_cpu = farm.cpu_seconds();
        let c = crawl(&a);
        let web_cpu = farm.cpu_seconds() - web_cpu;
        let _ = std::fs::remove_dir_all(data);
        (c, web_cpu)
    };
    let (mut cpu, mut wall, mut pages) = (vec![], vec![], 0.0);
    for pair in 0..pairs {
        let (direct, direct_web) = run(&tmp.join(format!("proxy-direct-{pair}")), false);
        let (proxied, proxied_web) = run(&tmp.join(format!("proxy-through-{pair}")), true);
        pages = proxied.summary["fetched"].as_f64().unwrap_or(0.0);
        let direct_pages = direct.summary["fetched"].as_f64().unwrap_or(0.0);
        assert!((pages - direct_pages).abs() <= direct_pages * 0.01, "{pages} pages against {direct_pages}");
        println!(
            "  proxy pair {pair}: direct {:.1} CPU s, {:.1} s (web {direct_web:.1} CPU s); through 2 proxies {:.1} CPU s, {:.1} s (web and proxies {proxied_web:.1} CPU s); {pages} pages",
            direct.cpu, direct.wall, proxied.cpu, proxied.wall
        );
        cpu.push(proxied.cpu / direct.cpu);
        wall.push(proxied.wall / direct.wall);
    }
    let s = "proxy";
    table.add(s, "pages, through two proxies", pages, "pages");
    table.add(s, "crawler CPU, through proxies / direct (median of pairs)", median(cpu), "ratio");
    table.add(s, "wall, through proxies / direct (proxies share the 2 cores)", median(wall), "ratio");
    farm.stop();
}
