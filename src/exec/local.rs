//! The local executor: every task in the driver's own process.
//!
//! A layer's map tasks run concurrently and share one fetcher (its
//! connection pools, robots.txt cache and per-host send slots) and one
//! layer tail, so the layer ends when only stragglers are left in every
//! partition and their requests are handed to the next layer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;

use super::{ExecError, Executor, Phase, PhaseRun};
use crate::driver::Progress;
use crate::error::StageError;
use crate::fetch::LayerTail;
use crate::map::{self, MapCtx};
use crate::merge;
use crate::optimise::{self, OptimiseCtx};
use crate::store::layout;
use crate::store::manifest::{MapManifest, NextManifest};

/// Runs tasks in this process.
pub struct Local {
    pub mapper: MapCtx,
    pub optimiser: OptimiseCtx,
    pub progress: Arc<Progress>,
    /// `--layer-timeout` and `--straggler-after`.
    pub layer_timeout: Option<Duration>,
    pub straggler_after: Option<Duration>,
    /// `--depth`: layers from it on drain their stragglers, unless URLs
    /// were carried into them and `catch_up`.
    pub depth: u32,
    /// Whether the run fetches catch-up layers past the depth (not under a
    /// page budget).
    pub catch_up: bool,
}

impl Executor for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn run<'a>(&'a self, run: &'a PhaseRun) -> BoxFuture<'a, Result<(), ExecError>> {
        async move {
            match run.phase {
                Phase::Map => self.map(run.layer, &run.parts).await,
                Phase::Optimise => {
                    optimise::optimise_tasks(&self.optimiser, run.layer, &run.parts).await?;
                    Ok(())
                }
                Phase::Merge => {
                    // Requests handed over by the last layer have no layer to
                    // land in: their URLs are carried (state/carry), as a
                    // layer out of time carries.
                    self.mapper.fetcher.handover.clear();
                    merge::merge_layers(&self.mapper.store, run.layer + 1, self.optimiser.fence.clone()).await?;
                    Ok(())
                }
            }
        }
        .boxed()
    }
}

impl Local {
    async fn map(&self, layer: u32, parts: &[u32]) -> Result<(), ExecError> {
        let store = &self.mapper.store;
        let mut done_inputs = 0;
        for part in 0..self.mapper.partitions {
            if !parts.contains(&part) {
                if let Some(m) =
                    store.get_json::<MapManifest>(&layout::map_manifest(layer, part)).await.map_err(StageError::from)?
                {
                    done_inputs += m.input;
                }
            }
        }
        let input = store.get_json::<NextManifest>(&layout::input_manifest(layer)).await.map_err(StageError::from)?;
        let (total, carried_in) = input.map_or((0, 0), |m| (m.next, m.carried));
        self.progress.start_layer(layer, total, done_inputs);
        let mut ctx = self.mapper.clone();
        ctx.deadline = self.layer_timeout.map(|t| Instant::now() + t);
        // One seat per map task below, each taken as the task starts. The
        // last layer has no next layer to hand its stragglers to: it drains
        // them, bounded only by the limits the user set
        // (docs/src/politeness.md, "Retries and failing hosts"). A layer at
        // or past the depth hands them on when URLs were carried into it
        // and one of its pages had links within the depth: a catch-up layer
        // follows anyway, and fetches those links beside the stragglers
        // instead of after them. Each such hand-on needs a page fetched
        // late with new links, and every URL is fetched once, so the
        // catch-up layers end. Not under a page budget, which fetches no
        // catch-up layer.
        ctx.tail = self.straggler_after.and_then(|floor| {
            if layer < self.depth {
                Some(LayerTail::new(parts.len(), floor))
            } else {
                (carried_in > 0 && self.catch_up).then(|| LayerTail::at_depth(parts.len(), floor))
            }
        });
        let mut tasks = tokio::task::JoinSet::new();
        for &part in parts {
            let c = ctx.clone();
            tasks.spawn(async move { map::map_partition(&c, layer, part).await });
        }
        let mut first_err = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(ExecError::Stage(e));
                }
                Err(e) => {
                    first_err.get_or_insert(ExecError::Stage(StageError::Internal(format!("map task panicked: {e}"))));
                }
            }
        }
        self.progress.finish_layer();
        first_err.map_or(Ok(()), Err)
    }
}
