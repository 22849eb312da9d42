//! Interop: a crawl's output read by DuckDB, pyarrow and pandas from Python
//! (installed from PyPI into target/pyenv by scripts/pyenv.sh) must give the
//! same answers as the Parquet read back here.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;

use arrow_array::cast::AsArray;
use arrow_array::Array;

use testweb::{Farm, FarmConfig};

fn python() -> String {
    common::pyenv_python()
}

#[test]
fn duckdb_pyarrow_and_pandas_read_the_crawl() {
    let farm =
        Farm::start_background(FarmConfig { sites: 4, pages: 40, faults: false, seed: 11, ..FarmConfig::default() })
            .expect("farm");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("seeds");
    let data = tmp.path().join("data");
    let rule = farm.resolve_rule();
    common::crawl_ok(&[
        "run",
        "--seeds",
        seeds.to_str().expect("utf8"),
        "--depth",
        "2",
        "--data",
        data.to_str().expect("utf8"),
        "--resolve",
        &rule,
        "--allow-private",
        "--delay",
        "0",
        "--per-host",
        "4",
        "--partitions",
        "3",
        "--json",
        "--quiet",
    ]);
    let docs = common::read_docs(&data);
    let links = common::read_links(&data);
    assert!(docs.len() > 20, "crawl too small to compare: {} rows", docs.len());

    let out = Command::new(python())
        .arg(format!("{}/tests/interop.py", env!("CARGO_MANIFEST_DIR")))
        .arg(&data)
        .output()
        .expect("run python");
    assert!(out.status.success(), "interop.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");

    let n = docs.len() as u64;
    assert_eq!(got["rows"], n);
    assert_eq!(got["pyarrow_rows"], n);
    assert_eq!(got["pandas_rows"], n);
    assert_eq!(got["distinct_urls"], n, "one row per URL");
    assert_eq!(got["link_rows"], links.len() as u64);
    assert_eq!(got["content_hash_duckdb_type"], "BIGINT");
    assert_eq!(got["content_hash_arrow_type"], "int64");
    let hashes: std::collections::BTreeSet<u64> = docs.iter().filter_map(|d| d.content_hash).collect();
    assert_eq!(got["distinct_content_hashes"], hashes.len() as u64);

    let mut per_layer: BTreeMap<String, u64> = BTreeMap::new();
    let mut per_host: BTreeMap<String, u64> = BTreeMap::new();
    let mut status: BTreeMap<String, u64> = BTreeMap::new();
    for d in &docs {
        *per_layer.entry(d.layer.to_string()).or_default() += 1;
        *per_host.entry(d.host.clone()).or_default() += 1;
        *status.entry(d.status.to_string()).or_default() += 1;
    }
    assert_eq!(got["per_layer"], serde_json::to_value(&per_layer).expect("json"));
    assert_eq!(got["per_host"], serde_json::to_value(&per_host).expect("json"));
    assert_eq!(got["status"], serde_json::to_value(&status).expect("json"));
    assert_eq!(got["pandas_200"], status.get("200").copied().unwrap_or(0));
    assert_eq!(per_layer.len(), 3, "layers 0..=2 present: {per_layer:?}");
    let with_text = docs
        .iter()
        .filter(|d| d.status == 200 && d.error.is_none() && d.text.as_deref().is_some_and(|t| !t.is_empty()))
        .count();
    assert_eq!(got["ok_with_text"], with_text as u64);
    assert!(with_text > 20);

    // The main text and metadata columns.
    let (mut main_rows, mut langs) = (0u64, BTreeMap::<String, u64>::new());
    for (_, b) in common::read_all(&data.join("doc")) {
        let main = b.column_by_name("main_text").expect("main_text").as_string::<i32>();
        let lang = b.column_by_name("lang").expect("lang").as_string::<i32>();
        for i in 0..b.num_rows() {
            main_rows += u64::from(!main.is_null(i));
            if !lang.is_null(i) {
                *langs.entry(lang.value(i).to_string()).or_default() += 1;
            }
        }
    }
    assert!(main_rows > 20, "pages have a main text: {main_rows}");
    assert_eq!(got["main_text_rows"], main_rows);
    assert_eq!(got["pyarrow_main_text_rows"], main_rows);
    assert_eq!(got["lang"], serde_json::to_value(&langs).expect("json"));
    assert!(langs.contains_key("en"), "the test web is in English: {langs:?}");
    assert_eq!(got["main_text_arrow_type"], "string");
    assert_eq!(got["published_at_arrow_type"], "timestamp[us, tz=UTC]");
    assert_eq!(got["published_at_duckdb_type"], "TIMESTAMP WITH TIME ZONE");
}
