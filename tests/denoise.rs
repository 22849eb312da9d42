//! Document B's URL optimiser measured against the test web's ground truth:
//! how well the noise labels match the truth's navigation/boilerplate
//! links, what `--denoise drop` costs in content pages, and what it saves
//! in fetched pages.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::{crawl_ok, read_docs, read_links};
use layercrawl::testweb::{Farm, FarmConfig};

struct Run {
    docs: Vec<common::Doc>,
    links: Vec<common::Link>,
    summary: serde_json::Value,
}

fn crawl(farm: &Farm, dir: &std::path::Path, depth: u32, mode: &str) -> Run {
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("seeds");
    let data = dir.join(mode);
    let (rule, depth) = (farm.resolve_rule(), depth.to_string());
    let summary = crawl_ok(&[
        "run", "--seeds", seeds.to_str().expect("utf8"), "--depth", &depth, "--data", data.to_str().expect("utf8"),
        "--resolve", &rule, "--allow-private", "--delay", "0", "--per-host", "4", "--partitions", "4", "--denoise", mode,
        "--json", "--quiet",
    ]);
    Run { docs: read_docs(&data), links: read_links(&data), summary }
}

/// Precision and recall of the noise labels (`dom_ratio`, `lcs_cluster`)
/// against the truth's link roles, over every in-scope, followable link of
/// every page the crawl fetched.
fn noise_scores(farm: &Farm, run: &Run) -> (f64, f64, u64) {
    // Per (page, target): how many links the truth calls noise and content.
    let mut by_page: HashMap<&str, Vec<&common::Link>> = HashMap::new();
    for l in &run.links {
        if matches!(l.noise.as_deref(), None | Some("dom_ratio" | "lcs_cluster")) {
            by_page.entry(l.src_url.as_str()).or_default().push(l);
        }
    }
    let (mut tp, mut fp, mut fneg, mut scored) = (0u64, 0u64, 0u64, 0u64);
    for (src, links) in by_page {
        let Some(truth) = farm.page_links(src) else { continue };
        let base = url::Url::parse(src).expect("src url");
        let mut want: HashMap<String, (u64, u64)> = HashMap::new();
        for t in truth {
            if let Some(u) = layercrawl::urlnorm::resolve_link(&base, &t.url) {
                let e = want.entry(u.to_string()).or_default();
                if t.role.is_noise() {
                    e.0 += 1;
                } else {
                    e.1 += 1;
                }
            }
        }
        let mut got: HashMap<&str, u64> = HashMap::new();
        let mut total: HashMap<&str, u64> = HashMap::new();
        for l in &links {
            *total.entry(l.dst_url.as_str()).or_default() += 1;
            if l.noise.is_some() {
                *got.entry(l.dst_url.as_str()).or_default() += 1;
            }
        }
        for (dst, n) in total {
            let Some(&(truth_noise, _)) = want.get(dst) else { continue };
            let predicted = got.get(dst).copied().unwrap_or(0);
            tp += predicted.min(truth_noise);
            fp += predicted.saturating_sub(truth_noise);
            fneg += truth_noise.saturating_sub(predicted).min(n);
            scored += n;
        }
    }
    #[allow(clippy::cast_precision_loss)]
    let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    (ratio(tp, tp + fp), ratio(tp, tp + fneg), scored)
}

fn ok_urls(run: &Run) -> BTreeSet<&str> {
    run.docs.iter().filter(|d| d.status == 200 && d.error.is_none()).map(|d| d.url.as_str()).collect()
}

#[test]
fn noise_filter_against_the_ground_truth() {
    let farm = Farm::start_background(FarmConfig { sites: 6, pages: 150, seed: 21, faults: false, ..FarmConfig::default() })
        .expect("farm");
    let tmp = tempfile::tempdir().expect("tempdir");
    let depth = 3;
    let mark = crawl(&farm, tmp.path(), depth, "mark");
    let drop = crawl(&farm, tmp.path(), depth, "drop");
    let truth = farm.truth(&farm.start_urls(), depth);

    let (precision, recall, scored) = noise_scores(&farm, &mark);
    let content: BTreeSet<&str> = truth.content_pages.keys().map(String::as_str).collect();
    let (mark_ok, drop_ok) = (ok_urls(&mark), ok_urls(&drop));
    #[allow(clippy::cast_precision_loss)]
    let share = |got: &BTreeSet<&str>| content.iter().filter(|u| got.contains(*u)).count() as f64 / content.len() as f64;
    let (share_off, share_drop) = (share(&mark_ok), share(&drop_ok));
    #[allow(clippy::cast_precision_loss)]
    let fetched_drop = 1.0 - drop.docs.len() as f64 / mark.docs.len() as f64;
    eprintln!(
        "noise labels vs truth over {scored} links: precision {precision:.3}, recall {recall:.3}; content pages reached: \
         {:.1}% with --denoise off/mark, {:.1}% with drop; pages fetched: {} (mark) vs {} (drop), {:.1}% fewer",
        share_off * 100.0,
        share_drop * 100.0,
        mark.docs.len(),
        drop.docs.len(),
        fetched_drop * 100.0
    );
    eprintln!("summary layers (drop): {}", drop.summary["layers"]);

    assert!(scored > 10_000, "enough links scored: {scored}");
    // Measured 2026-11-22 (seed 21, 6 sites x 150 articles, depth 3): precision 0.90,
    // recall 0.98, content 100 % (mark) vs 76 % (drop), 81 % fewer pages fetched.
    // The loss is document B's method at work: list and pagination links sit in
    // link-dense blocks, so articles reached only through them are dropped.
    assert!(precision >= 0.85, "precision {precision:.3}");
    assert!(recall >= 0.9, "recall {recall:.3}");
    assert!(share_off > 0.99, "mark follows everything, so it reaches the whole truth: {share_off:.3}");
    assert!(share_drop >= 0.7, "drop keeps most content: {share_drop:.3}");
    assert!(fetched_drop >= 0.5, "the filter's point: far fewer pages fetched ({fetched_drop:.3})");
    // Every layer's summary reports the optimiser's counters.
    let l1 = &drop.summary["layers"][1];
    assert!(l1["dom_noise"].as_u64().unwrap_or(0) > 0 && l1["store_hits"].is_u64() && l1["visit_hits"].as_u64().unwrap_or(0) > 0, "{l1}");
}
