//! The class counts as stored: their Arrow schema, and their encoding to
//! and from record batches.

use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::ClassCount;

/// Schema of the class counts (`state/denoise/yields/`).
#[must_use]
pub fn counts_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("level", DataType::Int32, false),
            Field::new("source", DataType::Utf8, false),
            Field::new("target", DataType::Utf8, false),
            Field::new("fetched", DataType::Int64, false),
            Field::new("new", DataType::Int64, false),
            Field::new("errors", DataType::Int64, false),
        ]))
    }))
}

/// Encodes class counts.
///
/// # Errors
/// Never in practice.
pub fn counts_batch(rows: &[&ClassCount]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let cols: Vec<arrow_array::ArrayRef> = vec![
        Arc::new(rows.iter().map(|r| Some(i32::from(r.level))).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| Some(r.source.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| Some(r.target.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| Some(n(r.fetched))).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| Some(n(r.new))).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| Some(n(r.errors))).collect::<Int64Array>()),
    ];
    RecordBatch::try_new(counts_schema(), cols)
}

/// Decodes class counts; `None` when a column is missing.
#[must_use]
pub fn counts_rows(b: &RecordBatch) -> Option<Vec<ClassCount>> {
    let level = b.column_by_name("level")?.as_primitive_opt::<Int32Type>()?;
    let source = b.column_by_name("source")?.as_string_opt::<i32>()?;
    let target = b.column_by_name("target")?.as_string_opt::<i32>()?;
    let fetched = b.column_by_name("fetched")?.as_primitive_opt::<Int64Type>()?;
    let new = b.column_by_name("new")?.as_primitive_opt::<Int64Type>()?;
    let errors = b.column_by_name("errors")?.as_primitive_opt::<Int64Type>()?;
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    Some(
        (0..b.num_rows())
            .map(|i| ClassCount {
                level: u8::try_from(level.value(i)).unwrap_or(1),
                source: source.value(i).to_string(),
                target: target.value(i).to_string(),
                fetched: u(fetched.value(i)),
                new: u(new.value(i)),
                errors: u(errors.value(i)),
                previous: false,
            })
            .collect(),
    )
}
