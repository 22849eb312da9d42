//! What the Kafka sink costs a crawl, and how fast it publishes
//! (docs/src/kafka.md).
//!
//! `cargo bench --bench kafka` starts the test web and librdkafka's mock
//! cluster in this process and runs `layercrawl run` as a child process,
//! in pairs: the same crawl without and with `--sink`, each into a fresh
//! folder, the order alternating from pair to pair. It prints the medians
//! of the pairs' wall-time and CPU ratios (the crawler's CPU only, from
//! `getrusage(RUSAGE_CHILDREN)`: the mock brokers run in this process, on
//! the same cores), the messages and bytes a crawl publishes, and the
//! publishing rate of one partition's producer (its messages over the time
//! from its transaction's start to the last acknowledgement, from the
//! records the tasks leave in `state/sink/`).
//! Settings: `KAFKA_BENCH_SITES`, `KAFKA_BENCH_PAGES`, `KAFKA_BENCH_DEPTH`,
//! `KAFKA_BENCH_PAIRS`, `KAFKA_BENCH_PAGE_KB`, `KAFKA_BENCH_PARTITIONS`;
//! `KAFKA_BENCH_BROKERS=HOST:PORT,…` publishes to those brokers instead of
//! the mock (a broker started by hand, e.g. the tests' noida-db: see
//! docs/src/kafka.md, "Building and testing").

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use rdkafka::mocking::MockCluster;
use testweb::{Farm, FarmConfig};

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// One crawl: wall seconds, crawler CPU seconds, pages fetched.
fn crawl(args: &[String]) -> (f64, f64, u64) {
    let (t, cpu) = (Instant::now(), children_cpu());
    let out = Command::new(env!("CARGO_BIN_EXE_layercrawl")).args(args).output().expect("run layercrawl");
    let wall = t.elapsed().as_secs_f64();
    assert!(out.status.success(), "layercrawl failed: {}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    (wall, children_cpu() - cpu, summary["fetched"].as_u64().unwrap_or(0))
}

/// What the tasks' records say they published: messages, JSON bytes, and
/// each task's (messages, seconds from its transaction's start to the last
/// acknowledgement).
fn published(data: &Path) -> (u64, u64, Vec<(u64, f64)>) {
    let (mut messages, mut bytes, mut tasks) = (0, 0, Vec::new());
    for layer in std::fs::read_dir(data.join("state/sink")).expect("state/sink").flatten() {
        if !layer.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(layer.path()).expect("records").flatten() {
            let r: serde_json::Value = serde_json::from_slice(&std::fs::read(f.path()).expect("read")).expect("json");
            let n = r["messages"].as_u64().unwrap_or(0);
            messages += n;
            bytes += r["bytes"].as_u64().unwrap_or(0);
            tasks.push((n, r["produce_ms"].as_u64().unwrap_or(0) as f64 / 1000.0));
        }
    }
    (messages, bytes, tasks)
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes; nothing to list.
    }
    let sites = env_u32("KAFKA_BENCH_SITES", 20);
    let pages = env_u32("KAFKA_BENCH_PAGES", 200);
    let depth = env_u32("KAFKA_BENCH_DEPTH", 2);
    let pairs = env_u32("KAFKA_BENCH_PAIRS", 3).max(1);
    let page_kb = env_u32("KAFKA_BENCH_PAGE_KB", 24);
    let partitions = env_u32("KAFKA_BENCH_PARTITIONS", 4);
    let farm = Farm::start_background(FarmConfig { sites, pages, faults: false, page_kb, ..FarmConfig::default() })
        .expect("start the test web");
    let given = std::env::var("KAFKA_BENCH_BROKERS").ok().filter(|b| !b.is_empty());
    let mock = if given.is_some() { None } else { Some(MockCluster::new(3).expect("librdkafka's mock cluster")) };
    let (brokers, what) = match (&given, &mock) {
        (Some(b), _) => (b.clone(), format!("the brokers {b}")),
        (None, Some(m)) => (m.bootstrap_servers(), "mock cluster of 3 brokers in the bench's process".to_string()),
        (None, None) => unreachable!("a mock when no brokers are given"),
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("write seeds");
    println!(
        "kafka bench: {sites} sites x {pages} pages, depth {depth}, ~{page_kb} KB pages, {partitions} partitions, \
         {pairs} pairs, {} cores, {what}",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let args = |data: &Path, sink: Option<String>| {
        let mut v: Vec<String> = [
            "run",
            "--seeds",
            &seeds.display().to_string(),
            "--depth",
            &depth.to_string(),
            "--data",
            &data.display().to_string(),
            "--resolve",
            &farm.resolve_rule(),
            "--allow-private",
            "--delay",
            "0",
            "--per-host",
            "4",
            "--partitions",
            &partitions.to_string(),
            "--json",
            "--quiet",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        if let Some(s) = sink {
            v.extend(["--sink".to_string(), s]);
        }
        v
    };
    let (mut wall_ratio, mut cpu_ratio, mut walls, mut rates, mut mbs) =
        (Vec::new(), Vec::new(), (Vec::new(), Vec::new()), Vec::new(), Vec::new());
    let mut last = (0, 0, 0);
    for pair in 0..pairs {
        let plain = tmp.path().join(format!("plain{pair}"));
        let sunk = tmp.path().join(format!("sink{pair}"));
        // A prefix of its own per run, so that a broker that outlives the
        // bench does not mix runs.
        let sink = format!("kafka://{brokers}/bench{}-{pair}", std::process::id());
        let (a, b) = if pair % 2 == 0 {
            let a = crawl(&args(&plain, None));
            (a, crawl(&args(&sunk, Some(sink))))
        } else {
            let b = crawl(&args(&sunk, Some(sink)));
            (crawl(&args(&plain, None)), b)
        };
        let (messages, bytes, tasks) = published(&sunk);
        let (n, s) = tasks.iter().fold((0u64, 0f64), |(n, s), t| (n + t.0, s + t.1));
        println!(
            "pair {pair}: without {:.2} s {:.2} CPU s {} pages | with {:.2} s {:.2} CPU s {} pages, {messages} messages, \
             {:.1} MB JSON; one producer {:.0} messages/s",
            a.0,
            a.1,
            a.2,
            b.0,
            b.1,
            b.2,
            bytes as f64 / 1e6,
            n as f64 / s.max(1e-9)
        );
        wall_ratio.push(b.0 / a.0);
        cpu_ratio.push(b.1 / a.1);
        walls.0.push(a.0);
        walls.1.push(b.0);
        rates.push(n as f64 / s.max(1e-9));
        mbs.push(bytes as f64 / 1e6 / s.max(1e-9));
        last = (b.2, messages, bytes);
        for d in [plain, sunk] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    println!(
        "median of {pairs} pairs: wall {:.2} s without, {:.2} s with the sink ({:.2}x); crawler CPU {:.2}x; \
         {} pages, {} messages, {:.1} MB JSON per crawl; one partition's producer {:.0} messages/s ({:.1} MB/s)",
        median(walls.0),
        median(walls.1),
        median(wall_ratio),
        median(cpu_ratio),
        last.0,
        last.1,
        last.2 as f64 / 1e6,
        median(rates),
        median(mbs),
    );
}
