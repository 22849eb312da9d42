//! Nightly recrawls (`--previous`): conditional requests against the test
//! web, whose pages carry an ETag and a Last-Modified date and answer 304
//! when asked about the version the crawler has (docs/src/recrawl.md).

use crate::common;

use std::collections::BTreeMap;

use common::{layercrawl, read_docs, read_links, Doc, Web};
use testweb::FarmConfig;

fn web() -> Web {
    Web::start(FarmConfig { sites: 3, pages: 60, faults: false, seed: 21, ..FarmConfig::default() })
}

/// Body bytes the test web sent since its stats were last reset.
fn body_bytes(web: &Web) -> u64 {
    web.farm.stats().hosts.values().map(|h| h.body_bytes).sum()
}

/// Fast: no politeness delay (the test web is ours), four partitions.
const FAST: [&str; 4] = ["--delay", "0", "--partitions", "4"];

fn by_url(docs: Vec<Doc>) -> BTreeMap<String, Doc> {
    docs.into_iter().map(|d| (d.url.clone(), d)).collect()
}

/// The links of a crawl as comparable tuples.
fn link_set(data: &std::path::Path) -> Vec<(String, String, String, Option<String>, bool)> {
    let mut v: Vec<_> =
        read_links(data).into_iter().map(|l| (l.src_url, l.dst_url, l.anchor, l.noise, l.followed)).collect();
    v.sort();
    v
}

fn is_page(d: &Doc) -> bool {
    (200..300).contains(&d.status) && d.content_type.as_deref().is_some_and(|c| c.contains("html"))
}

#[test]
fn an_unchanged_web_is_recrawled_with_304s_and_the_same_rows() {
    let web = web();
    let (night1, night2) = (web.dir("night1"), web.dir("night2"));
    let first = web.crawl(&night1, 2, &FAST);
    let sent_first = body_bytes(&web);
    web.farm.reset_stats();
    let previous = night1.display().to_string();
    let second = web.crawl(&night2, 2, &[&FAST[..], &["--previous", &previous]].concat());
    let sent_second = body_bytes(&web);

    // Transfer: under 5 % of the first night's body bytes.
    assert!(sent_first > 1_000_000, "the first crawl moved {sent_first} bytes");
    assert!(
        sent_second * 20 < sent_first,
        "second night moved {sent_second} body bytes, first {sent_first} (must be < 5 %)"
    );
    let statuses: u64 = web.farm.stats().hosts.values().map(|h| h.statuses.get(&304).copied().unwrap_or(0)).sum();
    assert!(statuses > 0, "the server answered 304s");

    // The rows are last night's, marked unchanged.
    let (a, b) = (by_url(read_docs(&night1)), by_url(read_docs(&night2)));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "the same URLs");
    let mut carried = 0;
    for (url, old) in &a {
        let new = &b[url];
        assert_eq!(
            (&new.final_url, new.status, &new.title, &new.text, &new.main_text),
            (&old.final_url, old.status, &old.title, &old.text, &old.main_text),
            "{url}"
        );
        assert_eq!(
            (new.content_hash, new.has_body, new.content_length, &new.content_type, &new.etag),
            (old.content_hash, old.has_body, old.content_length, &old.content_type, &old.etag),
            "{url}"
        );
        assert!(!old.unchanged, "{url}: nothing is unchanged on the first night");
        if is_page(old) {
            assert!(old.etag.is_some() && old.last_modified.is_some(), "{url}: validators kept");
            assert!(new.unchanged, "{url}: carried forward");
            carried += 1;
        }
    }
    assert!(carried > 100, "{carried} pages carried");
    assert_eq!(link_set(&night1), link_set(&night2), "the same links, from the same pages");

    // The summary says what was saved.
    assert_eq!(second["unchanged"].as_u64(), Some(carried));
    let saved = second["bytes_saved"].as_u64().expect("bytes_saved");
    assert!(saved * 10 > first["bytes"].as_u64().expect("bytes") * 9, "saved {saved}: {second}");
    assert!(second["bytes"].as_u64().expect("bytes") * 20 < first["bytes"].as_u64().expect("bytes"));
}

#[test]
fn an_edited_page_is_fetched_again_and_the_others_carried_forward() {
    let web = web();
    let (night1, night2) = (web.dir("night1"), web.dir("night2"));
    web.crawl(&night1, 2, &FAST);
    // A night passes: one page in ten changes.
    web.farm.set_edition(1);
    let previous = night1.display().to_string();
    // Another partition count than last night's: each task finds its hosts'
    // rows by their URLs, not by last night's partition numbers.
    let second = web.crawl(&night2, 2, &["--delay", "0", "--partitions", "3", "--previous", &previous]);
    let (mut fresh, mut carried) = (0, 0);
    let before = by_url(read_docs(&night1));
    for d in read_docs(&night2).iter().filter(|d| is_page(d)) {
        let edited = d.text.as_deref().is_some_and(|t| t.contains("Edition 1 of this page"));
        assert_eq!(d.unchanged, !edited, "{}: an edited page is fetched again, the others carried", d.url);
        if edited {
            fresh += 1;
            assert_ne!(d.etag, before[&d.url].etag, "{}: the new version's ETag", d.url);
        } else {
            carried += 1;
        }
    }
    assert!(fresh > 5 && carried > 5 * fresh, "{fresh} edited, {carried} carried");
    assert_eq!(second["unchanged"].as_u64(), Some(carried));
}

#[test]
fn a_previous_crawl_that_cannot_serve_is_refused_before_any_request() {
    let web = web();
    let night1 = web.dir("night1");
    web.crawl(&night1, 0, &["--store-body", "none"]);
    let empty = web.dir("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    let here = web.dir("here");
    for (previous, says) in [
        (empty.display().to_string(), "holds no crawl"),
        (web.dir("nowhere").display().to_string(), "no such folder"),
        (night1.display().to_string(), "stored no bodies"),
        (here.display().to_string(), "tonight's own data location"),
    ] {
        web.farm.reset_stats();
        let out = layercrawl(&web.run_args(&here, 1, &["--previous", &previous]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{previous}: refused");
        assert!(err.contains(says) && err.contains(&previous), "{previous}: {err}");
        assert_eq!(web.farm.stats().total_requests, 0, "{previous}: no request sent");
    }
    assert!(!web.dir("nowhere").exists(), "a mistyped --previous leaves no folder behind");
}

#[test]
fn the_nightly_job_recrawls_against_the_latest_finished_night() {
    let web = web();
    let job = common::Nightly::checkout(&web);
    let root = job.root.clone();
    let night = |date: &str| job.night(date);
    let first = night("2026-11-23");
    assert_eq!(first["unchanged"].as_u64(), Some(0), "no earlier night");
    // A night that did not finish is passed over.
    std::fs::create_dir_all(root.join("data/nightly-2026-11-24/state")).expect("mkdir");
    let second = night("2026-11-25");
    assert!(second["unchanged"].as_u64().is_some_and(|n| n > 20), "{second}");
    // HTML pages are carried; the few other files (not stored, so not
    // carried) are downloaded again.
    let bytes = |v: &serde_json::Value| v["bytes"].as_u64().expect("bytes");
    assert!(bytes(&second) * 20 < bytes(&first), "{} then {} bytes", bytes(&first), bytes(&second));
}

#[test]
fn a_page_whose_body_was_not_kept_is_fetched_again() {
    // The fault host's `/wrong-type/png-as-html` says text/html but is a
    // PNG: its body is not stored, yet it has validators and answers 304.
    let farm = testweb::Farm::start_background(FarmConfig {
        sites: 1,
        pages: 10,
        faults: true,
        seed: 2,
        log_requests: true,
        slow_ms: 300,
        ..FarmConfig::default()
    })
    .expect("test web");
    let web = Web::with_seeds(farm, &["http://faults.test/".to_string()]);
    let (night1, night2) = (web.dir("night1"), web.dir("night2"));
    let args =
        ["--delay", "0", "--partitions", "2", "--timeout", "2s", "--max-delay", "10ms", "--straggler-after", "off"];
    web.crawl(&night1, 1, &args);
    let previous = night1.display().to_string();
    web.farm.reset_stats();
    let second = web.crawl(&night2, 1, &[&args[..], &["--previous", &previous]].concat());
    let log = &web.farm.stats().hosts["faults.test"].log;
    let asked: Vec<u16> = log.iter().filter(|r| r.path == "/wrong-type/png-as-html").map(|r| r.status).collect();
    assert_eq!(asked, [304, 200], "a 304 with nothing to carry, then a plain GET");
    let docs = by_url(read_docs(&night2));
    let png = &docs["http://faults.test/wrong-type/png-as-html"];
    assert!(!png.has_body && !png.unchanged, "{png:?}");
    assert_eq!((png.status, png.error.as_deref()), (200, None), "fetched again, not failed: {png:?}");
    assert!(docs["http://faults.test/ok"].unchanged, "the others are carried");
    assert!(second["unchanged"].as_u64().is_some_and(|n| n >= 2), "{second}");
}
