//! The noise filter: which link targets are not worth a request.
//!
//! Three parts, in pipeline order:
//! * the DOM link-text-ratio prefilter runs at parse time (see
//!   `layercrawl-parse`): every link carries its block's ratio, and links in
//!   blocks above the ratio are *suspects* (`dom_ratio`);
//! * [`evidence`] judges every fetched page (copies, client errors and
//!   redirects off the site are barren) and counts the outcomes per URL
//!   template: a template whose pages were barren is not followed again;
//! * between layers, [`noise_by_cluster`] clusters each domain's link
//!   targets with the single-pass LCS clustering ([`cluster`], [`lcs`]),
//!   compares the clusters with the user's known noise URLs, and looks for
//!   strong deviants inside a cluster.
//!
//! By default ([`Method::Evidence`]) a suspect is followed until evidence
//! says otherwise: where a link sits decides nothing. [`Method::Strict`]
//! is the literal method: suspects are dropped, and so are clusters made
//! mostly of suspects and strong deviants of a cluster.

// The layers below, under the names this crate's files use.
pub(crate) use layercrawl_store as store;
pub(crate) use layercrawl_vocab as vocab;

pub mod cluster;
pub mod evidence;
pub mod gate;
pub mod lcs;
pub mod yields;

pub use crate::vocab::NoiseLabel;
use cluster::{cluster_block, ClusterConfig, Item, Verdict};

/// How link targets are judged noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// On evidence: a URL template whose fetched pages were barren, or a
    /// target cluster resembling the user's known noise URLs.
    Evidence,
    /// Where the links sit: DOM-flagged links, clusters of at least
    /// `noise_share` DOM-flagged members, strong deviants, known patterns.
    Strict,
}

/// One distinct link target of a domain block.
#[derive(Clone, Debug)]
pub struct BlockUrl {
    pub url: String,
    /// Every link to it sat in a navigation block (the DOM prefilter's
    /// verdict): a suspect, and a noise sample for strict clustering.
    pub dom_noise: bool,
}

/// What clustering found in one block.
#[derive(Clone, Debug, Default)]
pub struct BlockVerdict {
    /// Per URL of the block: noise by clustering (a noise cluster, or a
    /// strong deviant of its cluster).
    pub noise: Vec<bool>,
    pub clusters: usize,
    pub comparisons: u64,
}

/// Clusters the distinct URLs of one domain block and judges them. `known`
/// are the user's noise URLs (all domains: other domains' fall below the
/// similarity threshold anyway).
#[must_use]
pub fn noise_by_cluster(block: &[BlockUrl], known: &[&str], cfg: &ClusterConfig, method: Method) -> BlockVerdict {
    let items: Vec<Item<'_>> = block.iter().map(|b| Item { url: b.url.as_str(), dom_noise: b.dom_noise }).collect();
    let c = match method {
        Method::Strict => cluster_block(&items, known, cfg),
        // The share of suspects in a cluster decides nothing here.
        Method::Evidence => cluster_block(&items, known, &ClusterConfig { noise_share: f32::INFINITY, ..cfg.clone() }),
    };
    let noise = c
        .verdict
        .iter()
        .map(|v| match v {
            Verdict::Keep => false,
            Verdict::NoiseCluster => true,
            // Where a link sits is not evidence: by default a deviant is
            // followed, in a menu or not (on javadoc sites, class-use pages
            // linked from menus were such deviants, and unique).
            Verdict::Deviant => method == Method::Strict,
        })
        .collect();
    BlockVerdict { noise, clusters: c.clusters, comparisons: c.comparisons }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_of_navigation_urls_is_noise_and_articles_are_kept() {
        let mut block: Vec<BlockUrl> = (0..12)
            .map(|i| BlockUrl {
                url: format!("http://s1.test/news/{}-some-article-title", 1000 + i * 37),
                dom_noise: i % 5 == 0,
            })
            .collect();
        block.extend((0..6).map(|i| BlockUrl { url: format!("http://s1.test/tag/word{i}/"), dom_noise: true }));
        let v = noise_by_cluster(&block, &[], &ClusterConfig::default(), Method::Strict);
        assert!(v.noise[..12].iter().all(|n| !n), "articles mostly linked from text are kept: {v:?}");
        assert!(v.noise[12..].iter().all(|n| *n), "the tag cluster is all DOM noise: {v:?}");
        assert_eq!(v.clusters, 2);
    }

    #[test]
    fn by_evidence_suspects_are_followed_and_known_noise_is_dropped() {
        let mut block: Vec<BlockUrl> = (0..8)
            .map(|i| BlockUrl {
                url: format!("http://s1.test/news/{}-some-article-title", 1000 + i * 37),
                dom_noise: true,
            })
            .collect();
        block
            .extend((0..4).map(|i| BlockUrl { url: format!("http://s1.test/login?next=/news/{i}"), dom_noise: false }));
        let v =
            noise_by_cluster(&block, &["http://s1.test/login?next=/x"], &ClusterConfig::default(), Method::Evidence);
        assert!(v.noise[..8].iter().all(|n| !n), "links in menus are followed without evidence: {v:?}");
        assert!(v.noise[8..].iter().all(|n| *n), "the user's known noise marks its cluster: {v:?}");
        let strict = noise_by_cluster(&block, &[], &ClusterConfig::default(), Method::Strict);
        assert!(strict.noise[..8].iter().all(|n| *n), "strictly, a cluster of suspects is noise: {strict:?}");
    }
}
