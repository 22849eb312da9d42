//! Last night's crawl (`--previous DATA`): what makes tonight's requests
//! conditional, and the pages a 304 carries forward (docs/src/recrawl.md).
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

use arrow_array::Array;
use bytes::Bytes;
use futures::StreamExt;
use parquet::file::statistics::Statistics;

use crate::config::{BodyPolicy, RunSettings};
use crate::fetch::Validators;
use crate::partition::partition_of_host;
use crate::store::manifest::RunState;
use crate::store::schema::{binary_col, bool_col, int32_col, int64_col, string_col};
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

impl From<PreviousError> for crate::error::StageError {
    fn from(e: PreviousError) -> Self {
        Self::stage(e)
    }
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
        let files = store.parquet_files(crate::store::dataset::DOC.name).await?;
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
                if b.column_by_name("etag").is_none() || b.column_by_name("last_modified").is_none() {
                    break;
                }
                // Checked, not cast: --previous may name files another tool
                // wrote (LargeUtf8, Utf8View, Int64 columns...).
                let shown = self.store.display_path(path);
                let url = string_col(&b, "final_url", &shown)?;
                let status = int32_col(&b, "status", &shown)?;
                let error = b.column_by_name("error").ok_or_else(|| StoreError::Schema {
                    path: shown.clone(),
                    reason: "no column `error`: not a layercrawl doc file".to_string(),
                })?;
                let truncated = bool_col(&b, "truncated", &shown)?;
                let ctype = string_col(&b, "content_type", &shown)?;
                let (etag, last_modified) = (string_col(&b, "etag", &shown)?, string_col(&b, "last_modified", &shown)?);
                let length = int64_col(&b, "content_length", &shown)?;
                let fetch_ms = int64_col(&b, "fetch_ms", &shown)?;
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
            let shown = self.store.display_path(path);
            let (status, ctype, body) = (
                int32_col(&b, "status", &shown)?,
                string_col(&b, "content_type", &shown)?,
                binary_col(&b, "body", &shown)?,
            );
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

    /// A `doc` file of last night's columns, one row, with `swap`'s columns
    /// in place of the usual ones (as another tool might write them).
    fn foreign_doc(swap: Vec<(&str, arrow_array::ArrayRef)>) -> Bytes {
        use arrow_array::{ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array, StringArray};
        let s = |v: &str| Arc::new(StringArray::from(vec![v])) as ArrayRef;
        let mut cols: Vec<(&str, ArrayRef)> = vec![
            ("final_url", s("http://a.test/")),
            ("status", Arc::new(Int32Array::from(vec![200]))),
            ("error", Arc::new(StringArray::from(vec![None::<&str>]))),
            ("truncated", Arc::new(BooleanArray::from(vec![false]))),
            ("content_type", s("text/html")),
            ("etag", s("\"v1\"")),
            ("last_modified", s("Mon, 01 Jan 2024 00:00:00 GMT")),
            ("content_length", Arc::new(Int64Array::from(vec![5]))),
            ("fetch_ms", Arc::new(Int64Array::from(vec![3]))),
            ("body", Arc::new(BinaryArray::from(vec![b"<p>x".as_slice()]))),
        ];
        for (name, col) in swap {
            let slot = cols.iter_mut().find(|c| c.0 == name).expect("a known column");
            slot.1 = col;
        }
        let batch = arrow_array::RecordBatch::try_from_iter(cols).expect("batch");
        let mut buf = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        Bytes::from(buf)
    }

    async fn previous_with(file: Bytes) -> Previous {
        let store = Store::open("memory://").expect("store");
        store.put("doc/layer=0/part-00000.parquet", file).await.expect("put");
        let files = vec!["doc/layer=0/part-00000.parquet".to_string()];
        let opened = Arc::new(vec![tokio::sync::OnceCell::new()]);
        Previous { store, files, partitions: 1, store_body: BodyPolicy::Html, opened }
    }

    #[tokio::test]
    async fn a_foreign_column_type_is_an_error_naming_the_file_and_column() {
        use arrow_array::{ArrayRef, Int32Array, Int64Array, LargeStringArray, StringViewArray};
        let file = "memory://doc/layer=0/part-00000.parquet";
        // The index: a LargeUtf8 URL, an Int64 status, a Utf8View validator.
        let cases: Vec<(&str, ArrayRef)> = vec![
            ("final_url", Arc::new(LargeStringArray::from(vec!["http://a.test/"]))),
            ("status", Arc::new(Int64Array::from(vec![200]))),
            ("etag", Arc::new(StringViewArray::from(vec!["\"v1\""]))),
            ("content_length", Arc::new(Int32Array::from(vec![5]))),
        ];
        for (column, array) in cases {
            let prev = previous_with(foreign_doc(vec![(column, array)])).await;
            let err = prev.index(0, 1).await.expect_err(column).to_string();
            assert!(err.contains(file) && err.contains(&format!("`{column}`")), "{column}: {err}");
        }
        // A carried page: its status, type and body, read by row.
        let ok = previous_with(foreign_doc(Vec::new())).await;
        let index = ok.index(0, 1).await.expect("a layercrawl file reads");
        let entry = index.get("http://a.test/").expect("indexed").clone();
        assert_eq!(ok.pages(&[&entry]).await.expect("pages")[0].as_ref().map(|p| p.status), Some(200));
        let view = Arc::new(StringViewArray::from(vec!["text/html"])) as ArrayRef;
        let prev = previous_with(foreign_doc(vec![("content_type", view)])).await;
        let err = prev.pages(&[&entry]).await.expect_err("utf8view").to_string();
        assert!(err.contains(file) && err.contains("`content_type`") && err.contains("Utf8View"), "{err}");
    }
}
