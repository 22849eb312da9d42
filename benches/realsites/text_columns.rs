//! The cost of the two text columns (`text`, `main_text`) on real pages.

use super::*;

/// What the two text columns cost on real pages: the crawl with both (the
/// default) against `--store-text main` and `--store-text visible`, and
/// against a comparison build when `REALSITES_BASELINE` names one (the code
/// before the main text, say), in turn, `REALSITES_ROUNDS` rounds (3);
/// medians of the rounds' ratios of crawler CPU per page to the default's,
/// and the `doc` bytes.
pub(super) fn text_columns(web: Web, seeds: &[String], depth: u32) -> Value {
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
            .map(|(name, bin, extra)| layercrawl_with(bin, web, seeds, depth, extra, &format!("text-{name}-{k}")))
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
