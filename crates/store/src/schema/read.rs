//! Reading a batch's columns back: each by name, checked to be of the type
//! expected, with a schema error naming the file when it is missing or of
//! another type; and the input's columns that inputs written before them
//! lack.

use arrow_array::{Array, RecordBatch, StringArray};

use super::schema_err;
use crate::StoreError;

/// The input's `priority` column; none in an input written before it
/// existed.
pub(crate) fn priority_col(b: &RecordBatch) -> Option<&arrow_array::Int32Array> {
    b.column_by_name("priority").and_then(|c| c.as_any().downcast_ref::<arrow_array::Int32Array>())
}

/// The input's `anchor` column; none in an input written before it
/// existed (its rows read with no anchor).
pub(crate) fn anchor_col(b: &RecordBatch) -> Option<&StringArray> {
    b.column_by_name("anchor").and_then(|c| c.as_any().downcast_ref::<StringArray>())
}

/// The input's `retries` column; none in an input written before it
/// existed (its rows read as never tried).
pub(crate) fn retries_col(b: &RecordBatch) -> Option<&arrow_array::Int32Array> {
    b.column_by_name("retries").and_then(|c| c.as_any().downcast_ref::<arrow_array::Int32Array>())
}

/// Row `i`'s retries in a `retries` column (0 when null or absent).
pub(crate) fn retries_at(col: Option<&arrow_array::Int32Array>, i: usize) -> u32 {
    col.filter(|c| !c.is_null(i)).map_or(0, |c| u32::try_from(c.value(i)).unwrap_or(0))
}

/// The `depth` column of an input batch.
pub(crate) fn depth_col<'a>(b: &'a RecordBatch, path: &str) -> Result<&'a arrow_array::Int32Array, StoreError> {
    b.column_by_name("depth")
        .and_then(|c| c.as_any().downcast_ref::<arrow_array::Int32Array>())
        .ok_or_else(|| schema_err(path, "column `depth` missing or not int32"))
}

/// A string column by name, or a schema error naming the file.
///
/// # Errors
/// When the column is missing or not UTF-8 (`Utf8`: a `LargeUtf8` or
/// `Utf8View` column written by another tool is refused, not read).
pub fn string_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a StringArray, StoreError> {
    typed_col(b, name, path, "utf8")
}

/// An `Int32` column by name ([`typed_col`]).
///
/// # Errors
/// As [`typed_col`].
pub fn int32_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a arrow_array::Int32Array, StoreError> {
    typed_col(b, name, path, "int32")
}

/// An `Int64` column by name ([`typed_col`]).
///
/// # Errors
/// As [`typed_col`].
pub fn int64_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a arrow_array::Int64Array, StoreError> {
    typed_col(b, name, path, "int64")
}

/// A `Boolean` column by name ([`typed_col`]).
///
/// # Errors
/// As [`typed_col`].
pub fn bool_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a arrow_array::BooleanArray, StoreError> {
    typed_col(b, name, path, "boolean")
}

/// A `Binary` column by name ([`typed_col`]).
///
/// # Errors
/// As [`typed_col`].
pub fn binary_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a arrow_array::BinaryArray, StoreError> {
    typed_col(b, name, path, "binary")
}

/// Column `name` of `b` as the array type `A` (named `expected` in the
/// message): the checked form of arrow's `as_string`/`as_primitive`, which
/// panic on a file whose column has another type.
///
/// # Errors
/// A schema error naming the file `path`, the column, and the type found.
pub fn typed_col<'a, A: Array + 'static>(
    b: &'a RecordBatch,
    name: &str,
    path: &str,
    expected: &str,
) -> Result<&'a A, StoreError> {
    let col = b.column_by_name(name).ok_or_else(|| schema_err(path, &format!("no column `{name}`")))?;
    col.as_any()
        .downcast_ref::<A>()
        .ok_or_else(|| schema_err(path, &format!("column `{name}` is {}, expected {expected}", col.data_type())))
}
