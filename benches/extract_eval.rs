//! The main text on real pages, beside trafilatura: `cargo bench --bench
//! extract_eval`.
//!
//! The set: 990 real pages from many sites and languages, each with text
//! its main content must contain and boilerplate it must not (unpacked from
//! `LAYERCRAWL_EXTRACT_EVAL`, by default `../shared/extract-eval/pages.tar.zst`
//! beside the repository, by `benches/peers/extract_eval.py`). Each page's
//! bytes go through the crawl's own pass (`parse_html`: charset, one
//! tokenizer pass, links), then [`main_text`]; CPU time is the thread's,
//! measured around those calls only. trafilatura (from PyPI, installed by
//! `benches/peers/setup.sh`) extracts the same files in the same run, and
//! one scorer scores both (precision, recall, F1 and accuracy over the
//! snippets, as trafilatura's own comparison does). Prints one table.
//! `EXTRACT_EVAL_FORMAT=markdown` scores the Markdown rendering instead;
//! `EXTRACT_EVAL_EXPLAIN=FILE` prints why each block of one page is main
//! text or not; `EXTRACT_EVAL_PAGES=FILE.csv` writes each page's counts
//! (true and false positives, negatives) for every extractor, to find the
//! pages where they disagree; `EXTRACT_EVAL_PEER=again` runs trafilatura
//! again instead of reading its output of an earlier run.

use std::path::{Path, PathBuf};
use std::process::Command;

use layercrawl::extract::main_text::{explain, main_text, TextFormat};
use layercrawl::parse::{parse_html, ParseConfig};
use serde_json::{json, Value};

fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a helper");
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = run(Command::new("bash").arg(root.join("benches/peers/setup.sh"))).trim().to_string();
    let script = root.join("benches/peers/extract_eval.py");
    let teval =
        PathBuf::from(run(Command::new(&python).arg(&script).arg("unpack")).trim().lines().last().unwrap_or(""));
    let eval: Value =
        serde_json::from_slice(&std::fs::read(teval.join("evaldata.json")).expect("evaldata.json")).expect("json");
    let format = match std::env::var("EXTRACT_EVAL_FORMAT").as_deref() {
        Ok("markdown") => TextFormat::Markdown,
        _ => TextFormat::Plain,
    };
    let cfg = ParseConfig::default();
    // EXTRACT_EVAL_EXPLAIN=FILE: why each block of that page is in or out.
    if let Ok(file) = std::env::var("EXTRACT_EVAL_EXPLAIN") {
        let body = std::fs::read(teval.join("pages").join(&file)).expect("the page");
        let url = url::Url::parse("https://example.invalid/").expect("url");
        print!("{}", explain(&parse_html(&body, None, &url, &cfg).structure));
        return;
    }
    let (mut parse_s, mut main_s, mut bytes, mut shells) = (0.0, 0.0, 0u64, Vec::new());
    let mut texts = serde_json::Map::new();
    for (url, entry) in eval.as_object().expect("an object") {
        let Some(file) = entry["file"].as_str() else { continue };
        let Ok(body) = std::fs::read(teval.join("pages").join(file)) else { continue };
        let url = url::Url::parse(url).unwrap_or_else(|_| url::Url::parse("https://example.invalid/").expect("url"));
        bytes += body.len() as u64;
        if layercrawl::fetch::render::shell::scan(&body).is_shell() {
            shells.push(file.to_string());
        }
        let t0 = thread_cpu();
        let page = parse_html(&body, None, &url, &cfg);
        let t1 = thread_cpu();
        let text = main_text(&page.structure, format).unwrap_or_default();
        let t2 = thread_cpu();
        parse_s += t1 - t0;
        main_s += t2 - t1;
        texts.insert(file.to_string(), Value::String(text));
    }
    let out_dir = root.join("target/extract-eval");
    std::fs::create_dir_all(&out_dir).expect("mkdir");
    let ours = out_dir.join("layercrawl.json");
    let doc =
        json!({"extractor": "layercrawl main_text", "cpu_seconds": parse_s + main_s, "bytes": bytes, "texts": texts});
    std::fs::write(&ours, serde_json::to_vec(&doc).expect("json")).expect("write");
    let peer = out_dir.join("trafilatura-bench.json");
    if !peer.exists() || std::env::var("EXTRACT_EVAL_PEER").is_ok_and(|v| v == "again") {
        run(Command::new(&python).arg(&script).args(["trafilatura", "--out"]).arg(&peer));
    }
    let mut score = Command::new(&python);
    score.arg(&script).arg("score").arg(&ours).arg(&peer);
    if let Ok(csv) = std::env::var("EXTRACT_EVAL_PAGES") {
        score.arg("--per-page").arg(csv);
    }
    let scored = run(&mut score);
    let rows: Vec<Value> = scored.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let mb = bytes as f64 / 1e6;
    println!("\n{} pages, {mb:.1} MB of HTML\n", texts.len());
    // `--render auto` would render these (docs/src/rendering.md): pages saved
    // as served, so a script shell here is a page whose text needs scripts.
    println!("script shells by `--render auto`'s test: {} of {} {shells:?}\n", shells.len(), texts.len());
    println!("| extractor | precision | recall | F1 | accuracy | MB/s per core |\n|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} |",
            r["extractor"].as_str().unwrap_or("?"),
            r["precision"].as_f64().unwrap_or(f64::NAN),
            r["recall"].as_f64().unwrap_or(f64::NAN),
            r["f1"].as_f64().unwrap_or(f64::NAN),
            r["accuracy"].as_f64().unwrap_or(f64::NAN),
            r["mb_per_cpu_second"].as_f64().unwrap_or(f64::NAN),
        );
    }
    let peer_mbs = rows.iter().find(|r| r["extractor"].as_str().is_some_and(|e| e.starts_with("trafilatura")));
    let peer_mbs = peer_mbs.and_then(|r| r["mb_per_cpu_second"].as_f64()).unwrap_or(f64::NAN);
    println!(
        "\nlayercrawl: the crawl's pass (charset, tokenizer, links) {:.1} MB/s, main text alone {:.1} MB/s per core: {:.1}x and {:.1}x trafilatura's {peer_mbs:.1} MB/s",
        mb / parse_s,
        mb / main_s,
        mb / (parse_s + main_s) / peer_mbs,
        mb / main_s / peer_mbs,
    );
}
