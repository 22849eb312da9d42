//! A layer's learned order, drawn with the Q-network
//! (docs/src/focused-crawling.md): which URL cluster the next URL comes
//! from, one draw at a time.
//!
//! The candidates are a partition's share of the next layer's input,
//! grouped by URL cluster (the noise filter's fine template, as the
//! ant-colony order's), each cluster's URLs best-first. At every draw each
//! cluster that still has URLs offers its next one; the Q-network scores
//! the offers from their [`features`] and the best is drawn (with
//! probability [`EPSILON`], a cluster picked at random instead: the
//! exploration that lets the crawl learn about clusters it would not try).
//!
//! A cluster's offer depends only on the cluster (its next URL, how many it
//! gave already), so every URL's features, and its Q-value, are known
//! before the first draw: they are computed in one pass, and the draws are
//! a merge of the clusters' lists by the Q-value of their heads.
//!
//! The first [`MAX_RANKED`] URLs of the input (best-first) are drawn; the
//! rest follow best-first, so that a huge partition costs a bounded
//! amount. The first [`MAX_RECORDED`] draws are kept as steps for the map
//! task to turn into transitions.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

use super::dqn::Dqn;
use super::embed::{Encoder, Z};
use super::nn::Candle;
use super::replay::{Steps, NEXT};
use super::rng::Rng;
use super::FEATURES;
use crate::focus::ant::{cluster, ClusterRow};
use crate::focus::Order;
use crate::store::schema::InRow;

/// The chance that a draw picks a cluster at random.
pub const EPSILON: f64 = 0.05;
/// URLs of a partition's input that are drawn; the rest follow best-first.
pub const MAX_RANKED: usize = 65_536;
/// Draws of a partition's input kept as steps.
pub const MAX_RECORDED: usize = 4096;

/// A partition's harvest per URL cluster so far: pages fetched and the sum
/// of their rewards.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Harvests {
    clusters: BTreeMap<String, (u64, f64)>,
    unseen: f64,
}

impl Harvests {
    /// The table of `rows` (a clusters file's).
    #[must_use]
    pub fn from_rows(rows: Vec<ClusterRow>) -> Self {
        let clusters: BTreeMap<String, (u64, f64)> =
            rows.into_iter().map(|r| (r.cluster, (r.pages, r.value))).collect();
        Self::new(clusters)
    }

    fn new(clusters: BTreeMap<String, (u64, f64)>) -> Self {
        let known: Vec<f64> = clusters.values().filter(|c| c.0 > 0).map(|&(n, sum)| Self::mean(n, sum)).collect();
        #[allow(clippy::cast_precision_loss)]
        let unseen = if known.is_empty() { 0.0 } else { known.iter().sum::<f64>() / known.len() as f64 };
        Self { clusters, unseen }
    }

    fn mean(pages: u64, sum: f64) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let m = sum / pages.max(1) as f64;
        m
    }

    /// The rows of the clusters file, by cluster.
    #[must_use]
    pub fn rows(&self) -> Vec<ClusterRow> {
        self.clusters.iter().map(|(c, &(pages, value))| ClusterRow { cluster: c.clone(), pages, value }).collect()
    }

    /// The table with one more layer's pages, `(url, reward)`.
    #[must_use]
    pub fn with(&self, outcomes: &[(String, f32)]) -> Self {
        let mut clusters = self.clusters.clone();
        for (url, reward) in outcomes {
            let c = clusters.entry(cluster(url)).or_default();
            c.0 += 1;
            c.1 += f64::from(*reward);
        }
        Self::new(clusters)
    }

    /// The mean reward of `cluster`'s pages, whether it has any, and how
    /// many; a cluster without pages gets the mean of the clusters known.
    #[must_use]
    pub fn of(&self, cluster: &str) -> (f64, bool, u64) {
        match self.clusters.get(cluster) {
            Some(&(n, sum)) if n > 0 => (Self::mean(n, sum), true, n),
            _ => (self.unseen, false, 0),
        }
    }
}

/// The features of a cluster's offer: its URL's link score (0 without
/// one) and whether it has none, its depth, the cluster's mean reward so
/// far, whether it has one, how many pages it is made of, how many URLs
/// the cluster gave in this layer already and how many it has left, and
/// the URL's code.
#[must_use]
pub fn features(row: &InRow, harvest: (f64, bool, u64), drawn: usize, left: usize, z: &[f32; Z]) -> [f32; FEATURES] {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let ln = |x: usize| ((1.0 + x as f64).ln() / 8.0) as f32;
    let mut f = [0f32; FEATURES];
    #[allow(clippy::cast_precision_loss)]
    {
        f[0] = row.priority.map_or(0.0, |p| p.max(0) as f32 / 1e6);
    }
    f[1] = if row.priority.is_none() { 1.0 } else { 0.0 };
    #[allow(clippy::cast_precision_loss)]
    {
        f[2] = row.depth.clamp(0, 10) as f32 / 10.0;
    }
    let (mean, known, pages) = harvest;
    #[allow(clippy::cast_possible_truncation)]
    {
        f[3] = mean as f32;
    }
    f[4] = if known { 1.0 } else { 0.0 };
    f[5] = ln(usize::try_from(pages).unwrap_or(usize::MAX));
    f[6] = ln(drawn);
    f[7] = ln(left.saturating_sub(1));
    f[8..].copy_from_slice(z);
    f
}

/// A partition's input in the learned order, and the draws kept as steps
/// (their value: the Q-value each was drawn with).
#[derive(Debug)]
pub struct Drawn {
    pub rows: Vec<InRow>,
    pub steps: Steps,
}

/// A Q-value as a heap key (greater first; ties to the earlier cluster).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Key(f32);

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Orders `rows` by drawing from their clusters with `dqn`, the URLs'
/// codes from `encoder`, the clusters' harvest from `harvests`, and the
/// exploration's coin from `rng`.
///
/// # Errors
/// On a candle failure.
pub fn draw(
    mut rows: Vec<InRow>,
    harvests: &Harvests,
    encoder: &Encoder,
    dqn: &Dqn,
    rng: &mut Rng,
) -> Result<Drawn, Candle> {
    Order::BestFirst.sort(&mut rows, None);
    let rest = rows.split_off(rows.len().min(MAX_RANKED));
    let n = rows.len();
    // The clusters, each with its rows best-first (the input's order).
    let mut by_cluster: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        by_cluster.entry(cluster(&r.url)).or_default().push(i);
    }
    let urls: Vec<&str> = rows.iter().map(|r| r.url.as_str()).collect();
    let codes = encoder.codes(&urls)?;
    let mut phi = vec![0f32; n * FEATURES];
    for (name, members) in &by_cluster {
        let harvest = harvests.of(name);
        for (k, &i) in members.iter().enumerate() {
            let f = features(&rows[i], harvest, k, members.len() - k, &codes[i]);
            phi[i * FEATURES..(i + 1) * FEATURES].copy_from_slice(&f);
        }
    }
    let q = dqn.q(&phi)?;
    let groups: Vec<Vec<usize>> = by_cluster.into_values().collect();

    // The merge: one live heap entry per cluster, its head; entries of a
    // head already drawn (after a random pick) are skipped when met.
    let mut pos = vec![0usize; groups.len()];
    let mut heap: BinaryHeap<(Key, Reverse<usize>, usize)> =
        groups.iter().enumerate().map(|(g, m)| (Key(q[m[0]]), Reverse(g), 0)).collect();
    let mut live: Vec<usize> = (0..groups.len()).collect();
    let valid = |pos: &[usize], g: usize, p: usize| pos[g] == p && p < groups[g].len();
    let mut order = Vec::with_capacity(n);
    let mut steps = Steps::default();
    for t in 0..n {
        let g = if rng.unit() < EPSILON {
            live[rng.below(live.len())]
        } else {
            loop {
                let (_, Reverse(g), p) = heap.pop().expect("a cluster has URLs left while some are undrawn");
                if valid(&pos, g, p) {
                    break g;
                }
            }
        };
        let i = groups[g][pos[g]];
        order.push(i);
        pos[g] += 1;
        if pos[g] < groups[g].len() {
            heap.push((Key(q[groups[g][pos[g]]]), Reverse(g), pos[g]));
        } else if let Ok(at) = live.binary_search(&g) {
            live.remove(at);
        }
        if t < MAX_RECORDED {
            // The next state: the best NEXT heads left.
            let mut best = Vec::with_capacity(NEXT);
            while best.len() < NEXT {
                match heap.pop() {
                    Some(e) if valid(&pos, e.1 .0, e.2) => best.push(e),
                    Some(_) => {}
                    None => break,
                }
            }
            let next: Vec<&[f32]> = best
                .iter()
                .map(|e| &phi[groups[e.1 .0][e.2] * FEATURES..(groups[e.1 .0][e.2] + 1) * FEATURES])
                .collect();
            let fp = crate::urlnorm::fingerprint_str(&rows[i].url);
            steps.push(fp, &phi[i * FEATURES..(i + 1) * FEATURES], &next, q[i]);
            heap.extend(best);
        }
    }
    let mut slots: Vec<Option<InRow>> = rows.into_iter().map(Some).collect();
    let mut out: Vec<InRow> = order.into_iter().map(|i| slots[i].take().expect("each row is drawn once")).collect();
    out.extend(rest);
    Ok(Drawn { rows: out, steps })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(url: &str, priority: Option<i32>) -> InRow {
        InRow { url: url.into(), depth: 1, referrer: None, priority, anchor: None, retries: 0 }
    }

    fn models() -> (Encoder, Dqn) {
        let mut rng = Rng::new(9, "init", 0, 0);
        (Encoder::new(&mut rng).expect("encoder"), Dqn::new(&mut rng).expect("dqn"))
    }

    #[test]
    fn an_untrained_network_draws_best_first_and_every_row_once() {
        let (enc, dqn) = models();
        let rows = vec![
            input("http://s.test/b/1", Some(900_000)),
            input("http://s.test/a/2", Some(300_000)),
            input("http://s.test/x/", None),
            input("http://s.test/b/2", Some(100_000)),
            input("http://s.test/a/1", Some(350_000)),
        ];
        // This seed explores in none of the five draws: the order is best-first's.
        let mut check = Rng::new(1, "draw", 1, 0);
        assert!((0..5).all(|_| check.unit() >= EPSILON), "pick a seed that does not explore");
        let mut rng = Rng::new(1, "draw", 1, 0);
        let drawn = draw(rows.clone(), &Harvests::default(), &enc, &dqn, &mut rng).expect("draw");
        let urls: Vec<&str> = drawn.rows.iter().map(|r| r.url.trim_start_matches("http://s.test/")).collect();
        assert_eq!(urls, ["b/1", "a/1", "a/2", "b/2", "x/"]);
        // A step per draw; the last has no next state, the first the heads left.
        assert_eq!(drawn.steps.len(), 5);
        assert!(drawn.steps.done(4) && !drawn.steps.done(0));
        assert_eq!(drawn.steps.fingerprint(0), crate::urlnorm::fingerprint_str(&drawn.rows[0].url));
        // Drawn again with the same seed: the same order.
        let again = draw(rows, &Harvests::default(), &enc, &dqn, &mut Rng::new(1, "draw", 1, 0)).expect("draw");
        assert_eq!(again.rows, drawn.rows);
        assert_eq!(again.steps, drawn.steps);
    }

    #[test]
    fn with_exploration_every_row_is_still_drawn_once() {
        let (enc, dqn) = models();
        // Twelve clusters (a letters-only segment is not folded), interleaved.
        let names = ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op", "qr", "st", "uv", "wx"];
        let rows: Vec<InRow> =
            (0..300).map(|i| input(&format!("http://s.test/{}/{i}", names[i as usize % 12]), Some(i * 3000))).collect();
        let drawn = draw(rows.clone(), &Harvests::default(), &enc, &dqn, &mut Rng::new(2, "draw", 1, 0)).expect("draw");
        let mut got: Vec<String> = drawn.rows.iter().map(|r| r.url.clone()).collect();
        let mut best_first = rows.clone();
        Order::BestFirst.sort(&mut best_first, None);
        assert_ne!(drawn.rows, best_first, "some draws explored");
        got.sort();
        let mut want: Vec<String> = rows.into_iter().map(|r| r.url).collect();
        want.sort();
        assert_eq!(got, want);
        assert_eq!(drawn.steps.len(), 300);
    }

    #[test]
    fn features_say_what_the_offer_is() {
        let z = [0.5f32; Z];
        let f = features(&input("http://s.test/a/1", Some(250_000)), (0.4, true, 3), 0, 5, &z);
        assert_eq!(&f[..5], &[0.25, 0.0, 0.1, 0.4, 1.0]);
        assert!((f[5] - (4f32).ln() / 8.0).abs() < 1e-6);
        assert_eq!(f[6], 0.0);
        assert!((f[7] - (5f32).ln() / 8.0).abs() < 1e-6);
        assert_eq!(&f[8..], &z);
        let none = features(&input("http://s.test/x/", None), (0.0, false, 0), 2, 1, &z);
        assert_eq!((none[0], none[1], none[7]), (0.0, 1.0, 0.0));
    }

    #[test]
    fn the_harvest_table_counts_pages_and_rewards_per_cluster() {
        let t = Harvests::default().with(&[
            ("http://s.test/a/1".into(), 0.8),
            ("http://s.test/a/2".into(), 0.4),
            ("http://s.test/b/1".into(), 0.0),
        ]);
        let (mean, known, pages) = t.of("s.test/a/*");
        assert!((mean - 0.6).abs() < 1e-6 && known && pages == 2);
        // A cluster never fetched gets the mean of the known clusters' means.
        let (unseen, known, _) = t.of("s.test/zzz/*");
        assert!((unseen - 0.3).abs() < 1e-6 && !known);
        assert_eq!(Harvests::from_rows(t.rows()), t, "a table read back is the same table");
    }
}
