//! The layer driver: seeds → layers of map and optimise → merge. It only
//! sequences the stages; their work lives in [`crate::map`],
//! [`crate::optimise`] and [`crate::merge`] (ARCHITECTURE.md).
//!
//! First it takes the data location's lease (one run at a time). Then, for
//! each layer `L` up to `--depth`: the executor runs every map task
//! ([`map::map_task`]) that has no manifest yet; then, if another layer
//! follows, every optimise task ([`optimise::optimise_task`]), and the
//! driver seals the layer ([`optimise::seal_layer`]) and writes its noise
//! labels into its links ([`optimise::apply_labels`]) beside the next
//! layer's map tasks. After the last layer,
//! the merge task compacts the output. Where tasks run is the executor's
//! business ([`crate::exec`]). Every step is committed by a manifest, so
//! re-running the same command resumes a killed run where it stopped.

mod forget;
mod hosts;
mod progress;
mod sequencer;
mod summary;

use futures::future::LocalBoxFuture;
use std::sync::Arc;
use std::time::Instant;

use crate::config::{CrawlConfig, ExecutorChoice};
use crate::error::StageError;
use crate::exec::{self, ExecError, Executor, Phase, PhaseRun};
use crate::fetch::{FetchError, Fetcher};
use crate::map::{self, MapCtx};
use crate::optimise::{self, OptimiseCtx};
use crate::seeds::{read_seeds, SeedsError};
use crate::store::lease::{Lease, LeaseError};
use crate::store::manifest::{MergeManifest, NextManifest};
use crate::store::{layout, Created, Store, StoreError};

pub use crate::store::manifest::RunState;
pub use forget::{forget, ForgetReport};
pub use hosts::{HostSummary, SlowestHost};
pub use progress::Progress;
pub use summary::{LayerSummary, RunSummary};

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    Seeds(#[from] SeedsError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The data location holds a crawl made with other fixed settings.
    #[error("data location {data} was made with {what} {was}, not {now}: the layers would not match. Use another --data location, or delete this one to start over.")]
    Incompatible { data: String, what: &'static str, was: String, now: String },
    /// A URL given on the command line is not usable.
    #[error("{url}: {reason}")]
    BadUrl { url: String, reason: String },
    /// A unit of work of a layer failed (storage, the temporary folder).
    #[error(transparent)]
    Stage(#[from] StageError),
    /// Tasks run elsewhere failed, or their executor could not start them.
    #[error(transparent)]
    Exec(ExecError),
    /// Another run holds the data location's lease.
    #[error("{0}")]
    Busy(String),
    /// Rendering is asked for, and Chromium cannot start as it must (with
    /// its sandbox, unless --render-no-sandbox).
    #[error("rendering: {0}")]
    Render(String),
    #[error("internal error: {0}")]
    Internal(String),
    /// SIGTERM (a pod being stopped, `kill`): the run stopped where it
    /// was, its lease given back.
    #[error("stopped by SIGTERM: nothing half-written is visible and the lease is given back; run the same command again to resume")]
    Terminated,
}

impl RunError {
    /// Exit code: 2 for bad input or settings, 1 for anything else.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Seeds(_) | Self::Incompatible { .. } | Self::BadUrl { .. } | Self::Busy(_) | Self::Render(_) => 2,
            Self::Stage(StageError::LeaseLost | StageError::Store(crate::store::StoreError::Fenced { .. })) => 2,
            // As a shell reports a process ended by SIGTERM.
            Self::Terminated => 143,
            _ => 1,
        }
    }

    /// Whether the data store failed (the message then names the object).
    #[must_use]
    pub fn is_storage(&self) -> bool {
        matches!(
            self,
            Self::Store(_) | Self::Stage(StageError::Store(_)) | Self::Exec(ExecError::Stage(StageError::Store(_)))
        )
    }
}

impl From<ExecError> for RunError {
    fn from(e: ExecError) -> Self {
        match e {
            ExecError::Stage(s) => Self::Stage(s),
            other => Self::Exec(other),
        }
    }
}

/// Runs the whole crawl described by `cfg`.
///
/// # Errors
/// Bad seeds, an incompatible data location, another run holding it, a
/// failed task, or a storage failure.
pub fn run(cfg: CrawlConfig) -> LocalBoxFuture<'static, Result<RunSummary, RunError>> {
    // Boxed here, so a caller in another crate (the binary) does not compile
    // this whole async call tree again (Contributing, "Builds").
    Box::pin(crawl(cfg))
}

async fn crawl(cfg: CrawlConfig) -> Result<RunSummary, RunError> {
    let started = Instant::now();
    let mut seeds = read_seeds(&cfg.seeds, &cfg.urls)?;
    for p in &seeds.problems {
        tracing::warn!("seeds file {} line {}: {}", cfg.seeds.display(), p.line, p.reason);
    }
    if let Some(plan) = &cfg.plan {
        add_plan_seeds(&mut seeds, plan, &cfg.urls);
    }
    let store = Store::open(&cfg.data)?.with_compression(cfg.compression);
    check_rendering(&cfg).await?;
    // One run per data location: before anything is written.
    let lease = take_lease(&store, cfg.wait, cfg.lease_expiry).await?;
    // SIGTERM stops the run where it is (uncommitted tasks are redone by
    // the next run) and gives the lease back, so that the next driver
    // need not wait for it to expire.
    let result = tokio::select! {
        r = run_leased(&cfg, &seeds, &store, &lease, started) => r,
        () = terminated() => {
            tracing::warn!("SIGTERM: stopping");
            Err(RunError::Terminated)
        }
    };
    if let Err(e) = lease.release().await {
        tracing::warn!("cannot release the lease: {e}");
    }
    result
}

/// With rendering on, Chromium must start with its sandbox here, or the
/// run is refused before it starts (docs/src/security.md); without the
/// sandbox (`--render-no-sandbox`) every run says so.
async fn check_rendering(cfg: &CrawlConfig) -> Result<(), RunError> {
    if !cfg.fetch.render.active() {
        return Ok(());
    }
    if cfg.fetch.render.no_sandbox {
        tracing::warn!("{}", crate::fetch::render::NO_SANDBOX_WARNING);
    }
    // A fetcher of its own, dropped (its browser with it) once it started.
    Fetcher::new(&cfg.fetch)?.prepare().await.map_err(RunError::Render)
}

/// Resolves when the process receives SIGTERM (never, if it cannot watch).
async fn terminated() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(e) => {
            tracing::warn!("cannot watch for SIGTERM: {e}");
            std::future::pending::<()>().await;
        }
    }
}

/// The navigation seeds of the plan's templates, after the seeds file's,
/// normalised the same way; a repeat of a seed is dropped.
fn add_plan_seeds(
    seeds: &mut crate::seeds::Seeds,
    plan: &crate::focus::PlanSource,
    policy: &crate::urlnorm::UrlPolicy,
) {
    let Ok(compiled) = plan.compile() else { return };
    let made = crate::seeds::parse_seeds(&compiled.seeds.join("\n"), policy);
    for p in &made.problems {
        tracing::warn!(
            "plan {}: seed {}: {}",
            plan.file,
            compiled.seeds.get(p.line - 1).map_or("", String::as_str),
            p.reason
        );
    }
    let known: std::collections::HashSet<url::Url> = seeds.urls.iter().cloned().collect();
    let before = seeds.urls.len();
    seeds.urls.extend(made.urls.into_iter().filter(|u| !known.contains(u)));
    tracing::info!("plan {}: {} navigation seeds added", plan.file, seeds.urls.len() - before);
}

async fn run_leased(
    cfg: &CrawlConfig,
    seeds: &crate::seeds::Seeds,
    store: &Store,
    lease: &Lease,
    started: Instant,
) -> Result<RunSummary, RunError> {
    let state = RunState {
        format: 1,
        partitions: cfg.partitions,
        scope: cfg.scope,
        seeds: seeds.urls.iter().map(ToString::to_string).collect(),
        strip_params: Some(cfg.urls.stripped().to_vec()),
    };
    // From now on no merge of an older lease generation writes or deletes
    // anything (`store/fencing.rs`): a driver stalled past its lease may
    // have left one running.
    crate::store::fencing::raise(store, layout::MERGE_FENCE, lease.generation()).await.map_err(StageError::from)?;
    check_state(store, &state).await?;
    refuse_deepening_catch_up(store, cfg.depth).await?;
    // What this run's units of work read (a unit run on its own included).
    let settings = crate::config::RunSettings::of(cfg);
    settings.save(store).await?;
    // Last night's crawl, checked before any work starts.
    let previous = match &cfg.previous {
        Some(location) => {
            Some(Arc::new(map::previous::Previous::open(location, store.location()).await.map_err(StageError::from)?))
        }
        None => None,
    };
    let progress = Arc::new(Progress::new(!cfg.quiet && !cfg.json));
    let optimiser = OptimiseCtx {
        store: store.clone(),
        partitions: cfg.partitions,
        depth: cfg.depth,
        noise_ratio: cfg.parse.noise_ratio,
        caches: OptimiseCtx::caches(cfg.partitions, cfg.optimise.cache_entries),
        cfg: Arc::new(cfg.optimise.clone()),
        budget: cfg.budget,
        fence: Some(lease.fence()),
        previous: match (&cfg.previous, cfg.optimise.denoise) {
            (Some(location), d) if d != crate::config::Denoise::Off => {
                crate::optimise::previous_counts(location, cfg.partitions).await?
            }
            _ => None,
        },
    };
    // The fetcher of the local executor; its governor's figures go into
    // each layer's summary.
    let mut local_fetcher = None;
    let executor: Box<dyn Executor> = match &cfg.executor {
        ExecutorChoice::Local => Box::new(exec::Local {
            mapper: MapCtx::new(
                store.clone(),
                &state,
                &settings,
                local_fetcher.insert(Fetcher::new(&cfg.fetch)?.with_fence(lease.fence())).clone(),
                cfg.extractors.clone(),
                previous.clone(),
            )
            .with_progress(Arc::clone(&progress) as Arc<dyn map::MapProgress>),
            optimiser: optimiser.clone(),
            progress: Arc::clone(&progress),
            layer_timeout: cfg.layer_timeout,
            straggler_after: cfg.fetch.straggler_after,
            depth: cfg.depth,
            catch_up: cfg.budget.max_pages.is_none() && cfg.fetch.max_pages_per_host.is_none(),
        }),
        ExecutorChoice::Processes { workers } => {
            Box::new(exec::Processes::new(&cfg.data, *workers, !cfg.quiet && !cfg.json)?.with_fence(lease.fence()))
        }
        ExecutorChoice::Kubernetes(k) => Box::new(
            exec::Kubernetes::connect(k.clone(), &cfg.data, cfg.partitions).await?.with_generation(lease.generation()),
        ),
    };
    let mut summary = RunSummary {
        data: store.location().to_string(),
        seeds: seeds.urls.len() as u64,
        seed_problems: seeds.problems.iter().map(|p| format!("line {}: {}", p.line, p.reason)).collect(),
        depth: cfg.depth,
        partitions: cfg.partitions,
        executor: executor.name().to_string(),
        ..RunSummary::default()
    };
    if !store.exists(&layout::input_manifest(0)).await? {
        optimise::seed_layer(&optimiser, &seeds.urls).await?;
    }
    // Truth URLs fetched so far (`--truth`).
    let mut truth_found = 0;
    let governor = local_fetcher.as_ref().and_then(Fetcher::governor);
    if let Some(g) = governor {
        // From here on: what the layers saw, not the run's start.
        g.take_figures();
    }
    // Layers 0 to --depth, then catch-up layers while a layer at or past the
    // depth had pages carried over from before it (stragglers, a failing
    // host's URLs) whose links are still within the depth: every URL found
    // within the depth is fetched (docs/src/politeness.md, "Retries and failing hosts").
    // Under a page budget a catch-up layer is not fetched (it would spend
    // pages the budget did not give): its input is counted as not requested.
    let budget = match (cfg.budget.max_pages, cfg.fetch.max_pages_per_host) {
        (Some(_), _) => Some("max-pages"),
        (None, Some(_)) => Some("max-pages-per-host"),
        (None, None) => None,
    };
    let mut left: Option<(u32, u64)> = None;
    let mut labelling: Option<tokio::task::JoinHandle<Result<(), StageError>>> = None;
    let mut layer = 0;
    loop {
        let layer_start = Instant::now();
        let todo = sequencer::pending(store, Phase::Map, layer, cfg.partitions).await?;
        if !todo.is_empty() {
            check_lease(lease)?;
            fence_tasks(store, lease, Phase::Map, layer, &todo).await?;
            if let (Some(budget), false) = (cfg.layer_timeout, matches!(cfg.executor, ExecutorChoice::Local)) {
                // Tasks in other processes read when the layer must end.
                let at = std::time::SystemTime::now() + budget;
                let ms = at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
                store.put_json(&layout::layer_deadline(layer), &u64::try_from(ms).unwrap_or(u64::MAX)).await?;
            }
            executor.run(&PhaseRun { phase: Phase::Map, layer, parts: todo }).await.map_err(|e| lost_or(lease, e))?;
        }
        let (mut ls, within) = sequencer::map_summary(store, layer, cfg.partitions).await?;
        // Candidates the noise filter deferred into this layer's
        // optimise step are decided there, past the depth too.
        let deferred = match store.get_json::<NextManifest>(&layout::input_manifest(layer)).await? {
            Some(n) => n.deferred > 0,
            None => false,
        };
        let catch_up = layer >= cfg.depth && (within || deferred);
        let mut more = layer < cfg.depth;
        if let Some(truth) = &cfg.truth {
            let found = truth.found(store, layer).await?;
            truth_found += found;
            ls.truth_found = Some(found);
            #[allow(clippy::cast_precision_loss)]
            let recall = truth_found as f64 / truth.len() as f64;
            ls.recall = Some(recall);
        }
        tracing::info!(layer, seconds = layer_start.elapsed().as_secs_f64(), "map done");
        if layer < cfg.depth || catch_up {
            let next_start = Instant::now();
            labelled(labelling.take()).await?;
            let next = match store.get_json::<NextManifest>(&layout::input_manifest(layer + 1)).await? {
                Some(n) => n,
                None => {
                    if layer < cfg.depth {
                        // A layer that was the last of a shallower run.
                        optimise::ensure_shuffled(&optimiser, layer).await?;
                    }
                    let todo = sequencer::pending(store, Phase::Optimise, layer, cfg.partitions).await?;
                    if !todo.is_empty() {
                        check_lease(lease)?;
                        fence_tasks(store, lease, Phase::Optimise, layer, &todo).await?;
                        executor
                            .run(&PhaseRun { phase: Phase::Optimise, layer, parts: todo })
                            .await
                            .map_err(|e| lost_or(lease, e))?;
                    }
                    optimise::seal_layer(&optimiser, layer).await?
                }
            };
            ls.set_next(&next);
            let (optimiser, sealed) = (optimiser.clone(), layer);
            labelling = Some(tokio::spawn(async move { optimise::apply_labels(&optimiser, sealed).await }));
            if catch_up && next.next > 0 {
                if budget.is_some() {
                    left = Some((layer + 1, next.next));
                } else {
                    more = true;
                }
            }
            tracing::info!(
                layer,
                seconds = next_start.elapsed().as_secs_f64(),
                next = next.next,
                "next layer's input built"
            );
        }
        ls.seconds = layer_start.elapsed().as_secs_f64();
        ls.governor = governor.map(crate::fetch::governor::Governor::take_figures);
        tracing::info!(layer, fetched = ls.fetched, ok = ls.ok, new_urls = ls.new_urls, "layer done");
        summary.layers.push(ls);
        if !more {
            break;
        }
        layer += 1;
    }
    let merge_start = Instant::now();
    labelled(labelling.take()).await?;
    check_lease(lease)?;
    // The merge task's layer is the last one: it merges layers 0 to it.
    executor.run(&PhaseRun { phase: Phase::Merge, layer, parts: vec![0] }).await.map_err(|e| lost_or(lease, e))?;
    let merged = store.get_json::<MergeManifest>(layout::MERGE_MANIFEST).await?;
    if merged.as_ref().is_none_or(|m| m.layers != layer + 1) {
        return Err(RunError::Internal(format!(
            "the merge task ended without merging the {} layers ({} says {:?})",
            layer + 1,
            layout::MERGE_MANIFEST,
            merged.map(|m| m.layers)
        )));
    }
    summary.merged = merged;
    tracing::info!(seconds = merge_start.elapsed().as_secs_f64(), "merge done");
    summary.seconds = started.elapsed().as_secs_f64();
    summary.totals();
    summary.skipped_classes = optimise::skipped_classes(store, 10).await?;
    if let (Some((next_layer, n)), Some(why)) = (left, budget) {
        summary.not_requested_in(next_layer, n, why);
    }
    Ok(summary)
}

/// A crawl that needed catch-up layers past its depth cannot be deepened:
/// its layer after the depth holds only URLs within the old depth (the
/// links one hop further were never shuffled). Said before anything runs.
async fn refuse_deepening_catch_up(store: &Store, depth: u32) -> Result<(), RunError> {
    let Some(before) = crate::config::RunSettings::load(store).await? else { return Ok(()) };
    if depth > before.depth && store.exists(&layout::input_manifest(before.depth + 1)).await? {
        return Err(RunError::Incompatible {
            data: store.location().to_string(),
            what: "--depth (it needed catch-up layers past its depth, which a deeper crawl cannot reuse; start a deeper crawl in a new --data location)",
            was: before.depth.to_string(),
            now: depth.to_string(),
        });
    }
    Ok(())
}

/// Takes the data location's lease (see [`Lease`]).
async fn take_lease(store: &Store, wait: bool, expiry: std::time::Duration) -> Result<Lease, RunError> {
    Lease::acquire_for(store, wait, expiry).await.map_err(|e| match e {
        LeaseError::Store(e) => RunError::Store(e),
        held @ LeaseError::Held { .. } => RunError::Busy(held.to_string()),
    })
}

/// Stops the run when another driver took the lease over (this one had
/// stalled past its expiry): two runs must never crawl at once.
/// Raises the claims of the tasks about to run to this driver's lease
/// generation, so that no attempt an older driver started commits from now
/// on (`store/fencing.rs`).
async fn fence_tasks(store: &Store, lease: &Lease, phase: Phase, layer: u32, parts: &[u32]) -> Result<(), RunError> {
    use futures::{StreamExt, TryStreamExt};
    let generation = lease.generation();
    futures::stream::iter(parts.iter().map(|&p| {
        let claim = layout::task_fence(layer, phase.as_str(), p);
        async move { crate::store::fencing::raise(store, &claim, generation).await }
    }))
    .buffer_unordered(16)
    .try_collect::<()>()
    .await
    .map_err(|e| RunError::Stage(StageError::Store(e)))
}

/// A phase that failed while this run lost its lease failed because of
/// that (its tasks were fenced off): said so, with exit code 2.
fn lost_or(lease: &Lease, e: ExecError) -> RunError {
    if lease.lost() {
        tracing::warn!("{e}");
        return RunError::Stage(StageError::LeaseLost);
    }
    e.into()
}

/// Waits for the noise labels of the layer before to be in its links
/// ([`optimise::apply_labels`]), and says how that went.
async fn labelled(labelling: Option<tokio::task::JoinHandle<Result<(), StageError>>>) -> Result<(), RunError> {
    match labelling {
        None => Ok(()),
        Some(task) => Ok(task.await.map_err(|e| StageError::Internal(format!("relabelling links failed: {e}")))??),
    }
}

fn check_lease(lease: &Lease) -> Result<(), RunError> {
    if lease.lost() {
        return Err(RunError::Busy(
            "this run's lease on the data location could not be renewed in time (the store failed, or this process was stopped past the lease's expiry) or was taken over by another run; stopping without committing more. Run the same command again once the other run is done (or the store is back): it resumes".into(),
        ));
    }
    Ok(())
}

async fn check_state(store: &Store, now: &RunState) -> Result<(), RunError> {
    // Written only if absent, so two drivers starting on one location at
    // once agree on one set of settings, and the other is refused below.
    let was = match store.put_json_new(layout::RUN, now).await? {
        Created::New => return Ok(()),
        Created::Existed => store
            .get_json::<RunState>(layout::RUN)
            .await?
            .ok_or_else(|| RunError::Internal(format!("{} vanished while it was read", layout::RUN)))?,
    };
    let data = store.location().to_string();
    if was.partitions != now.partitions {
        return Err(RunError::Incompatible {
            data,
            what: "--partitions",
            was: was.partitions.to_string(),
            now: now.partitions.to_string(),
        });
    }
    if was.scope != now.scope {
        return Err(RunError::Incompatible {
            data,
            what: "--scope",
            was: format!("{:?}", was.scope).to_lowercase(),
            now: format!("{:?}", now.scope).to_lowercase(),
        });
    }
    if was.strip_params.is_some() && was.strip_params != now.strip_params {
        let show = |p: &Option<Vec<String>>| p.as_deref().map_or_else(String::new, |l| format!("[{}]", l.join(",")));
        return Err(RunError::Incompatible {
            data,
            what: "--strip-params",
            was: show(&was.strip_params),
            now: show(&now.strip_params),
        });
    }
    if was.seeds != now.seeds {
        return Err(RunError::Incompatible {
            data,
            what: "seeds",
            was: format!("{} other seed URLs", was.seeds.len()),
            now: format!("{} seed URLs", now.seeds.len()),
        });
    }
    Ok(())
}
