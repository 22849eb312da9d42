//! Per-stage costs (criterion): parse, the extract stage's DOM, a crawl
//! plan's relevance, URL
//! normalisation, partitioning, LCS similarity and the visit/cache list.
//!
//! `cargo bench --bench stages`. The parse input is real pages of the test
//! web, fetched once over loopback at start-up, so the figure is what a
//! crawl of the test web pays per page on one core.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use layercrawl::dedup::cache::{CacheConfig, VisitCache};
use layercrawl::denoise::lcs::Pattern;
use layercrawl::extract::ParsedPage;
use layercrawl::parse::{parse_html, ParseConfig};
use layercrawl::partition::partition_of_domain;
use layercrawl::urlnorm;
use testweb::{Farm, FarmConfig};
use url::Url;

/// Fetches `n` article/list pages of the test web (page size as in the crawl bench).
fn sample_pages(n: usize) -> Vec<(Url, Vec<u8>)> {
    let page_kb = std::env::var("CRAWL_BENCH_PAGE_KB").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
    let farm =
        Farm::start_background(FarmConfig { sites: 4, pages: 400, faults: false, page_kb, ..FarmConfig::default() })
            .expect("start the test web");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    layercrawl::store::tls::install_provider();
    let client =
        reqwest::Client::builder().no_proxy().resolve_to_addrs("s000.test", &[farm.addr()]).build().expect("client");
    let mut out = Vec::new();
    let mut frontier = vec![Url::parse("http://s000.test/").expect("url")];
    let mut seen = std::collections::HashSet::new();
    rt.block_on(async {
        while let Some(u) = frontier.pop() {
            if out.len() >= n {
                break;
            }
            if !seen.insert(u.to_string()) || u.host_str() != Some("s000.test") {
                continue;
            }
            let Ok(resp) = client.get(u.clone()).send().await else { continue };
            let html = resp.headers().get("content-type").is_some_and(|c| c.to_str().unwrap_or("").contains("html"));
            let Ok(body) = resp.bytes().await else { continue };
            if !html {
                continue;
            }
            let page = parse_html(&body, Some("text/html"), &u, &ParseConfig::default());
            frontier.extend(page.links.into_iter().map(|l| l.url).filter(|l| !l.path().contains("calendar")));
            out.push((u, body.to_vec()));
        }
    });
    farm.shutdown();
    out
}

fn parse(c: &mut Criterion) {
    let pages = sample_pages(200);
    let bytes: usize = pages.iter().map(|p| p.1.len()).sum();
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function(format!("parse_html {} pages, {} KB avg", pages.len(), bytes / pages.len().max(1) / 1024), |b| {
        let cfg = ParseConfig::default();
        b.iter(|| {
            for (url, body) in &pages {
                black_box(parse_html(body, Some("text/html; charset=utf-8"), url, &cfg));
            }
        });
    });
    g.finish();
}

/// What the extract stage's lazily built DOM costs: the same pages parsed
/// as the map stage parses them (the streaming pass only, what a run
/// without DOM extractors pays), and with the DOM built too (what the
/// first extractor that calls `ParsedPage::dom` adds).
fn extract(c: &mut Criterion) {
    let pages = sample_pages(200);
    let bytes: usize = pages.iter().map(|p| p.1.len()).sum();
    let mut g = c.benchmark_group("extract");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(20);
    let cfg = ParseConfig::default();
    let ct = Some("text/html; charset=utf-8");
    g.bench_function(format!("streaming pass only, {} pages", pages.len()), |b| {
        b.iter(|| {
            for (url, body) in &pages {
                black_box(ParsedPage::parse(body, ct, url, &cfg));
            }
        });
    });
    g.bench_function(format!("streaming pass and DOM, {} pages", pages.len()), |b| {
        b.iter(|| {
            for (url, body) in &pages {
                let parsed = ParsedPage::parse(body, ct, url, &cfg);
                black_box(parsed.dom());
            }
        });
    });
    g.finish();
}

/// What a crawl plan (`--plan`) adds to a page: its relevance from the
/// title and main text, against the main text alone (which every run
/// computes), on the same pages parsed once.
fn plan(c: &mut Criterion) {
    use layercrawl::extract::main_text::TextFormat;
    use layercrawl::focus::{parse_plan, PageText, Scorer};
    let pages = sample_pages(200);
    let bytes: usize = pages.iter().map(|p| p.1.len()).sum();
    let cfg = ParseConfig::default();
    let ct = Some("text/html; charset=utf-8");
    let parsed: Vec<ParsedPage<'_>> = pages.iter().map(|(url, body)| ParsedPage::parse(body, ct, url, &cfg)).collect();
    let scorer = Scorer::new(
        parse_plan(
            "plan.toml",
            "[[group]]\nall = ['river']\nany = ['harbour', 'bridge', 'lighthouse', 'north sea', 'tide*', 'valley^2']\n\
             not = ['casino']\n[[group]]\nany = ['history', 'museum', 'old town', 'castle', 'archive*']\n",
        )
        .expect("plan"),
    );
    let mut g = c.benchmark_group("plan");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(20);
    g.bench_function(format!("main text, {} pages", pages.len()), |b| {
        b.iter(|| {
            for p in &parsed {
                black_box(layercrawl::extract::main_text::main_text(&p.page().structure, TextFormat::Plain));
            }
        });
    });
    // The noise filter's fingerprint of each page's main text (what
    // `--denoise off` does not compute), against the same words fed to the
    // hasher one by one, as it once was.
    let mains: Vec<String> = parsed
        .iter()
        .filter_map(|p| layercrawl::extract::main_text::main_text(&p.page().structure, TextFormat::Plain))
        .collect();
    g.bench_function(format!("noise filter's text fingerprint, {} pages", mains.len()), |b| {
        b.iter(|| {
            for m in &mains {
                black_box(layercrawl::denoise::evidence::text_hash(m));
            }
        });
    });
    // The same texts with a space in front, which sends them the general
    // way (split into words): the main texts' white space is collapsed
    // already, which the short way reads as it is.
    let spaced: Vec<String> = mains.iter().map(|m| format!(" {m}")).collect();
    g.bench_function(format!("the same, split into words, {} pages", spaced.len()), |b| {
        b.iter(|| {
            for m in &spaced {
                black_box(layercrawl::denoise::evidence::text_hash(m));
            }
        });
    });
    g.bench_function(format!("the same, hashed word by word, {} pages", mains.len()), |b| {
        b.iter(|| {
            for m in &mains {
                let mut h = xxhash_rust::xxh3::Xxh3::new();
                for (i, w) in m.split_whitespace().enumerate() {
                    if i > 0 {
                        h.update(b" ");
                    }
                    h.update(w.as_bytes());
                }
                black_box(h.digest());
            }
        });
    });
    g.bench_function(format!("main text and relevance, {} pages", pages.len()), |b| {
        b.iter(|| {
            for p in &parsed {
                let main = layercrawl::extract::main_text::main_text(&p.page().structure, TextFormat::Plain);
                let page = PageText { title: p.page().title.as_deref(), main_text: main.as_deref(), anchor: None };
                black_box(scorer.relevance(&page));
            }
        });
    });
    g.finish();
}

fn urls(c: &mut Criterion) {
    let base = Url::parse("http://s001.test/section/page.html").expect("url");
    let hrefs: Vec<String> = (0..1000)
        .map(|i| match i % 4 {
            0 => format!("/article/{i}?utm_source=x&id={i}"),
            1 => format!("../tag/t{i}/#frag"),
            2 => format!("HTTP://Blog.S001.TEST:80/p/%7e{i}"),
            _ => format!("http://s{:03}.test/a/./b/../c{i}", i % 50),
        })
        .collect();
    let mut g = c.benchmark_group("urls");
    g.throughput(Throughput::Elements(hrefs.len() as u64));
    g.bench_function("resolve_link + normalise", |b| {
        b.iter(|| hrefs.iter().filter_map(|h| urlnorm::resolve_link(&base, h)).count());
    });
    let domains: Vec<String> = (0..1000).map(|i| format!("www.site{i}.example.co.uk")).collect();
    g.bench_function("registrable_domain + partition", |b| {
        b.iter(|| domains.iter().map(|d| partition_of_domain(&urlnorm::registrable_domain(d), 64)).sum::<u32>());
    });
    g.finish();
}

fn lcs(c: &mut Criterion) {
    let urls: Vec<String> = (0..200)
        .map(|i| format!("http://s{:03}.test/section/{}/article-{i}.html?page={}", i % 7, i % 13, i % 5))
        .collect();
    let pats: Vec<Pattern> = urls.iter().take(20).map(|u| Pattern::new(u.as_bytes())).collect();
    let mut g = c.benchmark_group("lcs");
    g.throughput(Throughput::Elements((urls.len() * pats.len()) as u64));
    g.bench_function("bit-parallel similarity (comparisons)", |b| {
        b.iter(|| {
            let mut s = 0.0f32;
            for p in &pats {
                for u in &urls {
                    s += p.similarity(u.as_bytes());
                }
            }
            s
        });
    });
    // A realistic domain block: articles, tags, pagination, with DOM-flagged navigation.
    let block: Vec<layercrawl::denoise::BlockUrl> = (0..2000)
        .map(|i| {
            let url = match i % 10 {
                0 => format!("http://s001.test/tag/word{}/", i % 50),
                1 => format!("http://s001.test/news/page/{}/", i % 40),
                _ => format!(
                    "http://s001.test/{}/{}-some-article-title-{}",
                    ["news", "tech", "food"][i % 3],
                    1000 + i,
                    i % 7
                ),
            };
            layercrawl::denoise::BlockUrl { url, dom_noise: i % 10 < 2 }
        })
        .collect();
    g.throughput(Throughput::Elements(block.len() as u64));
    g.bench_function("single-pass clustering (URLs of a 2000-URL block)", |b| {
        let cfg = layercrawl::denoise::cluster::ClusterConfig::default();
        b.iter(|| {
            layercrawl::denoise::noise_by_cluster(&block, &[], &cfg, layercrawl::denoise::Method::Evidence).comparisons
        });
    });
    g.finish();
}

fn cache(c: &mut Criterion) {
    // A stream with many repeats: 100k candidates over 20k distinct fingerprints.
    let stream: Vec<u64> =
        (0..100_000u64).map(|i| xxhash_rust::xxh3::xxh3_64(&(i * 7919 % 20_000).to_le_bytes())).collect();
    let mut g = c.benchmark_group("dedup");
    g.throughput(Throughput::Elements(stream.len() as u64));
    g.bench_function("visit/cache list check+admit", |b| {
        b.iter(|| {
            let mut cache = VisitCache::new(CacheConfig { capacity: 8192, ..CacheConfig::default() });
            let mut misses = 0u32;
            for &fp in &stream {
                if cache.check(fp) == layercrawl::dedup::cache::Lookup::Miss {
                    misses += 1;
                    cache.admit(fp);
                }
            }
            misses
        });
    });
    g.finish();
}

criterion_group!(benches, parse, extract, plan, urls, lcs, cache);
criterion_main!(benches);
