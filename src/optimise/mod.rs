//! The optimise stage between layers: the next layer's `in` set, from
//! this layer's links (docs/src/noise-filter.md and docs/src/dedup.md).
//!
//! Its units of work take an [`OptimiseCtx`] (the data store, the run's
//! optimiser settings and the in-process cache lists), never the driver.
//!
//! 1. The links of layer `L` are shuffled to the partition of their
//!    target's registrable domain: the followable ones are candidates, the
//!    ones the DOM prefilter flagged are kept as noise samples. Each map
//!    task merges its links shard per target in bounded memory and spills
//!    it to `state/shuffle/layer=L/part-K` ([`spill_links`], the map side);
//!    then the optimise task of each target partition merges its spills
//!    and takes them through steps 2 and 3 on its own ([`optimise_task`]),
//!    so the step's memory is one partition's distinct targets, whatever
//!    the size of the layer.
//! 2. **Clustering**: per domain block, single-pass LCS
//!    clustering over the distinct targets; a cluster that matches the noise
//!    samples (or a user's known noise URLs), and strong deviants inside a
//!    cluster, are noise. Their links are relabelled `lcs_cluster` in
//!    `links/layer=L` once the layer is sealed ([`apply_labels`]) and, with
//!    `--denoise drop`, not followed.
//! 3. **Dedup**: each partition's weighted visit/cache list drops
//!    repeats it remembers; the rest are checked against the visited store
//!    in one merge pass; the new ones, with the URLs layer `L` carried over,
//!    become `in/layer=L+1`.
//!
//! Everything here is deterministic for the same input, so a re-run after
//! a kill rebuilds exactly the same set (the caches only save work). Each
//! optimise task commits like a map task ([`crate::store::attempt`]); the
//! seal commits the layer's input by `in.json`.

mod budget;
mod labels;
mod partition;
mod seal;
mod shuffle;
mod yields;

use partition::{optimise_partition, write_partition_input, InputParts};
pub use seal::{apply_labels, seal_layer};
pub(crate) use yields::{read_seen, skip_reason, write_skipped};
pub use yields::{skipped_classes, SkippedClass};

use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{BooleanArray, RecordBatch, StringArray};
use url::Url;

use crate::store::attempt::{self, Attempt};
use crate::store::dataset::LINKS;
use crate::store::manifest::{MapManifest, NextManifest, OptimiseManifest, ShuffleManifest};
use crate::store::schema::{self, InRow};
use crate::store::{layout, Created, Store, StoreError};

use crate::config::OptimiseConfig;
use crate::dedup::cache::VisitCache;
use crate::error::{cores, StageError};
use crate::partition::partition_of_url;

/// Everything the optimise stage needs.
#[derive(Clone)]
pub struct OptimiseCtx {
    pub store: Store,
    /// The run's partition count (fixed for a data location).
    pub partitions: u32,
    /// The crawl's `--depth`: targets deeper than it are not candidates.
    pub depth: u32,
    /// Link-text ratio above which a DOM block is navigation (`--noise-ratio`).
    pub noise_ratio: f32,
    pub cfg: Arc<OptimiseConfig>,
    /// Pages fetched per layer at most (`--max-pages`): given to the best
    /// URLs of the whole layer when the layer is sealed ([`budget`]).
    pub budget: crate::config::PageBudget,
    /// Each partition's weighted visit/cache list, kept across the layers
    /// of one process; the visited store stays authoritative, so a fresh
    /// set of empty lists (a task in another process) only costs lookups.
    pub caches: Arc<Vec<Mutex<VisitCache>>>,
    /// The fence its tasks commit under (`store/fencing.rs`): the driver's
    /// lease, or the watch of a task run on its own; none outside a run.
    pub fence: Option<Arc<crate::fence::Fence>>,
    /// The previous crawl of the same sites (`--previous`), when it had as
    /// many partitions: the noise filter starts from what it learned
    /// (docs/src/noise-filter.md, "Night after night").
    pub previous: Option<Store>,
}

impl OptimiseCtx {
    /// An optimise context from the data store alone (see
    /// [`crate::map::MapCtx::open`]), with empty cache lists: the visited
    /// store is authoritative, so they only cost lookups.
    ///
    /// # Errors
    /// When the run's state or settings are missing or unreadable.
    pub async fn open(store: Store) -> Result<Self, StageError> {
        let (state, settings) = crate::config::load_run(&store).await?;
        Ok(Self {
            store: store.with_compression(settings.compression),
            partitions: state.partitions,
            depth: settings.depth,
            noise_ratio: settings.pages.parse.noise_ratio,
            caches: Self::caches(state.partitions, settings.optimise.cache_entries),
            cfg: Arc::new(settings.optimise),
            budget: settings.pages.budget,
            fence: None,
            previous: match &settings.pages.previous {
                Some(location) => previous_counts(location, state.partitions).await?,
                None => None,
            },
        })
    }

    /// Empty cache lists for `partitions`, `entries` in all.
    #[must_use]
    pub fn caches(partitions: u32, entries: usize) -> Arc<Vec<Mutex<VisitCache>>> {
        let capacity = (entries / partitions.max(1) as usize).max(1024);
        Arc::new(
            (0..partitions)
                .map(|_| {
                    Mutex::new(VisitCache::new(crate::dedup::cache::CacheConfig {
                        capacity,
                        ..crate::dedup::cache::CacheConfig::default()
                    }))
                })
                .collect(),
        )
    }
}

/// The previous crawl at `location` (`--previous`) when the noise filter
/// can read its counts: they are per partition, so only a crawl with as
/// many (`partitions`) can give them; with another count the filter starts
/// from nothing, as without `--previous`, and says so.
///
/// # Errors
/// When the location cannot be opened or its state read.
pub async fn previous_counts(location: &str, partitions: u32) -> Result<Option<Store>, StageError> {
    let store = Store::open(location)?;
    let theirs = store.get_json::<crate::store::manifest::RunState>(layout::RUN).await?.map(|s| s.partitions);
    if theirs == Some(partitions) {
        return Ok(Some(store));
    }
    tracing::info!(
        previous = location,
        partitions = theirs,
        ours = partitions,
        "the previous crawl has another partition count: the noise filter starts without its evidence"
    );
    Ok(None)
}

/// One link target of the layer, on its way to the next layer.
/// All the links of a layer to one URL, merged: the depth is the smallest
/// (with its referrer, the smallest on a tie, so the choice does not depend
/// on which page was fetched first).
pub(super) struct Candidate {
    pub(super) row: InRow,
    /// Registrable domain of the URL: its partition and its clustering block.
    pub(super) domain: String,
    /// Some link to it is followed (by the map-side labels), unless
    /// clustering or the trap guards say otherwise.
    pub(super) followed: bool,
    /// Every link to it was flagged by the DOM prefilter (a noise sample).
    pub(super) dom: bool,
    /// Some link to it is followable and not DOM-flagged.
    pub(super) content: bool,
    /// The link templates of the pages whose followed links lead here.
    pub(super) via: Vec<String>,
    /// The layer's links shards that link here (`shuffle::shard_bit`).
    pub(super) sources: u64,
}

/// Writes layer 0's input from the seeds.
///
/// # Errors
/// On storage failures.
pub async fn seed_layer(ctx: &OptimiseCtx, seeds: &[Url]) -> Result<NextManifest, StageError> {
    let mut by_part: Vec<Vec<InRow>> = (0..ctx.partitions).map(|_| Vec::new()).collect();
    for u in seeds {
        by_part[partition_of_url(u.as_str(), ctx.partitions) as usize].push(InRow {
            url: u.to_string(),
            depth: 0,
            referrer: None,
            priority: None,
            anchor: None,
            retries: 0,
        });
    }
    let mut m = NextManifest { layer: 0, candidates: seeds.len() as u64, ..NextManifest::default() };
    let mut ranks = Vec::new();
    for (k, rows) in by_part.into_iter().enumerate() {
        let k = u32::try_from(k).expect("partition index fits u32");
        let plain = crate::focus::Ranking::Plain(ctx.cfg.order);
        let parts = InputParts { fresh: rows, ..InputParts::default() };
        ranks.push(write_partition_input(ctx, 0, k, parts, &plain, &mut m).await?);
    }
    m.budget = seal::layer_budget(ctx, ranks.into_iter().map(Option::unwrap_or_default).collect(), m.next);
    commit_layer_input(ctx, 0, &mut m).await?;
    Ok(m)
}

/// Builds `in/layer=L+1` from layer `L`'s links and carried URLs, in this
/// process: the optimise task of every target partition that is not
/// committed yet (as many at once as there are cores, so memory stays
/// bounded by a few partitions' targets), then [`seal_layer`] and
/// [`apply_labels`].
///
/// # Errors
/// On storage failures.
pub async fn optimise_layer(ctx: &OptimiseCtx, layer: u32) -> Result<NextManifest, StageError> {
    if let Some(done) = ctx.store.get_json::<NextManifest>(&layout::input_manifest(layer + 1)).await? {
        apply_labels(ctx, layer).await?;
        return Ok(done);
    }
    let all: Vec<u32> = (0..ctx.partitions).collect();
    ensure_shuffled(ctx, layer).await?;
    optimise_tasks(ctx, layer, &all).await?;
    let sealed = seal_layer(ctx, layer).await?;
    apply_labels(ctx, layer).await?;
    Ok(sealed)
}

/// Makes sure the links of `layer` are shuffled to their target
/// partitions before its optimise tasks run: each map task shuffles its
/// own, except as the last layer of a crawl, so a crawl deepened later
/// shuffles that layer's links here, from its links files, once.
///
/// # Errors
/// On storage failures.
pub async fn ensure_shuffled(ctx: &OptimiseCtx, layer: u32) -> Result<(), StageError> {
    let store = &ctx.store;
    if store.exists(&layout::shuffle_manifest(layer)).await? {
        return Ok(());
    }
    for k in 0..ctx.partitions {
        match store.get_json::<MapManifest>(&layout::map_manifest(layer, k)).await? {
            Some(m) if m.shuffled => {}
            _ => {
                tracing::info!(layer, "shuffling the layer's links again: it was the last layer of a shallower run");
                let counts = shuffle::respill_layer(ctx, layer).await?;
                let done = ShuffleManifest { layer, candidates: counts.candidates, dom_noise: counts.dom_noise };
                store.put_json_new(&layout::shuffle_manifest(layer), &done).await?;
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Runs the optimise tasks of target partitions `parts` after `layer` in
/// this process, as many at once as there are cores.
///
/// # Errors
/// The first task's failure.
pub async fn optimise_tasks(ctx: &OptimiseCtx, layer: u32, parts: &[u32]) -> Result<(), StageError> {
    let started = std::time::Instant::now();
    let seats = Arc::new(tokio::sync::Semaphore::new(cores()));
    let mut tasks = tokio::task::JoinSet::new();
    for &k in parts {
        let (ctx, seats) = (ctx.clone(), Arc::clone(&seats));
        tasks.spawn(async move {
            let _seat = seats.acquire_owned().await;
            optimise_task(&ctx, layer, k).await
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.map_err(|e| StageError::Internal(format!("optimise task failed: {e}")))??;
    }
    tracing::debug!(layer, seconds = started.elapsed().as_secs_f64(), "partitions labelled and de-duplicated");
    Ok(())
}

/// Runs the optimise task of target partition `k` after `layer` unless it
/// is committed already: its merged candidates labelled, de-duplicated and
/// written as its share of `in/layer=L+1`, its labels kept for the seal.
/// Returns the committed manifest and whether this call committed it.
///
/// # Errors
/// On storage failures.
pub async fn optimise_task(ctx: &OptimiseCtx, layer: u32, k: u32) -> Result<(OptimiseManifest, Created), StageError> {
    let path = layout::optimise_manifest(layer, k);
    let task_dir = layout::task_attempts(layer, "optimise", k);
    if let Some(done) = ctx.store.get_json::<OptimiseManifest>(&path).await? {
        attempt::roll_forward(&ctx.store, &task_dir, &done).await?;
        return Ok((done, Created::Existed));
    }
    let started = std::time::Instant::now();
    let attempt = Attempt::start(&task_dir).fenced_by(layout::task_fence(layer, "optimise", k), ctx.fence.clone());
    let staged = OptimiseCtx { store: attempt.store(&ctx.store), ..ctx.clone() };
    let part = optimise_partition(&staged, layer, k).await?;
    let n_labels = part.labels.len() as u64;
    if n_labels > 0 {
        labels::write_labels(&staged.store, &layout::labels(layer, k), &part.labels).await?;
    }
    let manifest = OptimiseManifest {
        layer,
        partition: k,
        attempt: attempt.id.clone(),
        stats: part.stats,
        followed_targets: part.followed_targets,
        labels: n_labels,
        label_sources: part.label_sources,
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    Ok(attempt::commit(&ctx.store, &path, &attempt, manifest).await?)
}

/// Commits layer `target`'s input: its manifest is what makes it exist.
pub(super) async fn commit_layer_input(ctx: &OptimiseCtx, target: u32, m: &mut NextManifest) -> Result<(), StageError> {
    m.seen = m.visit_hits + m.cache_hits + m.store_hits;
    // Written only if absent: a second attempt leaves the first's commit.
    ctx.store.put_json_new(&layout::input_manifest(target), m).await?;
    Ok(())
}

/// Runs `work` on the blocking pool. Work that touches every row (merging
/// into maps, fingerprints) must not hold an async worker thread, which
/// drives every other task's I/O (ARCHITECTURE.md,
/// "Invariants"); the reading and writing around it stays async.
pub(super) async fn off_async<T: Send + 'static>(
    what: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, StageError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| StageError::Internal(format!("{what} failed: {e}")))
}

pub(super) async fn link_shards(store: &Store, layer: u32) -> Result<Vec<String>, StoreError> {
    store.parquet_files(&layout::layer_dir(LINKS.name, layer)).await
}

pub(super) fn str_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a StringArray, StoreError> {
    schema::string_col(b, name, path)
}

pub(super) fn bool_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a BooleanArray, StoreError> {
    b.column_by_name(name).and_then(|c| c.as_boolean_opt()).ok_or_else(|| missing(path, name))
}

pub(crate) fn missing(path: &str, name: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: format!("column `{name}` missing or of another type") }
}
