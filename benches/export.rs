//! SQL export benchmark: rows per second of `layercrawl export` into SQLite
//! and into PostgreSQL, on a crawl of the test web.
//!
//! `cargo bench --bench export` starts the generated web in this process,
//! crawls it once with the real binary (as `benches/crawl.rs` does), starts
//! a PostgreSQL server of its own (Debian's, `scripts/postgres.sh`; default
//! durability settings), and then, several times each, exports the crawl
//! into a new SQLite file and a new PostgreSQL database (a first load) and
//! once more into the same one (a re-export that adds nothing). It prints
//! the medians of the rows read per second as each export's summary states
//! them (reading the Parquet included). Settings: `EXPORT_BENCH_SITES`,
//! `EXPORT_BENCH_PAGES`, `EXPORT_BENCH_DEPTH`, `EXPORT_BENCH_RUNS`.

#[path = "../tests/e2e/export/postgres.rs"]
mod postgres;

use std::path::Path;
use std::process::Command;

use testweb::{Farm, FarmConfig};

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// One export; its summary's rows read and rows per second.
fn export(data: &Path, to: &str) -> (u64, f64) {
    let out = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(["export", "--data"])
        .arg(data)
        .args(["--to", to, "--json"])
        .output()
        .expect("run layercrawl export");
    assert!(out.status.success(), "export to {to} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    (s["rows_read"].as_u64().expect("rows_read"), s["rows_per_second"].as_f64().expect("rows_per_second"))
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes; nothing to list.
    }
    let sites = env_u32("EXPORT_BENCH_SITES", 20);
    let pages = env_u32("EXPORT_BENCH_PAGES", 400);
    let depth = env_u32("EXPORT_BENCH_DEPTH", 3);
    let runs = env_u32("EXPORT_BENCH_RUNS", 3).max(1);
    let farm =
        Farm::start_background(FarmConfig { sites, pages, faults: false, ..FarmConfig::default() }).expect("test web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("write seeds");
    let data = tmp.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(["run", "--seeds"])
        .arg(&seeds)
        .args(["--depth", &depth.to_string(), "--data"])
        .arg(&data)
        .args(["--resolve", &farm.resolve_rule(), "--allow-private", "--delay", "0", "--per-host", "8"])
        .args(["--concurrency", "256", "--partitions", "8", "--scope", "domain", "--json", "--quiet"])
        .output()
        .expect("run layercrawl");
    assert!(out.status.success(), "crawl failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let server = postgres::Postgres::start(true);
    println!(
        "export bench: {sites} sites x {pages} pages, depth {depth}, {runs} runs, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let mut results = Vec::new();
    for (name, target) in [("sqlite", 0), ("postgres", 1)] {
        let (mut first, mut again, mut rows) = (Vec::new(), Vec::new(), 0);
        for run in 0..runs {
            let to = if target == 0 {
                format!("sqlite:{}", tmp.path().join(format!("run{run}.db")).display())
            } else {
                let db = format!("run{run}");
                server.create_db(&db);
                server.url(&db)
            };
            let (n, rate) = export(&data, &to);
            rows = n;
            first.push(rate);
            again.push(export(&data, &to).1);
        }
        results.push((name, rows, median(first), median(again)));
    }
    println!("{:<10} {:>10} {:>16} {:>18}", "database", "rows", "load rows/s", "re-export rows/s");
    for (name, rows, first, again) in results {
        println!("{name:<10} {rows:>10} {first:>16.0} {again:>18.0}");
    }
}
