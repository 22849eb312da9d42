//! The real-site benchmark: does a crawl lose nothing within its depth, on
//! real documentation and on a host full of problem pages?
//!
//! The corpus is documentation from Debian's archive (`scripts/realsites.tsv`,
//! installed by `scripts/realsites.sh`): Sphinx, DocBook, Doxygen and
//! AsciiDoc sites, and three large ones (rustdoc, javadoc, BoostBook) with
//! some 35,000 pages within five links of their start pages, thousands of
//! rustdoc's four and five links deep; each site is served by nginx on its
//! own loopback address. Beside them, through the same nginx,
//! is `trouble.test` from the project's test web: 380 ordinary pages on one
//! host with an always-503 (`Retry-After: 5`), a body that trickles at 16
//! bytes a second, slow bodies, a 429 area, a redirect loop, and a 30 s
//! burst of 500s after which the server recovers.
//!
//! For each depth (3 and 5) the corpus and `trouble.test` are crawled by
//! layercrawl with its default noise filter, with `--denoise off`, and by
//! Scrapy (`benches/peers/scrapy_crawl.py`). It prints, per site and for
//! all of them:
//!
//! - the URLs reachable within the depth: for the corpus, HTML pages with
//!   status 200 found by an independent breadth-first walker
//!   (`scripts/bfs_walker.py`); for `trouble.test`, every URL of
//!   `testweb::trouble::reachable`;
//! - how many of them each crawl reached: status 200 on the corpus; on
//!   `trouble.test` any outcome at all (a `doc` row for layercrawl, a page or
//!   a failure record for Scrapy), since its problem pages end as errors,
//!   and on a second line, its pages that do serve 200, reached with 200;
//!   then a few of the URLs each crawl missed;
//! - the distinct contents kept: distinct `content_hash` values among the
//!   default crawl's 200 rows over those of `--denoise off`;
//! - wall time, peak RSS and pages per second of each crawl, default's wall
//!   over off's, and default's pages per second over Scrapy's;
//! - for each layercrawl crawl, the summary's `not_requested` (which must be
//!   0) and its number of layers (catch-up layers past the depth included).
//!
//! Then, at the first depth, the cost of the text columns (see
//! [`text_columns`]), and at each depth the cost of problem pages: three
//! pairs of default crawls of the corpus alone and of the corpus with
//! `trouble.test` and the test web's `faults.test` problem pages (a trickle
//! past the timeout, a `Retry-After`, headers that never come, a 429), the
//! median of the pairs' wall ratios, and (at the first depth) Scrapy on the
//! latter. Each pair has a third crawl, of the corpus with the same problem
//! pages but without `trouble.test`'s burst: the crawler's own cost of the
//! problem pages, apart from the 30 s in which that server answers nothing
//! but 500s, which no crawler can shorten (its pages can only be fetched
//! once it has recovered).
//!
//! Settings: 64 requests in flight, 16 per host, no delay, breadth-first,
//! robots.txt obeyed. Everything goes to `target/bench-realsites.json`.
//!
//! ```sh
//! scripts/realsites.sh                           # installs the corpus (apt-get; minutes, once)
//! cargo bench --bench realsites                  # depths 3 and 5: about 90 min on 2 cores, Scrapy most of it
//! REALSITES_DEPTHS=3 REALSITES_TEXT=0 cargo bench --bench realsites               # about 35 min
//! REALSITES_DEPTHS=3 REALSITES_PEER=0 REALSITES_TEXT=0 cargo bench --bench realsites  # about 12 min
//! REALSITES_DEPTHS=5 REALSITES_PEER=0 REALSITES_ROUNDS=5 REALSITES_BASELINE=BIN cargo bench --bench realsites
//! ```
//!
//! `REALSITES_WALL_PAIRS` sets how many default and `off` crawls give the
//! wall ratio, the median of their pairs (3; the first pair is the one of
//! the table). `REALSITES_DEPTHS` lists the depths (`3,5`); `REALSITES_PEER=0` leaves
//! Scrapy out; `REALSITES_TEXT=0` leaves out the text columns' rounds;
//! `REALSITES_ROUNDS` and `REALSITES_BASELINE` set those rounds (see
//! [`text_columns`]); `REALSITES_PAIRS=0` leaves out the problem pairs,
//! `REALSITES_TABLES=0` everything but them;
//! `REALSITES_TABLE_BURST=0` crawls the tables with `trouble.test`'s burst
//! left out, for every crawler alike (the seconds it lasts there; 30 by
//! default): the tables' walls then measure the crawlers, not the 30 s in
//! which no crawler can fetch that host's pages (the pairs keep theirs);
//! `REALSITES_KEEP=DIR` keeps each crawl's data folder in `DIR` (on the
//! temporary folder's file system) for a closer look. Scrapy runs from `target/peers-venv`, which
//! `benches/peers/setup.sh` makes when it is missing.

#[path = "common/measure.rs"]
mod measure;
#[path = "realsites/problems.rs"]
mod problems;
#[path = "../tests/e2e/common/realsites.rs"]
mod realsites;
#[path = "realsites/text_columns.rs"]
mod text_columns;

use problems::problem_pairs;
use text_columns::text_columns;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt64Type};
use arrow_array::Array;
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Value};

use measure::{last_json_line, peers_python, run_measured, Measured};
use realsites::{normalised, Corpus};
use testweb::trouble;

const BIN: &str = env!("CARGO_BIN_EXE_layercrawl");
const SETTINGS: [&str; 6] = ["--concurrency", "64", "--per-host", "16", "--delay", "0"];
/// `trouble.test` as the crawlers see it (nginx behind the resolve rule or
/// the proxy passes it on to the test web), and its ordinary pages.
const TROUBLE: &str = "http://trouble.test";
const TROUBLE_PAGES: u32 = 380;
/// How long `trouble.test`'s burst of 500s lasts.
const BURST: Duration = Duration::from_secs(30);

/// One crawl's outcome: every URL it ended with an outcome for, and the
/// process figures.
struct Run {
    /// URLs with status 200.
    ok_urls: BTreeSet<String>,
    /// Every URL with a `doc` row (layercrawl) or a record (Scrapy: a page
    /// or a failure), with its status (0: no response).
    rows: BTreeMap<String, i32>,
    /// Distinct `content_hash` values among the 200 rows (0 for Scrapy).
    distinct: usize,
    m: Measured,
    summary: Value,
    /// Bytes of the crawl's `doc` files (0 for Scrapy).
    doc_bytes: u64,
}

impl Run {
    fn new(rows: BTreeMap<String, i32>, distinct: usize, m: Measured, summary: Value, doc_bytes: u64) -> Run {
        let ok_urls = rows.iter().filter(|(_, s)| **s == 200).map(|(u, _)| u.clone()).collect();
        Run { ok_urls, rows, distinct, m, summary, doc_bytes }
    }

    /// What the crawl ended `u` with, for a line about a URL it missed.
    fn outcome(&self, u: &str) -> String {
        self.rows.get(u).map_or_else(|| "no row".to_string(), |s| format!("status {s}"))
    }
}

/// Where the crawls go: the corpus behind nginx, the test web behind that,
/// a scratch folder.
#[derive(Clone, Copy)]
struct Web<'a> {
    corpus: &'a Corpus,
    farm: &'a testweb::Farm,
    tmp: &'a Path,
}

/// One row of a site table: which URLs count, and what counts as reached.
struct SiteRows {
    name: String,
    reachable: Vec<String>,
    /// `true`: any outcome counts (`trouble.test`); `false`: status 200.
    any_row: bool,
}

#[allow(clippy::too_many_lines)] // one linear script, section by section
fn main() {
    let depths: Vec<u32> = std::env::var("REALSITES_DEPTHS")
        .unwrap_or_else(|_| "3,5".into())
        .split(',')
        .filter_map(|d| d.trim().parse().ok())
        .collect();
    let peer = std::env::var("REALSITES_PEER").map_or(true, |v| v != "0");
    realsites::install(false);
    // The problem pages come from the project's own test web, passed through
    // nginx's shared address with the corpus (so both crawlers reach them the
    // same way): faults.test's body trickles for 60 s, longer than the 30 s
    // timeout; trouble.test is the host of problem pages beside ordinary ones.
    let farm = testweb::Farm::start_background(testweb::FarmConfig {
        sites: 1,
        pages: 1,
        faults: true,
        slow_ms: 60_000,
        trouble_pages: TROUBLE_PAGES,
        trouble_burst_ms: u64::try_from(BURST.as_millis()).expect("ms"),
        listen: "127.0.0.1:0".parse().expect("addr"),
        ..testweb::FarmConfig::default()
    })
    .expect("test web");
    let corpus = Corpus::start(realsites::sites(false), Some(farm.addr()));
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = Web { corpus: &corpus, farm: &farm, tmp: tmp.path() };
    let seeds = corpus.seeds();
    let mut with_trouble = seeds.clone();
    with_trouble.push(format!("{TROUBLE}/"));
    let problems: Vec<String> = ["/trickle", "/wait-then-ok", "/slow-headers", "/status/429"]
        .iter()
        .map(|p| format!("http://faults.test:{}{p}", corpus.port))
        .collect();
    let mut report = json!({ "sites": corpus.sites.iter().map(|s| json!({"name": s.name, "generator": s.generator, "package": s.package})).collect::<Vec<_>>() });
    // `REALSITES_TABLES=0`: the problem pairs only (no walker, no tables).
    let tables = std::env::var("REALSITES_TABLES").map_or(true, |v| v != "0");
    let table_burst =
        std::env::var("REALSITES_TABLE_BURST").ok().and_then(|s| s.parse().ok()).map_or(BURST, Duration::from_secs);
    report["table_burst_seconds"] = json!(table_burst.as_secs());
    farm.set_trouble_burst(table_burst);
    for &depth in depths.iter().filter(|_| tables) {
        println!("\n== depth {depth}: walking the corpus for the ground truth");
        // The walker walks the corpus only: trouble.test's truth is the test
        // web's own (the walker would meet its burst, and leave it spent).
        let truth = corpus.walk(&seeds, depth);
        let trouble_truth: Vec<String> =
            trouble::reachable(TROUBLE, TROUBLE_PAGES, depth).iter().filter_map(|u| normalised(u)).collect();
        println!(
            "   {} HTML pages reachable on the corpus, {} URLs on trouble.test (its burst: {} s)",
            truth.len(),
            trouble_truth.len(),
            table_burst.as_secs()
        );
        let default = layercrawl(web, &with_trouble, depth, &[], &format!("default-{depth}"));
        let off = layercrawl(web, &with_trouble, depth, &["--denoise", "off"], &format!("off-{depth}"));
        let scrapy = peer.then(|| scrapy(web, &with_trouble, depth, &format!("scrapy-{depth}")));
        let mut rows: Vec<SiteRows> = corpus
            .sites
            .iter()
            .map(|s| {
                let h = s.host();
                SiteRows {
                    name: s.name.clone(),
                    reachable: truth
                        .keys()
                        .filter(|u| u.split('/').nth(2).is_some_and(|hp| hp.split(':').next() == Some(h.as_str())))
                        .cloned()
                        .collect(),
                    any_row: false,
                }
            })
            .collect();
        rows.push(SiteRows { name: "trouble".into(), reachable: trouble_truth.clone(), any_row: true });
        // Of trouble.test, the pages that serve 200 (all but its always-503,
        // its trickle past the timeout and its redirect loop): reached with 200.
        let bad: Vec<String> = trouble::PROBLEMS.iter().filter_map(|p| normalised(&format!("{TROUBLE}{p}"))).collect();
        rows.push(SiteRows {
            name: "trouble 200".into(),
            reachable: trouble_truth.iter().filter(|u| !bad.contains(u)).cloned().collect(),
            any_row: false,
        });
        let mut table = Vec::new();
        let mut missed = json!({});
        println!("{:<12} {:>10} {:>18} {:>18} {:>18}", "site", "reachable", "default", "off", "Scrapy");
        let mut all = (0usize, 0usize, 0usize, 0usize);
        let runs_named: Vec<(&str, &Run)> =
            [("default", Some(&default)), ("off", Some(&off)), ("Scrapy", scrapy.as_ref())]
                .into_iter()
                .filter_map(|(n, r)| Some((n, r?)))
                .collect();
        let mut misses: Vec<String> = Vec::new();
        for site in &rows {
            let hit = |r: &Run, u: &String| if site.any_row { r.rows.contains_key(u) } else { r.ok_urls.contains(u) };
            let reached = |r: &Run| site.reachable.iter().filter(|u| hit(r, u)).count();
            let (d, o) = (reached(&default), reached(&off));
            let s = scrapy.as_ref().map(reached);
            if site.name != "trouble 200" {
                all.0 += site.reachable.len();
                all.1 += d;
                all.2 += o;
                all.3 += s.unwrap_or(0);
            }
            print_site(&site.name, site.reachable.len(), d, o, s);
            table.push(
                json!({ "site": site.name, "reachable": site.reachable.len(), "default": d, "off": o, "scrapy": s }),
            );
            for (name, r) in &runs_named {
                let lost: Vec<&String> = site.reachable.iter().filter(|u| !hit(r, u)).collect();
                if lost.is_empty() {
                    continue;
                }
                let examples: Vec<String> = lost.iter().take(3).map(|u| format!("{u} ({})", r.outcome(u))).collect();
                misses.push(format!("{name} misses {} on {}: {}", lost.len(), site.name, examples.join(", ")));
                missed[*name][site.name.as_str()] = json!({ "count": lost.len(), "examples": examples });
            }
        }
        print_site("all", all.0, all.1, all.2, scrapy.as_ref().map(|_| all.3));
        table.push(json!({ "site": "all", "reachable": all.0, "default": all.1, "off": all.2, "scrapy": scrapy.as_ref().map(|_| all.3) }));
        for m in &misses {
            println!("  {m}");
        }
        let mut runs = json!({ "default": row("default", &default), "off": row("off", &off) });
        if let Some(s) = &scrapy {
            let pages = s.summary["pages"].as_f64().unwrap_or(0.0);
            println!(
                "{:<10} wall {:>7.2} s  peak RSS {:>6.0} MB  {:>7.0} pages/s",
                "Scrapy",
                s.m.wall,
                s.m.rss_mb,
                pages / s.m.wall
            );
            runs["scrapy"] = json!({ "wall": s.m.wall, "cpu": s.m.cpu, "rss_mb": s.m.rss_mb, "pages": pages });
        }
        #[allow(clippy::cast_precision_loss)]
        let kept = default.distinct as f64 / off.distinct.max(1) as f64;
        println!(
            "distinct contents kept (200 rows' content_hash), default / off: {} / {} = {kept:.3}",
            default.distinct, off.distinct
        );
        // The wall ratio is the median of `REALSITES_WALL_PAIRS` pairs (3):
        // trouble.test's recovery sets both crawls' walls, and it moves by
        // seconds from one run to the next.
        let wall_pairs: usize =
            std::env::var("REALSITES_WALL_PAIRS").ok().and_then(|n| n.parse().ok()).unwrap_or(3).max(1);
        let mut wall_ratios = vec![default.m.wall / off.m.wall];
        for k in 1..wall_pairs {
            let d = layercrawl(web, &with_trouble, depth, &[], &format!("default-{depth}-{k}"));
            let o = layercrawl(web, &with_trouble, depth, &["--denoise", "off"], &format!("off-{depth}-{k}"));
            println!("wall pair {k}: default {:.2} s, off {:.2} s: {:.2}x", d.m.wall, o.m.wall, d.m.wall / o.m.wall);
            wall_ratios.push(d.m.wall / o.m.wall);
        }
        let mut sorted = wall_ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let wall_ratio = sorted[sorted.len() / 2];
        print!("wall, default / off, median of {} pairs: {wall_ratio:.2}x", wall_ratios.len());
        let pps_ratio =
            scrapy.as_ref().map(|s| pages_per_s(&default) / (s.summary["pages"].as_f64().unwrap_or(0.0) / s.m.wall));
        match pps_ratio {
            Some(r) => println!("; pages/s, layercrawl default / Scrapy: {r:.2}x"),
            None => println!(),
        }
        #[allow(clippy::cast_precision_loss)]
        let share = default.ok_urls.intersection(&off.ok_urls).filter(|u| truth.contains_key(*u)).count() as f64
            / off.ok_urls.iter().filter(|u| truth.contains_key(*u)).count().max(1) as f64;
        println!("default reaches {:.2} % of the corpus pages off reaches", share * 100.0);
        report[format!("depth_{depth}")] = json!({
            "reachable": truth.len(),
            "trouble_reachable": trouble_truth.len(),
            "sites": table,
            "missed": missed,
            "runs": runs,
            "default_of_off": share,
            "distinct_kept": { "default": default.distinct, "off": off.distinct, "ratio": kept },
            "wall_default_over_off": wall_ratio,
            "wall_ratios": wall_ratios,
            "pages_per_s_default_over_scrapy": pps_ratio,
        });
    }
    farm.set_trouble_burst(BURST);
    let depth = depths.first().copied().unwrap_or(3);
    if std::env::var("REALSITES_TEXT").map_or(true, |v| v != "0") {
        report["text_columns"] = text_columns(web, &seeds, depth);
    }
    if std::env::var("REALSITES_PAIRS").is_ok_and(|v| v == "0") {
        return finish(&report);
    }
    let mut with: Vec<String> = with_trouble.clone();
    with.extend(problems.iter().cloned());
    let pair_depths = if depths.is_empty() { vec![3] } else { depths.clone() };
    for (i, &depth) in pair_depths.iter().enumerate() {
        // Scrapy on the problem crawl at the first depth only (at depth 5
        // it alone would take half an hour).
        report[format!("problems_{depth}")] = problem_pairs(web, &seeds, &with, depth, peer && i == 0);
    }
    finish(&report);
}

/// Writes the report.
fn finish(report: &Value) {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-realsites.json");
    std::fs::write(&out, serde_json::to_string_pretty(report).expect("json")).expect("write the report");
    println!("\nwritten to {}", out.display());
}

/// One line of a site table: reachable, and reached by each crawl.
fn print_site(name: &str, reachable: usize, d: usize, o: usize, s: Option<usize>) {
    #[allow(clippy::cast_precision_loss)]
    let pct = |n: usize| 100.0 * n as f64 / reachable.max(1) as f64;
    println!(
        "{name:<12} {reachable:>10} {d:>9} ({:>5.1}%) {o:>9} ({:>5.1}%) {:>18}",
        pct(d),
        pct(o),
        s.map_or("-".to_string(), |s| format!("{s:>9} ({:>5.1}%)", pct(s)))
    );
}

/// Pages per second of a layercrawl crawl (`doc` rows over wall time).
fn pages_per_s(r: &Run) -> f64 {
    r.summary["fetched"].as_f64().unwrap_or(0.0) / r.m.wall
}

/// One layercrawl crawl's figures line, and its JSON.
fn row(name: &str, r: &Run) -> Value {
    let pages = r.summary["fetched"].as_f64().unwrap_or(0.0);
    let layers = r.summary["layers"].as_array().map_or(0, Vec::len);
    let not_requested = r.summary["not_requested"].as_u64();
    println!(
        "{name:<10} wall {:>7.2} s  peak RSS {:>6.0} MB  {:>7.0} pages/s  layers {layers}  not requested {}{}  stragglers {}",
        r.m.wall,
        r.m.rss_mb,
        pages / r.m.wall,
        not_requested.map_or("?".to_string(), |n| n.to_string()),
        if not_requested == Some(0) { "" } else { " (should be 0)" },
        stragglers(&r.summary)
    );
    json!({ "wall": r.m.wall, "cpu": r.m.cpu, "rss_mb": r.m.rss_mb, "pages": pages, "layers": layers,
            "not_requested": r.summary["not_requested"], "not_requested_by": r.summary["not_requested_by"],
            "distinct_contents": r.distinct, "stragglers": stragglers(&r.summary) })
}

/// Stragglers per layer, from a summary.
fn stragglers(summary: &Value) -> String {
    let per: Vec<String> = summary["layers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| l["stragglers"].as_u64().unwrap_or(0).to_string())
        .collect();
    per.join("/")
}

fn layercrawl(web: Web, seeds: &[String], depth: u32, extra: &[&str], name: &str) -> Run {
    layercrawl_with(Path::new(BIN), web, seeds, depth, extra, name)
}

/// [`layercrawl`] by the binary `bin` (a comparison build).
fn layercrawl_with(bin: &Path, web: Web, seeds: &[String], depth: u32, extra: &[&str], name: &str) -> Run {
    let (corpus, tmp) = (web.corpus, web.tmp);
    let seeds_file = tmp.join(format!("{name}.seeds"));
    std::fs::write(&seeds_file, seeds.join("\n")).expect("seeds");
    let data = tmp.join(name);
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--seeds"]).arg(&seeds_file).args(["--depth", &depth.to_string(), "--data"]).arg(&data);
    cmd.args(corpus.resolve_args());
    for host in ["faults.test", "trouble.test"] {
        cmd.args(["--resolve", &format!("{host}=127.0.0.1:{}", corpus.port)]);
    }
    cmd.args(["--allow-private", "--json", "--quiet"]).args(SETTINGS);
    cmd.args(extra);
    // Each crawl meets the test web as new: trouble.test's burst to come, a
    // full bucket, faults.test's once-only answers re-armed.
    web.farm.reset_stats();
    let m = run_measured(&mut cmd, &tmp.join(format!("{name}.out")), &tmp.join(format!("{name}.err")));
    assert!(m.ok, "layercrawl failed: {}", m.stderr_tail());
    let summary: Value = serde_json::from_str(&m.stdout).expect("summary JSON");
    // Read before the data folder goes.
    let (rows, distinct) = doc_rows(&data.join("doc"));
    let doc_bytes = parquet_files(&data.join("doc")).iter().filter_map(|f| f.metadata().ok()).map(|m| m.len()).sum();
    match std::env::var_os("REALSITES_KEEP") {
        // Kept for a closer look (a rename: same file system as the tempdir).
        Some(keep) => {
            let to = Path::new(&keep).join(name);
            let _ = std::fs::remove_dir_all(&to);
            std::fs::create_dir_all(Path::new(&keep)).expect("REALSITES_KEEP folder");
            std::fs::rename(&data, &to).expect("REALSITES_KEEP must be on the temporary folder's file system");
        }
        None => {
            let _ = std::fs::remove_dir_all(&data);
        }
    }
    Run::new(rows, distinct, m, summary, doc_bytes)
}

fn scrapy(web: Web, seeds: &[String], depth: u32, name: &str) -> Run {
    let (corpus, tmp) = (web.corpus, web.tmp);
    let seeds_file = tmp.join(format!("{name}.seeds"));
    std::fs::write(&seeds_file, seeds.join("\n")).expect("seeds");
    let out = tmp.join(name);
    let mut cmd = Command::new(peers_python());
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/scrapy_crawl.py"))
        .arg("--seeds")
        .arg(&seeds_file)
        .args([
            "--proxy",
            &corpus.proxy(),
            "--depth",
            &depth.to_string(),
            "--per-host",
            "16",
            "--concurrency",
            "64",
            "--delay-ms",
            "0",
        ])
        .arg("--out")
        .arg(&out);
    web.farm.reset_stats();
    let m = run_measured(&mut cmd, &tmp.join(format!("{name}.out")), &tmp.join(format!("{name}.err")));
    let summary =
        last_json_line(&m.stdout).unwrap_or_else(|| panic!("Scrapy printed no summary; its log: {}", m.stderr_tail()));
    // One record a URL: a page (with its status) or a failure (status null
    // when no response came); a 200 wins over another record of the URL.
    let mut rows = BTreeMap::new();
    for v in std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        let Some(url) = v["url"].as_str().and_then(normalised) else { continue };
        let status = v["status"].as_i64().and_then(|s| i32::try_from(s).ok()).unwrap_or(0);
        add_row(&mut rows, url, status);
    }
    Run::new(rows, 0, m, summary, 0)
}

/// Records `url`'s outcome; a 200 wins over another outcome of the same URL.
fn add_row(rows: &mut BTreeMap<String, i32>, url: String, status: i32) {
    let s = rows.entry(url).or_insert(status);
    if status == 200 {
        *s = 200;
    }
}

/// Every URL of a crawl's `doc` files with its status, and the number of
/// distinct `content_hash` values among the rows with status 200.
fn doc_rows(doc: &Path) -> (BTreeMap<String, i32>, usize) {
    let mut rows = BTreeMap::new();
    let mut hashes = BTreeSet::new();
    for f in parquet_files(doc) {
        let file = std::fs::File::open(&f).expect("open");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).expect("footer").build().expect("reader");
        for b in reader {
            let b = b.expect("batch");
            let url = b.column_by_name("url").expect("url").as_string::<i32>();
            let status = b.column_by_name("status").expect("status").as_primitive::<Int32Type>();
            let hash = b.column_by_name("content_hash").expect("content_hash");
            // Int64 (the hash's bits) now; UInt64 in files of older builds.
            let hash_at = |i: usize| -> Option<u64> {
                if hash.is_null(i) {
                    return None;
                }
                match hash.data_type() {
                    DataType::Int64 => {
                        Some(u64::from_ne_bytes(hash.as_primitive::<Int64Type>().value(i).to_ne_bytes()))
                    }
                    DataType::UInt64 => Some(hash.as_primitive::<UInt64Type>().value(i)),
                    _ => None,
                }
            };
            for i in 0..b.num_rows() {
                if url.is_null(i) {
                    continue;
                }
                let s = status.value(i);
                if s == 200 {
                    if let Some(h) = hash_at(i) {
                        hashes.insert(h);
                    }
                }
                add_row(&mut rows, url.value(i).to_string(), s);
            }
        }
    }
    (rows, hashes.len())
}

fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(parquet_files(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out
}
