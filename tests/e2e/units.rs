//! Units of work on their own: one partition of one layer's map, run from
//! a test given only the data store, the layer and the partition number
//! (docs/src/contributing.md, "Units of work"), gives the rows the whole crawl gave.

use crate::common;

use std::collections::BTreeMap;

use common::{read_docs, Doc, Web};
use layercrawl::error::StageError;
use layercrawl::map::{map_partition, MapCtx};
use layercrawl::store::Store;
use testweb::FarmConfig;

/// Status, error, title and content hash of a URL.
type Row = (i32, Option<String>, Option<String>, Option<u64>);

/// What must come out the same, per URL.
fn rows(docs: impl IntoIterator<Item = Doc>) -> BTreeMap<String, Row> {
    docs.into_iter().map(|d| (d.url, (d.status, d.error, d.title, d.content_hash))).collect()
}

#[test]
fn one_partition_of_one_layer_maps_from_the_data_store_alone() {
    let web = Web::start(FarmConfig { sites: 4, pages: 25, faults: false, seed: 5, ..FarmConfig::default() });
    let data = web.dir("data");
    web.crawl(&data, 1, &["--delay", "0", "--partitions", "4", "--denoise", "off"]);

    // The whole crawl's layer 1 is the reference; with it moved aside and
    // one partition's commit removed, that partition is mapped again alone.
    let reference = web.dir("reference");
    std::fs::create_dir_all(reference.join("doc/layer=1")).expect("mkdir");
    std::fs::rename(data.join("doc/layer=1/data-00000.parquet"), reference.join("doc/layer=1/data-00000.parquet"))
        .expect("move the merged layer aside");
    let before = read_docs(&reference);
    let mut sizes = BTreeMap::new();
    for d in &before {
        *sizes.entry(d.partition).or_insert(0usize) += 1;
    }
    let (&part, &n) = sizes.iter().max_by_key(|(_, n)| **n).expect("layer 1 has rows");
    assert!(n >= 10, "partition {part} has only {n} rows in layer 1");
    let want = rows(before.into_iter().filter(|d| d.partition == part));
    let part = u32::try_from(part).expect("a partition number");
    std::fs::remove_file(data.join(format!("state/manifest/layer=1/map-{part:05}.json"))).expect("uncommit");

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let manifest = runtime.block_on(async {
        let store = Store::open(data.to_str().expect("utf8")).expect("open the data store");
        let ctx = MapCtx::open(store).await.expect("a map context from the data store alone");
        map_partition(&ctx, 1, part).await.expect("the map task")
    });
    assert_eq!(manifest.fetched as usize, want.len());
    assert!(data.join(format!("state/manifest/layer=1/map-{part:05}.json")).exists(), "the task committed");
    let got = rows(read_docs(&data).into_iter().filter(|d| d.layer == 1));
    assert_eq!(got, want, "the partition alone gives the rows the whole crawl gave");
    assert!(got.values().filter(|r| r.0 == 200).count() >= 10, "pages were really fetched: {got:?}");
}

#[test]
fn a_unit_of_work_on_an_empty_data_store_says_what_is_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let err = runtime
        .block_on(async { MapCtx::open(Store::open(tmp.path().to_str().expect("utf8")).expect("open")).await })
        .err()
        .expect("no crawl started there");
    assert!(matches!(err, StageError::NotStarted { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("state/run.json") && msg.contains("layercrawl run"), "{msg}");
}

#[test]
fn a_task_takes_its_partition_from_the_scheduler_and_is_idempotent() {
    let web = Web::start(FarmConfig { sites: 2, pages: 10, faults: false, seed: 3, ..FarmConfig::default() });
    let data = web.dir("data");
    web.crawl(&data, 0, &["--delay", "0", "--partitions", "3"]);
    let task = |env: Option<(&str, &str)>, extra: &[&str]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"));
        c.args(["task", "map", "--data", data.to_str().expect("utf8"), "--layer", "0", "--json"]).args(extra);
        c.env_remove("JOB_COMPLETION_INDEX");
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        c.output().expect("run task")
    };
    // Committed by the crawl: the task does nothing and says so.
    let out = task(Some(("JOB_COMPLETION_INDEX", "2")), &["--partition-from-env", "JOB_COMPLETION_INDEX"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!((report["partition"].as_u64(), report["outcome"].as_str()), (Some(2), Some("already committed")));
    // Bad input is exit code 2, naming what is wrong.
    let out = task(None, &["--partition-from-env", "JOB_COMPLETION_INDEX"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("JOB_COMPLETION_INDEX is not set"));
    let out = task(None, &["--partition", "7"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("partition 7 is not one of the crawl's 3 partitions"));
}
