//! The resource governor against the test web (docs/src/governor.md):
//! a crawl of large pages capped below the memory an uncapped crawl of the
//! same web reached stays under the cap and loses no page; a CPU target
//! lowers the in-flight limit and loses no page either.

use crate::common;

use std::collections::BTreeSet;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{read_docs, Web};
use testweb::FarmConfig;

/// A crawl as a child process, its high-water resident memory read from
/// `/proc/PID/status` (`VmHWM`) until it exits, and its wall time.
struct Watched {
    summary: serde_json::Value,
    hwm: u64,
    seconds: f64,
    stderr: String,
}

fn crawl_watched(args: &[String]) -> Watched {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start layercrawl");
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).expect("read the summary");
        s
    });
    let status_path = format!("/proc/{}/status", child.id());
    let mut hwm = 0;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            hwm = hwm.max(kb * 1024);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let seconds = started.elapsed().as_secs_f64();
    let out = reader.join().expect("reader");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "layercrawl {args:?} failed: {err}");
    let summary = serde_json::from_str(&out).unwrap_or_else(|e| panic!("summary is not JSON ({e}): {out}"));
    Watched { summary, hwm, seconds, stderr: err }
}

const MIB: u64 = 1 << 20;

/// What the measurement of a peak may add to it: the kernel counts a
/// process's resident pages in per-CPU counters that it folds into the
/// total in batches (`percpu_counter`, 32 pages or twice the CPUs, whichever
/// is more), so `VmRSS` and `VmHWM`, read from the total, may be off by a
/// batch per CPU: 256 KiB on 2 CPUs.
fn slack() -> u64 {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as u64;
    32.max(2 * cpus) * cpus * 4096
}

fn mib(bytes: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let m = bytes as f64 / MIB as f64;
    m
}

/// The `doc` rows' URLs of a finished crawl.
fn urls(data: &std::path::Path) -> BTreeSet<String> {
    read_docs(data).into_iter().map(|d| d.url).collect()
}

#[test]
fn a_memory_cap_below_the_uncapped_peak_holds_and_loses_no_page() {
    // 512 KB pages answered after 20-40 ms: what grows with page size is
    // most of the crawl's memory above its floor (bodies in flight, pages
    // waiting for and in the parse workers, rows waiting for their batch).
    let cfg = FarmConfig {
        sites: 6,
        pages: 15,
        page_kb: 512,
        faults: false,
        latency_ms: (20, 40),
        seed: 7,
        ..FarmConfig::default()
    };
    let web = Web::start(cfg);
    let args = ["--delay", "0", "--per-host", "8", "--concurrency", "128", "--partitions", "4"];
    let free = crawl_watched(&web.run_args(&web.dir("free"), 2, &args));
    assert!(free.summary.get("governor").is_none(), "no governor without its flags: {}", free.summary);
    // 90 % of the uncapped crawl's peak, in whole MiB.
    let cap = free.hwm * 9 / 10 / MIB * MIB;
    let cap_flag = format!("{}M", cap / MIB);
    let mut capped_args = args.to_vec();
    capped_args.extend(["--max-memory", &cap_flag]);
    let capped = crawl_watched(&web.run_args(&web.dir("capped"), 2, &capped_args));
    let g = &capped.summary["governor"];
    eprintln!(
        "uncapped: peak RSS {:.1} MiB, {:.1} s; --max-memory {cap_flag}: peak RSS {:.1} MiB (governor's samples {:.1} MiB), {:.1} s; governor {g}",
        mib(free.hwm),
        free.seconds,
        mib(capped.hwm),
        mib(g["peak_rss_bytes"].as_u64().expect("the governor's peak RSS")),
        capped.seconds,
    );
    assert!(g["shrinks"].as_u64().is_some_and(|n| n >= 1), "the cap was felt: {g}");
    assert_eq!(g["over_floor"], false, "90 % of the uncapped peak is above the crawl's floor: {g}");
    assert!(g["min_limit"].as_u64().is_some_and(|n| (1..128).contains(&n)), "{g}");
    assert!(g["mean_limit"].as_f64().is_some_and(|m| m > 0.0 && m < 128.0), "{g}");
    // Pages were held after their requests, never more than the allowance
    // lets through (about a tenth of the cap at most, here).
    let held = g["peak_page_bytes"].as_u64().expect("the pages held");
    assert!(held > 0 && held < cap / 4, "pages held at most {:.1} MiB", mib(held));
    assert!(capped.summary["layers"][2]["governor"]["samples"].as_u64().is_some_and(|n| n > 0), "per layer too");
    let (a, b) = (urls(&web.dir("free")), urls(&web.dir("capped")));
    assert!(a.len() > 900, "the whole test web: {}", a.len());
    assert_eq!(a, b, "the capped crawl has every page of the uncapped one");
    assert_eq!(free.summary["ok"], capped.summary["ok"]);
    // The peak (the kernel's high-water mark of the crawl's resident
    // memory, VmHWM) stays under the cap, but for how the kernel counts it.
    assert!(
        capped.hwm <= cap + slack(),
        "peak {:.1} MiB over the cap {cap_flag} (uncapped {:.1} MiB)",
        mib(capped.hwm),
        mib(free.hwm)
    );
}

#[test]
fn a_cap_below_the_floor_is_reported_and_the_crawl_goes_on() {
    let cfg = FarmConfig {
        sites: 2,
        pages: 10,
        page_kb: 512,
        faults: false,
        latency_ms: (5, 10),
        seed: 9,
        ..FarmConfig::default()
    };
    let web = Web::start(cfg);
    let args = ["--delay", "0", "--per-host", "4", "--concurrency", "16", "--partitions", "2"];
    let free = crawl_watched(&web.run_args(&web.dir("free"), 2, &args));
    // 16 MiB: less than the program's own code and runtime.
    let mut capped_args = args.to_vec();
    capped_args.extend(["--max-memory", "16M"]);
    let capped = crawl_watched(&web.run_args(&web.dir("capped"), 2, &capped_args));
    let g = &capped.summary["governor"];
    eprintln!("--max-memory 16M: peak {:.1} MiB; governor {g}", mib(capped.hwm));
    assert_eq!(g["over_floor"], true, "{g}");
    assert_eq!(g["min_limit"], 1, "{g}");
    assert!(
        capped.stderr.contains("--max-memory 16 MiB is below this crawl's floor"),
        "the warning names the cap: {}",
        capped.stderr
    );
    assert_eq!(capped.stderr.matches("below this crawl's floor").count(), 1, "said once: {}", capped.stderr);
    assert_eq!(urls(&web.dir("free")), urls(&web.dir("capped")), "no page lost");
    assert_eq!(free.summary["ok"], capped.summary["ok"]);
}

#[test]
fn a_cpu_target_lowers_the_limit_and_loses_no_page() {
    let cfg = FarmConfig { sites: 4, pages: 150, faults: false, latency_ms: (5, 15), seed: 8, ..FarmConfig::default() };
    let web = Web::start(cfg);
    let args = ["--delay", "0", "--per-host", "4", "--concurrency", "32", "--partitions", "2"];
    let free = web.crawl(&web.dir("free"), 2, &args);
    let mut capped_args = args.to_vec();
    // 5 % of all cores: parsing alone takes more.
    capped_args.extend(["--cpu-target", "5"]);
    let capped = web.crawl(&web.dir("capped"), 2, &capped_args);
    let g = &capped["governor"];
    eprintln!("--cpu-target 5: governor {g}");
    assert!(g["shrinks"].as_u64().is_some_and(|n| n >= 1), "{g}");
    assert!(g["mean_limit"].as_f64().is_some_and(|m| m < 16.0), "half of --concurrency at most, on average: {g}");
    assert_eq!(urls(&web.dir("free")), urls(&web.dir("capped")));
    assert_eq!(free["ok"], capped["ok"]);
}
