//! One threshold over the whole layer for the page budget (`--max-pages`;
//! docs/src/focused-crawling.md, "A page budget").
//!
//! Each optimise task writes its partition's share of the next layer's
//! input best first, and beside it a [`Ranks`] histogram: how many of its
//! URLs have each rank in the run's order (`focus::Order::rank`, in
//! millionths of a priority; none for a URL without one, ranked last).
//! When the layer is sealed, [`split`] merges the partitions' histograms,
//! finds the cutoff rank at which the layer's best URLs reach the budget,
//! and gives each partition a quota: its URLs ranked above the cutoff, and
//! a share of those ranked at it, in proportion to how many it has there
//! (largest remainders first, then the lower partition number). The quotas
//! sum to the budget exactly; they are written in the layer's input
//! manifest, and each map task fetches that many URLs from the first of
//! its input, carrying the rest over. A partition of weak links thus gets
//! few pages or none, and the budget goes where the best links are. It is
//! a function of the histograms alone, so a resumed crawl gets the same.
//!
//! Orders that do not rank URLs (`bfs`) keep the share in proportion to
//! each partition's input (`map::urls::partition_quota`).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::store::manifest::LayerBudget;
use crate::store::{read_if_exists, ShardWriter, Store, StoreError};

/// How many URLs of one partition's input have each rank (none: no
/// priority, ranked below every number).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ranks(pub(crate) BTreeMap<Option<i32>, u64>);

impl Ranks {
    /// The histogram of `ranks`.
    pub(crate) fn of(ranks: impl IntoIterator<Item = Option<i32>>) -> Self {
        let mut h = BTreeMap::new();
        for r in ranks {
            *h.entry(r).or_insert(0) += 1;
        }
        Self(h)
    }

    /// URLs counted.
    pub(crate) fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// Writes the histogram to `path` (through `store`, the optimise
    /// task's attempt).
    pub(crate) async fn write(&self, store: &Store, path: &str) -> Result<(), StoreError> {
        let rank: Int32Array = self.0.keys().copied().collect();
        let urls: Int64Array = self.0.values().map(|&n| Some(i64::try_from(n).unwrap_or(i64::MAX))).collect();
        let cols: Vec<ArrayRef> = vec![Arc::new(rank), Arc::new(urls)];
        let batch = RecordBatch::try_new(schema(), cols)
            .map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })?;
        let mut w = ShardWriter::create(store, path, schema(), 1 << 20)?;
        w.write(&batch).await?;
        w.finish().await?;
        Ok(())
    }

    /// The histogram at `path`; none when there is no file.
    pub(crate) async fn read(store: &Store, path: &str) -> Result<Option<Self>, StoreError> {
        if !store.exists(path).await? {
            return Ok(None);
        }
        let mut h = BTreeMap::new();
        for b in read_if_exists(store, path).await? {
            let bad =
                || StoreError::Schema { path: path.to_string(), reason: "columns `rank`, `urls` expected".into() };
            let rank = b.column_by_name("rank").and_then(|c| c.as_primitive_opt::<Int32Type>()).ok_or_else(bad)?;
            let urls = b.column_by_name("urls").and_then(|c| c.as_primitive_opt::<Int64Type>()).ok_or_else(bad)?;
            for i in 0..b.num_rows() {
                let r = (!rank.is_null(i)).then(|| rank.value(i));
                *h.entry(r).or_insert(0) += u64::try_from(urls.value(i)).unwrap_or(0);
            }
        }
        Ok(Some(Self(h)))
    }
}

fn schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("rank", DataType::Int32, true),
            Field::new("urls", DataType::Int64, false),
        ]))
    }))
}

/// The budget `max` over a layer whose partitions' inputs rank as
/// `parts` (one histogram per partition, in partition order): the cutoff
/// and each partition's quota. None when every URL fits the budget.
#[must_use]
pub(crate) fn split(parts: &[Ranks], max: u64) -> Option<LayerBudget> {
    let mut layer: BTreeMap<Option<i32>, u64> = BTreeMap::new();
    for p in parts {
        for (&r, &n) in &p.0 {
            *layer.entry(r).or_insert(0) += n;
        }
    }
    if layer.values().sum::<u64>() <= max {
        return None;
    }
    // Best first: the cutoff is the rank at which the running count
    // reaches the budget.
    let mut above = 0;
    let (cutoff, at_cutoff) = layer
        .iter()
        .rev()
        .find(|(_, &n)| {
            if above + n >= max {
                return true;
            }
            above += n;
            false
        })
        .map(|(&r, &n)| (r, n))
        .expect("the layer has more URLs than the budget");
    let rest = max - above;
    // Each partition's URLs at the cutoff, and its exact share of `rest`.
    let here: Vec<u64> = parts.iter().map(|p| p.0.get(&cutoff).copied().unwrap_or(0)).collect();
    let mut quotas: Vec<u64> = parts
        .iter()
        .map(|p| p.0.range((std::ops::Bound::Excluded(cutoff), std::ops::Bound::Unbounded)).map(|(_, n)| n).sum())
        .collect();
    let mut remainders = Vec::with_capacity(parts.len());
    let mut given = 0;
    for (k, &h) in here.iter().enumerate() {
        let exact = u128::from(rest) * u128::from(h);
        let share = u64::try_from(exact / u128::from(at_cutoff)).expect("a share is at most the budget");
        quotas[k] += share;
        given += share;
        remainders.push((exact % u128::from(at_cutoff), k));
    }
    // What rounding down left goes one URL each to the largest remainders
    // (a partition whose remainder is not zero has URLs left at the cutoff).
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, k) in remainders.iter().take(usize::try_from(rest - given).unwrap_or(usize::MAX)) {
        quotas[k] += 1;
    }
    Some(LayerBudget { max_pages: max, cutoff, at_cutoff, admitted_at_cutoff: rest, quotas })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(pairs: &[(Option<i32>, u64)]) -> Ranks {
        Ranks(pairs.iter().copied().collect())
    }

    #[test]
    fn the_budget_goes_to_the_best_urls_of_the_layer() {
        // Partition 0: strong links; partition 1: weak ones, and more of them.
        let strong = ranks(&[(Some(900_000), 10), (Some(800_000), 5), (Some(300_000), 5)]);
        let weak = ranks(&[(Some(400_000), 20), (Some(100_000), 30), (None, 10)]);
        let b = split(&[strong.clone(), weak.clone()], 25).expect("a cut");
        assert_eq!(b.quotas, [15, 10], "the strong partition's 15 best, then the weak one's 10 best");
        assert_eq!((b.cutoff, b.at_cutoff, b.admitted_at_cutoff), (Some(400_000), 20, 10));
        // In proportion to their inputs the weak partition would have had 18 of 25.
        let b = split(&[strong.clone(), weak.clone()], 16).expect("a cut");
        assert_eq!(b.quotas, [15, 1]);
        let b = split(&[strong, weak], 10).expect("a cut");
        assert_eq!(b.quotas, [10, 0], "the weak partition fetches nothing");
    }

    #[test]
    fn ties_at_the_cutoff_are_split_in_proportion_and_the_quotas_sum_to_the_budget() {
        let parts = [
            ranks(&[(Some(500_000), 3)]),
            ranks(&[(Some(500_000), 3)]),
            ranks(&[(Some(500_000), 3), (Some(600_000), 1)]),
            ranks(&[]),
        ];
        let b = split(&parts, 5).expect("a cut");
        // 1 above the cutoff; 4 of the 9 at it: 4/3 each, one left over for
        // the first of the equal remainders.
        assert_eq!(b.quotas, [2, 1, 2, 0]);
        assert_eq!(b.quotas.iter().sum::<u64>(), 5);
        for max in 1..10 {
            let b = split(&parts, max).expect("a cut");
            assert_eq!(b.quotas.iter().sum::<u64>(), max, "{b:?}");
            assert!(b.quotas.iter().zip(&parts).all(|(q, p)| *q <= p.total()), "{b:?}");
        }
        assert_eq!(split(&parts, 10), None, "everything fits");
    }

    #[test]
    fn urls_without_a_priority_come_last_and_alone_split_in_proportion() {
        // The seeds: no priorities anywhere.
        let parts = [ranks(&[(None, 30)]), ranks(&[(None, 10)])];
        let b = split(&parts, 20).expect("a cut");
        assert_eq!((b.cutoff, b.quotas.clone()), (None, vec![15, 5]));
        let parts = [ranks(&[(None, 30)]), ranks(&[(Some(0), 10)])];
        assert_eq!(split(&parts, 20).expect("a cut").quotas, [10, 10], "a priority of 0 ranks above none");
    }

    #[tokio::test]
    async fn a_histogram_round_trips_through_its_file() {
        let store = Store::open("memory://").expect("store");
        let h = ranks(&[(None, 3), (Some(0), 1), (Some(1_000_000), 7)]);
        h.write(&store, "state/budget/layer=1/part-00000.parquet").await.expect("write");
        let back = Ranks::read(&store, "state/budget/layer=1/part-00000.parquet").await.expect("read");
        assert_eq!(back, Some(h));
        assert_eq!(Ranks::read(&store, "state/budget/layer=1/part-00001.parquet").await.expect("read"), None);
    }
}
