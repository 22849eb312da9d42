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
//! snippets, as trafilatura's own comparison does).
//!
//! **The split.** The pages are split once, by site, into a tuning part
//! (about two thirds) and a held-out part (the rest): heuristics are tuned
//! on the tuning part only, and a change is kept only if it helps the
//! held-out part too (docs/src/main-text.md, "Tuning and held-out pages").
//! `benches/extract_eval/split.tsv` writes the split down, one line per
//! page: file, site, part. A page's site is the registrable domain (the
//! public suffix list's, crate `psl`) of its URL in `evaldata.json`: of
//! the archived URL for a `web.archive.org` snapshot, and for the entries
//! keyed by a label instead of a URL (`hard::…`) of the page's own
//! `<link rel=canonical>` or `og:url`, else of the file name's leading
//! host-like part. A site is held out when the 64-bit FNV-1a hash of its
//! name is divisible by 3: deterministic, and every page of a site falls
//! in the same part. `EXTRACT_EVAL_SPLIT=write` makes the file again (the
//! same file, unless the set changes).
//!
//! **What it prints.** One table: precision, recall, F1 and accuracy of
//! layercrawl and trafilatura on the tuning part, the held-out part and
//! the whole, and speed (MB of HTML per CPU second). Then layercrawl's
//! failures: the ten worst pages for precision and for recall (file, site,
//! P, R, and trafilatura's on the same page), F1 of both by language
//! (`<html lang>`'s primary subtag; the 15 with most pages, then the
//! rest) and by site (the 20 sites with most pages, two at least, then the
//! rest), and the pages whose main text is empty while
//! their gold text is not.
//!
//! Environment: `EXTRACT_EVAL_FORMAT=markdown` scores the Markdown
//! rendering instead; `EXTRACT_EVAL_EXPLAIN=FILE` prints why each block of
//! one page is main text or not; `EXTRACT_EVAL_PAGES=FILE.csv` writes each
//! page's counts (true and false positives, negatives) for every extractor
//! there instead of `target/extract-eval/per-page.csv`, to find the pages
//! where they disagree; `EXTRACT_EVAL_PEER=again` runs trafilatura again
//! instead of reading its output of an earlier run; `EXTRACT_EVAL_DOCS=on`
//! compares the main text of documentation pages of the real-site corpus
//! with a run of other code instead (benches/extract_eval/docs.rs).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use layercrawl::extract::main_text::{explain, main_text, TextFormat};

#[path = "extract_eval/docs.rs"]
mod docs;
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

/// The split's file, from the repository root.
const SPLIT: &str = "benches/extract_eval/split.tsv";
const TUNING: &str = "tuning";
const HELD_OUT: &str = "held-out";

/// 64-bit FNV-1a: a hash that stays the same across Rust releases.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The registrable domain of a host, or the host itself.
fn registrable(host: &str) -> String {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    psl::domain_str(&host).unwrap_or(&host).to_string()
}

fn host_of(url: &str) -> Option<String> {
    let u = url::Url::parse(url.trim()).ok()?;
    let host = u.host_str()?;
    if host == "web.archive.org" {
        // /web/<timestamp>/<archived URL>
        let path = u.path();
        let rest = path.strip_prefix("/web/")?.split_once('/')?.1;
        let archived = if rest.contains("://") { rest.to_string() } else { format!("http://{rest}") };
        return url::Url::parse(&archived).ok()?.host_str().map(str::to_string);
    }
    Some(host.to_string())
}

/// The page's site (see the module's comment).
fn site_of(key: &str, file: &str, meta: &layercrawl::parse::tokens::Meta) -> String {
    let og = meta.tags.iter().find(|(k, _)| k == "og:url").map(|(_, v)| v.as_str());
    let host = host_of(key)
        .or_else(|| meta.canonical.as_deref().and_then(host_of))
        .or_else(|| og.and_then(host_of))
        .unwrap_or_else(|| {
            // "nationnews.com-schools.html", "pcgamer.com.skyrim.html".
            let name = file.trim_end_matches(".html").split('-').next().unwrap_or(file);
            let labels: Vec<&str> = name.split('.').collect();
            (2..=labels.len())
                .rev()
                .map(|n| labels[..n].join("."))
                .find(|h| psl::domain_str(h).is_some_and(|d| d.len() < h.len() || d == h.as_str()))
                .unwrap_or_else(|| name.to_string())
        });
    registrable(&host)
}

fn part_of_site(site: &str) -> &'static str {
    if fnv1a(site).is_multiple_of(3) {
        HELD_OUT
    } else {
        TUNING
    }
}

/// Snippet counts of one page or one group of pages.
#[derive(Clone, Copy, Default)]
struct Counts {
    tp: u64,
    fp: u64,
    tn: u64,
    fn_: u64,
    pages: u64,
    /// Pages whose text is empty.
    empty: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.tp += o.tp;
        self.fp += o.fp;
        self.tn += o.tn;
        self.fn_ += o.fn_;
        self.pages += o.pages;
        self.empty += o.empty;
    }

    fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }

    fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }

    fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }

    fn accuracy(&self) -> f64 {
        ratio(self.tp + self.tn, self.tp + self.tn + self.fp + self.fn_)
    }
}

#[allow(clippy::cast_precision_loss)]
fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        // Nothing to find (or nothing found): nothing wrong.
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// The counts of one extractor over the pages a filter keeps.
type GroupCounts<'a> = dyn Fn(&str, &dyn Fn(&Page) -> bool) -> Counts + 'a;

/// One page of the set, as the report needs it.
struct Page {
    file: String,
    site: String,
    part: String,
    lang: String,
    gold: bool,
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // EXTRACT_EVAL_DOCS=on: documentation pages before and after a change.
    if std::env::var("EXTRACT_EVAL_DOCS").is_ok_and(|v| v == "on") {
        docs::compare(root, fnv1a);
        return;
    }
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
    let write_split = std::env::var("EXTRACT_EVAL_SPLIT").is_ok_and(|v| v == "write");
    let split_path = root.join(SPLIT);
    let mut split: HashMap<String, (String, String)> = HashMap::new();
    if !write_split {
        let tsv = std::fs::read_to_string(&split_path)
            .unwrap_or_else(|e| panic!("{}: {e} (EXTRACT_EVAL_SPLIT=write makes it)", split_path.display()));
        for line in tsv.lines().filter(|l| !l.starts_with('#')) {
            let mut f = line.split('\t');
            if let (Some(file), Some(site), Some(part)) = (f.next(), f.next(), f.next()) {
                split.insert(file.to_string(), (site.to_string(), part.to_string()));
            }
        }
    }
    let (mut parse_s, mut main_s, mut bytes, mut shells) = (0.0, 0.0, 0u64, Vec::new());
    let mut texts = serde_json::Map::new();
    let mut pages = Vec::new();
    for (key, entry) in eval.as_object().expect("an object") {
        let Some(file) = entry["file"].as_str() else { continue };
        let Ok(body) = std::fs::read(teval.join("pages").join(file)) else { continue };
        let url = url::Url::parse(key).unwrap_or_else(|_| url::Url::parse("https://example.invalid/").expect("url"));
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
        let meta = &page.structure.meta;
        let (site, part) = if write_split {
            let site = site_of(key, file, meta);
            let part = part_of_site(&site).to_string();
            (site, part)
        } else {
            split.get(file).cloned().unwrap_or_else(|| panic!("{file} is not in {SPLIT}"))
        };
        let lang = meta
            .lang
            .as_deref()
            .and_then(|l| l.split(['-', '_']).next())
            .map(|l| l.trim().to_ascii_lowercase())
            .filter(|l| !l.is_empty())
            .unwrap_or_else(|| "?".into());
        let gold = entry["with"].as_array().is_some_and(|w| !w.is_empty());
        pages.push(Page { file: file.to_string(), site, part, lang, gold });
    }
    if write_split {
        let mut out = String::from("# file\tsite\tpart (benches/extract_eval.rs says how it is made)\n");
        let mut sorted: Vec<&Page> = pages.iter().collect();
        sorted.sort_by(|a, b| (&a.site, &a.file).cmp(&(&b.site, &b.file)));
        for p in sorted {
            out.push_str(&format!("{}\t{}\t{}\n", p.file, p.site, p.part));
        }
        std::fs::create_dir_all(split_path.parent().expect("a directory")).expect("mkdir");
        std::fs::write(&split_path, out).expect("write the split");
        println!("wrote {}", split_path.display());
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
    let csv_path = std::env::var("EXTRACT_EVAL_PAGES").map_or_else(|_| out_dir.join("per-page.csv"), PathBuf::from);
    let mut score = Command::new(&python);
    score.arg(&script).arg("score").arg(&ours).arg(&peer).arg("--per-page").arg(&csv_path);
    let scored = run(&mut score);
    let rows: Vec<Value> = scored.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let names: Vec<String> = rows.iter().map(|r| r["extractor"].as_str().unwrap_or("?").to_string()).collect();
    // Per extractor, per file: the page's counts.
    let mut per_page: HashMap<(String, String), Counts> = HashMap::new();
    let mut reader = csv::Reader::from_path(&csv_path).expect("the per-page counts");
    for rec in reader.records() {
        let rec = rec.expect("a row");
        let n = |i: usize| rec.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let c = Counts { tp: n(2), fp: n(3), tn: n(4), fn_: n(5), pages: 1, empty: n(6) };
        per_page.insert((rec[0].to_string(), rec[1].to_string()), c);
    }
    let counts =
        |name: &str, file: &str| per_page.get(&(name.to_string(), file.to_string())).copied().unwrap_or_default();
    let group = |name: &str, keep: &dyn Fn(&Page) -> bool| {
        let mut c = Counts::default();
        for p in pages.iter().filter(|p| keep(p)) {
            c.add(&counts(name, &p.file));
        }
        c
    };

    let mb = bytes as f64 / 1e6;
    println!("\n{} pages, {mb:.1} MB of HTML", texts.len());
    let n_held = pages.iter().filter(|p| p.part == HELD_OUT).count();
    let sites = |part: &str| {
        let mut s: Vec<&str> = pages.iter().filter(|p| p.part == part).map(|p| p.site.as_str()).collect();
        s.sort_unstable();
        s.dedup();
        s.len()
    };
    println!(
        "split ({SPLIT}): tuning {} pages of {} sites, held-out {n_held} pages of {} sites\n",
        pages.len() - n_held,
        sites(TUNING),
        sites(HELD_OUT)
    );
    // `--render auto` would render these (docs/src/rendering.md): pages saved
    // as served, so a script shell here is a page whose text needs scripts.
    println!("script shells by `--render auto`'s test: {} of {} {shells:?}\n", shells.len(), texts.len());
    println!("| extractor | pages | precision | recall | F1 | accuracy | MB/s per core |\n|---|---|---:|---:|---:|---:|---:|");
    for part in [TUNING, HELD_OUT, "whole"] {
        for (r, name) in rows.iter().zip(&names) {
            let c = group(name, &|p: &Page| part == "whole" || p.part == part);
            println!(
                "| {name} | {part} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} |",
                c.precision(),
                c.recall(),
                c.f1(),
                c.accuracy(),
                r["mb_per_cpu_second"].as_f64().unwrap_or(f64::NAN),
            );
        }
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
    let (Some(us), Some(them)) =
        (names.iter().find(|n| n.starts_with("layercrawl")), names.iter().find(|n| n.starts_with("trafilatura")))
    else {
        return;
    };
    report(&pages, us, them, &counts, &group);
}

/// layercrawl's failures, beside trafilatura's figures (see the module's
/// comment).
fn report(pages: &[Page], us: &str, them: &str, counts: &dyn Fn(&str, &str) -> Counts, group: &GroupCounts<'_>) {
    let worst = |title: &str, key: &dyn Fn(&Counts) -> f64, bad: &dyn Fn(&Counts) -> u64| {
        println!("\n{title} (layercrawl; trafilatura's P, R on the same page)\n");
        println!("| file | site | part | P | R | trafilatura P | R |\n|---|---|---|---:|---:|---:|---:|");
        let mut ranked: Vec<(&Page, Counts)> =
            pages.iter().map(|p| (p, counts(us, &p.file))).filter(|(_, c)| bad(c) > 0).collect();
        ranked.sort_by(|a, b| {
            key(&a.1).total_cmp(&key(&b.1)).then(bad(&b.1).cmp(&bad(&a.1))).then(a.0.file.cmp(&b.0.file))
        });
        for (p, c) in ranked.iter().take(10) {
            let t = counts(them, &p.file);
            println!(
                "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
                p.file,
                p.site,
                p.part,
                c.precision(),
                c.recall(),
                t.precision(),
                t.recall()
            );
        }
    };
    worst("ten worst pages for precision", &Counts::precision, &|c| c.fp);
    worst("ten worst pages for recall", &Counts::recall, &|c| c.fn_);

    let by = |title: &str, key: &dyn Fn(&Page) -> &str, top: usize| {
        let mut n: BTreeMap<&str, usize> = BTreeMap::new();
        for p in pages {
            *n.entry(key(p)).or_default() += 1;
        }
        let mut keys: Vec<(&str, usize)> = n.into_iter().collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        println!("\nF1 by {title} (layercrawl, trafilatura)\n");
        println!("| {title} | pages | layercrawl F1 | trafilatura F1 |\n|---|---:|---:|---:|");
        // A key of one page is in "the other" line: its F1 is that page's.
        let shown: Vec<&str> = keys.iter().filter(|k| k.1 > 1).take(top).map(|k| k.0).collect();
        for k in &shown {
            let (a, b) = (group(us, &|p: &Page| key(p) == *k), group(them, &|p: &Page| key(p) == *k));
            println!("| {k} | {} | {:.3} | {:.3} |", a.pages, a.f1(), b.f1());
        }
        if keys.len() > shown.len() {
            let rest = |p: &Page| !shown.contains(&key(p));
            let (a, b) = (group(us, &rest), group(them, &rest));
            println!("| the other {} | {} | {:.3} | {:.3} |", keys.len() - shown.len(), a.pages, a.f1(), b.f1());
        }
    };
    by("language", &|p: &Page| p.lang.as_str(), 15);
    by("site", &|p: &Page| p.site.as_str(), 20);

    let empty: Vec<String> = pages
        .iter()
        .filter(|p| p.gold && counts(us, &p.file).empty > 0)
        .map(|p| format!("{} ({}, {})", p.file, p.site, p.part))
        .collect();
    println!("\npages whose main text is empty but whose gold text is not: {}", empty.len());
    for e in &empty {
        println!("  {e}");
    }
}
