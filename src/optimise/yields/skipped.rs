//! The `skipped` dataset: each URL the noise filter did not fetch, with
//! its class and the evidence it was judged by, and the per-class view of
//! it that the summary and the report print.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Int32Array, Int64Array, RecordBatch, StringArray};

use crate::denoise::yields::ClassCount;
use crate::optimise::{missing, str_col};
use crate::store::dataset::SKIPPED;
use crate::store::schema::skipped::skipped_schema;
use crate::store::schema::InRow;
use crate::store::{read_if_exists, ShardWriter, Store, StoreError};

/// Why a URL was skipped: its class's pages were mostly copies, or mostly
/// errors.
#[must_use]
pub fn skip_reason(c: &ClassCount) -> &'static str {
    let copies = c.fetched.saturating_sub(c.new + c.errors);
    if c.errors > copies {
        "errors"
    } else {
        "copies"
    }
}

/// Writes partition `k`'s skipped URLs of `layer` (the layer they would
/// have been fetched in).
pub(crate) async fn write_skipped(store: &Store, path: &str, rows: &[(&InRow, &ClassCount)]) -> Result<(), StoreError> {
    let path = path.to_string();
    if rows.is_empty() {
        return store.delete(&path).await;
    }
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let mut w = ShardWriter::create(store, &path, skipped_schema(), 8 << 20)?;
    for chunk in rows.chunks(8192) {
        let cols: Vec<arrow_array::ArrayRef> = vec![
            Arc::new(chunk.iter().map(|(c, _)| Some(c.url.as_str())).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|(c, _)| Some(c.depth)).collect::<Int32Array>()),
            Arc::new(chunk.iter().map(|(c, _)| c.referrer.as_deref()).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|(_, e)| Some(skip_reason(e))).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|(_, e)| Some(e.source.as_str())).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|(_, e)| Some(e.target.as_str())).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|(_, e)| Some(n(e.fetched))).collect::<Int64Array>()),
            Arc::new(chunk.iter().map(|(_, e)| Some(n(e.new))).collect::<Int64Array>()),
            Arc::new(chunk.iter().map(|(_, e)| Some(n(e.errors))).collect::<Int64Array>()),
        ];
        let b = RecordBatch::try_new(skipped_schema(), cols)
            .map_err(|e| StoreError::Schema { path: path.clone(), reason: e.to_string() })?;
        w.write(&b).await?;
    }
    w.finish().await?;
    Ok(())
}

/// One link class the noise filter skipped URLs of, over a crawl: what its
/// fetched pages brought, and how many of its URLs were not followed.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SkippedClass {
    pub source_template: String,
    pub target_template: String,
    pub reason: String,
    pub skipped: u64,
    /// The class's judged fetches and new texts when it was last decided.
    pub fetched: u64,
    pub new: u64,
}

/// The classes of the crawl's `skipped` dataset, most skipped first (at
/// most `most`), read from its published files.
///
/// # Errors
/// When a file of the dataset cannot be read.
pub async fn skipped_classes(store: &Store, most: usize) -> Result<Vec<SkippedClass>, StoreError> {
    let mut by: BTreeMap<(String, String), SkippedClass> = BTreeMap::new();
    for path in store.parquet_files(SKIPPED.name).await? {
        for b in read_if_exists(store, &path).await? {
            let (s, t, r) = (
                str_col(&b, "source_template", &path)?,
                str_col(&b, "target_template", &path)?,
                str_col(&b, "reason", &path)?,
            );
            let col = |name: &str| {
                b.column_by_name(name)
                    .and_then(|c| c.as_primitive_opt::<Int64Type>())
                    .ok_or_else(|| missing(&path, name))
            };
            let (f, n) = (col("class_fetched")?, col("class_new")?);
            for i in 0..b.num_rows() {
                let e = by.entry((s.value(i).to_string(), t.value(i).to_string())).or_insert_with(|| SkippedClass {
                    source_template: s.value(i).to_string(),
                    target_template: t.value(i).to_string(),
                    ..SkippedClass::default()
                });
                e.skipped += 1;
                let fetched = u64::try_from(f.value(i)).unwrap_or(0);
                if fetched >= e.fetched {
                    (e.fetched, e.new) = (fetched, u64::try_from(n.value(i)).unwrap_or(0));
                    e.reason = r.value(i).to_string();
                }
            }
        }
    }
    let mut v: Vec<SkippedClass> = by.into_values().collect();
    v.sort_by(|a, b| b.skipped.cmp(&a.skipped).then_with(|| a.target_template.cmp(&b.target_template)));
    v.truncate(most);
    Ok(v)
}
