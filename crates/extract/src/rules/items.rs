//! The items datasets: one per rule, `items/rule=NAME/layer=L/`, with the
//! rule's fields as typed columns (docs/src/rules.md).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{Schema, SchemaRef};

use super::apply::Item;
use super::Rule;
use crate::extract::{Column, ColumnType, Tuning};
use crate::store::column::{build_column, Value};
use crate::store::{layout, StoreError};

/// One row of a rule's items dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct ItemRow {
    /// The page's URL (as requested, like `doc.url`).
    pub url: String,
    /// When the page's fetch started, µs since the epoch (like `doc.fetched_at`).
    pub fetched_at_us: i64,
    pub item: Item,
}

/// The columns of `rule`'s items: `url`, `fetched_at`, `item` (rules with
/// `each`), the fields in file order, then `_errors`.
#[must_use]
pub fn columns(rule: &Rule) -> Vec<Column> {
    let mut cols = vec![
        Column::new("url", ColumnType::Utf8).not_null().tuned(Tuning::DISTINCT),
        Column::new("fetched_at", ColumnType::TimestampMicros).not_null(),
    ];
    if rule.each.is_some() {
        cols.push(Column::new("item", ColumnType::Int32).not_null().tuned(Tuning::SMALL));
    }
    for f in &rule.fields {
        cols.push(Column::new(f.name.clone(), f.kind.column(f.multiple)));
    }
    cols.push(Column::new("_errors", ColumnType::Utf8List));
    cols
}

/// The Arrow schema of `rule`'s items dataset.
#[must_use]
pub fn schema(rule: &Rule) -> SchemaRef {
    Arc::new(Schema::new(columns(rule).iter().map(Column::field).collect::<Vec<_>>()))
}

/// `rows` of `rule` as one batch of its schema.
///
/// # Errors
/// Only if the schema and the values disagree (a bug).
pub fn batch(rule: &Rule, schema: &SchemaRef, rows: &[ItemRow]) -> Result<RecordBatch, StoreError> {
    let per_item = rule.each.is_some();
    let mut fixed: Vec<[Value; 4]> = Vec::with_capacity(rows.len());
    for r in rows {
        fixed.push([
            Value::Utf8(r.url.clone()),
            Value::TimestampMicros(r.fetched_at_us),
            Value::Int32(r.item.index.unwrap_or(0)),
            if r.item.errors.is_empty() { Value::Null } else { Value::Utf8List(r.item.errors.clone()) },
        ]);
    }
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    let fields = schema.fields();
    let mut at = 0;
    for slot in [0, 1] {
        arrays.push(build_column(&fields[at], fixed.iter().map(|f| Some(&f[slot])))?);
        at += 1;
    }
    if per_item {
        arrays.push(build_column(&fields[at], fixed.iter().map(|f| Some(&f[2])))?);
        at += 1;
    }
    for i in 0..rule.fields.len() {
        arrays.push(build_column(&fields[at], rows.iter().map(|r| r.item.values.get(i)))?);
        at += 1;
    }
    arrays.push(build_column(&fields[at], fixed.iter().map(|f| Some(&f[3])))?);
    RecordBatch::try_new(Arc::clone(schema), arrays)
        .map_err(|e| StoreError::Schema { path: layout::items_dataset(&rule.name), reason: e.to_string() })
}

pub use crate::store::manifest::RuleCounts;

/// Counts `items` of `rule` from one page into `counts`.
pub fn count_page(counts: &mut RuleCounts, rule: &Rule, items: &[Item]) {
    counts.pages += 1;
    counts.items += items.len() as u64;
    for item in items {
        counts.items_with_errors += u64::from(!item.errors.is_empty());
        for (f, v) in rule.fields.iter().zip(&item.values) {
            *counts.filled.entry(f.name.clone()).or_default() += u64::from(!matches!(v, Value::Null));
        }
    }
}
