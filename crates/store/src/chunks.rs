//! Parquet files read and written by the column chunk, without decoding:
//! where a row group's bytes lie, a fetched byte range that parquet's
//! readers and writers can address by the file's own offsets, and a column
//! chunk copied byte for byte into a new row group. [`super::concat`]
//! copies whole row groups this way on object storage, and
//! [`super::rewrite`] replaces a few columns of a shard and copies the rest.

use bytes::Bytes;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData};
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::writer::SerializedRowGroupWriter;
use tokio::io::AsyncWriteExt;

use super::{SharedBuf, StoreError};
use crate::fence::Fence;

/// The byte range of a row group's column chunks, which a writer puts one
/// after another.
pub fn chunk_range(group: &RowGroupMetaData) -> (u64, u64) {
    group.columns().iter().fold((u64::MAX, 0u64), |(lo, hi), c| {
        let (s, len) = c.byte_range();
        (lo.min(s), hi.max(s + len))
    })
}

/// Refuses inputs whose schemas differ from the first one's (or no inputs).
pub fn check_schemas(inputs: &[String], metas: &[&ParquetMetaData], output: &str) -> Result<(), StoreError> {
    let Some(first) = metas.first() else {
        return Err(StoreError::Schema { path: output.to_string(), reason: "nothing to concatenate".into() });
    };
    let schema = first.file_metadata().schema_descr().root_schema_ptr();
    for (input, meta) in inputs.iter().zip(metas) {
        if meta.file_metadata().schema_descr().root_schema_ptr() != schema {
            return Err(StoreError::Schema {
                path: input.clone(),
                reason: format!("its schema differs from {}'s", inputs[0]),
            });
        }
    }
    Ok(())
}

/// Reads a file's footer and page indexes from a suffix of the file,
/// widening the suffix until the parser has what it needs.
pub async fn read_metadata(backend: &dyn ObjectStore, path: &str) -> Result<ParquetMetaData, StoreError> {
    let p = Path::from(path);
    let size = backend.head(&p).await.map_err(|e| StoreError::object(&p, e))?.size;
    let mut reader = ParquetMetaDataReader::new().with_page_index_policy(PageIndexPolicy::Optional);
    let mut want = size.min(64 * 1024);
    loop {
        let suffix = backend.get_range(&p, size - want..size).await.map_err(|e| StoreError::object(&p, e))?;
        match reader.try_parse_sized(&suffix, size) {
            Ok(()) => break,
            Err(ParquetError::NeedMoreData(needed)) if (needed as u64) > want && (needed as u64) <= size => {
                want = needed as u64;
            }
            Err(source) => return Err(StoreError::Parquet { path: path.to_string(), source }),
        }
    }
    reader.finish().map_err(|source| StoreError::Parquet { path: path.to_string(), source })
}

/// Fetches the bytes of row group `rg` of the file at `path`.
pub async fn fetch_row_group(
    backend: &dyn ObjectStore,
    path: &str,
    meta: &ParquetMetaData,
    rg: usize,
) -> Result<RangeChunk, StoreError> {
    let (start, end) = chunk_range(meta.row_group(rg));
    let p = Path::from(path);
    let bytes = backend.get_range(&p, start..end).await.map_err(|e| StoreError::object(&p, e))?;
    Ok(RangeChunk { base: start, bytes })
}

/// Appends column `col` of row group `rg` of `meta` (its bytes in `chunk`)
/// to `out` as it is, with its statistics and page indexes.
pub fn copy_column<W: std::io::Write + Send>(
    out: &mut SerializedRowGroupWriter<'_, W>,
    chunk: &RangeChunk,
    meta: &ParquetMetaData,
    rg: usize,
    col: usize,
) -> Result<(), ParquetError> {
    let group = meta.row_group(rg);
    let column = group.column(col);
    let close = ColumnCloseResult {
        bytes_written: column.compressed_size().try_into().unwrap_or(0),
        rows_written: group.num_rows().try_into().unwrap_or(0),
        metadata: column.clone(),
        bloom_filter: None,
        column_index: meta.page_index().and_then(|pi| pi.column_index(rg, col)).cloned(),
        offset_index: meta.page_index().and_then(|pi| pi.offset_index(rg, col)).cloned(),
    };
    out.append_column(chunk, close)
}

/// The error of an output not published because `fence` ran out.
pub fn ran_out(output: &str, fence: &Fence) -> StoreError {
    StoreError::Fenced {
        path: output.to_string(),
        ours: fence.generation(),
        why: "its lease was not renewed in time, or was taken over, while the file was written".into(),
    }
}

/// Moves what a file writer encoded so far into the upload.
pub async fn drain(encoded: &SharedBuf, sink: &mut BufWriter, output: &str) -> Result<(), StoreError> {
    let bytes = encoded.take();
    if !bytes.is_empty() {
        sink.write_all(&bytes).await.map_err(|e| StoreError::Parquet {
            path: output.to_string(),
            source: ParquetError::External(Box::new(e)),
        })?;
    }
    Ok(())
}

/// A byte range of a file, addressed by the file's absolute offsets.
pub struct RangeChunk {
    pub base: u64,
    pub bytes: Bytes,
}

impl Length for RangeChunk {
    fn len(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
}

impl ChunkReader for RangeChunk {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> Result<Self::T, ParquetError> {
        let at = self.offset(start, 0)?;
        Ok(bytes::Buf::reader(self.bytes.slice(at..)))
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes, ParquetError> {
        let at = self.offset(start, length)?;
        Ok(self.bytes.slice(at..at + length))
    }
}

impl RangeChunk {
    fn offset(&self, start: u64, length: usize) -> Result<usize, ParquetError> {
        start
            .checked_sub(self.base)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o + length <= self.bytes.len())
            .ok_or_else(|| {
                ParquetError::General(format!("read of {length} bytes at {start} outside the fetched range"))
            })
    }
}
