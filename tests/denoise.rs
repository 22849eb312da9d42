//! Document B's URL optimiser measured against the test web's ground truth:
//! how well the noise labels match the truth's navigation/boilerplate
//! links, what `--denoise drop` costs in content pages, and what it saves
//! in fetched pages.

mod common;

use std::collections::BTreeSet;

use common::{read_docs, read_links, Web};
use layercrawl::testweb::FarmConfig;

struct Run {
    docs: Vec<common::Doc>,
    data: std::path::PathBuf,
    summary: serde_json::Value,
}

fn crawl(web: &Web, depth: u32, mode: &str) -> Run {
    let data = web.dir(mode);
    let summary = web.crawl(&data, depth, &["--delay", "0", "--per-host", "4", "--partitions", "4", "--denoise", mode]);
    assert!(!read_links(&data).is_empty());
    Run { docs: read_docs(&data), data, summary }
}

fn ok_urls(run: &Run) -> BTreeSet<&str> {
    run.docs.iter().filter(|d| d.status == 200 && d.error.is_none()).map(|d| d.url.as_str()).collect()
}

#[test]
fn noise_filter_against_the_ground_truth() {
    let web = Web::start(FarmConfig { sites: 6, pages: 150, seed: 21, faults: false, ..FarmConfig::default() });
    let farm = &web.farm;
    let depth = 3;
    let mark = crawl(&web, depth, "mark");
    let drop = crawl(&web, depth, "drop");
    let truth = farm.truth(&farm.start_urls(), depth);
    let content: BTreeSet<&str> = truth.content_pages.keys().map(String::as_str).collect();
    let (mark_ok, drop_ok) = (ok_urls(&mark), ok_urls(&drop));
    #[allow(clippy::cast_precision_loss)]
    let share = |got: &BTreeSet<&str>| content.iter().filter(|u| got.contains(*u)).count() as f64 / content.len() as f64;

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let score = |run: &Run| rt.block_on(layercrawl::demo::score_against_truth(farm, run.data.to_str().expect("utf8"), depth)).expect("score");
    let (m, d) = (score(&mark), score(&drop));
    let (precision, recall, scored) = (m.precision, m.recall, m.links_scored);
    assert!((m.content_share - share(&ok_urls(&mark))).abs() < 1e-9 && (d.content_share - share(&ok_urls(&drop))).abs() < 1e-9);
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
    // Measured 2026-11-22 (seed 21, 6 sites x 150 articles, depth 3): precision 0.94,
    // recall 0.97, content 100 % (mark) vs 76 % (drop), 80 % fewer pages fetched.
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
