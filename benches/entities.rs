//! Entities and relations (docs/src/entities.md): how well
//! and how fast.
//!
//! 1. Quality: every article of the test web's knowledge-base section
//!    (`webfarm --kb N`: 6 sites × 60 articles), its main text as the crawl
//!    makes it, recognised with the section's knowledge base; precision
//!    and recall of the linked mentions (url, entity, mention as written)
//!    and of the relations (url, subject, predicate, object) against the
//!    section's truth, and the same for the ambiguous forms alone.
//! 2. Speed: the same main texts recognised on one core, over and over:
//!    MB of main text per second per core.
//! 3. With `ENTITIES_CRAWL=1`: the cpu scenario's crawl (50 sites, 400
//!    pages each, 24 KB pages, depth 3) with and without `--entities`, in
//!    turn, `ENTITIES_PAIRS` pairs (default 1): the crawler's CPU, whole
//!    processes timed by the system.
//!
//! `cargo bench --bench entities` (release build).

#[path = "common/measure.rs"]
mod measure;

use std::collections::BTreeMap;
use std::process::Command;

use layercrawl::extract::entities::EntitiesSource;
use layercrawl::extract::main_text::TextFormat;
use layercrawl::extract::ParsedPage;
use layercrawl::parse::ParseConfig;
use testweb::kb::ENTITIES;
use testweb::{Farm, FarmConfig};

const SITES: u32 = 6;
const ARTICLES: u32 = 60;

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let farm = Farm::start_background(FarmConfig {
        sites: SITES,
        pages: 10,
        faults: false,
        kb: ARTICLES,
        ..FarmConfig::default()
    })
    .expect("test web");
    let source = EntitiesSource {
        file: "kb.csv".into(),
        text: farm.kb_csv(),
        relations: None,
        prefer: Vec::new(),
        threshold: layercrawl::extract::entities::DEFAULT_THRESHOLD,
    };
    let recognizer = source.compile(TextFormat::Plain).expect("the test web's knowledge base");
    let cfg = ParseConfig::default();
    // Every article's main text, as the crawl's extractor makes it, and its truth.
    let mut pages = Vec::new();
    for origin in farm.kb_start_urls() {
        for id in 0..ARTICLES {
            let url = format!("{origin}a/{id}");
            let page = farm.kb_page(&url).expect("an article");
            let u = url::Url::parse(&url).expect("URL");
            let parsed = ParsedPage::parse(page.html.as_bytes(), Some("text/html; charset=utf-8"), &u, &cfg);
            let text = parsed.main_text(TextFormat::Plain).expect("main text").into_owned();
            pages.push((url, text, page));
        }
    }
    let (mut found, mut want, mut found_r, mut want_r) = (vec![], vec![], vec![], vec![]);
    let ambiguous = ["Orion", "Ferreira", "Paris"];
    let (mut amb_found, mut amb_want) = (vec![], vec![]);
    for (url, text, page) in &pages {
        let r = recognizer.recognise(text);
        let kb = recognizer.kb();
        for m in &r.mentions {
            let key = (url.clone(), kb.entities[m.entity as usize].id.clone(), text[m.start..m.end].to_string());
            if ambiguous.contains(&key.2.as_str()) {
                amb_found.push(key.clone());
            }
            found.push(key);
        }
        for (e, m) in &page.mentions {
            let key = (url.clone(), ENTITIES[*e].0.to_string(), m.clone());
            if ambiguous.contains(&m.as_str()) {
                amb_want.push(key.clone());
            }
            want.push(key);
        }
        for rel in &r.relations {
            let (s, o) = (&kb.entities[rel.subject as usize].id, &kb.entities[rel.object as usize].id);
            found_r.push((url.clone(), s.clone(), rel.predicate.clone(), o.clone()));
        }
        for (s, p, o) in &page.relations {
            want_r.push((url.clone(), ENTITIES[*s].0.to_string(), (*p).to_string(), ENTITIES[*o].0.to_string()));
        }
    }
    let (p, r) = precision_recall(&found, &want);
    println!("entity linking: precision {p:.3}, recall {r:.3} ({} mentions in {} articles)", want.len(), pages.len());
    let (p, r) = precision_recall(&amb_found, &amb_want);
    println!(
        "  ambiguous forms (Orion, Ferreira, Paris): precision {p:.3}, recall {r:.3} ({} mentions)",
        amb_want.len()
    );
    let (p, r) = precision_recall(&found_r, &want_r);
    println!("relations: precision {p:.3}, recall {r:.3} ({} stated)", want_r.len());

    // Speed on one core, in this thread's CPU time (the machine may be shared).
    let bytes: usize = pages.iter().map(|(_, t, _)| t.len()).sum();
    let mut rates = Vec::new();
    for _ in 0..5 {
        let start = thread_cpu();
        let (mut rounds, mut n) = (0u32, 0usize);
        while thread_cpu() - start < 1.0 {
            for (_, text, _) in &pages {
                n += recognizer.recognise(text).mentions.len();
            }
            rounds += 1;
        }
        std::hint::black_box(n);
        rates.push(f64::from(rounds) * bytes as f64 / (thread_cpu() - start) / 1e6);
    }
    rates.sort_by(f64::total_cmp);
    let per_page = bytes as f64 / pages.len() as f64;
    println!(
        "recognition: {:.1} MB/s of main text per core, CPU time (median of 5; {} KB of main text, {:.1} KB a page: {:.0} µs a page)",
        rates[2],
        bytes / 1024,
        per_page / 1024.0,
        per_page / rates[2]
    );
    drop(farm);

    if std::env::var("ENTITIES_CRAWL").is_ok_and(|v| v == "1") {
        crawl_cost(&source);
    }
}

/// This thread's CPU time in seconds.
fn thread_cpu() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn precision_recall<T: Ord + Clone>(found: &[T], truth: &[T]) -> (f64, f64) {
    let mut want: BTreeMap<T, usize> = BTreeMap::new();
    for t in truth {
        *want.entry(t.clone()).or_default() += 1;
    }
    let mut hits = 0;
    for f in found {
        if let Some(n) = want.get_mut(f).filter(|n| **n > 0) {
            *n -= 1;
            hits += 1;
        }
    }
    (hits as f64 / found.len().max(1) as f64, hits as f64 / truth.len().max(1) as f64)
}

/// The cpu scenario's crawl with and without `--entities`, in turn.
fn crawl_cost(source: &EntitiesSource) {
    let pairs: u32 = std::env::var("ENTITIES_PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let tmp = tempfile::tempdir().expect("tempdir");
    let kb = tmp.path().join("kb.csv");
    std::fs::write(&kb, &source.text).expect("kb");
    let farm = Farm::start_background(FarmConfig { sites: 50, pages: 400, page_kb: 24, ..FarmConfig::default() })
        .expect("test web");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("seeds");
    let bin = env!("CARGO_BIN_EXE_layercrawl");
    let run = |name: &str, with: bool| {
        let data = tmp.path().join(name);
        let mut cmd = Command::new(bin);
        cmd.args([
            "run",
            "--seeds",
            &seeds.display().to_string(),
            "--depth",
            "3",
            "--data",
            &data.display().to_string(),
        ]);
        cmd.args(["--resolve", &farm.resolve_rule(), "--allow-private", "--json", "--quiet"]);
        cmd.args([
            "--delay",
            "0",
            "--delay-factor",
            "0",
            "--per-host",
            "8",
            "--concurrency",
            "256",
            "--partitions",
            "8",
        ]);
        if with {
            cmd.args(["--entities", &kb.display().to_string()]);
        }
        let m = measure::run_measured(&mut cmd, &tmp.path().join("out"), &tmp.path().join("err"));
        assert!(m.ok, "{}", m.stderr_tail());
        let _ = std::fs::remove_dir_all(&data);
        m
    };
    let mut ratios = Vec::new();
    for pair in 0..pairs {
        let without = run(&format!("without-{pair}"), false);
        let with = run(&format!("with-{pair}"), true);
        println!(
            "  crawl pair {pair}: without {:.1} CPU s, {:.1} s; with {:.1} CPU s, {:.1} s",
            without.cpu, without.wall, with.cpu, with.wall
        );
        ratios.push(with.cpu / without.cpu);
    }
    ratios.sort_by(f64::total_cmp);
    println!("crawler CPU, with / without --entities: {:.3} (median of {pairs})", ratios[ratios.len() / 2]);
}
