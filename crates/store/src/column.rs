//! Columns that describe themselves: the Parquet tuning of a column rides on
//! its schema field (field metadata), set where the column is defined, and
//! the columns that extractors add to `doc` ([`crate::extract`]) carry
//! their values as [`Value`]s, encoded by a builder chosen by the field's
//! type.
//!
//! The tuning keys steer [`super::ShardWriter`] only: it strips them from
//! the schema it records in a file's footer, so the files are the same as
//! when the tuning was a list of column names.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Float64Builder, Int32Builder, Int64Builder, ListBuilder,
    StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};

use super::StoreError;

/// Field metadata key: `"true"` writes the column without a dictionary.
pub const NO_DICTIONARY_KEY: &str = "layercrawl.parquet.no_dictionary";
/// Field metadata key: `"true"` writes the column uncompressed.
pub const UNCOMPRESSED_KEY: &str = "layercrawl.parquet.uncompressed";
/// Field metadata key: `"true"` writes the column without min/max statistics.
pub const NO_STATISTICS_KEY: &str = "layercrawl.parquet.no_statistics";
/// Field metadata key: `"true"` lets the column's dictionary grow to
/// [`LARGE_DICTIONARY_BYTES`] before its pages fall back to plain values.
pub const LARGE_DICTIONARY_KEY: &str = "layercrawl.parquet.large_dictionary";
/// A large dictionary's page, at most: about 70,000 distinct URLs of a
/// row group. The writer holds it while the column chunk is open.
pub const LARGE_DICTIONARY_BYTES: usize = 4 << 20;

/// How one column is written to Parquet, beyond the file's defaults
/// (dictionary on, the store's compression, min/max statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tuning {
    pub no_dictionary: bool,
    pub uncompressed: bool,
    pub no_statistics: bool,
    pub large_dictionary: bool,
}

impl Tuning {
    /// The file's defaults.
    pub const DEFAULT: Self =
        Self { no_dictionary: false, uncompressed: false, no_statistics: false, large_dictionary: false };
    /// Values that rarely repeat within a file (URLs, timestamps): a
    /// dictionary only pays for repeated values.
    pub const DISTINCT: Self = Self { no_dictionary: true, ..Self::DEFAULT };
    /// Whole pages (bodies, texts): no dictionary (it would be built, found
    /// useless and dropped for every column chunk, at the price of a second
    /// compression of its first MiB), and no min/max statistics: nobody
    /// filters on the smallest body of a file, and the encoder keeps a full
    /// copy of the smallest and the largest value of the open page and of
    /// the open column chunk, four pages per column of every open shard (on
    /// 512 KB pages, 19 MiB of a crawl's 128 MiB peak, docs/src/governor.md).
    pub const BULK: Self = Self { no_dictionary: true, no_statistics: true, ..Self::DEFAULT };
    /// Dictionary codes, flags and small numbers, written uncompressed:
    /// compression gains under 0.01 % of a `doc` file there (measured
    /// column by column on a crawl's shards) while every compressed column
    /// chunk being written holds two zstd contexts (~150 KB: parquet
    /// creates a decompressor beside each compressor). The cpu crawl's
    /// peak RSS went 271 -> 265 MiB, and its files got no larger.
    pub const SMALL: Self = Self { uncompressed: true, ..Self::DEFAULT };
    /// Values that repeat across a file's rows, but more of them than the
    /// default 1 MiB dictionary holds: the targets of a site's links (its
    /// navigation is linked from every page; 40,000 distinct targets in a
    /// row group of 500,000 links). Kept in a dictionary, they are stored
    /// once per row group, and a reader that looks each distinct value up
    /// (the noise labels written into the links) decodes them once, not
    /// once per row.
    pub const REPEATED: Self = Self { large_dictionary: true, ..Self::DEFAULT };

    /// The tuning a field's metadata asks for.
    #[must_use]
    pub fn of(field: &Field) -> Self {
        let flag = |key: &str| field.metadata().get(key).is_some_and(|v| v == "true");
        Self {
            no_dictionary: flag(NO_DICTIONARY_KEY),
            uncompressed: flag(UNCOMPRESSED_KEY),
            no_statistics: flag(NO_STATISTICS_KEY),
            large_dictionary: flag(LARGE_DICTIONARY_KEY),
        }
    }

    /// `field` with this tuning in its metadata (other keys kept).
    #[must_use]
    pub fn on(self, field: Field) -> Field {
        if self == Self::DEFAULT {
            return field;
        }
        let mut meta = field.metadata().clone();
        for (key, on) in [
            (NO_DICTIONARY_KEY, self.no_dictionary),
            (UNCOMPRESSED_KEY, self.uncompressed),
            (NO_STATISTICS_KEY, self.no_statistics),
            (LARGE_DICTIONARY_KEY, self.large_dictionary),
        ] {
            if on {
                meta.insert(key.to_string(), "true".to_string());
            }
        }
        field.with_metadata(meta)
    }
}

/// `Field::new(..).tuned(Tuning::SMALL)`: a schema's fields say their tuning inline.
pub trait Tuned {
    #[must_use]
    fn tuned(self, tuning: Tuning) -> Field;
}

impl Tuned for Field {
    fn tuned(self, tuning: Tuning) -> Field {
        tuning.on(self)
    }
}

/// `schema` without the tuning keys: what a file's footer records. The same
/// schema back when no field has them.
#[must_use]
pub fn without_tuning(schema: &SchemaRef) -> SchemaRef {
    const KEYS: [&str; 4] = [NO_DICTIONARY_KEY, UNCOMPRESSED_KEY, NO_STATISTICS_KEY, LARGE_DICTIONARY_KEY];
    let tuned = |f: &Field| KEYS.iter().any(|k| f.metadata().contains_key(k));
    if !schema.fields().iter().any(|f| tuned(f)) {
        return Arc::clone(schema);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let meta: HashMap<String, String> = f
                .metadata()
                .iter()
                .filter(|(k, _)| !KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            f.as_ref().clone().with_metadata(meta)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// The Arrow types an extractor's column may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Bool,
    Int32,
    Int64,
    Float64,
    Utf8,
    Binary,
    /// A list of strings (every match of a rule, every entity of a page).
    Utf8List,
    /// An instant: microseconds since the Unix epoch, UTC.
    TimestampMicros,
    /// A calendar day: days since the Unix epoch (a date has no time zone,
    /// so a rule's `date` field is not forced to a midnight in UTC).
    Date32,
    /// Lists of the scalar types above: a rule's field with `multiple`
    /// keeps every match, converted, in page order.
    Int64List,
    Float64List,
    BoolList,
    Date32List,
    TimestampMicrosList,
}

impl ColumnType {
    /// The Arrow type of the column.
    #[must_use]
    pub fn data_type(self) -> DataType {
        match self {
            Self::Bool => DataType::Boolean,
            Self::Int32 => DataType::Int32,
            Self::Int64 => DataType::Int64,
            Self::Float64 => DataType::Float64,
            Self::Utf8 => DataType::Utf8,
            Self::Binary => DataType::Binary,
            Self::Utf8List => list_of(DataType::Utf8),
            Self::TimestampMicros => utc_micros(),
            Self::Date32 => DataType::Date32,
            Self::Int64List => list_of(DataType::Int64),
            Self::Float64List => list_of(DataType::Float64),
            Self::BoolList => list_of(DataType::Boolean),
            Self::Date32List => list_of(DataType::Date32),
            Self::TimestampMicrosList => list_of(utc_micros()),
        }
    }

    /// The column type of an Arrow type, if it is one of these.
    #[must_use]
    pub fn of(data_type: &DataType) -> Option<Self> {
        [
            Self::Bool,
            Self::Int32,
            Self::Int64,
            Self::Float64,
            Self::Utf8,
            Self::Binary,
            Self::Utf8List,
            Self::TimestampMicros,
            Self::Date32,
            Self::Int64List,
            Self::Float64List,
            Self::BoolList,
            Self::Date32List,
            Self::TimestampMicrosList,
        ]
        .into_iter()
        .find(|t| t.data_type() == *data_type)
    }
}

/// A list whose items are `item`s, nullable, named as Arrow names list
/// items (what `ListBuilder` writes, so built arrays match the schema).
fn list_of(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new_list_field(item, true)))
}

/// Microseconds since the epoch, in UTC: every instant a column holds.
fn utc_micros() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// One value of an extractor's column in one row.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Int32(i32),
    Int64(i64),
    Float64(f64),
    Utf8(String),
    Binary(Vec<u8>),
    Utf8List(Vec<String>),
    /// Microseconds since the Unix epoch, UTC.
    TimestampMicros(i64),
    /// Days since the Unix epoch.
    Date32(i32),
    Int64List(Vec<i64>),
    Float64List(Vec<f64>),
    BoolList(Vec<bool>),
    /// Days since the Unix epoch, each.
    Date32List(Vec<i32>),
    /// Microseconds since the Unix epoch, UTC, each.
    TimestampMicrosList(Vec<i64>),
}

/// Encodes one extractor column of `field`'s type from each row's value
/// (`None`: the row has none, e.g. its URL failed before a response).
/// A missing value, or one of another type (an extractor's bug, logged),
/// is null, or the type's zero value in a column that is not nullable, so
/// an extractor can never make a batch fail.
///
/// # Errors
/// When `field`'s type is not a [`ColumnType`].
pub fn build_column<'a>(
    field: &Field,
    values: impl ExactSizeIterator<Item = Option<&'a Value>> + Clone,
) -> Result<ArrayRef, StoreError> {
    let kind = ColumnType::of(field.data_type()).ok_or_else(|| StoreError::Schema {
        path: "<batch>".into(),
        reason: format!("column `{}` has type {}, which no extractor column may have", field.name(), field.data_type()),
    })?;
    let n = values.len();
    let nullable = field.is_nullable();
    let mut mistyped = 0usize;
    // One builder per type: a value of the column's type is appended, any
    // other becomes null (or the zero value when the column is not nullable).
    macro_rules! build {
        ($builder:expr, $variant:ident, |$b:ident, $v:ident| $append:expr, |$z:ident| $zero:expr) => {{
            let mut $b = $builder;
            for value in values {
                match value {
                    Some(Value::$variant($v)) => $append,
                    other => {
                        mistyped += usize::from(!matches!(other, None | Some(Value::Null)));
                        if nullable {
                            $b.append_null();
                        } else {
                            let $z = &mut $b;
                            $zero;
                        }
                    }
                }
            }
            Arc::new($b.finish()) as ArrayRef
        }};
    }
    let array = match kind {
        ColumnType::Bool => {
            build!(BooleanBuilder::with_capacity(n), Bool, |b, v| b.append_value(*v), |z| z.append_value(false))
        }
        ColumnType::Int32 => {
            build!(Int32Builder::with_capacity(n), Int32, |b, v| b.append_value(*v), |z| z.append_value(0))
        }
        ColumnType::Int64 => {
            build!(Int64Builder::with_capacity(n), Int64, |b, v| b.append_value(*v), |z| z.append_value(0))
        }
        ColumnType::Float64 => {
            build!(Float64Builder::with_capacity(n), Float64, |b, v| b.append_value(*v), |z| z.append_value(0.0))
        }
        // Sized up front: a column of page texts is a large copy, not to be
        // made twice by growing.
        ColumnType::Utf8 => {
            let bytes = values.clone().map(|v| if let Some(Value::Utf8(s)) = v { s.len() } else { 0 }).sum();
            build!(StringBuilder::with_capacity(n, bytes), Utf8, |b, v| b.append_value(v), |z| z.append_value(""))
        }
        ColumnType::Binary => {
            let bytes = values.clone().map(|v| if let Some(Value::Binary(s)) = v { s.len() } else { 0 }).sum();
            build!(BinaryBuilder::with_capacity(n, bytes), Binary, |b, v| b.append_value(v), |z| z.append_value(b""))
        }
        ColumnType::TimestampMicros => build!(
            TimestampMicrosecondBuilder::with_capacity(n).with_timezone("UTC"),
            TimestampMicros,
            |b, v| b.append_value(*v),
            |z| z.append_value(0)
        ),
        ColumnType::Date32 => {
            build!(Date32Builder::with_capacity(n), Date32, |b, v| b.append_value(*v), |z| z.append_value(0))
        }
        ColumnType::Utf8List => build!(
            ListBuilder::new(StringBuilder::new()),
            Utf8List,
            |b, v| {
                for s in v {
                    b.values().append_value(s);
                }
                b.append(true);
            },
            |z| z.append(true)
        ),
        // A list of a primitive type: the row's items copied in one go; the
        // zero value of a column that is not nullable is the empty list.
        ColumnType::Int64List => build!(
            ListBuilder::with_capacity(Int64Builder::new(), n),
            Int64List,
            |b, v| b.append_value(v.iter().map(|x| Some(*x))),
            |z| z.append(true)
        ),
        ColumnType::Float64List => build!(
            ListBuilder::with_capacity(Float64Builder::new(), n),
            Float64List,
            |b, v| b.append_value(v.iter().map(|x| Some(*x))),
            |z| z.append(true)
        ),
        ColumnType::BoolList => build!(
            ListBuilder::with_capacity(BooleanBuilder::new(), n),
            BoolList,
            |b, v| b.append_value(v.iter().map(|x| Some(*x))),
            |z| z.append(true)
        ),
        ColumnType::Date32List => build!(
            ListBuilder::with_capacity(Date32Builder::new(), n),
            Date32List,
            |b, v| b.append_value(v.iter().map(|x| Some(*x))),
            |z| z.append(true)
        ),
        ColumnType::TimestampMicrosList => build!(
            ListBuilder::with_capacity(TimestampMicrosecondBuilder::new().with_timezone("UTC"), n),
            TimestampMicrosList,
            |b, v| b.append_value(v.iter().map(|x| Some(*x))),
            |z| z.append(true)
        ),
    };
    if mistyped > 0 {
        tracing::warn!(column = %field.name(), mistyped, "extractor values of another type than their column's were written as null");
    }
    Ok(array)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;

    use super::*;

    #[test]
    fn tuning_round_trips_through_field_metadata_and_is_stripped_for_the_footer() {
        let f = Field::new("x", DataType::Utf8, true).tuned(Tuning::DISTINCT);
        assert_eq!(Tuning::of(&f), Tuning::DISTINCT);
        assert_eq!(Tuning::of(&Field::new("y", DataType::Int32, true).tuned(Tuning::SMALL)), Tuning::SMALL);
        assert_eq!(Tuning::of(&Field::new("z", DataType::Int32, true)), Tuning::DEFAULT);
        let schema = Arc::new(Schema::new(vec![f, Field::new("z", DataType::Int32, true)]));
        let bare = without_tuning(&schema);
        assert!(bare.fields().iter().all(|f| f.metadata().is_empty()), "{bare:?}");
        assert_eq!(bare.field(0).data_type(), &DataType::Utf8);
        assert!(Arc::ptr_eq(&without_tuning(&bare), &bare), "an untuned schema is kept as it is");
    }

    #[test]
    fn builders_follow_the_column_type_and_mistyped_values_are_null() {
        let vals = [Value::Int64(7), Value::Utf8("no".into()), Value::Null];
        let rows = [Some(&vals[0]), Some(&vals[1]), Some(&vals[2]), None];
        let nullable = build_column(&Field::new("n", DataType::Int64, true), rows.iter().copied()).expect("built");
        let n = nullable.as_primitive::<Int64Type>();
        assert_eq!((n.value(0), n.null_count()), (7, 3));
        let zeroes = build_column(&Field::new("n", DataType::Int64, false), rows.iter().copied()).expect("built");
        assert_eq!(zeroes.as_primitive::<Int64Type>().values().to_vec(), vec![7, 0, 0, 0]);
        let list = Value::Utf8List(vec!["a".into(), "b".into()]);
        let l = build_column(&Field::new("l", ColumnType::Utf8List.data_type(), true), [Some(&list), None].into_iter())
            .expect("built");
        assert_eq!(l.as_list::<i32>().value(0).as_string::<i32>().value(1), "b");
        assert!(l.is_null(1));
        assert!(build_column(&Field::new("d", DataType::Date64, true), [None].into_iter()).is_err());
    }

    #[test]
    fn dates_and_typed_lists_build_arrays_of_their_schema_type() {
        use arrow_array::types::{Date32Type, Float64Type, TimestampMicrosecondType};

        let all = [
            ColumnType::Bool,
            ColumnType::Int32,
            ColumnType::Int64,
            ColumnType::Float64,
            ColumnType::Utf8,
            ColumnType::Binary,
            ColumnType::Utf8List,
            ColumnType::TimestampMicros,
            ColumnType::Date32,
            ColumnType::Int64List,
            ColumnType::Float64List,
            ColumnType::BoolList,
            ColumnType::Date32List,
            ColumnType::TimestampMicrosList,
        ];
        for t in all {
            assert_eq!(ColumnType::of(&t.data_type()), Some(t), "{t:?}");
        }

        let build = |t: ColumnType, nullable: bool, rows: &[Option<&Value>]| {
            let a = build_column(&Field::new("c", t.data_type(), nullable), rows.iter().copied()).expect("built");
            assert_eq!(a.data_type(), &t.data_type(), "{t:?}: the array has the schema's type");
            a
        };
        let day = Value::Date32(20_526);
        let d = build(ColumnType::Date32, true, &[Some(&day), Some(&Value::Int64(1)), None]);
        assert_eq!((d.as_primitive::<Date32Type>().value(0), d.null_count()), (20_526, 2));

        let ints = Value::Int64List(vec![1, 2, 3]);
        let l = build(ColumnType::Int64List, true, &[Some(&ints), Some(&Value::Int64List(vec![])), None]);
        let l = l.as_list::<i32>();
        assert_eq!(l.value(0).as_primitive::<Int64Type>().values().to_vec(), vec![1, 2, 3]);
        assert_eq!((l.value(1).len(), l.is_null(1), l.is_null(2)), (0, false, true));

        let floats = Value::Float64List(vec![1.5, -2.0]);
        let f = build(ColumnType::Float64List, true, &[Some(&floats)]);
        assert_eq!(f.as_list::<i32>().value(0).as_primitive::<Float64Type>().value(1), -2.0);

        let bools = Value::BoolList(vec![true, false]);
        let b = build(ColumnType::BoolList, true, &[Some(&bools), Some(&ints)]);
        let b = b.as_list::<i32>();
        assert!(b.value(0).as_boolean().value(0) && !b.value(0).as_boolean().value(1));
        assert!(b.is_null(1), "an Int64List in a BoolList column is null");

        let days = Value::Date32List(vec![0, 1]);
        let dl = build(ColumnType::Date32List, true, &[Some(&days)]);
        assert_eq!(dl.as_list::<i32>().value(0).as_primitive::<Date32Type>().value(1), 1);

        let instants = Value::TimestampMicrosList(vec![1_700_000_000_000_000]);
        let tl = build(ColumnType::TimestampMicrosList, true, &[Some(&instants)]);
        let tl = tl.as_list::<i32>();
        assert_eq!(tl.value(0).as_primitive::<TimestampMicrosecondType>().value(0), 1_700_000_000_000_000);

        // Not nullable: a missing or mistyped row is the empty list.
        let z = build(ColumnType::TimestampMicrosList, false, &[None, Some(&day)]);
        let z = z.as_list::<i32>();
        assert_eq!((z.null_count(), z.value(0).len(), z.value(1).len()), (0, 0, 0));
    }
}
