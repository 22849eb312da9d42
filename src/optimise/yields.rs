//! Step 2 of the optimise step, the noise filter's evidence: this layer's
//! pages judged and counted per link class, the partition's candidates
//! decided by their classes' yield ([`crate::denoise::yields`]), the
//! classes of the URLs followed kept for judging them after the next
//! layer, and the URLs skipped written to the `skipped` dataset.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use futures::StreamExt;
use rayon::prelude::*;

use crate::denoise::evidence::{self, Outcome, Sample, SeenTexts};
use crate::denoise::gate::Gate;
use crate::denoise::yields::{
    coarse_of, counts_batch, counts_rows, counts_schema, view_kind, ClassCount, Judged, PageClass, Tally, Verdict,
    Yields, COLD_BATCH, VIEW_BATCH,
};
use crate::error::StageError;
use crate::store::{layout, read_if_exists, stream_batches, ShardWriter, Store, StoreError};
use crate::urlnorm;

use super::{missing, off_async, Candidate};

mod carry;
mod skipped;
mod via;
pub(super) use carry::{add_deferred, read_held_back, write_deferred, write_gates};
pub(crate) use skipped::write_skipped;
pub use skipped::{skip_reason, skipped_classes, SkippedClass};
use via::read_via;
pub(super) use via::{write_via, Via};

/// The class counts of partition `k` after `layer`: those up to the layer
/// before, plus this layer's pages judged against every text the partition
/// fetched before them, with their file on its way to the data store (the
/// next layer starts from it; re-running the step rewrites the same file).
pub(super) struct Counted {
    /// Shared with the task writing them.
    pub yields: Arc<Yields>,
    /// The counts' file being sorted and written, beside the rest of the
    /// partition's step: awaited before the step commits.
    pub written: tokio::task::JoinHandle<Result<(), StoreError>>,
}

/// Counts partition `k`'s classes after `layer` ([`Counted`]). The pages
/// are judged in their order (whether a text is new depends on the pages
/// before it); then their outcomes are summed per page class and the
/// classes counted, both on every core: counts are sums, so parts counted
/// apart and merged are the counts of the whole. A page followed by a link
/// carries its class's key from the step that followed it ([`Via`]), so
/// its class is made once per class, from its first page, not once per
/// page (the documentation corpus's 13,795 pages at layer 2 fall in 6,162
/// classes).
/// `previous`: the previous crawl of the same sites with as many
/// partitions (`--previous`), whose counts are the evidence of the classes
/// this crawl has none of yet ([`Yields::set_prior`]).
pub(super) async fn count(store: Store, previous: Option<Store>, layer: u32, k: u32) -> Result<Counted, StageError> {
    let prior = async {
        match &previous {
            Some(p) => read_prior(p, layer, k).await.map(Some),
            None => Ok(None),
        }
    };
    let (before, mut seen, mut now, via, prior) = tokio::try_join!(
        read_counts(&store, layer, k),
        read_seen(&store, layer, k),
        read_samples(&store, layer, k),
        read_via(&store, layer, k),
        prior,
    )?;
    evidence::judging_order(&mut now);
    let yields = off_async("judging the layer's pages", move || {
        let outcomes: Vec<Outcome> = now.iter().map(|s| seen.judge(s)).collect();
        // Per class key: the first page of the class, and the class's tally.
        let classes = now
            .par_iter()
            .enumerate()
            .zip(outcomes)
            .with_min_len(1024)
            .fold(HashMap::new, |mut part: HashMap<u64, (usize, Tally)>, ((i, s), outcome)| {
                let key = via.class_key(&s.url);
                part.entry(key).or_insert((i, Tally::default())).1.add(Tally::of(outcome));
                part
            })
            .reduce(HashMap::new, |mut a, b| {
                for (key, (first, tally)) in b {
                    let e = a.entry(key).or_insert((first, Tally::default()));
                    e.0 = e.0.min(first);
                    e.1.add(tally);
                }
                a
            });
        let recorded = classes
            .par_iter()
            .fold(Yields::default, |mut part, (key, (first, tally))| {
                let url = &now[*first].url;
                let (templates, referrer) = via.get(url);
                let class = PageClass::of(url, referrer, &templates);
                debug_assert_eq!(class.key(), *key, "{url}: its class's key as stored");
                part.record_class(&class, *tally);
                part
            })
            .reduce(Yields::default, |mut a, b| {
                a.merge(b);
                a
            });
        let mut y = Yields::from_counts(before);
        y.add_layer(recorded);
        if let Some(Prior { before, after, last }) = prior {
            y.set_prior(before, after, last);
        }
        y
    })
    .await?;
    let yields = Arc::new(yields);
    let counts = Arc::clone(&yields);
    let written = tokio::spawn(async move {
        let path = layout::yields(layer, k);
        let rows = counts.sorted();
        if rows.is_empty() {
            return store.delete(&path).await;
        }
        let mut w = ShardWriter::create(&store, &path, counts_schema(), 8 << 20)?;
        for chunk in rows.chunks(8192) {
            w.write(
                &counts_batch(chunk).map_err(|e| StoreError::Schema { path: path.clone(), reason: e.to_string() })?,
            )
            .await?;
        }
        w.finish().await.map(|_| ())
    });
    Ok(Counted { yields, written })
}

/// Partition `k`'s class counts after the layer before `layer`.
async fn read_counts(store: &Store, layer: u32, k: u32) -> Result<Vec<ClassCount>, StoreError> {
    match layer {
        0 => Ok(Vec::new()),
        _ => read_counts_file(store, &layout::yields(layer - 1, k)).await,
    }
}

/// The class counts of the file at `path` (none where there is no file).
async fn read_counts_file(store: &Store, path: &str) -> Result<Vec<ClassCount>, StoreError> {
    let mut counts = Vec::new();
    for b in read_if_exists(store, path).await? {
        counts.extend(counts_rows(&b).ok_or_else(|| missing(path, "level, source, target, fetched, new"))?);
    }
    Ok(counts)
}

/// A previous crawl's class counts of one partition, as
/// [`Yields::set_prior`] takes them.
struct Prior {
    /// After the layer this crawl has just fetched...
    before: Vec<ClassCount>,
    /// ...after the next one, whose URLs it decides...
    after: Vec<ClassCount>,
    /// ...and after its last layer.
    last: Vec<ClassCount>,
}

/// What the previous crawl (`previous`, as many partitions) counted of
/// partition `k` after `layer`, the next layer and its last one. A crawl
/// shallower than this one has no counts of its deeper layers: none are
/// taken for them.
async fn read_prior(previous: &Store, layer: u32, k: u32) -> Result<Prior, StoreError> {
    let part = format!("/part-{k:05}.parquet");
    let last = previous
        .list(layout::YIELDS_DIR)
        .await?
        .iter()
        .filter(|(path, _)| path.ends_with(&part))
        .filter_map(|(path, _)| path.split("/layer=").nth(1)?.split('/').next()?.parse::<u32>().ok())
        .max();
    let Some(last) = last else {
        return Ok(Prior { before: Vec::new(), after: Vec::new(), last: Vec::new() });
    };
    let paths = [layout::yields(layer, k), layout::yields(layer + 1, k), layout::yields(last, k)];
    let (before, after, last) = tokio::try_join!(
        read_counts_file(previous, &paths[0]),
        read_counts_file(previous, &paths[1]),
        read_counts_file(previous, &paths[2]),
    )?;
    Ok(Prior { before, after, last })
}

/// The texts partition `k` fetched before `layer`.
pub(crate) async fn read_seen(store: &Store, layer: u32, k: u32) -> Result<SeenTexts, StoreError> {
    let mut seen = SeenTexts::default();
    for earlier in 0..layer {
        read_text_hashes(store, earlier, k, &mut seen).await?;
    }
    seen.freeze();
    Ok(seen)
}

/// The group a cold candidate waits in, whose first URLs are its probes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum ColdGroup {
    /// A class never fetched: its first source's coarse template and its
    /// own.
    Class(String, String),
    /// A view's host and kind ([`view_kind`]).
    View(String),
}

impl ColdGroup {
    /// How many of the group are fetched at once.
    fn batch(&self) -> usize {
        match self {
            Self::View(_) => VIEW_BATCH,
            Self::Class(..) => COLD_BATCH,
        }
    }

    /// The group's name in a [`Gate`] (its hash).
    fn id(&self) -> u64 {
        match self {
            Self::View(kind) => xxhash_rust::xxh3::xxh3_64(kind.as_bytes()),
            Self::Class(source, target) => {
                xxhash_rust::xxh3::xxh3_64(format!("{source}\n{target}").as_bytes()).wrapping_add(1)
            }
        }
    }
}

/// What the filter decided for a partition's candidates.
pub(super) struct Decisions {
    /// Per candidate, in their order: none for one not followed anyway.
    pub verdicts: Vec<Option<Verdict>>,
    /// Candidates of classes never fetched, beyond their first probes: they
    /// wait one layer for the probes' evidence.
    pub deferred: Vec<usize>,
    /// Candidates of classes never fetched on a host whose pages were
    /// mostly new, in a group larger than its first probes: the probes and
    /// the rest, decided in the next layer itself by the probes' pages
    /// ([`crate::denoise::gate`]), in candidate order.
    pub gates: Vec<(usize, Gate)>,
    pub probes: u64,
    /// Per candidate, the key of its class ([`PageClass::key`]): its page
    /// is counted by it ([`Via`]).
    pub classes: Vec<Option<u64>>,
}

/// Decides a partition's followed candidates. Those of a class never
/// fetched (`Verdict::Cold`) are grouped by their coarse class (their
/// first source's template and theirs, cut to two path segments):
/// the first [`COLD_BATCH`] of each, by a hash of the URL, are fetched as
/// probes and the rest deferred, unless they waited once already (`again`);
/// where their host's pages were mostly new ([`Yields::defers_cold`]), a
/// layer's wait costs more than it saves, and the rest go into the next
/// layer with the probes, held back there until the probes' pages decide
/// them ([`Decisions::gates`], [`crate::denoise::gate`]). Views
/// of the pages that link them ([`view_kind`]) are grouped by their host
/// and kind, [`VIEW_BATCH`] of each fetched, and wait on every host before
/// the crawl's depth.
pub(super) fn decide(yields: &Yields, cands: &[Candidate], depth: i32, again: &HashSet<u64>) -> Decisions {
    // The candidates' classes (with whether they are at the crawl's
    // depth, flipping the key's lowest bit), on every core: a large site's
    // partition is the last one the step waits for. Each distinct class is
    // then judged once, and its candidates take its judgement: the 40,664
    // candidates of the documentation corpus's second layer fall in 12,946
    // classes.
    let keyed: Vec<Option<(u64, PageClass, bool)>> = cands
        .par_iter()
        .map(|c| {
            c.followed.then(|| {
                let class = PageClass::of(&c.row.url, c.row.referrer.as_deref(), &c.via);
                let last = c.row.depth >= depth;
                (class.key() ^ u64::from(last), class, last)
            })
        })
        .collect();
    let mut index: HashMap<u64, usize> = HashMap::new();
    let mut distinct: Vec<(&PageClass, bool)> = Vec::new();
    let class_of: Vec<Option<usize>> = keyed
        .iter()
        .map(|k| {
            k.as_ref().map(|(key, class, last)| {
                *index.entry(*key).or_insert_with(|| {
                    distinct.push((class, *last));
                    distinct.len() - 1
                })
            })
        })
        .collect();
    let judged: Vec<(Judged, Option<(ColdGroup, bool)>)> = distinct
        .par_iter()
        .map(|(class, last)| {
            let judged = yields.judge(class, *last);
            let target = class.target.as_str();
            let view = class.via.iter().find_map(|s| view_kind(s, class.plain()));
            // Views wait on every host, but at the crawl's depth only where
            // other cold classes do: waiting there costs a layer.
            let cold = judged == Judged::Decided(Verdict::Cold);
            // Where waiting costs more than it saves (a site of mostly new
            // pages), the class is decided in the next layer itself.
            let waits = cold && ((view.is_some() && !last) || yields.defers_cold(target));
            let group = cold.then(|| {
                // The class its probes will give evidence of: the host's
                // views of that kind, or the coarse class. At the crawl's
                // depth a view waits as any cold target does (by its coarse
                // class): a smaller batch there would cost a catch-up layer.
                match view.filter(|_| !last) {
                    Some(kind) => ColdGroup::View(kind),
                    None => {
                        ColdGroup::Class(class.via.first().map_or(String::new(), |s| coarse_of(s)), coarse_of(target))
                    }
                }
            });
            (judged, group.map(|g| (g, waits)))
        })
        .collect();
    let decided: Vec<_> = cands
        .par_iter()
        .zip(&class_of)
        .map(|(c, class)| {
            class.map(|i| {
                let (judged, group) = &judged[i];
                // A candidate that waited once already is fetched now.
                let group = group.as_ref().filter(|_| !again.contains(&urlnorm::fingerprint_str(&c.row.url)));
                (judged.verdict(&c.row.url), group)
            })
        })
        .collect();
    let mut probes = 0;
    let mut cold: BTreeMap<&(ColdGroup, bool), Vec<(u64, usize)>> = BTreeMap::new();
    let verdicts = decided
        .into_iter()
        .enumerate()
        .map(|(i, d)| {
            d.map(|(v, group)| {
                probes += u64::from(v == Verdict::Probe);
                if let Some(key) = group {
                    cold.entry(key).or_default().push((xxhash_rust::xxh3::xxh3_64(cands[i].row.url.as_bytes()), i));
                }
                v
            })
        })
        .collect();
    let mut deferred = Vec::new();
    let mut gates = Vec::new();
    for ((key, waits), mut group) in cold {
        if group.len() <= key.batch() {
            // Its probes are all of it.
            continue;
        }
        group.sort_unstable();
        let (first, rest) = group.split_at(key.batch());
        if *waits {
            deferred.extend(rest.iter().map(|(_, i)| *i));
        } else {
            let id = key.id();
            gates.extend(first.iter().map(|(_, i)| (*i, Gate { group: id, probe: true })));
            gates.extend(rest.iter().map(|(_, i)| (*i, Gate { group: id, probe: false })));
        }
    }
    deferred.sort_unstable();
    gates.sort_unstable_by_key(|(i, _)| *i);
    let classes = keyed.iter().map(|k| k.as_ref().map(|(key, _, last)| key ^ u64::from(*last))).collect();
    Decisions { verdicts, deferred, gates, probes, classes }
}

/// The pages partition `k` fetched in `layer`, as the noise filter saw them.
async fn read_samples(store: &Store, layer: u32, k: u32) -> Result<Vec<Sample>, StoreError> {
    let path = layout::samples(layer, k);
    let mut out = Vec::new();
    for b in read_if_exists(store, &path).await? {
        match evidence::samples_rows(&b) {
            Some(rows) => out.extend(rows),
            // Samples of an older version are no evidence.
            None => tracing::debug!(path, "samples of another version: not read"),
        }
    }
    Ok(out)
}

/// The text fingerprints of the pages partition `k` fetched in an earlier
/// `layer`: only that column is read (the samples of every layer before
/// are read again after each layer).
async fn read_text_hashes(store: &Store, layer: u32, k: u32, seen: &mut SeenTexts) -> Result<(), StoreError> {
    let path = layout::samples(layer, k);
    if !store.exists(&path).await? {
        return Ok(());
    }
    let mut batches = stream_batches(store, &path, Some(&["text_hash"])).await?;
    while let Some(b) = batches.next().await {
        let b = b?;
        match b.column_by_name("text_hash").and_then(|c| c.as_primitive_opt::<Int64Type>()) {
            Some(h) => seen.add_hashes(h.iter().flatten().map(|v| u64::from_ne_bytes(v.to_ne_bytes()))),
            None => tracing::debug!(path, "samples of another version: not read"),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
