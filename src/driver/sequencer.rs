//! What the driver asks of the data store between phases: which tasks of
//! a phase are still to run, in which order, and what the committed ones
//! did.

use crate::exec::Phase;
use crate::store::attempt::{self, Committed};
use crate::store::manifest::{MapManifest, OptimiseManifest};
use crate::store::{layout, Store};

use super::{LayerSummary, RunError};

/// The tasks of `phase` in `layer` with no manifest yet, largest first:
/// by the time the same partition's task took in the layer before (the
/// cost of a partition changes slowly from layer to layer, since one
/// partition owns the same sites), ties and the first layer by number.
///
/// # Errors
/// When a manifest cannot be read.
pub(super) async fn pending(store: &Store, phase: Phase, layer: u32, parts: u32) -> Result<Vec<u32>, RunError> {
    let mut todo = Vec::new();
    for part in 0..parts {
        if !store.exists(&manifest_path(phase, layer, part)).await? {
            let cost = match layer.checked_sub(1) {
                Some(before) => cost_of(store, phase, before, part).await?,
                None => 0,
            };
            todo.push((std::cmp::Reverse(cost), part));
        }
    }
    todo.sort_unstable();
    Ok(todo.into_iter().map(|(_, p)| p).collect())
}

fn manifest_path(phase: Phase, layer: u32, part: u32) -> String {
    match phase {
        Phase::Optimise => layout::optimise_manifest(layer, part),
        _ => layout::map_manifest(layer, part),
    }
}

async fn cost_of(store: &Store, phase: Phase, layer: u32, part: u32) -> Result<u64, RunError> {
    let path = manifest_path(phase, layer, part);
    Ok(match phase {
        Phase::Optimise => store.get_json::<OptimiseManifest>(&path).await?.map_or(0, |m| m.elapsed_ms),
        _ => store.get_json::<MapManifest>(&path).await?.map_or(0, |m| m.elapsed_ms),
    })
}

/// The committed map tasks of `layer`, summed, and whether any of them
/// shuffled links to targets within the depth or handed stragglers on (a
/// layer at or past the depth then needs a catch-up layer); each one's outputs are published
/// first (a task cut short between its commit and its publish is finished
/// here), so the next phase reads them all.
///
/// # Errors
/// When a task has not committed (the executor returned too early), or on
/// storage failures.
pub(super) async fn map_summary(store: &Store, layer: u32, parts: u32) -> Result<(LayerSummary, bool), RunError> {
    let mut ls = LayerSummary { layer, ..LayerSummary::default() };
    let mut within = false;
    for part in 0..parts {
        let path = layout::map_manifest(layer, part);
        let m: MapManifest = store.get_json(&path).await?.ok_or_else(|| {
            RunError::Internal(format!(
                "the map task of layer {layer} partition {part} ended without committing ({path})"
            ))
        })?;
        published(store, &layout::task_attempts(layer, "map", part), &m).await?;
        // Stragglers handed on by a layer at or past the depth are fetched
        // by the catch-up layer too.
        within |= (m.shuffled && m.candidates > 0) || m.stragglers > 0;
        ls.add(&m);
    }
    Ok((ls, within))
}

async fn published<M: Committed>(store: &Store, task_dir: &str, m: &M) -> Result<(), RunError> {
    Ok(attempt::roll_forward(store, task_dir, m).await?)
}
