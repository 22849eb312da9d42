//! The benchmark suite: one command, one table, one JSON file.
//!
//! `cargo bench --bench suite` runs four scenarios against the test web,
//! which runs as its own process (`layercrawl webfarm`) so that its CPU time
//! is measured apart from the crawler's:
//!
//! - `cpu`: a loopback crawl with no latency (50 sites, depth 3), three
//!   times; then the limit measured in the same run: parse + extract of the
//!   crawl's own pages on one core, and the test web's CPU per request; and
//!   apart, what storing and merging the same rows costs on one core
//!   (`suite/limit.rs`).
//! - `peer`: Scrapy (from PyPI, `benches/peers/`) crawling the same web with
//!   the same seeds, depth, scope and politeness.
//! - `rules`: the cpu scenario's crawl with a five-field rule on every page
//!   against the same crawl without, in turn (`SUITE_RUNS` pairs).
//! - `columns` (only when asked for, with `SUITE_BASELINE`): the cpu
//!   scenario's crawl by this build against the same crawl by a comparison
//!   build, in turn (`suite/columns.rs`): what the `doc` columns this build
//!   adds cost.
//! - `recrawl`: a recrawl of the cpu scenario's unchanged web against the
//!   night before (`--previous`) beside a crawl from scratch, in turn:
//!   body bytes sent, CPU, wall (`suite/recrawl.rs`).
//! - `warc`: the cpu scenario's crawl with `--warc` against the same crawl
//!   without, in turn: CPU, wall, peak RSS, archive size (`suite/warc.rs`).
//! - `dns`: the cpu scenario's web to depth 2 through dnsmasq on loopback
//!   instead of `--resolve` rules: queries against lookups from the cache
//!   (`suite/dns.rs`).
//! - `proxy`: the cpu scenario's crawl through two of the test web's forward
//!   proxies against the same crawl direct, in turn (`suite/proxy.rs`).
//! - `render`: 450 pages of the test web's script-built applications fetched
//!   plain and rendered in headless Chromium, in turn (`suite/render.rs`;
//!   with the `render` feature, and `focus` measures the learned order with
//!   `learned`: `cargo bench --features full --bench suite`).
//! - `memory`: a crawl of 512 KB pages under `--max-memory` at 90 % and
//!   80 % of its uncapped peak against the same crawl uncapped: peak RSS
//!   and pages/s (`suite/memory.rs`).
//! - `wan`: a simulated WAN (thousands of hosts, 100-300 ms per response,
//!   1 s delay and 1 connection per host) against its politeness bound.
//! - `scale`: a 100 k-page and a 1 M-page crawl with the same settings:
//!   peak RSS, time and CPU per page side by side.
//! - `scaleout`: the processes executor with W = 1, 2, 4 workers on a
//!   latency-bound web, each worker capped at the same `--concurrency`;
//!   and the cpu scenario's crawl onto an S3 API server (moto, on
//!   loopback) against a local folder (`suite/scaleout.rs`).
//!
//! The crawler's CPU time comes from `wait4` on its process, its peak RSS
//! from its VmHWM (`/proc/PID/status`), polled every 50 ms.
//! Settings: `SUITE` (scenarios, comma-separated; default all), `SUITE_RUNS`
//! (3), `SUITE_JSON` (default `target/bench-suite.json`), `SUITE_WAN_SITES`
//! (2000), `SUITE_SCALE_SITES` (320: about 1.1 M pages; the small crawl is a
//! tenth).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::RecordBatch;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use serde_json::{json, Value};
use url::Url;

#[path = "suite/columns.rs"]
mod columns;
#[path = "suite/cpu.rs"]
mod cpu;
#[path = "suite/dns.rs"]
mod dns;
#[path = "../tests/e2e/common/dnsmasq.rs"]
mod dnsmasq;
#[path = "suite/focus.rs"]
mod focus;
#[path = "suite/limit.rs"]
mod limit;
#[path = "common/measure.rs"]
mod measure;
#[path = "suite/memory.rs"]
mod memory;
#[path = "suite/proxy.rs"]
mod proxy;
#[path = "suite/recrawl.rs"]
mod recrawl;
#[path = "suite/render.rs"]
mod render;
#[path = "suite/scaleout.rs"]
mod scaleout;
#[path = "suite/warc.rs"]
mod warc;

use measure::{last_json_line, peers_python, run_measured};

const BIN: &str = env!("CARGO_BIN_EXE_layercrawl");

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes; nothing to list.
    }
    let wanted = std::env::var("SUITE")
        .unwrap_or_else(|_| "cpu,peer,rules,recrawl,warc,dns,proxy,render,focus,memory,wan,scale,scaleout".into());
    let wanted: Vec<&str> = wanted.split(',').map(str::trim).collect();
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut table = Table::default();
    let machine = machine();
    println!("benchmark suite on {}", machine["summary"].as_str().unwrap_or("?"));
    if wanted.contains(&"cpu") || wanted.contains(&"peer") {
        cpu::cpu_bound(tmp.path(), &mut table, wanted.contains(&"cpu"), wanted.contains(&"peer"));
    }
    if wanted.contains(&"rules") {
        rules_cost(tmp.path(), &mut table);
    }
    if wanted.contains(&"columns") {
        columns::columns(tmp.path(), &mut table);
    }
    if wanted.contains(&"dns") {
        dns::dns(tmp.path(), &mut table);
    }
    if wanted.contains(&"proxy") {
        proxy::proxy(tmp.path(), &mut table);
    }
    if wanted.contains(&"render") {
        render::render(tmp.path(), &mut table);
    }
    if wanted.contains(&"focus") {
        focus::focus(tmp.path(), &mut table);
    }
    if wanted.contains(&"memory") {
        memory::memory(tmp.path(), &mut table);
    }
    if wanted.contains(&"recrawl") {
        recrawl::recrawl(tmp.path(), &mut table);
    }
    if wanted.contains(&"warc") {
        warc::warc(tmp.path(), &mut table);
    }
    if wanted.contains(&"wan") {
        latency_bound(tmp.path(), &mut table);
    }
    if wanted.contains(&"scale") {
        scale(tmp.path(), &mut table);
    }
    if wanted.contains(&"scaleout") {
        scaleout::workers(tmp.path(), &mut table);
        scaleout::s3_cost(tmp.path(), &mut table);
    }
    table.print();
    let out = std::env::var("SUITE_JSON").map_or_else(|_| target_dir().join("bench-suite.json"), PathBuf::from);
    let doc = json!({ "machine": machine, "rows": table.rows });
    std::fs::write(&out, serde_json::to_vec_pretty(&doc).expect("json")).expect("write the JSON table");
    println!("written: {}", out.display());
}

// ---------------------------------------------------------------- scenarios

/// The cpu scenario's crawl with a five-field rule on every page
/// (`benches/rules/article.toml`) against the same crawl without rules,
/// in turn, pair by pair: what rules cost (docs/src/rules.md, "What rules cost").
fn rules_cost(tmp: &Path, table: &mut Table) {
    let pairs = env_u32("SUITE_RUNS", 3).max(1);
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/rules/article.toml");
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let seeds = farm.write_seeds(tmp, "rules-seeds.txt");
    let run = |data: &Path, with: bool| {
        let mut a = farm.crawl_args(&seeds, data, 3);
        a.extend(CPU_CRAWL.map(String::from));
        if with {
            a.extend(["--rules".to_string(), rules.display().to_string()]);
        }
        let c = crawl(&a);
        let _ = std::fs::remove_dir_all(data);
        c
    };
    let (mut cpu, mut wall, mut items) = (vec![], vec![], 0.0);
    for pair in 0..pairs {
        let without = run(&tmp.join(format!("rules-without-{pair}")), false);
        let with = run(&tmp.join(format!("rules-with-{pair}")), true);
        items = with.summary["rules"]["article"]["items"].as_f64().unwrap_or(0.0);
        assert!(items > 0.0, "the rule made no items: {}", with.summary);
        println!(
            "  rules pair {pair}: without {:.1} CPU s, {:.1} s; with {:.1} CPU s, {:.1} s; {items} items",
            without.cpu, without.wall, with.cpu, with.wall
        );
        cpu.push(with.cpu / without.cpu);
        wall.push(with.wall / without.wall);
    }
    let s = "rules";
    table.add(s, "items made (one per HTML page)", items, "items");
    table.add(s, "crawler CPU, with / without a five-field rule (median of pairs)", median(cpu), "ratio");
    table.add(s, "wall, with / without", median(wall), "ratio");
    farm.stop();
}

/// The cpu scenario's test web (50 sites) and crawl flags (depth 3).
const CPU_WEB: [&str; 6] = ["--sites", "50", "--pages", "400", "--page-kb", "24"];
/// No politeness delay and no adaptive pacing: the test web is ours, and
/// the scenario measures the crawler's CPU, not its manners.
const CPU_CRAWL: [&str; 10] =
    ["--delay", "0", "--delay-factor", "0", "--per-host", "8", "--concurrency", "256", "--partitions", "8"];

/// A slow web: the sustained rate against the politeness bound.
fn latency_bound(tmp: &Path, table: &mut Table) {
    let sites = env_u32("SUITE_WAN_SITES", 2000);
    let window_s = 20.0;
    let delay_s = 1.0;
    let farm = FarmProcess::start(
        &["--sites", &sites.to_string(), "--pages", "100", "--page-kb", "4", "--latency", "100-300"],
        sites as usize,
    );
    let seeds = farm.write_seeds(tmp, "wan-seeds.txt");
    let data = tmp.join("wan");
    let mut args = farm.crawl_args(&seeds, &data, 1);
    args.extend(
        ["--delay", "1000", "--per-host", "1", "--concurrency", "20000", "--partitions", "8", "--layer-timeout", "20s"]
            .map(String::from),
    );
    let c = crawl(&args);
    let stats = farm.stats();
    let layer = &c.summary["layers"][1];
    let seconds = layer["seconds"].as_f64().unwrap_or(window_s);
    // Work each host had in the measured layer, and what it got.
    let queued = host_counts(&data.join("in/layer=1"), "url", None);
    let done = host_counts(&data.join("doc/layer=1"), "url", Some("status"));
    let pages: u64 = done.values().sum();
    let per_host_cap = 1.0 + (seconds / delay_s).floor();
    let achievable: f64 = queued.values().map(|&n| (n as f64).min(per_host_cap)).sum::<f64>() / seconds;
    let busy = queued.values().filter(|&&n| n as f64 >= per_host_cap).count();
    let rate = pages as f64 / seconds;
    let max_per_host = stats["hosts"]
        .as_object()
        .map_or(0, |h| h.values().filter_map(|s| s["max_in_flight"].as_u64()).max().unwrap_or(0));
    let min_gap = stats["hosts"]
        .as_object()
        .map_or(f64::NAN, |h| h.values().filter_map(|s| s["min_gap_ms"].as_f64()).fold(f64::INFINITY, f64::min));
    println!(
        "  wan: {pages} pages in {seconds:.1} s over {} hosts ({busy} with work for the whole window)",
        queued.len()
    );
    let s = "wan";
    table.add(s, "hosts with URLs in the measured layer", queued.len() as f64, "hosts");
    table.add(s, "hosts with work for the whole layer", busy as f64, "hosts");
    table.add(s, "sustained rate (layer 1)", rate, "pages/s");
    table.add(s, "politeness bound: busy hosts / delay", busy as f64 / delay_s, "pages/s");
    table.add(s, "politeness bound: sum of min(URLs, 1 + T/delay) / T", achievable, "pages/s");
    table.add(s, "sustained / politeness bound", rate / achievable, "ratio");
    table.add(s, "peak requests in flight (server side)", stats["max_in_flight"].as_f64().unwrap_or(0.0), "requests");
    table.add(s, "most requests in flight on one host", max_per_host as f64, "requests");
    table.add(s, "smallest gap between two requests to one host", min_gap, "ms");
    table.add(s, "crawler peak RSS", c.rss_mb, "MB");
    farm.stop();
}

/// The same crawl at 100 k and 1 M pages: memory and time per page.
fn scale(tmp: &Path, table: &mut Table) {
    let large = env_u32("SUITE_SCALE_SITES", 320);
    let mut seen = Vec::new();
    for sites in [large / 10, large] {
        let farm =
            FarmProcess::start(&["--sites", &sites.to_string(), "--pages", "1000", "--page-kb", "4"], sites as usize);
        let seeds = farm.write_seeds(tmp, &format!("scale-{sites}.txt"));
        let data = tmp.join(format!("scale-{sites}"));
        let mut args = farm.crawl_args(&seeds, &data, 4);
        args.extend(["--delay", "0", "--per-host", "8", "--concurrency", "256", "--partitions", "8"].map(String::from));
        let c = crawl(&args);
        let pages = responses(&data.join("doc")) as f64;
        println!(
            "  scale {sites} sites: {pages} pages in {:.1} s, crawler {:.1} CPU s, peak RSS {:.0} MB",
            c.wall, c.cpu, c.rss_mb
        );
        let label = if sites == large { "large" } else { "small" };
        let s = "scale";
        table.add(s, &format!("{label} crawl: pages (5 layers)"), pages, "pages");
        table.add(s, &format!("{label} crawl: time per 1000 pages"), c.wall / pages * 1000.0, "s");
        table.add(s, &format!("{label} crawl: crawler CPU"), c.cpu / pages * 1000.0, "CPU s / 1000 pages");
        table.add(s, &format!("{label} crawl: peak RSS"), c.rss_mb, "MB");
        seen.push((pages, c.wall / pages, c.rss_mb, c.cpu / pages));
        let _ = std::fs::remove_dir_all(&data);
        farm.stop();
    }
    let (small, large) = (seen[0], seen[1]);
    table.add("scale", "peak RSS large / small", large.2 / small.2, "ratio");
    table.add("scale", "time per page large / small", large.1 / small.1, "ratio");
    // Wall time follows the load of a shared machine; CPU time much less.
    table.add("scale", "CPU per page large / small", large.3 / small.3, "ratio");
}

// ---------------------------------------------------------------- processes

/// The test web in its own process.
struct FarmProcess {
    child: Child,
    addr: String,
    seeds: Vec<String>,
    /// Its forward proxies' URLs (`--proxies N`).
    proxies: Vec<String>,
}

impl FarmProcess {
    fn start(args: &[&str], sites: usize) -> Self {
        let mut child = Command::new(BIN)
            .args(["webfarm", "--listen", "127.0.0.1:0", "--faults", "off"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the test web");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
        let (mut addr, mut seeds, mut proxies) = (None, Vec::new(), Vec::new());
        let mut line = String::new();
        while seeds.len() < sites {
            line.clear();
            if lines.read_line(&mut line).expect("read the test web's output") == 0 {
                panic!("the test web exited early");
            }
            let l = line.trim();
            if let Some(rule) = l.strip_prefix("# resolve rule: *.test=") {
                addr = Some(rule.to_string());
            } else if let Some(p) = l.strip_prefix("# proxy: ") {
                proxies.push(p.split_whitespace().next().unwrap_or("").to_string());
            } else if !l.starts_with('#') && !l.is_empty() {
                seeds.push(l.to_string());
            }
        }
        // Keep the pipe open (and drained) so the web never blocks on a write.
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        Self { child, addr: addr.expect("the test web prints its resolve rule"), seeds, proxies }
    }

    fn write_seeds(&self, dir: &Path, name: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, self.seeds.join("\n")).expect("write seeds");
        p
    }

    fn crawl_args(&self, seeds: &Path, data: &Path, depth: u32) -> Vec<String> {
        let mut a: Vec<String> = vec!["run".into(), "--seeds".into(), seeds.display().to_string()];
        a.extend(["--depth".into(), depth.to_string(), "--data".into(), data.display().to_string()]);
        a.extend(["--resolve".into(), format!("*.test={}", self.addr), "--allow-private".into()]);
        a.extend(["--scope", "domain", "--denoise", "off", "--json", "--quiet"].map(String::from));
        a
    }

    /// User + system CPU seconds of the web so far (from /proc).
    fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
        let rest = stat.rsplit_once(')').map_or("", |r| r.1);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        (ticks(11) + ticks(12)) / hz
    }

    /// The web's politeness audit (`/__farm/stats`).
    fn stats(&self) -> Value {
        let mut s = std::net::TcpStream::connect(&self.addr).expect("connect to the test web");
        s.write_all(b"GET /__farm/stats HTTP/1.0\r\nHost: farm\r\n\r\n").expect("ask for stats");
        let mut resp = Vec::new();
        s.read_to_end(&mut resp).expect("read stats");
        let at = resp.windows(4).position(|w| w == b"\r\n\r\n").expect("HTTP head") + 4;
        serde_json::from_slice(&resp[at..]).expect("stats JSON")
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `layercrawl` crawl, measured, with its JSON summary.
struct Crawl {
    wall: f64,
    cpu: f64,
    rss_mb: f64,
    summary: Value,
}

fn crawl(args: &[String]) -> Crawl {
    crawl_with(Path::new(BIN), args)
}

/// A crawl by the binary at `bin` (this build, or a comparison build).
fn crawl_with(bin: &Path, args: &[String]) -> Crawl {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = run_measured(Command::new(bin).args(args), &dir.path().join("out"), &dir.path().join("err"));
    assert!(r.ok, "layercrawl {} failed: {}", args.join(" "), r.stderr_tail());
    let summary = serde_json::from_str(&r.stdout).expect("the crawl's JSON summary");
    Crawl { wall: r.wall, cpu: r.cpu, rss_mb: r.rss_mb, summary }
}

// ---------------------------------------------------------------- Parquet

/// The batches of every Parquet file under a folder, read one at a time.
struct DirBatches {
    files: Vec<PathBuf>,
    columns: Vec<String>,
    current: Option<parquet::arrow::arrow_reader::ParquetRecordBatchReader>,
}

impl DirBatches {
    fn new(dir: &Path, columns: &[&str]) -> Self {
        let mut files = Vec::new();
        collect_parquet(dir, &mut files);
        files.reverse();
        Self { files, columns: columns.iter().map(|c| (*c).to_string()).collect(), current: None }
    }
}

impl Iterator for DirBatches {
    type Item = RecordBatch;

    fn next(&mut self) -> Option<RecordBatch> {
        loop {
            if let Some(batch) = self.current.as_mut().and_then(Iterator::next) {
                return Some(batch.expect("a Parquet batch"));
            }
            let f = self.files.pop()?;
            let b =
                ParquetRecordBatchReaderBuilder::try_new(File::open(&f).expect("open shard")).expect("a Parquet file");
            let mask = ProjectionMask::columns(b.parquet_schema(), self.columns.iter().map(String::as_str));
            self.current = Some(b.with_projection(mask).with_batch_size(1024).build().expect("reader"));
        }
    }
}

fn collect_parquet(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_parquet(&p, out);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
}

/// Rows of `doc`, responses or not.
fn doc_rows(doc: &Path) -> u64 {
    DirBatches::new(doc, &["status"]).map(|b| b.num_rows() as u64).sum()
}

/// Rows of `doc` that got an HTTP response (robots-disallowed URLs are rows
/// with no request behind them).
fn responses(doc: &Path) -> u64 {
    DirBatches::new(doc, &["status"])
        .map(|b| b.column(0).as_primitive::<Int32Type>().iter().filter(|s| s.is_some_and(|s| s > 0)).count() as u64)
        .sum()
}

/// Rows per host of the URLs in `column`; with `status`, only rows that got a response.
fn host_counts(dir: &Path, column: &str, status: Option<&str>) -> HashMap<String, u64> {
    let cols: Vec<&str> = std::iter::once(column).chain(status).collect();
    let mut counts = HashMap::new();
    for b in DirBatches::new(dir, &cols) {
        let urls = b.column_by_name(column).expect("url column").as_string::<i32>();
        let st = status.map(|s| b.column_by_name(s).expect("status column").as_primitive::<Int32Type>().clone());
        for i in 0..b.num_rows() {
            if st.as_ref().is_some_and(|s| s.value(i) <= 0) {
                continue;
            }
            if let Some(host) = Url::parse(urls.value(i)).ok().and_then(|u| u.host_str().map(str::to_string)) {
                *counts.entry(host).or_insert(0) += 1;
            }
        }
    }
    counts
}

// ---------------------------------------------------------------- table

#[derive(Default)]
struct Table {
    rows: Vec<Value>,
}

impl Table {
    fn add(&mut self, scenario: &str, metric: &str, value: f64, unit: &str) {
        self.rows.push(json!({ "scenario": scenario, "metric": metric, "value": value, "unit": unit }));
    }

    fn get(&self, scenario: &str, metric: &str) -> Option<f64> {
        self.rows.iter().find(|r| r["scenario"] == scenario && r["metric"] == metric).and_then(|r| r["value"].as_f64())
    }

    fn print(&self) {
        println!("\n| scenario | metric | value | unit |\n|---|---|---:|---|");
        for r in &self.rows {
            let v = r["value"].as_f64().unwrap_or(f64::NAN);
            let shown = if r["unit"] == "ratio" {
                format!("{v:.2}")
            } else if v.abs() >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            };
            println!(
                "| {} | {} | {shown} | {} |",
                r["scenario"].as_str().unwrap_or(""),
                r["metric"].as_str().unwrap_or(""),
                r["unit"].as_str().unwrap_or("")
            );
        }
    }
}

// ---------------------------------------------------------------- helpers

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))
        .unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    let cores = cores();
    json!({ "cores": cores, "memory_gib": mem_gib, "cpu": model, "summary": format!("{cores} cores, {mem_gib:.0} GiB, {model}") })
}

fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1.0, |n| n.get() as f64)
}

fn target_dir() -> PathBuf {
    std::env::var("CARGO_TARGET_DIR")
        .map_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"), PathBuf::from)
}

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0, f64::max)
}
