//! End to end through the library: a crawl of the test web with an
//! extractor registered (a CSS selector for `h1` on the lazily built DOM);
//! the `doc` Parquet is read back and the new column checked against each
//! page's real `<h1>`, found in its stored body.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use common::{read_all, Web};
use layercrawl::config::values::Span;
use layercrawl::config::{CrawlConfig, RunOptions};
use layercrawl::extract::{Column, ColumnType, Extractor, Extractors, PageInput, Tuning, Value};
use layercrawl::fetch::resolve::AllowPrivate;
use testweb::FarmConfig;

/// One crawl at a time in this file: the h1 test's slow pages (1 s each)
/// must be parsed before its layer's straggler threshold, which a second
/// crawl sharing the cores can push them past.
static ONE_CRAWL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The text of a page's first `h1`, whitespace collapsed.
struct FirstH1(scraper::Selector);

impl Extractor for FirstH1 {
    fn name(&self) -> &str {
        "first_h1"
    }
    fn columns(&self) -> Vec<Column> {
        vec![Column::new("h1", ColumnType::Utf8).tuned(Tuning::DISTINCT)]
    }
    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        let Some(parsed) = input.parsed else { return };
        let first = parsed.dom().select(&self.0).next();
        out.push(first.map_or(Value::Null, |h| Value::Utf8(collapse(&h.text().collect::<String>()))));
    }
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `<h1>…</h1>` of an HTML text by plain string search: tags
/// inside dropped, the entities the test web writes decoded.
fn naive_h1(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<h1")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</h1")?;
    let mut text = String::new();
    let mut in_tag = false;
    for c in html[start..end].chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&middot;", "\u{b7}")
        .replace("&amp;", "&");
    Some(collapse(&text))
}

#[test]
fn an_extractor_column_holds_every_pages_real_h1() {
    let _one = ONE_CRAWL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let web =
        Web::start(FarmConfig { sites: 3, pages: 40, seed: 11, faults: true, slow_ms: 1000, ..FarmConfig::default() });
    let data = web.dir("data");
    let mut options = RunOptions {
        seeds: Some(web.seeds.clone()),
        depth: Some(2),
        data: data.display().to_string(),
        partitions: 3,
        quiet: true,
        ..RunOptions::default()
    };
    options.network.addresses.resolve = vec![web.rule.parse().expect("resolve rule")];
    options.network.addresses.allow_private = AllowPrivate::All;
    options.politeness.delay = layercrawl::config::values::Millis(std::time::Duration::from_millis(10));
    // Generous: the fault host's slow pages (1 s) must still be parsed
    // on a loaded machine, they are the pages without an h1.
    options.limits.timeout = Span(Duration::from_secs(5));
    // Fixed politeness at the delay: the fault host's 503s and timeouts
    // must not back it off past the straggler threshold, or its slow
    // pages (the ones without an h1) would be carried out of the crawl.
    options.politeness.delay_factor = 0.0;
    options.politeness.max_delay = Span(Duration::from_millis(10));
    let mut cfg = CrawlConfig::from_options(&options).expect("config");
    let h1 = FirstH1(scraper::Selector::parse("h1").expect("selector"));
    cfg.extractors = Extractors::new(vec![Arc::new(h1)]).expect("registry");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let summary = rt.block_on(layercrawl::driver::run(cfg)).expect("the crawl runs");

    let core: Vec<String> = layercrawl::store::schema::doc_schema().fields().iter().map(|f| f.name().clone()).collect();
    let (mut with_h1, mut without, mut unparsed) = (0, 0, 0);
    let mut seen = BTreeMap::new();
    for (layer, b) in read_all(&data.join("doc")) {
        let names: Vec<String> = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(names[..core.len()], core[..], "the core columns first, as without extractors");
        assert_eq!(names[core.len()..], ["h1".to_string()], "then the extractor's");
        let url = b.column_by_name("url").expect("url").as_string::<i32>();
        let ct = b.column_by_name("content_type").expect("content_type").as_string::<i32>();
        let text = b.column_by_name("text").expect("text").as_string::<i32>();
        let body = b.column_by_name("body").expect("body").as_binary::<i32>();
        let got = b.column_by_name("h1").expect("h1").as_string::<i32>();
        for i in 0..b.num_rows() {
            let got = (!got.is_null(i)).then(|| got.value(i).to_string());
            seen.insert(url.value(i).to_string(), layer);
            // `text` is set exactly when the body was parsed as HTML.
            if text.is_null(i) {
                assert_eq!(got, None, "{}: not parsed, no h1", url.value(i));
                unparsed += 1;
                continue;
            }
            assert!(!body.is_null(i), "{}: HTML bodies are stored by default", url.value(i));
            let ct = (!ct.is_null(i)).then(|| ct.value(i));
            // Decoded as the crawler decodes: a declared charset that does
            // not decode the bytes gives way to the detected one.
            let (enc, source, bom) = layercrawl::parse::charset::sniff(body.value(i), ct);
            let (html, _, _) = layercrawl::parse::charset::decode_checked(body.value(i), enc, source, bom);
            let want = naive_h1(&html);
            assert_eq!(got, want, "{}", url.value(i));
            if want.is_some() {
                with_h1 += 1;
            } else {
                without += 1;
            }
        }
    }
    assert_eq!(seen.len() as u64, summary.fetched, "one row a URL");
    assert!(with_h1 >= 30, "articles carry an h1: {with_h1} ({without} parsed pages without, {unparsed} unparsed)");
    assert!(without >= 3 && unparsed >= 3, "and other pages do not: {without} without, {unparsed} unparsed");
    // The run's settings record the extractor columns: a map task run on its
    // own without the run's extractors is refused before it writes anything.
    let store = layercrawl::store::Store::open(&data.display().to_string()).expect("store");
    let refused = rt.block_on(async {
        let ctx = layercrawl::map::MapCtx::open(store).await.expect("the run's context");
        layercrawl::map::map_partition(&ctx, 0, 0).await
    });
    assert!(
        matches!(&refused, Err(layercrawl::error::StageError::ExtractorsDiffer { run, given }) if run == &["h1"] && given.first().map(String::as_str) == Some("main_text")),
        "{refused:?}"
    );
    web.farm.shutdown();
}

/// `--store-text`: the same crawl three times, filling both text columns
/// (the default), the main text only and the visible text only. A column
/// left out is in the schema and null on every row; a column kept holds,
/// URL by URL, what the default crawl stored; the content hash (and so
/// the duplicate detection) does not depend on the choice.
#[test]
fn store_text_fills_the_chosen_text_columns_and_nothing_else_changes() {
    let _one = ONE_CRAWL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    use common::read_docs;
    let web = Web::start(FarmConfig { sites: 3, pages: 30, seed: 21, faults: false, ..FarmConfig::default() });
    let crawl = |name: &str, store: Option<&str>| {
        let data = web.dir(name);
        let mut extra = vec!["--delay", "0", "--partitions", "2"];
        if let Some(s) = store {
            extra.extend(["--store-text", s]);
        }
        web.crawl(&data, 2, &extra);
        read_docs(&data).into_iter().map(|d| (d.url.clone(), d)).collect::<BTreeMap<_, _>>()
    };
    let both = crawl("both", None);
    let main = crawl("main", Some("main"));
    let visible = crawl("visible", Some("visible"));
    let articles = both.values().filter(|d| d.main_text.as_deref().is_some_and(|t| t.len() > 200)).count();
    assert!(articles >= 20, "the default fills main_text on the articles: {articles} of {}", both.len());
    assert!(both.values().filter(|d| d.text.is_some()).count() >= articles, "and text on every parsed page");
    for (label, run) in [("main", &main), ("visible", &visible)] {
        assert_eq!(
            run.keys().collect::<Vec<_>>(),
            both.keys().collect::<Vec<_>>(),
            "--store-text {label}: the same URLs"
        );
        for (url, d) in run {
            let all = &both[url];
            assert_eq!(d.content_hash, all.content_hash, "--store-text {label}: {url}'s hash is the visible text's");
            assert_eq!(d.title, all.title, "--store-text {label}: {url}");
        }
        // Which copy comes first depends on fetch order; how many are copies does not.
        let copies = |r: &BTreeMap<String, common::Doc>| r.values().filter(|d| d.duplicate_of.is_some()).count();
        assert_eq!(copies(run), copies(&both), "--store-text {label}: as many copies");
    }
    for (url, d) in &main {
        assert_eq!(d.text, None, "--store-text main leaves text null: {url}");
        assert_eq!(d.main_text, both[url].main_text, "--store-text main: {url}'s main text as by default");
    }
    for (url, d) in &visible {
        assert_eq!(d.main_text, None, "--store-text visible leaves main_text null: {url}");
        assert_eq!(d.text, both[url].text, "--store-text visible: {url}'s text as by default");
    }
    // A value that is not a choice is named, with the choices.
    let out = common::layercrawl(&web.run_args(&web.dir("bad"), 1, &["--store-text", "article"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("store-text") && err.contains("both, main, visible, none"), "{err}");
    web.farm.shutdown();
}
