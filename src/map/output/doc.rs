//! The `doc` output: each processed URL's row, into
//! `doc/layer=L/part-PPPPP.parquet`, its schema the core columns and then
//! the run's extractor columns.

use std::sync::Arc;

use arrow_schema::SchemaRef;
use futures::future::BoxFuture;

use super::shard::LazyShard;
use super::{batch_rows, Opening, Output};
use crate::error::StageError;
use crate::map::{Processed, BATCH_BYTES, BATCH_ROWS};
use crate::store::dataset::DOC;
use crate::store::layout;
use crate::store::manifest::MapManifest;
use crate::store::schema::{self, DocRow};

/// The `doc` shard of a map attempt and the rows waiting for it.
pub(super) struct Doc<'a> {
    schema: SchemaRef,
    shard: LazyShard<'a>,
    buf: Vec<DocRow>,
    /// Bytes of body and text in `buf`.
    buf_bytes: usize,
}

impl<'a> Doc<'a> {
    pub(super) fn open(at: &Opening<'a>) -> Self {
        let schema = at.ctx.extract.doc_schema();
        Self {
            shard: LazyShard::new(at.staged, layout::shard(DOC.name, at.layer, at.part), Arc::clone(&schema)),
            schema,
            buf: Vec::with_capacity(BATCH_ROWS),
            buf_bytes: 0,
        }
    }

    async fn write(&mut self) -> Result<(), StageError> {
        if !self.buf.is_empty() {
            self.shard.write(&schema::doc_batch_with(&self.schema, &self.buf)?).await?;
            self.buf.clear();
            self.buf_bytes = 0;
        }
        Ok(())
    }
}

impl Output for Doc<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        _: &'s mut MapManifest,
        tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            let doc = std::mem::take(&mut page.doc);
            self.buf_bytes += doc.body.as_ref().map_or(0, |b| b.len()) + doc.text.as_ref().map_or(0, String::len);
            self.buf.push(doc);
            if self.buf.len() >= batch_rows(BATCH_ROWS, tight) || self.buf_bytes >= batch_rows(BATCH_BYTES, tight) {
                self.write().await?;
            }
            Ok(())
        })
    }

    fn buffered_bytes(&self) -> usize {
        self.buf_bytes
    }

    fn flush(&mut self) -> BoxFuture<'_, Result<(), StageError>> {
        Box::pin(self.write())
    }

    fn finish<'s>(&'s mut self, _: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            self.write().await?;
            Ok(self.shard.finish().await?)
        })
    }
}
