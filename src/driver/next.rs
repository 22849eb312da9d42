//! The optimise step between layers (S300-S400): the next layer's `in` set.
//!
//! 1. The links of layer `L` are read and shuffled to the partition of their
//!    target's registrable domain: the followable ones are candidates, the
//!    ones the DOM prefilter flagged are kept as noise samples. Each links
//!    shard is merged per target in bounded memory and spilled to
//!    `state/shuffle/layer=L/part-K`; then each target partition is merged
//!    and taken through steps 2 and 3 on its own, so the step's memory is
//!    one partition's distinct targets, whatever the size of the layer.
//! 2. **Clustering** (S311-S314): per domain block, single-pass LCS
//!    clustering over the distinct targets; a cluster that matches the noise
//!    samples (or a user's known noise URLs), and strong deviants inside a
//!    cluster, are noise. Their links are relabelled `lcs_cluster` in
//!    `links/layer=L` and, with `--denoise drop`, not followed.
//! 3. **Dedup** (S400): each partition's weighted visit/cache list drops
//!    repeats it remembers; the rest are checked against the visited store
//!    in one merge pass; the new ones, with the URLs layer `L` carried over,
//!    become `in/layer=L+1`.
//!
//! Everything here is deterministic for the same input, so a re-run after
//! a kill rebuilds exactly the same set (the caches only save work).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int32Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef};
use futures::StreamExt;
use rayon::prelude::*;
use url::Url;

use crate::config::Denoise;
use crate::dedup::dedup_round;
use crate::dedup::visited::VisitedStore;
use crate::denoise::{noise_by_cluster, BlockUrl};
use crate::partition::partition_of_domain;
use crate::store::manifest::NextManifest;
use crate::store::schema::{self, InRow};
use crate::store::{layout, stream_batches, ShardWriter, Store, StoreError};
use crate::urlnorm;

use super::{Ctx, RunError};

/// One link target of the layer, on its way to the next layer.
/// All the links of a layer to one URL, merged: the depth is the smallest
/// (with its referrer, the smallest on a tie, so the choice does not depend
/// on which page was fetched first).
struct Candidate {
    row: InRow,
    /// Registrable domain of the URL: its partition and its clustering block.
    domain: String,
    /// Some link to it is followed (by the map-side labels), unless
    /// clustering or the trap guards say otherwise.
    followed: bool,
    /// Every link to it was flagged by the DOM prefilter (a noise sample).
    dom: bool,
    /// Some link to it is followable and not DOM-flagged.
    content: bool,
}

/// The merge of some of a layer's links to one URL. Merging is associative
/// and commutative, so partial merges made by each shuffle task combine to
/// exactly what one pass over all the links would give.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Merged {
    depth: i32,
    referrer: String,
    followed: bool,
    dom: bool,
    content: bool,
}

impl Merged {
    fn absorb(&mut self, o: Merged) {
        self.followed |= o.followed;
        self.dom &= o.dom;
        self.content |= o.content;
        if (o.depth, o.referrer.as_str()) < (self.depth, self.referrer.as_str()) {
            self.depth = o.depth;
            self.referrer = o.referrer;
        }
    }

    /// Merges one link from `from` at depth `depth`; copies the referrer
    /// only when it becomes the kept one.
    fn add_link(&mut self, depth: i32, from: &str, followed: bool, dom: bool) {
        self.followed |= followed;
        self.dom &= dom;
        self.content |= followed && !dom;
        if (depth, from) < (self.depth, self.referrer.as_str()) {
            self.depth = depth;
            self.referrer = from.to_string();
        }
    }

    fn absorb_into(map: &mut HashMap<String, Merged>, url: &str, m: Merged) {
        match map.get_mut(url) {
            Some(e) => e.absorb(m),
            None => {
                map.insert(url.to_string(), m);
            }
        }
    }
}

/// Distinct targets a shuffle task merges in memory before it spills them
/// to the target partitions' shuffle files: this, not the layer's size,
/// bounds the step's memory while it reads the links.
const COMBINE_ENTRIES: usize = 1 << 17;

/// Writes layer 0's input from the seeds.
///
/// # Errors
/// On storage failures.
pub async fn seed_layer(ctx: &Ctx, seeds: &[Url]) -> Result<NextManifest, RunError> {
    let mut by_part: Vec<Vec<InRow>> = (0..ctx.cfg.partitions).map(|_| Vec::new()).collect();
    for u in seeds {
        by_part[partition_of(u.as_str(), ctx.cfg.partitions) as usize].push(InRow { url: u.to_string(), depth: 0, referrer: None });
    }
    let mut m = NextManifest { layer: 0, candidates: seeds.len() as u64, ..NextManifest::default() };
    for (k, rows) in by_part.into_iter().enumerate() {
        write_partition_input(ctx, 0, u32::try_from(k).expect("partition index fits u32"), rows, Vec::new(), &mut m).await?;
    }
    commit_layer_input(ctx, 0, &mut m).await?;
    Ok(m)
}

/// Builds `in/layer=L+1` from layer `L`'s links and carried URLs.
///
/// The links are first shuffled to their target's partition (each links
/// shard by its own task, merged per target as far as [`COMBINE_ENTRIES`]
/// allows, spilled under `state/shuffle/layer=L`); then each target
/// partition is merged, labelled, de-duplicated and written on its own. So
/// memory is bounded by one partition's distinct targets, not the layer's.
///
/// # Errors
/// On storage failures.
pub async fn next_layer(ctx: &Ctx, layer: u32) -> Result<NextManifest, RunError> {
    let store = &ctx.store;
    let opt = &ctx.cfg.optimise;
    let mut m = NextManifest { layer: layer + 1, ..NextManifest::default() };
    shuffle_links(ctx, layer, &mut m).await?;
    let mut labels: HashMap<u64, &'static str> = HashMap::new();
    let mut followed_targets = 0u64;
    for k in 0..ctx.cfg.partitions {
        let mut cands = read_partition(store, layer, k).await?;
        followed_targets += cands.iter().filter(|c| c.followed).count() as u64;
        // Traps first: they are never followed, whatever --denoise says.
        let mut part_labels = find_traps(&cands, opt.max_query_variants);
        m.traps += part_labels.len() as u64;
        if opt.denoise != Denoise::Off {
            let known: Vec<String> = opt.noise_patterns.clone();
            let cfg = opt.cluster.clone();
            let (back, (noise, clusters, comparisons)) = tokio::task::spawn_blocking(move || {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                let found = cluster_partition(&cands, &known, &cfg);
                (cands, found)
            })
            .await
            .map_err(|e| RunError::Internal(format!("clustering failed: {e}")))?;
            cands = back;
            m.clusters += clusters;
            m.comparisons += comparisons;
            m.lcs_noise += noise.len() as u64;
            for fp in noise {
                part_labels.entry(fp).or_insert("lcs_cluster");
            }
        }
        let mark = opt.denoise == Denoise::Mark;
        let fresh: Vec<InRow> = cands
            .into_iter()
            .filter(|c| c.followed)
            .filter(|c| match part_labels.get(&urlnorm::fingerprint_str(&c.row.url)) {
                Some(&"lcs_cluster") => mark,
                Some(_) => false,
                None => true,
            })
            .map(|c| c.row)
            .collect();
        labels.extend(part_labels);
        let carried = read_carried(store, layer, k).await?;
        write_partition_input(ctx, layer + 1, k, fresh, carried, &mut m).await?;
    }
    // Repeats within the round: every followable link to a target after its first.
    m.visit_hits += m.candidates.saturating_sub(followed_targets);
    if !labels.is_empty() {
        relabel_links(store, layer, &labels, opt.denoise == Denoise::Mark).await?;
    }
    commit_layer_input(ctx, layer + 1, &mut m).await?;
    delete_all(store, &shuffle_dir(layer)).await?;
    Ok(m)
}

fn shuffle_dir(layer: u32) -> String {
    format!("state/shuffle/layer={layer}")
}

fn shuffle_file(layer: u32, to: u32, from: usize, run: u32) -> String {
    format!("{}/part-{to:05}/from-{from:05}-{run:05}.parquet", shuffle_dir(layer))
}

async fn delete_all(store: &Store, prefix: &str) -> Result<(), StoreError> {
    for (path, _) in store.list(prefix).await? {
        store.delete(&path).await?;
    }
    Ok(())
}

/// What one shuffle task counted.
#[derive(Default)]
struct ShuffleCounts {
    candidates: u64,
    dom_noise: u64,
}

/// S300's shuffle: every links shard of `layer` is read by its own task
/// (as many at once as there are cores) and its links, merged per target,
/// are spilled to the target's partition. Spill files left by a killed
/// attempt (of this step or of one already committed) are removed first.
async fn shuffle_links(ctx: &Ctx, layer: u32, m: &mut NextManifest) -> Result<(), RunError> {
    let store = &ctx.store;
    delete_all(store, "state/shuffle").await?;
    let max_depth = i32::try_from(ctx.cfg.depth).unwrap_or(i32::MAX);
    let parts = ctx.cfg.partitions;
    let width = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    let shards = link_shards(store, layer).await?;
    let mut tasks = futures::stream::iter(shards.into_iter().enumerate().map(|(j, path)| {
        let store = store.clone();
        tokio::spawn(async move { shuffle_shard(&store, &path, layer, j, parts, max_depth, COMBINE_ENTRIES).await })
    }))
    .buffer_unordered(width);
    while let Some(joined) = tasks.next().await {
        let counts = joined.map_err(|e| RunError::Internal(format!("shuffle task failed: {e}")))??;
        m.candidates += counts.candidates;
        m.dom_noise += counts.dom_noise;
    }
    Ok(())
}

/// Reads one links shard and spills its targets, merged, to their partitions.
/// `combine` distinct targets at most are held before a spill.
async fn shuffle_shard(store: &Store, path: &str, layer: u32, j: usize, parts: u32, max_depth: i32, combine: usize) -> Result<ShuffleCounts, StoreError> {
    let mut counts = ShuffleCounts::default();
    let mut merged: HashMap<String, Merged> = HashMap::new();
    let mut runs = 0u32;
    let mut batches = stream_batches(store, path, Some(&["src_url", "dst_url", "depth", "noise", "followed"])).await?;
    while let Some(b) = batches.next().await {
        let b = b?;
        let (src, dst, noise) = (str_col(&b, "src_url", path)?, str_col(&b, "dst_url", path)?, str_col(&b, "noise", path)?);
        let depth = b.column_by_name("depth").and_then(|c| c.as_primitive_opt::<Int32Type>()).ok_or_else(|| missing(path, "depth"))?;
        let followed = bool_col(&b, "followed", path)?;
        for i in 0..b.num_rows() {
            let label = (!noise.is_null(i)).then(|| noise.value(i));
            // A label from an earlier attempt of this step is undone: it is recomputed.
            let (follows, dom) = match label {
                None | Some("lcs_cluster" | "trap") => (true, false),
                Some("dom_ratio") => (followed.value(i), true),
                Some(_) => continue,
            };
            counts.dom_noise += u64::from(dom);
            if depth.value(i) > max_depth {
                continue;
            }
            counts.candidates += u64::from(follows);
            let (d, from, url) = (depth.value(i), src.value(i), dst.value(i));
            match merged.get_mut(url) {
                Some(e) => e.add_link(d, from, follows, dom),
                None => {
                    let m = Merged { depth: d, referrer: from.to_string(), followed: follows, dom, content: follows && !dom };
                    merged.insert(url.to_string(), m);
                    if merged.len() >= combine {
                        spill(store, layer, j, runs, parts, std::mem::take(&mut merged)).await?;
                        runs += 1;
                    }
                }
            }
        }
    }
    if !merged.is_empty() {
        spill(store, layer, j, runs, parts, merged).await?;
    }
    Ok(counts)
}

/// Writes one run of merged targets, one file per target partition.
async fn spill(store: &Store, layer: u32, j: usize, run: u32, parts: u32, merged: HashMap<String, Merged>) -> Result<(), StoreError> {
    let mut by_part: Vec<Vec<(String, Merged)>> = (0..parts).map(|_| Vec::new()).collect();
    for (url, m) in merged {
        by_part[partition_of(&url, parts) as usize].push((url, m));
    }
    for (k, rows) in by_part.into_iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        let path = shuffle_file(layer, u32::try_from(k).expect("partition index fits u32"), j, run);
        let mut w = ShardWriter::create(store, &path, shuffle_schema(), 8 << 20)?;
        for chunk in rows.chunks(8192) {
            w.write(&shuffle_batch(chunk, &path)?).await?;
        }
        w.finish().await?;
    }
    Ok(())
}

fn shuffle_schema() -> SchemaRef {
    static S: std::sync::OnceLock<SchemaRef> = std::sync::OnceLock::new();
    std::sync::Arc::clone(S.get_or_init(|| {
        std::sync::Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("depth", DataType::Int32, false),
            Field::new("referrer", DataType::Utf8, false),
            Field::new("followed", DataType::Boolean, false),
            Field::new("dom", DataType::Boolean, false),
            Field::new("content", DataType::Boolean, false),
        ]))
    }))
}

fn shuffle_batch(rows: &[(String, Merged)], path: &str) -> Result<RecordBatch, StoreError> {
    let url: StringArray = rows.iter().map(|r| Some(r.0.as_str())).collect();
    let depth: Int32Array = rows.iter().map(|r| Some(r.1.depth)).collect();
    let referrer: StringArray = rows.iter().map(|r| Some(r.1.referrer.as_str())).collect();
    let flag = |f: fn(&Merged) -> bool| -> BooleanArray { rows.iter().map(|r| Some(f(&r.1))).collect() };
    let cols: Vec<ArrayRef> = vec![
        std::sync::Arc::new(url),
        std::sync::Arc::new(depth),
        std::sync::Arc::new(referrer),
        std::sync::Arc::new(flag(|m| m.followed)),
        std::sync::Arc::new(flag(|m| m.dom)),
        std::sync::Arc::new(flag(|m| m.content)),
    ];
    RecordBatch::try_new(shuffle_schema(), cols).map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })
}

/// One target partition's candidates, merged from its shuffle files: one
/// per distinct target, in URL order.
async fn read_partition(store: &Store, layer: u32, k: u32) -> Result<Vec<Candidate>, StoreError> {
    let mut merged: HashMap<String, Merged> = HashMap::new();
    for path in store.parquet_files(&format!("{}/part-{k:05}", shuffle_dir(layer))).await? {
        let mut batches = stream_batches(store, &path, None).await?;
        while let Some(b) = batches.next().await {
            let b = b?;
            let (url, referrer) = (str_col(&b, "url", &path)?, str_col(&b, "referrer", &path)?);
            let depth = b.column_by_name("depth").and_then(|c| c.as_primitive_opt::<Int32Type>()).ok_or_else(|| missing(&path, "depth"))?;
            let (followed, dom, content) = (bool_col(&b, "followed", &path)?, bool_col(&b, "dom", &path)?, bool_col(&b, "content", &path)?);
            for i in 0..b.num_rows() {
                let m = Merged {
                    depth: depth.value(i),
                    referrer: referrer.value(i).to_string(),
                    followed: followed.value(i),
                    dom: dom.value(i),
                    content: content.value(i),
                };
                Merged::absorb_into(&mut merged, url.value(i), m);
            }
        }
    }
    let mut cands: Vec<Candidate> = merged
        .into_iter()
        .map(|(url, m)| Candidate {
            domain: urlnorm::registrable_domain(urlnorm::host_of(&url)),
            row: InRow { url, depth: m.depth, referrer: Some(m.referrer) },
            followed: m.followed,
            dom: m.dom,
            content: m.content,
        })
        .collect();
    cands.sort_unstable_by(|a, b| a.row.url.cmp(&b.row.url));
    Ok(cands)
}

/// The URLs partition `k` carried over unfetched from `layer`.
async fn read_carried(store: &Store, layer: u32, k: u32) -> Result<Vec<InRow>, StoreError> {
    let path = layout::carry(layer, k);
    let mut rows = Vec::new();
    if store.exists(&path).await? {
        let mut batches = stream_batches(store, &path, None).await?;
        while let Some(b) = batches.next().await {
            rows.extend(schema::input_rows(&b?, &path)?);
        }
    }
    Ok(rows)
}

/// The fingerprints of one partition's followable URLs that clustering
/// judged noise, the clusters made and the comparisons done. Domain blocks
/// are clustered in parallel.
fn cluster_partition(cands: &[Candidate], known: &[&str], cfg: &crate::denoise::cluster::ClusterConfig) -> (Vec<u64>, u64, u64) {
    // Domain blocks of distinct URLs, each in URL order: single-pass
    // clustering depends on order, and the links' order depends on which
    // fetch finished first, so sorting keeps a resumed run identical.
    // Per URL: all its links DOM-flagged; any of them followable content.
    let mut by_domain: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
    for c in cands {
        by_domain.entry(c.domain.as_str()).or_default().push(c);
    }
    let blocks: Vec<Vec<&Candidate>> = by_domain.into_values().collect();
    blocks
        .par_iter()
        .map(|block| {
            // `cands` is in URL order with one entry per URL, so each block is too.
            let urls: Vec<BlockUrl> = block.iter().map(|c| BlockUrl { url: c.row.url.clone(), dom_noise: c.dom }).collect();
            let v = noise_by_cluster(&urls, known, cfg);
            // Only links that would be followed need the label: DOM-flagged ones have theirs.
            let noise: Vec<u64> =
                block.iter().zip(&v.noise).filter(|(c, n)| **n && c.content).map(|(c, _)| urlnorm::fingerprint_str(&c.row.url)).collect();
            (noise, v.clusters as u64, v.comparisons)
        })
        .reduce(|| (Vec::new(), 0, 0), |mut a, b| {
            a.0.extend(b.0);
            (a.0, a.1 + b.1, a.2 + b.2)
        })
}

/// Trap URLs among the followable candidates: ever-deeper paths (a path
/// segment repeated 3 or more times, or more than [`MAX_SEGMENTS`]) and
/// query explosions (more than `budget` distinct queries for one host and
/// path in this layer: the first `budget` in URL order are kept, so the
/// choice does not depend on fetch order).
fn find_traps(cands: &[Candidate], budget: usize) -> HashMap<u64, &'static str> {
    let mut out = HashMap::new();
    let mut variants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for c in cands.iter().filter(|c| c.followed) {
        let url = c.row.url.as_str();
        let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
        let path = base.split_once("://").map_or(base, |(_, r)| r.find('/').map_or("", |at| &r[at..]));
        if deep_path(path) {
            out.insert(urlnorm::fingerprint_str(url), "trap");
        } else if query.is_some() {
            variants.entry(base).or_default().insert(url);
        }
    }
    for urls in variants.values().filter(|v| v.len() > budget) {
        out.extend(urls.iter().skip(budget).map(|u| (urlnorm::fingerprint_str(u), "trap")));
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
/// their label: `lcs_cluster` (followed only with `--denoise mark`) or
/// `trap` (never followed). Each shard is replaced atomically; shards
/// without such links are left alone.
async fn relabel_links(store: &Store, layer: u32, noise: &HashMap<u64, &'static str>, mark: bool) -> Result<(), StoreError> {
    // The label a link gets now, if any (links labelled already keep theirs).
    let hit = |dst: &StringArray, noise_col: &StringArray, i: usize| {
        if noise_col.is_null(i) { noise.get(&urlnorm::fingerprint_str(dst.value(i))).copied() } else { None }
    };
    for path in link_shards(store, layer).await? {
        // A first pass over two columns finds the shards to rewrite.
        let mut any = false;
        let mut batches = stream_batches(store, &path, Some(&["dst_url", "noise"])).await?;
        while let Some(b) = batches.next().await {
            let b = b?;
            let (dst, noise_col) = (str_col(&b, "dst_url", &path)?, str_col(&b, "noise", &path)?);
            if (0..b.num_rows()).any(|i| hit(dst, noise_col, i).is_some()) {
                any = true;
                break;
            }
        }
        if !any {
            continue;
        }
        // The rewrite streams too; the new shard replaces the old one atomically on finish.
        let mut w = ShardWriter::create(store, &path, schema::links_schema(), 32 << 20)?;
        let mut batches = stream_batches(store, &path, None).await?;
        while let Some(b) = batches.next().await {
            let b = b?;
            let (dst, noise_col) = (str_col(&b, "dst_url", &path)?, str_col(&b, "noise", &path)?);
            let followed = bool_col(&b, "followed", &path)?;
            let hits: Vec<Option<&str>> = (0..b.num_rows()).map(|i| hit(dst, noise_col, i)).collect();
            if hits.iter().all(Option::is_none) {
                w.write(&b).await?;
                continue;
            }
            let labels: StringArray = (0..b.num_rows()).map(|i| hits[i].or_else(|| (!noise_col.is_null(i)).then(|| noise_col.value(i)))).collect();
            let follows: BooleanArray = (0..b.num_rows()).map(|i| Some(match hits[i] { Some("lcs_cluster") => mark, Some(_) => false, None => followed.value(i) })).collect();
            w.write(&replace_columns(&b, &path, labels, follows)?).await?;
        }
        w.finish().await?;
    }
    Ok(())
}

fn replace_columns(b: &RecordBatch, path: &str, noise: StringArray, followed: BooleanArray) -> Result<RecordBatch, StoreError> {
    let schema = b.schema();
    let mut cols = b.columns().to_vec();
    let at = |name: &str| schema.index_of(name).map_err(|_| missing(path, name));
    cols[at("noise")?] = std::sync::Arc::new(noise);
    cols[at("followed")?] = std::sync::Arc::new(followed);
    RecordBatch::try_new(schema, cols).map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })
}

/// De-duplicates and writes partition `k`'s share of layer `target`'s input.
async fn write_partition_input(ctx: &Ctx, target: u32, k: u32, mut rows: Vec<InRow>, carried: Vec<InRow>, m: &mut NextManifest) -> Result<(), RunError> {
    let store = &ctx.store;
    let visited = VisitedStore::new(store.clone());
    m.carried += carried.len() as u64;
    // Smallest depth first, so the row kept for a repeated URL has it.
    rows.sort_by_key(|r| r.depth);
    let keyed: Vec<(u64, InRow)> = rows.into_iter().map(|r| (urlnorm::fingerprint_str(&r.url), r)).collect();
    let round = dedup_round(&ctx.caches[k as usize], &visited, k, target, keyed).await?;
    (m.visit_hits, m.cache_hits, m.store_hits) =
        (m.visit_hits + round.stats.visit_hits, m.cache_hits + round.stats.cache_hits, m.store_hits + round.stats.store_hits);
    let mut out = round.admitted;
    // Carried URLs are in the visited store already (from their first layer).
    out.extend(carried);
    out.sort_by(|a, b| a.url.cmp(&b.url));
    m.next += out.len() as u64;
    let path = layout::input(target, k);
    if out.is_empty() {
        store.delete(&path).await?;
    } else {
        let mut w = ShardWriter::create(store, &path, schema::input_schema(), 32 << 20)?;
        for chunk in out.chunks(8192) {
            w.write(&schema::input_batch(chunk)?).await?;
        }
        w.finish().await?;
    }
    Ok(())
}

/// Commits layer `target`'s input: its manifest is what makes it exist.
async fn commit_layer_input(ctx: &Ctx, target: u32, m: &mut NextManifest) -> Result<(), RunError> {
    m.seen = m.visit_hits + m.cache_hits + m.store_hits;
    ctx.store.put_json(&layout::input_manifest(target), m).await?;
    Ok(())
}

async fn link_shards(store: &Store, layer: u32) -> Result<Vec<String>, StoreError> {
    store.parquet_files(&format!("links/layer={layer}")).await
}

fn partition_of(url: &str, partitions: u32) -> u32 {
    partition_of_domain(&urlnorm::registrable_domain(urlnorm::host_of(url)), partitions)
}

fn str_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a StringArray, StoreError> {
    schema::string_col(b, name, path)
}

fn bool_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a BooleanArray, StoreError> {
    b.column_by_name(name).and_then(|c| c.as_boolean_opt()).ok_or_else(|| missing(path, name))
}

fn missing(path: &str, name: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: format!("column `{name}` missing or of another type") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(url: &str) -> Candidate {
        let domain = urlnorm::registrable_domain(urlnorm::host_of(url));
        Candidate { row: InRow { url: url.to_string(), depth: 1, referrer: None }, domain, followed: true, dom: false, content: true }
    }

    fn link(src: &str, dst: &str, depth: i32, noise: Option<&'static str>, followed: bool) -> crate::store::schema::LinkRow {
        crate::store::schema::LinkRow { src_url: src.into(), dst_url: dst.into(), anchor: String::new(), depth, noise, followed, block_ratio: 0.0 }
    }

    /// What a partition's candidates say, comparable across runs.
    fn summary(cands: &[Candidate]) -> Vec<(String, i32, Option<String>, bool, bool, bool)> {
        cands.iter().map(|c| (c.row.url.clone(), c.row.depth, c.row.referrer.clone(), c.followed, c.dom, c.content)).collect()
    }

    #[tokio::test]
    async fn spilling_in_small_runs_merges_to_the_same_candidates() {
        // Links to 40 targets on 4 sites, each target linked from several
        // pages at two depths, some DOM-flagged, some not followable.
        let mut rows = Vec::new();
        for n in 0..400 {
            let dst = format!("http://s{}.test/p{}", n % 4, n % 40);
            let src = format!("http://s{}.test/from{}", n % 4, n % 7);
            let noise = match n % 5 { 0 => Some("dom_ratio"), 1 => Some("scope"), _ => None };
            rows.push(link(&src, &dst, 1 + (n % 3 == 0) as i32, noise, n % 10 != 0));
        }
        let parts = 3;
        let mut results = Vec::new();
        for (combine, layer) in [(1_000_000, 0), (3, 1)] {
            let store = Store::open("memory://").expect("store");
            let path = layout::links(layer, 0);
            let mut w = ShardWriter::create(&store, &path, schema::links_schema(), 1 << 20).expect("writer");
            for chunk in rows.chunks(64) {
                w.write(&schema::links_batch(chunk).expect("batch")).await.expect("write");
            }
            w.finish().await.expect("finish");
            let counts = shuffle_shard(&store, &path, layer, 0, parts, 2, combine).await.expect("shuffle");
            let files = store.parquet_files(&shuffle_dir(layer)).await.expect("list").len();
            let mut all = Vec::new();
            for k in 0..parts {
                all.push(summary(&read_partition(&store, layer, k).await.expect("read")));
            }
            results.push((counts.candidates, counts.dom_noise, files, all));
        }
        let (one, many) = (&results[0], &results[1]);
        assert!(many.2 > 10 * one.2, "small runs spill many files: {} vs {}", many.2, one.2);
        assert_eq!((one.0, one.1), (many.0, many.1));
        assert_eq!(one.3, many.3, "merging is the same whatever the spills");
        let targets: usize = one.3.iter().map(Vec::len).sum();
        assert_eq!(targets, 32, "targets with only `scope` links (p1, p6, ...) are not candidates");
        // p0 is linked by n = 0, 40, ..., 360, all DOM-flagged and not followed; depth 1 from
        // from0 (n = 280), from3, from4, from5, from6: the smallest referrer wins.
        let p0 = one.3.iter().flatten().find(|c| c.0 == "http://s0.test/p0").expect("p0");
        assert_eq!(p0, &("http://s0.test/p0".into(), 1, Some("http://s0.test/from0".into()), false, true, false));
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
            [fp("http://s.test/search?q=5"), fp("http://s.test/search?q=6"), fp("http://s.test/docs/a/a/a/")].into_iter().collect();
        assert_eq!(trapped, want, "the first five queries in URL order are kept");
    }
}
