//! A real documentation site (from Debian's archive, served by nginx on
//! loopback; `scripts/realsites.sh --ci` installs it, and the test runs it) crawled to depth 3 with
//! the default noise filter and with `--denoise off`, each compared with the
//! independent breadth-first walker's ground truth.

use crate::common;

use std::collections::BTreeSet;

use common::realsites::{self, Corpus};
use common::{crawl_ok, read_docs};

#[test]
fn a_real_documentation_site_is_crawled_whole_by_default() {
    realsites::install(true);
    let corpus = Corpus::start(realsites::sites(true), None);
    let seeds = corpus.seeds();
    let depth = 3;
    let truth = corpus.walk(&seeds, depth);
    assert!(truth.len() > 100, "the walker found {} pages", truth.len());
    let seeds_file = corpus.dir.path().join("seeds.txt");
    std::fs::write(&seeds_file, seeds.join("\n")).expect("seeds");
    let crawl = |mode: Option<&str>| {
        let data = corpus.dir.path().join(mode.unwrap_or("default"));
        let mut args: Vec<String> = [
            "run",
            "--seeds",
            &seeds_file.display().to_string(),
            "--depth",
            &depth.to_string(),
            "--data",
            &data.display().to_string(),
        ]
        .map(String::from)
        .to_vec();
        args.extend(corpus.resolve_args());
        args.extend(
            ["--allow-private", "--json", "--quiet", "--concurrency", "64", "--per-host", "16", "--delay", "0"]
                .map(String::from),
        );
        if let Some(m) = mode {
            args.extend(["--denoise".to_string(), m.to_string()]);
        }
        let summary = crawl_ok(&args);
        let docs = read_docs(&data);
        let ok: BTreeSet<String> =
            docs.iter().filter(|d| d.status == 200 && d.error.is_none()).map(|d| d.url.clone()).collect();
        (summary, ok)
    };
    let (_, off) = crawl(Some("off"));
    let (summary, default) = crawl(None);
    let reached = |got: &BTreeSet<String>| truth.keys().filter(|u| got.contains(*u)).count();
    let (n_off, n_default) = (reached(&off), reached(&default));
    let missed: Vec<&String> = truth.keys().filter(|u| !off.contains(*u)).take(5).collect();
    eprintln!(
        "{}: {} pages within depth {depth} (walker); --denoise off reached {n_off}, the default {n_default}; missed by off: {missed:?}",
        corpus.sites.iter().map(|s| format!("{} ({})", s.name, s.generator)).collect::<Vec<_>>().join(", "),
        truth.len()
    );
    #[allow(clippy::cast_precision_loss)]
    let share = |a: usize, b: usize| a as f64 / b as f64;
    assert!(
        share(n_off, truth.len()) >= 0.995,
        "off reaches the walker's pages: {n_off} of {}; missed {missed:?}",
        truth.len()
    );
    assert!(share(n_default, n_off) >= 0.995, "the default reaches what off reaches: {n_default} of {n_off}");
    // What the default did not follow, and why: on documentation sites the
    // evidence finds nothing barren, so nothing is dropped.
    let dropped: u64 = (0..=depth as usize).filter_map(|l| summary["layers"][l]["barren"].as_u64()).sum();
    eprintln!("the default dropped {dropped} link targets as barren");
    assert!(summary["layers"][1]["dom_noise"].as_u64().unwrap_or(0) > 0, "the site's menus are suspects, and followed");
}

/// Real nginx sends `ETag` and `Last-Modified` for static files and answers
/// conditional requests with 304: a second night against the first
/// downloads almost nothing and stores the same text.
#[test]
fn a_real_site_recrawled_with_previous_answers_304_and_keeps_its_text() {
    realsites::install(true);
    let corpus = Corpus::start(realsites::sites(true), None);
    let seeds_file = corpus.dir.path().join("seeds.txt");
    std::fs::write(&seeds_file, corpus.seeds().join("\n")).expect("seeds");
    let night = |name: &str, extra: &[String]| {
        let data = corpus.dir.path().join(name);
        (crawl_ok(&depth_2_run(&corpus, &seeds_file, &data, extra)), data)
    };
    let (first, night1) = night("night1", &[]);
    let (second, night2) = night("night2", &["--previous".to_string(), night1.display().to_string()]);
    let html = |d: &common::Doc| d.status == 200 && d.content_type.as_deref().is_some_and(|c| c.contains("html"));
    let before: std::collections::BTreeMap<String, common::Doc> =
        read_docs(&night1).into_iter().filter(html).map(|d| (d.url.clone(), d)).collect();
    let after = read_docs(&night2);
    assert!(before.len() > 50, "{} pages", before.len());
    assert!(before.values().all(|d| d.etag.is_some() && d.last_modified.is_some()), "nginx's validators are kept");
    let carried = after.iter().filter(|d| d.unchanged).count();
    assert_eq!(carried, before.len(), "every HTML page answered 304 and was carried forward");
    for d in after.iter().filter(|d| d.unchanged) {
        assert_eq!((&d.text, &d.main_text), (&before[&d.url].text, &before[&d.url].main_text), "{}", d.url);
    }
    let bytes = |v: &serde_json::Value| v["bytes"].as_u64().expect("bytes");
    eprintln!(
        "nginx recrawl: {carried} pages carried; {} then {} body bytes; {} bytes saved",
        bytes(&first),
        bytes(&second),
        second["bytes_saved"]
    );
    assert!(bytes(&second) * 20 < bytes(&first), "{} then {}", bytes(&first), bytes(&second));
}

#[test]
fn no_page_of_the_real_sites_is_taken_for_a_script_shell() {
    // `--render auto` renders script shells only; documentation sites are
    // plain HTML, so every page rendered there would be wasted work.
    // Every page of the corpus this machine has (the CI's one package, or
    // all of them after scripts/realsites.sh without --ci).
    realsites::install(true);
    let (mut pages, mut shells) = (0, Vec::new());
    for site in realsites::sites(false).into_iter().filter(|s| s.ci || s.root.is_dir()) {
        let mut stack = vec![site.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("read the site's folder").flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == "html" || e == "htm") {
                    pages += 1;
                    let html = std::fs::read(&p).expect("read a page");
                    if layercrawl::fetch::render::shell::scan(&html).is_shell() {
                        shells.push(p.display().to_string());
                    }
                }
            }
        }
    }
    eprintln!("{} of {pages} real pages taken for script shells: {shells:?}", shells.len());
    assert!(pages > 100, "the real sites: {pages} pages");
    assert!(shells.len() * 1000 <= pages, "{} of {pages}: {shells:?}", shells.len());
}

/// Cross-page boilerplate on a real site (docs/src/main-text.md): every
/// manual page of git's documentation ends its main text with the footer
/// "GIT / Part of the git(1) suite". Learned from the pages of layers 0 and
/// 1, it is trimmed off the pages of layer 2; nothing else of any page
/// changes, and layers 0 and 1 keep it (nothing was learned before them).
#[test]
fn a_real_sites_template_footer_is_trimmed_from_later_layers_main_text() {
    realsites::install(true);
    let corpus = Corpus::start(realsites::sites(true), None);
    let seeds_file = corpus.dir.path().join("seeds.txt");
    std::fs::write(&seeds_file, corpus.seeds().join("\n")).expect("seeds");
    let crawl = |switch: &str| {
        let data = corpus.dir.path().join(format!("site-boilerplate-{switch}"));
        let extra = ["--site-boilerplate", switch, "--denoise", "off"].map(String::from);
        crawl_ok(&depth_2_run(&corpus, &seeds_file, &data, &extra));
        read_docs(&data)
            .into_iter()
            .filter_map(|d| d.main_text.map(|t| (d.url, (d.layer, t))))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (off, on) = (crawl("off"), crawl("on"));
    assert_eq!(off.keys().collect::<Vec<_>>(), on.keys().collect::<Vec<_>>(), "the same pages");
    let footer = "GIT\nPart of the git(1) suite";
    let (mut trimmed, mut later) = (0, 0);
    // Every page of layer 2 that ends with the footer loses it (the assert
    // in the loop); how many do is the site's: most of its manual pages sit
    // in layer 1.
    for (url, (layer, text)) in &off {
        let with = &on[url].1;
        if *layer < 2 {
            assert_eq!(with, text, "{url}: layer {layer} learned nothing before it");
            continue;
        }
        later += 1;
        match text.strip_suffix(footer) {
            Some(body) => {
                assert_eq!(with, body.trim_end(), "{url}: only the footer goes");
                trimmed += 1;
            }
            None => assert_eq!(with, text, "{url}: a page without the footer keeps its text"),
        }
    }
    eprintln!("layer 2: {trimmed} of {later} pages' main text lost the footer");
    assert!(trimmed >= 3, "layer 2 has pages with the footer: {trimmed} of {later}");
}

/// `layercrawl run` of the corpus to depth 2 into `data`, politeness off
/// (loopback), with `extra` flags.
fn depth_2_run(corpus: &Corpus, seeds_file: &std::path::Path, data: &std::path::Path, extra: &[String]) -> Vec<String> {
    let mut args: Vec<String> =
        ["run", "--seeds", &seeds_file.display().to_string(), "--depth", "2", "--data", &data.display().to_string()]
            .map(String::from)
            .to_vec();
    args.extend(corpus.resolve_args());
    args.extend(["--allow-private", "--json", "--quiet", "--per-host", "8", "--delay", "0"].map(String::from));
    args.extend(extra.iter().cloned());
    args
}

/// Serves the whole documentation corpus (`scripts/realsites.sh`) for a
/// crawl by hand, a profile or a peer: prints the seeds and the
/// `--resolve` rules, then serves for `REALSITES_SERVE_SECS` (600).
/// `cargo test --test e2e real_sites_serve -- --ignored --nocapture`
#[test]
#[ignore = "serves until REALSITES_SERVE_SECS have passed"]
fn real_sites_serve() {
    let corpus = Corpus::start(realsites::sites(false), None);
    println!("seeds: {}", corpus.seeds().join(" "));
    println!("resolve: {}", corpus.resolve_args().join(" "));
    let secs = std::env::var("REALSITES_SERVE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    std::thread::sleep(std::time::Duration::from_secs(secs));
}
