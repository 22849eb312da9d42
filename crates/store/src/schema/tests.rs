use super::*;

#[test]
fn input_rows_round_trip() {
    let row = |url: &str, depth, referrer: Option<&str>| InRow {
        url: url.into(),
        depth,
        referrer: referrer.map(Into::into),
        priority: None,
        anchor: None,
        retries: 0,
    };
    let rows = vec![
        row("http://a.test/", 0, None),
        row("http://a.test/x", 2, Some("http://a.test/")),
        InRow {
            priority: Some(750_000),
            anchor: Some("Offshore wind".into()),
            ..row("http://a.test/y", 2, Some("http://b.test/"))
        },
        InRow { priority: Some(0), anchor: Some(String::new()), ..row("http://a.test/z", 3, Some("http://a.test/")) },
        row("http://b.test/", 0, None),
    ];
    let b = input_batch(&rows).expect("batch");
    assert_eq!(input_rows(&b, "t").expect("rows"), rows);
}

#[test]
fn inputs_written_before_the_priority_and_anchor_columns_still_read() {
    // An `in` file of an older version: url, depth, referrer only.
    let b = RecordBatch::try_from_iter([
        ("url", Arc::new(StringArray::from(vec!["http://a.test/"])) as ArrayRef),
        ("depth", Arc::new(arrow_array::Int32Array::from(vec![1])) as ArrayRef),
        ("referrer", Arc::new(StringArray::from(vec![Some("http://b.test/")])) as ArrayRef),
    ])
    .expect("batch");
    let rows = input_rows(&b, "in/layer=1/part-00000.parquet").expect("an old input reads");
    assert_eq!(
        rows,
        [InRow {
            url: "http://a.test/".into(),
            depth: 1,
            referrer: Some("http://b.test/".into()),
            priority: None,
            anchor: None,
            retries: 0,
        }]
    );
}

#[test]
fn doc_batch_matches_schema_with_nulls() {
    let row = DocRow { url: "http://a.test/".into(), status: 200, content_hash: Some(u64::MAX), ..DocRow::default() };
    let b = doc_batch(&[row.clone(), DocRow { error: Some(ErrorKind::Timeout), ..row }]).expect("batch");
    assert_eq!(b.num_rows(), 2);
    assert_eq!(b.schema(), doc_schema());
    let err = string_col(&b, "error", "t").expect("col");
    assert!(err.is_null(0));
    assert_eq!(err.value(1), "timeout");
    let hash = b.column_by_name("content_hash").expect("col").as_primitive::<Int64Type>();
    assert_eq!(hash.value(0), -1, "u64::MAX is all ones: -1 as a signed integer");
}

#[test]
fn error_kinds_keep_their_names() {
    // The book's vocabulary of the `error` column (docs/src/output.md): these strings are in users' files.
    let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "timeout",
            "dns",
            "connect",
            "blocked",
            "reset",
            "decode",
            "too_large",
            "robots",
            "redirect_loop",
            "too_many_redirects",
            "bad_redirect",
            "internal",
            "parse_panic",
            "too_slow",
            "host_down"
        ]
    );
    for k in ErrorKind::ALL {
        assert_eq!(k.as_str().parse::<ErrorKind>(), Ok(k));
    }
    assert!("http_4xx".parse::<ErrorKind>().is_err());
}

#[test]
fn content_hashes_round_trip_as_int64_and_old_uint64_files_still_read() {
    let rows = vec![(0, "a".to_string()), (u64::MAX, "b".to_string()), (1 << 63, "c".to_string())];
    let b = content_batch(&rows).expect("batch");
    assert_eq!(b.schema().field(0).data_type(), &DataType::Int64);
    let back: Vec<(u64, String)> = content_rows(&b, "t").expect("rows").map(|(h, u)| (h, u.to_string())).collect();
    assert_eq!(back, rows);
    let old = Schema::new(vec![
        Field::new("content_hash", DataType::UInt64, false),
        Field::new("url", DataType::Utf8, false),
    ]);
    let hashes: UInt64Array = rows.iter().map(|r| Some(r.0)).collect();
    let urls: StringArray = rows.iter().map(|r| Some(r.1.as_str())).collect();
    let b = RecordBatch::try_new(Arc::new(old), vec![Arc::new(hashes), Arc::new(urls)]).expect("old batch");
    let back: Vec<(u64, String)> = content_rows(&b, "t").expect("rows").map(|(h, u)| (h, u.to_string())).collect();
    assert_eq!(back, rows);
}

#[test]
fn noise_labels_round_trip_and_unknown_ones_are_refused() {
    let row = LinkRow::followed("http://a.test/", "http://a.test/x", 1);
    let mut rows = vec![row.clone()];
    rows.extend(NoiseLabel::ALL.map(|l| LinkRow { noise: Some(l), ..row.clone() }));
    let b = links_batch(&rows).expect("batch");
    let want: Vec<Option<NoiseLabel>> = rows.iter().map(|r| r.noise).collect();
    assert_eq!(noise_labels(&b, "t").expect("labels"), want);
    assert_eq!(string_col(&b, "noise", "t").expect("col").value(3), "dom_ratio");
    let mut cols = b.columns().to_vec();
    cols[4] = Arc::new(StringArray::from(vec![Some("spam"); rows.len()]));
    let bad = RecordBatch::try_new(b.schema(), cols).expect("batch");
    assert!(noise_labels(&bad, "t").is_err());
}
