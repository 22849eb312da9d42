//! The `render` scenario: the same 450 pages (the test web's script-built
//! applications, `--apps on`: 50 shells and their 400 item pages) fetched
//! plain (`--render never`) and rendered in headless Chromium (`--render
//! always`), in turn, pair by pair: rendered pages per second and per CPU
//! second against plain fetches (docs/src/rendering.md).
//!
//! Chromium's processes are not the crawler's to account for, so CPU is
//! the whole machine's during the crawl (`/proc/stat`), less the test
//! web's own.

use std::path::Path;

use super::{crawl, env_u32, median, FarmProcess, Table};

/// User, nice, system, irq and softirq time of the whole machine, seconds.
fn machine_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let line = stat.lines().next().unwrap_or("");
    let f: Vec<f64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    [0, 1, 2, 5, 6].iter().filter_map(|&i| f.get(i)).sum::<f64>() / hz
}

pub(super) fn render(tmp: &Path, table: &mut Table) {
    if !layercrawl::fetch::render::BUILT {
        println!("render: skipped, this build has no \"render\" feature (cargo bench --features render --bench suite)");
        return;
    }
    let pairs = env_u32("SUITE_RUNS", 3).max(1);
    let chromium = std::process::Command::new("bash")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/chromium.sh"))
        .output()
        .expect("scripts/chromium.sh");
    let chromium = String::from_utf8(chromium.stdout).expect("path").trim().to_string();
    let farm = FarmProcess::start(&["--sites", "50", "--pages", "20", "--apps", "on"], 50);
    let urls: Vec<String> = farm
        .seeds
        .iter()
        .flat_map(|home| {
            let base = home.trim_end_matches('/').to_string();
            std::iter::once(format!("{base}/app/")).chain((1..=8).map(move |i| format!("{base}/app/item/{i}")))
        })
        .collect();
    let seeds = tmp.join("render-seeds.txt");
    std::fs::write(&seeds, urls.join("\n")).expect("seeds");
    let run = |data: &Path, mode: &str| {
        let mut a = farm.crawl_args(&seeds, data, 0);
        a.extend(["--delay", "0", "--delay-factor", "0", "--per-host", "2", "--partitions", "4"].map(String::from));
        a.extend(["--render".to_string(), mode.to_string(), "--chromium".to_string(), chromium.clone()]);
        let (machine, web) = (machine_cpu(), farm.cpu_seconds());
        let c = crawl(&a);
        let cpu = (machine_cpu() - machine) - (farm.cpu_seconds() - web);
        let _ = std::fs::remove_dir_all(data);
        (c, cpu)
    };
    let (mut plain_rate, mut render_rate, mut plain_cpu, mut render_cpu) = (vec![], vec![], vec![], vec![]);
    let pages = urls.len() as f64;
    for pair in 0..pairs {
        let (plain, p_cpu) = run(&tmp.join(format!("render-never-{pair}")), "never");
        let (rendered, r_cpu) = run(&tmp.join(format!("render-always-{pair}")), "always");
        let fetched = plain.summary["layers"][0]["ok"].as_f64().unwrap_or(0.0);
        assert!(fetched >= pages * 0.99, "{fetched} of {pages} pages fetched: {}", plain.summary);
        let n = rendered.summary["layers"][0]["rendered"].as_f64().unwrap_or(0.0);
        assert!(n >= pages * 0.99, "{n} of {pages} pages rendered: {}", rendered.summary);
        println!(
            "  render pair {pair}: plain {pages} pages in {:.2} s, {p_cpu:.1} CPU s; rendered {n} in {:.1} s, {r_cpu:.1} CPU s (crawler and Chromium)",
            plain.wall, rendered.wall
        );
        plain_rate.push(pages / plain.wall);
        render_rate.push(n / rendered.wall);
        plain_cpu.push(pages / p_cpu.max(0.01));
        render_cpu.push(n / r_cpu.max(0.01));
    }
    let s = "render";
    table.add(s, "pages (50 script shells, 400 plain pages)", pages, "pages");
    table.add(s, "plain fetches", median(plain_rate.clone()), "pages/s");
    table.add(s, "rendered in Chromium (4 tabs)", median(render_rate.clone()), "pages/s");
    table.add(s, "plain fetches, per CPU second", median(plain_cpu.clone()), "pages/CPU s");
    table.add(s, "rendered, per CPU second (crawler and Chromium)", median(render_cpu.clone()), "pages/CPU s");
    let ratios: Vec<f64> = plain_cpu.iter().zip(&render_cpu).map(|(p, r)| p / r).collect();
    table.add(s, "CPU per page, rendered / plain (median of pairs)", median(ratios), "ratio");
    farm.stop();
}
