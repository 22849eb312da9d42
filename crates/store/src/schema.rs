//! The Parquet schemas (docs/src/output.md) and their row types.
//!
//! The layer of a row is not a column of the files: it is the Hive
//! partition of their folder (`doc/layer=L/`), which DuckDB, Polars,
//! pyarrow, pandas and Spark turn into a `layer` column. Writing it into
//! the files too would give readers two `layer` fields, which pyarrow
//! cannot merge and Spark refuses.
//!
//! Rows are plain structs; a `Vec` of them becomes one Arrow batch. Signed
//! 32/64-bit integers are used so that Spark, which has no unsigned types,
//! reads every column natively: `content_hash` is the xxh3 hash's 64 bits
//! as an `Int64` (a `u64` in memory, reinterpreted here and nowhere else).
//!
//! This module is the boundary of the typed vocabularies: a row's error
//! kind ([`ErrorKind`]) and a link's noise label ([`NoiseLabel`]) become
//! strings here, and labels read back are parsed here.

use std::sync::{Arc, OnceLock};

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, Float32Builder, Int32Builder, Int64Builder};
use arrow_array::builder::{StringBuilder, TimestampMicrosecondBuilder};
use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::{cast::AsArray, Array, ArrayRef, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::column::{Tuned, Tuning, Value};
use super::StoreError;
use crate::vocab::{ErrorKind, NoiseLabel};

/// A content hash as written: its 64 bits as a signed integer.
fn hash_to_i64(h: u64) -> i64 {
    i64::from_ne_bytes(h.to_ne_bytes())
}

/// A content hash as read back: the inverse of [`hash_to_i64`].
fn hash_from_i64(h: i64) -> u64 {
    u64::from_ne_bytes(h.to_ne_bytes())
}

const DISTINCT: Tuning = Tuning::DISTINCT;
const SMALL: Tuning = Tuning::SMALL;

fn utc_micros() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Schema of `in/layer=L/*.parquet`.
pub fn input_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false).tuned(DISTINCT),
            Field::new("depth", DataType::Int32, false).tuned(SMALL),
            Field::new("referrer", DataType::Utf8, true),
            Field::new("priority", DataType::Int32, true),
            Field::new("anchor", DataType::Utf8, true),
            // Tries of the URL that failed in earlier layers (null: none).
            Field::new("retries", DataType::Int32, true),
        ]))
    }))
}

/// One URL to fetch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InRow {
    /// Normalised absolute URL.
    pub url: String,
    /// Hops from the seeds (0 for a seed).
    pub depth: i32,
    /// The page that linked here first, if any.
    pub referrer: Option<String>,
    /// With a crawl plan: the best score of the links to it, in millionths
    /// (docs/src/focused-crawling.md); a layer's input is written best first.
    pub priority: Option<i32>,
    /// With a crawl plan: the anchor text of that best link, which counts
    /// in the page's relevance (the plan's `weights.anchor`).
    pub anchor: Option<String>,
    /// Retries already spent on the URL in earlier layers (a URL carried
    /// over after a transient failure): its retry budget (`--retries`)
    /// counts across layers, so it ends as an error row, never carried for ever.
    pub retries: u32,
}

/// A link score (0 to 1) as a priority, in millionths.
#[must_use]
pub fn priority_of(score: f32) -> i32 {
    #[allow(clippy::cast_possible_truncation)]
    let p = (f64::from(score.clamp(0.0, 1.0)) * 1e6).round() as i32;
    p
}

/// Encodes input rows as one batch.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn input_batch(rows: &[InRow]) -> Result<RecordBatch, StoreError> {
    let mut url = StringBuilder::new();
    let mut depth = Int32Builder::new();
    let mut referrer = StringBuilder::new();
    let mut priority = Int32Builder::new();
    let mut anchor = StringBuilder::new();
    let mut retries = Int32Builder::new();
    for r in rows {
        url.append_value(&r.url);
        depth.append_value(r.depth);
        referrer.append_option(r.referrer.as_deref());
        priority.append_option(r.priority);
        anchor.append_option(r.anchor.as_deref());
        retries.append_option((r.retries > 0).then(|| i32::try_from(r.retries).unwrap_or(i32::MAX)));
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(url.finish()),
        Arc::new(depth.finish()),
        Arc::new(referrer.finish()),
        Arc::new(priority.finish()),
        Arc::new(anchor.finish()),
        Arc::new(retries.finish()),
    ];
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
    let priority = priority_col(b);
    let anchor = anchor_col(b);
    let retries = retries_col(b);
    Ok((0..b.num_rows())
        .map(|i| InRow {
            url: url.value(i).to_string(),
            depth: depth.value(i),
            referrer: (!referrer.is_null(i)).then(|| referrer.value(i).to_string()),
            priority: priority.and_then(|p| (!p.is_null(i)).then(|| p.value(i))),
            anchor: anchor.and_then(|a| (!a.is_null(i)).then(|| a.value(i).to_string())),
            retries: retries_at(retries, i),
        })
        .collect())
}

/// Schema of `doc/layer=L/*.parquet`.
pub fn doc_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false).tuned(DISTINCT),
            Field::new("final_url", DataType::Utf8, false).tuned(DISTINCT),
            Field::new("host", DataType::Utf8, false).tuned(SMALL),
            Field::new("domain", DataType::Utf8, false).tuned(SMALL),
            Field::new("depth", DataType::Int32, false).tuned(SMALL),
            Field::new("partition", DataType::Int32, false).tuned(SMALL),
            Field::new("status", DataType::Int32, false).tuned(SMALL),
            Field::new("error", DataType::Utf8, true).tuned(SMALL),
            Field::new("error_detail", DataType::Utf8, true).tuned(SMALL),
            Field::new("fetched_at", utc_micros(), false).tuned(DISTINCT),
            Field::new("fetch_ms", DataType::Int64, false).tuned(SMALL),
            Field::new("redirects", DataType::Int32, false).tuned(SMALL),
            Field::new("content_type", DataType::Utf8, true).tuned(SMALL),
            Field::new("charset", DataType::Utf8, true).tuned(SMALL),
            Field::new("content_length", DataType::Int64, false),
            Field::new("truncated", DataType::Boolean, false).tuned(SMALL),
            Field::new("body", DataType::Binary, true).tuned(Tuning::BULK),
            Field::new("title", DataType::Utf8, true),
            Field::new("text", DataType::Utf8, true).tuned(Tuning::BULK),
            Field::new("content_hash", DataType::Int64, true).tuned(SMALL),
            Field::new("duplicate_of", DataType::Utf8, true),
            Field::new("outlinks", DataType::Int32, false).tuned(SMALL),
            Field::new("noise_links", DataType::Int32, false).tuned(SMALL),
            Field::new("referrer", DataType::Utf8, true),
            Field::new("etag", DataType::Utf8, true).tuned(DISTINCT),
            Field::new("last_modified", DataType::Utf8, true),
            Field::new("unchanged", DataType::Boolean, false).tuned(SMALL),
            Field::new("rendered", DataType::Boolean, false).tuned(SMALL),
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
    /// Why the URL has no usable response; `None` on success.
    pub error: Option<ErrorKind>,
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
    /// The response's `ETag` and `Last-Modified` headers, as sent: the
    /// next night's conditional request (`--previous`) sends them back.
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The server answered the conditional request 304 Not Modified: the
    /// row is last night's page, carried forward (docs/src/recrawl.md).
    pub unchanged: bool,
    /// The page went through headless Chromium (`--render`): `body` and
    /// everything parsed from it are the DOM after its scripts ran.
    pub rendered: bool,
    /// The values of the run's extractor columns, in their order after the
    /// core columns (see [`doc_schema_with`]); empty when none is registered.
    pub extra: Vec<Value>,
}

/// The `doc` schema of a run whose extractors add `extra` columns: the core
/// columns of [`doc_schema`], then these; the core schema itself when there
/// are none, so a run without extractors writes exactly the core files.
#[must_use]
pub fn doc_schema_with(extra: &[Field]) -> SchemaRef {
    let core = doc_schema();
    if extra.is_empty() {
        return core;
    }
    let fields: Vec<Field> = core.fields().iter().map(|f| f.as_ref().clone()).chain(extra.iter().cloned()).collect();
    Arc::new(Schema::new_with_metadata(fields, core.metadata().clone()))
}

/// Encodes doc rows as one batch of the core [`doc_schema`].
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn doc_batch(rows: &[DocRow]) -> Result<RecordBatch, StoreError> {
    doc_batch_with(&doc_schema(), rows)
}

/// Encodes doc rows as one batch of `schema`, a [`doc_schema_with`] schema:
/// the core columns, then each extractor column from the rows' `extra`
/// values, by a builder chosen by the column's type
/// ([`super::column::build_column`]).
///
/// # Errors
/// When an extractor column has a type no builder takes.
pub fn doc_batch_with(schema: &SchemaRef, rows: &[DocRow]) -> Result<RecordBatch, StoreError> {
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
    let mut content_hash = Int64Builder::with_capacity(n);
    let mut duplicate_of = StringBuilder::new();
    let mut referrer = StringBuilder::new();
    let mut etag = StringBuilder::new();
    let mut last_modified = StringBuilder::new();
    let mut unchanged = BooleanBuilder::with_capacity(n);
    let mut rendered = BooleanBuilder::with_capacity(n);
    for r in rows {
        url.append_value(&r.url);
        final_url.append_value(&r.final_url);
        host.append_value(&r.host);
        domain.append_value(&r.domain);
        depth.append_value(r.depth);
        partition.append_value(r.partition);
        status.append_value(r.status);
        error.append_option(r.error.map(ErrorKind::as_str));
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
        content_hash.append_option(r.content_hash.map(hash_to_i64));
        duplicate_of.append_option(r.duplicate_of.as_deref());
        outlinks.append_value(r.outlinks);
        noise.append_value(r.noise_links);
        referrer.append_option(r.referrer.as_deref());
        etag.append_option(r.etag.as_deref());
        last_modified.append_option(r.last_modified.as_deref());
        unchanged.append_value(r.unchanged);
        rendered.append_value(r.rendered);
    }
    let mut cols: Vec<ArrayRef> = vec![
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
        Arc::new(etag.finish()),
        Arc::new(last_modified.finish()),
        Arc::new(unchanged.finish()),
        Arc::new(rendered.finish()),
    ];
    let core = cols.len();
    for (i, field) in schema.fields().iter().enumerate().skip(core) {
        cols.push(super::column::build_column(field, rows.iter().map(|r| r.extra.get(i - core)))?);
    }
    batch(Arc::clone(schema), cols)
}

/// Schema of `links/layer=L/*.parquet`.
pub fn links_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("src_url", DataType::Utf8, false),
            // A site's navigation targets repeat on every page.
            Field::new("dst_url", DataType::Utf8, false).tuned(Tuning::REPEATED),
            Field::new("anchor", DataType::Utf8, false),
            Field::new("depth", DataType::Int32, false).tuned(SMALL),
            Field::new("noise", DataType::Utf8, true),
            Field::new("followed", DataType::Boolean, false),
            Field::new("block_ratio", DataType::Float32, false),
            Field::new("score", DataType::Float32, true),
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
    /// Why the link is noise, or `None`.
    pub noise: Option<NoiseLabel>,
    /// Whether the crawl follows it (a noise link is, with `--denoise mark`).
    pub followed: bool,
    /// Link-text ratio of the DOM block holding the link.
    pub block_ratio: f32,
    /// With a crawl plan: how promising the link is, 0 to 1, from its
    /// anchor text, its page's relevance and its URL's words
    /// (docs/src/focused-crawling.md); `None` without a plan.
    pub score: Option<f32>,
}

impl LinkRow {
    /// A followed link from `src_url` to `dst_url` (a target at `depth`),
    /// with no anchor text, noise label, block or score: a sitemap's
    /// entry, or a link as a test needs it.
    #[must_use]
    pub fn followed(src_url: impl Into<String>, dst_url: impl Into<String>, depth: i32) -> Self {
        Self {
            src_url: src_url.into(),
            dst_url: dst_url.into(),
            anchor: String::new(),
            depth,
            noise: None,
            followed: true,
            block_ratio: 0.0,
            score: None,
        }
    }
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
    let mut score = Float32Builder::with_capacity(n);
    for r in rows {
        src.append_value(&r.src_url);
        dst.append_value(&r.dst_url);
        anchor.append_value(&r.anchor);
        depth.append_value(r.depth);
        noise.append_option(r.noise.map(NoiseLabel::as_str));
        followed.append_value(r.followed);
        ratio.append_value(r.block_ratio);
        score.append_option(r.score);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(src.finish()),
        Arc::new(dst.finish()),
        Arc::new(anchor.finish()),
        Arc::new(depth.finish()),
        Arc::new(noise.finish()),
        Arc::new(followed.finish()),
        Arc::new(ratio.finish()),
        Arc::new(score.finish()),
    ];
    batch(links_schema(), cols)
}

/// Schema of the per-partition content-hash state (duplicate detection).
pub fn content_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("content_hash", DataType::Int64, false).tuned(SMALL),
            Field::new("url", DataType::Utf8, false).tuned(DISTINCT),
        ]))
    }))
}

/// Encodes (hash, first URL) pairs.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn content_batch(rows: &[(u64, String)]) -> Result<RecordBatch, StoreError> {
    let mut h = Int64Builder::with_capacity(rows.len());
    let mut u = StringBuilder::new();
    for (hash, url) in rows {
        h.append_value(hash_to_i64(*hash));
        u.append_value(url);
    }
    batch(content_schema(), vec![Arc::new(h.finish()), Arc::new(u.finish())])
}

/// Decodes (hash, first URL) pairs, borrowing the URLs from the batch.
/// Files written before the hash became an `Int64` hold a `UInt64`: both
/// are read, so an older data folder goes on deduplicating against them.
///
/// # Errors
/// When a column is missing or of another type.
pub fn content_rows<'a>(
    b: &'a RecordBatch,
    path: &str,
) -> Result<impl Iterator<Item = (u64, &'a str)> + 'a, StoreError> {
    let col = b.column_by_name("content_hash");
    let h: UInt64Array = if let Some(signed) = col.and_then(|c| c.as_primitive_opt::<Int64Type>()) {
        signed.unary(hash_from_i64)
    } else if let Some(unsigned) = col.and_then(|c| c.as_primitive_opt::<UInt64Type>()) {
        unsigned.clone()
    } else {
        return Err(schema_err(path, "column `content_hash` missing or not int64"));
    };
    let u = string_col(b, "url", path)?;
    Ok((0..b.num_rows()).map(move |i| (h.value(i), u.value(i))))
}

/// The `noise` column of a links batch, parsed.
///
/// # Errors
/// When the column is missing, not UTF-8, or holds a value that names no
/// label.
pub fn noise_labels(b: &RecordBatch, path: &str) -> Result<Vec<Option<NoiseLabel>>, StoreError> {
    let col = string_col(b, "noise", path)?;
    col.iter()
        .map(|v| v.map(str::parse).transpose().map_err(|e| schema_err(path, &format!("column `noise`: {e}"))))
        .collect()
}

/// Labels as a `noise` column.
#[must_use]
pub fn noise_array(labels: &[Option<NoiseLabel>]) -> StringArray {
    labels.iter().map(|l| l.map(NoiseLabel::as_str)).collect()
}

fn schema_err(path: &str, reason: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: reason.to_string() }
}

fn batch(schema: SchemaRef, cols: Vec<ArrayRef>) -> Result<RecordBatch, StoreError> {
    RecordBatch::try_new(schema, cols).map_err(|e| StoreError::Schema { path: "<batch>".into(), reason: e.to_string() })
}

mod read;
mod sitemaps;
pub mod skipped;
pub(super) use read::{anchor_col, depth_col, priority_col, retries_at, retries_col};
pub use read::{binary_col, bool_col, int32_col, int64_col, string_col, typed_col};
pub use sitemaps::{sitemaps_batch, sitemaps_schema, SitemapRow};

#[cfg(test)]
mod tests;
