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
mod seal;
mod shuffle;
mod yields;

pub use seal::{apply_labels, seal_layer};
pub(crate) use yields::{read_seen, skip_reason, write_skipped};
pub use yields::{skipped_classes, SkippedClass};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{BooleanArray, RecordBatch, StringArray};
use futures::StreamExt;
use url::Url;

use crate::config::Denoise;
use crate::dedup::dedup_round;
use crate::dedup::visited::VisitedStore;
use crate::denoise::yields::{ClassCount, Verdict};
use crate::denoise::{Method, NoiseLabel};
use crate::store::attempt::{self, Attempt};
use crate::store::dataset::{IN, LINKS, SKIPPED};
use crate::store::manifest::{MapManifest, NextManifest, OptimiseManifest, ShuffleManifest, SkipCounts};
use crate::store::schema::{self, InRow};
use crate::store::{layout, stream_batches, Created, ShardWriter, Store, StoreError};
use crate::urlnorm;

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

/// What one partition's share of the optimise step found.
struct PartitionNext {
    stats: NextManifest,
    /// Noise labels of this partition's targets, by URL fingerprint.
    labels: HashMap<u64, NoiseLabel>,
    /// The links shards that link to them (`shuffle::shard_bit`).
    label_sources: u64,
    followed_targets: u64,
}

/// Steps 2 and 3 for target partition `k`: its merged candidates
/// labelled, de-duplicated and written as its share of `in/layer=L+1`.
async fn optimise_partition(ctx: &OptimiseCtx, layer: u32, k: u32) -> Result<PartitionNext, StageError> {
    let (store, opt) = (&ctx.store, &*ctx.cfg);
    let mut m = NextManifest::default();
    // The filter's counts are read and judged while the candidates are
    // read and labelled: neither needs the other.
    let counting = (opt.denoise != Denoise::Off)
        .then(|| tokio::spawn(yields::count(store.clone(), ctx.previous.clone(), layer, k)));
    let mut cands = shuffle::read_partition(store, layer, k).await?;
    let followed_targets = cands.iter().filter(|c| c.followed).count() as u64;
    // Candidates the filter deferred here are decided with this layer's.
    let again = if opt.denoise == Denoise::Off {
        std::collections::HashSet::new()
    } else {
        yields::add_deferred(store, layer, k, &mut cands, layer >= ctx.depth).await?
    };
    // Traps first: they are never followed, whatever --denoise says.
    let mut labels = labels::find_traps(&cands, opt.max_query_variants);
    m.traps += labels.len() as u64;
    let mark = opt.denoise == Denoise::Mark;
    let mut skipped = SkipCounts::default();
    let mut verdicts: Vec<Option<Verdict>> = Vec::new();
    let mut classes: Vec<Option<u64>> = Vec::new();
    let mut deferred: Vec<usize> = Vec::new();
    let mut gates: Vec<(usize, crate::denoise::gate::Gate)> = Vec::new();
    let mut counts_written = None;
    if opt.denoise != Denoise::Off {
        let known: Vec<String> = opt.noise_patterns.clone();
        let method = opt.denoise.method();
        // By evidence, clustering only finds the user's known noise: without
        // any, it would compare every pair of URLs for nothing.
        if method == Method::Strict || !known.is_empty() {
            let cfg = opt.cluster.clone();
            let (back, (noise, clusters, comparisons)) = off_async("clustering", move || {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                let found = labels::cluster_partition(&cands, &known, &cfg, method);
                (cands, found)
            })
            .await?;
            cands = back;
            m.clusters += clusters;
            m.comparisons += comparisons;
            m.lcs_noise += noise.len() as u64;
            for fp in noise {
                labels.entry(fp).or_insert(NoiseLabel::LcsCluster);
            }
        }
        let counted = counting
            .ok_or_else(|| StageError::Internal("the filter's counts were not started".into()))?
            .await
            .map_err(|e| StageError::Internal(format!("counting the link classes failed: {e}")))??;
        counts_written = Some(counted.written);
        let evidence = counted.yields;
        let depth = i32::try_from(ctx.depth).unwrap_or(i32::MAX);
        let (back, decided) = off_async("deciding by yield", move || {
            let decided = yields::decide(&evidence, &cands, depth, &again);
            (cands, decided)
        })
        .await?;
        cands = back;
        verdicts = decided.verdicts;
        classes = decided.classes;
        // `mark` follows what the filter would not: nothing waits either.
        if !mark {
            deferred = decided.deferred;
            gates = decided.gates;
        }
        m.probes += decided.probes;
    }
    let mut skips: Vec<(&InRow, &ClassCount)> = Vec::new();
    let mut via: Vec<yields::Via> = Vec::new();
    let mut fresh: Vec<InRow> = Vec::new();
    let mut waiting = deferred.iter().peekable();
    let mut held: Vec<&Candidate> = Vec::new();
    let mut gated = gates.iter().peekable();
    let mut gate_rows = Vec::new();
    for (i, c) in cands.iter().enumerate().filter(|(_, c)| c.followed) {
        if waiting.next_if_eq(&&i).is_some() {
            held.push(c);
            continue;
        }
        let fp = urlnorm::fingerprint_str(&c.row.url);
        let label = labels.get(&fp).copied().or_else(|| match verdicts.get(i) {
            Some(Some(Verdict::Skip(_))) => Some(NoiseLabel::Barren),
            _ => None,
        });
        if let Some(label) = label {
            labels.entry(fp).or_insert(label);
            if !(mark && label.followed_when_marked()) {
                match (label, verdicts.get(i)) {
                    (NoiseLabel::Barren, Some(Some(Verdict::Skip(class)))) => {
                        if yields::skip_reason(class) == "errors" {
                            skipped.errors += 1;
                        } else {
                            skipped.copies += 1;
                        }
                        skips.push((&c.row, class));
                    }
                    (NoiseLabel::LcsCluster, _) => skipped.others += 1,
                    // Traps are never followed, filter or not.
                    _ => {}
                }
                continue;
            }
        }
        if let (false, Some(Some(class))) = (c.via.is_empty(), classes.get(i)) {
            via.push(yields::Via {
                fingerprint: fp,
                via: c.via.join("\n"),
                referrer: c.row.referrer.clone(),
                class: *class,
            });
        }
        while gated.next_if(|(at, _)| *at < i).is_some() {}
        if let Some((_, gate)) = gated.next_if(|(at, _)| *at == i) {
            gate_rows.push((fp, *gate));
        }
        fresh.push(c.row.clone());
    }
    m.barren += skipped.copies + skipped.errors;
    m.deferred += held.len() as u64;
    m.skipped = skipped;
    // The filter's files are written while the next layer's input is
    // made: neither reads the other.
    let filter_files = async {
        if opt.denoise != Denoise::Off {
            let skipped_path = layout::shard(SKIPPED.name, layer + 1, k);
            tokio::try_join!(
                yields::write_via(store, layer + 1, k, &via),
                yields::write_skipped(store, &skipped_path, &skips),
                yields::write_deferred(store, layer + 1, k, &held),
                yields::write_gates(store, layer + 1, k, &gate_rows),
            )?;
        }
        if let Some(written) = counts_written {
            written
                .await
                .map_err(|e| StageError::Internal(format!("writing the link classes' counts failed: {e}")))??;
        }
        Ok::<(), StageError>(())
    };
    let next_input = async {
        let (carried, held) = tokio::try_join!(read_carried(store, layer, k), yields::read_held_back(store, layer, k))?;
        // A URL the map task held back, followed again from a link of this
        // layer (by a class that yields, or as a probe), is fetched: it was
        // never fetched, though the visited store has it.
        let (held_back, fresh) = fresh.into_iter().partition(|r| held.contains(&urlnorm::fingerprint_str(&r.url)));
        // The ant-colony and learned orders learn from the layer's pages first.
        let ranking = crate::focus::Ranking::learn(store, layer, k, opt.order).await?;
        let probes = gate_rows.iter().filter(|(_, g)| g.probe).map(|(fp, _)| *fp).collect();
        let parts = InputParts { fresh, carried, held_back, probes };
        write_partition_input(ctx, layer + 1, k, parts, &ranking, &mut m).await
    };
    tokio::try_join!(filter_files, next_input)?;
    // The links shards the seal rewrites for these labels.
    let label_sources = if labels.is_empty() {
        0
    } else {
        cands
            .iter()
            .filter(|c| labels.contains_key(&urlnorm::fingerprint_str(&c.row.url)))
            .fold(0, |a, c| a | c.sources)
    };
    Ok(PartitionNext { stats: m, labels, label_sources, followed_targets })
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

/// The rows of a partition's input: the targets of the layer's links it
/// follows, and the URLs it takes without asking the visited store.
#[derive(Default)]
struct InputParts {
    fresh: Vec<InRow>,
    /// URLs carried over unfetched (in the visited store from their first
    /// layer)...
    carried: Vec<InRow>,
    /// ...and URLs the map task held back in the layer (the noise filter's
    /// gates), followed now from another link.
    held_back: Vec<InRow>,
    /// The noise filter's gated probes, by URL fingerprint: written first,
    /// since the rest of their groups wait for them (an input ranked best
    /// first has no gates: `map::gate`).
    probes: HashSet<u64>,
}

/// De-duplicates and writes partition `k`'s share of layer `target`'s
/// input, in the run's order (with `--order ant` or `learned`, by what it
/// learned: `ranking`).
async fn write_partition_input(
    ctx: &OptimiseCtx,
    target: u32,
    k: u32,
    parts: InputParts,
    ranking: &crate::focus::Ranking,
    m: &mut NextManifest,
) -> Result<Option<budget::Ranks>, StageError> {
    let InputParts { fresh: mut rows, carried, held_back, probes } = parts;
    let store = &ctx.store;
    let visited = VisitedStore::new(store.clone());
    m.carried += carried.len() as u64;
    // Smallest depth first, so the row kept for a repeated URL has it.
    rows.sort_by_key(|r| r.depth);
    let keyed: Vec<(u64, InRow)> = rows.into_iter().map(|r| (urlnorm::fingerprint_str(&r.url), r)).collect();
    let round = dedup_round(&ctx.caches[k as usize], &visited, k, target, keyed).await?;
    (m.visit_hits, m.cache_hits, m.store_hits) = (
        m.visit_hits + round.stats.visit_hits,
        m.cache_hits + round.stats.cache_hits,
        m.store_hits + round.stats.store_hits,
    );
    let mut out = round.admitted;
    // Carried URLs are in the visited store already (from their first layer).
    out.extend(carried);
    out.extend(held_back);
    // Best first (docs/src/focused-crawling.md): the scheduler fetches each
    // host's URLs in input order. Without a plan every priority is none
    // and the order is the URL's.
    let mut out = ranking.order(store, target, k, out).await?;
    // The scheduler fetches each host's URLs in input order. An input in
    // the URLs' order puts the probes first; one ranked best first (a crawl
    // plan, a learned order) stays so, its probes where their ranks are.
    let ranked = !matches!(ranking, crate::focus::Ranking::Plain(_))
        || ctx.budget.max_pages.is_some()
        || out.iter().any(|r| r.priority.is_some());
    if !probes.is_empty() && !ranked {
        out.sort_by_key(|r| !probes.contains(&urlnorm::fingerprint_str(&r.url)));
    }
    m.next += out.len() as u64;
    let path = layout::shard(IN.name, target, k);
    if out.is_empty() {
        store.delete(&path).await?;
        return Ok(None);
    }
    let mut w = ShardWriter::create(store, &path, schema::input_schema(), 32 << 20)?;
    for chunk in out.chunks(8192) {
        w.write(&schema::input_batch(chunk)?).await?;
    }
    w.finish().await?;
    // Beside the input, for the layer's page budget: how many of its URLs
    // have each rank (the seal reads every partition's).
    if ctx.budget.max_pages.is_none() || !ctx.cfg.order.ranks() {
        return Ok(None);
    }
    let order = ctx.cfg.order;
    let pheromone = match ranking {
        crate::focus::Ranking::Ant(p) => Some(p),
        _ => None,
    };
    let ranks = budget::Ranks::of(out.iter().map(|r| order.rank(r, pheromone)));
    ranks.write(store, &layout::ranks(target, k)).await?;
    Ok(Some(ranks))
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
