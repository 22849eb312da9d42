//! The visited store end to end: `layercrawl forget` makes a URL eligible
//! again, and a finished crawl re-run with a larger `--depth` continues it.

use crate::common;

use common::{layercrawl, read_docs, read_links, Web};
use testweb::FarmConfig;

#[test]
fn a_forgotten_url_is_fetched_again_when_the_crawl_goes_deeper() {
    let web = Web::start(FarmConfig { sites: 2, pages: 30, faults: false, seed: 9, ..FarmConfig::default() });
    let data = web.dir("data");
    let run = |depth| web.crawl(&data, depth, &["--delay", "0", "--denoise", "off"]);
    run(1);
    let docs = read_docs(&data);
    // A page of layer 1 that layer 1's own pages link to: layer 2 would rediscover it.
    let layer1: std::collections::BTreeSet<&str> =
        docs.iter().filter(|d| d.layer == 1 && d.status == 200).map(|d| d.url.as_str()).collect();
    let links = read_links(&data);
    let target = links
        .iter()
        .filter(|l| {
            l.followed
                && layer1.contains(l.src_url.as_str())
                && layer1.contains(l.dst_url.as_str())
                && l.src_url != l.dst_url
        })
        .map(|l| l.dst_url.clone())
        .next()
        .expect("a layer-1 page linked from layer 1");

    let out = layercrawl(&["forget", "--data", data.to_str().expect("utf8"), "--json", &target]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["removed"].as_u64(), Some(1), "{report}");

    let summary = run(2);
    assert_eq!(summary["layers"].as_array().map(Vec::len), Some(3));
    assert!(
        data.join("state/manifest/layer=1/shuffle.json").exists(),
        "layer 1 was the last layer: its links are shuffled when the crawl goes deeper"
    );
    assert!(!data.join("state/manifest/layer=0/shuffle.json").exists(), "layer 0's map tasks shuffled their links");
    let again = read_docs(&data);
    let rows: Vec<i32> = again.iter().filter(|d| d.url == target).map(|d| d.layer).collect();
    assert_eq!(rows, vec![1, 2], "{target} fetched in layer 1, forgotten, fetched again in layer 2");
    // Nothing else was fetched twice.
    assert_eq!(common::count_by_url(&again).values().filter(|&&n| n > 1).count(), 1);

    let out = layercrawl(&["forget", "--data", data.to_str().expect("utf8"), "not a url"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a url"));
}

#[test]
fn tracking_parameters_are_stripped_by_a_list_the_user_can_replace() {
    let web = Web::start(FarmConfig { sites: 2, pages: 40, faults: false, seed: 5, ..FarmConfig::default() });
    let args = ["--delay", "0", "--denoise", "off"];
    let tracked =
        |docs: &[common::Doc]| docs.iter().filter(|d| d.url.contains("utm_") || d.url.contains("sid=")).count();
    let default = web.dir("default");
    web.crawl(&default, 2, &args);
    assert_eq!(tracked(&read_docs(&default)), 0, "the default list strips utm_* and session ids");

    let kept = web.dir("kept");
    web.crawl(&kept, 2, &[&args[..], &["--strip-params", ""]].concat());
    assert!(
        tracked(&read_docs(&kept)) > 0,
        "with an empty list the test web's tracking variants are crawled as they are"
    );

    // The list is fixed for a data folder: fingerprints depend on it.
    let out = layercrawl(&web.run_args(&default, 2, &[&args[..], &["--strip-params", "utm_*"]].concat()));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--strip-params"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
