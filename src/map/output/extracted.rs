//! The row extractors' datasets (`entities`, `relations` with
//! `--entities`): one shard per dataset, `NAME/layer=L/part-PPPPP.parquet`,
//! its rows made on the rayon pool with the page's `doc` values; the
//! manifest's `extracted` counts each dataset's rows.

use futures::future::BoxFuture;

use super::shard::LazyShard;
use super::{batch_rows, Opening, Output};
use crate::error::StageError;
use crate::extract::{Dataset, Row};
use crate::map::{Processed, BATCH_ROWS};
use crate::store::layout;
use crate::store::manifest::MapManifest;

/// One shard per dataset of the run's row extractors, in their order.
pub(super) struct Extracted<'a> {
    shards: Vec<(LazyShard<'a>, Vec<Row>)>,
}

impl<'a> Extracted<'a> {
    /// The datasets of a run with row extractors; none without.
    pub(super) fn open(at: &Opening<'a>) -> Option<Self> {
        let datasets = at.ctx.extract.datasets();
        if datasets.is_empty() {
            return None;
        }
        let shards = datasets
            .iter()
            .map(|d| (LazyShard::new(at.staged, layout::shard(&d.name, at.layer, at.part), d.schema()), Vec::new()))
            .collect();
        Some(Self { shards })
    }
}

/// Writes `buf` to `shard`, counting its rows under the dataset's name.
async fn write(shard: &mut LazyShard<'_>, buf: &mut Vec<Row>, manifest: &mut MapManifest) -> Result<(), StageError> {
    *manifest.extracted.entry(dataset_name(&shard.path)).or_default() += buf.len() as u64;
    shard.write(&Dataset::batch(&shard.schema, buf)?).await?;
    buf.clear();
    Ok(())
}

impl Output for Extracted<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        manifest: &'s mut MapManifest,
        tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            for ((shard, buf), rows) in self.shards.iter_mut().zip(std::mem::take(&mut page.rows.sets)) {
                buf.extend(rows);
                if buf.len() >= batch_rows(BATCH_ROWS * 8, tight) {
                    write(shard, buf, manifest).await?;
                }
            }
            Ok(())
        })
    }

    fn finish<'s>(&'s mut self, manifest: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            for (shard, buf) in &mut self.shards {
                if !buf.is_empty() {
                    write(shard, buf, manifest).await?;
                }
                shard.finish().await?;
            }
            Ok(())
        })
    }
}

/// The dataset a shard path belongs to (`entities/layer=0/part-00000.parquet`: `entities`).
fn dataset_name(path: &str) -> String {
    path.split('/').next().unwrap_or(path).to_string()
}
