//! Tests of the shard writer and readers: tuning per column, round trips
//! on a local folder and on object storage, the data page format.

use super::*;
use crate::schema::{input_batch, input_rows, input_schema, InRow};
use crate::Compression;
use parquet::basic::Encoding;

/// Each file's columns keep the tuning they had when it was two lists
/// of column names, now that the fields carry it; the footers record
/// the schema without it. (The noise filter's files are checked beside
/// their schemas, in the crawler's denoise module.)
#[tokio::test]
async fn every_schema_keeps_its_column_tuning_and_footers_do_not_carry_it() {
    const UNIQUE_VALUED: &[&str] = &["url", "final_url", "body", "text", "fetched_at", "etag"];
    const UNCOMPRESSED: &[&str] = &[
        "host",
        "domain",
        "depth",
        "partition",
        "status",
        "error",
        "error_detail",
        "fetch_ms",
        "redirects",
        "content_type",
        "charset",
        "truncated",
        "content_hash",
        "outlinks",
        "noise_links",
        "unchanged",
        "rendered",
    ];
    use crate::schema::{content_schema, doc_batch, doc_schema, links_schema, DocRow};
    let zstd = Compression::Zstd(1).codec();
    for schema in [doc_schema(), links_schema(), input_schema(), content_schema()] {
        let props = shard_properties(zstd, &schema, 1 << 20);
        for f in schema.fields() {
            let col = parquet::schema::types::ColumnPath::from(f.name().as_str());
            assert_eq!(props.dictionary_enabled(&col), !UNIQUE_VALUED.contains(&f.name().as_str()), "{}", f.name());
            let plain = props.compression(&col) == parquet::basic::Compression::UNCOMPRESSED;
            assert_eq!(plain, UNCOMPRESSED.contains(&f.name().as_str()), "{}", f.name());
            // Whole pages have no min/max statistics (`Tuning::BULK`).
            let stats = props.statistics_enabled(&col) != parquet::file::properties::EnabledStatistics::None;
            assert_eq!(stats, !["body", "text"].contains(&f.name().as_str()), "{}", f.name());
        }
    }
    let store = Store::open("memory://").expect("open");
    let mut w = ShardWriter::create(&store, "doc/layer=0/part-00000.parquet", doc_schema(), 1 << 20).expect("w");
    w.write(&doc_batch(&[DocRow::default()]).expect("batch")).await.expect("write");
    w.finish().await.expect("finish");
    let back = read_batches(&store, "doc/layer=0/part-00000.parquet", None).await.expect("read");
    assert!(back[0].schema().fields().iter().all(|f| f.metadata().is_empty()), "{:?}", back[0].schema());
    assert_eq!(back[0].schema().fields().len(), doc_schema().fields().len());
}

/// Shards are written as format 2 data pages (v2), in the encodings
/// every reader knows (plain, or a dictionary): the format-2 writer
/// left to itself would pick delta encodings for the columns without a
/// dictionary, which Spark before 3.4 cannot read.
#[tokio::test]
async fn shards_are_v2_pages_in_plain_or_dictionary_encodings() {
    use crate::schema::{doc_batch, doc_schema, DocRow};
    use parquet::column::page::Page;
    use parquet::file::reader::FileReader;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().to_str().expect("utf8")).expect("open");
    let rows: Vec<DocRow> = (0..300)
        .map(|i| DocRow {
            url: format!("http://s{}.test/p{i}", i % 3),
            status: 200,
            text: Some(format!("page {i} ").repeat(40 + i % 50)),
            title: (i % 4 != 0).then(|| format!("title {}", i % 7)),
            ..DocRow::default()
        })
        .collect();
    let path = "doc/layer=0/part-00000.parquet";
    let mut w = ShardWriter::create(&store, path, doc_schema(), 64 << 10).expect("w");
    for chunk in rows.chunks(50) {
        w.write(&doc_batch(chunk).expect("batch")).await.expect("write");
    }
    w.finish().await.expect("finish");
    let file = std::fs::File::open(dir.path().join(path)).expect("shard");
    let reader = parquet::file::serialized_reader::SerializedFileReader::new(file).expect("parquet");
    assert_eq!(reader.metadata().file_metadata().version(), 2, "format 2 in the footer");
    assert!(reader.metadata().num_row_groups() > 1, "row groups cut at 64 KiB");
    let (mut v2, mut dictionary) = (0, 0);
    for rg in 0..reader.metadata().num_row_groups() {
        let group = reader.get_row_group(rg).expect("row group");
        for c in 0..group.num_columns() {
            let name = group.metadata().column(c).column_path().string();
            let mut pages = group.get_column_page_reader(c).expect("pages");
            while let Some(page) = pages.get_next_page().expect("page") {
                match page {
                    Page::DataPageV2 { encoding, .. } => {
                        v2 += 1;
                        assert!(matches!(encoding, Encoding::PLAIN | Encoding::RLE_DICTIONARY), "{name}: {encoding}");
                    }
                    Page::DictionaryPage { .. } => dictionary += 1,
                    Page::DataPage { .. } => panic!("{name}: a v1 data page"),
                }
            }
        }
    }
    assert!(v2 > 0 && dictionary > 0, "{v2} data pages, {dictionary} dictionaries");
    let back: Vec<String> = read_batches(&store, path, Some(&["text"]))
        .await
        .expect("read")
        .iter()
        .flat_map(|b| {
            let t = crate::schema::string_col(b, "text", "t").expect("text");
            (0..b.num_rows()).map(|i| t.value(i).to_string()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(back, rows.iter().map(|r| r.text.clone().expect("text")).collect::<Vec<_>>());
}

#[tokio::test]
async fn shard_round_trip_on_local_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().to_str().expect("utf8")).expect("open");
    let rows: Vec<InRow> = (0..1000)
        .map(|i| InRow {
            url: format!("http://s{i}.test/"),
            depth: i % 4,
            referrer: None,
            priority: None,
            anchor: None,
            retries: 0,
        })
        .collect();
    let mut w = ShardWriter::create(&store, "in/layer=0/part-00000.parquet", input_schema(), 1 << 20).expect("w");
    w.write(&input_batch(&rows[..500]).expect("b")).await.expect("write");
    assert!(!dir.path().join("in/layer=0/part-00000.parquet").exists(), "not visible before finish");
    w.write(&input_batch(&rows[500..]).expect("b")).await.expect("write");
    assert!(dir.path().join("in/layer=0/.part-00000.parquet.staged").exists(), "written to a hidden staging file");
    assert_eq!(w.finish().await.expect("finish"), 1000);
    assert!(!dir.path().join("in/layer=0/.part-00000.parquet.staged").exists(), "renamed into place");
    let batches = read_batches(&store, "in/layer=0/part-00000.parquet", None).await.expect("read");
    let back: Vec<InRow> = batches.iter().flat_map(|b| input_rows(b, "t").expect("rows")).collect();
    assert_eq!(back, rows);
    let only_url = read_batches(&store, "in/layer=0/part-00000.parquet", Some(&["url"])).await.expect("read");
    assert_eq!(only_url[0].num_columns(), 1);
    let streamed: Vec<RecordBatch> = stream_batches(&store, "in/layer=0/part-00000.parquet", Some(&["url", "depth"]))
        .await
        .expect("open")
        .try_collect()
        .await
        .expect("stream");
    let urls: Vec<String> = streamed
        .iter()
        .flat_map(|b| {
            let u = crate::schema::string_col(b, "url", "t").expect("url");
            (0..b.num_rows()).map(|i| u.value(i).to_string()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(urls, rows.iter().map(|r| r.url.clone()).collect::<Vec<_>>());
    assert_eq!(streamed[0].num_columns(), 2);
    // A shard given up (an error, a cancelled task) leaves nothing behind.
    let mut w = ShardWriter::create(&store, "in/layer=1/part-00000.parquet", input_schema(), 1 << 20).expect("w");
    w.write(&input_batch(&rows).expect("b")).await.expect("write");
    drop(w);
    assert_eq!(std::fs::read_dir(dir.path().join("in/layer=1")).expect("dir").count(), 0, "no staging file left");
    let missing =
        stream_batches(&store, "in/layer=0/nope.parquet", None).await.err().expect("a missing file is an error");
    assert!(missing.to_string().contains("nope.parquet"), "{missing}");
}

#[tokio::test]
async fn shard_round_trip_on_object_storage_with_each_compression() {
    let mut sizes = Vec::new();
    for compression in [Compression::Zstd(19), Compression::Zstd(1), Compression::None] {
        let store = Store::open("memory://").expect("open").with_compression(compression);
        let rows: Vec<InRow> = (0..3000)
            .map(|i| InRow {
                url: format!("http://s{}.test/p{i}", i % 7),
                depth: 1,
                referrer: None,
                priority: None,
                anchor: None,
                retries: 0,
            })
            .collect();
        let mut w = ShardWriter::create(&store, "in/layer=0/part-00001.parquet", input_schema(), 16 << 10).expect("w");
        for chunk in rows.chunks(700) {
            w.write(&input_batch(chunk).expect("b")).await.expect("write");
        }
        assert!(!store.exists("in/layer=0/part-00001.parquet").await.expect("head"), "not visible before finish");
        assert_eq!(w.finish().await.expect("finish"), 3000);
        let bytes = store.get("in/layer=0/part-00001.parquet").await.expect("get").expect("written");
        let meta = parquet::file::reader::FileReader::metadata(
            &parquet::file::serialized_reader::SerializedFileReader::new(bytes.clone()).expect("parquet"),
        )
        .clone();
        assert!(meta.num_row_groups() > 1, "row groups cut at the byte size");
        let codec = meta.row_group(0).column(0).compression();
        assert_eq!(
            codec == parquet::basic::Compression::UNCOMPRESSED,
            compression == Compression::None,
            "{compression}: {codec}"
        );
        sizes.push(bytes.len());
        let batches = read_batches(&store, "in/layer=0/part-00001.parquet", None).await.expect("read");
        let back: Vec<InRow> = batches.iter().flat_map(|b| input_rows(b, "t").expect("rows")).collect();
        assert_eq!(back, rows);
    }
    assert!(sizes.is_sorted() && sizes[0] < sizes[2], "higher levels write smaller files: {sizes:?}");
}
