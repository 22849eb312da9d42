//! The SQL tables an export writes (docs/src/export.md), shared by
//! both databases: each table's columns, key, indexes and foreign key, the
//! DDL in either dialect, and the conversion of a Parquet batch into the
//! table's rows.
//!
//! The tables have a fixed set of columns (the `doc`, `links`, `entities`
//! and `relations` columns of docs/src/output.md, the layer from the Hive folder),
//! whatever a crawl's files hold: a column a file lacks (a crawl without a
//! plan has no `relevance`; an older `links` file no `score`) is null in
//! its rows, so crawls of different settings and versions load into one
//! database. Every value is normalised to one of seven [`Kind`]s, the only
//! types the two writers encode.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Int32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow_select::filter::filter_record_batch;

use super::ExportError;
use crate::store::dataset;

/// The value types of the exported columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int32,
    Int64,
    Float64,
    Bool,
    /// Microseconds since the Unix epoch, UTC.
    Timestamp,
    Bytes,
}

impl Kind {
    /// The Arrow type a normalised batch holds for this kind.
    fn arrow(self) -> DataType {
        match self {
            Self::Text => DataType::Utf8,
            Self::Int32 => DataType::Int32,
            Self::Int64 => DataType::Int64,
            Self::Float64 => DataType::Float64,
            Self::Bool => DataType::Boolean,
            Self::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Self::Bytes => DataType::Binary,
        }
    }
}

/// Which database the SQL is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    fn type_name(self, kind: Kind) -> &'static str {
        match (self, kind) {
            (_, Kind::Text) => "TEXT",
            (_, Kind::Int32) => "INTEGER",
            (Self::Sqlite, Kind::Int64) => "INTEGER",
            (Self::Postgres, Kind::Int64) => "BIGINT",
            (Self::Sqlite, Kind::Float64) => "REAL",
            (Self::Postgres, Kind::Float64) => "DOUBLE PRECISION",
            (_, Kind::Bool) => "BOOLEAN",
            // SQLite has no timestamp type: ISO 8601 text in UTC, which its
            // date and time functions read.
            (Self::Sqlite, Kind::Timestamp) => "TEXT",
            (Self::Postgres, Kind::Timestamp) => "TIMESTAMPTZ",
            (Self::Sqlite, Kind::Bytes) => "BLOB",
            (Self::Postgres, Kind::Bytes) => "BYTEA",
        }
    }
}

/// One column of a table.
#[derive(Debug)]
pub struct Column {
    pub name: &'static str,
    pub kind: Kind,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

/// The Parquet dataset a table is read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dataset {
    Doc,
    Links,
    Entities,
    Relations,
}

impl Dataset {
    /// Every dataset an export reads, in the order it loads them.
    pub const ALL: [Self; 4] = [Self::Doc, Self::Links, Self::Entities, Self::Relations];

    /// The dataset's folder under the data location, and its table's
    /// name: its name in `store::dataset`.
    #[must_use]
    pub fn folder(self) -> &'static str {
        match self {
            Self::Doc => dataset::DOC.name,
            Self::Links => dataset::LINKS.name,
            Self::Entities => dataset::ENTITIES.name,
            Self::Relations => dataset::RELATIONS.name,
        }
    }

    /// The column naming the page a row belongs to, whose rows are
    /// numbered by `ord` (none for `doc`, keyed by its URL).
    fn page_column(self) -> Option<&'static str> {
        match self {
            Self::Doc => None,
            Self::Links => Some("src_url"),
            Self::Entities | Self::Relations => Some("url"),
        }
    }
}

/// One table: its columns in order, its primary key, its indexes and its
/// foreign key.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: &'static [Column],
    pub key: &'static [&'static str],
    /// Secondary indexes: name and columns.
    pub indexes: &'static [(&'static str, &'static [&'static str])],
    /// `(column, table, column)`: this column references that table's key.
    pub foreign: Option<(&'static str, &'static str, &'static str)>,
}

use Kind::{Bool, Bytes, Float64, Int32, Int64, Text, Timestamp};

/// Page content, one row per distinct content hash: what pages with the
/// same text share.
pub static CONTENT: Table = Table {
    name: "content",
    columns: &[col("content_hash", Int64), col("text", Text), col("main_text", Text), col("body", Bytes)],
    key: &["content_hash"],
    indexes: &[],
    foreign: None,
};

/// The `content` table's columns read from `doc` (the hash first).
const CONTENT_FROM_DOC: [&str; 4] = ["content_hash", "text", "main_text", "body"];

/// One row per fetched URL and layer; the content lives in [`CONTENT`].
pub static DOC: Table = Table {
    name: dataset::DOC.name,
    columns: &[
        col("url", Text),
        col("layer", Int32),
        col("final_url", Text),
        col("host", Text),
        col("domain", Text),
        col("depth", Int32),
        col("partition", Int32),
        col("status", Int32),
        col("error", Text),
        col("error_detail", Text),
        col("fetched_at", Timestamp),
        col("fetch_ms", Int64),
        col("redirects", Int32),
        col("content_type", Text),
        col("charset", Text),
        col("content_length", Int64),
        col("truncated", Bool),
        col("title", Text),
        col("content_hash", Int64),
        col("duplicate_of", Text),
        col("outlinks", Int32),
        col("noise_links", Int32),
        col("referrer", Text),
        col("etag", Text),
        col("last_modified", Text),
        col("unchanged", Bool),
        col("rendered", Bool),
        col("lang", Text),
        col("description", Text),
        col("author", Text),
        col("published_at", Timestamp),
        col("canonical_url", Text),
        col("og_image", Text),
        col("meta_robots", Text),
        col("og_title", Text),
        col("json_ld", Text),
        col("relevance", Float64),
        col("role", Text),
    ],
    key: &["url", "layer"],
    indexes: &[("doc_host", &["host"]), ("doc_content_hash", &["content_hash"])],
    foreign: Some(("content_hash", "content", "content_hash")),
};

/// One row per outlink; `ord` is the link's place among its page's links.
pub static LINKS: Table = Table {
    name: dataset::LINKS.name,
    columns: &[
        col("src_url", Text),
        col("layer", Int32),
        col("ord", Int32),
        col("dst_url", Text),
        col("anchor", Text),
        col("depth", Int32),
        col("noise", Text),
        col("followed", Bool),
        col("block_ratio", Float64),
        col("score", Float64),
    ],
    // The key's first column serves lookups by source.
    key: &["src_url", "layer", "ord"],
    indexes: &[("links_dst_url", &["dst_url"])],
    foreign: None,
};

/// One row per entity mention; `ord` is the mention's place among its page's.
pub static ENTITIES: Table = Table {
    name: dataset::ENTITIES.name,
    columns: &[
        col("url", Text),
        col("layer", Int32),
        col("ord", Int32),
        col("entity_id", Text),
        col("entity_name", Text),
        col("entity_type", Text),
        col("mention", Text),
        col("offset", Int64),
        col("score", Float64),
    ],
    key: &["url", "layer", "ord"],
    indexes: &[("entities_entity_id", &["entity_id"])],
    foreign: None,
};

/// One row per relation; `ord` is the relation's place among its page's.
pub static RELATIONS: Table = Table {
    name: dataset::RELATIONS.name,
    columns: &[
        col("url", Text),
        col("layer", Int32),
        col("ord", Int32),
        col("subject_id", Text),
        col("predicate", Text),
        col("object_id", Text),
        col("sentence", Text),
        col("score", Float64),
    ],
    key: &["url", "layer", "ord"],
    indexes: &[("relations_subject_id", &["subject_id"]), ("relations_object_id", &["object_id"])],
    foreign: None,
};

/// Every table, in the order rows are written (a referenced table first).
pub static ALL: [&Table; 5] = [&CONTENT, &DOC, &LINKS, &ENTITIES, &RELATIONS];

/// The table a dataset's rows go to (besides [`CONTENT`] for `doc`).
#[must_use]
pub fn table_of(dataset: Dataset) -> &'static Table {
    match dataset {
        Dataset::Doc => &DOC,
        Dataset::Links => &LINKS,
        Dataset::Entities => &ENTITIES,
        Dataset::Relations => &RELATIONS,
    }
}

/// `name` as an SQL identifier: every name is quoted (`offset` and
/// `partition` are keywords).
#[must_use]
pub fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl Table {
    /// The table's columns as a quoted, comma-separated list.
    #[must_use]
    pub fn column_list(&self) -> String {
        self.columns.iter().map(|c| ident(c.name)).collect::<Vec<_>>().join(", ")
    }

    /// `CREATE TABLE IF NOT EXISTS`, with the key and the foreign key.
    #[must_use]
    pub fn create_sql(&self, dialect: Dialect) -> String {
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let not_null = if self.key.contains(&c.name) { " NOT NULL" } else { "" };
                format!("{} {}{not_null}", ident(c.name), dialect.type_name(c.kind))
            })
            .collect();
        parts.push(format!("PRIMARY KEY ({})", self.key.iter().map(|k| ident(k)).collect::<Vec<_>>().join(", ")));
        if let Some((column, table, key)) = self.foreign {
            parts.push(format!("FOREIGN KEY ({}) REFERENCES {} ({})", ident(column), ident(table), ident(key)));
        }
        format!("CREATE TABLE IF NOT EXISTS {} (\n  {}\n)", ident(self.name), parts.join(",\n  "))
    }

    /// `CREATE INDEX IF NOT EXISTS` for each secondary index.
    #[must_use]
    pub fn index_sql(&self) -> Vec<String> {
        self.indexes
            .iter()
            .map(|(name, cols)| {
                let cols = cols.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", ");
                format!("CREATE INDEX IF NOT EXISTS {} ON {} ({cols})", ident(name), ident(self.name))
            })
            .collect()
    }

    /// The Arrow schema of this table's normalised batches.
    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns.iter().map(|c| Field::new(c.name, c.kind.arrow(), true)).collect::<Vec<Field>>(),
        ))
    }

    /// The columns read from the Parquet files (all but `layer` and `ord`).
    #[must_use]
    pub fn source_columns(&self) -> Vec<&'static str> {
        self.columns.iter().map(|c| c.name).filter(|n| !matches!(*n, "layer" | "ord")).collect()
    }
}

/// One column of a normalised batch, downcast once to its [`Kind`]'s
/// array type, so that the writers read each value without a type check.
#[derive(Clone, Copy)]
pub enum Cells<'a> {
    Text(&'a arrow_array::StringArray),
    Int32(&'a Int32Array),
    Int64(&'a Int64Array),
    Float64(&'a arrow_array::Float64Array),
    Bool(&'a arrow_array::BooleanArray),
    /// Microseconds since the Unix epoch, UTC.
    Timestamp(&'a arrow_array::TimestampMicrosecondArray),
    Bytes(&'a arrow_array::BinaryArray),
}

impl Cells<'_> {
    /// Whether row `i` is null.
    #[must_use]
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Self::Text(a) => a.is_null(i),
            Self::Int32(a) => a.is_null(i),
            Self::Int64(a) => a.is_null(i),
            Self::Float64(a) => a.is_null(i),
            Self::Bool(a) => a.is_null(i),
            Self::Timestamp(a) => a.is_null(i),
            Self::Bytes(a) => a.is_null(i),
        }
    }
}

/// The columns of `rows`, a normalised batch of `table` ([`normalise`],
/// [`content_rows`]), each downcast to its kind's array.
#[must_use]
pub fn cells<'a>(table: &Table, rows: &'a RecordBatch) -> Vec<Cells<'a>> {
    use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
    table
        .columns
        .iter()
        .zip(rows.columns())
        .map(|(c, a)| match c.kind {
            Kind::Text => Cells::Text(a.as_string::<i32>()),
            Kind::Int32 => Cells::Int32(a.as_primitive::<Int32Type>()),
            Kind::Int64 => Cells::Int64(a.as_primitive::<Int64Type>()),
            Kind::Float64 => Cells::Float64(a.as_primitive::<Float64Type>()),
            Kind::Bool => Cells::Bool(a.as_boolean()),
            Kind::Timestamp => Cells::Timestamp(a.as_primitive::<TimestampMicrosecondType>()),
            Kind::Bytes => Cells::Bytes(a.as_binary::<i32>()),
        })
        .collect()
}

/// The Parquet columns an export reads of `dataset`.
#[must_use]
pub fn wanted_columns(dataset: Dataset) -> Vec<&'static str> {
    let mut cols = table_of(dataset).source_columns();
    if dataset == Dataset::Doc {
        cols.extend(CONTENT_FROM_DOC.iter().filter(|c| !cols.contains(c)).collect::<Vec<_>>());
    }
    cols
}

/// Row numbers of each page's rows within one layer of a dataset: `ord`
/// of the n-th row of a page is n. A page's rows are written together by
/// the one partition that fetched it, in document order, so the numbers
/// are the same however often the crawl is exported, before its merge or
/// after. Pages are told apart by a 64-bit hash of their URL: two pages
/// sharing a hash would share a counter, which keeps every row's key
/// distinct all the same.
#[derive(Debug, Default)]
pub struct Ordinals {
    next: HashMap<u64, i32>,
}

impl Ordinals {
    fn next(&mut self, page: &str) -> i32 {
        let n = self.next.entry(xxhash_rust::xxh3::xxh3_64(page.as_bytes())).or_insert(0);
        let ord = *n;
        *n = n.saturating_add(1);
        ord
    }
}

/// A Parquet batch of `dataset` from `path` (layer `layer`) as rows of its
/// table: the table's columns in order, each of its [`Kind`]'s type,
/// nulls for columns the file lacks, `layer` from the folder and `ord`
/// from `ords`.
///
/// # Errors
/// When a column has a type that cannot be read as its kind.
pub fn normalise(
    dataset: Dataset,
    batch: &RecordBatch,
    path: &str,
    layer: i32,
    ords: &mut Ordinals,
) -> Result<RecordBatch, ExportError> {
    let table = table_of(dataset);
    let n = batch.num_rows();
    let ord: Option<ArrayRef> = match dataset.page_column() {
        Some(page) => {
            let pages = column(batch, page, Kind::Text, path)?.ok_or_else(|| ExportError::Column {
                path: path.to_string(),
                column: page.to_string(),
                reason: "the column is missing".into(),
            })?;
            let pages = pages.as_string::<i32>();
            Some(Arc::new(Int32Array::from_iter_values((0..n).map(|i| ords.next(pages.value(i))))))
        }
        None => None,
    };
    let mut arrays = Vec::with_capacity(table.columns.len());
    for c in table.columns {
        let array = match c.name {
            "layer" => Arc::new(Int32Array::from(vec![layer; n])) as ArrayRef,
            "ord" => ord.clone().expect("tables with an ord column have a page column"),
            name => {
                column(batch, name, c.kind, path)?.unwrap_or_else(|| arrow_array::new_null_array(&c.kind.arrow(), n))
            }
        };
        arrays.push(array);
    }
    RecordBatch::try_new(table.schema(), arrays).map_err(|e| ExportError::Column {
        path: path.to_string(),
        column: String::new(),
        reason: format!("cannot assemble the {} rows: {e}", table.name),
    })
}

/// The `content` rows of a `doc` batch: one per page with a content hash
/// not in `seen` (which then holds it), so each content is sent to the
/// database once per export. Returns them and how many pages had a hash
/// already seen.
///
/// # Errors
/// When a column has a type that cannot be read as its kind.
pub fn content_rows(
    batch: &RecordBatch,
    path: &str,
    seen: &mut std::collections::HashSet<i64>,
) -> Result<(RecordBatch, u64), ExportError> {
    let n = batch.num_rows();
    let hash = column(batch, "content_hash", Kind::Int64, path)?
        .unwrap_or_else(|| arrow_array::new_null_array(&DataType::Int64, n));
    let hash = hash.as_primitive::<arrow_array::types::Int64Type>();
    let mut again = 0u64;
    let keep: arrow_array::BooleanArray = (0..n)
        .map(|i| {
            let first = hash.is_valid(i) && seen.insert(hash.value(i));
            again += u64::from(hash.is_valid(i) && !first);
            Some(first)
        })
        .collect();
    let mut arrays = Vec::with_capacity(CONTENT.columns.len());
    for c in CONTENT.columns {
        arrays.push(
            column(batch, c.name, c.kind, path)?.unwrap_or_else(|| arrow_array::new_null_array(&c.kind.arrow(), n)),
        );
    }
    let all = RecordBatch::try_new(CONTENT.schema(), arrays).map_err(|e| ExportError::Column {
        path: path.to_string(),
        column: String::new(),
        reason: format!("cannot assemble the content rows: {e}"),
    })?;
    let rows = filter_record_batch(&all, &keep).map_err(|e| ExportError::Column {
        path: path.to_string(),
        column: "content_hash".into(),
        reason: e.to_string(),
    })?;
    Ok((rows, again))
}

/// Column `name` of `batch` as `kind`'s type; `None` when the file has no
/// such column.
fn column(batch: &RecordBatch, name: &str, kind: Kind, path: &str) -> Result<Option<ArrayRef>, ExportError> {
    let Some(array) = batch.column_by_name(name) else { return Ok(None) };
    let bad = |reason: String| ExportError::Column { path: path.to_string(), column: name.to_string(), reason };
    let from = array.data_type();
    let target = kind.arrow();
    if *from == target {
        return Ok(Some(Arc::clone(array)));
    }
    let readable = match kind {
        Kind::Text => matches!(from, DataType::LargeUtf8 | DataType::Utf8View | DataType::Dictionary(_, _)),
        Kind::Int32 => matches!(from, DataType::Int8 | DataType::Int16 | DataType::UInt8 | DataType::UInt16),
        Kind::Int64 => {
            matches!(from, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::UInt32)
                || (*from == DataType::UInt64 && name == "content_hash")
        }
        Kind::Float64 => matches!(from, DataType::Float16 | DataType::Float32),
        Kind::Bool => false,
        Kind::Timestamp => matches!(from, DataType::Timestamp(_, _)),
        Kind::Bytes => matches!(from, DataType::LargeBinary | DataType::BinaryView),
    };
    if !readable {
        return Err(bad(format!("type {from} where the export reads {target}")));
    }
    if *from == DataType::UInt64 {
        // A content hash written by an older version: the same 64 bits
        // (docs/src/output.md), reinterpreted, not converted.
        let hashes = array.as_primitive::<arrow_array::types::UInt64Type>();
        let signed: Int64Array = hashes.iter().map(|h| h.map(|h| i64::from_ne_bytes(h.to_ne_bytes()))).collect();
        return Ok(Some(Arc::new(signed)));
    }
    convert(array, &target).map(Some).map_err(|e| bad(e.to_string()))
}

/// Arrow's cast kernel, in a build that can export (feature `sql`).
#[cfg(feature = "sql")]
fn convert(array: &ArrayRef, target: &DataType) -> Result<ArrayRef, arrow_schema::ArrowError> {
    arrow_cast::cast(array, target)
}

/// A build without feature `sql` opens no database, so no batch is ever
/// converted for one; the cast kernels are left out of it.
#[cfg(not(feature = "sql"))]
fn convert(_: &ArrayRef, target: &DataType) -> Result<ArrayRef, arrow_schema::ArrowError> {
    Err(arrow_schema::ArrowError::NotYetImplemented(format!(
        "converting a column to {target} needs a build with the cargo feature sql"
    )))
}

#[cfg(test)]
mod tests;
