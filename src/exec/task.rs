//! One unit of work run on its own (`layercrawl task`): given only the
//! data store, the phase, the layer and the partition. Idempotent: a task
//! already committed exits at once, successfully.
//!
//! Started by a driver, a task acts under the driver's lease generation
//! ([`Fencing`]): it watches the lease (`store::lease::watch`), its
//! requests stop and are abandoned when it can no longer see it renewed,
//! and its commit is refused once a newer generation fenced it
//! (`store/fencing.rs`; docs/src/cluster.md, "One run per data location").

use futures::future::LocalBoxFuture;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::Phase;
use crate::error::StageError;
use crate::map::{self, MapCtx};
use crate::merge;
use crate::optimise::{self, OptimiseCtx};
use crate::store::{layout, lease, Created, Store};

/// What a task did.
#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    pub phase: Phase,
    pub layer: u32,
    pub partition: u32,
    /// `committed` when this run committed the task, `already committed`
    /// when an earlier or concurrent attempt had.
    pub outcome: &'static str,
    /// The attempt whose outputs count.
    pub attempt: String,
    pub seconds: f64,
}

/// Why a task could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    #[error(transparent)]
    Stage(#[from] StageError),
    /// The layer or partition is not one of the crawl's (bad input: exit 2).
    #[error("{0}")]
    OutOfRange(String),
}

impl TaskError {
    /// Whether the task stopped because its lease ran out or another run
    /// fenced it: no attempt under the same generation can commit.
    #[must_use]
    pub fn fenced(&self) -> bool {
        matches!(self, Self::Stage(StageError::LeaseLost | StageError::Store(crate::store::StoreError::Fenced { .. })))
    }
}

/// The lease a task acts under, as its driver hands it over.
#[derive(Clone, Copy, Debug)]
pub struct Fencing {
    /// The driver's lease generation: the task's fencing token.
    pub generation: u64,
    /// What was left of the driver's fence when it started the task; none
    /// when the task must first see the lease renewed (a pod).
    pub valid_for: Option<std::time::Duration>,
}

/// Runs task `part` of `phase` in `layer` on the crawl at `data`, under
/// `fencing` when a driver started it.
///
/// # Errors
/// A layer or partition outside the crawl's, the lease of another
/// generation, or the task's failure.
pub fn run_task(
    data: &str,
    phase: Phase,
    layer: u32,
    part: u32,
    fencing: Option<Fencing>,
) -> LocalBoxFuture<'_, Result<TaskReport, TaskError>> {
    // Boxed here, so a caller in another crate (the binary) does not compile
    // this whole async call tree again (Contributing, "Builds").
    Box::pin(task(data, phase, layer, part, fencing))
}

async fn task(
    data: &str,
    phase: Phase,
    layer: u32,
    part: u32,
    fencing: Option<Fencing>,
) -> Result<TaskReport, TaskError> {
    let started = Instant::now();
    let store = Store::open(data).map_err(StageError::from)?;
    let fence = match fencing {
        Some(f) => Some(lease::watch(&store, f.generation, f.valid_for).await.map_err(StageError::from)?),
        None => None,
    };
    let (state, settings) = crate::config::load_run(&store).await?;
    if phase != Phase::Merge && part >= state.partitions {
        return Err(TaskError::OutOfRange(format!(
            "partition {part} is not one of the crawl's {} partitions (0..={}) at {data}",
            state.partitions,
            state.partitions - 1
        )));
    }
    // Layers past the depth exist only as catch-up layers: their input was sealed.
    let built = store.exists(&crate::store::layout::input_manifest(layer)).await.map_err(StageError::from)?;
    let last = if phase == Phase::Optimise { settings.depth.saturating_sub(1) } else { settings.depth };
    if phase != Phase::Merge && ((layer > last && !built) || (phase == Phase::Optimise && settings.depth == 0)) {
        return Err(TaskError::OutOfRange(format!(
            "layer {layer} has no {} phase in this crawl of depth {} at {data}",
            phase.as_str(),
            settings.depth
        )));
    }
    let (created, attempt) = match phase {
        Phase::Map => {
            let mut ctx = MapCtx::open(store).await?;
            if let Some(f) = &fence {
                ctx.fetcher = ctx.fetcher.clone().with_fence(Arc::clone(f));
            }
            // The layer's time budget counts from when its phase started,
            // not from when this task did (a task may wait for a worker).
            if let Some(deadline) = layer_deadline(&ctx.store, layer).await? {
                ctx.deadline = Some(deadline);
            }
            let (m, created) = map::map_task(&ctx, layer, part).await?;
            (created, m.attempt)
        }
        Phase::Optimise => {
            let mut ctx = OptimiseCtx::open(store).await?;
            ctx.fence = fence;
            let (m, created) = optimise::optimise_task(&ctx, layer, part).await?;
            (created, m.attempt)
        }
        Phase::Merge => {
            // The merge task's layer is the crawl's last (catch-up layers
            // included): it merges layers 0 to it, fenced as the other tasks.
            let store = store.with_compression(settings.compression);
            merge::merge_layers(&store, layer.max(settings.depth) + 1, fence).await?;
            (Created::New, String::new())
        }
    };
    Ok(TaskReport {
        phase,
        layer,
        partition: part,
        outcome: if created == Created::New { "committed" } else { "already committed" },
        attempt,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The deadline of `layer`'s map phase that the driver wrote (unix ms),
/// as an instant of this process; `None` when it set none.
async fn layer_deadline(store: &Store, layer: u32) -> Result<Option<Instant>, StageError> {
    let Some(at_ms) = store.get_json::<u64>(&layout::layer_deadline(layer)).await? else { return Ok(None) };
    let now_ms = u64::try_from(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis(),
    )
    .unwrap_or(u64::MAX);
    Ok(Some(Instant::now() + std::time::Duration::from_millis(at_ms.saturating_sub(now_ms))))
}

/// The partition index a scheduler gives a task in the environment
/// variable `var` (`JOB_COMPLETION_INDEX` on Kubernetes,
/// `AWS_BATCH_JOB_ARRAY_INDEX`, `SLURM_ARRAY_TASK_ID`).
///
/// # Errors
/// When the variable is missing or not a number.
pub fn partition_from_env(var: &str) -> Result<u32, String> {
    let value =
        std::env::var(var).map_err(|_| format!("environment variable {var} is not set (--partition-from-env)"))?;
    value.trim().parse().map_err(|_| format!("environment variable {var}={value:?} is not a partition number"))
}
