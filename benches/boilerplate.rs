//! Cross-page boilerplate on the real-site corpus: `cargo bench --bench
//! boilerplate`.
//!
//! The corpus (`scripts/realsites.tsv`, installed by `scripts/realsites.sh`,
//! each site served by nginx on loopback) is crawled to depth 3, at most 400
//! pages per host and layer, with `--denoise off` (so that both crawls fetch
//! the same pages), once with `--site-boilerplate off` and once with `on`,
//! alternately for `BOILERPLATE_ROUNDS` rounds (default 3). It prints:
//!
//! - per site, the pages of layers 2 and 3 (the layers that have a table
//!   learned from earlier ones), how many had their main text trimmed, the
//!   lines trimmed and the most trimmed line;
//! - on the hand-labelled sample `benches/boilerplate/labels.toml` (pages
//!   of layers 2 and 3, labelled by reading them: lines of content, which a
//!   main text must keep, and lines of the sites' templates, which it must
//!   not have), the content lines kept and the template lines left, off and
//!   on;
//! - the cost: the crawl's CPU seconds per 1,000 pages off and on, medians
//!   over the rounds, and their ratio pair by pair.

#[path = "common/measure.rs"]
mod measure;
#[path = "../tests/e2e/common/realsites.rs"]
mod realsites;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::Deserialize;

use measure::run_measured;
use realsites::Corpus;

const BIN: &str = env!("CARGO_BIN_EXE_layercrawl");

#[derive(Deserialize)]
struct Labels {
    page: Vec<Label>,
}

#[derive(Deserialize)]
struct Label {
    url: String,
    content: Vec<String>,
    boilerplate: Vec<String>,
}

/// A `doc` row's host, layer and main text, by URL.
type MainTexts = BTreeMap<String, (String, i32, String)>;

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let rounds: usize = std::env::var("BOILERPLATE_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(3).max(1);
    realsites::install(false);
    let corpus = Corpus::start(realsites::sites(false), None);
    let seeds_file = corpus.dir.path().join("seeds.txt");
    std::fs::write(&seeds_file, corpus.seeds().join("\n")).expect("seeds");
    let crawl = |switch: &str, round: usize| {
        let data = corpus.dir.path().join(format!("{switch}-{round}"));
        let mut cmd = Command::new(BIN);
        cmd.args(["run", "--seeds"]).arg(&seeds_file).args(["--depth", "3", "--data"]).arg(&data);
        cmd.args(corpus.resolve_args());
        cmd.args(["--allow-private", "--json", "--quiet", "--denoise", "off", "--max-pages-per-host", "400"]);
        cmd.args(["--concurrency", "64", "--per-host", "16", "--delay", "0", "--site-boilerplate", switch]);
        let dir = corpus.dir.path();
        let m = run_measured(&mut cmd, &dir.join(format!("{switch}.out")), &dir.join(format!("{switch}.err")));
        assert!(m.ok, "the crawl failed: {}", m.stderr_tail());
        let summary: serde_json::Value = serde_json::from_str(&m.stdout).expect("the --json summary");
        let pages = summary["fetched"].as_f64().expect("fetched");
        eprintln!(
            "round {round}, --site-boilerplate {switch}: {pages} pages, {:.1} s CPU, {:.1} s wall",
            m.cpu, m.wall
        );
        (m.cpu / pages * 1000.0, data)
    };
    let (mut off_cost, mut on_cost, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    for round in 0..rounds {
        // Alternate which goes first, so that a drift of the machine's speed
        // weighs on both.
        let ((a, off_data), (b, on_data)) = if round % 2 == 0 {
            let off = crawl("off", round);
            (off, crawl("on", round))
        } else {
            let on = crawl("on", round);
            (crawl("off", round), on)
        };
        off_cost.push(a);
        on_cost.push(b);
        ratios.push(b / a);
        last = Some((off_data, on_data));
    }
    let (off_data, on_data) = last.expect("one round");
    let (off, on) = (main_texts(&off_data.join("doc")), main_texts(&on_data.join("doc")));

    println!("\n## Cross-page boilerplate on the real-site corpus (depth 3, <= 400 pages per host and layer)\n");
    println!("| site | pages in layers 2-3 | trimmed | lines trimmed | most trimmed line |");
    println!("|---|---:|---:|---:|---|");
    let mut per_site: BTreeMap<String, (usize, usize, usize, BTreeMap<String, usize>)> = BTreeMap::new();
    for (url, (host, layer, text)) in &off {
        let Some((_, _, with)) = on.get(url) else { continue };
        if *layer < 2 {
            assert_eq!(with, text, "{url}: layer {layer} has nothing learned before it");
            continue;
        }
        let site = per_site.entry(host.clone()).or_default();
        site.0 += 1;
        if with != text {
            site.1 += 1;
            let kept: BTreeSet<&str> = with.lines().collect();
            for line in text.lines().filter(|l| !kept.contains(l) && !l.trim().is_empty()) {
                site.2 += 1;
                *site.3.entry(line.chars().take(60).collect()).or_default() += 1;
            }
        }
    }
    for (host, (pages, trimmed, lines, which)) in &per_site {
        let top = which.iter().max_by_key(|(_, n)| **n).map_or(String::new(), |(l, n)| format!("`{l}` ({n})"));
        println!("| {host} | {pages} | {trimmed} | {lines} | {top} |");
    }

    let labels: Labels = toml::from_str(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/boilerplate/labels.toml"))
            .expect("labels.toml"),
    )
    .expect("labels.toml parses");
    println!("\n## The hand-labelled sample (benches/boilerplate/labels.toml)\n");
    println!("| | pages | content lines kept | template lines left |");
    println!("|---|---:|---:|---:|");
    for (name, texts) in [("--site-boilerplate off", &off), ("--site-boilerplate on", &on)] {
        let (mut pages, mut content, mut kept, mut template, mut left) = (0, 0, 0, 0, 0);
        for l in &labels.page {
            let Some((_, _, text)) = texts.get(&l.url) else {
                eprintln!("not in the crawl: {}", l.url);
                continue;
            };
            pages += 1;
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            content += l.content.len();
            for c in &l.content {
                if lines.iter().any(|x| x.starts_with(c.as_str())) {
                    kept += 1;
                } else {
                    eprintln!("{name}: {}: content line missing: {c}", l.url);
                }
            }
            template += l.boilerplate.len();
            left += l.boilerplate.iter().filter(|b| lines.contains(&b.as_str())).count();
        }
        println!("| {name} | {pages} | {kept} of {content} | {left} of {template} |");
    }

    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("\n## Cost ({rounds} rounds, medians)\n");
    println!(
        "CPU per 1,000 pages: off {:.2} s, on {:.2} s; on/off pair by pair: {:.3} (min {:.3}, max {:.3})",
        median(&mut off_cost),
        median(&mut on_cost),
        median(&mut ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max)
    );
}

/// `url` without its port: the corpus's nginx listens on a free port, the
/// labels name pages without one.
fn without_port(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let host =
        authority
            .rsplit_once(':')
            .map_or(authority, |(h, p)| if p.bytes().all(|b| b.is_ascii_digit()) { h } else { authority });
    format!("{scheme}://{host}{path}")
}

/// Every `doc` row with a main text: host, layer, main text, by URL
/// (without its port).
fn main_texts(doc: &Path) -> MainTexts {
    let mut out = MainTexts::new();
    let mut files = Vec::new();
    for layer in std::fs::read_dir(doc).expect("doc/").flatten() {
        for f in std::fs::read_dir(layer.path()).expect("layer").flatten() {
            if f.path().extension().is_some_and(|e| e == "parquet") {
                files.push((layer.file_name().to_string_lossy().to_string(), f.path()));
            }
        }
    }
    for (layer, f) in files {
        let layer: i32 = layer.trim_start_matches("layer=").parse().expect("layer=L");
        let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&f).expect("open"))
            .expect("footer")
            .build()
            .expect("reader");
        for b in reader {
            let b = b.expect("batch");
            let url = b.column_by_name("url").expect("url").as_string::<i32>();
            let host = b.column_by_name("host").expect("host").as_string::<i32>();
            let status = b.column_by_name("status").expect("status").as_primitive::<Int32Type>();
            let main = b.column_by_name("main_text").expect("main_text").as_string::<i32>();
            for i in 0..b.num_rows() {
                if status.value(i) == 200 && !main.is_null(i) {
                    let key = without_port(url.value(i));
                    out.insert(key, (host.value(i).to_string(), layer, main.value(i).to_string()));
                }
            }
        }
    }
    out
}
