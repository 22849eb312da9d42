//! The shuffle between the map and optimise stages: a map task's links,
//! merged per target, spilled to their target's partition
//! (`state/shuffle/layer=L/part-T/`), and each partition's spills merged
//! back for the optimise step. Both stages use it and it names neither,
//! so they do not call each other (ARCHITECTURE.md, "Layers, bottom to top").

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Int32Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use futures::StreamExt;

use crate::denoise::yields::{add_via, link_template};
use crate::denoise::NoiseLabel;
use crate::store::column::{Tuned, Tuning};
use crate::store::schema;
use crate::store::{layout, stream_batches, ShardWriter, Store, StoreError};

use crate::error::StageError;
use crate::partition::partition_of_url;

/// The merge of some of a layer's links to one URL. Merging is associative
/// and commutative, so partial merges made by each shuffle task combine to
/// exactly what one pass over all the links would give.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    pub depth: i32,
    pub referrer: String,
    pub followed: bool,
    pub dom: bool,
    pub content: bool,
    /// The best score of the links to it (with a crawl plan)...
    pub score: Option<f32>,
    /// ...and that link's anchor text (the smallest of the best's on a
    /// tie), which counts in the target page's relevance.
    pub anchor: Option<String>,
    /// The link templates of the pages whose followed links lead here (the
    /// smallest few: `denoise::yields::add_via`), which the noise filter's
    /// link classes start from.
    pub via: Vec<String>,
    /// The links shards that link here, as bits ([`shard_bit`]): the noise
    /// labels of a target are written into those shards only.
    pub sources: u64,
}

/// One link (or an earlier merge of links) to a target, as merged.
struct Link<'a> {
    depth: i32,
    referrer: &'a str,
    followed: bool,
    dom: bool,
    content: bool,
    /// Its score and anchor text: a link without a score brings no anchor.
    best: Option<(f32, &'a str)>,
    /// The link templates of its source pages (one for a link; a merge's
    /// set for an earlier merge).
    via: &'a [String],
    /// The links shards it came from ([`shard_bit`]).
    sources: u64,
}

impl Merged {
    /// Merges into `map` a link to `url` (or an earlier merge of links):
    /// the smallest `(depth, referrer)` is kept, the flags combine, the
    /// best score is kept with its anchor. Strings are copied only for a
    /// new target, or a referrer or anchor that becomes the kept one. True
    /// when `url` was new.
    fn merge_into(map: &mut HashMap<String, Merged>, url: &str, l: &Link<'_>) -> bool {
        if let Some(e) = map.get_mut(url) {
            e.followed |= l.followed;
            e.dom &= l.dom;
            e.content |= l.content;
            if let Some((score, anchor)) = l.best {
                // Better: a higher score, or the same and a smaller anchor
                // (a total order, so merging stays associative).
                let better = match (e.score, e.anchor.as_deref()) {
                    (Some(s), Some(a)) => score > s || (score == s && anchor < a),
                    (Some(s), None) => score >= s,
                    (None, _) => true,
                };
                if better {
                    e.score = Some(score);
                    e.anchor = Some(anchor.to_string());
                }
            }
            if (l.depth, l.referrer) < (e.depth, e.referrer.as_str()) {
                e.depth = l.depth;
                e.referrer = l.referrer.to_string();
            }
            for t in l.via {
                add_via(&mut e.via, t);
            }
            e.sources |= l.sources;
            return false;
        }
        map.insert(
            url.to_string(),
            Merged {
                depth: l.depth,
                referrer: l.referrer.to_string(),
                followed: l.followed,
                dom: l.dom,
                content: l.content,
                score: l.best.map(|b| b.0),
                anchor: l.best.map(|b| b.1.to_string()),
                via: l.via.to_vec(),
                sources: l.sources,
            },
        );
        true
    }
}

/// Every links shard, as bits: where a target's sources are not known.
pub const ALL_SHARDS: u64 = u64::MAX;

/// A links shard as one bit of a 64-bit set: bit `n % 64` of the number at
/// the end of its file name (`part-00006.parquet`, a map task's shard, is
/// bit 6; `data-00000.parquet`, a merged layer, bit 0), every bit when its
/// name has none. Two shards may share a bit (a crawl of more than 64
/// partitions): a set of bits then names a few shards more than it needs,
/// never fewer. A site belongs to one partition, so the links to a page
/// come from one shard or a few, and the noise labels of the optimise step
/// are written into those only.
#[must_use]
pub fn shard_bit(path: &str) -> u64 {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.strip_suffix(".parquet").unwrap_or(name);
    stem.rsplit('-').next().and_then(|n| n.parse::<u64>().ok()).map_or(ALL_SHARDS, |n| 1 << (n % 64))
}

/// Distinct targets a shuffle task merges in memory before it spills them
/// to the target partitions' shuffle files: this, not the layer's size,
/// bounds the step's memory while it reads the links.
pub(crate) const COMBINE_ENTRIES: usize = 1 << 17;

/// Removes the spill files of `layer`, once its next layer's input is committed.
pub async fn clear(store: &Store, layer: u32) -> Result<(), StoreError> {
    crate::store::attempt::discard(store, &layout::shuffle_dir(layer)).await
}

/// What the map side of the shuffle counted in one links shard.
#[derive(Default)]
pub struct ShuffleCounts {
    /// Followable links to targets within `--depth`.
    pub candidates: u64,
    /// Links the link-text-ratio prefilter flagged.
    pub dom_noise: u64,
}

/// The map side of the shuffle, run by map task `part` of `layer` on the
/// links shard it wrote (at `path`): its links, merged per target in
/// bounded memory, are spilled to `state/shuffle/layer=L/part-T/` of their
/// target partition T, through `store` (the task attempt's handle, so they
/// are published with its other outputs).
///
/// # Errors
/// When the shard cannot be read or a spill file written.
pub async fn spill_links(
    store: &Store,
    path: &str,
    layer: u32,
    part: u32,
    parts: u32,
    max_depth: i32,
    suspects: Suspects,
) -> Result<ShuffleCounts, StageError> {
    shuffle_shard(store, path, layer, part as usize, parts, max_depth, suspects, COMBINE_ENTRIES).await
}

/// How the DOM prefilter's suspects are told and treated.
#[derive(Clone, Copy, Debug)]
pub struct Suspects {
    /// `--noise-ratio`: a link in a block above it is a suspect.
    pub ratio: f32,
    /// Whether the mode follows suspects (all but `strict`).
    pub followed: bool,
}

/// Reads one links shard and spills its targets, merged, to their partitions.
/// `combine` distinct targets at most are held before a spill. Reading and
/// spilling are async; merging each batch runs off the async threads.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn shuffle_shard(
    store: &Store,
    path: &str,
    layer: u32,
    j: usize,
    parts: u32,
    max_depth: i32,
    suspects: Suspects,
    combine: usize,
) -> Result<ShuffleCounts, StageError> {
    let mut state = ShardMerge { source: shard_bit(path), ..ShardMerge::default() };
    let mut runs = 0u32;
    let mut batches =
        stream_batches(store, path, Some(&["src_url", "dst_url", "anchor", "depth", "noise", "block_ratio", "score"]))
            .await?;
    while let Some(b) = batches.next().await {
        let (b, owned) = (b?, path.to_string());
        state = off_async("merging links", move || {
            let mut state = state;
            state.merge_batch(&b, &owned, max_depth, suspects, combine, parts).map(|()| state)
        })
        .await??;
        for run in std::mem::take(&mut state.full) {
            spill(store, layer, j, runs, run).await?;
            runs += 1;
        }
    }
    if !state.merged.is_empty() {
        let rest = std::mem::take(&mut state.merged);
        spill(store, layer, j, runs, off_async("splitting links", move || by_partition(rest, parts)).await?).await?;
    }
    Ok(state.counts)
}

/// A shuffle task's state between two batches of its shard.
#[derive(Default)]
struct ShardMerge {
    merged: HashMap<String, Merged>,
    counts: ShuffleCounts,
    /// Runs that reached the combine limit, split by target partition,
    /// waiting to be spilled.
    full: Vec<Vec<Vec<(String, Merged)>>>,
    /// The shard's own bit ([`shard_bit`]).
    source: u64,
}

impl ShardMerge {
    /// Merges one batch of links per target (CPU work: every row is hashed).
    fn merge_batch(
        &mut self,
        b: &RecordBatch,
        path: &str,
        max_depth: i32,
        suspects: Suspects,
        combine: usize,
        parts: u32,
    ) -> Result<(), StoreError> {
        let (src, dst, noise) =
            (str_col(b, "src_url", path)?, str_col(b, "dst_url", path)?, schema::noise_labels(b, path)?);
        let depth = b
            .column_by_name("depth")
            .and_then(|c| c.as_primitive_opt::<Int32Type>())
            .ok_or_else(|| missing(path, "depth"))?;
        let ratio = b
            .column_by_name("block_ratio")
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::Float32Type>())
            .ok_or_else(|| missing(path, "block_ratio"))?;
        // No score column: a run without a plan, or links of an older version.
        let score = b.column_by_name("score").and_then(|c| c.as_primitive_opt::<arrow_array::types::Float32Type>());
        let anchor = str_col(b, "anchor", path)?;
        // A shard's links come page by page: a source's template is made once.
        let mut source: (&str, [String; 1]) = ("", [String::new()]);
        for (i, label) in noise.into_iter().enumerate() {
            // A label from an earlier attempt of this step is undone: it is
            // recomputed, and whether the link was a suspect comes back from
            // its block's ratio (the relabelling replaces `dom_ratio` too).
            let (follows, dom) = match label {
                None => (true, false),
                Some(l) if l.from_optimise() => {
                    let dom = ratio.value(i) > suspects.ratio;
                    (!dom || suspects.followed, dom)
                }
                Some(NoiseLabel::DomRatio) => (suspects.followed, true),
                Some(_) => continue,
            };
            self.counts.dom_noise += u64::from(dom);
            if depth.value(i) > max_depth {
                continue;
            }
            self.counts.candidates += u64::from(follows);
            if source.0 != src.value(i) {
                source = (src.value(i), [link_template(src.value(i))]);
            }
            let link = Link {
                depth: depth.value(i),
                referrer: src.value(i),
                followed: follows,
                dom,
                content: follows && !dom,
                best: score.and_then(|s| (!s.is_null(i)).then(|| (s.value(i), anchor.value(i)))),
                via: if follows { &source.1 } else { &[] },
                sources: self.source,
            };
            let new = Merged::merge_into(&mut self.merged, dst.value(i), &link);
            if new && self.merged.len() >= combine {
                self.full.push(by_partition(std::mem::take(&mut self.merged), parts));
            }
        }
        Ok(())
    }
}

/// One run of merged targets split by target partition (a hash of each
/// target's registrable domain: CPU work).
fn by_partition(merged: HashMap<String, Merged>, parts: u32) -> Vec<Vec<(String, Merged)>> {
    let mut by_part: Vec<Vec<(String, Merged)>> = (0..parts).map(|_| Vec::new()).collect();
    for (url, m) in merged {
        by_part[partition_of_url(&url, parts) as usize].push((url, m));
    }
    by_part
}

/// Writes one run of merged targets, one file per target partition.
async fn spill(
    store: &Store,
    layer: u32,
    j: usize,
    run: u32,
    by_part: Vec<Vec<(String, Merged)>>,
) -> Result<(), StoreError> {
    for (k, rows) in by_part.into_iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        let path = layout::shuffle_file(layer, u32::try_from(k).expect("partition index fits u32"), j, run);
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
            Field::new("url", DataType::Utf8, false).tuned(Tuning::DISTINCT),
            Field::new("depth", DataType::Int32, false).tuned(Tuning::SMALL),
            Field::new("referrer", DataType::Utf8, false),
            Field::new("followed", DataType::Boolean, false),
            Field::new("dom", DataType::Boolean, false),
            Field::new("content", DataType::Boolean, false),
            Field::new("score", DataType::Float32, true),
            Field::new("anchor", DataType::Utf8, true),
            // The source templates, one a line.
            Field::new("via", DataType::Utf8, false),
            Field::new("sources", DataType::UInt64, false),
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
        std::sync::Arc::new(rows.iter().map(|r| r.1.score).collect::<arrow_array::Float32Array>()),
        std::sync::Arc::new(rows.iter().map(|r| r.1.anchor.as_deref()).collect::<StringArray>()),
        std::sync::Arc::new(rows.iter().map(|r| Some(r.1.via.join("\n"))).collect::<StringArray>()),
        std::sync::Arc::new(rows.iter().map(|r| Some(r.1.sources)).collect::<UInt64Array>()),
    ];
    RecordBatch::try_new(shuffle_schema(), cols)
        .map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })
}

/// One target partition's targets, merged from its shuffle files: one per
/// distinct target. The files are read async; merging their rows runs off
/// the async threads.
///
/// # Errors
/// When a shuffle file cannot be listed or read.
pub async fn read_partition(store: &Store, layer: u32, k: u32) -> Result<HashMap<String, Merged>, StageError> {
    let mut merged: HashMap<String, Merged> = HashMap::new();
    for path in store.parquet_files(&layout::shuffle_partition(layer, k)).await? {
        let mut batches = stream_batches(store, &path, None).await?;
        while let Some(b) = batches.next().await {
            let (b, owned) = (b?, path.clone());
            merged = off_async("merging shuffle runs", move || {
                let mut merged = merged;
                merge_run(&mut merged, &b, &owned).map(|()| merged)
            })
            .await??;
        }
    }
    Ok(merged)
}

/// Merges one batch of a shuffle file into `merged`.
fn merge_run(merged: &mut HashMap<String, Merged>, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
    let (url, referrer) = (str_col(b, "url", path)?, str_col(b, "referrer", path)?);
    let depth = b
        .column_by_name("depth")
        .and_then(|c| c.as_primitive_opt::<Int32Type>())
        .ok_or_else(|| missing(path, "depth"))?;
    let (followed, dom, content) =
        (bool_col(b, "followed", path)?, bool_col(b, "dom", path)?, bool_col(b, "content", path)?);
    let score = b.column_by_name("score").and_then(|c| c.as_primitive_opt::<arrow_array::types::Float32Type>());
    // Spills of an older version have no anchors.
    let anchor = b.column_by_name("anchor").and_then(|c| c.as_string_opt::<i32>());
    let via = b.column_by_name("via").and_then(|c| c.as_string_opt::<i32>());
    // Spills of an older version do not say which shards they came from.
    let sources = b.column_by_name("sources").and_then(|c| c.as_primitive_opt::<UInt64Type>());
    for i in 0..b.num_rows() {
        let templates: Vec<String> = via
            .map(|v| v.value(i).split('\n').filter(|t| !t.is_empty()).map(String::from).collect())
            .unwrap_or_default();
        let link = Link {
            depth: depth.value(i),
            referrer: referrer.value(i),
            followed: followed.value(i),
            dom: dom.value(i),
            content: content.value(i),
            // A merge with a score has its best link's anchor.
            best: score.and_then(|s| (!s.is_null(i)).then(|| (s.value(i), anchor.map_or("", |a| a.value(i))))),
            via: &templates,
            sources: sources.map_or(ALL_SHARDS, |s| s.value(i)),
        };
        Merged::merge_into(merged, url.value(i), &link);
    }
    Ok(())
}

/// Runs `work` on the blocking pool: merging touches every row
/// (ARCHITECTURE.md, "Invariants": CPU work off the async threads).
async fn off_async<T: Send + 'static>(what: &str, work: impl FnOnce() -> T + Send + 'static) -> Result<T, StageError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| StageError::Internal(format!("{what} failed: {e}")))
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
