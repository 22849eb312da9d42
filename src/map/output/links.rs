//! The `links` output: every link of every processed page (and the seeds'
//! sitemaps' URLs), into `links/layer=L/part-PPPPP.parquet`; the
//! manifest's `links` counts them.

use futures::future::BoxFuture;

use super::shard::LazyShard;
use super::{batch_rows, Opening, Output};
use crate::error::StageError;
use crate::map::{Processed, BATCH_ROWS};
use crate::store::dataset::LINKS;
use crate::store::layout;
use crate::store::manifest::MapManifest;
use crate::store::schema::{self, LinkRow};

/// The `links` shard of a map attempt and the rows waiting for it.
pub(super) struct Links<'a> {
    shard: LazyShard<'a>,
    buf: Vec<LinkRow>,
}

impl<'a> Links<'a> {
    pub(super) fn open(at: &Opening<'a>) -> Self {
        Self {
            shard: LazyShard::new(at.staged, layout::shard(LINKS.name, at.layer, at.part), schema::links_schema()),
            buf: Vec::with_capacity(BATCH_ROWS * 8),
        }
    }

    async fn write(&mut self, manifest: &mut MapManifest) -> Result<(), StageError> {
        if !self.buf.is_empty() {
            manifest.links += self.buf.len() as u64;
            self.shard.write(&schema::links_batch(&self.buf)?).await?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl Output for Links<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        manifest: &'s mut MapManifest,
        tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            self.buf.append(&mut page.links);
            if self.buf.len() >= batch_rows(BATCH_ROWS * 8, tight) {
                self.write(manifest).await?;
            }
            Ok(())
        })
    }

    fn add_links(&mut self, links: &mut Vec<LinkRow>) {
        self.buf.append(links);
    }

    fn finish<'s>(&'s mut self, manifest: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            self.write(manifest).await?;
            Ok(self.shard.finish().await?)
        })
    }
}
