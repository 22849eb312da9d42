//! A shard writer made on its first batch.

use crate::store::{ShardWriter, Store, StoreError};

use super::SHARD_ROW_GROUP_BYTES;

/// A shard writer created on the first batch, so empty outputs make no file.
pub(super) struct Sink<'a> {
    store: &'a Store,
    pub(super) path: String,
    pub(super) schema: arrow::datatypes::SchemaRef,
    writer: Option<ShardWriter>,
}

impl<'a> Sink<'a> {
    pub(super) fn new(store: &'a Store, path: String, schema: arrow::datatypes::SchemaRef) -> Self {
        Self { store, path, schema, writer: None }
    }

    pub(super) async fn write(&mut self, batch: &arrow::array::RecordBatch) -> Result<(), StoreError> {
        if self.writer.is_none() {
            self.writer =
                Some(ShardWriter::create(self.store, &self.path, self.schema.clone(), SHARD_ROW_GROUP_BYTES)?);
        }
        self.writer.as_mut().expect("created above").write(batch).await
    }

    pub(super) async fn finish(self) -> Result<(), StoreError> {
        match self.writer {
            Some(w) => w.finish().await.map(|_| ()),
            None => Ok(()),
        }
    }
}
