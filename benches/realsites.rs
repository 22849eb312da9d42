//! The real-site benchmark: documentation sites from Debian's archive served
//! by nginx on loopback (`scripts/realsites.sh` installs them), crawled by
//! layercrawl with its default noise filter and with `--denoise off`, and by
//! Scrapy, against an independent breadth-first walker's ground truth; then
//! the same corpus with problem pages beside it (a body that trickles until
//! the timeout, a `Retry-After: 5`, headers that never come, a 429).
//!
//! ```sh
//! cargo bench --bench realsites                  # ~15 min on 2 cores, Scrapy most of it
//! REALSITES_DEPTHS=3 REALSITES_PEER=0 cargo bench --bench realsites
//! REALSITES_DEPTHS=5 REALSITES_PEER=0 REALSITES_ROUNDS=5 REALSITES_BASELINE=BIN cargo bench --bench realsites
//! ```
//!
//! `REALSITES_TEXT=0` leaves out the text columns' rounds (see
//! [`text_columns`]); `REALSITES_BASELINE` adds a comparison build to them.
//!
//! Settings as the issue's comparison: 64 requests in flight, 16 per host,
//! no delay, breadth-first, robots.txt obeyed. Prints one table per depth
//! and writes everything to `target/bench-realsites.json`.

#[path = "common/measure.rs"]
mod measure;
#[path = "../tests/common/realsites.rs"]
mod realsites;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int32Type;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Value};

use measure::{last_json_line, peers_python, run_measured, Measured};
use realsites::{normalised, Corpus};

const BIN: &str = env!("CARGO_BIN_EXE_layercrawl");
const SETTINGS: [&str; 6] = ["--concurrency", "64", "--per-host", "16", "--delay", "0"];

/// One crawl's outcome: URLs with status 200, and the process figures.
struct Run {
    ok_urls: BTreeSet<String>,
    m: Measured,
    summary: Value,
    /// Bytes of the crawl's `doc` files (0 for Scrapy).
    doc_bytes: u64,
}

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
    // same way): its body trickles for 60 s, longer than the 30 s timeout.
    let farm = testweb::Farm::start_background(testweb::FarmConfig {
        sites: 1,
        pages: 1,
        faults: true,
        slow_ms: 60_000,
        listen: "127.0.0.1:0".parse().expect("addr"),
        ..testweb::FarmConfig::default()
    })
    .expect("test web");
    let corpus = Corpus::start(realsites::sites(false), Some(farm.addr()));
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = corpus.seeds();
    let problems: Vec<String> = ["/trickle", "/wait-then-ok", "/slow-headers", "/status/429"]
        .iter()
        .map(|p| format!("http://faults.test:{}{p}", corpus.port))
        .collect();
    let mut report = json!({ "sites": corpus.sites.iter().map(|s| json!({"name": s.name, "generator": s.generator, "package": s.package})).collect::<Vec<_>>() });
    for &depth in &depths {
        println!("\n== depth {depth}: walking the corpus for the ground truth");
        let truth = corpus.walk(&seeds, depth);
        println!("   {} HTML pages reachable", truth.len());
        let default = layercrawl(&corpus, tmp.path(), &seeds, depth, &[], &format!("default-{depth}"));
        let off = layercrawl(&corpus, tmp.path(), &seeds, depth, &["--denoise", "off"], &format!("off-{depth}"));
        let scrapy = peer.then(|| scrapy(&corpus, tmp.path(), &seeds, depth, &format!("scrapy-{depth}")));
        let mut table = Vec::new();
        println!("{:<12} {:>10} {:>18} {:>18} {:>18}", "site", "reachable", "default", "off", "Scrapy");
        for site in corpus.sites.iter().map(|s| Some(s.host())).chain([None]) {
            let in_site = |u: &String| {
                site.as_ref().is_none_or(|h| u.split('/').nth(2).is_some_and(|hp| hp.starts_with(h.as_str())))
            };
            let reachable: BTreeSet<&String> = truth.keys().filter(|u| in_site(u)).collect();
            let reached = |r: &BTreeSet<String>| reachable.iter().filter(|u| r.contains(**u)).count();
            let (d, o) = (reached(&default.ok_urls), reached(&off.ok_urls));
            let s = scrapy.as_ref().map(|s| reached(&s.ok_urls));
            let name = site.as_deref().map_or("all", |h| h.split('.').next().unwrap_or(h)).to_string();
            #[allow(clippy::cast_precision_loss)]
            let pct = |n: usize| 100.0 * n as f64 / reachable.len().max(1) as f64;
            println!(
                "{name:<12} {:>10} {:>9} ({:>5.1}%) {:>9} ({:>5.1}%) {:>18}",
                reachable.len(),
                d,
                pct(d),
                o,
                pct(o),
                s.map_or("-".to_string(), |s| format!("{s:>9} ({:>5.1}%)", pct(s)))
            );
            table.push(json!({ "site": name, "reachable": reachable.len(), "default": d, "off": o, "scrapy": s }));
        }
        #[allow(clippy::cast_precision_loss)]
        let all = truth.len().max(1) as f64;
        let row = |name: &str, r: &Run| {
            let pages = r.summary["fetched"].as_f64().unwrap_or(r.ok_urls.len() as f64);
            println!(
                "{name:<10} wall {:>7.2} s  peak RSS {:>6.0} MB  {:>7.0} pages/s  stragglers {}",
                r.m.wall,
                r.m.rss_mb,
                pages / r.m.wall,
                stragglers(&r.summary)
            );
            json!({ "wall": r.m.wall, "cpu": r.m.cpu, "rss_mb": r.m.rss_mb, "pages": pages, "stragglers": stragglers(&r.summary) })
        };
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
        let share = default.ok_urls.intersection(&off.ok_urls).filter(|u| truth.contains_key(*u)).count() as f64
            / off.ok_urls.iter().filter(|u| truth.contains_key(*u)).count().max(1) as f64;
        println!("default reaches {:.2} % of what off reaches ({} reachable)", share * 100.0, all);
        report[format!("depth_{depth}")] =
            json!({ "reachable": truth.len(), "sites": table, "runs": runs, "default_of_off": share });
    }
    let depth = depths.first().copied().unwrap_or(3);
    if std::env::var("REALSITES_TEXT").map_or(true, |v| v != "0") {
        report["text_columns"] = text_columns(&corpus, tmp.path(), &seeds, depth);
    }
    // Stragglers: the same crawl with the problem pages seeded beside it.
    println!("\n== depth {depth} with problem pages ({})", problems.join(" "));
    let mut with: Vec<String> = seeds.clone();
    with.extend(problems.iter().cloned());
    // Three pairs, in turn, so that the machine's drift hits both alike;
    // the ratio quoted is the median of the pairs' ratios.
    let mut pairs = Vec::new();
    for k in 0..3 {
        let clean = layercrawl(&corpus, tmp.path(), &seeds, depth, &[], &format!("clean-{k}"));
        let problem = layercrawl(&corpus, tmp.path(), &with, depth, &[], &format!("problems-{k}"));
        let secs = |r: &Run| -> Vec<String> {
            r.summary["layers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|l| format!("{:.2}", l["seconds"].as_f64().unwrap_or(0.0)))
                .collect()
        };
        println!(
            "pair {k}: without problems {:.2} s ({}), with {:.2} s ({}): {:.2}x; stragglers per layer {}",
            clean.m.wall,
            secs(&clean).join(" "),
            problem.m.wall,
            secs(&problem).join(" "),
            problem.m.wall / clean.m.wall,
            stragglers(&problem.summary)
        );
        pairs.push((clean, problem));
    }
    let mut ratios: Vec<f64> = pairs.iter().map(|(c, p)| p.m.wall / c.m.wall).collect();
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    let (clean, problem) = pairs.swap_remove(pairs.len() / 2);
    let pps = |r: &Run| r.summary["fetched"].as_f64().unwrap_or(0.0) / r.m.wall;
    println!("with / without problem pages, median of {} pairs: {median:.2}x", ratios.len());
    let mut p = json!({ "clean_wall": clean.m.wall, "problems_wall": problem.m.wall, "ratio_median": median, "ratios": ratios, "stragglers": stragglers(&problem.summary), "layers": problem.summary["layers"] });
    if peer {
        let s = scrapy(&corpus, tmp.path(), &with, depth, "scrapy-problems");
        let spps = s.summary["pages"].as_f64().unwrap_or(0.0) / s.m.wall;
        println!(
            "Scrapy with problems: {:.2} s, {spps:.0} pages/s; layercrawl {:.0} pages/s: {:.1}x",
            s.m.wall,
            pps(&problem),
            pps(&problem) / spps
        );
        p["scrapy_wall"] = json!(s.m.wall);
        p["layercrawl_over_scrapy_pages_per_s"] = json!(pps(&problem) / spps);
    }
    report["problems"] = p;
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-realsites.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report).expect("json")).expect("write the report");
    println!("\nwritten to {}", out.display());
}

/// What the two text columns cost on real pages: the crawl with both (the
/// default) against `--store-text main` and `--store-text visible`, and
/// against a comparison build when `REALSITES_BASELINE` names one (the code
/// before the main text, say), in turn, `REALSITES_ROUNDS` rounds (3);
/// medians of the rounds' ratios of crawler CPU per page to the default's,
/// and the `doc` bytes.
fn text_columns(corpus: &Corpus, tmp: &Path, seeds: &[String], depth: u32) -> Value {
    let rounds: usize = std::env::var("REALSITES_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3).max(1);
    println!("\n== depth {depth}: the text columns (--store-text), {rounds} rounds");
    let baseline = std::env::var("REALSITES_BASELINE").ok().map(PathBuf::from);
    let mut variants: Vec<(String, PathBuf, &[&str])> = vec![
        ("both".into(), PathBuf::from(BIN), &[]),
        ("main".into(), PathBuf::from(BIN), &["--store-text", "main"]),
        ("visible".into(), PathBuf::from(BIN), &["--store-text", "visible"]),
    ];
    if let Some(b) = baseline {
        assert!(b.is_file(), "REALSITES_BASELINE names {}, which is not a file", b.display());
        variants.push(("comparison".into(), b, &[]));
    }
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut bytes = vec![0u64; variants.len()];
    for k in 0..rounds {
        let runs: Vec<Run> = variants
            .iter()
            .map(|(name, bin, extra)| {
                layercrawl_with(bin, corpus, tmp, seeds, depth, extra, &format!("text-{name}-{k}"))
            })
            .collect();
        let per_page = |r: &Run| r.m.cpu / r.summary["fetched"].as_f64().unwrap_or(1.0).max(1.0);
        for (v, r) in runs.iter().enumerate() {
            cpu[v].push(per_page(r) / per_page(&runs[0]));
            bytes[v] = r.doc_bytes;
        }
        let figures: Vec<String> = variants
            .iter()
            .zip(&runs)
            .map(|((name, _, _), r)| {
                format!("{name} {:.2} ms CPU/page, doc {:.1} MB", per_page(r) * 1000.0, r.doc_bytes as f64 / 1e6)
            })
            .collect();
        println!("round {k}: {}", figures.join("; "));
    }
    let mut out = json!({});
    for (v, (name, _, _)) in variants.iter().enumerate() {
        cpu[v].sort_by(f64::total_cmp);
        let m = cpu[v][cpu[v].len() / 2];
        let b = bytes[v] as f64 / bytes[0].max(1) as f64;
        println!("{name:<10} crawler CPU per page / both: {m:.2}; doc bytes / both: {b:.2}");
        out[name.as_str()] = json!({ "cpu_per_page_over_both": m, "doc_bytes": bytes[v], "doc_bytes_over_both": b });
    }
    out
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

fn layercrawl(corpus: &Corpus, tmp: &Path, seeds: &[String], depth: u32, extra: &[&str], name: &str) -> Run {
    layercrawl_with(Path::new(BIN), corpus, tmp, seeds, depth, extra, name)
}

/// [`layercrawl`] by the binary `bin` (a comparison build).
fn layercrawl_with(
    bin: &Path,
    corpus: &Corpus,
    tmp: &Path,
    seeds: &[String],
    depth: u32,
    extra: &[&str],
    name: &str,
) -> Run {
    let seeds_file = tmp.join(format!("{name}.seeds"));
    std::fs::write(&seeds_file, seeds.join("\n")).expect("seeds");
    let data = tmp.join(name);
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--seeds"]).arg(&seeds_file).args(["--depth", &depth.to_string(), "--data"]).arg(&data);
    cmd.args(corpus.resolve_args()).args(["--resolve", &format!("faults.test=127.0.0.1:{}", corpus.port)]);
    cmd.args(["--allow-private", "--json", "--quiet"]).args(SETTINGS);
    cmd.args(extra);
    let m = run_measured(&mut cmd, &tmp.join(format!("{name}.out")), &tmp.join(format!("{name}.err")));
    assert!(m.ok, "layercrawl failed: {}", m.stderr_tail());
    let summary: Value = serde_json::from_str(&m.stdout).expect("summary JSON");
    let ok_urls = ok_urls(&data.join("doc"));
    let doc_bytes = parquet_files(&data.join("doc")).iter().filter_map(|f| f.metadata().ok()).map(|m| m.len()).sum();
    let _ = std::fs::remove_dir_all(&data);
    Run { ok_urls, m, summary, doc_bytes }
}

fn scrapy(corpus: &Corpus, tmp: &Path, seeds: &[String], depth: u32, name: &str) -> Run {
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
    let m = run_measured(&mut cmd, &tmp.join(format!("{name}.out")), &tmp.join(format!("{name}.err")));
    let summary =
        last_json_line(&m.stdout).unwrap_or_else(|| panic!("Scrapy printed no summary; its log: {}", m.stderr_tail()));
    let ok_urls = std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["status"] == 200)
        .filter_map(|v| normalised(v["url"].as_str()?))
        .collect();
    Run { ok_urls, m, summary, doc_bytes: 0 }
}

/// URLs with status 200 in a crawl's `doc` files.
fn ok_urls(doc: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in parquet_files(doc) {
        let file = std::fs::File::open(&f).expect("open");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file).expect("footer").build().expect("reader");
        for b in reader {
            let b = b.expect("batch");
            let url = b.column_by_name("url").expect("url").as_string::<i32>();
            let status = b.column_by_name("status").expect("status").as_primitive::<Int32Type>();
            for i in 0..b.num_rows() {
                if status.value(i) == 200 && !url.is_null(i) {
                    out.insert(url.value(i).to_string());
                }
            }
        }
    }
    out
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
