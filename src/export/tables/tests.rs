use super::*;
use arrow_array::{StringArray, UInt64Array};

#[test]
fn every_table_names_its_key_and_index_columns() {
    for t in ALL {
        let names: Vec<&str> = t.columns.iter().map(|c| c.name).collect();
        for k in t.key.iter().chain(t.indexes.iter().flat_map(|(_, c)| c.iter())) {
            assert!(names.contains(k), "{}: {k} is not a column", t.name);
        }
    }
}

#[test]
fn ddl_quotes_keywords_and_states_the_keys() {
    let sql = ENTITIES.create_sql(Dialect::Postgres);
    assert!(sql.contains("\"offset\" BIGINT"), "{sql}");
    assert!(sql.contains("PRIMARY KEY (\"url\", \"layer\", \"ord\")"), "{sql}");
    let sql = DOC.create_sql(Dialect::Sqlite);
    assert!(sql.contains("FOREIGN KEY (\"content_hash\") REFERENCES \"content\" (\"content_hash\")"), "{sql}");
    assert!(sql.contains("\"fetched_at\" TEXT"), "{sql}");
}

// Its Float32 column is cast to the table's Float64 (feature `sql`).
#[cfg(feature = "sql")]
#[test]
fn links_are_numbered_per_page_and_missing_columns_are_null() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("src_url", DataType::Utf8, false),
        Field::new("dst_url", DataType::Utf8, false),
        Field::new("block_ratio", DataType::Float32, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["a", "a", "b", "a"])),
            Arc::new(StringArray::from(vec!["x", "x", "y", "z"])),
            Arc::new(arrow_array::Float32Array::from(vec![0.5, 0.25, 0.0, 1.0])),
        ],
    )
    .expect("batch");
    let mut ords = Ordinals::default();
    let rows = normalise(Dataset::Links, &batch, "links/layer=2/x.parquet", 2, &mut ords).expect("rows");
    let ord = rows.column_by_name("ord").expect("ord").as_primitive::<arrow_array::types::Int32Type>();
    assert_eq!(ord.values().to_vec(), vec![0, 1, 0, 2]);
    let layer = rows.column_by_name("layer").expect("layer").as_primitive::<arrow_array::types::Int32Type>();
    assert!(layer.values().iter().all(|&l| l == 2));
    assert_eq!(rows.column_by_name("score").expect("score").null_count(), 4, "no score column in the file");
    assert_eq!(rows.column_by_name("block_ratio").expect("ratio").data_type(), &DataType::Float64);
}

#[test]
fn content_is_sent_once_per_hash_and_old_unsigned_hashes_keep_their_bits() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("content_hash", DataType::UInt64, true),
        Field::new("text", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from(vec![Some(u64::MAX), Some(7), Some(u64::MAX), None])),
            Arc::new(StringArray::from(vec![Some("a"), Some("b"), Some("a"), None])),
        ],
    )
    .expect("batch");
    let mut seen = std::collections::HashSet::new();
    let (rows, again) = content_rows(&batch, "doc/layer=0/x.parquet", &mut seen).expect("rows");
    assert_eq!((rows.num_rows(), again), (2, 1));
    let hash = rows.column(0).as_primitive::<arrow_array::types::Int64Type>();
    assert_eq!(hash.values().to_vec(), vec![-1, 7]);
    let (rows, again) = content_rows(&batch, "doc/layer=1/x.parquet", &mut seen).expect("rows");
    assert_eq!((rows.num_rows(), again), (0, 3), "every hash already sent");
}

#[test]
fn a_column_of_another_type_is_named() {
    let schema = Arc::new(Schema::new(vec![Field::new("url", DataType::Int32, false)]));
    let batch = RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(vec![1]))]).expect("batch");
    let err = normalise(Dataset::Doc, &batch, "doc/layer=0/data-00000.parquet", 0, &mut Ordinals::default())
        .expect_err("an int url");
    let msg = err.to_string();
    assert!(msg.contains("doc/layer=0/data-00000.parquet") && msg.contains("url"), "{msg}");
}
