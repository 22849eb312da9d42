//! The visited store end to end: `layercrawl forget` makes a URL eligible
//! again, and a finished crawl re-run with a larger `--depth` continues it.

mod common;

use common::{layercrawl, read_docs, read_links, Web};
use layercrawl::testweb::FarmConfig;

#[test]
fn a_forgotten_url_is_fetched_again_when_the_crawl_goes_deeper() {
    let web = Web::start(FarmConfig { sites: 2, pages: 30, faults: false, seed: 9, ..FarmConfig::default() });
    let data = web.dir("data");
    let run = |depth| web.crawl(&data, depth, &["--delay", "0", "--denoise", "off"]);
    run(1);
    let docs = read_docs(&data);
    // A page of layer 1 that layer 1's own pages link to: layer 2 would rediscover it.
    let layer1: std::collections::BTreeSet<&str> = docs.iter().filter(|d| d.layer == 1 && d.status == 200).map(|d| d.url.as_str()).collect();
    let links = read_links(&data);
    let target = links
        .iter()
        .filter(|l| l.followed && layer1.contains(l.src_url.as_str()) && layer1.contains(l.dst_url.as_str()) && l.src_url != l.dst_url)
        .map(|l| l.dst_url.clone())
        .next()
        .expect("a layer-1 page linked from layer 1");

    let out = layercrawl(&["forget", "--data", data.to_str().expect("utf8"), "--json", &target]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report["removed"].as_u64(), Some(1), "{report}");

    let summary = run(2);
    assert_eq!(summary["layers"].as_array().map(Vec::len), Some(3));
    let again = read_docs(&data);
    let rows: Vec<i32> = again.iter().filter(|d| d.url == target).map(|d| d.layer).collect();
    assert_eq!(rows, vec![1, 2], "{target} fetched in layer 1, forgotten, fetched again in layer 2");
    // Nothing else was fetched twice.
    assert_eq!(common::count_by_url(&again).values().filter(|&&n| n > 1).count(), 1);

    let out = layercrawl(&["forget", "--data", data.to_str().expect("utf8"), "not a url"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a url"));
}
