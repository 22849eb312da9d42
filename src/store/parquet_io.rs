//! Streaming Parquet shards in and out of a [`Store`].

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{AsyncArrowWriter, ProjectionMask};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::{Store, StoreError};

/// Writes one Parquet file as a stream of batches, zstd-compressed, with row
/// groups cut at `row_group_bytes`. The object becomes visible only when
/// [`ShardWriter::finish`] returns (multipart upload, or a staged local file
/// renamed into place), so a killed process never leaves half a file.
pub struct ShardWriter {
    path: String,
    writer: AsyncArrowWriter<BufWriter>,
    rows: u64,
}

impl ShardWriter {
    /// Starts a shard at `path` with `schema`.
    ///
    /// # Errors
    /// When the writer cannot be set up.
    pub fn create(store: &Store, path: &str, schema: SchemaRef, row_group_bytes: usize) -> Result<Self, StoreError> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("3 is a valid zstd level")))
            .set_max_row_group_bytes(Some(row_group_bytes.max(1)))
            .set_max_row_group_row_count(Some(1 << 20))
            .build();
        let sink = BufWriter::with_capacity(store.backend(), Path::from(path), 8 << 20);
        let writer = AsyncArrowWriter::try_new(sink, schema, Some(props))
            .map_err(|source| StoreError::Parquet { path: path.to_string(), source })?;
        Ok(Self { path: path.to_string(), writer, rows: 0 })
    }

    /// Appends a batch.
    ///
    /// # Errors
    /// When encoding or writing fails (e.g. a full disk).
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        self.rows += batch.num_rows() as u64;
        self.writer
            .write(batch)
            .await
            .map_err(|source| StoreError::Parquet { path: self.path.clone(), source })
    }

    /// Rows written so far.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Completes the file and makes it visible; returns the row count.
    ///
    /// # Errors
    /// When the footer or the final upload fails.
    pub async fn finish(self) -> Result<u64, StoreError> {
        let Self { path, writer, rows } = self;
        writer.close().await.map_err(|source| StoreError::Parquet { path, source })?;
        Ok(rows)
    }
}

/// Reads every batch of the Parquet file at `path`, optionally only the
/// named columns. Shards are bounded in size, so the object is fetched
/// whole and decoded on a blocking thread.
///
/// # Errors
/// When the file is missing, unreadable, or not Parquet.
pub async fn read_batches(store: &Store, path: &str, columns: Option<&[&str]>) -> Result<Vec<RecordBatch>, StoreError> {
    let bytes = store.get(path).await?.ok_or_else(|| StoreError::Schema {
        path: path.to_string(),
        reason: "file not found".to_string(),
    })?;
    let cols: Option<Vec<String>> = columns.map(|c| c.iter().map(|s| (*s).to_string()).collect());
    let owned_path = path.to_string();
    let decode = move || -> Result<Vec<RecordBatch>, parquet::errors::ParquetError> {
        let mut builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
        if let Some(cols) = &cols {
            let mask = ProjectionMask::columns(builder.parquet_schema(), cols.iter().map(String::as_str));
            builder = builder.with_projection(mask);
        }
        builder.with_batch_size(8192).build()?.map(|b| b.map_err(Into::into)).collect()
    };
    tokio::task::spawn_blocking(decode)
        .await
        .map_err(|e| StoreError::Schema { path: owned_path.clone(), reason: format!("decoder thread failed: {e}") })?
        .map_err(|source| StoreError::Parquet { path: owned_path, source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::schema::{input_batch, input_rows, input_schema, InRow};

    #[tokio::test]
    async fn shard_round_trip_on_local_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().to_str().expect("utf8")).expect("open");
        let rows: Vec<InRow> = (0..1000)
            .map(|i| InRow { url: format!("http://s{i}.test/"), depth: i % 4, referrer: None })
            .collect();
        let mut w = ShardWriter::create(&store, "in/layer=0/part-00000.parquet", input_schema(), 1 << 20).expect("w");
        w.write(&input_batch(&rows[..500]).expect("b")).await.expect("write");
        assert!(!dir.path().join("in/layer=0/part-00000.parquet").exists(), "not visible before finish");
        w.write(&input_batch(&rows[500..]).expect("b")).await.expect("write");
        assert_eq!(w.finish().await.expect("finish"), 1000);
        let batches = read_batches(&store, "in/layer=0/part-00000.parquet", None).await.expect("read");
        let back: Vec<InRow> = batches.iter().flat_map(|b| input_rows(b, "t").expect("rows")).collect();
        assert_eq!(back, rows);
        let only_url = read_batches(&store, "in/layer=0/part-00000.parquet", Some(&["url"])).await.expect("read");
        assert_eq!(only_url[0].num_columns(), 1);
    }
}
