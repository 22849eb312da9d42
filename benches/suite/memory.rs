//! The `memory` scenario: a crawl of large pages under `--max-memory`
//! against the same crawl uncapped (docs/src/governor.md).
//!
//! The test web serves 512 KB pages after 20-40 ms (8 sites of 40 pages,
//! depth 2, `--concurrency 128 --per-host 8 --partitions 4`). Each of
//! `SUITE_RUNS` rounds crawls it uncapped, then at `--concurrency 1` under
//! a cap at that peak (the crawl's floor under the governor: what it needs
//! at one request at a time, the allocator giving freed memory back at
//! once), then capped at
//! 90 % of the uncapped crawl's peak RSS, then at 80 %: peak RSS (VmHWM)
//! against the cap, whether it stayed within the cap (plus the kernel's
//! counter slack that `tests/e2e/governor.rs` allows), pages per second, and
//! whether every capped crawl fetched the same pages.

use std::path::Path;

use super::{crawl, env_u32, max, median, FarmProcess, Table};

pub(super) fn memory(tmp: &Path, table: &mut Table) {
    let rounds = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(
        &["--sites", "8", "--pages", "40", "--page-kb", "512", "--latency", "20-40", "--seed", "7"],
        8,
    );
    let seeds = farm.write_seeds(tmp, "memory-seeds.txt");
    let flags = ["--delay", "0", "--per-host", "8", "--partitions", "4"];
    // The kernel folds per-CPU counts of resident pages into VmRSS and
    // VmHWM in batches (32 pages or twice the CPUs, per CPU): a peak read
    // may be off by that much, as `tests/e2e/governor.rs` allows.
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    let slack_mib = 32f64.max(2.0 * cpus) * cpus * 4096.0 / f64::from(1 << 20);
    let run = |name: &str, cap: Option<u64>, concurrency: &str| {
        let data = tmp.join(name);
        let mut a = farm.crawl_args(&seeds, &data, 2);
        a.extend(flags.map(String::from));
        a.extend(["--concurrency".to_string(), concurrency.to_string()]);
        if let Some(mib) = cap {
            a.extend(["--max-memory".to_string(), format!("{mib}M")]);
        }
        let c = crawl(&a);
        let _ = std::fs::remove_dir_all(&data);
        let fetched = c.summary["fetched"].as_f64().unwrap_or(0.0);
        (c.rss_mb, fetched / c.wall, fetched, c.summary)
    };
    // Per cap (uncapped, 90 %, 80 %): peak RSS in MiB, pages/s; and the
    // capped peaks over their caps.
    let mut peaks: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut over: Vec<Vec<f64>> = vec![Vec::new(); 2];
    let mut floors = Vec::new();
    let (mut within, mut capped_runs) = (0u32, 0u32);
    for r in 0..rounds {
        let (free_mb, free_rate, free_pages, _) = run(&format!("memory-free-{r}"), None, "128");
        // The floor under the governor: one request at a time, and a cap
        // at the uncapped peak, so that the allocator gives freed memory
        // back at once as it does under the lower caps.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let at_peak = free_mb.ceil() as u64;
        let (floor_mib, _, floor_pages, _) = run(&format!("memory-floor-{r}"), Some(at_peak), "1");
        assert!(
            (floor_pages - free_pages).abs() < 0.5,
            "--concurrency 1 fetched {floor_pages} pages, 128 {free_pages}"
        );
        floors.push(floor_mib);
        // `rss_mb` is VmHWM in MiB, as the caps are.
        let free_mib = free_mb;
        peaks[0].push(free_mib);
        rates[0].push(free_rate);
        for (i, share) in [0.9, 0.8].into_iter().enumerate() {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let cap = (free_mib * share).floor() as u64;
            let (mb, rate, pages, summary) = run(&format!("memory-capped-{r}-{i}"), Some(cap), "128");
            let mib = mb;
            #[allow(clippy::cast_precision_loss)]
            let held = mib <= cap as f64 + slack_mib;
            within += u32::from(held);
            capped_runs += 1;
            println!(
                "  memory round {r}: uncapped {free_mib:.1} MiB, {free_rate:.0} pages/s; floor (--concurrency 1) {floor_mib:.1} MiB; --max-memory {cap}M: {mib:.1} MiB ({}), {rate:.0} pages/s, governor {}",
                if held { "within the cap".to_string() } else { format!("{:.1} MiB over", mib - cap as f64) },
                summary["governor"]
            );
            assert!((pages - free_pages).abs() < 0.5, "the capped crawl fetched {pages} pages, uncapped {free_pages}");
            peaks[i + 1].push(mib);
            rates[i + 1].push(rate);
            #[allow(clippy::cast_precision_loss)]
            over[i].push(mib / cap as f64);
        }
    }
    farm.stop();
    let s = "memory";
    table.add(s, "floor: peak RSS at --concurrency 1 (capped at the uncapped peak)", median(floors), "MiB");
    for (i, name) in ["uncapped", "capped at 90 % of the uncapped peak", "capped at 80 % of the uncapped peak"]
        .into_iter()
        .enumerate()
    {
        table.add(s, &format!("peak RSS, {name}"), median(peaks[i].clone()), "MiB");
        table.add(s, &format!("pages/s, {name}"), median(rates[i].clone()), "pages/s");
    }
    table.add(s, "peak over the cap, worst run, 90 % cap", max(&over[0]), "ratio");
    table.add(s, "peak over the cap, worst run, 80 % cap", max(&over[1]), "ratio");
    table.add(
        s,
        &format!("capped crawls within the cap (+ {slack_mib:.2} MiB), of {capped_runs}"),
        f64::from(within),
        "runs",
    );
}
