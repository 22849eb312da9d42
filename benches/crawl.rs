//! End-to-end crawl benchmark: the test web on loopback, the real binary.
//!
//! `cargo bench --bench crawl` starts the generated web in this process and
//! runs `layercrawl run` as a child process over it several times, each
//! into a fresh folder, then prints the medians: pages/s, MB/s of HTML, CPU
//! seconds per 1,000 pages and the crawler's peak RSS (from
//! `getrusage(RUSAGE_CHILDREN)`, so the web server's own work is excluded).
//! Settings: `CRAWL_BENCH_SITES`, `CRAWL_BENCH_PAGES`, `CRAWL_BENCH_DEPTH`,
//! `CRAWL_BENCH_RUNS`, `CRAWL_BENCH_PAGE_KB`.

use std::process::Command;
use std::time::Instant;

use testweb::{Farm, FarmConfig};

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

struct Usage {
    cpu_s: f64,
    maxrss_kb: i64,
}

fn children_usage() -> Usage {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Usage { cpu_s: tv(ru.ru_utime) + tv(ru.ru_stime), maxrss_kb: ru.ru_maxrss }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes; nothing to list.
    }
    let sites = env_u32("CRAWL_BENCH_SITES", 20);
    let pages = env_u32("CRAWL_BENCH_PAGES", 400);
    let depth = env_u32("CRAWL_BENCH_DEPTH", 3);
    let runs = env_u32("CRAWL_BENCH_RUNS", 3).max(1);
    let page_kb = env_u32("CRAWL_BENCH_PAGE_KB", 24);
    let farm = Farm::start_background(FarmConfig { sites, pages, faults: false, page_kb, ..FarmConfig::default() })
        .expect("start the test web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("write seeds");
    let bin = env!("CARGO_BIN_EXE_layercrawl");
    println!(
        "crawl bench: {sites} sites x {pages} pages, depth {depth}, ~{page_kb} KB pages, {runs} runs, {} cores",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let (mut rates, mut mbs, mut cpu_per_k, mut rss) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 0..runs {
        let data = tmp.path().join(format!("run{run}"));
        let before = children_usage();
        let t = Instant::now();
        let out = Command::new(bin)
            .args(["run", "--seeds"])
            .arg(&seeds)
            .args(["--depth", &depth.to_string(), "--data"])
            .arg(&data)
            .args(["--resolve", &farm.resolve_rule(), "--allow-private", "--delay", "0", "--per-host", "8"])
            .args([
                "--concurrency",
                "256",
                "--partitions",
                "8",
                "--scope",
                "domain",
                "--denoise",
                "off",
                "--json",
                "--quiet",
            ])
            .output()
            .expect("run layercrawl");
        let wall = t.elapsed().as_secs_f64();
        let after = children_usage();
        assert!(out.status.success(), "crawl failed: {}", String::from_utf8_lossy(&out.stderr));
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("summary JSON");
        let fetched = summary["fetched"].as_f64().unwrap_or(0.0);
        let bytes = summary["bytes"].as_f64().unwrap_or(0.0);
        let cpu = after.cpu_s - before.cpu_s;
        println!("  run {run}: {fetched} pages in {wall:.2} s, cpu {cpu:.2} s, peak rss {} MB", after.maxrss_kb / 1024);
        rates.push(fetched / wall);
        mbs.push(bytes / 1e6 / wall);
        cpu_per_k.push(cpu / fetched.max(1.0) * 1000.0);
        rss.push(after.maxrss_kb as f64 / 1024.0);
    }
    println!(
        "median: {:.0} pages/s, {:.1} MB/s HTML, {:.2} CPU s per 1000 pages, peak RSS {:.0} MB (max over runs)",
        median(rates),
        median(mbs),
        median(cpu_per_k),
        rss.iter().copied().fold(0.0, f64::max)
    );
    farm.shutdown();
}
