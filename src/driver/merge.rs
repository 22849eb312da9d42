//! S600: after the last layer, compact each layer's shards for analytics.
//!
//! Per dataset (`doc`, `links`) and layer, the `part-*.parquet` shards are
//! rewritten into one `data-00000.parquet` with ~128 MiB row groups, in the
//! same `layer=L` folder, so one glob still reads the whole crawl exactly
//! once. The merge manifest is written before the shards are deleted; a
//! re-run after a kill finishes whichever step was cut.

use std::collections::BTreeMap;

use crate::store::manifest::MergeManifest;
use crate::store::{layout, read_batches, schema, ShardWriter, Store, StoreError};

use super::RunError;

const MERGED_ROW_GROUP_BYTES: usize = 128 << 20;

/// Merges layers `0..layers` of `doc` and `links`.
///
/// # Errors
/// On storage failures.
pub async fn merge_layers(store: &Store, layers: u32) -> Result<MergeManifest, RunError> {
    if let Some(done) = store.get_json::<MergeManifest>(layout::MERGE_MANIFEST).await? {
        if done.layers == layers {
            delete_shards(store, layers).await?;
            return Ok(done);
        }
    }
    let mut m = MergeManifest { layers, files: BTreeMap::new(), ..MergeManifest::default() };
    for dataset in ["doc", "links"] {
        let schema = if dataset == "doc" { schema::doc_schema() } else { schema::links_schema() };
        for layer in 0..layers {
            let shards = shards_of(store, dataset, layer).await?;
            let merged = format!("{dataset}/layer={layer}/data-00000.parquet");
            let rows = if shards.is_empty() {
                if !store.exists(&merged).await? {
                    continue;
                }
                count_rows(store, &merged).await?
            } else {
                let mut w = ShardWriter::create(store, &merged, schema.clone(), MERGED_ROW_GROUP_BYTES)?;
                for shard in &shards {
                    for b in read_batches(store, shard, None).await? {
                        w.write(&b).await?;
                    }
                }
                w.finish().await?
            };
            if dataset == "doc" {
                m.doc_rows += rows;
            } else {
                m.link_rows += rows;
            }
            m.files.entry(dataset.to_string()).or_default().push(merged);
        }
    }
    store.put_json(layout::MERGE_MANIFEST, &m).await?;
    delete_shards(store, layers).await?;
    Ok(m)
}

async fn shards_of(store: &Store, dataset: &str, layer: u32) -> Result<Vec<String>, StoreError> {
    Ok(store
        .list(&format!("{dataset}/layer={layer}"))
        .await?
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.rsplit('/').next().is_some_and(|f| f.starts_with("part-") && f.ends_with(".parquet")))
        .collect())
}

async fn delete_shards(store: &Store, layers: u32) -> Result<(), StoreError> {
    for dataset in ["doc", "links"] {
        for layer in 0..layers {
            for shard in shards_of(store, dataset, layer).await? {
                store.delete(&shard).await?;
            }
        }
    }
    Ok(())
}

async fn count_rows(store: &Store, path: &str) -> Result<u64, StoreError> {
    Ok(read_batches(store, path, Some(&[])).await?.iter().map(|b| b.num_rows() as u64).sum())
}
