//! A bounded fuzz test of the page path: bytes → charset decoding → the
//! tokenizer pass → every extractor (main text, metadata, the plan's
//! columns, entities and relations) → a rule with CSS, XPath, regex and
//! JSON-LD fields → links, through [`process`], the function the map
//! stage runs on every fetched page. The pages are hostile: random bytes,
//! and markup built from the tags, attributes and meta names the
//! extractors read, with multi-byte characters anywhere (inside a value,
//! between the bytes of another character), huge attributes and odd
//! charsets. A fixed seed and a fixed number of cases: the same pages on
//! every run, in seconds.
//!
//! A panic anywhere fails it, also one that an extractor's own guard
//! catches (its columns would be null, the page's data lost): a panic
//! hook counts the panics of the thread that runs the page.

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Once};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use url::Url;

use super::{process, ProcessCtx};
use crate::config::{BodyPolicy, Denoise, RulesSource};
use crate::extract::boilerplate::{Learner, PageLines, SiteBoilerplate};
use crate::extract::entities::EntitiesSource;
use crate::extract::main_text::{StoreText, TextFormat};
use crate::extract::Extractors;
use crate::fetch::{Fetched, Response};
use crate::focus::{LinkScoring, PlanSource};
use crate::parse::ParseConfig;
use crate::scope::{Scope, ScopeFilter};

/// Cases of the generated pages: about ten seconds in a debug build.
const CASES: u32 = 2_000;
const SEED: [u8; 32] = *b"layercrawl page path fuzz seed 1";

/// Pages that made the page path panic, kept as they were found.
const CRASHED: &[&str] = &[
    // The date's time sliced at bytes 3..5, inside the `€`.
    r#"<html><head><meta name="date" content="2020-01-23T12:€"></head><body><p>x</p></body></html>"#,
    r#"<meta property="article:published_time" content="2020-01-23T12:0€">"#,
    r#"<meta name="pubdate" content="2020-01-23T10:05:00+€1">"#,
    r#"<time datetime="2020-01-23T12:€">today</time>"#,
    r#"<script type="application/ld+json">{"@type":"Article","datePublished":"2020-01-23T12:€"}</script>"#,
];

const TAGS: &str = "\
    html head body title meta link base script style noscript template time a p div span h1 h2 h3 ul ol \
    li table tr td th pre code blockquote nav header footer main article aside section figure \
    figcaption img br hr form button iframe svg math textarea select option frameset plaintext";

const ATTRS: &str = "\
    href rel name content property itemprop http-equiv charset lang xml:lang class id datetime type src \
    data-sku hreflang role hidden style title aria-hidden";

/// The meta names and properties the metadata extractor reads.
const META_NAMES: &str = "\
    description og:description author article:author parsely-author dc.creator byl date pubdate \
    publishdate article:published_time datepublished og:published_time dc.date dc.date.issued \
    parsely-pub-date sailthru.date robots og:title twitter:title og:image og:image:url \
    og:image:secure_url twitter:image content-language language og:locale keywords viewport";

const VALUES: &[&str] = &[
    "2020-01-23T12:05:00+01:00",
    "2020-01-23",
    "2020-01-23 10:05:00.25",
    "2020-01-23T10:05",
    "+002020-01-23",
    "23.01.2020",
    "nofollow, noindex",
    "canonical",
    "nofollow",
    "application/ld+json",
    "text/html; charset=shift_jis",
    "utf-8",
    "windows-1252",
    "utf-16le",
    "x-user-defined",
    "en",
    "de-AT",
    "zh-Hant",
    "ar",
    "https://shop.test/product/2",
    "/relative/path?q=1#x",
    "javascript:alert(1)",
    "mailto:a@b.test",
    "http://[::1]:80/",
    "//other.test/x",
    "http://169.254.169.254/latest/",
    "product-title",
    "price",
    "buy-box",
    "related",
    "authors",
    "card",
    "name",
    "results",
    "pagination",
    "released",
    "content",
    "sidebar",
    "menu",
    "comments",
    "",
];

/// Characters that end up where bytes are counted: multi-byte, zero
/// width, combining, case-changing and the commas the extractors count.
const SPICE: &[&str] = &[
    "€", "é", "😀", "\u{0}", "\u{200b}", "\u{feff}", "\u{fffd}", "\u{2028}", "ß", "İ", "ﬃ", "，", "、", "،", "©",
    "\u{301}", "…", "’", "\r\n", "\t", "<", "&", "\"", "'",
];

/// Text that leads the extractors down their special paths: entities of
/// the knowledge base, sentence ends, captions, reading times, prices.
const TEXTS: &[&str] = &[
    "Orion Dynamics launched a rocket from Paris, Texas.",
    "Orion Foods was founded by Paris in 1999. ",
    "Foto: Reuters",
    "Photo: ©",
    "Lesezeit: 3 Minuten",
    "5 min read",
    "€1,299.00",
    "1.299,00 €",
    "In stock",
    "Offshore wind turbine rotor",
    "Mr. A. Smith went to St. Louis... Then?! ",
    "© 2024 All rights reserved",
    "Share on Twitter | Print | Advertisement",
    "14 March 2026",
];

const JSON_LD: &[&str] = &[
    r#"{"@type":"Product","sku":"%","name":"%","offers":{"price":"%"}}"#,
    r#"{"@graph":[{"@type":"Article","datePublished":"%","author":{"name":"%"}}]}"#,
    r#"[{"@type":"NewsArticle","headline":"%","author":[{"name":"%"},"%"]}]"#,
    r#"{"@type":["Product","Thing"],"sku":%}"#,
    r#"{"datePublished":%}"#,
    r#"{"@type":"Product","sku":"#,
];

/// A rule for `/product/` pages with a field of every kind and type, and
/// one for listings with `each`.
const RULES: &str = r#"
[[rule]]
name = "product"
urls = ["http://shop.test/product/*"]
[[rule.field]]
name = "title"
css = "h1, .product-title, title"
[[rule.field]]
name = "price"
css = ".price, .buy-box span"
type = "float"
[[rule.field]]
name = "count"
xpath = "//span[@class='count']"
type = "int"
[[rule.field]]
name = "stock"
css = ".stock"
type = "bool"
[[rule.field]]
name = "released"
xpath = "//time/@datetime"
type = "date"
[[rule.field]]
name = "updated"
css = "time"
attr = "datetime"
type = "datetime"
[[rule.field]]
name = "authors"
css = "ul li, .authors a"
multiple = true
[[rule.field]]
name = "image"
css = "img"
attr = "src"
type = "url"
[[rule.field]]
name = "sku"
jsonld = "Product.sku"
[[rule.field]]
name = "headline"
jsonld = "@graph.headline"
[[rule.field]]
name = "code"
css = "p"
regex = "([A-Z]+-[0-9]+)"
[[rule.field]]
name = "year"
regex = "(19|20)[0-9]{2}"
in = "text"
[[rule.field]]
name = "id"
regex = "/product/(.*)"
in = "url"
[rule.links]
scopes = [".related", "nav"]
deny = ["**/cart*"]
max_depth = 5

[[rule]]
name = "listing"
urls = ["http://shop.test/products?**"]
each = "li, .card"
[[rule.field]]
name = "sku"
xpath = "@data-sku"
[[rule.field]]
name = "link"
css = "a"
attr = "href"
type = "url"
"#;

const URLS: &[&str] = &[
    "http://shop.test/product/1",
    "http://shop.test/products?page=2",
    "http://news.test/2020/01/23/article.html",
    "http://shop.test/",
];

const CONTENT_TYPES: &[Option<&str>] = &[
    Some("text/html"),
    Some("text/html; charset=utf-8"),
    Some("text/html; charset=windows-1252"),
    Some("text/html; charset=shift_jis"),
    Some("text/html; charset=utf-16le"),
    Some("text/html; charset=\"€\""),
    Some("application/xhtml+xml"),
    None,
];

/// The run's whole page path: every extractor, a plan, entities with a
/// preference, rules, the noise filter, cross-page boilerplate.
fn context() -> ProcessCtx {
    let plan = PlanSource { file: "plan.toml".into(), text: include_str!("../../../examples/plan.toml").into() };
    let entities = EntitiesSource {
        file: "entities.csv".into(),
        text: include_str!("../../../examples/entities.csv").into(),
        relations: None,
        prefer: vec!["company".into()],
        threshold: 0.3,
    };
    let extract = Extractors::of_run(TextFormat::Markdown, StoreText::Both, Some(&plan), Some(&entities))
        .expect("the example plan and knowledge base compile");
    let columns = extract.column_names();
    let rules = RulesSource { file: "rules.toml".into(), text: RULES.into() }.compile().expect("the rules compile");
    let main_text = columns.iter().position(|c| c == "main_text").expect("a main_text column");
    // Boilerplate learned from earlier pages of the hosts, so that the
    // trimming runs too.
    let mut learner = Learner::default();
    for i in 0..12 {
        let text = format!("Page {i} of the shop €\nShare on Twitter | Print\n© 2024 All rights reserved");
        for host in ["shop.test", "news.test"] {
            learner.add(host, &PageLines::of(&text));
        }
    }
    let site = SiteBoilerplate::from_tables([&learner.table()]);
    let seeds: Vec<Url> = URLS.iter().map(|u| Url::parse(u).expect("url")).collect();
    ProcessCtx {
        partition: 0,
        parse: ParseConfig::default(),
        store_text: StoreText::Both,
        store_body: BodyPolicy::All,
        scope: ScopeFilter::from_seeds(Scope::Domain, &seeds),
        nofollow: crate::config::values::Nofollow::Obey,
        denoise: Denoise::Drop,
        plan: Some(Arc::new(LinkScoring::new(&plan, &columns).expect("the example plan"))),
        extract,
        rules: Some(Arc::new(rules)),
        warc: None,
        site: Some((main_text, (!site.is_empty()).then(|| Arc::new(site)))),
        main_text: Some(main_text),
    }
}

thread_local! {
    /// Whether this thread's panics are counted (and kept quiet).
    static WATCHING: Cell<bool> = const { Cell::new(false) };
    static PANICS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The panics that processing `body` as a page of `url` raised, caught or
/// not.
fn panics_of(ctx: &ProcessCtx, url: &str, content_type: Option<&str>, body: &[u8]) -> Vec<String> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if WATCHING.get() {
                PANICS.with_borrow_mut(|p| p.push(info.to_string()));
            } else {
                previous(info);
            }
        }));
    });
    let url = Url::parse(url).expect("url");
    let fetched = Fetched {
        id: 0,
        url: url.clone(),
        final_url: url,
        redirects: 0,
        response: Some(Response {
            status: 200,
            content_type: content_type.map(str::to_string),
            body: bytes::Bytes::copy_from_slice(body),
            received: body.len() as u64,
            ..Response::default()
        }),
        error: None,
        redirect_out: None,
        hops: Vec::new(),
        started_at: std::time::SystemTime::UNIX_EPOCH,
        elapsed: Duration::ZERO,
    };
    WATCHING.set(true);
    PANICS.with_borrow_mut(Vec::clear);
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        process(ctx, fetched, 1, Some("http://shop.test/".into()), Some("offshore wind €"))
    }));
    WATCHING.set(false);
    let mut panics = PANICS.take();
    if run.is_err() && panics.is_empty() {
        panics.push("process panicked".into());
    }
    panics
}

fn pick(list: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(list).prop_map(str::to_string)
}

/// One of the words of `list`.
fn pick_word(list: &'static str) -> impl Strategy<Value = String> {
    prop::sample::select(list.split_whitespace().collect::<Vec<_>>()).prop_map(str::to_string)
}

/// A value: from the dictionary, spiced, random text, or huge.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => pick(VALUES),
        2 => (pick(VALUES), pick(SPICE), any::<prop::sample::Index>()).prop_map(|(v, s, at)| spiced(&v, &s, at)),
        1 => ".{0,40}",
        1 => (pick(SPICE), 1_000usize..60_000).prop_map(|(s, n)| s.repeat(n)),
    ]
}

/// `v` with `spice` inserted at a char boundary chosen by `at`.
fn spiced(v: &str, spice: &str, at: prop::sample::Index) -> String {
    let bounds: Vec<usize> = v.char_indices().map(|(i, _)| i).chain([v.len()]).collect();
    let i = bounds[at.index(bounds.len())];
    format!("{}{spice}{}", &v[..i], &v[i..])
}

/// One piece of markup.
fn token() -> impl Strategy<Value = String> {
    let attr = (pick_word(ATTRS), value()).prop_map(|(a, v)| format!(" {a}=\"{v}\""));
    let start = (pick_word(TAGS), prop::collection::vec(attr, 0..4), any::<bool>())
        .prop_map(|(t, attrs, close)| format!("<{t}{}{}>", attrs.concat(), if close { "/" } else { "" }));
    let meta = (pick_word(META_NAMES), prop_oneof![Just("name"), Just("property"), Just("itemprop")], value())
        .prop_map(|(n, key, v)| format!("<meta {key}=\"{n}\" content=\"{v}\">"));
    let json = (pick(JSON_LD), value()).prop_map(|(j, v)| {
        let v = serde_json::to_string(&v).expect("a string");
        format!("<script type=\"application/ld+json\">{}</script>", j.replace('%', v.trim_matches('"')))
    });
    prop_oneof![
        4 => start,
        3 => pick_word(TAGS).prop_map(|t| format!("</{t}>")),
        3 => meta,
        1 => json,
        1 => value().prop_map(|v| format!("<time datetime=\"{v}\">{v}</time>")),
        1 => value().prop_map(|v| format!("<a href=\"{v}\">{v}</a>")),
        4 => pick(TEXTS),
        2 => pick(SPICE),
        2 => ".{0,30}",
        1 => prop_oneof![
            Just("<!DOCTYPE html>".to_string()),
            Just("<!-- a -- comment".to_string()),
            Just("<![CDATA[ x ]]>".to_string()),
            Just("&amp;&#x1F600;&#0;&#xD800;&nbsp".to_string()),
            Just("<meta charset=\"shift_jis\">".to_string()),
            Just("<meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-16\">".to_string()),
        ],
    ]
}

/// Raw bytes inserted anywhere, a character's bytes cut included.
fn insertions() -> impl Strategy<Value = Vec<(prop::sample::Index, Vec<u8>)>> {
    let bytes = prop_oneof![
        pick(SPICE).prop_map(String::into_bytes),
        pick(SPICE).prop_map(|s| s.into_bytes()[..1].to_vec()),
        prop::collection::vec(any::<u8>(), 1..4),
    ];
    prop::collection::vec((any::<prop::sample::Index>(), bytes), 0..4)
}

/// A page: its URL, its Content-Type and its body.
fn page() -> impl Strategy<Value = (String, Option<String>, Vec<u8>)> {
    let markup = (prop::collection::vec(token(), 0..60), insertions(), prop::option::of(pick(&["\u{feff}"]))).prop_map(
        |(tokens, inserted, bom)| {
            let mut body = bom.unwrap_or_default().into_bytes();
            body.extend(tokens.concat().into_bytes());
            for (at, bytes) in inserted {
                let i = at.index(body.len() + 1);
                body.splice(i..i, bytes);
            }
            body
        },
    );
    let body = prop_oneof![1 => prop::collection::vec(any::<u8>(), 0..4096), 6 => markup];
    (pick(URLS), prop::sample::select(CONTENT_TYPES).prop_map(|c| c.map(str::to_string)), body)
}

#[test]
fn pages_that_once_crashed_do_not() {
    let ctx = context();
    for page in CRASHED {
        for url in URLS {
            let panics = panics_of(&ctx, url, Some("text/html; charset=utf-8"), page.as_bytes());
            assert!(panics.is_empty(), "{url} {page}: {panics:?}");
        }
    }
}

/// Every character of [`SPICE`] at every byte of a page that holds a
/// value of each kind the extractors parse: a character cut in two as
/// much as one whole in every field.
#[test]
fn a_multibyte_character_at_every_position_does_not_panic() {
    let ctx = context();
    let page = concat!(
        r#"<html lang="en"><head><title>T</title><meta name="date" content="2020-01-23T12:05:00+01:00">"#,
        r#"<meta name="author" content="Ann"><link rel="canonical" href="/p/1">"#,
        r#"<script type="application/ld+json">{"@type":"Product","sku":"A-1","offers":{"price":"2.5"}}</script>"#,
        r#"</head><body><h1 class="product-title">Orion Dynamics</h1><p class="price">€1,299.00</p>"#,
        r#"<time datetime="2020-01-23">23 Jan</time><p>Foto: Reuters</p><p>5 min read</p>"#,
        r#"<ul class="related"><li><a href="/product/2">Paris, Texas</a></li></ul></body></html>"#,
    );
    for spice in ["€", "😀", "é"] {
        for cut in [spice.len(), 1] {
            for at in 0..=page.len() {
                let mut body = page.as_bytes()[..at].to_vec();
                body.extend_from_slice(&spice.as_bytes()[..cut]);
                body.extend_from_slice(&page.as_bytes()[at..]);
                let panics = panics_of(&ctx, URLS[0], Some("text/html; charset=utf-8"), &body);
                assert!(panics.is_empty(), "{spice:?} ({cut} bytes) at byte {at}: {panics:?}");
            }
        }
    }
}

#[test]
fn generated_hostile_pages_do_not_panic() {
    let ctx = context();
    // A longer search, by hand: LAYERCRAWL_FUZZ_CASES=200000 LAYERCRAWL_FUZZ_SEED=7
    // cargo test --lib map::process::fuzz::generated
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u32>().ok());
    let cases = var("LAYERCRAWL_FUZZ_CASES").unwrap_or(CASES);
    let mut seed = SEED;
    if let Some(n) = var("LAYERCRAWL_FUZZ_SEED") {
        seed[..4].copy_from_slice(&n.to_le_bytes());
    }
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed));
    let result = runner.run(&page(), |(url, content_type, body)| {
        let panics = panics_of(&ctx, &url, content_type.as_deref(), &body);
        if panics.is_empty() {
            Ok(())
        } else {
            Err(TestCaseError::fail(format!("{panics:?}")))
        }
    });
    if let Err(e) = result {
        panic!("a page made the page path panic (add it to CRASHED once fixed): {e}");
    }
}
