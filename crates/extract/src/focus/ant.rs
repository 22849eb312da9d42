//! The ant-colony order of a layer's input (`--order ant`;
//! docs/src/focused-crawling.md).
//!
//! Best-first ranks a link target by what its link says (anchor text, the
//! linking page's relevance, the URL's words). The ant-colony model adds
//! what the crawl has learned about where relevant pages live: every URL
//! cluster carries a **pheromone** level `τ`, raised by the relevant pages
//! fetched in it and fading over the layers, and the targets in strong
//! clusters go first.
//!
//! - **Clusters.** A URL's cluster is its fine template
//!   ([`crate::denoise::evidence::templates`]: ids, dates and slugs folded,
//!   `s.test/news/*`), the same in every layer.
//! - **Deposits.** Every page scored against the plan (content pages that
//!   were parsed) deposits `1` when its relevance reaches the plan's
//!   threshold and its relevance otherwise. Nav pages, errors and files
//!   have no relevance: they neither deposit nor count.
//! - **The update, after each layer.** Every cluster's pheromone evaporates
//!   and takes in the mean deposit of its pages scored in the layer:
//!   `τ ← (1 − ρ)·τ + ρ·d̄`, with `d̄ = 0` for a cluster none of whose
//!   pages were scored (it only fades). A cluster scored for the first
//!   time starts from `τ0`, the mean pheromone of the clusters known before
//!   (this layer's mean deposit when none is): a new cluster is explored
//!   like an average one. `τ` stays between 0 and 1.
//! - **The priority** of a link target is `s^α · τ^β`: `s` its best link
//!   score (the input's `priority`), `τ` its cluster's pheromone, or `τ0`
//!   (the mean of the known clusters) for a cluster never scored, such as a
//!   nav page's or a site met for the first time. With no cluster known
//!   every target gets the same `τ` and the order is best-first's.
//!
//! A URL's template starts with its host, and a host's pages are fetched,
//! and the links to it optimised, in the partition of its site. So each
//! partition keeps a table of its own: its map task tallies the layer's
//! deposits (`state/focus/deposits/layer=L/part-K`), and its optimise task
//! updates the table of the layer before with them
//! (`state/focus/pheromone/layer=L/part-K`, written with the task's other
//! outputs under its commit) and orders its share of the next layer's
//! input by it. Priorities are compared only within a partition (a host's
//! queue, a partition's share of a page budget), so nothing needs the
//! other partitions' tables. The inputs are committed files and every sum
//! is exact (deposits are added in millionths) or taken in cluster order,
//! so a resumed run computes the same table.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::denoise::evidence::templates;
use crate::error::StageError;
use crate::store::{layout, read_if_exists, ShardWriter, Store, StoreError};

/// Evaporation per layer: the share of a cluster's pheromone that the
/// latest layer's deposits replace. A crawl has few layers, each a whole
/// generation of ants, so the last layer weighs as much as all before it.
pub const RHO: f64 = 0.5;
/// Weight of the link score in the priority (`s^α`).
pub const ALPHA: f64 = 1.0;
/// Weight of the cluster's pheromone in the priority (`τ^β`).
pub const BETA: f64 = 1.0;

/// A URL's cluster: its fine template (`s.test/news/*`).
#[must_use]
pub fn cluster(url: &str) -> String {
    let [fine, _coarse] = templates(url);
    fine
}

/// What a page of relevance `relevance` deposits under a plan whose
/// relevant pages start at `threshold`: a relevant page counts fully,
/// another by its relevance.
#[must_use]
pub fn deposit(relevance: f64, threshold: f64) -> f64 {
    if relevance >= threshold {
        1.0
    } else {
        relevance.clamp(0.0, 1.0)
    }
}

/// One cluster's row of a state file: in the deposits, the pages scored in
/// the layer and the sum of their deposits; in the pheromone table, the
/// pages scored in every layer so far and its `τ`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterRow {
    pub cluster: String,
    pub pages: u64,
    pub value: f64,
}

/// A map task's deposits, per cluster: pages scored and the sum of their
/// deposits in millionths, so the sums do not depend on the order the
/// pages were fetched in.
#[derive(Clone, Debug, Default)]
pub struct Deposits {
    threshold: f64,
    clusters: BTreeMap<String, (u64, u64)>,
}

impl Deposits {
    /// No deposits yet, under a plan whose relevant pages start at `threshold`.
    #[must_use]
    pub fn new(threshold: f64) -> Self {
        Self { threshold, clusters: BTreeMap::new() }
    }

    /// Adds the page at `url`, scored `relevance`.
    pub fn add(&mut self, url: &str, relevance: f64) {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let micros = (deposit(relevance, self.threshold) * 1e6).round() as u64;
        let e = self.clusters.entry(cluster(url)).or_default();
        e.0 += 1;
        e.1 += micros;
    }

    /// The rows of the deposits file, by cluster.
    #[must_use]
    pub fn rows(&self) -> Vec<ClusterRow> {
        #[allow(clippy::cast_precision_loss)]
        let sum = |micros: u64| micros as f64 / 1e6;
        self.clusters
            .iter()
            .map(|(c, &(pages, micros))| ClusterRow { cluster: c.clone(), pages, value: sum(micros) })
            .collect()
    }
}

/// One partition's pheromone table: per cluster, the pages scored so far
/// and its `τ`; and `τ0`, what a cluster not in it gets.
#[derive(Clone, Debug, PartialEq)]
pub struct Pheromone {
    trails: BTreeMap<String, (u64, f64)>,
    unseen: f64,
}

impl Default for Pheromone {
    /// No cluster known: every target gets `τ = 1`.
    fn default() -> Self {
        Self::new(BTreeMap::new())
    }
}

impl Pheromone {
    /// The table of `rows` (a pheromone file's).
    #[must_use]
    pub fn from_rows(rows: Vec<ClusterRow>) -> Self {
        Self::new(rows.into_iter().map(|r| (r.cluster, (r.pages, r.value))).collect())
    }

    fn new(trails: BTreeMap<String, (u64, f64)>) -> Self {
        #[allow(clippy::cast_precision_loss)]
        let unseen =
            if trails.is_empty() { 1.0 } else { trails.values().map(|t| t.1).sum::<f64>() / trails.len() as f64 };
        Self { trails, unseen }
    }

    /// The rows of the pheromone file, by cluster.
    #[must_use]
    pub fn rows(&self) -> Vec<ClusterRow> {
        self.trails.iter().map(|(c, &(pages, tau))| ClusterRow { cluster: c.clone(), pages, value: tau }).collect()
    }

    /// Whether no cluster is known yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.trails.is_empty()
    }

    /// `τ0`: the mean pheromone of the known clusters, 1 when none is known.
    #[must_use]
    pub fn unseen(&self) -> f64 {
        self.unseen
    }

    /// The pheromone of `url`'s cluster, `τ0` for a cluster not known.
    #[must_use]
    pub fn tau(&self, url: &str) -> f64 {
        self.trails.get(&cluster(url)).map_or(self.unseen, |t| t.1)
    }

    /// The table after one more layer, whose deposits are `deposits` (a
    /// deposits file's rows): every cluster evaporates, then the clusters
    /// scored in the layer take in their mean deposit; a cluster met for
    /// the first time starts from `τ0` (this layer's mean deposit when no
    /// cluster was known).
    #[must_use]
    pub fn next(&self, deposits: &[ClusterRow]) -> Self {
        let (pages, sum) = deposits.iter().fold((0u64, 0.0), |(n, s), r| (n + r.pages, s + r.value));
        #[allow(clippy::cast_precision_loss)]
        let start = if self.trails.is_empty() && pages > 0 { sum / pages as f64 } else { self.unseen };
        let mut trails = self.trails.clone();
        for t in trails.values_mut() {
            t.1 *= 1.0 - RHO;
        }
        for r in deposits.iter().filter(|r| r.pages > 0) {
            let t = trails.entry(r.cluster.clone()).or_insert((0, (1.0 - RHO) * start));
            t.0 += r.pages;
            #[allow(clippy::cast_precision_loss)]
            let mean = r.value / r.pages as f64;
            t.1 = (t.1 + RHO * mean).clamp(0.0, 1.0);
        }
        Self::new(trails)
    }

    /// The ant-colony priority of a target at `url` whose best link score
    /// is `priority` (in millionths): `s^α · τ^β`; none without a score.
    #[must_use]
    pub fn priority(&self, url: &str, priority: Option<i32>) -> Option<f64> {
        let s = f64::from(priority?.max(0)) / 1e6;
        Some(s.powf(ALPHA) * self.tau(url).powf(BETA))
    }
}

/// Schema of the state files: the cluster, its pages and `value` (`deposit`
/// in the deposits, `tau` in the pheromone table).
fn schema(value: &str) -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("cluster", DataType::Utf8, false),
        Field::new("pages", DataType::Int64, false),
        Field::new(value, DataType::Float64, false),
    ]))
}

/// Encodes rows under the column name `value`.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn batch(rows: &[ClusterRow], value: &str) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let c: StringArray = rows.iter().map(|r| Some(r.cluster.as_str())).collect();
    let p: Int64Array = rows.iter().map(|r| Some(i64::try_from(r.pages).unwrap_or(i64::MAX))).collect();
    let v: Float64Array = rows.iter().map(|r| Some(r.value)).collect();
    RecordBatch::try_new(schema(value), vec![Arc::new(c), Arc::new(p), Arc::new(v)])
}

/// Decodes rows whose value column is `value`; `None` when a column is
/// missing or of another type.
#[must_use]
pub fn rows(b: &RecordBatch, value: &str) -> Option<Vec<ClusterRow>> {
    let c = b.column_by_name("cluster")?.as_string_opt::<i32>()?;
    let p = b.column_by_name("pages")?.as_primitive_opt::<Int64Type>()?;
    let v = b.column_by_name(value)?.as_primitive_opt::<Float64Type>()?;
    Some(
        (0..b.num_rows())
            .map(|i| ClusterRow {
                cluster: c.value(i).to_string(),
                pages: u64::try_from(p.value(i)).unwrap_or(0),
                value: v.value(i),
            })
            .collect(),
    )
}

/// The value column of the deposits file.
const DEPOSIT: &str = "deposit";
/// The value column of the pheromone file.
const TAU: &str = "tau";

/// Writes `rows` to `path` (through `store`, an attempt's), or removes the
/// file when there are none.
pub(crate) async fn write(store: &Store, path: &str, rows: &[ClusterRow], value: &str) -> Result<(), StoreError> {
    if rows.is_empty() {
        return store.delete(path).await;
    }
    let mut w = ShardWriter::create(store, path, schema(value), 8 << 20)?;
    for chunk in rows.chunks(8192) {
        w.write(
            &batch(chunk, value).map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })?,
        )
        .await?;
    }
    w.finish().await?;
    Ok(())
}

/// Every row of the file at `path`, none when it does not exist.
pub(crate) async fn read(store: &Store, path: &str, value: &str) -> Result<Vec<ClusterRow>, StoreError> {
    let mut out = Vec::new();
    for b in read_if_exists(store, path).await? {
        out.extend(rows(&b, value).ok_or_else(|| StoreError::Schema {
            path: path.to_string(),
            reason: format!("columns cluster, pages, {value} missing or of another type"),
        })?);
    }
    Ok(out)
}

/// Writes the deposits of partition `part`'s pages of `layer` (a map task's
/// output, through its attempt's `store`).
///
/// # Errors
/// On storage failures.
pub async fn write_deposits(store: &Store, layer: u32, part: u32, deposits: &Deposits) -> Result<(), StoreError> {
    write(store, &layout::deposits(layer, part), &deposits.rows(), DEPOSIT).await
}

/// The pheromone table of partition `part` after `layer`.
///
/// # Errors
/// On storage failures, or a file of another shape.
pub async fn read_pheromone(store: &Store, layer: u32, part: u32) -> Result<Pheromone, StoreError> {
    Ok(Pheromone::from_rows(read(store, &layout::pheromone(layer, part), TAU).await?))
}

/// Partition `part`'s pheromone table after `layer`: the table after the
/// layer before, updated with this layer's deposits, and written (through
/// `store`, the optimise task's attempt) for the next layer to start from.
/// Run again, it writes the same table.
///
/// # Errors
/// On storage failures.
pub async fn advance(store: &Store, layer: u32, part: u32) -> Result<Pheromone, StageError> {
    let before = match layer.checked_sub(1) {
        Some(prev) => read_pheromone(store, prev, part).await?,
        None => Pheromone::default(),
    };
    let deposits = read(store, &layout::deposits(layer, part), DEPOSIT).await?;
    let after = before.next(&deposits);
    write(store, &layout::pheromone(layer, part), &after.rows(), TAU).await?;
    Ok(after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cluster: &str, pages: u64, value: f64) -> ClusterRow {
        ClusterRow { cluster: cluster.into(), pages, value }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn relevant_pages_deposit_fully_others_their_relevance_summed_per_cluster() {
        assert!(close(deposit(0.31, 0.3), 1.0));
        assert!(close(deposit(0.3, 0.3), 1.0));
        assert!(close(deposit(0.12, 0.3), 0.12));
        let mut d = Deposits::new(0.3);
        d.add("http://s.test/news/12-bridge", 0.8);
        d.add("http://s.test/news/13-river", 0.1);
        d.add("http://s.test/shop/item-9", 0.05);
        assert_eq!(d.rows(), vec![row("s.test/news/*", 2, 1.1), row("s.test/shop/*", 1, 0.05)]);
    }

    #[test]
    fn the_sums_do_not_depend_on_the_order_pages_came_in() {
        let pages: Vec<(String, f64)> =
            (0..200).map(|i| (format!("http://s.test/a/{i}"), f64::from(i % 17) * 0.013_7)).collect();
        let (mut fwd, mut back) = (Deposits::new(0.3), Deposits::new(0.3));
        for (u, r) in &pages {
            fwd.add(u, *r);
        }
        for (u, r) in pages.iter().rev() {
            back.add(u, *r);
        }
        assert_eq!(fwd.rows(), back.rows());
        let t = Pheromone::default().next(&fwd.rows());
        assert_eq!(t, Pheromone::default().next(&back.rows()));
        assert_eq!(Pheromone::from_rows(t.rows()), t, "a table read back is the same table");
    }

    #[test]
    fn pheromone_evaporates_and_takes_in_the_mean_deposit() {
        // First layer: nothing known, so a cluster starts from the layer's mean deposit.
        let first = Pheromone::default().next(&[row("s.test/a/*", 4, 3.0), row("s.test/b/*", 4, 1.0)]);
        // Layer mean 0.5; a: 0.5·0.5 + 0.5·0.75, b: 0.5·0.5 + 0.5·0.25.
        assert!(close(first.tau("http://s.test/a/1"), 0.625));
        assert!(close(first.tau("http://s.test/b/1"), 0.375));
        // Next layer: only b is scored, and well; a only fades.
        let second = first.next(&[row("s.test/b/*", 2, 2.0)]);
        assert!(close(second.tau("http://s.test/a/1"), 0.3125));
        assert!(close(second.tau("http://s.test/b/1"), 0.5 * 0.375 + 0.5));
        assert_eq!(second.rows()[1].pages, 6, "pages scored add up over the layers");
        // A layer with nothing scored: everything fades alike, the order stays.
        let third = second.next(&[]);
        assert!(close(third.tau("http://s.test/a/1"), 0.156_25));
        assert!(third.tau("http://s.test/b/1") > third.tau("http://s.test/a/1"));
        // Bounded by 0 and 1, whatever comes.
        let mut t = Pheromone::default();
        for _ in 0..10 {
            t = t.next(&[row("s.test/a/*", 1, 1.0), row("s.test/z/*", 1, 0.0)]);
        }
        assert!(t.tau("http://s.test/a/1") <= 1.0 && t.tau("http://s.test/z/1") >= 0.0);
        assert!(t.tau("http://s.test/a/1") > 0.99 && t.tau("http://s.test/z/1") < 0.01);
    }

    #[test]
    fn unseen_clusters_get_the_mean_and_a_new_cluster_starts_from_it() {
        assert!(close(Pheromone::default().unseen(), 1.0), "nothing known: one τ for all");
        let t = Pheromone::from_rows(vec![row("s.test/a/*", 3, 0.8), row("s.test/b/*", 3, 0.2)]);
        assert!(close(t.unseen(), 0.5));
        assert!(close(t.tau("http://s.test/topics/"), 0.5), "a nav page's cluster is never scored");
        assert!(close(t.tau("http://other.test/a/1"), 0.5), "nor is a new site's, before its pages are");
        // Met for the first time: from τ0 = 0.5, not from the layer's own mean.
        let next = t.next(&[row("s.test/c/*", 1, 1.0)]);
        assert!(close(next.tau("http://s.test/c/1"), 0.5 * 0.5 + 0.5));
    }

    #[test]
    fn the_priority_is_the_link_score_times_the_clusters_pheromone() {
        let t = Pheromone::from_rows(vec![row("s.test/a/*", 3, 0.9), row("s.test/b/*", 3, 0.1)]);
        let p = |url: &str, s: Option<i32>| t.priority(url, s);
        assert!(close(p("http://s.test/a/1", Some(500_000)).expect("scored"), 0.45));
        assert!(close(p("http://s.test/b/1", Some(500_000)).expect("scored"), 0.05));
        // A weaker link into a strong cluster beats a stronger one into a weak cluster.
        assert!(p("http://s.test/a/2", Some(200_000)) > p("http://s.test/b/2", Some(900_000)));
        // An unknown cluster at τ0 = 0.5.
        assert!(close(p("http://s.test/x/", Some(400_000)).expect("scored"), 0.2));
        assert_eq!(p("http://s.test/a/3", None), None, "no score, no priority");
        // With nothing known the order is the link score's.
        let none = Pheromone::default();
        assert!(close(none.priority("http://s.test/a/1", Some(300_000)).expect("scored"), 0.3));
    }

    #[test]
    fn the_input_goes_in_the_ants_order_and_without_a_table_in_best_firsts() {
        use crate::focus::Order;
        use crate::store::schema::InRow;
        let input = |url: &str, priority: Option<i32>| InRow {
            url: url.into(),
            depth: 1,
            referrer: None,
            priority,
            anchor: None,
            retries: 0,
        };
        let mut rows = vec![
            input("http://s.test/x/", None),
            input("http://s.test/b/1", Some(900_000)),
            input("http://s.test/a/2", Some(300_000)),
            input("http://s.test/b/2", Some(100_000)),
            input("http://s.test/a/1", Some(300_000)),
        ];
        let urls = |rows: &[InRow]| {
            rows.iter().map(|r| r.url.trim_start_matches("http://s.test/").to_string()).collect::<Vec<_>>()
        };
        let t = Pheromone::from_rows(vec![row("s.test/a/*", 2, 0.9), row("s.test/b/*", 2, 0.1)]);
        // a: 0.27 each (a tie: URL order), b/1: 0.09, b/2: 0.01; no score last.
        Order::Ant.sort(&mut rows, Some(&t));
        assert_eq!(urls(&rows), ["a/1", "a/2", "b/1", "b/2", "x/"]);
        Order::Ant.sort(&mut rows, None);
        assert_eq!(urls(&rows), ["b/1", "a/1", "a/2", "b/2", "x/"], "no table: best-first");
        Order::BestFirst.sort(&mut rows, Some(&t));
        assert_eq!(urls(&rows), ["b/1", "a/1", "a/2", "b/2", "x/"], "best-first ignores the table");
        Order::Bfs.sort(&mut rows, Some(&t));
        assert_eq!(urls(&rows), ["a/1", "a/2", "b/1", "b/2", "x/"]);
    }

    #[tokio::test]
    async fn each_layers_table_starts_from_the_one_before_and_a_rerun_writes_the_same() {
        let store = Store::open("memory://").expect("store");
        let mut d0 = Deposits::new(0.3);
        d0.add("http://s.test/a/1", 0.9);
        d0.add("http://s.test/b/1", 0.0);
        write_deposits(&store, 0, 3, &d0).await.expect("deposits");
        let t0 = advance(&store, 0, 3).await.expect("layer 0");
        assert_eq!(read_pheromone(&store, 0, 3).await.expect("read"), t0);
        assert!(t0.tau("http://s.test/a/9") > t0.tau("http://s.test/b/9"));
        // Layer 1's map task found nothing to score: its table is layer 0's, faded.
        let t1 = advance(&store, 1, 3).await.expect("layer 1");
        assert_eq!(t1, t0.next(&[]));
        assert_eq!(advance(&store, 1, 3).await.expect("again"), t1, "run again, the same table");
        assert_eq!(read_pheromone(&store, 1, 3).await.expect("read"), t1);
        assert!(read_pheromone(&store, 1, 4).await.expect("read").is_empty(), "another partition's is its own");
    }

    #[test]
    fn state_rows_round_trip() {
        let r = vec![row("s.test/a/*", 7, 0.625), row("s.test/topics/", 1, 0.0)];
        for value in [DEPOSIT, TAU] {
            assert_eq!(rows(&batch(&r, value).expect("batch"), value).expect("decode"), r);
        }
        assert!(rows(&batch(&r, TAU).expect("batch"), DEPOSIT).is_none(), "the other file's column");
    }
}
