//! `layercrawl report` end to end: the real binary crawls the test web on
//! loopback, writes the report, and the figures embedded in the page are
//! checked against the crawl's Parquet read back here (no DuckDB) and its
//! summary; then headless Chromium opens the page, every chart must have
//! drawn, the graph views must answer the mouse, nothing may be logged as
//! an error, and a screenshot must not be blank. The screenshots are kept
//! in target/report-screenshots/; `LAYERCRAWL_DOCS=1` also saves the top of
//! the page and the link graph as docs/src/images/report.png and
//! report-graph.png (the book's crawl report page shows them).
//!
//! The browser part needs the cargo feature `render` (`cargo test
//! --features render --test e2e report::`). Chromium comes from Debian's
//! `chromium` package (`scripts/chromium.sh` installs it); without it the
//! test fails and says why.

#[cfg(feature = "render")]
#[path = "report/browser.rs"]
mod browser;
use crate::common;
#[path = "report/entities.rs"]
mod entities;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::Array;
use common::{layercrawl, read_all, Web};
use entities::{entity_figures, EntityFigures};
use serde_json::Value as Json;
use testweb::FarmConfig;

/// Runs `layercrawl report ARGS --json` and returns what it says it wrote.
fn report(args: &[&str]) -> Json {
    let out = layercrawl(&[&["report", "--json"], args].concat());
    assert!(out.status.success(), "layercrawl report {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("report --json printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// The figures embedded in a report page.
fn embedded(page: &Path) -> Json {
    let html = std::fs::read_to_string(page).expect("read the report");
    let json = html
        .split("<script type=\"application/json\" id=\"report-data\">")
        .nth(1)
        .and_then(|s| s.split("</script>").next())
        .expect("the figures' script element");
    serde_json::from_str(json).expect("the embedded figures are JSON")
}

fn u(v: &Json) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// One `doc` row, as the report reads it.
struct Row {
    layer: u32,
    host: String,
    status: i32,
    error: Option<String>,
    fetch_ms: i64,
    content_length: i64,
    duplicate_of: Option<String>,
    unchanged: bool,
}

fn doc_rows(data: &Path) -> Vec<Row> {
    let mut out = Vec::new();
    for (layer, b) in read_all(&data.join("doc")) {
        let s = |name: &str| b.column_by_name(name).unwrap_or_else(|| panic!("{name}")).as_string::<i32>().clone();
        let (host, error, dup) = (s("host"), s("error"), s("duplicate_of"));
        let i64c = |name: &str| b.column_by_name(name).expect("column").as_primitive::<Int64Type>().clone();
        let (ms, len) = (i64c("fetch_ms"), i64c("content_length"));
        let status = b.column_by_name("status").expect("status").as_primitive::<Int32Type>().clone();
        let unchanged = b.column_by_name("unchanged").expect("unchanged").as_boolean().clone();
        for i in 0..b.num_rows() {
            out.push(Row {
                layer: u32::try_from(layer).expect("layer"),
                host: host.value(i).to_string(),
                status: status.value(i),
                error: (!error.is_null(i)).then(|| error.value(i).to_string()),
                fetch_ms: ms.value(i),
                content_length: len.value(i),
                duplicate_of: (!dup.is_null(i)).then(|| dup.value(i).to_string()),
                unchanged: unchanged.value(i),
            });
        }
    }
    out
}

/// A row's outcome as the run summary counts it.
fn outcome(r: &Row) -> String {
    match &r.error {
        Some(kind) => kind.clone(),
        None if r.status >= 400 => format!("http_{}xx", r.status / 100),
        None if (200..300).contains(&r.status) => "ok".into(),
        None => "other".into(),
    }
}

/// Rows of every Parquet file under `dir`, by layer.
fn rows_by_layer(dir: &Path) -> BTreeMap<u32, u64> {
    let mut out = BTreeMap::new();
    for (layer, b) in read_all(dir) {
        *out.entry(u32::try_from(layer).expect("layer")).or_default() += b.num_rows() as u64;
    }
    out
}

/// One `links` row: layer, source, target, label, followed.
type LinkRow = (u32, String, String, Option<String>, bool);

fn link_rows(data: &Path) -> Vec<LinkRow> {
    let mut out = Vec::new();
    for (layer, b) in read_all(&data.join("links")) {
        let s = |name: &str| b.column_by_name(name).expect("column").as_string::<i32>().clone();
        let (src, dst, noise) = (s("src_url"), s("dst_url"), s("noise"));
        let followed = b.column_by_name("followed").expect("followed").as_boolean().clone();
        for i in 0..b.num_rows() {
            out.push((
                u32::try_from(layer).expect("layer"),
                src.value(i).to_string(),
                dst.value(i).to_string(),
                (!noise.is_null(i)).then(|| noise.value(i).to_string()),
                followed.value(i),
            ));
        }
    }
    out
}

fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    &rest[..rest.find([':', '/', '?', '#']).unwrap_or(rest.len())]
}

/// One host's figures, from its rows.
#[derive(Default)]
struct HostFigures {
    pages: u64,
    ok: u64,
    errors: u64,
    robots: u64,
    bytes: u64,
    ms: Vec<u32>,
}

/// The median as the report takes it: the lower middle.
fn median(mut v: Vec<u32>) -> u64 {
    v.sort_unstable();
    if v.is_empty() {
        0
    } else {
        u64::from(v[(v.len() - 1) / 2])
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_report_holds_the_crawls_figures_and_draws_them_in_chromium() {
    // The test web with its faults and its knowledge-base section, crawled
    // from the start URLs and the section's with the knowledge base.
    let cfg =
        FarmConfig { sites: 4, pages: 30, seed: 11, faults: true, slow_ms: 1500, kb: 12, ..FarmConfig::default() };
    let farm = testweb::Farm::start_background(cfg).expect("start the test web");
    let seeds: Vec<String> = farm.start_urls().into_iter().chain(farm.kb_start_urls()).collect();
    let web = Web::with_seeds(farm, &seeds);
    let kb = web.dir("kb.csv");
    std::fs::write(&kb, web.farm.kb_csv()).expect("knowledge base");
    let data = web.dir("data");
    let kb_arg = kb.display().to_string();
    let args = [
        "--delay",
        "0",
        "--partitions",
        "3",
        "--timeout",
        "1s",
        "--max-delay",
        "200ms",
        "--retries",
        "0",
        "--entities",
        &kb_arg,
    ];
    let summary = web.crawl(&data, 2, &args);
    let history = web.dir("night.json");
    std::fs::write(&history, serde_json::to_string_pretty(&summary).expect("summary")).expect("write");
    let data_arg = data.display().to_string();

    let page = web.dir("report.html");
    let out_arg = page.display().to_string();
    let written = report(&["--data", &data_arg, "--out", &out_arg, "--history", &history.display().to_string()]);
    assert_eq!(u(&written["nights"]), 1);
    assert_eq!(u(&written["bytes"]), std::fs::metadata(&page).expect("report").len(), "{written}");
    let fig = embedded(&page);

    // The link classes the noise filter skipped the most: those of the run
    // summary (its ten), from the same `skipped` dataset.
    let classes = fig["skipped_classes"].as_array().expect("skipped_classes");
    let ten: Vec<Json> = classes.iter().take(10).cloned().collect();
    // (The summary leaves the list out when it is empty.)
    let theirs = summary["skipped_classes"].as_array().cloned().unwrap_or_default();
    assert_eq!(ten, theirs, "the report's skipped classes are the summary's");

    // The figures against the Parquet, read back here.
    let docs = doc_rows(&data);
    let links = link_rows(&data);
    let layers = fig["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 3, "depth 2: three layers");
    let inputs = rows_by_layer(&data.join("in"));
    for l in layers {
        let layer = u32::try_from(u(&l["layer"])).expect("layer");
        let mine: Vec<&Row> = docs.iter().filter(|r| r.layer == layer).collect();
        let step = |name: &str| {
            l["funnel"].as_array().expect("funnel").iter().find(|s| s["name"] == name).map(|s| u(&s["count"]))
        };
        let ok = mine.iter().filter(|r| outcome(r) == "ok").count() as u64;
        let layer_links: Vec<&LinkRow> = links.iter().filter(|k| k.0 == layer).collect();
        assert_eq!(step("input URLs"), inputs.get(&layer).copied(), "layer {layer}: input = in/ rows");
        assert_eq!(step("fetched"), Some(mine.len() as u64), "layer {layer}: fetched = doc rows");
        assert_eq!(step("ok"), Some(ok), "layer {layer}");
        assert_eq!(step("links found"), Some(layer_links.len() as u64), "layer {layer}: links rows");
        if layer < 2 {
            // What dedup was given: the distinct targets the crawl follows after the labels.
            let followed: BTreeSet<&str> = layer_links.iter().filter(|k| k.4).map(|k| k.2.as_str()).collect();
            assert_eq!(step("after LCS clustering"), Some(followed.len() as u64), "layer {layer}: {}", l["funnel"]);
            assert_eq!(step("next layer's input"), inputs.get(&(layer + 1)).copied(), "layer {layer}");
            let s = step("distinct targets").expect("targets");
            assert!(s >= followed.len() as u64 && s <= step("followable after the DOM prefilter").expect("c"));
        }
        // Outcomes from the rows, and the run summary's from the manifests, agree.
        let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
        let mut classes: BTreeMap<String, u64> = BTreeMap::new();
        for r in &mine {
            *outcomes.entry(outcome(r)).or_default() += 1;
            let class = if r.status <= 0 { "none".to_string() } else { format!("{}xx", r.status / 100) };
            *classes.entry(class).or_default() += 1;
        }
        let got: BTreeMap<String, u64> = serde_json::from_value(l["rows"]["outcomes"].clone()).expect("outcomes");
        assert_eq!(got, outcomes, "layer {layer}: outcomes");
        let got: BTreeMap<String, u64> = serde_json::from_value(l["rows"]["statuses"].clone()).expect("statuses");
        assert_eq!(got, classes, "layer {layer}: status classes");
        let from_run = &summary["layers"][layer as usize];
        assert_eq!(u(&l["summary"]["ok"]), u(&from_run["ok"]), "layer {layer}: the run summary's ok");
        let errors: BTreeMap<String, u64> = serde_json::from_value(l["summary"]["errors"].clone()).expect("errors");
        let expect: BTreeMap<String, u64> = outcomes
            .iter()
            .filter(|(k, _)| !["ok", "robots", "other"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(errors, expect, "layer {layer}: the manifests' errors are the rows'");
        assert_eq!(u(&l["summary"]["robots"]), outcomes.get("robots").copied().unwrap_or(0));
        // Noise labels.
        let mut noise: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for k in &layer_links {
            let e = noise.entry(k.3.clone().unwrap_or_else(|| "none".into())).or_default();
            e.0 += 1;
            e.1 += u64::from(k.4);
        }
        let got: BTreeMap<String, (u64, u64)> = l["links"]["noise"]
            .as_object()
            .expect("noise")
            .iter()
            .map(|(k, v)| (k.clone(), (u(&v["links"]), u(&v["followed"]))))
            .collect();
        assert_eq!(got, noise, "layer {layer}: links by label");
        let dups = mine.iter().filter(|r| r.duplicate_of.is_some()).count() as u64;
        assert_eq!(u(&l["rows"]["duplicates"]), dups);
    }
    assert!(layers.iter().any(|l| l["rows"]["outcomes"].as_object().expect("o").len() >= 3), "the faults give errors");

    // Hosts: every row of the table, from the rows.
    let mut hosts: HashMap<&str, HostFigures> = HashMap::new();
    for r in &docs {
        let h = hosts.entry(r.host.as_str()).or_default();
        let what = outcome(r);
        h.pages += 1;
        match what.as_str() {
            "ok" => h.ok += 1,
            "other" => {}
            "robots" => h.robots += 1,
            _ => h.errors += 1,
        }
        if what != "robots" {
            h.ms.push(u32::try_from(r.fetch_ms).expect("ms"));
            if !r.unchanged {
                h.bytes += u64::try_from(r.content_length).expect("len");
            }
        }
    }
    let table = fig["hosts"]["rows"].as_array().expect("host rows");
    assert_eq!(table.len(), hosts.len(), "every host listed (fewer than the table's bound)");
    assert_eq!(u(&fig["totals"]["hosts"]), hosts.len() as u64);
    for row in table {
        let h = &hosts[row["host"].as_str().expect("host")];
        let got = (u(&row["pages"]), u(&row["ok"]), u(&row["errors"]), u(&row["robots"]), u(&row["bytes"]));
        assert_eq!(got, (h.pages, h.ok, h.errors, h.robots, h.bytes), "{row}");
        assert_eq!(u(&row["median_ms"]), median(h.ms.clone()), "{row}");
    }
    let requests = docs.iter().filter(|r| r.error.as_deref() != Some("robots")).count() as u64;
    assert_eq!(u(&fig["latency"]["n"]), requests);
    assert_eq!(u(&fig["sizes"]["n"]), docs.iter().filter(|r| r.status > 0).count() as u64);
    assert_eq!(fig["latency"]["counts"].as_array().expect("c").iter().map(u).sum::<u64>(), requests);

    // The host graph: its nodes, and one edge's weight from the links.
    let g = &fig["link_graph"];
    let nodes = g["nodes"].as_array().expect("nodes");
    let all_hosts: BTreeSet<&str> =
        docs.iter().map(|r| r.host.as_str()).chain(links.iter().flat_map(|k| [host_of(&k.1), host_of(&k.2)])).collect();
    assert_eq!(nodes.len(), all_hosts.len().min(200));
    assert_eq!(u(&g["all_nodes"]), all_hosts.len() as u64);
    let edge = &g["edges"][0];
    let (s, t) = (
        nodes[u(&edge["s"]) as usize]["label"].as_str().expect("s"),
        nodes[u(&edge["t"]) as usize]["label"].as_str().expect("t"),
    );
    let between = links.iter().filter(|k| host_of(&k.1) == s && host_of(&k.2) == t).count() as u64;
    assert_eq!(u(&edge["w"]), between, "links from {s} to {t}");

    // The entity figures, from the crawl's entities and relations datasets.
    let EntityFigures { mentions, pages, mean_score, types, predicates } = entity_figures(&data);
    assert!(mentions.len() >= 10 && !predicates.is_empty(), "the crawl linked entities: {mentions:?} {predicates:?}");
    let e = &fig["entities"];
    assert_eq!(u(&e["mentions"]), mentions.values().sum::<u64>());
    assert_eq!(u(&e["entities"]), mentions.len() as u64);
    let linked_pages: BTreeSet<String> = read_all(&data.join("entities"))
        .iter()
        .flat_map(|(_, b)| {
            let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
            (0..b.num_rows()).map(move |i| url.value(i).to_string()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(u(&e["pages"]), linked_pages.len() as u64);
    let top = e["top"].as_array().expect("top");
    assert_eq!(top.len(), mentions.len().min(50));
    for row in top {
        let id = row["id"].as_str().expect("id");
        assert_eq!((u(&row["mentions"]), u(&row["pages"])), (mentions[id], pages[id]), "{row}");
        assert!((row["score"].as_f64().expect("score") - mean_score[id]).abs() < 1e-9, "{row}");
    }
    let got: BTreeMap<String, u64> = serde_json::from_value(e["predicates"].clone()).expect("predicates");
    assert_eq!(got, predicates);
    let got: BTreeMap<String, u64> = serde_json::from_value(e["types"].clone()).expect("types");
    assert_eq!(got, types);
    assert_eq!(e["graph"]["nodes"].as_array().expect("nodes").len(), mentions.len().min(120));
    assert_eq!(u(&fig["history"][0]["fetched"]), u(&summary["fetched"]));

    // Drawing it needs headless Chromium, driven by the `render` feature's crate.
    #[cfg(feature = "render")]
    browser::draws_in_chromium(&page, &fig, &web).await;
    web.farm.shutdown();
}

#[test]
fn nightly_runs_keep_their_summaries_and_the_report_draws_their_trends() {
    let web = Web::start(FarmConfig { sites: 2, pages: 20, seed: 3, ..FarmConfig::default() });
    let job = common::Nightly::checkout(&web);
    let root = job.root.clone();
    let night = |date: &str| job.night(date);
    let nights = [night("2026-11-24"), night("2026-11-25")];
    let kept: Vec<Json> = ["2026-11-24", "2026-11-25"]
        .iter()
        .map(|d| {
            let f = root.join(format!("data/history/nightly-{d}.json"));
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
                .expect("JSON")
        })
        .collect();
    assert_eq!(kept, nights, "each night's summary is kept as printed");

    // The second night's report, made by the job, draws both nights.
    let page = root.join("data/reports/nightly-2026-11-25.html");
    let fig = embedded(&page);
    let trend = fig["history"].as_array().expect("history");
    assert_eq!(trend.len(), 2, "{trend:?}");
    for (t, n) in trend.iter().zip(&nights) {
        assert_eq!(u(&t["fetched"]), u(&n["fetched"]));
        assert_eq!(u(&t["errors"]), u(&n["errors"]));
        assert_eq!(t["pages_per_second"].as_f64(), n["pages_per_second"].as_f64());
        let new: u64 = n["layers"].as_array().expect("layers").iter().map(|l| u(&l["new_urls"])).sum();
        assert_eq!(u(&t["new_urls"]), new);
        assert!(new > 0 && u(&t["fetched"]) > 20, "{t}");
    }
    assert_eq!(trend[1]["label"], "nightly-2026-11-25");
    // A crawl without --entities: the report says so.
    assert!(fig["entities"].is_null(), "no entities: {}", fig["entities"]);
    assert!(std::fs::read_to_string(&page).expect("page").contains("ran without --entities"));
    assert_eq!(u(&fig["totals"]["pages"]), u(&nights[1]["fetched"]), "the report is of the second night");

    // The same from a folder and from files, in the order given; a night given twice counts once.
    let history = root.join("data/history");
    let (h, f1) = (history.display().to_string(), history.join("nightly-2026-11-24.json").display().to_string());
    let data = root.join("data/nightly-2026-11-25").display().to_string();
    let out = root.join("again.html").display().to_string();
    let written = report(&["--data", &data, "--out", &out, "--history", &h, &f1]);
    assert_eq!(u(&written["nights"]), 2);
    let labels: Vec<Json> =
        embedded(Path::new(&out))["history"].as_array().expect("h").iter().map(|n| n["label"].clone()).collect();
    assert_eq!(labels, [Json::from("nightly-2026-11-24"), Json::from("nightly-2026-11-25")]);
}

#[test]
fn a_folder_without_a_crawl_or_a_bad_history_file_is_refused_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("nowhere");
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    for dir in [&missing, &empty] {
        let d = dir.display().to_string();
        let out = layercrawl(&["report", "--data", &d, "--out", &tmp.path().join("r.html").display().to_string()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&d) && err.contains("layercrawl run"), "{err}");
    }
    assert!(!missing.exists(), "a mistyped --data leaves no folder behind");
    assert!(!tmp.path().join("r.html").exists(), "no report written");
    let bad = tmp.path().join("night.json");
    std::fs::write(&bad, "{\"data\": \"d\", \"fetched\": 3,\n\"ok\": \"all\"}").expect("write");
    let out = layercrawl(&["report", "--data", &empty.display().to_string(), "--history", &bad.display().to_string()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&bad.display().to_string()) && err.contains("line 2"), "{err}");
}
