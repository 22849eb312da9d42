//! Sitemaps (`--sitemaps`) against the test web serving them: robots.txt
//! `Sitemap:` lines leading to an index, a plain and a gzip sitemap, and
//! blogs' `/sitemap.xml` (docs/src/sitemaps.md).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::cast::AsArray;
use arrow_array::Array;
use common::{read_all, read_docs, Web};
use testweb::FarmConfig;

/// The test web with sitemaps; the seeds are its sites' and blogs' home
/// pages (sites name their sitemaps in robots.txt, blogs do not).
fn web() -> Web {
    let farm = testweb::Farm::start_background(FarmConfig {
        sites: 2,
        pages: 60,
        faults: false,
        seed: 8,
        sitemaps: true,
        ..FarmConfig::default()
    })
    .expect("start the test web");
    let mut seeds = farm.start_urls();
    let blogs: BTreeSet<String> = farm
        .sitemap_urls()
        .into_iter()
        .filter_map(|(u, _)| {
            u.starts_with("http://blog.").then(|| format!("{}/", &u[..u.find("/post/").expect("a post")]))
        })
        .collect();
    seeds.extend(blogs);
    Web::with_seeds(farm, &seeds)
}

/// The hosts the sitemaps list URLs of.
fn hosts(web: &Web) -> usize {
    web.farm
        .sitemap_urls()
        .iter()
        .map(|(u, _)| u.split('/').nth(2).unwrap_or_default().to_string())
        .collect::<BTreeSet<_>>()
        .len()
}

fn fetched_in_layer(data: &std::path::Path, layer: i32) -> BTreeSet<String> {
    read_docs(data).into_iter().filter(|d| d.layer == layer && d.status == 200).map(|d| d.final_url).collect()
}

#[test]
fn sitemap_urls_are_fetched_in_layer_one() {
    let web = web();
    let truth: BTreeMap<String, String> = web.farm.sitemap_urls().into_iter().collect();
    assert!(truth.len() > 100, "{} URLs in the sitemaps", truth.len());
    let fast = ["--delay", "0", "--partitions", "2"];
    let plain = web.dir("plain");
    web.crawl(&plain, 1, &fast);
    let with = web.dir("with");
    let summary = web.crawl(&with, 1, &[&fast[..], &["--sitemaps"]].concat());

    // Every URL the sitemaps list is fetched at depth 1, which links from
    // the home pages alone do not reach.
    let layer1 = fetched_in_layer(&with, 1);
    let missing: Vec<&String> = truth.keys().filter(|u| !layer1.contains(*u)).take(5).collect();
    assert!(missing.is_empty(), "sitemap URLs not fetched in layer 1: {missing:?}");
    let without = fetched_in_layer(&plain, 1);
    let only_by_sitemap = truth.keys().filter(|u| !without.contains(*u)).count();
    assert!(only_by_sitemap * 2 > truth.len(), "{only_by_sitemap} of {} need the sitemap at depth 1", truth.len());

    // The sitemaps dataset: each URL once, with its lastmod, from its file.
    let mut rows = BTreeMap::new();
    let mut files = BTreeSet::new();
    for (_, b) in read_all(&with.join("sitemaps")) {
        let (sitemap, url, lastmod) = (
            b.column_by_name("sitemap").expect("sitemap").as_string::<i32>(),
            b.column_by_name("url").expect("url").as_string::<i32>(),
            b.column_by_name("lastmod").expect("lastmod").as_string::<i32>(),
        );
        for i in 0..b.num_rows() {
            files.insert(sitemap.value(i).rsplit('/').next().unwrap_or_default().to_string());
            assert!(lastmod.is_valid(i));
            assert!(rows.insert(url.value(i).to_string(), lastmod.value(i).to_string()).is_none(), "{}", url.value(i));
        }
    }
    assert_eq!(rows, truth, "every URL with its lastmod");
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    assert_eq!(files, ["sitemap-1.xml", "sitemap-2.xml.gz", "sitemap.xml"], "index followed, gzip read, fallback used");

    // The summary counts them; the files are not pages.
    let l0 = &summary["layers"][0];
    assert_eq!(l0["sitemap_urls"].as_u64(), Some(truth.len() as u64), "{summary}");
    // Per site: the index and its two sitemaps; per blog: /sitemap.xml.
    let blogs = hosts(&web) - 2;
    assert_eq!(l0["sitemap_files"].as_u64(), Some(2 * 3 + blogs as u64), "{summary}");
    assert_eq!(l0["sitemap_problems"].as_u64(), Some(0));
    assert!(read_docs(&with).iter().all(|d| !d.url.contains("sitemap")), "sitemap files are not doc rows");
}

#[test]
fn sitemap_limits_and_missing_sitemaps() {
    let web = web();
    let data = web.dir("capped");
    let summary = web.crawl(&data, 1, &["--delay", "0", "--sitemaps", "--sitemap-urls", "10"]);
    // At most 10 per host.
    let mut per_host: BTreeMap<String, u64> = BTreeMap::new();
    for (u, _) in web.farm.sitemap_urls() {
        *per_host.entry(u.split('/').nth(2).unwrap_or_default().to_string()).or_default() += 1;
    }
    let capped: u64 = per_host.values().map(|&n| n.min(10)).sum();
    assert!(per_host.values().any(|&n| n > 10), "the cap bites");
    assert_eq!(summary["layers"][0]["sitemap_urls"].as_u64(), Some(capped), "{summary}");

    // A web without sitemaps: /sitemap.xml is tried, its 404 noted, and the
    // crawl goes on.
    let bare = Web::start(FarmConfig { sites: 1, pages: 20, faults: false, seed: 8, ..FarmConfig::default() });
    let data = bare.dir("bare");
    let summary = bare.crawl(&data, 1, &["--delay", "0", "--sitemaps"]);
    let l0 = &summary["layers"][0];
    assert_eq!((l0["sitemap_urls"].as_u64(), l0["sitemap_problems"].as_u64()), (Some(0), Some(1)), "{summary}");
    assert!(summary["ok"].as_u64().unwrap_or(0) > 5);
}
