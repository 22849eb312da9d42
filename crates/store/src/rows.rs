//! Reading parts of a Parquet file in a [`Store`]: the row groups whose
//! statistics a caller accepts, each batch with the file-wide index of its
//! first row, and single rows read back by that index (what a conditional
//! recrawl needs of last night's `doc` files).

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path;
use parquet::arrow::arrow_reader::ArrowReaderOptions;
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};

use super::parquet_io::StoreReader;
use super::{Store, StoreError};

/// Streams the row groups of the Parquet file at `path` that `keep`
/// accepts (it sees each row group's metadata: statistics prune whole row
/// groups unread), only the named columns. Each batch comes with the
/// file-wide index of its first row, so a row found here can be read again
/// with [`RowsFile::read`].
///
/// # Errors
/// When the file is missing or not Parquet (at once), or when a row group
/// cannot be read or decoded (as a stream item).
pub async fn stream_row_groups(
    store: &Store,
    path: &str,
    columns: &[&str],
    keep: &(dyn Fn(&parquet::file::metadata::RowGroupMetaData, &parquet::schema::types::SchemaDescriptor) -> bool
          + Sync),
) -> Result<impl futures::Stream<Item = Result<(u64, RecordBatch), StoreError>> + Send + Unpin + use<>, StoreError> {
    let perr = |source| StoreError::Parquet { path: path.to_string(), source };
    let reader = StoreReader { store: store.backend(), path: Path::from(path) };
    let builder = ParquetRecordBatchStreamBuilder::new(reader).await.map_err(perr)?;
    let mask = ProjectionMask::columns(builder.parquet_schema(), columns.iter().copied());
    // Each kept row group is read as its own batches, with its first row.
    let meta = Arc::clone(builder.metadata());
    let mut first = 0u64;
    let mut groups = Vec::new();
    for (i, rg) in meta.row_groups().iter().enumerate() {
        if keep(rg, meta.file_metadata().schema_descr()) {
            groups.push((i, first));
        }
        first += u64::try_from(rg.num_rows()).unwrap_or(0);
    }
    let stream = builder
        .with_projection(mask)
        .with_row_groups(groups.iter().map(|g| g.0).collect())
        .with_batch_size(8192)
        .build()
        .map_err(perr)?;
    let owned = path.to_string();
    // The reader yields each row group's rows in order, never a batch that
    // spans two groups: the first row of a batch is counted from its group's.
    let groups: Vec<(u64, u64)> =
        groups.iter().map(|&(i, first)| (first, u64::try_from(meta.row_group(i).num_rows()).unwrap_or(0))).collect();
    let (mut group, mut done) = (0usize, 0u64);
    Ok(stream.map(move |b| {
        let b = b.map_err(|source| StoreError::Parquet { path: owned.clone(), source })?;
        while groups.get(group).is_some_and(|&(_, n)| done >= n) {
            (group, done) = (group + 1, 0);
        }
        let first = groups.get(group).map_or(0, |&(f, _)| f) + done;
        done += b.num_rows() as u64;
        Ok((first, b))
    }))
}

/// A Parquet file opened for reading single rows ([`RowsFile::read`]): its
/// footer and offset index, read once, so each read fetches and decodes
/// only the pages holding the wanted rows.
#[derive(Clone, Debug)]
pub struct RowsFile {
    path: String,
    meta: parquet::arrow::arrow_reader::ArrowReaderMetadata,
}

impl RowsFile {
    /// Reads the footer and offset index of the file at `path`.
    ///
    /// # Errors
    /// When the file is missing or not Parquet.
    pub async fn open(store: &Store, path: &str) -> Result<Self, StoreError> {
        use parquet::arrow::arrow_reader::ArrowReaderMetadata;
        use parquet::file::metadata::PageIndexPolicy;
        let mut reader = StoreReader { store: store.backend(), path: Path::from(path) };
        let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        let meta = ArrowReaderMetadata::load_async(&mut reader, options)
            .await
            .map_err(|source| StoreError::Parquet { path: path.to_string(), source })?;
        Ok(Self { path: path.to_string(), meta })
    }

    /// Reads the rows at the file-wide indexes `rows` (sorted, distinct),
    /// only the named columns, in that order.
    ///
    /// # Errors
    /// When a wanted row is past the file's end, or the pages cannot be
    /// read or decoded.
    pub async fn read(&self, store: &Store, columns: &[&str], rows: &[u64]) -> Result<RecordBatch, StoreError> {
        use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
        let path = &self.path;
        let perr = |source| StoreError::Parquet { path: path.clone(), source };
        let total = u64::try_from(self.meta.metadata().file_metadata().num_rows()).unwrap_or(0);
        if rows.windows(2).any(|w| w[0] >= w[1]) || rows.last().is_some_and(|&r| r >= total) {
            return Err(StoreError::Schema {
                path: path.clone(),
                reason: format!("rows asked for are not sorted or past the file's {total} rows"),
            });
        }
        let mut selectors = Vec::new();
        let mut at = 0u64;
        for &r in rows {
            if r > at {
                selectors.push(RowSelector::skip(usize::try_from(r - at).unwrap_or(usize::MAX)));
            }
            selectors.push(RowSelector::select(1));
            at = r + 1;
        }
        let reader = StoreReader { store: store.backend(), path: Path::from(path.as_str()) };
        let builder = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, self.meta.clone());
        let mask = ProjectionMask::columns(builder.parquet_schema(), columns.iter().copied());
        let schema =
            Arc::new(builder.schema().project(&projected_indexes(builder.schema(), columns)).map_err(|e| {
                StoreError::Schema { path: path.clone(), reason: format!("cannot project {columns:?}: {e}") }
            })?);
        let stream = builder
            .with_projection(mask)
            .with_row_selection(RowSelection::from(selectors))
            .with_batch_size(8192)
            .build()
            .map_err(perr)?;
        let batches: Vec<RecordBatch> = stream.try_collect().await.map_err(perr)?;
        let out = arrow_select::concat::concat_batches(&batches.first().map_or(schema, RecordBatch::schema), &batches)
            .map_err(|e| StoreError::Schema { path: path.clone(), reason: format!("cannot join batches: {e}") })?;
        if out.num_rows() != rows.len() {
            return Err(StoreError::Schema {
                path: path.clone(),
                reason: format!("asked for {} rows, read {}", rows.len(), out.num_rows()),
            });
        }
        Ok(out)
    }
}

/// Indexes of the top-level `columns` in `schema`, in the schema's order
/// (what a projection mask of those columns yields).
fn projected_indexes(schema: &SchemaRef, columns: &[&str]) -> Vec<usize> {
    (0..schema.fields().len()).filter(|&i| columns.contains(&schema.field(i).name().as_str())).collect()
}
