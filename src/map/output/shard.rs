//! A shard writer made on its first batch, which the outputs of a map task
//! share: an output with no rows makes no file.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::map::SHARD_ROW_GROUP_BYTES;
use crate::store::{ShardWriter, Store, StoreError};

/// A shard writer created on the first batch, so empty outputs make no file.
pub(super) struct LazyShard<'a> {
    store: &'a Store,
    pub(super) path: String,
    pub(super) schema: SchemaRef,
    writer: Option<ShardWriter>,
}

impl<'a> LazyShard<'a> {
    /// The shard at `path` (written through `store`, the attempt's).
    pub(super) fn new(store: &'a Store, path: String, schema: SchemaRef) -> Self {
        Self { store, path, schema, writer: None }
    }

    /// Writes `batch`, creating the file first if this is the first.
    pub(super) async fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        if self.writer.is_none() {
            self.writer =
                Some(ShardWriter::create(self.store, &self.path, self.schema.clone(), SHARD_ROW_GROUP_BYTES)?);
        }
        self.writer.as_mut().expect("created above").write(batch).await
    }

    /// Closes the file, if one was made; a second call does nothing.
    pub(super) async fn finish(&mut self) -> Result<(), StoreError> {
        match self.writer.take() {
            Some(w) => w.finish().await.map(|_| ()),
            None => Ok(()),
        }
    }
}
