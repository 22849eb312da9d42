//! The seal of a layer's optimise step, once every target partition's task
//! has committed: the counts summed, the page budget split, the next
//! layer's input committed; then, beside the next layer's map tasks, the
//! noise labels written into the layer's links.

use std::collections::HashMap;

use crate::config::Denoise;
use crate::denoise::NoiseLabel;
use crate::error::StageError;
use crate::store::attempt;
use crate::store::layout;
use crate::store::manifest::{LayerBudget, MapManifest, NextManifest, OptimiseManifest, ShuffleManifest};

use super::{budget, commit_layer_input, labels, OptimiseCtx};

/// Seals the optimise step of `layer` once every target partition's task
/// has committed: the counts summed, and `in/layer=L+1` committed by its
/// manifest; the shuffle's spills and the layer's attempt folders are then
/// removed. The noise labels are written into `links/layer=L` after it
/// ([`apply_labels`]).
/// Idempotent: a sealed layer's manifest is returned as it is.
///
/// # Errors
/// When a partition's task has not committed, or on storage failures.
pub async fn seal_layer(ctx: &OptimiseCtx, layer: u32) -> Result<NextManifest, StageError> {
    let store = &ctx.store;
    if let Some(done) = store.get_json::<NextManifest>(&layout::input_manifest(layer + 1)).await? {
        return Ok(done);
    }
    let mut m = NextManifest { layer: layer + 1, ..NextManifest::default() };
    let mut followed_targets = 0u64;
    let respilled = store.get_json::<ShuffleManifest>(&layout::shuffle_manifest(layer)).await?;
    if let Some(r) = &respilled {
        (m.candidates, m.dom_noise) = (r.candidates, r.dom_noise);
    }
    for k in 0..ctx.partitions {
        if let Some(map) = store.get_json::<MapManifest>(&layout::map_manifest(layer, k)).await? {
            if respilled.is_none() {
                m.candidates += map.candidates;
                m.dom_noise += map.dom_noise;
            }
        }
        let path = layout::optimise_manifest(layer, k);
        let part: OptimiseManifest = store.get_json(&path).await?.ok_or_else(|| {
            StageError::Internal(format!(
                "layer {layer} cannot be sealed: the optimise task of partition {k} has not committed ({path} is missing)"
            ))
        })?;
        attempt::roll_forward(store, &layout::task_attempts(layer, "optimise", k), &part).await?;
        followed_targets += part.followed_targets;
        m.add_partition(&part.stats);
    }
    // Repeats within the round: every followable link to a target after its first.
    m.visit_hits += m.candidates.saturating_sub(followed_targets);
    if ctx.budget.max_pages.is_some() && ctx.cfg.order.ranks() {
        let mut ranks = Vec::with_capacity(ctx.partitions as usize);
        for k in 0..ctx.partitions {
            ranks.push(budget::Ranks::read(store, &layout::ranks(layer + 1, k)).await?.unwrap_or_default());
        }
        m.budget = layer_budget(ctx, ranks, m.next);
    }
    commit_layer_input(ctx, layer + 1, &mut m).await?;
    crate::shuffle::clear(store, layer).await?;
    attempt::discard(store, &layout::layer_attempts(layer)).await?;
    attempt::discard(store, &layout::layer_fences(layer)).await?;
    Ok(m)
}

/// Writes the noise labels the optimise tasks after `layer` gave their
/// targets into the links of `links/layer=L` that lead there, then removes
/// them (`state/labels/layer=L`). The driver runs it once the layer is
/// sealed, beside the next layer's map tasks, which read no links of an
/// earlier layer, and waits for it before the next seal and the merge: the
/// rewrite of a large site's links shard costs as much as a layer's
/// optimise step, and no fetch waits for it. Idempotent: done, it finds no
/// labels; cut short, it is done again whole by the next run.
///
/// # Errors
/// On storage failures.
pub async fn apply_labels(ctx: &OptimiseCtx, layer: u32) -> Result<(), StageError> {
    let store = &ctx.store;
    let present = store.list(&layout::labels_dir(layer)).await?;
    if present.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let mut labels: HashMap<u64, NoiseLabel> = HashMap::new();
    let mut sources = 0u64;
    for k in 0..ctx.partitions {
        let Some(part) = store.get_json::<OptimiseManifest>(&layout::optimise_manifest(layer, k)).await? else {
            continue;
        };
        if part.labels > 0 {
            let path = layout::labels(layer, k);
            if !present.iter().any(|(p, _)| p.ends_with(&path)) {
                // The files are removed only once every links shard has
                // its labels (below): one gone means a run stopped while
                // removing them. What is left is removed.
                attempt::discard(store, &layout::labels_dir(layer)).await?;
                return Ok(());
            }
            labels.extend(labels::read_labels(store, &path).await?);
            sources |= part.label_sources;
        }
    }
    let n = labels.len();
    let shards = if labels.is_empty() {
        0
    } else {
        labels::relabel_links(store, layer, labels, sources, ctx.cfg.denoise == Denoise::Mark).await?
    };
    attempt::discard(store, &layout::labels_dir(layer)).await?;
    tracing::debug!(layer, seconds = started.elapsed().as_secs_f64(), labels = n, shards, "links relabelled");
    Ok(())
}

/// The page budget of a layer whose partitions' inputs rank as `ranks`
/// (`next` URLs in all), when the run has one and its order ranks URLs;
/// none when the histograms do not count the whole input (a share written
/// by an older version: the map tasks then share the budget in proportion).
pub(super) fn layer_budget(ctx: &OptimiseCtx, ranks: Vec<budget::Ranks>, next: u64) -> Option<LayerBudget> {
    let max = ctx.budget.max_pages.filter(|_| ctx.cfg.order.ranks())?;
    let counted: u64 = ranks.iter().map(budget::Ranks::total).sum();
    if counted != next {
        tracing::warn!(
            counted,
            next,
            "the layer's ranks do not count its whole input; its budget is shared in proportion"
        );
        return None;
    }
    budget::split(&ranks, max)
}
