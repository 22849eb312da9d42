//! The merge stage: after the last layer, compact each layer's shards for
//! analytics (docs/src/how-it-works.md, step 4).
//!
//! Per dataset that `store::dataset` says is merged (always, or when the
//! crawl wrote it, or each rule's `items/rule=NAME`, found by listing) and
//! layer, the `part-*.parquet` shards are
//! concatenated into one `data-00000.parquet` in the same `layer=L` folder,
//! so one glob still reads the whole crawl exactly once. Row groups are
//! copied, not re-encoded (see [`crate::store::concat_shards`]): they stay as the map
//! tasks cut them, up to 4 MiB each as encoded, which analytics engines
//! read as well as bigger ones, and the merge costs I/O instead of a third
//! of the run. The merge manifest is written before the shards are
//! deleted; a re-run after a kill finishes whichever step was cut.
//!
//! Run under a driver's lease, the merge is fenced like every task
//! (docs/src/cluster.md, "One run per data location"): it passes the
//! merge's claim (`store/fencing.rs`, `layout::MERGE_FENCE`) with its lease
//! generation before each of its writes: each merged file (which appears
//! only if its fence still holds once written), the manifest, and the
//! deletion of the shards (its fence checked again before each one). A
//! merge of a driver stalled past its lease's expiry then writes and
//! deletes nothing once a successor took over: it could otherwise delete
//! shards the successor is merging, or replace a deeper run's manifest
//! with its own.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};

use crate::error::{cores, StageError};
use crate::fence::Fence;
use crate::store::attempt::Attempt;
use crate::store::concat::concat_fenced;
use crate::store::dataset::{self, Dataset, Merge};
use crate::store::manifest::MergeManifest;
use crate::store::{layout, read_batches, Store, StoreError};

/// Merges layers `0..layers` of each merged dataset (`store::dataset`),
/// under `fence` when a driver's lease holds it (see the module's header).
///
/// # Errors
/// On storage failures; [`StoreError::Fenced`] when the fence ran out or a
/// newer lease generation holds the merge's claim.
pub async fn merge_layers(store: &Store, layers: u32, fence: Option<Arc<Fence>>) -> Result<MergeManifest, StageError> {
    let attempt = Attempt::start(layout::MERGE_ATTEMPTS).fenced_by(layout::MERGE_FENCE.into(), fence);
    attempt.pass_fence(store).await?;
    if let Some(done) = store.get_json::<MergeManifest>(layout::MERGE_MANIFEST).await? {
        if done.layers == layers {
            delete_shards(store, layers, &attempt).await?;
            return Ok(done);
        }
    }
    let mut m = MergeManifest { layers, files: BTreeMap::new(), ..MergeManifest::default() };
    // Each (dataset, layer) is independent: copy them concurrently, one
    // per core, so one file's reads and writes overlap another's.
    let datasets = datasets(store).await?;
    // Owned names, and each dataset's row looked up after: a stream of
    // futures over references cannot be moved to another task (a limit of
    // the compiler's lifetime checks).
    let jobs: Vec<(String, u32)> = datasets.keys().flat_map(|d| (0..layers).map(move |l| (d.clone(), l))).collect();
    let cores = cores();
    let attempt = &attempt;
    let mut done: Vec<(String, u32, Merged)> = futures::stream::iter(jobs)
        .map(|(d, layer)| async move { merge_one(store, &d, layer, attempt).await.map(|r| (d, layer, r)) })
        .buffer_unordered(cores)
        .try_collect()
        .await?;
    done.sort_by(|(d, l, _), (e, k, _)| (d, l).cmp(&(e, k)));
    for (name, _, merged) in done {
        let Some((path, rows)) = merged else { continue };
        let dataset = datasets.get(&name).expect("each job is of a dataset to merge");
        m.count(dataset, &name, rows);
        m.files.entry(name).or_default().push(path);
    }
    // A manifest of an earlier, shallower merge is replaced (a deepened
    // crawl merges again); otherwise it is written only if absent. Either
    // only under the claim: a stale merge must not replace a deeper run's.
    attempt.pass_fence(store).await?;
    if store.exists(layout::MERGE_MANIFEST).await? {
        store.put_json(layout::MERGE_MANIFEST, &m).await?;
    } else {
        store.put_json_new(layout::MERGE_MANIFEST, &m).await?;
    }
    delete_shards(store, layers, attempt).await?;
    Ok(m)
}

/// The merged file of one dataset and layer, with its row count; `None`
/// when the layer has no rows at all.
type Merged = Option<(String, u64)>;

/// Merges one layer of one dataset, as `attempt`.
async fn merge_one(store: &Store, dataset: &str, layer: u32, attempt: &Attempt) -> Result<Merged, StoreError> {
    let shards = shards_of(store, dataset, layer).await?;
    let merged = layout::merged(dataset, layer);
    if shards.is_empty() {
        // Nothing to do, or a re-run after the shards of a finished merge were deleted.
        if !store.exists(&merged).await? {
            return Ok(None);
        }
        return Ok(Some((merged.clone(), count_rows(store, &merged).await?)));
    }
    attempt.pass_fence(store).await?;
    let fence = attempt.fence.as_ref().map(|(_, f)| Arc::clone(f));
    Ok(Some((merged.clone(), concat_fenced(store, &shards, &merged, fence).await?)))
}

async fn shards_of(store: &Store, dataset: &str, layer: u32) -> Result<Vec<String>, StoreError> {
    Ok(store
        .list(&layout::layer_dir(dataset, layer))
        .await?
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| layout::is_shard(p))
        .collect())
}

/// The datasets to merge, by name (a rule's items are
/// `items/rule=NAME`): those of [`dataset::ALL`] that are merged always,
/// and those of the others that the crawl wrote, found by listing.
async fn datasets(store: &Store) -> Result<BTreeMap<String, &'static Dataset>, StoreError> {
    let mut out = BTreeMap::new();
    for d in dataset::ALL {
        match d.merge {
            Merge::No => {}
            Merge::Always => {
                out.insert(d.name.to_string(), d);
            }
            Merge::IfWritten => {
                if !store.parquet_files(d.name).await?.is_empty() {
                    out.insert(d.name.to_string(), d);
                }
            }
            Merge::PerRule => {
                for path in store.parquet_files(d.name).await? {
                    let mut parts = path.split('/');
                    if let (Some(folder), Some(rule)) = (parts.next(), parts.next()) {
                        if folder == d.name && rule.starts_with("rule=") {
                            out.insert(format!("{folder}/{rule}"), d);
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Deletes the merged layers' shards, as `attempt`: after it passed the
/// claim, and each while its fence holds.
async fn delete_shards(store: &Store, layers: u32, attempt: &Attempt) -> Result<(), StoreError> {
    attempt.pass_fence(store).await?;
    for dataset in datasets(store).await?.into_keys() {
        let dataset = dataset.as_str();
        for layer in 0..layers {
            for shard in shards_of(store, dataset, layer).await? {
                attempt.fence_holds()?;
                store.delete(&shard).await?;
            }
        }
    }
    Ok(())
}

async fn count_rows(store: &Store, path: &str) -> Result<u64, StoreError> {
    Ok(read_batches(store, path, Some(&[])).await?.iter().map(|b| b.num_rows() as u64).sum())
}

#[cfg(test)]
mod tests;
