//! Step 2 of the optimise step: the labels a partition's candidates get
//! (traps, LCS clustering) and their rewrite into the layer's links.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, BooleanArray, RecordBatch};
use futures::StreamExt;
use rayon::prelude::*;

use crate::denoise::{noise_by_cluster, BlockUrl, Method, NoiseLabel};
use crate::error::StageError;
use crate::store::dataset::LINKS;
use crate::store::{layout, schema};
use crate::store::{rewrite_columns, Store, StoreError};
use crate::urlnorm;

use super::{bool_col, link_shards, Candidate};

/// The fingerprints of one partition's followed URLs that clustering
/// judged noise, the clusters made and the comparisons done. Domain blocks
/// are clustered in parallel.
pub(super) fn cluster_partition(
    cands: &[Candidate],
    known: &[&str],
    cfg: &crate::denoise::cluster::ClusterConfig,
    method: Method,
) -> (Vec<u64>, u64, u64) {
    // Domain blocks of distinct URLs, each in URL order: single-pass
    // clustering depends on order, and the links' order depends on which
    // fetch finished first, so sorting keeps a resumed run identical.
    let mut by_domain: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
    for c in cands {
        by_domain.entry(c.domain.as_str()).or_default().push(c);
    }
    let blocks: Vec<Vec<&Candidate>> = by_domain.into_values().collect();
    blocks
        .par_iter()
        .map(|block| {
            // `cands` is in URL order with one entry per URL, so each block is too.
            let urls: Vec<BlockUrl> =
                block.iter().map(|c| BlockUrl { url: c.row.url.clone(), dom_noise: c.dom }).collect();
            let v = noise_by_cluster(&urls, known, cfg, method);
            // Only links that would be followed need the label: in strict
            // mode the DOM-flagged ones are not, and have theirs.
            let noise: Vec<u64> = block
                .iter()
                .zip(&v.noise)
                .filter(|(c, n)| **n && if method == Method::Strict { c.content } else { c.followed })
                .map(|(c, _)| urlnorm::fingerprint_str(&c.row.url))
                .collect();
            (noise, v.clusters as u64, v.comparisons)
        })
        .reduce(
            || (Vec::new(), 0, 0),
            |mut a, b| {
                a.0.extend(b.0);
                (a.0, a.1 + b.1, a.2 + b.2)
            },
        )
}

/// Trap URLs among the followable candidates: ever-deeper paths (a path
/// segment repeated 3 or more times, or more than [`MAX_SEGMENTS`]) and
/// query explosions (more than `budget` distinct queries for one host and
/// path in this layer: the first `budget` in URL order are kept, so the
/// choice does not depend on fetch order).
pub(super) fn find_traps(cands: &[Candidate], budget: usize) -> HashMap<u64, NoiseLabel> {
    let mut out = HashMap::new();
    let mut variants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for c in cands.iter().filter(|c| c.followed) {
        let url = c.row.url.as_str();
        let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
        let path = base.split_once("://").map_or(base, |(_, r)| r.find('/').map_or("", |at| &r[at..]));
        if deep_path(path) {
            out.insert(urlnorm::fingerprint_str(url), NoiseLabel::Trap);
        } else if query.is_some() {
            variants.entry(base).or_default().insert(url);
        }
    }
    for urls in variants.values().filter(|v| v.len() > budget) {
        out.extend(urls.iter().skip(budget).map(|u| (urlnorm::fingerprint_str(u), NoiseLabel::Trap)));
    }
    out
}

/// Paths longer than this many segments are traps.
const MAX_SEGMENTS: usize = 32;

fn deep_path(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() > MAX_SEGMENTS {
        return true;
    }
    let mut counts: HashMap<&str, u32> = HashMap::new();
    segments.iter().any(|s| {
        let n = counts.entry(s).or_default();
        *n += 1;
        *n >= 3
    })
}

/// Rewrites `links/layer=L` shards so that links to labelled targets carry
/// their label: `lcs_cluster` and `barren` (followed only with `--denoise
/// mark`) or `trap` (never followed). Only the shards among `sources` (the
/// shards that link to a labelled target, `shuffle::shard_bit`) are read;
/// each is replaced atomically, and those without such links are left
/// alone. Shards are rewritten in parallel, one per core at a time; reading
/// and writing are async, the per-row work (fingerprints, new columns) runs
/// off the async threads. Returns how many shards were read.
pub(super) async fn relabel_links(
    store: &Store,
    layer: u32,
    noise: HashMap<u64, NoiseLabel>,
    sources: u64,
    mark: bool,
) -> Result<usize, StageError> {
    let noise = Arc::new(noise);
    let cores = crate::error::cores();
    let paths: Vec<String> =
        link_shards(store, layer).await?.into_iter().filter(|p| crate::shuffle::shard_bit(p) & sources != 0).collect();
    let read = paths.len();
    let mut shards = futures::stream::iter(paths)
        .map(|path| {
            let (store, noise) = (store.clone(), Arc::clone(&noise));
            tokio::spawn(async move { relabel_shard(&store, &path, &noise, mark).await })
        })
        .buffer_unordered(cores);
    while let Some(joined) = shards.next().await {
        joined.map_err(|e| {
            StageError::Internal(format!("relabelling {} failed: {e}", layout::layer_dir(LINKS.name, layer)))
        })??;
    }
    Ok(read)
}

/// Writes the labels into one links shard, if any of its links gets one:
/// only its `noise` and `followed` columns are encoded again, and only in
/// the row groups where a link gets a label (`store::rewrite_columns`).
/// The link targets are read as their column's dictionary (they are
/// written in one: `Tuning::REPEATED`), and each distinct target is looked
/// up once per column chunk: a site's shard holds a million links to some
/// forty thousand targets.
async fn relabel_shard(
    store: &Store,
    path: &str,
    noise: &Arc<HashMap<u64, NoiseLabel>>,
    mark: bool,
) -> Result<(), StageError> {
    let (noise, owned) = (Arc::clone(noise), path.to_string());
    let mut targets = TargetLabels::default();
    rewrite_columns(store, path, &["dst_url", "noise", "followed"], &["dst_url"], &["noise", "followed"], move |b| {
        relabel_batch(b, &owned, &noise, &mut targets, mark)
    })
    .await?;
    Ok(())
}

/// The label of each value of the link targets' dictionary of the column
/// chunk being read (the same array in all its batches).
#[derive(Default)]
struct TargetLabels {
    dictionary: Option<ArrayRef>,
    labels: Vec<Option<NoiseLabel>>,
}

impl TargetLabels {
    /// The label of each value of `values`, a batch's dictionary of link
    /// targets: looked up when it is a new chunk's.
    fn of(
        &mut self,
        values: &ArrayRef,
        path: &str,
        noise: &HashMap<u64, NoiseLabel>,
    ) -> Result<&[Option<NoiseLabel>], StoreError> {
        if !self.dictionary.as_ref().is_some_and(|d| Arc::ptr_eq(d, values)) {
            let urls = values.as_string_opt::<i32>().ok_or_else(|| super::missing(path, "dst_url"))?;
            self.labels =
                urls.iter().map(|u| u.and_then(|u| noise.get(&urlnorm::fingerprint_str(u)).copied())).collect();
            self.dictionary = Some(Arc::clone(values));
        }
        Ok(&self.labels)
    }
}

/// The labels of a batch's links as they are, and the label each gets now,
/// if any: unlabelled links, and links the DOM prefilter only suspected (its
/// suspicion is kept in `block_ratio`), take their target's label; links
/// labelled for other reasons keep theirs.
#[allow(clippy::type_complexity)]
fn new_labels(
    b: &RecordBatch,
    path: &str,
    noise: &HashMap<u64, NoiseLabel>,
    targets: &mut TargetLabels,
) -> Result<(Vec<Option<NoiseLabel>>, Vec<Option<NoiseLabel>>), StoreError> {
    let dst = b
        .column_by_name("dst_url")
        .and_then(|c| c.as_dictionary_opt::<Int32Type>())
        .ok_or_else(|| super::missing(path, "dst_url"))?;
    let of_value = targets.of(dst.values(), path, noise)?;
    let now = schema::noise_labels(b, path)?;
    let hits = now
        .iter()
        .zip(dst.keys())
        .map(|(label, key)| match label {
            None | Some(NoiseLabel::DomRatio) => {
                key.and_then(|k| usize::try_from(k).ok()).and_then(|k| of_value.get(k).copied().flatten())
            }
            Some(_) => None,
        })
        .collect();
    Ok((now, hits))
}

/// The new `noise` and `followed` columns of a batch of links (with at
/// least those and `dst_url`), or `None` when no link gets a label.
fn relabel_batch(
    b: &RecordBatch,
    path: &str,
    noise: &HashMap<u64, NoiseLabel>,
    targets: &mut TargetLabels,
    mark: bool,
) -> Result<Option<RecordBatch>, StoreError> {
    let (now, hits) = new_labels(b, path, noise, targets)?;
    if hits.iter().all(Option::is_none) {
        return Ok(None);
    }
    let followed = bool_col(b, "followed", path)?;
    let labels: Vec<Option<NoiseLabel>> = hits.iter().zip(&now).map(|(hit, label)| hit.or(*label)).collect();
    let follows: BooleanArray = hits
        .iter()
        .enumerate()
        .map(|(i, hit)| {
            Some(match hit {
                Some(label) => mark && label.followed_when_marked(),
                None => followed.value(i),
            })
        })
        .collect();
    let noise: ArrayRef = Arc::new(schema::noise_array(&labels));
    let followed: ArrayRef = Arc::new(follows);
    RecordBatch::try_from_iter([("noise", noise), ("followed", followed)])
        .map(Some)
        .map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })
}

/// Writes one target partition's labels for the seal: per target, its URL
/// fingerprint (8 bytes, little-endian) and the label's index in
/// [`NoiseLabel::ALL`] (1 byte), in fingerprint order.
pub(super) async fn write_labels(
    store: &Store,
    path: &str,
    labels: &HashMap<u64, NoiseLabel>,
) -> Result<(), StoreError> {
    let mut sorted: Vec<(u64, NoiseLabel)> = labels.iter().map(|(fp, l)| (*fp, *l)).collect();
    sorted.sort_unstable();
    let mut bytes = Vec::with_capacity(sorted.len() * 9);
    for (fp, label) in sorted {
        bytes.extend_from_slice(&fp.to_le_bytes());
        bytes.push(NoiseLabel::ALL.iter().position(|l| *l == label).map_or(u8::MAX, |i| i as u8));
    }
    store.put(path, bytes.into()).await
}

/// Reads what [`write_labels`] wrote.
pub(super) async fn read_labels(store: &Store, path: &str) -> Result<Vec<(u64, NoiseLabel)>, StoreError> {
    let bad = |reason: &str| StoreError::Schema { path: path.to_string(), reason: reason.to_string() };
    let bytes = store.get(path).await?.ok_or_else(|| bad("the labels file is missing"))?;
    if bytes.len() % 9 != 0 {
        return Err(bad("not a labels file (its size is not a multiple of 9 bytes)"));
    }
    bytes
        .chunks_exact(9)
        .map(|c| {
            let fp = u64::from_le_bytes(c[..8].try_into().map_err(|_| bad("short entry"))?);
            let label = *NoiseLabel::ALL.get(usize::from(c[8])).ok_or_else(|| bad("unknown label"))?;
            Ok((fp, label))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::InRow;

    fn cand(url: &str) -> Candidate {
        let domain = urlnorm::registrable_domain(urlnorm::host_of(url));
        Candidate {
            row: InRow { url: url.to_string(), depth: 1, referrer: None, priority: None, anchor: None, retries: 0 },
            domain,
            followed: true,
            dom: false,
            content: true,
            via: Vec::new(),
            sources: 0,
        }
    }

    #[test]
    fn deep_paths_and_query_explosions_are_traps() {
        assert!(deep_path("/docs/a/a/a/"));
        assert!(deep_path(&"/x".repeat(MAX_SEGMENTS + 1)));
        assert!(!deep_path("/2026/11/22/a-b"));
        assert!(!deep_path("/a/b/a/c"));
        let mut part: Vec<Candidate> = (0..7).map(|i| cand(&format!("http://s.test/search?q={i}"))).collect();
        part.push(cand("http://s.test/docs/a/a/a/"));
        part.push(cand("http://s.test/other?x=1"));
        let traps = find_traps(&part, 5);
        let trapped: BTreeSet<u64> = traps.keys().copied().collect();
        let fp = urlnorm::fingerprint_str;
        let want: BTreeSet<u64> =
            [fp("http://s.test/search?q=5"), fp("http://s.test/search?q=6"), fp("http://s.test/docs/a/a/a/")]
                .into_iter()
                .collect();
        assert_eq!(trapped, want, "the first five queries in URL order are kept");
    }

    /// A site's links shard of several row groups (so several dictionaries
    /// of targets): each link to a labelled target takes its label unless it
    /// has one of its own other than the prefilter's suspicion, and every
    /// other link keeps its values.
    #[tokio::test]
    async fn labels_reach_every_link_to_their_targets_in_every_row_group() {
        use crate::store::schema::{links_batch, links_schema, LinkRow};
        use crate::store::{read_batches, ShardWriter};
        let store = Store::open("memory://").expect("memory");
        let path = "links/layer=1/part-00000.parquet";
        let target = |i: usize| format!("http://s.test/page/{}", i % 500);
        let own = |i: usize| match i % 7 {
            0 => Some(NoiseLabel::Nofollow),
            1 => Some(NoiseLabel::DomRatio),
            _ => None,
        };
        let links: Vec<LinkRow> = (0..30_000)
            .map(|i| LinkRow {
                anchor: format!("a{i}"),
                noise: own(i),
                followed: own(i) != Some(NoiseLabel::Nofollow),
                ..LinkRow::followed(format!("http://s.test/src/{}", i / 50), target(i), 2)
            })
            .collect();
        let mut w = ShardWriter::create(&store, path, links_schema(), 64 << 10).expect("writer");
        for chunk in links.chunks(4096) {
            w.write(&links_batch(chunk).expect("batch")).await.expect("write");
        }
        w.finish().await.expect("finish");
        let groups = crate::store::chunks::read_metadata(&*store.backend(), path).await.expect("meta").num_row_groups();
        assert!(groups >= 3, "{groups} row groups");
        let fp = |u: &str| urlnorm::fingerprint_str(u);
        let noise: HashMap<u64, NoiseLabel> =
            [(fp(&target(3)), NoiseLabel::Barren), (fp(&target(77)), NoiseLabel::LcsCluster)].into_iter().collect();
        relabel_shard(&store, path, &Arc::new(noise.clone()), false).await.expect("relabel");
        let mut i = 0;
        for b in read_batches(&store, path, None).await.expect("read") {
            let labels = schema::noise_labels(&b, path).expect("noise");
            let followed = bool_col(&b, "followed", path).expect("followed");
            for (r, label) in labels.iter().enumerate() {
                let hit = noise.get(&fp(&target(i))).copied();
                let want = match own(i) {
                    None | Some(NoiseLabel::DomRatio) if hit.is_some() => (hit, false),
                    mine => (mine, links[i].followed),
                };
                assert_eq!((*label, followed.value(r)), want, "link {i} to {}", target(i));
                i += 1;
            }
        }
        assert_eq!(i, links.len());
    }
}
