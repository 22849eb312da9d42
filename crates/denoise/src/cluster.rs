//! Single-pass LCS clustering of one domain block (docs/src/noise-filter.md).
//!
//! URLs are visited once, in order. Each joins the cluster whose
//! representative (its first member) is most similar, if that similarity
//! reaches `sim`; otherwise it opens a new cluster. Comparisons are against
//! representatives only, each a precomputed bit-parallel [`Pattern`].
//!
//! Then, per cluster:
//! * **noise cluster** — the cluster is compared with the block's noise
//!   samples (links the DOM prefilter flagged, plus known noise patterns):
//!   if at least `noise_share` of its members are samples, or its
//!   representative is at least `sim` similar to a known noise pattern, the
//!   whole cluster is noise;
//! * **deviants** — in a cluster of at least `min_deviation_size` members, a
//!   member whose similarity to the representative lies more than
//!   `deviation` standard deviations below the cluster's mean is noise.

use super::lcs::Pattern;

/// Settings of the clustering.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ClusterConfig {
    /// Similarity needed to join a cluster (`--cluster-sim`).
    pub sim: f32,
    /// Share of DOM-flagged members that makes a cluster noise. 0.9, tuned
    /// on the test web's ground truth: at 0.5 the article cluster of a site
    /// whose sidebars link many articles became "noise" and clustering cost
    /// 12 % of the content pages; at 0.9 it costs none.
    pub noise_share: f32,
    /// Standard deviations below the mean that make a member a deviant.
    pub deviation: f32,
    /// Smallest cluster in which deviants are looked for.
    pub min_deviation_size: usize,
    /// At most this many clusters per block; later URLs that fit none join
    /// the nearest one (bounds the cost on hostile blocks to O(n · cap)).
    pub max_clusters: usize,
}

/// The default `--cluster-sim`.
pub const DEFAULT_SIM: f32 = 0.8;

impl Default for ClusterConfig {
    fn default() -> Self {
        Self { sim: DEFAULT_SIM, noise_share: 0.9, deviation: 3.0, min_deviation_size: 8, max_clusters: 256 }
    }
}

/// One URL of a block.
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    pub url: &'a str,
    /// Flagged by the DOM prefilter on every page that linked it.
    pub dom_noise: bool,
}

/// Why an item is noise, if it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Its cluster matches the noise samples.
    NoiseCluster,
    /// It deviates strongly from its cluster.
    Deviant,
}

/// The clustering of a block: cluster index and verdict per item.
#[derive(Clone, Debug, Default)]
pub struct Clustering {
    pub cluster: Vec<usize>,
    pub verdict: Vec<Verdict>,
    pub clusters: usize,
    /// Pairwise similarity computations done.
    pub comparisons: u64,
}

/// Clusters `items` and judges them against `known_noise` URL samples.
#[must_use]
pub fn cluster_block(items: &[Item<'_>], known_noise: &[&str], cfg: &ClusterConfig) -> Clustering {
    let mut reps: Vec<Pattern> = Vec::new();
    let mut rep_url: Vec<usize> = Vec::new();
    let mut out = Clustering { cluster: Vec::with_capacity(items.len()), ..Clustering::default() };
    let mut sims: Vec<f32> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let bytes = item.url.as_bytes();
        let mut best = (usize::MAX, -1.0f32);
        for (c, rep) in reps.iter().enumerate() {
            let s = rep.similarity(bytes);
            out.comparisons += 1;
            if s > best.1 {
                best = (c, s);
            }
        }
        if best.0 != usize::MAX && (best.1 >= cfg.sim || reps.len() >= cfg.max_clusters) {
            out.cluster.push(best.0);
            sims.push(best.1);
        } else {
            reps.push(Pattern::new(bytes));
            rep_url.push(i);
            out.cluster.push(reps.len() - 1);
            sims.push(1.0);
        }
    }
    out.clusters = reps.len();
    // Per-cluster statistics.
    let mut members = vec![0usize; reps.len()];
    let mut flagged = vec![0usize; reps.len()];
    let mut sum = vec![0f64; reps.len()];
    let mut sum2 = vec![0f64; reps.len()];
    for (i, &c) in out.cluster.iter().enumerate() {
        members[c] += 1;
        flagged[c] += usize::from(items[i].dom_noise);
        sum[c] += f64::from(sims[i]);
        sum2[c] += f64::from(sims[i]) * f64::from(sims[i]);
    }
    let noise_patterns: Vec<Pattern> = known_noise.iter().map(|u| Pattern::new(u.as_bytes())).collect();
    let is_noise: Vec<bool> = (0..reps.len())
        .map(|c| {
            #[allow(clippy::cast_precision_loss)]
            let share = flagged[c] as f32 / members[c] as f32;
            share >= cfg.noise_share
                || noise_patterns.iter().any(|p| p.similarity(items[rep_url[c]].url.as_bytes()) >= cfg.sim)
        })
        .collect();
    out.verdict = out
        .cluster
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            if is_noise[c] {
                return Verdict::NoiseCluster;
            }
            if members[c] >= cfg.min_deviation_size {
                #[allow(clippy::cast_precision_loss)]
                let n = members[c] as f64;
                let mean = sum[c] / n;
                let sd = (sum2[c] / n - mean * mean).max(0.0).sqrt();
                if sd > 1e-6 && f64::from(sims[i]) < mean - f64::from(cfg.deviation) * sd {
                    return Verdict::Deviant;
                }
            }
            Verdict::Keep
        })
        .collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items<'a>(urls: &'a [&'a str], flagged: &[usize]) -> Vec<Item<'a>> {
        urls.iter().enumerate().map(|(i, u)| Item { url: u, dom_noise: flagged.contains(&i) }).collect()
    }

    #[test]
    fn similar_urls_share_a_cluster_and_others_do_not() {
        let urls = [
            "http://s1.test/article/1",
            "http://s1.test/article/22",
            "http://s1.test/tag/red?sort=new&page=9",
            "http://s1.test/article/333",
            "http://s1.test/tag/blue?sort=new&page=2",
        ];
        let c = cluster_block(&items(&urls, &[]), &[], &ClusterConfig::default());
        assert_eq!(c.cluster[0], c.cluster[1]);
        assert_eq!(c.cluster[0], c.cluster[3]);
        assert_eq!(c.cluster[2], c.cluster[4]);
        assert_ne!(c.cluster[0], c.cluster[2]);
        assert_eq!(c.clusters, 2);
        assert!(c.verdict.iter().all(|v| *v == Verdict::Keep));
        // Only representatives are compared against: 0 + 1 + 1 + 2 + 2.
        assert_eq!(c.comparisons, 6);
    }

    #[test]
    fn a_cluster_of_mostly_flagged_links_is_noise() {
        let urls = [
            "http://s1.test/about",
            "http://s1.test/about-us",
            "http://s1.test/about/team",
            "http://s1.test/article/1",
        ];
        // The shared `http://s1.test/` prefix makes short URLs look alike
        // (article/1 vs about is 0.78), so this block needs sim 0.85.
        let cfg = ClusterConfig { sim: 0.85, noise_share: 0.5, ..ClusterConfig::default() };
        let c = cluster_block(&items(&urls, &[0, 1]), &[], &cfg);
        assert_eq!(c.verdict[..3], [Verdict::NoiseCluster; 3], "{c:?}");
        assert_eq!(c.verdict[3], Verdict::Keep);
    }

    #[test]
    fn known_noise_patterns_mark_their_cluster() {
        let urls = ["http://s1.test/login?next=/a", "http://s1.test/login?next=/b", "http://s1.test/article/9"];
        let c = cluster_block(&items(&urls, &[]), &["http://s1.test/login?next=/x"], &ClusterConfig::default());
        assert_eq!(c.verdict, vec![Verdict::NoiseCluster, Verdict::NoiseCluster, Verdict::Keep]);
    }

    #[test]
    fn a_strong_deviant_inside_a_big_cluster_is_dropped() {
        let mut urls: Vec<String> = (0..20).map(|i| format!("http://s1.test/article/{i:04}")).collect();
        urls.push("http://s1.test/article/0001/print/x/y/z/q/r/s/t/u".to_string());
        let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
        let cfg = ClusterConfig { sim: 0.6, ..ClusterConfig::default() };
        let c = cluster_block(&items(&refs, &[]), &[], &cfg);
        assert_eq!(c.cluster[20], c.cluster[0], "joins the article cluster at sim 0.6");
        assert_eq!(c.verdict[20], Verdict::Deviant);
        assert!(c.verdict[..20].iter().all(|v| *v == Verdict::Keep));
    }

    #[test]
    fn cluster_count_is_capped() {
        let urls: Vec<String> = (0..50).map(|i| format!("{i}{}", "q".repeat(i))).collect();
        let refs: Vec<&str> = urls.iter().map(String::as_str).collect();
        let c = cluster_block(
            &items(&refs, &[]),
            &[],
            &ClusterConfig { max_clusters: 5, sim: 0.99, ..ClusterConfig::default() },
        );
        assert_eq!(c.clusters, 5);
        assert!(c.comparisons <= 50 * 5);
    }
}
