//! Last night's crawl (`--previous DATA`): what makes tonight's requests
//! conditional, and the pages a 304 carries forward (README, "Nightly
//! recrawls").
//!
//! A map task indexes the previous crawl's `doc` rows of its own partition
//! ([`Previous::index`]): per final URL, the `ETag` and `Last-Modified` the
//! server sent, and where the row is. Each request to such a URL carries
//! them back (`If-None-Match`, `If-Modified-Since`). A server that answers
//! 304 Not Modified sends no body; the task reads last night's body from
//! its row ([`Previous::pages`], the pages holding those rows only) and
//! processes it like a fresh response, so the row, its links and its items
//! are what they were, made by tonight's code, with `unchanged = true`.
//!
//! Only rows whose body was stored can be carried (the run's body policy:
//! HTML pages by default); their URLs get validators, the others a plain
//! GET. The previous crawl must be finished (merged), so its files do not
//! change under tonight's run.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Int32Type, Int64Type};
use bytes::Bytes;
use futures::StreamExt;
use parquet::file::statistics::Statistics;

use crate::config::{BodyPolicy, RunSettings};
use crate::fetch::Validators;
use crate::partition::partition_of_host;
use crate::store::manifest::RunState;
use crate::store::{layout, stream_row_groups, RowsFile, Store, StoreError};

/// Why `--previous` cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PreviousError {
    #[error("--previous {data}: {reason}")]
    Unusable { data: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A finished crawl that tonight's run recrawls conditionally.
#[derive(Clone, Debug)]
pub struct Previous {
    store: Store,
    /// Its `doc` files, all layers.
    files: Vec<String>,
    /// Its partition count: its `doc` rows carry the partition of their
    /// host, so when tonight's count is the same a task skips the other
    /// partitions' row groups by their statistics, unread.
    partitions: u32,
    store_body: BodyPolicy,
    /// Each file's footer and offset index, read on first use.
    opened: Arc<Vec<tokio::sync::OnceCell<RowsFile>>>,
}

/// Last night's row of one final URL.
#[derive(Clone, Debug)]
pub struct Entry {
    pub validators: Validators,
    /// Body bytes it took last night, and its fetch time: what a 304 saves.
    pub content_length: i64,
    pub fetch_ms: i64,
    file: u32,
    row: u64,
}

/// Last night's rows of one partition, by final URL.
#[derive(Debug, Default)]
pub struct PartitionIndex {
    by_url: HashMap<String, Entry>,
}

impl PartitionIndex {
    /// The row of `url`, when a conditional request can be sent for it.
    #[must_use]
    pub fn get(&self, url: &str) -> Option<&Entry> {
        self.by_url.get(url)
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.by_url.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_url.is_empty()
    }
}

/// A page as last night's row has it, ready to be processed again.
#[derive(Clone, Debug)]
pub struct PreviousPage {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
}

/// Columns the index reads: no body.
const INDEX_COLUMNS: [&str; 9] = [
    "final_url",
    "status",
    "error",
    "truncated",
    "content_type",
    "etag",
    "last_modified",
    "content_length",
    "fetch_ms",
];
/// Columns a carried page is rebuilt from.
const PAGE_COLUMNS: [&str; 3] = ["status", "content_type", "body"];

impl Previous {
    /// Opens the crawl at `location` for tonight's crawl at `data`.
    ///
    /// # Errors
    /// When it is tonight's own data location, no finished crawl is there,
    /// it stored no bodies, or it cannot be read.
    pub async fn open(location: &str, data: &str) -> Result<Self, PreviousError> {
        let unusable = |reason: String| PreviousError::Unusable { data: location.to_string(), reason };
        if same_location(location, data) {
            return Err(unusable(
                "is tonight's own data location; point it at last night's (e.g. --data crawl-$(date +%F) --previous crawl-$(date -d yesterday +%F))".to_string(),
            ));
        }
        // A local folder must exist: opening a store creates its folder,
        // and a mistyped --previous must not leave one behind.
        if !location.contains("://") && !std::path::Path::new(location).is_dir() {
            return Err(unusable("holds no crawl (no such folder)".to_string()));
        }
        let store = Store::open(location)?;
        let state: Option<RunState> = store.get_json(layout::RUN).await?;
        let Some(state) = state else {
            return Err(unusable("holds no crawl (no state/run.json)".to_string()));
        };
        if !store.exists(layout::MERGE_MANIFEST).await? {
            return Err(unusable(
                "is a crawl that has not finished (its layers are not merged): finish it with `layercrawl run` on it, or point --previous at a finished crawl".to_string(),
            ));
        }
        let store_body = RunSettings::load(&store).await?.map_or(BodyPolicy::Html, |s| s.pages.store_body);
        if store_body == BodyPolicy::None {
            return Err(unusable(
                "stored no bodies (--store-body none), so an unchanged page could not be carried forward; crawl with --store-body html (the default) to recrawl conditionally".to_string(),
            ));
        }
        let files = store.parquet_files("doc").await?;
        let opened = Arc::new(files.iter().map(|_| tokio::sync::OnceCell::new()).collect());
        Ok(Self { store, files, partitions: state.partitions, store_body, opened })
    }

    /// Where it is.
    #[must_use]
    pub fn location(&self) -> &str {
        self.store.location()
    }

    /// Last night's rows of the hosts of `part` (of `partitions`) that can
    /// be carried: 2xx, complete, with a stored body and a validator.
    ///
    /// # Errors
    /// When a file cannot be read.
    pub async fn index(&self, part: u32, partitions: u32) -> Result<PartitionIndex, StoreError> {
        let mut index = PartitionIndex::default();
        let same_partitions = partitions == self.partitions;
        for (file, path) in self.files.iter().enumerate() {
            let keep = |rg: &parquet::file::metadata::RowGroupMetaData,
                        schema: &parquet::schema::types::SchemaDescriptor| {
                same_partitions
                    .then(|| partition_range(rg, schema))
                    .flatten()
                    .is_none_or(|(lo, hi)| i64::from(lo) <= i64::from(part) && i64::from(part) <= i64::from(hi))
            };
            let mut stream = stream_row_groups(&self.store, path, &INDEX_COLUMNS, &keep).await?;
            while let Some(got) = stream.next().await {
                let (first, b) = got?;
                // A file written before the validators were kept has none
                // (a crawl finished by a newer layercrawl may have both kinds).
                let (Some(etag), Some(last_modified)) = (b.column_by_name("etag"), b.column_by_name("last_modified"))
                else {
                    break;
                };
                let col = |name: &str| {
                    b.column_by_name(name).ok_or_else(|| StoreError::Schema {
                        path: path.clone(),
                        reason: format!("no `{name}` column: not a layercrawl doc file"),
                    })
                };
                let url = col("final_url")?.as_string::<i32>();
                let status = col("status")?.as_primitive::<Int32Type>();
                let error = col("error")?;
                let truncated = col("truncated")?.as_boolean();
                let ctype = col("content_type")?.as_string::<i32>();
                let (etag, last_modified) = (etag.as_string::<i32>(), last_modified.as_string::<i32>());
                let length = col("content_length")?.as_primitive::<Int64Type>();
                let fetch_ms = col("fetch_ms")?.as_primitive::<Int64Type>();
                for i in 0..b.num_rows() {
                    let validators = Validators {
                        etag: etag.is_valid(i).then(|| etag.value(i).to_string()),
                        last_modified: last_modified.is_valid(i).then(|| last_modified.value(i).to_string()),
                    };
                    let ct = ctype.is_valid(i).then(|| ctype.value(i));
                    let carried = (200..300).contains(&status.value(i))
                        && error.is_null(i)
                        && !truncated.value(i)
                        && !validators.is_empty()
                        && (self.store_body == BodyPolicy::All || crate::parse::is_html(ct, b""));
                    if !carried {
                        continue;
                    }
                    let u = url.value(i);
                    let host = url::Url::parse(u).ok().and_then(|u| u.host_str().map(str::to_string));
                    if host.is_none_or(|h| partition_of_host(&h, partitions) != part) {
                        continue;
                    }
                    index.by_url.entry(u.to_string()).or_insert(Entry {
                        validators,
                        content_length: length.value(i),
                        fetch_ms: fetch_ms.value(i),
                        file: u32::try_from(file).unwrap_or(u32::MAX),
                        row: first + i as u64,
                    });
                }
            }
        }
        Ok(index)
    }

    /// Last night's pages of `entries`, in their order, read from the pages
    /// of the files that hold them; `None` for a row without a body (the
    /// index takes HTML rows by their type, but a body that turned out
    /// binary was not stored).
    ///
    /// # Errors
    /// When a file cannot be read.
    pub async fn pages(&self, entries: &[&Entry]) -> Result<Vec<Option<PreviousPage>>, StoreError> {
        let mut by_file: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (i, e) in entries.iter().enumerate() {
            by_file.entry(e.file).or_default().push((e.row, i));
        }
        let mut out: Vec<Option<PreviousPage>> = vec![None; entries.len()];
        for (file, mut wanted) in by_file {
            wanted.sort_unstable();
            wanted.dedup_by_key(|w| w.0);
            let path = self.files.get(file as usize).ok_or_else(|| StoreError::Schema {
                path: self.store.location().to_string(),
                reason: format!("no doc file number {file}"),
            })?;
            let rows: Vec<u64> = wanted.iter().map(|w| w.0).collect();
            let file_rows = self.opened[file as usize].get_or_try_init(|| RowsFile::open(&self.store, path)).await?;
            let b = file_rows.read(&self.store, &PAGE_COLUMNS, &rows).await?;
            let bad = |reason: String| StoreError::Schema { path: path.clone(), reason };
            let (Some(status), Some(ctype), Some(body)) =
                (b.column_by_name("status"), b.column_by_name("content_type"), b.column_by_name("body"))
            else {
                return Err(bad("no status, content_type or body column".to_string()));
            };
            let (status, ctype, body) =
                (status.as_primitive::<Int32Type>(), ctype.as_string::<i32>(), body.as_binary::<i32>());
            for (k, &(_, i)) in wanted.iter().enumerate() {
                if body.is_null(k) {
                    continue;
                }
                out[i] = Some(PreviousPage {
                    status: u16::try_from(status.value(k)).unwrap_or(200),
                    content_type: ctype.is_valid(k).then(|| ctype.value(k).to_string()),
                    body: Bytes::copy_from_slice(body.value(k)),
                });
            }
            // Entries naming the same row (two URLs, one final page) share it.
            for (i, e) in entries.iter().enumerate() {
                if out[i].is_none() && e.file == file {
                    let k = wanted.binary_search_by_key(&e.row, |w| w.0).ok();
                    out[i] = k.and_then(|k| out[wanted[k].1].clone());
                }
            }
        }
        Ok(out)
    }
}

/// The smallest and largest `partition` of a row group, from its statistics.
fn partition_range(
    rg: &parquet::file::metadata::RowGroupMetaData,
    schema: &parquet::schema::types::SchemaDescriptor,
) -> Option<(i32, i32)> {
    let idx = (0..schema.num_columns()).find(|&i| schema.column(i).path().string() == "partition")?;
    match rg.column(idx).statistics()? {
        Statistics::Int32(s) => Some((*s.min_opt()?, *s.max_opt()?)),
        _ => None,
    }
}

/// Whether two data locations name the same place (as typed, or the same
/// local folder).
fn same_location(a: &str, b: &str) -> bool {
    let trim = |s: &str| s.strip_prefix("file://").unwrap_or(s).trim_end_matches('/').to_string();
    if trim(a) == trim(b) {
        return true;
    }
    match (std::fs::canonicalize(trim(a)), std::fs::canonicalize(trim(b))) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_place_written_two_ways_is_the_same_location() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path().display().to_string();
        assert!(same_location(&d, &format!("{d}/")));
        assert!(same_location(&format!("file://{d}"), &d));
        assert!(same_location(&d, &format!("{d}/../{}", dir.path().file_name().expect("name").to_string_lossy())));
        assert!(!same_location(&d, &format!("{d}-other")));
        assert!(!same_location("s3://a/night1", "s3://a/night2"));
    }
}
