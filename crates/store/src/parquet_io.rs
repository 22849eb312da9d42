//! Streaming Parquet shards in and out of a [`Store`].

use std::io::Write;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, TryFutureExt, TryStreamExt};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::async_reader::{AsyncFileReader, MetadataSuffixFetch};
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::{WriterProperties, WriterVersion};
use tokio::io::AsyncWriteExt;

use super::column::{without_tuning, Tuning};
use super::scratch::SpillFactory;
use super::{Store, StoreError};

/// Bytes a shard buffers before its upload starts, and the size of each
/// part after: S3's smallest part. Every open shard holds up to this much.
const UPLOAD_CHUNK: usize = 5 << 20;

/// Largest data page, before compression. Every column being written holds
/// its open page, so with many shards open at once (two per partition) the
/// page size is part of the crawl's memory: 512 KiB instead of parquet's
/// 1 MiB took the cpu crawl's peak RSS 252 -> 241 MiB, for doc files 1 %
/// larger (256 KiB: 235 MiB, 3 % larger).
const DATA_PAGE_BYTES: usize = 512 << 10;

/// Rows encoded between two checks of the open page's size, for shards
/// whose rows are whole pages (a binary `body` column): at parquet's 1,024
/// a page of 24 KB pages could grow to a whole batch before it was cut.
/// Rows of a few URLs keep the default.
const PAGE_ROWS_PER_CHECK: usize = 32;

/// Pages are written as data pages v2 (Parquet format 2.x), each column's
/// values plainly encoded as before. A v1 page holds its definition levels
/// and its values in one compressed block, so the writer copied every page
/// into a new buffer beside its levels, compressed it into a buffer it then
/// grew to zstd's bound and shrank again: three large allocations and two
/// copies of each page of text, most of them fresh memory the kernel had to
/// fault in. A v2 page keeps its levels apart and uncompressed, and its
/// values are compressed straight after them. The cpu crawl's CPU per page
/// fell 12 % (docs/src/main-text.md, "What it costs a crawl"); the files are
/// the same size. Every reader the book names (docs/src/getting-started.md)
/// reads v2 pages; the encodings stay PLAIN (and dictionary) because the
/// format-2 writer would otherwise switch columns without a dictionary to
/// delta encodings, which older Spark versions (before 3.4) cannot read.
const WRITER_VERSION: WriterVersion = WriterVersion::PARQUET_2_0;

/// Writes one Parquet file as a stream of batches, compressed as the store
/// says, with row groups cut at `row_group_bytes`. The object becomes
/// visible only when [`ShardWriter::finish`] returns, so a killed process
/// never leaves half a file: in a local folder the bytes go to a hidden
/// staging file beside the target (`.NAME.staged`, skipped by every reader)
/// that is renamed into place; on object storage they go to a multipart
/// upload that is completed.
///
/// Encoding and compression are CPU work: they run on a blocking thread
/// with parquet's synchronous writer. A local shard is written to its file
/// on that thread too; an upload's bytes are handed to the async side,
/// which streams them to the store.
pub struct ShardWriter {
    path: String,
    /// `None` only while a blocking call owns it, and after `finish`.
    encoder: Option<ArrowWriter<Out>>,
    /// The file's schema (tuning keys stripped): batches are re-labelled
    /// with it, so the encoder only ever sees the schema it was made with.
    schema: SchemaRef,
    /// Object storage only: the encoder's output and the upload it feeds.
    upload: Option<(SharedBuf, BufWriter)>,
    rows: u64,
}

/// Where the encoder's bytes go.
enum Out {
    /// A local folder: a staging file, renamed to `target` when complete.
    Staged { file: std::fs::File, staged: PathBuf, target: PathBuf },
    /// Object storage: a buffer drained into the upload after every call.
    Upload(SharedBuf),
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Self::Staged { file, .. } => file.write(buf),
            Self::Upload(shared) => shared.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Self::Staged { file, .. } => file.flush(),
            Self::Upload(_) => Ok(()),
        }
    }
}

/// The encoder's output, drained to the store after every call.
#[derive(Clone, Default)]
pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    pub fn take(&self) -> Vec<u8> {
        self.0.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("encoder buffer poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The hidden staging file of a local shard: beside its target, so the
/// rename stays on one file system, and named so that no reader takes it
/// for data (a leading dot and no `.parquet` ending).
pub fn staging_path(target: &std::path::Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.staged"))
}

/// The writer settings of a shard of `schema`: the store's codec, row groups
/// cut at `row_group_bytes`, and each column's own [`Tuning`]. Public for
/// the benchmarks that weigh these settings against others on a crawl's rows.
#[must_use]
pub fn shard_properties(
    codec: parquet::basic::Compression,
    schema: &SchemaRef,
    row_group_bytes: usize,
) -> WriterProperties {
    let mut props = WriterProperties::builder()
        .set_compression(codec)
        .set_max_row_group_bytes(Some(row_group_bytes.max(1)))
        .set_max_row_group_row_count(Some(1 << 20))
        .set_data_page_size_limit(DATA_PAGE_BYTES)
        .set_writer_version(WRITER_VERSION)
        .set_encoding(parquet::basic::Encoding::PLAIN);
    if schema
        .fields()
        .iter()
        .any(|f| matches!(f.data_type(), arrow_schema::DataType::Binary | arrow_schema::DataType::LargeBinary))
    {
        props = props.set_write_batch_size(PAGE_ROWS_PER_CHECK);
    }
    // Each column's own tuning, from its field (see `column::Tuning`).
    for field in schema.fields() {
        let tuning = Tuning::of(field);
        if tuning.no_dictionary {
            props = props.set_column_dictionary_enabled(field.name().as_str().into(), false);
        }
        if tuning.no_statistics {
            props = props.set_column_statistics_enabled(
                field.name().as_str().into(),
                parquet::file::properties::EnabledStatistics::None,
            );
        }
        if tuning.uncompressed {
            props =
                props.set_column_compression(field.name().as_str().into(), parquet::basic::Compression::UNCOMPRESSED);
        }
        if tuning.large_dictionary {
            props = props.set_column_dictionary_page_size_limit(
                field.name().as_str().into(),
                super::column::LARGE_DICTIONARY_BYTES,
            );
        }
    }
    props.build()
}

impl ShardWriter {
    /// Starts a shard at `path` with `schema`.
    ///
    /// # Errors
    /// When the writer cannot be set up (e.g. the staging file cannot be
    /// created).
    pub fn create(store: &Store, path: &str, schema: SchemaRef, row_group_bytes: usize) -> Result<Self, StoreError> {
        let props = shard_properties(store.compression().codec(), &schema, row_group_bytes);
        let perr = |source| StoreError::Parquet { path: path.to_string(), source };
        let path = &store.write_path(path);
        let (out, upload) = match store.access() {
            super::Access::Folder(root) => {
                let target = root.join(path);
                let staged = staging_path(&target);
                let file = target
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| std::fs::File::create(&staged))
                    .map_err(|e| perr(ParquetError::External(Box::new(e))))?;
                (Out::Staged { file, staged, target }, None)
            }
            super::Access::Objects => {
                let encoded = SharedBuf::default();
                let sink = BufWriter::with_capacity(store.backend(), Path::from(path.as_str()), UPLOAD_CHUNK);
                (Out::Upload(encoded.clone()), Some((encoded, sink)))
            }
        };
        // The open row group's finished pages wait in a scratch file, not on the heap.
        let options =
            ArrowWriterOptions::new().with_properties(props).with_page_store_factory(Arc::new(SpillFactory::default()));
        // The footer records the schema without the tuning keys.
        let schema = without_tuning(&schema);
        let encoder = ArrowWriter::try_new_with_options(out, Arc::clone(&schema), options).map_err(perr)?;
        Ok(Self { path: path.to_string(), schema, encoder: Some(encoder), upload, rows: 0 })
    }

    /// Appends a batch.
    ///
    /// # Errors
    /// When encoding or writing fails (e.g. a full disk).
    pub async fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        self.rows += batch.num_rows() as u64;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), batch.columns().to_vec())
            .map_err(|e| StoreError::Schema { path: self.path.clone(), reason: e.to_string() })?;
        let mut encoder = self.encoder.take().ok_or_else(|| self.lost())?;
        let (encoder, result) = tokio::task::spawn_blocking(move || {
            let r = encoder.write(&batch);
            (encoder, r)
        })
        .await
        .map_err(|e| self.parquet_err(ParquetError::General(format!("encoder thread failed: {e}"))))?;
        self.encoder = Some(encoder);
        result.map_err(|e| self.parquet_err(e))?;
        self.drain().await
    }

    /// Rows written so far.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Completes the file and makes it visible; returns the row count.
    ///
    /// # Errors
    /// When the footer, the rename or the final upload fails.
    pub async fn finish(mut self) -> Result<u64, StoreError> {
        let mut encoder = self.encoder.take().ok_or_else(|| self.lost())?;
        let done = tokio::task::spawn_blocking(move || -> Result<(), ParquetError> {
            let finished = encoder.finish().map(|_| ());
            match encoder.inner_mut() {
                Out::Staged { staged, target, .. } => match finished {
                    Ok(()) => std::fs::rename(&*staged, &*target).map_err(|e| ParquetError::External(Box::new(e))),
                    Err(e) => {
                        let _ = std::fs::remove_file(&*staged);
                        Err(e)
                    }
                },
                Out::Upload(_) => finished,
            }
        });
        done.await
            .map_err(|e| self.parquet_err(ParquetError::General(format!("encoder thread failed: {e}"))))?
            .map_err(|e| self.parquet_err(e))?;
        self.drain().await?;
        if let Some((_, sink)) = &mut self.upload {
            let shut = sink.shutdown().await;
            shut.map_err(|e| self.io_err(e))?;
        }
        Ok(self.rows)
    }

    async fn drain(&mut self) -> Result<(), StoreError> {
        let Some((encoded, sink)) = &mut self.upload else {
            return Ok(());
        };
        let bytes = encoded.take();
        if bytes.is_empty() {
            return Ok(());
        }
        let written = sink.write_all(&bytes).await;
        written.map_err(|e| self.io_err(e))
    }

    fn parquet_err(&self, source: ParquetError) -> StoreError {
        StoreError::Parquet { path: self.path.clone(), source }
    }

    fn io_err(&self, e: std::io::Error) -> StoreError {
        self.parquet_err(ParquetError::External(Box::new(e)))
    }

    fn lost(&self) -> StoreError {
        self.parquet_err(ParquetError::General("the encoder was lost after an earlier failure".into()))
    }
}

impl Drop for ShardWriter {
    /// A shard given up (an error, or a task cancelled) takes its local
    /// staging file with it: nothing half-written stays on disk. (An
    /// unfinished upload is never completed, so it stays invisible.)
    fn drop(&mut self) {
        if let Some(Out::Staged { staged, .. }) = self.encoder.as_mut().map(ArrowWriter::inner_mut) {
            let _ = std::fs::remove_file(&*staged);
        }
    }
}

/// Reads every batch of the Parquet file at `path`, optionally only the
/// named columns. Shards are bounded in size, so the object is fetched
/// whole and decoded on a blocking thread.
///
/// # Errors
/// When the file is missing, unreadable, or not Parquet.
pub async fn read_batches(store: &Store, path: &str, columns: Option<&[&str]>) -> Result<Vec<RecordBatch>, StoreError> {
    let bytes = store
        .get(path)
        .await?
        .ok_or_else(|| StoreError::Schema { path: path.to_string(), reason: "file not found".to_string() })?;
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

/// Streams the batches of the Parquet file at `path`, optionally only the
/// named columns, one row group at a time: only the projected column chunks
/// of the current row group are fetched and held, so memory does not grow
/// with the file (links shards of a large layer run to millions of rows).
///
/// # Errors
/// When the file is missing or not Parquet (at once), or when a later row
/// group cannot be read or decoded (as a stream item).
pub async fn stream_batches(
    store: &Store,
    path: &str,
    columns: Option<&[&str]>,
) -> Result<impl futures::Stream<Item = Result<RecordBatch, StoreError>> + Send + Unpin + use<>, StoreError> {
    let perr = |source| StoreError::Parquet { path: path.to_string(), source };
    let reader = StoreReader { store: store.backend(), path: Path::from(path) };
    let mut builder = ParquetRecordBatchStreamBuilder::new(reader).await.map_err(perr)?;
    if let Some(cols) = columns {
        let mask = ProjectionMask::columns(builder.parquet_schema(), cols.iter().copied());
        builder = builder.with_projection(mask);
    }
    let stream = builder.with_batch_size(8192).build().map_err(perr)?;
    let owned = path.to_string();
    Ok(stream.map_err(move |source| StoreError::Parquet { path: owned.clone(), source }))
}

/// Every batch of the Parquet file at `path`, none when it does not exist
/// (crawl state that a step writes only when it has rows).
///
/// # Errors
/// When the file is there but cannot be read or decoded.
pub async fn read_if_exists(store: &Store, path: &str) -> Result<Vec<RecordBatch>, StoreError> {
    if !store.exists(path).await? {
        return Ok(Vec::new());
    }
    stream_batches(store, path, None).await?.try_collect().await
}

/// Ranged reads of one object, for the async Parquet reader.
pub(super) struct StoreReader {
    pub(super) store: Arc<dyn ObjectStore>,
    pub(super) path: Path,
}

fn external(e: object_store::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl AsyncFileReader for StoreReader {
    fn get_bytes(&mut self, range: Range<u64>) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        self.store.get_range(&self.path, range).map_err(external).boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<Range<u64>>) -> BoxFuture<'_, parquet::errors::Result<Vec<Bytes>>> {
        async move { self.store.get_ranges(&self.path, &ranges).await.map_err(external) }.boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, parquet::errors::Result<Arc<ParquetMetaData>>> {
        async move {
            let metadata = ParquetMetaDataReader::new()
                .with_arrow_reader_options(options)
                .load_via_suffix_and_finish(self)
                .await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

impl MetadataSuffixFetch for &mut StoreReader {
    fn fetch_suffix(&mut self, suffix: usize) -> BoxFuture<'_, parquet::errors::Result<Bytes>> {
        let options = GetOptions { range: Some(GetRange::Suffix(suffix as u64)), ..GetOptions::default() };
        async move {
            match self.store.get_opts(&self.path, options).await {
                Ok(got) => got.bytes().await.map_err(external),
                // Azure Blob Storage has no "last N bytes" request: the
                // object's size first, then an ordinary range.
                Err(object_store::Error::NotSupported { .. }) => {
                    let size = self.store.head(&self.path).await.map_err(external)?.size;
                    self.store.get_range(&self.path, size.saturating_sub(suffix as u64)..size).await.map_err(external)
                }
                Err(e) => Err(external(e)),
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests;
