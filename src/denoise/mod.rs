//! Noise-link removal of document B (S300). The DOM link-text-ratio
//! prefilter runs at parse time (see [`crate::parse`]: every link carries
//! its block's ratio); this stage holds the bit-parallel LCS similarity
//! ([`lcs`]), the single-pass clustering of a domain block ([`cluster`]),
//! and [`noise_by_cluster`], the step the optimise phase calls per block.

pub mod cluster;
pub mod lcs;

use cluster::{cluster_block, ClusterConfig, Item, Verdict};

/// One distinct link target of a domain block.
#[derive(Clone, Debug)]
pub struct BlockUrl {
    pub url: String,
    /// Every link to it sat in a navigation block (the DOM prefilter's
    /// verdict): a noise sample for its cluster.
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

/// Runs S311-S314 on the distinct URLs of one domain block. `known_noise`
/// are user-supplied noise URLs; those of other domains are ignored by the
/// similarity threshold anyway, so the caller may pass them all.
#[must_use]
pub fn noise_by_cluster(block: &[BlockUrl], known_noise: &[&str], cfg: &ClusterConfig) -> BlockVerdict {
    let items: Vec<Item<'_>> = block.iter().map(|b| Item { url: b.url.as_str(), dom_noise: b.dom_noise }).collect();
    let c = cluster_block(&items, known_noise, cfg);
    BlockVerdict { noise: c.verdict.iter().map(|v| *v != Verdict::Keep).collect(), clusters: c.clusters, comparisons: c.comparisons }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_of_navigation_urls_is_noise_and_articles_are_kept() {
        let mut block: Vec<BlockUrl> = (0..12)
            .map(|i| BlockUrl { url: format!("http://s1.test/news/{}-some-article-title", 1000 + i * 37), dom_noise: i % 5 == 0 })
            .collect();
        block.extend((0..6).map(|i| BlockUrl { url: format!("http://s1.test/tag/word{i}/"), dom_noise: true }));
        let v = noise_by_cluster(&block, &[], &ClusterConfig::default());
        assert!(v.noise[..12].iter().all(|n| !n), "articles mostly linked from text are kept: {v:?}");
        assert!(v.noise[12..].iter().all(|n| *n), "the tag cluster is all DOM noise: {v:?}");
        assert_eq!(v.clusters, 2);
    }
}
