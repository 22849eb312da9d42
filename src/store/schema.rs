//! The Parquet schemas of DESIGN.md §3 and their row types.
//!
//! The layer of a row is not a column of the files: it is the Hive
//! partition of their folder (`doc/layer=L/`), which DuckDB, Polars,
//! pyarrow, pandas and Spark turn into a `layer` column. Writing it into
//! the files too would give readers two `layer` fields, which pyarrow
//! cannot merge and Spark refuses.
//!
//! Rows are plain structs; a `Vec` of them becomes one Arrow batch. Signed
//! 32/64-bit integers are used for counts so that Spark, which has no
//! unsigned types, reads every column natively; only `content_hash` is
//! `UInt64` (Spark reads it as DECIMAL(20,0)).

use std::sync::{Arc, OnceLock};

use arrow::array::{
    Array, ArrayRef, BinaryBuilder, BooleanBuilder, Float32Builder, Int32Builder, Int64Builder, RecordBatch,
    StringArray, StringBuilder, TimestampMicrosecondBuilder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::StoreError;

fn utc_micros() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Schema of `in/layer=L/*.parquet`.
pub fn input_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("depth", DataType::Int32, false),
            Field::new("referrer", DataType::Utf8, true),
        ]))
    }))
}

/// One URL to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InRow {
    /// Normalised absolute URL.
    pub url: String,
    /// Hops from the seeds (0 for a seed).
    pub depth: i32,
    /// The page that linked here first, if any.
    pub referrer: Option<String>,
}

/// Encodes input rows as one batch.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn input_batch(rows: &[InRow]) -> Result<RecordBatch, StoreError> {
    let mut url = StringBuilder::new();
    let mut depth = Int32Builder::new();
    let mut referrer = StringBuilder::new();
    for r in rows {
        url.append_value(&r.url);
        depth.append_value(r.depth);
        referrer.append_option(r.referrer.as_deref());
    }
    let cols: Vec<ArrayRef> = vec![Arc::new(url.finish()), Arc::new(depth.finish()), Arc::new(referrer.finish())];
    batch(input_schema(), cols)
}

/// Decodes input rows from a batch of the input schema.
///
/// # Errors
/// When a column is missing or of another type.
pub fn input_rows(b: &RecordBatch, path: &str) -> Result<Vec<InRow>, StoreError> {
    let url = string_col(b, "url", path)?;
    let referrer = string_col(b, "referrer", path)?;
    let depth = depth_col(b, path)?;
    Ok((0..b.num_rows())
        .map(|i| InRow {
            url: url.value(i).to_string(),
            depth: depth.value(i),
            referrer: (!referrer.is_null(i)).then(|| referrer.value(i).to_string()),
        })
        .collect())
}

/// Schema of `doc/layer=L/*.parquet`.
pub fn doc_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("final_url", DataType::Utf8, false),
            Field::new("host", DataType::Utf8, false),
            Field::new("domain", DataType::Utf8, false),
            Field::new("depth", DataType::Int32, false),
            Field::new("partition", DataType::Int32, false),
            Field::new("status", DataType::Int32, false),
            Field::new("error", DataType::Utf8, true),
            Field::new("error_detail", DataType::Utf8, true),
            Field::new("fetched_at", utc_micros(), false),
            Field::new("fetch_ms", DataType::Int64, false),
            Field::new("redirects", DataType::Int32, false),
            Field::new("content_type", DataType::Utf8, true),
            Field::new("charset", DataType::Utf8, true),
            Field::new("content_length", DataType::Int64, false),
            Field::new("truncated", DataType::Boolean, false),
            Field::new("body", DataType::Binary, true),
            Field::new("title", DataType::Utf8, true),
            Field::new("text", DataType::Utf8, true),
            Field::new("content_hash", DataType::UInt64, true),
            Field::new("duplicate_of", DataType::Utf8, true),
            Field::new("outlinks", DataType::Int32, false),
            Field::new("noise_links", DataType::Int32, false),
            Field::new("referrer", DataType::Utf8, true),
        ]))
    }))
}

/// One fetched (or failed) URL.
#[derive(Clone, Debug, Default)]
pub struct DocRow {
    pub url: String,
    pub final_url: String,
    pub host: String,
    pub domain: String,
    pub depth: i32,
    pub partition: i32,
    /// HTTP status of the last response; 0 when there was none.
    pub status: i32,
    /// Error kind (`timeout`, `dns`, `connect`, ...); `None` on success.
    pub error: Option<&'static str>,
    /// Human-readable detail of the error.
    pub error_detail: Option<String>,
    /// Microseconds since the Unix epoch, UTC.
    pub fetched_at_us: i64,
    pub fetch_ms: i64,
    pub redirects: i32,
    pub content_type: Option<String>,
    pub charset: Option<String>,
    /// Bytes of body received (after decompression), before any truncation flag.
    pub content_length: i64,
    pub truncated: bool,
    pub body: Option<bytes::Bytes>,
    pub title: Option<String>,
    pub text: Option<String>,
    pub content_hash: Option<u64>,
    pub duplicate_of: Option<String>,
    pub outlinks: i32,
    pub noise_links: i32,
    pub referrer: Option<String>,
}

/// Encodes doc rows as one batch.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn doc_batch(rows: &[DocRow]) -> Result<RecordBatch, StoreError> {
    let n = rows.len();
    let mut url = StringBuilder::with_capacity(n, n * 48);
    let mut final_url = StringBuilder::with_capacity(n, n * 48);
    let mut host = StringBuilder::new();
    let mut domain = StringBuilder::new();
    let (mut depth, mut partition, mut status, mut redirects, mut outlinks, mut noise) = (
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
        Int32Builder::with_capacity(n),
    );
    let mut error = StringBuilder::new();
    let mut error_detail = StringBuilder::new();
    let mut fetched_at = TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC");
    let mut fetch_ms = Int64Builder::with_capacity(n);
    let mut content_type = StringBuilder::new();
    let mut charset = StringBuilder::new();
    let mut content_length = Int64Builder::with_capacity(n);
    let mut truncated = BooleanBuilder::with_capacity(n);
    let body_bytes: usize = rows.iter().map(|r| r.body.as_ref().map_or(0, bytes::Bytes::len)).sum();
    let mut body = BinaryBuilder::with_capacity(n, body_bytes);
    let text_bytes: usize = rows.iter().map(|r| r.text.as_ref().map_or(0, String::len)).sum();
    let mut title = StringBuilder::new();
    let mut text = StringBuilder::with_capacity(n, text_bytes);
    let mut content_hash = UInt64Builder::with_capacity(n);
    let mut duplicate_of = StringBuilder::new();
    let mut referrer = StringBuilder::new();
    for r in rows {
        url.append_value(&r.url);
        final_url.append_value(&r.final_url);
        host.append_value(&r.host);
        domain.append_value(&r.domain);
        depth.append_value(r.depth);
        partition.append_value(r.partition);
        status.append_value(r.status);
        error.append_option(r.error);
        error_detail.append_option(r.error_detail.as_deref());
        fetched_at.append_value(r.fetched_at_us);
        fetch_ms.append_value(r.fetch_ms);
        redirects.append_value(r.redirects);
        content_type.append_option(r.content_type.as_deref());
        charset.append_option(r.charset.as_deref());
        content_length.append_value(r.content_length);
        truncated.append_value(r.truncated);
        body.append_option(r.body.as_deref());
        title.append_option(r.title.as_deref());
        text.append_option(r.text.as_deref());
        content_hash.append_option(r.content_hash);
        duplicate_of.append_option(r.duplicate_of.as_deref());
        outlinks.append_value(r.outlinks);
        noise.append_value(r.noise_links);
        referrer.append_option(r.referrer.as_deref());
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(url.finish()),
        Arc::new(final_url.finish()),
        Arc::new(host.finish()),
        Arc::new(domain.finish()),
        Arc::new(depth.finish()),
        Arc::new(partition.finish()),
        Arc::new(status.finish()),
        Arc::new(error.finish()),
        Arc::new(error_detail.finish()),
        Arc::new(fetched_at.finish()),
        Arc::new(fetch_ms.finish()),
        Arc::new(redirects.finish()),
        Arc::new(content_type.finish()),
        Arc::new(charset.finish()),
        Arc::new(content_length.finish()),
        Arc::new(truncated.finish()),
        Arc::new(body.finish()),
        Arc::new(title.finish()),
        Arc::new(text.finish()),
        Arc::new(content_hash.finish()),
        Arc::new(duplicate_of.finish()),
        Arc::new(outlinks.finish()),
        Arc::new(noise.finish()),
        Arc::new(referrer.finish()),
    ];
    batch(doc_schema(), cols)
}

/// Schema of `links/layer=L/*.parquet`.
pub fn links_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("src_url", DataType::Utf8, false),
            Field::new("dst_url", DataType::Utf8, false),
            Field::new("anchor", DataType::Utf8, false),
            Field::new("depth", DataType::Int32, false),
            Field::new("noise", DataType::Utf8, true),
            Field::new("followed", DataType::Boolean, false),
            Field::new("block_ratio", DataType::Float32, false),
        ]))
    }))
}

/// One outlink of a fetched page.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkRow {
    pub src_url: String,
    pub dst_url: String,
    pub anchor: String,
    /// Depth of the *target* if it is followed (source depth + 1).
    pub depth: i32,
    /// Why the link is noise (`scope`, `nofollow`, `dom_ratio`, `lcs_cluster`), or `None`.
    pub noise: Option<&'static str>,
    /// Whether the crawl follows it (a noise link is, with `--denoise mark`).
    pub followed: bool,
    /// Link-text ratio of the DOM block holding the link.
    pub block_ratio: f32,
}

/// Encodes link rows as one batch.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn links_batch(rows: &[LinkRow]) -> Result<RecordBatch, StoreError> {
    let n = rows.len();
    let mut src = StringBuilder::with_capacity(n, n * 48);
    let mut dst = StringBuilder::with_capacity(n, n * 48);
    let mut anchor = StringBuilder::with_capacity(n, n * 16);
    let mut depth = Int32Builder::with_capacity(n);
    let mut noise = StringBuilder::new();
    let mut followed = BooleanBuilder::with_capacity(n);
    let mut ratio = Float32Builder::with_capacity(n);
    for r in rows {
        src.append_value(&r.src_url);
        dst.append_value(&r.dst_url);
        anchor.append_value(&r.anchor);
        depth.append_value(r.depth);
        noise.append_option(r.noise);
        followed.append_value(r.followed);
        ratio.append_value(r.block_ratio);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(src.finish()),
        Arc::new(dst.finish()),
        Arc::new(anchor.finish()),
        Arc::new(depth.finish()),
        Arc::new(noise.finish()),
        Arc::new(followed.finish()),
        Arc::new(ratio.finish()),
    ];
    batch(links_schema(), cols)
}

/// Schema of the per-partition content-hash state (duplicate detection).
pub fn content_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("content_hash", DataType::UInt64, false),
            Field::new("url", DataType::Utf8, false),
        ]))
    }))
}

/// Encodes (hash, first URL) pairs.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn content_batch(rows: &[(u64, String)]) -> Result<RecordBatch, StoreError> {
    let mut h = UInt64Builder::with_capacity(rows.len());
    let mut u = StringBuilder::new();
    for (hash, url) in rows {
        h.append_value(*hash);
        u.append_value(url);
    }
    batch(content_schema(), vec![Arc::new(h.finish()), Arc::new(u.finish())])
}

/// Decodes (hash, first URL) pairs, borrowing the URLs from the batch.
///
/// # Errors
/// When a column is missing or of another type.
pub fn content_rows<'a>(
    b: &'a RecordBatch,
    path: &str,
) -> Result<impl Iterator<Item = (u64, &'a str)> + 'a, StoreError> {
    let h = b
        .column_by_name("content_hash")
        .and_then(|c| c.as_any().downcast_ref::<arrow::array::UInt64Array>())
        .ok_or_else(|| schema_err(path, "column `content_hash` missing or not uint64"))?;
    let u = string_col(b, "url", path)?;
    Ok((0..b.num_rows()).map(move |i| (h.value(i), u.value(i))))
}

/// The `depth` column of an input batch.
pub(super) fn depth_col<'a>(b: &'a RecordBatch, path: &str) -> Result<&'a arrow::array::Int32Array, StoreError> {
    b.column_by_name("depth")
        .and_then(|c| c.as_any().downcast_ref::<arrow::array::Int32Array>())
        .ok_or_else(|| schema_err(path, "column `depth` missing or not int32"))
}

/// A string column by name, or a schema error naming the file.
///
/// # Errors
/// When the column is missing or not UTF-8.
pub fn string_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a StringArray, StoreError> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| schema_err(path, &format!("column `{name}` missing or not utf8")))
}

fn schema_err(path: &str, reason: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: reason.to_string() }
}

fn batch(schema: SchemaRef, cols: Vec<ArrayRef>) -> Result<RecordBatch, StoreError> {
    RecordBatch::try_new(schema, cols).map_err(|e| StoreError::Schema { path: "<batch>".into(), reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_rows_round_trip() {
        let rows = vec![
            InRow { url: "http://a.test/".into(), depth: 0, referrer: None },
            InRow { url: "http://a.test/x".into(), depth: 2, referrer: Some("http://a.test/".into()) },
            InRow { url: "http://a.test/y".into(), depth: 2, referrer: Some("http://b.test/".into()) },
            InRow { url: "http://a.test/z".into(), depth: 3, referrer: Some("http://a.test/".into()) },
            InRow { url: "http://b.test/".into(), depth: 0, referrer: None },
        ];
        let b = input_batch(&rows).expect("batch");
        assert_eq!(input_rows(&b, "t").expect("rows"), rows);
    }

    #[test]
    fn doc_batch_matches_schema_with_nulls() {
        let row =
            DocRow { url: "http://a.test/".into(), status: 200, content_hash: Some(u64::MAX), ..DocRow::default() };
        let b = doc_batch(&[row.clone(), DocRow { error: Some("timeout"), ..row }]).expect("batch");
        assert_eq!(b.num_rows(), 2);
        assert_eq!(b.schema(), doc_schema());
        let err = string_col(&b, "error", "t").expect("col");
        assert!(err.is_null(0));
        assert_eq!(err.value(1), "timeout");
    }
}
