//! The `warc` scenario: what `--warc` costs (docs/src/warc.md).
//!
//! The cpu scenario's web and crawl, `SUITE_RUNS` pairs of the crawl
//! without and with `--warc`, run in turn (the order swapped every other
//! pair, so a machine growing busier weighs on both alike): the crawler's
//! CPU and wall time with over without (medians of the pairs' ratios), its
//! peak RSS, and what the archive takes on disk beside the `doc` files.

use std::path::Path;

use super::{crawl, env_u32, median, FarmProcess, Table, CPU_CRAWL, CPU_WEB};

/// Bytes of the files under `dir` whose names end with `suffix`.
fn bytes_under(dir: &Path, suffix: &str) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                bytes_under(&p, suffix)
            } else if p.to_string_lossy().ends_with(suffix) {
                e.metadata().map_or(0, |m| m.len())
            } else {
                0
            }
        })
        .sum()
}

pub(super) fn warc(tmp: &Path, table: &mut Table) {
    let pairs = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let seeds = farm.write_seeds(tmp, "warc-seeds.txt");
    let run = |with: bool, pair: u32| {
        let data = tmp.join(format!("warc-{}-{pair}", if with { "with" } else { "without" }));
        let mut a = farm.crawl_args(&seeds, &data, 3);
        a.extend(CPU_CRAWL.map(String::from));
        if with {
            a.push("--warc".to_string());
        }
        let c = crawl(&a);
        let sizes = (
            bytes_under(&data.join("warc"), ".warc.gz"),
            bytes_under(&data.join("warc"), ".cdxj"),
            bytes_under(&data.join("doc"), ".parquet"),
        );
        let _ = std::fs::remove_dir_all(&data);
        (c, sizes)
    };
    let (mut cpu, mut wall, mut rss, mut extra_cpu) = (vec![], vec![], vec![], vec![]);
    let (mut pages, mut warc_bytes, mut cdxj_bytes, mut doc_bytes) = (0.0, 0.0, 0.0, 0.0);
    for pair in 0..pairs {
        let ((without, _), (with, sizes)) = if pair % 2 == 0 {
            let a = run(false, pair);
            (a, run(true, pair))
        } else {
            let b = run(true, pair);
            (run(false, pair), b)
        };
        pages = with.summary["ok"].as_f64().unwrap_or(0.0);
        assert!(sizes.0 > 0, "--warc wrote no archive: {}", with.summary);
        (warc_bytes, cdxj_bytes, doc_bytes) = (sizes.0 as f64, sizes.1 as f64, sizes.2 as f64);
        println!(
            "  warc pair {pair}: without {:.1} CPU s, {:.1} s, {:.0} MB RSS; with {:.1} CPU s, {:.1} s, {:.0} MB RSS; {pages} pages, archive {:.1} MB, index {:.1} MB, doc {:.1} MB",
            without.cpu,
            without.wall,
            without.rss_mb,
            with.cpu,
            with.wall,
            with.rss_mb,
            warc_bytes / 1e6,
            cdxj_bytes / 1e6,
            doc_bytes / 1e6
        );
        cpu.push(with.cpu / without.cpu);
        wall.push(with.wall / without.wall);
        rss.push(with.rss_mb / without.rss_mb);
        extra_cpu.push((with.cpu - without.cpu) / pages * 1000.0);
    }
    let s = "warc";
    table.add(s, "pages fetched (2xx)", pages, "pages");
    table.add(s, "crawler CPU, with / without --warc (median of pairs)", median(cpu), "ratio");
    table.add(s, "wall, with / without", median(wall), "ratio");
    table.add(s, "peak RSS, with / without", median(rss), "ratio");
    table.add(s, "CPU added by --warc", median(extra_cpu), "CPU s / 1000 pages");
    table.add(s, "archive (.warc.gz) per page", warc_bytes / pages, "bytes");
    table.add(s, "index (.cdxj) per page", cdxj_bytes / pages, "bytes");
    table.add(s, "archive / doc files", warc_bytes / doc_bytes, "ratio");
    farm.stop();
}
