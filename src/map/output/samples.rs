//! The noise filter's samples (what each page teaches it: its status and
//! its text's fingerprint and size), into
//! `samples/layer=L/part-PPPPP.parquet` for the optimise step; none with
//! `--denoise off`.

use futures::future::BoxFuture;

use super::shard::LazyShard;
use super::{batch_rows, Opening, Output};
use crate::denoise::evidence::{self, Sample};
use crate::error::StageError;
use crate::map::Processed;
use crate::store::manifest::MapManifest;
use crate::store::{layout, StoreError};

/// Samples buffered before they are written (~100 bytes each)...
const SAMPLE_BATCH: usize = 4096;
/// ...or bytes of them (their URLs).
const SAMPLE_BATCH_BYTES: usize = 1 << 20;

/// The samples shard of a map attempt and the samples waiting for it.
pub(super) struct Samples<'a> {
    shard: LazyShard<'a>,
    buf: Vec<Sample>,
    buf_bytes: usize,
}

impl<'a> Samples<'a> {
    pub(super) fn open(at: &Opening<'a>) -> Self {
        Self {
            shard: LazyShard::new(at.staged, layout::samples(at.layer, at.part), evidence::samples_schema()),
            buf: Vec::with_capacity(SAMPLE_BATCH),
            buf_bytes: 0,
        }
    }

    async fn write(&mut self) -> Result<(), StageError> {
        if !self.buf.is_empty() {
            let batch = evidence::samples_batch(&self.buf)
                .map_err(|e| StoreError::Schema { path: self.shard.path.clone(), reason: e.to_string() })?;
            self.shard.write(&batch).await?;
            self.buf.clear();
            self.buf_bytes = 0;
        }
        Ok(())
    }
}

impl Output for Samples<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        _: &'s mut MapManifest,
        tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            if let Some(s) = page.sample.take() {
                self.buf_bytes += s.url.len() + std::mem::size_of::<Sample>();
                self.buf.push(s);
            }
            if self.buf.len() >= SAMPLE_BATCH || self.buf_bytes >= batch_rows(SAMPLE_BATCH_BYTES, tight) {
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
