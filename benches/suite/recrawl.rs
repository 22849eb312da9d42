//! The `recrawl` scenario: a nightly recrawl of an unchanged web against
//! the night before (`--previous`), beside the same crawl from scratch.
//!
//! The cpu scenario's web and crawl: one crawl from scratch, kept as
//! "last night"; then, in turn, `SUITE_RUNS` pairs of a crawl from scratch
//! and a recrawl against last night. Body bytes are the test web's own
//! count of what it sent; CPU and wall are the crawler's.

use std::path::Path;

use serde_json::Value;

use super::{crawl, env_u32, median, FarmProcess, Table, CPU_CRAWL, CPU_WEB};

/// Body bytes the test web has sent so far, over all hosts.
fn body_bytes(stats: &Value) -> f64 {
    stats["hosts"].as_object().map_or(0.0, |h| h.values().filter_map(|s| s["body_bytes"].as_f64()).sum())
}

pub(super) fn recrawl(tmp: &Path, table: &mut Table) {
    let pairs = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let seeds = farm.write_seeds(tmp, "recrawl-seeds.txt");
    let last_night = tmp.join("recrawl-last-night");
    let run = |data: &Path, previous: Option<&Path>| {
        let mut a = farm.crawl_args(&seeds, data, 3);
        a.extend(CPU_CRAWL.map(String::from));
        if let Some(p) = previous {
            a.extend(["--previous".to_string(), p.display().to_string()]);
        }
        let before = body_bytes(&farm.stats());
        let c = crawl(&a);
        (c, body_bytes(&farm.stats()) - before)
    };
    let _ = run(&last_night, None);
    let (mut cpu, mut wall, mut bytes, mut unchanged) = (vec![], vec![], vec![], 0.0);
    for pair in 0..pairs {
        let (fresh_dir, again_dir) =
            (tmp.join(format!("recrawl-fresh-{pair}")), tmp.join(format!("recrawl-again-{pair}")));
        let (fresh, fresh_bytes) = run(&fresh_dir, None);
        let (again, again_bytes) = run(&again_dir, Some(&last_night));
        unchanged = again.summary["unchanged"].as_f64().unwrap_or(0.0);
        assert!(unchanged > 0.0, "nothing was carried forward: {}", again.summary);
        println!(
            "  recrawl pair {pair}: from scratch {:.1} CPU s, {:.1} s, {:.0} MB sent; recrawl {:.1} CPU s, {:.1} s, {:.1} MB sent; {unchanged} unchanged",
            fresh.cpu,
            fresh.wall,
            fresh_bytes / 1e6,
            again.cpu,
            again.wall,
            again_bytes / 1e6
        );
        cpu.push(again.cpu / fresh.cpu);
        wall.push(again.wall / fresh.wall);
        bytes.push(again_bytes / fresh_bytes);
        let _ = std::fs::remove_dir_all(&fresh_dir);
        let _ = std::fs::remove_dir_all(&again_dir);
    }
    let s = "recrawl";
    table.add(s, "pages carried forward after a 304", unchanged, "pages");
    table.add(s, "body bytes sent, recrawl / from scratch (median of pairs)", median(bytes), "ratio");
    table.add(s, "crawler CPU, recrawl / from scratch", median(cpu), "ratio");
    table.add(s, "wall, recrawl / from scratch", median(wall), "ratio");
    farm.stop();
}
