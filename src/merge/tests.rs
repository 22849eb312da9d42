//! The merge under the lease's fence (docs/src/cluster.md, "One run per
//! data location"): a merge of a driver stalled past its lease, resumed
//! after a successor took over, writes and deletes nothing.

use std::time::Duration;

use super::*;
use crate::store::conformance::rows;
use crate::store::dataset::{DOC, LINKS};
use crate::store::fencing;
use crate::store::schema::{input_batch, input_schema};
use crate::store::{concat_shards, ShardWriter};

/// Rows of each shard: `n` for partition `part` of `layer` (each shard
/// tells its layer and partition apart by its URLs).
fn shard_rows(layer: u32, part: u32) -> usize {
    10 + 3 * layer as usize + part as usize
}

/// Writes two shards of layer `layer` in `doc` and in `links` (any one
/// schema serves: the merge copies row groups).
async fn write_layer(store: &Store, layer: u32) {
    for dataset in [DOC.name, LINKS.name] {
        for part in 0..2 {
            let path = layout::shard(dataset, layer, part);
            let mut w = ShardWriter::create(store, &path, input_schema(), 8 << 10).expect("writer");
            let batch = input_batch(&rows(&format!("l{layer}p{part}"), shard_rows(layer, part))).expect("batch");
            w.write(&batch).await.expect("write");
            w.finish().await.expect("finish");
        }
    }
}

/// The shards left in `doc` and `links`, all layers.
async fn shards(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for dataset in [DOC.name, LINKS.name] {
        out.extend(
            store.list(dataset).await.expect("list").into_iter().map(|(p, _)| p).filter(|p| layout::is_shard(p)),
        );
    }
    out
}

/// The merged files in `doc` and `links`, all layers.
async fn merged_files(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for dataset in [DOC.name, LINKS.name] {
        out.extend(
            store.list(dataset).await.expect("list").into_iter().map(|(p, _)| p).filter(|p| !layout::is_shard(p)),
        );
    }
    out
}

fn fenced(e: &StageError, generation: u64) -> bool {
    matches!(e, StageError::Store(StoreError::Fenced { ours, .. }) if *ours == generation)
}

fn backends(dir: &tempfile::TempDir) -> [Store; 2] {
    [Store::open("memory://").expect("memory"), Store::open(&dir.path().display().to_string()).expect("folder")]
}

/// Driver 1 crawled two layers and merges them; driver 2 took the lease
/// over (generation 2) and deepened the crawl to three layers, merged. The
/// merge of driver 1, its fence still holding by its own clock, comes late:
/// the claim refuses it, and driver 2's manifest and files are left as
/// they were (before the claim, it replaced the manifest of three layers
/// with its own of two).
#[tokio::test]
async fn a_stale_merge_does_not_replace_a_deeper_run_s_manifest() {
    let dir = tempfile::tempdir().expect("tempdir");
    for store in backends(&dir) {
        write_layer(&store, 0).await;
        write_layer(&store, 1).await;
        fencing::raise(&store, layout::MERGE_FENCE, 1).await.expect("driver 1 holds the lease");
        let first = Fence::of_generation(Duration::from_secs(40), 1);
        fencing::raise(&store, layout::MERGE_FENCE, 2).await.expect("driver 2 took it over");
        write_layer(&store, 2).await;
        let second = Fence::of_generation(Duration::from_secs(40), 2);
        let deeper = merge_layers(&store, 3, Some(second)).await.expect("driver 2 merges three layers");
        assert_eq!(
            (deeper.layers, deeper.doc_rows),
            (3, (0..3).map(|l| shard_rows(l, 0) + shard_rows(l, 1)).sum::<usize>() as u64)
        );
        let files = merged_files(&store).await;
        assert_eq!(files.len(), 6, "one merged file per dataset and layer: {files:?}");

        let e = merge_layers(&store, 2, Some(first)).await.expect_err("driver 1's late merge is refused");
        assert!(fenced(&e, 1), "{e}");
        let manifest: MergeManifest = store.get_json(layout::MERGE_MANIFEST).await.expect("read").expect("a manifest");
        assert_eq!(manifest, deeper, "driver 2's manifest of three layers is left as it was");
        assert_eq!(merged_files(&store).await, files, "and its merged files");
    }
}

/// Driver 1's merge wrote its manifest and was cut before deleting the
/// shards; driver 2 took the lease over and deepens the crawl, so it will
/// merge those shards. Driver 1's merge, run again late, must not delete
/// them (it did: a manifest of its depth is all it read before deleting).
#[tokio::test]
async fn a_stale_merge_deletes_no_shard_a_successor_is_to_merge() {
    let dir = tempfile::tempdir().expect("tempdir");
    for store in backends(&dir) {
        write_layer(&store, 0).await;
        write_layer(&store, 1).await;
        fencing::raise(&store, layout::MERGE_FENCE, 1).await.expect("driver 1 holds the lease");
        let first = Fence::of_generation(Duration::from_secs(40), 1);
        // What a merge cut after its manifest leaves: the merged files, the
        // manifest, and every shard.
        for dataset in [DOC.name, LINKS.name] {
            for layer in 0..2 {
                let inputs = [layout::shard(dataset, layer, 0), layout::shard(dataset, layer, 1)];
                concat_shards(&store, &inputs, &layout::merged(dataset, layer)).await.expect("concat");
            }
        }
        let cut = MergeManifest { layers: 2, ..MergeManifest::default() };
        store.put_json(layout::MERGE_MANIFEST, &cut).await.expect("manifest");
        fencing::raise(&store, layout::MERGE_FENCE, 2).await.expect("driver 2 took it over");
        write_layer(&store, 2).await;
        let before = shards(&store).await;
        assert_eq!(before.len(), 12);

        let e = merge_layers(&store, 2, Some(first)).await.expect_err("driver 1's late merge is refused");
        assert!(fenced(&e, 1), "{e}");
        assert_eq!(shards(&store).await, before, "no shard was deleted");

        let second = Fence::of_generation(Duration::from_secs(40), 2);
        let m = merge_layers(&store, 3, Some(second)).await.expect("driver 2 merges");
        assert_eq!(m.layers, 3);
        assert!(shards(&store).await.is_empty(), "driver 2's merge deleted the shards once merged");
    }
}

/// A merge whose fence ran out (its driver stopped, its lease not renewed)
/// writes nothing, even where no successor raised the claim yet: no merged
/// file, no manifest, no shard deleted. A fence that runs out while a file
/// is being written keeps that file from appearing.
#[tokio::test]
async fn a_merge_whose_fence_ran_out_writes_and_deletes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    for store in backends(&dir) {
        write_layer(&store, 0).await;
        fencing::raise(&store, layout::MERGE_FENCE, 1).await.expect("raise");
        let fence = Fence::of_generation(Duration::from_secs(40), 1);
        fence.revoke();
        let before = shards(&store).await;
        let e = merge_layers(&store, 1, Some(Arc::clone(&fence))).await.expect_err("refused");
        assert!(fenced(&e, 1), "{e}");
        assert!(merged_files(&store).await.is_empty(), "no merged file");
        assert!(!store.exists(layout::MERGE_MANIFEST).await.expect("exists"), "no manifest");
        assert_eq!(shards(&store).await, before, "no shard deleted");

        let inputs = [layout::shard(DOC.name, 0, 0), layout::shard(DOC.name, 0, 1)];
        let out = layout::merged(DOC.name, 0);
        let e = concat_fenced(&store, &inputs, &out, Some(fence)).await.expect_err("not published");
        assert!(matches!(e, StoreError::Fenced { ours: 1, .. }), "{e}");
        assert!(
            store.list("doc").await.expect("list").iter().all(|(p, _)| layout::is_shard(p)),
            "nothing else in doc/"
        );
    }
}
