//! The layer driver: seeds → layers of map and optimise → merge. It only
//! sequences the stages; their work lives in [`crate::map`],
//! [`crate::optimise`] and [`crate::merge`] (ARCHITECTURE.md).
//!
//! For each layer `L` up to `--depth`: run every partition's map task
//! ([`map::map_partition`]) that has no manifest yet, concurrently; then, if
//! another layer follows, build its input ([`optimise::optimise_layer`]).
//! After the last layer, [`merge::merge_layers`] compacts the output. Every
//! step is committed by a manifest, so re-running the same command resumes
//! a killed run where it stopped.

mod forget;
mod progress;
mod summary;

use std::sync::Arc;
use std::time::Instant;

use crate::config::CrawlConfig;
use crate::error::StageError;
use crate::fetch::{FetchError, Fetcher, LayerTail};
use crate::map::{self, MapCtx};
use crate::merge;
use crate::optimise::{self, OptimiseCtx};
use crate::scope::ScopeFilter;
use crate::seeds::{read_seeds, SeedsError};
use crate::store::manifest::{MapManifest, NextManifest};
use crate::store::{layout, Created, Store, StoreError};

pub use crate::store::manifest::RunState;
pub use forget::{forget, ForgetReport};
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
    #[error("internal error: {0}")]
    Internal(String),
}

impl RunError {
    /// Exit code: 2 for bad input or settings, 1 for anything else.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::Seeds(_) | Self::Incompatible { .. } | Self::BadUrl { .. } => 2,
            _ => 1,
        }
    }

    /// Whether the data store failed (the message then names the object).
    #[must_use]
    pub fn is_storage(&self) -> bool {
        matches!(self, Self::Store(_) | Self::Stage(StageError::Store(_)))
    }
}

/// Runs the whole crawl described by `cfg`.
///
/// # Errors
/// Bad seeds, an incompatible data location, or a storage failure.
pub async fn run(cfg: CrawlConfig) -> Result<RunSummary, RunError> {
    let started = Instant::now();
    let seeds = read_seeds(&cfg.seeds, &cfg.urls)?;
    for p in &seeds.problems {
        tracing::warn!("seeds file {} line {}: {}", cfg.seeds.display(), p.line, p.reason);
    }
    let store = Store::open(&cfg.data)?.with_compression(cfg.compression);
    let state = RunState {
        format: 1,
        partitions: cfg.partitions,
        scope: cfg.scope,
        seeds: seeds.urls.iter().map(ToString::to_string).collect(),
        strip_params: Some(cfg.urls.stripped().to_vec()),
    };
    check_state(&store, &state).await?;
    // What this run's units of work read (a unit run on its own included).
    let settings = crate::config::RunSettings::of(&cfg);
    settings.save(&store).await?;
    let progress = Arc::new(Progress::new(!cfg.quiet && !cfg.json));
    let scope = ScopeFilter::from_seeds(cfg.scope, &seeds.urls);
    let mapper = MapCtx {
        store: store.clone(),
        partitions: cfg.partitions,
        scope,
        pages: settings.pages,
        fetcher: Fetcher::new(&cfg.fetch)?,
        deadline: None,
        tail: None,
        progress: Arc::clone(&progress) as Arc<dyn map::MapProgress>,
        extract: cfg.extractors.clone(),
    };
    let optimiser = OptimiseCtx {
        store: store.clone(),
        partitions: cfg.partitions,
        depth: cfg.depth,
        noise_ratio: cfg.parse.noise_ratio,
        caches: OptimiseCtx::caches(cfg.partitions, cfg.optimise.cache_entries),
        cfg: Arc::new(cfg.optimise.clone()),
    };
    let cfg = Arc::new(cfg);
    let mut summary = RunSummary {
        data: store.location().to_string(),
        seeds: seeds.urls.len() as u64,
        seed_problems: seeds.problems.iter().map(|p| format!("line {}: {}", p.line, p.reason)).collect(),
        depth: cfg.depth,
        partitions: cfg.partitions,
        ..RunSummary::default()
    };
    if !store.exists(&layout::input_manifest(0)).await? {
        optimise::seed_layer(&optimiser, &seeds.urls).await?;
    }
    for layer in 0..=cfg.depth {
        let layer_start = Instant::now();
        let mut ls = run_layer(&mapper, &cfg, &progress, layer).await?;
        tracing::info!(layer, seconds = layer_start.elapsed().as_secs_f64(), "map done");
        if layer < cfg.depth {
            let next_start = Instant::now();
            let next = match store.get_json::<NextManifest>(&layout::input_manifest(layer + 1)).await? {
                Some(n) => n,
                None => optimise::optimise_layer(&optimiser, layer).await?,
            };
            ls.set_next(&next);
            tracing::info!(
                layer,
                seconds = next_start.elapsed().as_secs_f64(),
                next = next.next,
                "next layer's input built"
            );
        }
        ls.seconds = layer_start.elapsed().as_secs_f64();
        tracing::info!(layer, fetched = ls.fetched, ok = ls.ok, new_urls = ls.new_urls, "layer done");
        summary.layers.push(ls);
    }
    // Requests handed over by the last layer have no layer to land in:
    // their URLs are carried (state/carry), as a layer out of time carries.
    mapper.fetcher.handover.clear();
    let merge_start = Instant::now();
    summary.merged = Some(merge::merge_layers(&store, cfg.depth + 1).await?);
    tracing::info!(seconds = merge_start.elapsed().as_secs_f64(), "merge done");
    summary.seconds = started.elapsed().as_secs_f64();
    summary.totals();
    Ok(summary)
}

/// Runs the map tasks of `layer` that are not committed yet.
async fn run_layer(ctx: &MapCtx, cfg: &CrawlConfig, progress: &Progress, layer: u32) -> Result<LayerSummary, RunError> {
    let store = &ctx.store;
    let mut ls = LayerSummary { layer, ..LayerSummary::default() };
    let mut todo = Vec::new();
    let mut done_inputs = 0;
    for part in 0..cfg.partitions {
        match store.get_json::<MapManifest>(&layout::map_manifest(layer, part)).await? {
            Some(m) => {
                done_inputs += m.input;
                ls.add(&m);
            }
            None => todo.push(part),
        }
    }
    if todo.is_empty() {
        return Ok(ls);
    }
    let total = store.get_json::<NextManifest>(&layout::input_manifest(layer)).await?.map_or(0, |m| m.next);
    progress.start_layer(layer, total, done_inputs);
    let mut lctx = ctx.clone();
    lctx.deadline = cfg.layer_timeout.map(|t| Instant::now() + t);
    // One seat per map task below, each taken as the task starts.
    lctx.tail = cfg.fetch.straggler_after.map(|floor| LayerTail::new(todo.len(), floor));
    let mut tasks = tokio::task::JoinSet::new();
    for part in todo {
        let c = lctx.clone();
        tasks.spawn(async move { map::map_partition(&c, layer, part).await });
    }
    let mut first_err = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(m)) => ls.add(&m),
            Ok(Err(e)) => {
                first_err.get_or_insert(e.into());
            }
            Err(e) => {
                first_err.get_or_insert(RunError::Internal(format!("map task panicked: {e}")));
            }
        }
    }
    progress.finish_layer();
    match first_err {
        Some(e) => Err(e),
        None => Ok(ls),
    }
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
