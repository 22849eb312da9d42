//! `--warc` end to end: crawls of the test web written as WARC files,
//! checked with the web archiving community's own tools (warcio and
//! cdxj-indexer, from PyPI into target/pyenv by scripts/pyenv.sh) through
//! `tests/warc.py`, and against the crawl's `doc` rows.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::objstores::{Kind, Server};
use common::{crawl_ok, read_docs, Web};
use testweb::FarmConfig;

/// What tests/warc.py read from a data folder's archives.
fn inspect(data: &Path, farm: Option<&str>) -> Value {
    let mut cmd = Command::new(common::pyenv_python());
    cmd.arg(format!("{}/tests/warc.py", env!("CARGO_MANIFEST_DIR"))).arg(data);
    cmd.args(farm);
    let out = cmd.output().expect("run python");
    assert!(out.status.success(), "warc.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_default()
}

/// Every file passes `warcio check`, which verifies each record's block
/// and payload digests.
fn assert_checked(got: &Value) {
    let checks = got["checks"].as_object().expect("checks");
    assert!(!checks.is_empty(), "no WARC file");
    for (file, c) in checks {
        assert_eq!(c["code"], 0, "warcio check {file}:\n{}", s(c, "output"));
        let out = s(c, "output");
        assert!(!out.contains("digest failed") && out.contains("digest pass"), "{file}:\n{out}");
    }
}

/// Requests and responses come in pairs, each naming the other, and no
/// record id is written twice.
fn assert_paired(records: &[Value]) {
    let ids: Vec<&str> = records.iter().map(|r| s(r, "id")).collect();
    let distinct: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "a record id written twice");
    let by_id: BTreeMap<&str, &Value> = records.iter().map(|r| (s(r, "id"), r)).collect();
    let mut requests = 0;
    for r in records.iter().filter(|r| r["type"] == "request") {
        requests += 1;
        let answer = by_id[s(r, "concurrent_to")];
        assert!(answer["type"] == "response" || answer["type"] == "revisit", "{r} -> {answer}");
        assert_eq!(s(answer, "concurrent_to"), s(r, "id"), "the response names its request");
        assert_eq!(s(answer, "target"), s(r, "target"));
        assert_eq!(s(answer, "date"), s(r, "date"));
        assert_eq!(r["method"], "GET");
        assert!(s(r, "user_agent").starts_with("layercrawl/"), "{r}");
        assert_eq!(s(r, "content_type"), "application/http;msgtype=request");
    }
    let answers = records.iter().filter(|r| r["type"] == "response" || r["type"] == "revisit").count();
    assert_eq!(requests, answers, "one request per response");
    let infos = records.iter().filter(|r| r["type"] == "warcinfo").count();
    let files: BTreeSet<&str> = records.iter().map(|r| s(r, "file")).collect();
    assert_eq!(infos, files.len(), "one warcinfo per file");
    for r in records.iter().filter(|r| r["type"] == "response") {
        assert_eq!(s(r, "payload_digest"), s(r, "payload_sha1"), "payload digest of {}", s(r, "target"));
        // The head describes the body the record holds (docs/src/warc.md).
        assert_eq!(r["http_content_length"].as_str(), Some(r["payload_len"].to_string().as_str()), "{r}");
        assert!(r["transfer_encoding"].is_null(), "{r}");
        assert_eq!(s(r, "ip"), "127.0.0.1");
    }
}

/// Each index line leads to its record, the index is sorted, and
/// cdxj-indexer makes the same index of the file.
fn assert_indexed(got: &Value) {
    let index = got["index"].as_array().expect("index");
    let answers = got["records"]
        .as_array()
        .expect("records")
        .iter()
        .filter(|r| r["type"] == "response" || r["type"] == "revisit")
        .count();
    assert_eq!(index.len(), answers, "one index line per response");
    for line in index {
        let e = &line["entry"];
        assert_eq!(line["records_in_member"], 1, "{line}");
        assert_eq!(s(e, "url"), s(line, "found_target"), "{line}");
        assert_eq!(s(line, "ts"), s(line, "found_ts"), "{line}");
        assert_eq!(s(e, "digest"), s(line, "found_digest"), "{line}");
        assert_eq!(s(e, "status"), s(line, "found_status"), "{line}");
        assert!(s(e, "filename").starts_with("warc/layer="), "{line}");
    }
    for (file, i) in got["indexer"].as_object().expect("indexer") {
        assert_eq!(i["sorted"], true, "{file}");
        assert_eq!(i["same_as_cdxj_indexer"], true, "{file}: {i}");
    }
}

#[test]
fn a_crawl_with_warc_writes_records_that_warcio_and_cdxj_indexer_accept() {
    // The faults host adds redirect chains, truncated and cut bodies, a
    // gzip body, error statuses and robots.txt-denied URLs.
    let web =
        Web::start(FarmConfig { sites: 3, pages: 30, faults: true, seed: 23, slow_ms: 300, ..FarmConfig::default() });
    let data = web.dir("data");
    let summary = web.crawl(
        &data,
        2,
        &[
            "--warc",
            "--delay",
            "0",
            "--per-host",
            "4",
            "--partitions",
            "3",
            "--timeout",
            "20s",
            "--retries",
            "0",
            "--straggler-after",
            "off",
        ],
    );
    assert!(summary["merged"]["doc_rows"].as_u64().unwrap_or(0) > 60, "{summary}");
    let got = inspect(&data, Some(&web.farm.addr().to_string()));
    assert_checked(&got);
    let records = got["records"].as_array().expect("records");
    assert_paired(records);
    assert_indexed(&got);

    let docs = read_docs(&data);
    let responses: Vec<&Value> = records.iter().filter(|r| r["type"] == "response").collect();
    let by_target = |url: &str, layer: i32| -> Vec<&Value> {
        responses.iter().copied().filter(|r| s(r, "target") == url && r["layer"] == layer).collect()
    };
    let mut ok = 0;
    for d in &docs {
        if d.error.as_deref() == Some("robots") || d.status == 0 {
            // Nothing was exchanged: no record names the URL.
            assert!(by_target(&d.url, d.layer).is_empty(), "{} has no response but a record", d.url);
            continue;
        }
        // The first request of every fetched URL is its own.
        assert!(
            records.iter().any(|r| r["type"] == "request" && s(r, "target") == d.url && r["layer"] == d.layer),
            "no request for {}",
            d.url
        );
        if (200..300).contains(&d.status) && d.error.is_none() {
            ok += 1;
            // (A page reached twice in a layer, as a redirect's target
            // and as a link, is fetched and recorded twice.)
            let found = by_target(&d.final_url, d.layer);
            assert!(
                found.iter().any(|r| r["status"] == d.status && r["payload_len"].as_i64() == Some(d.content_length)),
                "no response of {} bytes with status {} for {} in layer {}: {found:?}",
                d.content_length,
                d.status,
                d.final_url,
                d.layer
            );
        }
    }
    assert!(ok > 60, "only {ok} pages fetched");
    // The redirect chain of the faults host: three 3xx responses, then the page.
    for (hop, status) in [("3", 307), ("2", 303), ("1", 302)] {
        let url = format!("http://faults.test/redirect/chain/{hop}");
        let r = responses.iter().find(|r| s(r, "target") == url).unwrap_or_else(|| {
            let faults: Vec<_> = docs
                .iter()
                .filter(|d| d.host == "faults.test")
                .map(|d| (&d.url, d.layer, d.status, &d.error))
                .collect();
            panic!("no record of {url}; the faults host's rows: {faults:?}")
        });
        assert_eq!(r["status"], status, "{r}");
    }
    // Truncated bodies say so: the capped page, the connection reset.
    let truncated = |path: &str| {
        let url = format!("http://faults.test{path}");
        responses.iter().find(|r| s(r, "target") == url).map(|r| s(r, "truncated").to_string())
    };
    assert_eq!(truncated("/big").as_deref(), Some("length"));
    assert_eq!(truncated("/reset").as_deref(), Some("disconnect"));
    assert_eq!(truncated("/ok").as_deref(), Some(""));
    // The gzip body is stored decoded, its head saying nothing of gzip.
    let bomb = responses.iter().find(|r| s(r, "target") == "http://faults.test/gzip-bomb").expect("gzip bomb");
    assert_eq!(bomb["payload_len"], 10 << 20, "decoded up to the 10 MiB cap");
    // Payloads are the pages as the test web serves them.
    let direct = got["direct"].as_array().expect("direct");
    assert!(direct.len() >= 5, "{direct:?}");
    for d in direct {
        assert_eq!(d["same"], true, "{d}");
    }
}

/// What a crawl archived, for comparing two: each record's layer, type,
/// target and HTTP status, counted.
fn archived(got: &Value) -> BTreeMap<(i64, String, String, i64), usize> {
    let mut m = BTreeMap::new();
    for r in got["records"].as_array().expect("records") {
        let key = (
            r["layer"].as_i64().unwrap_or(-1),
            s(r, "type").to_string(),
            s(r, "target").to_string(),
            r["status"].as_i64().unwrap_or(0),
        );
        *m.entry(key).or_insert(0) += 1;
    }
    m
}

#[test]
fn killed_and_resumed_the_archive_has_every_record_once_and_none_cut() {
    let cfg = FarmConfig { sites: 5, pages: 80, faults: false, seed: 29, latency_ms: (5, 15), ..FarmConfig::default() };
    let web = Web::start(cfg);
    let args = |data: &Path| web.run_args(data, 3, &["--warc", "--delay", "0", "--per-host", "2", "--partitions", "4"]);
    let reference = web.dir("reference");
    let t = Instant::now();
    crawl_ok(&args(&reference));
    let whole = t.elapsed();

    // Each run is killed a little after an eighth of the crawl's tasks more
    // have committed (the archive is written as the pages are), then once
    // more after the last task.
    let tasks = common::committed_tasks(&reference);
    let killed = web.dir("killed");
    let mut kills = 0;
    for then_ms in [0, 60, 15, 100, 30, 5] {
        let then = Duration::from_millis(then_ms);
        kills += usize::from(common::kill_after_tasks(&args(&killed), &killed, (tasks / 8).max(1), then));
    }
    let left = tasks.saturating_sub(common::committed_tasks(&killed));
    kills += usize::from(common::kill_after_tasks(&args(&killed), &killed, left, Duration::from_millis(5)));
    assert!(kills >= 5, "only {kills} runs were still going when killed (reference took {:.1} s)", whole.as_secs_f64());
    crawl_ok(&args(&killed));

    let (want, got) = (inspect(&reference, None), inspect(&killed, None));
    assert_checked(&got);
    let records = got["records"].as_array().expect("records");
    assert_paired(records);
    assert_indexed(&got);
    assert!(want["records"].as_array().expect("records").len() > 300, "reference crawl too small");
    assert_eq!(archived(&got), archived(&want), "the same records after {kills} kills");
    // No staging file or stray part is left in the archive's folders.
    let mut names = BTreeSet::new();
    for layer in std::fs::read_dir(killed.join("warc")).expect("warc folder") {
        for f in std::fs::read_dir(layer.expect("entry").path()).expect("layer folder") {
            names.insert(f.expect("entry").file_name().to_string_lossy().into_owned());
        }
    }
    assert!(
        names.iter().all(|n| n.starts_with("part-") && (n.ends_with(".warc.gz") || n.ends_with(".cdxj"))),
        "{names:?}"
    );
    // The resumed crawl's index is the reference's, record for record.
    let lines = |g: &Value| g["index"].as_array().expect("index").len();
    assert_eq!(lines(&got), lines(&want));
}

#[test]
fn a_recrawl_records_each_304_as_a_revisit_of_last_nights_page() {
    let web = Web::start(FarmConfig { sites: 2, pages: 30, faults: false, seed: 31, ..FarmConfig::default() });
    let (night1, night2) = (web.dir("night1"), web.dir("night2"));
    web.crawl(&night1, 1, &["--delay", "0"]);
    let previous = night1.display().to_string();
    web.crawl(&night2, 1, &["--delay", "0", "--warc", "--previous", &previous]);
    let got = inspect(&night2, None);
    assert_checked(&got);
    let records = got["records"].as_array().expect("records");
    assert_paired(records);
    assert_indexed(&got);
    let by_id: BTreeMap<&str, &Value> = records.iter().map(|r| (s(r, "id"), r)).collect();
    let revisits: Vec<&Value> = records.iter().filter(|r| r["type"] == "revisit").collect();
    let unchanged: Vec<_> = read_docs(&night2).into_iter().filter(|d| d.unchanged).collect();
    assert!(unchanged.len() > 20, "only {} pages carried forward", unchanged.len());
    assert_eq!(revisits.len(), unchanged.len(), "one revisit per page carried forward");
    for d in &unchanged {
        let r = revisits
            .iter()
            .find(|r| s(r, "target") == d.final_url)
            .unwrap_or_else(|| panic!("no revisit of {}", d.url));
        assert_eq!(r["status"], 304, "{r}");
        assert_eq!(r["payload_len"], 0, "a 304 has no body: {r}");
        assert_eq!(by_id[s(r, "concurrent_to")]["conditional"], true, "the request carried last night's validators");
    }
    // The index lists them as revisits.
    let index = got["index"].as_array().expect("index");
    let listed = index.iter().filter(|l| l["entry"]["mime"] == "warc/revisit" && l["entry"]["status"] == "304").count();
    assert_eq!(listed, revisits.len());
}

#[test]
fn on_s3_the_archive_is_uploaded_in_parts_and_holds_what_a_local_one_holds() {
    // Large pages, one partition: an archive of several 5 MiB upload parts.
    let web =
        Web::start(FarmConfig { sites: 1, pages: 60, page_kb: 1024, faults: false, seed: 37, ..FarmConfig::default() });
    let args = ["--warc", "--delay", "0", "--partitions", "1"];
    let local = web.dir("local");
    web.crawl(&local, 1, &args);
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "archive");
    let mut cmd = s3.command();
    cmd.args(web.run_args(Path::new(&data), 1, &args));
    let out = cmd.output().expect("run");
    assert!(out.status.success(), "the s3 crawl failed: {}", String::from_utf8_lossy(&out.stderr));
    let copy = web.dir("s3-copy");
    s3.download("crawl", "archive", &copy);
    let archive = copy.join("warc/layer=1/part-00000.warc.gz");
    let size = std::fs::metadata(&archive).map_or(0, |m| m.len());
    assert!(size > 5 << 20, "{size} bytes: not more than one 5 MiB upload part");
    let (want, got) = (inspect(&local, None), inspect(&copy, None));
    assert_checked(&got);
    assert_paired(got["records"].as_array().expect("records"));
    assert_indexed(&got);
    assert_eq!(archived(&got), archived(&want), "the same records as in a local folder");
}

#[test]
fn without_warc_no_archive_is_written() {
    let web = Web::start(FarmConfig { sites: 2, pages: 10, faults: false, seed: 3, ..FarmConfig::default() });
    let data = web.dir("data");
    web.crawl(&data, 1, &["--delay", "0"]);
    assert!(!read_docs(&data).is_empty());
    assert!(!data.join("warc").exists(), "a warc folder without --warc");
    assert!(!data.join("state/warc.json").exists());
}
