//! End to end: the real `layercrawl` binary crawls the test web on loopback;
//! the Parquet it wrote is read back and checked against the test web's
//! ground truth, and politeness is checked from the server's own counters.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{count_by_url, crawl_ok, layercrawl, read_docs, read_links, Doc, Web};
use testweb::FarmConfig;

/// The per-host delay of the politeness test. The server sees request
/// arrivals, which trail the crawler's send decisions by scheduling jitter
/// (a first request also opens its connection); the check measures runs
/// of requests under a lag (testweb's `spacing`), so it holds beside the
/// other tests and busy loops, and needs the machine to itself no more.
const DELAY_MS: u64 = 80;
const PER_HOST: usize = 2;

struct Crawl {
    web: Web,
    data: std::path::PathBuf,
    seeds: Vec<String>,
    summary: serde_json::Value,
    docs: Vec<Doc>,
}

fn crawl(cfg: FarmConfig, depth: u32, extra: &[&str]) -> Crawl {
    let web = Web::start(cfg);
    let data = web.dir("data");
    let (delay, per_host) = (DELAY_MS.to_string(), PER_HOST.to_string());
    // Adaptive politeness stays on, bounded below the straggler threshold
    // (1 s): the fault host's backoff must not carry its retries away.
    let mut args = vec![
        "--delay",
        &delay,
        "--per-host",
        &per_host,
        "--partitions",
        "4",
        "--timeout",
        "2s",
        "--max-delay",
        "500ms",
    ];
    args.extend_from_slice(extra);
    let summary = web.crawl(&data, depth, &args);
    let docs = read_docs(&data);
    let seeds = web.farm.start_urls();
    Crawl { web, data, seeds, summary, docs }
}

fn by_url(docs: &[Doc]) -> BTreeMap<&str, &Doc> {
    docs.iter().map(|d| (d.url.as_str(), d)).collect()
}

#[test]
fn a_depth_3_crawl_finds_every_reachable_page_once_and_stays_polite() {
    let cfg = FarmConfig {
        sites: 5,
        pages: 80,
        seed: 7,
        faults: true,
        slow_ms: 4000,
        log_requests: true,
        ..FarmConfig::default()
    };
    // No noise filter here: this test holds the crawler to the whole ground truth.
    let c = crawl(cfg, 3, &["--denoise", "off"]);
    let truth = c.web.farm.truth(&c.seeds, 3);
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
                assert!(d.has_body);
                // The int64 column holds the xxh3 bits of the text, whatever their sign.
                let text = d.text.as_deref().unwrap_or_default();
                assert_eq!(d.content_hash, Some(xxhash_rust::xxh3::xxh3_64(text.as_bytes())), "{url}");
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} reachable content pages missing, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    for (url, &depth) in &truth.pages {
        assert!(rows.contains_key(url.as_str()), "reachable page {url} (depth {depth}) missing");
    }
    // Nothing deeper than asked.
    assert!(c.docs.iter().all(|d| (0..=3).contains(&d.depth)));

    // Duplicates: within a partition (which owns whole sites), the pages of
    // one content hash are one first page and copies that name it, whether
    // it was fetched in this layer or an earlier one.
    let mut by_content: BTreeMap<(i32, u64), Vec<&Doc>> = BTreeMap::new();
    for d in c.docs.iter().filter(|d| d.status == 200) {
        if let Some(h) = d.content_hash {
            by_content.entry((d.partition, h)).or_default().push(d);
        }
    }
    let mut copies = 0;
    for same in by_content.values() {
        let firsts: Vec<&&Doc> = same.iter().filter(|d| d.duplicate_of.is_none()).collect();
        let urls: Vec<&str> = same.iter().map(|d| d.url.as_str()).collect();
        assert_eq!(
            firsts.len(),
            1,
            "one content, first pages {:?} of {urls:?}",
            firsts.iter().map(|d| &d.url).collect::<Vec<_>>()
        );
        let first = firsts[0];
        for d in same.iter().filter(|d| d.duplicate_of.is_some()) {
            assert_eq!(d.duplicate_of.as_deref(), Some(first.url.as_str()), "{} copies {}", d.url, first.url);
            assert!(
                d.layer >= first.layer,
                "{} (layer {}) names a later page {} (layer {})",
                d.url,
                d.layer,
                first.url,
                first.layer
            );
            copies += 1;
        }
    }
    assert!(copies >= 5, "only {copies} duplicate pages to check");
    let layered = c
        .docs
        .iter()
        .filter(|d| d.duplicate_of.as_deref().and_then(|f| rows.get(f)).is_some_and(|f| f.layer < d.layer))
        .count();
    assert!(
        layered > 0,
        "no duplicate of a page from an earlier layer: the content state of earlier layers went untested"
    );

    // Politeness, from the server's own counters.
    let stats = c.web.farm.stats();
    for (host, h) in &stats.hosts {
        assert!(
            h.disallowed_requests.is_empty(),
            "{host}: robots-disallowed paths requested: {:?}",
            h.disallowed_requests
        );
        // The crawler sends no two requests of a host closer than the
        // delay (crates/fetch/src/scheduler/request.rs); the server's clock sees
        // them late by varying amounts on a loaded machine, so the check
        // is over runs of requests with one lag (testweb's `spacing`).
        #[allow(clippy::cast_precision_loss)]
        let delay = DELAY_MS as f64;
        if let Err(e) = h.spaced(delay) {
            panic!("{host}: {e}");
        }
        // On faults.test the crawler abandons /slow-headers at its 2 s
        // timeout and retries while the handler still sleeps, unnoticed
        // until it writes: that host's count includes abandoned requests.
        if host != "faults.test" {
            let most = h.crawler_in_flight();
            assert!(most <= PER_HOST, "{host}: {most} requests in flight at once (server's count {})", h.max_in_flight);
        }
        assert!(h.robots_requests <= 1, "{host}: robots.txt fetched {} times", h.robots_requests);
    }
    for url in &truth.disallowed {
        if let Some(d) = rows.get(url.as_str()) {
            assert_eq!((d.status, d.error.as_deref()), (0, Some("robots")), "{url}");
        }
    }

    // Every fault is a row with the right status / error.
    let faults = c.web.farm.fault_cases();
    assert!(faults.len() >= 30, "{} fault cases", faults.len());
    for f in &faults {
        let d = rows.get(f.url.as_str()).unwrap_or_else(|| panic!("fault {} ({}) has no row", f.name, f.url));
        check_fault(&f.name, f.expect_text.as_deref(), d);
    }
    // robots.txt answering 500 means "disallow all" (RFC 9309): only /robots.txt was requested.
    let r500 = &stats.hosts["robots500.test"];
    assert_eq!((r500.requests, r500.robots_requests), (1, 1), "{r500:?}");
    // Crawl-delay: 1 was honoured, and Retry-After kept the rate-limited host polite after its 429.
    if let Err(e) = stats.hosts["crawldelay.test"].spaced(1000.0) {
        panic!("crawldelay.test: {e}");
    }
    // Retry-After was kept, from the server's own log: after a 429 (Retry-After: 1)
    // or a 503 (Retry-After: 1 or 2), the URL was not asked again within the
    // wait; and the first such answer of each URL paused its host: no other
    // request reached it within the wait, except the one that may already
    // have been in flight (--per-host 2). A URL that asks again waits alone.
    for host in ["ratelimit.test", "faults.test"] {
        let log = &stats.hosts[host].log;
        let mut paused_by = std::collections::BTreeSet::new();
        for (i, r) in log.iter().enumerate().filter(|(_, r)| matches!(r.status, 429 | 503)) {
            let wait_ms = if r.path == "/503" { 2000.0 } else { 1000.0 };
            let within = |n: &&testweb::RequestLog| n.at_ms - r.at_ms < wait_ms * 0.95;
            let again = log[i + 1..].iter().filter(within).filter(|n| n.path == r.path).count();
            assert_eq!(again, 0, "{host}: {} asked again within its {wait_ms} ms Retry-After", r.path);
            if paused_by.insert(r.path.clone()) {
                let inside = log[i + 1..].iter().filter(within).count();
                assert!(
                    inside < PER_HOST,
                    "{host}: {inside} requests within {wait_ms} ms after {} answered {}",
                    r.path,
                    r.status
                );
            }
        }
    }
    // Layers 0 to 3, and a catch-up layer when stragglers carried into
    // layer 3 had links within the depth.
    let layers = c.summary["layers"].as_array().expect("layers").len();
    assert!((4..=5).contains(&layers), "{layers} layers");
    let timeouts: u64 = (0..layers).filter_map(|l| c.summary["layers"][l]["errors"]["timeout"].as_u64()).sum();
    assert_eq!(timeouts, 2, "slow headers and trickle");
    let retries: u64 = (0..layers).filter_map(|l| c.summary["layers"][l]["retries"].as_u64()).sum();
    // From the server's own log: a request and two retries for the
    // always-failing URLs, one retry for /503-once. (/slow-headers is not
    // in the log: the client gives up before the server answers. A request
    // whose answer did not come in time is retried once only when its host
    // answered nothing else meanwhile, and faults.test answered its other
    // pages: the slow headers are not retried; nor is a body that came too
    // slowly: the trickle.)
    let mut by_path: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &stats.hosts["faults.test"].log {
        *by_path.entry(r.path.as_str()).or_default() += 1;
    }
    let asked = |p: &str| by_path.get(p).copied().unwrap_or(0);
    assert_eq!((asked("/503"), asked("/status/500"), asked("/503-once")), (3, 3, 2), "{by_path:?}");
    // 500 and 503 retried twice each; 503-once once; the slow headers and
    // the trickle not at all (their server answered other requests).
    let expected: u64 = 2 + 2 + 1;
    assert_eq!(asked("/trickle"), 1, "a body that came too slowly is not retried: {by_path:?}");
    assert!(retries >= expected, "{retries} retries, expected at least {expected}");

    // The summary agrees with the files; URLs robots.txt disallows are
    // counted on their own, not as errors.
    assert_eq!(c.summary["fetched"].as_u64(), Some(c.docs.len() as u64));
    let skipped = c.docs.iter().filter(|d| d.error.as_deref() == Some("robots")).count() as u64;
    assert!(skipped > 0);
    assert_eq!(c.summary["robots"].as_u64(), Some(skipped), "robots column");
    let per_layer: u64 = (0..layers).filter_map(|l| c.summary["layers"][l]["robots"].as_u64()).sum();
    assert_eq!(per_layer, skipped);
    assert!(
        (0..layers).all(|l| c.summary["layers"][l]["errors"].get("robots").is_none()),
        "robots is not an error kind in the summary"
    );
    let errors: u64 = c
        .docs
        .iter()
        .filter(|d| d.error.as_deref().is_some_and(|e| e != "robots") || (d.error.is_none() && d.status >= 400))
        .count() as u64;
    assert_eq!(c.summary["errors"].as_u64(), Some(errors));
    assert_eq!(c.summary["layers"].as_array().map(Vec::len), Some(layers));
    assert_eq!(c.summary["not_requested"], 0, "a complete crawl");
    let links = read_links(&c.data);
    assert!(links.iter().any(|l| l.noise.as_deref() == Some("nofollow")) || links.iter().all(|l| l.noise.is_none()));
    assert!(links.len() as u64 >= c.summary["merged"]["link_rows"].as_u64().unwrap_or(0));
}

/// What a correct crawler records for each fault of the test web, with
/// this test's settings (`--timeout 2s` against `slow_ms` 4 s, 2 retries,
/// the default 10 MiB body cap). A new fault must be added here.
fn check_fault(name: &str, text: Option<&str>, d: &Doc) {
    let ctx = format!("{name} {}: {:?} {:?}", d.url, d.error, d.error_detail);
    let status_error =
        |status: i32, error: Option<&str>| assert_eq!((d.status, d.error.as_deref()), (status, error), "{ctx}");
    match name {
        "ok" | "robots_404" | "crawl_delay" | "status_503_once" | "empty_body" => status_error(200, None),
        "redirect_chain" => {
            status_error(200, None);
            assert_eq!((d.redirects, d.final_url.as_str()), (3, "http://faults.test/redirect/chain/0"), "{ctx}");
        }
        "redirect_too_many" => assert_eq!(d.error.as_deref(), Some("too_many_redirects"), "{ctx}"),
        "redirect_loop" => assert_eq!(d.error.as_deref(), Some("redirect_loop"), "{ctx}"),
        "redirect_no_location" => status_error(302, Some("bad_redirect")),
        "status_404" => status_error(404, None),
        "status_410" => status_error(410, None),
        "status_500" => status_error(500, None),
        "status_503" => status_error(503, None),
        // Rate-limited host: a 429 is retried after its Retry-After and then succeeds.
        "rate_limit_429" => status_error(200, None),
        "slow_headers" => status_error(0, Some("timeout")),
        "trickle" => {
            status_error(200, Some("timeout"));
            assert!(d.truncated, "{ctx}");
        }
        "reset" => {
            status_error(200, Some("reset"));
            assert!(d.truncated && d.text.is_none(), "a body cut by the network is kept but not parsed: {ctx}");
        }
        "too_large" | "too_large_chunked" => {
            // Cut at our own cap: the received 10 MiB are a page prefix, parsed for links and text.
            status_error(200, Some("too_large"));
            assert!(d.truncated && d.content_length >= 10 << 20 && d.text.is_some(), "{ctx}");
        }
        "gzip_bomb" => {
            status_error(200, Some("too_large"));
            assert!(d.truncated && d.content_length <= 11 << 20, "inflation stopped at the cap: {ctx}");
        }
        "wrong_type_html_as_binary" => {
            assert_eq!(d.title.as_deref(), Some("Mislabelled HTML"), "sniffed as HTML: {ctx}")
        }
        "wrong_type_pdf_as_html" | "wrong_type_png_as_html" => {
            status_error(200, None);
            assert_eq!((d.title.as_deref(), d.text.as_deref()), (None, None), "binary is not parsed: {ctx}");
        }
        "malformed_html" | "malformed_html_text" => assert_eq!(d.title.as_deref(), Some("Malformed page"), "{ctx}"),
        "no_content_type" => assert_eq!(d.title.as_deref(), Some("No content type"), "{ctx}"),
        "robots_500" => status_error(0, Some("robots")),
        _ if name.starts_with("charset_") => {
            status_error(200, None);
            let want = match name.split('_').nth(1) {
                Some("win1252") => "windows-1252",
                Some("gbk") => "gbk",
                Some("sjis") => "shift_jis",
                // Declared UTF-8, sent as windows-1252: the detected charset wins.
                Some("mislabeled") => {
                    assert_eq!(d.title.as_deref(), Some("Mislabeled: naïve résumé"), "{ctx}");
                    "windows-1252"
                }
                other => panic!("unknown charset case {other:?}"),
            };
            assert_eq!(d.charset.as_deref(), Some(want), "{ctx}");
        }
        _ => panic!("fault case {name} has no expectation in this test: add one"),
    }
    if let Some(t) = text {
        let got = d.text.as_deref().unwrap_or_default();
        assert!(got.contains(t), "{ctx}: text {got:?} lacks {t:?}");
    }
}

#[test]
fn loopback_is_refused_by_default_and_nothing_reaches_the_server() {
    let web = Web::start(FarmConfig { sites: 2, pages: 10, faults: false, ..FarmConfig::default() });
    let data = web.dir("data");
    // The same arguments as every other test, less --allow-private.
    let mut args = web.run_args(&data, 1, &[]);
    args.retain(|a| a != "--allow-private");
    crawl_ok(&args);
    let farm = &web.farm;
    let docs = read_docs(&data);
    assert_eq!(docs.len(), 2, "the two seeds, refused");
    for d in &docs {
        // robots.txt is refused first; its pages fail with the same refusal, named in the row.
        assert_eq!((d.status, d.error.as_deref()), (0, Some("blocked")), "{d:?}");
        assert!(
            d.error_detail.as_deref().is_some_and(|e| e.contains("loopback") && e.contains("--allow-private")),
            "{d:?}"
        );
    }
    assert_eq!(farm.stats().total_requests, 0, "no request reached the test web");
}

#[test]
fn bad_input_gets_exit_code_2_and_names_the_line_or_key() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, "# only junk\nftp://a.test/\nnot a url\n").expect("seeds");
    let out = layercrawl(&[
        "run",
        "--seeds",
        seeds.to_str().expect("utf8"),
        "--depth",
        "1",
        "--data",
        tmp.path().join("d").to_str().expect("utf8"),
    ]);
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
    let web = Web::start(FarmConfig {
        sites: 3,
        pages: 30,
        faults: false,
        seed: 3,
        log_requests: true,
        ..FarmConfig::default()
    });
    let farm = &web.farm;
    let data = web.dir("data");
    let first = web.run_args(&data, 2, &["--delay", "0", "--partitions", "3"]);
    crawl_ok(&first);
    let before: BTreeSet<String> = read_docs(&data).into_iter().map(|d| d.url).collect();
    let requests = farm.stats().total_requests;
    for (host, h) in &farm.stats().hosts {
        let most = h.crawler_in_flight();
        assert!(most <= 2, "{host}: {most} in flight with the default --per-host 2");
    }
    let shuffle = data.join("state/shuffle");
    let left: Vec<_> = walk_files(&shuffle);
    assert!(left.is_empty(), "the optimise step's spill files are removed once a layer's input is committed: {left:?}");
    let again = crawl_ok(&first);
    assert_eq!(farm.stats().total_requests, requests, "a finished crawl re-run fetches nothing");
    let after: Vec<String> = read_docs(&data).into_iter().map(|d| d.url).collect();
    assert_eq!(after.len(), before.len(), "no row doubled");
    assert_eq!(after.into_iter().collect::<BTreeSet<_>>(), before);
    assert_eq!(again["fetched"].as_u64(), Some(before.len() as u64));

    let out = layercrawl(&web.run_args(&data, 2, &["--delay", "0", "--partitions", "5"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--partitions") && err.contains('3') && err.contains('5'), "{err}");
}

#[test]
fn the_demo_runs_offline() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("demo");
    // As in a fresh clone of the repository, whose data/doc/ holds a .gitkeep.
    std::fs::create_dir_all(data.join("doc")).expect("doc/");
    std::fs::write(data.join("doc/.gitkeep"), "").expect(".gitkeep");
    let out = layercrawl(&["demo", "--sites", "2", "--depth", "1", "--data", data.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("duckdb") && stdout.contains("doc/"), "{stdout}");
    let docs = read_docs(&data);
    assert!(docs.iter().filter(|d| d.status == 200).count() >= 10, "{} rows", docs.len());
}

/// Every file under `dir` (none when it does not exist).
fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries.flatten().flat_map(|e| if e.path().is_dir() { walk_files(&e.path()) } else { vec![e.path()] }).collect()
}
