//! Reading a crawl for an export: the Parquet files of each dataset, by
//! layer, through the crawl's [`Store`] (a folder or an object store),
//! their footers read once for the row counts the progress bar shows, and
//! then each file streamed with only the columns the tables take.
//!
//! A crawl's datasets are Hive folders (`doc/layer=L/`): one
//! `part-PPPPP.parquet` per partition while it runs, one `data-00000.parquet`
//! per layer after its merge (docs/src/output.md); every published file is
//! committed, so a running crawl can be exported too.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use futures::{Stream, StreamExt, TryStreamExt};

use super::tables::{wanted_columns, Dataset};
use super::ExportError;
use crate::store::Store;

/// A file's batches, as they are read.
type Batches = Pin<Box<dyn Stream<Item = Result<RecordBatch, ExportError>> + Send>>;

/// One Parquet file of a dataset, its footer read and its stream set up
/// (nothing is read until it is polled).
pub struct Source {
    pub dataset: Dataset,
    pub layer: i32,
    pub path: String,
    pub rows: u64,
    batches: Option<Batches>,
}

/// Every file of every dataset the crawl at `store` has, in load order
/// (`doc`, `links`, `entities`, `relations`; by layer, then path).
///
/// # Errors
/// When a listing or a footer cannot be read, or the crawl has no `doc`
/// files at all.
pub async fn sources(store: &Store) -> Result<Vec<Source>, ExportError> {
    let mut out = Vec::new();
    for dataset in Dataset::ALL {
        let mut files: Vec<(i32, String)> = store
            .parquet_files(dataset.folder())
            .await?
            .into_iter()
            .filter_map(|p| layer_of(dataset, &p).map(|l| (l, p)))
            .collect();
        files.sort();
        let opened = futures::stream::iter(files.into_iter().map(|(layer, path)| open(store, dataset, layer, path)))
            .buffered(8)
            .try_collect::<Vec<_>>()
            .await?;
        out.extend(opened);
    }
    if !out.iter().any(|s| s.dataset == Dataset::Doc) {
        return Err(ExportError::NoCrawl { location: store.location().to_string() });
    }
    Ok(out)
}

/// Reads the footer of one file and sets up its stream: only the columns
/// its table takes (those the file has), every row group (whose row counts
/// the footer gives).
async fn open(store: &Store, dataset: Dataset, layer: i32, path: String) -> Result<Source, ExportError> {
    let rows = AtomicU64::new(0);
    let count = |rg: &parquet::file::metadata::RowGroupMetaData, _: &parquet::schema::types::SchemaDescriptor| {
        rows.fetch_add(u64::try_from(rg.num_rows()).unwrap_or(0), Ordering::Relaxed);
        true
    };
    let wanted = wanted_columns(dataset);
    let stream = crate::store::stream_row_groups(store, &path, &wanted, &count).await?;
    let batches: Batches = Box::pin(stream.map_ok(|(_, batch)| batch).map_err(ExportError::from));
    Ok(Source { dataset, layer, path, rows: rows.into_inner(), batches: Some(batches) })
}

/// The layer of `path` when it is a file of `dataset`'s layer folders
/// (`doc/layer=L/NAME.parquet`); other files are not the dataset's.
fn layer_of(dataset: Dataset, path: &str) -> Option<i32> {
    let rest = path.strip_prefix(dataset.folder())?.strip_prefix("/layer=")?;
    let (layer, file) = rest.split_once('/')?;
    (!file.contains('/') && !file.starts_with('.')).then_some(())?;
    layer.parse().ok()
}

impl Source {
    /// The file's batches (once: the stream is handed over).
    #[must_use]
    pub fn batches(&mut self) -> Batches {
        self.batches.take().unwrap_or_else(|| Box::pin(futures::stream::empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_come_from_the_hive_folders() {
        assert_eq!(layer_of(Dataset::Doc, "doc/layer=3/data-00000.parquet"), Some(3));
        assert_eq!(layer_of(Dataset::Links, "links/layer=0/part-00007.parquet"), Some(0));
        assert_eq!(layer_of(Dataset::Doc, "doc/data-00000.parquet"), None);
        assert_eq!(layer_of(Dataset::Doc, "doc/layer=x/data-00000.parquet"), None);
        assert_eq!(layer_of(Dataset::Entities, "entities/layer=1/sub/x.parquet"), None);
    }
}
