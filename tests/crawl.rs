//! End to end: the real `layercrawl` binary crawls the test web on loopback;
//! the Parquet it wrote is read back and checked against the test web's
//! ground truth, and politeness is checked from the server's own counters.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{count_by_url, crawl_ok, layercrawl, read_docs, read_links, Doc};
use layercrawl::testweb::{Farm, FarmConfig};

const DELAY_MS: u64 = 40;
const PER_HOST: usize = 2;

struct Crawl {
    farm: Farm,
    _tmp: tempfile::TempDir,
    data: std::path::PathBuf,
    seeds: Vec<String>,
    summary: serde_json::Value,
    docs: Vec<Doc>,
}

fn crawl(cfg: FarmConfig, depth: u32, extra: &[&str]) -> Crawl {
    let farm = Farm::start_background(cfg).expect("start the test web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds_file = tmp.path().join("seeds.txt");
    let seeds = farm.start_urls();
    std::fs::write(&seeds_file, seeds.join("\n")).expect("write seeds");
    let data = tmp.path().join("data");
    let (rule, depth_s, delay, per_host) = (farm.resolve_rule(), depth.to_string(), DELAY_MS.to_string(), PER_HOST.to_string());
    let mut args = vec![
        "run", "--seeds", seeds_file.to_str().expect("utf8"), "--depth", &depth_s, "--data", data.to_str().expect("utf8"),
        "--resolve", &rule, "--allow-private", "--delay", &delay, "--per-host", &per_host, "--partitions", "4",
        "--timeout", "2s", "--json", "--quiet",
    ];
    args.extend_from_slice(extra);
    let summary = crawl_ok(&args);
    let docs = read_docs(&data);
    Crawl { farm, _tmp: tmp, data, seeds, summary, docs }
}

fn by_url(docs: &[Doc]) -> BTreeMap<&str, &Doc> {
    docs.iter().map(|d| (d.url.as_str(), d)).collect()
}

#[test]
fn a_depth_3_crawl_finds_every_reachable_page_once_and_stays_polite() {
    let cfg = FarmConfig { sites: 5, pages: 80, seed: 7, faults: true, slow_ms: 4000, log_requests: true, ..FarmConfig::default() };
    let c = crawl(cfg, 3, &[]);
    let truth = c.farm.truth(&c.seeds, 3);
    assert!(truth.content_pages.len() >= 100, "truth too small to mean much: {}", truth.content_pages.len());

    // Exactly one row per URL, and every reachable content page is there, fetched fine, at its depth or less.
    let counts = count_by_url(&c.docs);
    let doubled: Vec<_> = counts.iter().filter(|(_, &n)| n > 1).collect();
    assert!(doubled.is_empty(), "URLs with more than one row: {doubled:?}");
    let rows = by_url(&c.docs);
    let mut missing = Vec::new();
    for (url, &depth) in &truth.content_pages {
        match rows.get(url.as_str()) {
            None => missing.push(url.clone()),
            Some(d) => {
                assert_eq!((d.status, d.error.as_deref()), (200, None), "{url}: {:?}", d.error_detail);
                assert!(d.depth <= i32::try_from(depth).expect("depth"), "{url} at depth {} > truth {depth}", d.depth);
                assert_eq!(d.layer, d.depth, "nothing carried in this crawl");
                assert!(d.title.as_deref().is_some_and(|t| !t.is_empty()), "{url} has a title");
                assert!(d.text.as_deref().is_some_and(|t| t.len() > 200), "{url} has main text");
                assert!(d.content_hash.is_some() && d.has_body);
            }
        }
    }
    assert!(missing.is_empty(), "{} reachable content pages missing, e.g. {:?}", missing.len(), &missing[..missing.len().min(5)]);
    for (url, &depth) in &truth.pages {
        assert!(rows.contains_key(url.as_str()), "reachable page {url} (depth {depth}) missing");
    }
    // Nothing deeper than asked.
    assert!(c.docs.iter().all(|d| (0..=3).contains(&d.depth)));

    // Politeness, from the server's own counters.
    let stats = c.farm.stats();
    for (host, h) in &stats.hosts {
        assert!(h.disallowed_requests.is_empty(), "{host}: robots-disallowed paths requested: {:?}", h.disallowed_requests);
        if h.requests >= 2 {
            let gap = h.min_gap_ms.expect("gap");
            #[allow(clippy::cast_precision_loss)]
            let floor = DELAY_MS as f64 * 0.85;
            assert!(gap >= floor, "{host}: two requests {gap:.1} ms apart (delay {DELAY_MS} ms)");
        }
        assert!(h.max_in_flight as usize <= PER_HOST, "{host}: {} requests in flight at once", h.max_in_flight);
        assert!(h.robots_requests <= 1, "{host}: robots.txt fetched {} times", h.robots_requests);
    }
    for url in &truth.disallowed {
        if let Some(d) = rows.get(url.as_str()) {
            assert_eq!((d.status, d.error.as_deref()), (0, Some("robots")), "{url}");
        }
    }

    // Every fault is a row with the right status / error.
    let faults = c.farm.fault_cases();
    assert!(!faults.is_empty());
    for f in &faults {
        let Some(d) = rows.get(f.url.as_str()) else {
            // A fault reached only past the depth limit is fine; seeded ones must be there.
            assert!(!c.seeds.contains(&f.url), "seeded fault {} has no row", f.url);
            continue;
        };
        check_expectation(f.name.as_str(), &f.expect, f.expect_text.as_deref(), d);
    }

    // The summary agrees with the files.
    assert_eq!(c.summary["fetched"].as_u64(), Some(c.docs.len() as u64));
    assert_eq!(c.summary["layers"].as_array().map(Vec::len), Some(4));
    let links = read_links(&c.data);
    assert!(links.iter().any(|l| l.noise.as_deref() == Some("nofollow")) || links.iter().all(|l| l.noise.is_none()));
    assert!(links.len() as u64 >= c.summary["merged"]["link_rows"].as_u64().unwrap_or(0));
}

/// Checks a doc row against a fault case's `expect` tokens: `status=N`,
/// `error=KIND`, `charset=NAME`, `truncated`, `redirects=N`.
fn check_expectation(name: &str, expect: &str, text: Option<&str>, d: &Doc) {
    for token in expect.split_whitespace() {
        let (k, v) = token.split_once('=').unwrap_or((token, ""));
        match k {
            "status" => assert_eq!(d.status.to_string(), v, "{name} {}: {d:?}", d.url),
            "error" if v == "none" => assert_eq!(d.error, None, "{name} {}: {:?}", d.url, d.error_detail),
            "error" => assert_eq!(d.error.as_deref(), Some(v), "{name} {}: {:?}", d.url, d.error_detail),
            "charset" => assert_eq!(d.charset.as_deref(), Some(v), "{name} {}", d.url),
            "truncated" => assert!(d.truncated, "{name} {}: not truncated", d.url),
            "redirects" => assert_eq!(d.redirects.to_string(), v, "{name} {}", d.url),
            _ => {}
        }
    }
    if let Some(t) = text {
        let got = d.text.as_deref().unwrap_or_default();
        assert!(got.contains(t), "{name} {}: text {got:?} lacks {t:?}", d.url);
    }
}

#[test]
fn loopback_is_refused_by_default_and_nothing_reaches_the_server() {
    let farm = Farm::start_background(FarmConfig { sites: 2, pages: 10, faults: false, ..FarmConfig::default() }).expect("farm");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("seeds");
    let data = tmp.path().join("data");
    let rule = farm.resolve_rule();
    crawl_ok(&[
        "run", "--seeds", seeds.to_str().expect("utf8"), "--depth", "1", "--data", data.to_str().expect("utf8"),
        "--resolve", &rule, "--json", "--quiet",
    ]);
    let docs = read_docs(&data);
    assert_eq!(docs.len(), 2, "the two seeds, refused");
    for d in &docs {
        // robots.txt is refused first; its pages fail with the same refusal, named in the row.
        assert_eq!((d.status, d.error.as_deref()), (0, Some("blocked")), "{d:?}");
        assert!(d.error_detail.as_deref().is_some_and(|e| e.contains("loopback") && e.contains("--allow-private")), "{d:?}");
    }
    assert_eq!(farm.stats().total_requests, 0, "no request reached the test web");
}

#[test]
fn bad_input_gets_exit_code_2_and_names_the_line_or_key() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, "# only junk\nftp://a.test/\nnot a url\n").expect("seeds");
    let out = layercrawl(&["run", "--seeds", seeds.to_str().expect("utf8"), "--depth", "1", "--data", tmp.path().join("d").to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2") && err.contains("seeds.txt"), "{err}");

    let job = tmp.path().join("job.toml");
    std::fs::write(&job, "depth = 1\nper_hots = 4\n").expect("job");
    let out = layercrawl(&["run", "--job", job.to_str().expect("utf8")]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("per_hots") && err.contains("per-host"), "{err}");

    let out = layercrawl(&["run", "--seeds", seeds.to_str().expect("utf8"), "--depth", "1", "--scope", "galaxy"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("host, domain, any"));
}

#[test]
fn a_second_run_resumes_and_changes_nothing_and_other_settings_are_refused() {
    let farm = Farm::start_background(FarmConfig { sites: 3, pages: 30, faults: false, seed: 3, ..FarmConfig::default() }).expect("farm");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, farm.start_urls().join("\n")).expect("seeds");
    let data = tmp.path().join("data");
    let rule = farm.resolve_rule();
    let args = |parts: &'static str| {
        let mut v = vec![
            "run".to_string(), "--seeds".into(), seeds.display().to_string(), "--depth".into(), "2".into(),
            "--data".into(), data.display().to_string(), "--resolve".into(), rule.clone(), "--allow-private".into(),
            "--delay".into(), "0".into(), "--json".into(), "--quiet".into(), "--partitions".into(), parts.into(),
        ];
        v.retain(|s| !s.is_empty());
        v
    };
    let first = args("3");
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    crawl_ok(&first);
    let before: BTreeSet<String> = read_docs(&data).into_iter().map(|d| d.url).collect();
    let requests = farm.stats().total_requests;
    let again = crawl_ok(&first);
    assert_eq!(farm.stats().total_requests, requests, "a finished crawl re-run fetches nothing");
    let after: Vec<String> = read_docs(&data).into_iter().map(|d| d.url).collect();
    assert_eq!(after.len(), before.len(), "no row doubled");
    assert_eq!(after.into_iter().collect::<BTreeSet<_>>(), before);
    assert_eq!(again["fetched"].as_u64(), Some(before.len() as u64));

    let other = args("5");
    let other: Vec<&str> = other.iter().map(String::as_str).collect();
    let out = layercrawl(&other);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--partitions") && err.contains('3') && err.contains('5'), "{err}");
}

#[test]
fn the_demo_runs_offline() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("demo");
    let out = layercrawl(&["demo", "--sites", "2", "--depth", "1", "--data", data.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("duckdb") && stdout.contains("doc/"), "{stdout}");
    let docs = read_docs(&data);
    assert!(docs.iter().filter(|d| d.status == 200).count() >= 10, "{} rows", docs.len());
}
