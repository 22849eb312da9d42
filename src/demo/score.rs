//! How a crawl's noise labels and coverage compare with the test web's
//! ground truth. Used by `layercrawl demo`, and included by the noise
//! filter test (`tests/e2e/denoise.rs`) so that the test checks this very code;
//! it therefore names the library as `layercrawl::`, never `crate::`.

use std::collections::{BTreeSet, HashMap};

use layercrawl::denoise::NoiseLabel;
use layercrawl::store::dataset::{DOC, LINKS};
use layercrawl::store::{read_batches, schema, Store, StoreError};
use testweb::Farm;

/// How the crawl's noise labels and coverage compare with the ground truth.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct TruthScore {
    /// Of the links labelled `dom_ratio` / `lcs_cluster`, the share the truth calls navigation.
    pub precision: f64,
    /// Of the truth's navigation links, the share labelled.
    pub recall: f64,
    /// In-scope, followable links scored.
    pub links_scored: u64,
    /// Share of the truth's reachable content pages fetched with status 200.
    pub content_share: f64,
}

/// Scores a crawl at `data` of `farm`'s web, crawled from its start URLs to `depth`.
///
/// # Errors
/// When the crawl's Parquet cannot be read.
pub async fn score_against_truth(farm: &Farm, data: &str, depth: u32) -> Result<TruthScore, StoreError> {
    let store = Store::open(data)?;
    // (src, dst) -> (links labelled noise, links in all).
    let mut pairs: HashMap<(String, String), (u64, u64)> = HashMap::new();
    for path in store.parquet_files(LINKS.name).await? {
        for b in read_batches(&store, &path, Some(&["src_url", "dst_url", "noise"])).await? {
            let (src, dst, noise) = (
                schema::string_col(&b, "src_url", &path)?,
                schema::string_col(&b, "dst_url", &path)?,
                schema::noise_labels(&b, &path)?,
            );
            for (i, label) in noise.into_iter().enumerate() {
                if matches!(label, None | Some(NoiseLabel::DomRatio | NoiseLabel::LcsCluster | NoiseLabel::Barren)) {
                    let e = pairs.entry((src.value(i).to_string(), dst.value(i).to_string())).or_default();
                    e.0 += u64::from(label.is_some());
                    e.1 += 1;
                }
            }
        }
    }
    let mut truth_by_page: HashMap<String, HashMap<String, u64>> = HashMap::new();
    let (mut tp, mut fp, mut fneg, mut scored) = (0u64, 0u64, 0u64, 0u64);
    for ((src, dst), (labelled, total)) in &pairs {
        let want = truth_by_page.entry(src.clone()).or_insert_with(|| truth_noise(farm, src));
        let Some(&truth_noise) = want.get(dst) else { continue };
        tp += labelled.min(&truth_noise);
        fp += labelled.saturating_sub(truth_noise);
        fneg += truth_noise.saturating_sub(*labelled).min(*total);
        scored += total;
    }
    let mut fetched = BTreeSet::new();
    for path in store.parquet_files(DOC.name).await? {
        for b in read_batches(&store, &path, Some(&["url", "status"])).await? {
            let url = schema::string_col(&b, "url", &path)?;
            let status = b.column_by_name("status").and_then(|c| c.as_any().downcast_ref::<arrow_array::Int32Array>());
            for i in 0..b.num_rows() {
                if status.is_some_and(|s| s.value(i) == 200) {
                    fetched.insert(url.value(i).to_string());
                }
            }
        }
    }
    let truth = farm.truth(&farm.start_urls(), depth);
    #[allow(clippy::cast_precision_loss)]
    let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    let reached = truth.content_pages.keys().filter(|u| fetched.contains(*u)).count() as u64;
    Ok(TruthScore {
        precision: ratio(tp, tp + fp),
        recall: ratio(tp, tp + fneg),
        links_scored: scored,
        content_share: ratio(reached, truth.content_pages.len() as u64),
    })
}

/// Per target, how many of a page's links the truth calls navigation.
fn truth_noise(farm: &Farm, src: &str) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = HashMap::new();
    let (Some(links), Ok(base)) = (farm.page_links(src), url::Url::parse(src)) else { return out };
    for t in links {
        if let Some(u) = layercrawl::urlnorm::resolve_link(&base, &t.url) {
            *out.entry(u.to_string()).or_default() += u64::from(t.role.is_noise());
        }
    }
    out
}
