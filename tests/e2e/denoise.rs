//! The noise filter measured against the test web's ground truth: what the
//! default (drop on evidence) saves in fetches of navigation and
//! boilerplate-only targets against `--denoise off`, what it costs in
//! content pages, how well the labels match the truth's navigation links,
//! and what the literal method (`strict`) costs.

use crate::common;
// The demo's scorer itself (a module of the binary), so the test checks it.
#[path = "../../src/demo/score.rs"]
mod score;

use std::collections::BTreeSet;

use common::{read_docs, read_links, read_skipped, Web};
use testweb::FarmConfig;

struct Run {
    docs: Vec<common::Doc>,
    data: std::path::PathBuf,
    summary: serde_json::Value,
}

fn crawl(web: &Web, depth: u32, mode: Option<&str>) -> Run {
    let data = web.dir(mode.unwrap_or("default"));
    let mut args = vec!["--delay", "0", "--per-host", "4", "--partitions", "4"];
    if let Some(m) = mode {
        args.extend(["--denoise", m]);
    }
    let summary = web.crawl(&data, depth, &args);
    assert!(!read_links(&data).is_empty());
    Run { docs: read_docs(&data), data, summary }
}

fn ok_urls(run: &Run) -> BTreeSet<&str> {
    run.docs.iter().filter(|d| d.status == 200 && d.error.is_none()).map(|d| d.url.as_str()).collect()
}

/// Requests made for targets that are navigation or boilerplate only, by
/// the test web's own routing: tag, calendar and facet pages, utility
/// pages, print views, comment-reply URLs, share redirects, mirror and AMP
/// copies. (URLs robots.txt disallows are rows without a request.)
fn nav_fetches(web: &Web, run: &Run) -> usize {
    nav_by_kind(web, run).values().sum()
}

/// [`nav_fetches`] by the kind of page.
fn nav_by_kind(web: &Web, run: &Run) -> std::collections::BTreeMap<&'static str, usize> {
    let mut kinds = std::collections::BTreeMap::new();
    for d in run.docs.iter().filter(|d| d.error.as_deref() != Some("robots")) {
        if let Some(k @ ("tag" | "trap" | "utility" | "print" | "reply" | "share" | "mirror" | "amp")) =
            web.farm.page_kind(&d.url)
        {
            *kinds.entry(k).or_default() += 1;
        }
    }
    kinds
}

#[test]
fn noise_filter_against_the_ground_truth() {
    let web = Web::start(FarmConfig { sites: 6, pages: 150, seed: 21, faults: false, ..FarmConfig::default() });
    let farm = &web.farm;
    let depth = 3;
    let off = crawl(&web, depth, Some("off"));
    let default = crawl(&web, depth, None);
    let mark = crawl(&web, depth, Some("mark"));
    let strict = crawl(&web, depth, Some("strict"));
    let truth = farm.truth(&farm.start_urls(), depth);
    let content: BTreeSet<&str> = truth.content_pages.keys().map(String::as_str).collect();
    #[allow(clippy::cast_precision_loss)]
    let share = |run: &Run| {
        let got = ok_urls(run);
        content.iter().filter(|u| got.contains(*u)).count() as f64 / content.len() as f64
    };
    #[allow(clippy::cast_precision_loss)]
    let avoided = 1.0 - nav_fetches(&web, &default) as f64 / nav_fetches(&web, &off) as f64;

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let score = |run: &Run| {
        rt.block_on(score::score_against_truth(farm, run.data.to_str().expect("utf8"), depth)).expect("score")
    };
    let m = score(&mark);
    assert!((m.content_share - share(&mark)).abs() < 1e-9, "the demo's score and this test agree");
    #[allow(clippy::cast_precision_loss)]
    let strict_saved = 1.0 - strict.docs.len() as f64 / off.docs.len() as f64;
    eprintln!(
        "navigation/boilerplate fetches: {} (off) vs {} (default), {:.1}% avoided; content pages reached: {:.1}% off, \
         {:.1}% default, {:.1}% strict; rows: off {}, default {}, strict {} ({:.1}% fewer); labels vs truth over {} links: \
         precision {:.3}, recall {:.3}",
        nav_fetches(&web, &off),
        nav_fetches(&web, &default),
        avoided * 100.0,
        share(&off) * 100.0,
        share(&default) * 100.0,
        share(&strict) * 100.0,
        off.docs.len(),
        default.docs.len(),
        strict.docs.len(),
        strict_saved * 100.0,
        m.links_scored,
        m.precision,
        m.recall
    );
    eprintln!(
        "navigation/boilerplate fetches by kind: off {:?}, default {:?}",
        nav_by_kind(&web, &off),
        nav_by_kind(&web, &default)
    );
    eprintln!("summary layers (default): {}", default.summary["layers"]);

    // The default's two targets.
    assert!(share(&off) > 0.99, "off follows everything, so it reaches the whole truth: {:.3}", share(&off));
    assert!(share(&default) >= 0.99, "the default keeps content pages: {:.3}", share(&default));
    assert!(avoided >= 0.7, "the default avoids most navigation/boilerplate fetches: {avoided:.3}");
    // mark follows everything and labels what drop would not follow.
    assert!(share(&mark) > 0.99);
    assert_eq!(nav_fetches(&web, &mark), nav_fetches(&web, &off), "mark fetches what off fetches");
    assert!(m.links_scored > 10_000, "enough links scored: {}", m.links_scored);
    assert!(
        m.precision >= 0.85 && m.recall >= 0.9,
        "labels vs truth: precision {:.3}, recall {:.3}",
        m.precision,
        m.recall
    );
    let barren_labels =
        read_links(&mark.data).iter().filter(|l| l.noise.as_deref() == Some("barren") && l.followed).count();
    assert!(barren_labels > 1000, "mark labels the links the default drops, and follows them: {barren_labels}");
    let barren_dropped = read_links(&default.data)
        .iter()
        .filter(|l| l.noise.as_deref() == Some("barren"))
        .filter(|l| l.followed)
        .count();
    assert_eq!(barren_dropped, 0, "the default follows no link it labels barren");
    // Every link to a URL the filter skipped carries the label, in every
    // shard of its layer: the labels are written into the shards that link
    // there, after the layer is sealed. A URL held back in its layer by its
    // class's first pages (the gates) went into the layer's input: the
    // links to it were followed.
    let input: BTreeSet<(i32, String)> = common::read_all(&default.data.join("in"))
        .into_iter()
        .flat_map(|(layer, b)| {
            (0..b.num_rows()).map(move |i| (layer, common::s(&b, "url", i).expect("url"))).collect::<Vec<_>>()
        })
        .collect();
    let (held_back, skipped_urls): (Vec<common::Skipped>, Vec<common::Skipped>) =
        read_skipped(&default.data).into_iter().partition(|s| input.contains(&(s.layer, s.url.clone())));
    let held: u64 = default.summary["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .map(|l| {
            l["held_back"]["copies"].as_u64().expect("held_back")
                + l["held_back"]["errors"].as_u64().expect("held_back")
        })
        .sum();
    assert_eq!(held_back.len() as u64, held, "the URLs held back are the skipped rows of their layer's input");
    let skipped_urls: BTreeSet<(i32, String)> = skipped_urls.into_iter().map(|s| (s.layer - 1, s.url)).collect();
    assert!(!skipped_urls.is_empty());
    let links = read_links(&default.data);
    let to_skipped: Vec<&common::Link> =
        links.iter().filter(|l| skipped_urls.contains(&(l.layer, l.dst_url.clone()))).collect();
    assert!(!to_skipped.is_empty(), "the skipped URLs' links are found");
    let unlabelled: Vec<_> = to_skipped.iter().filter(|l| l.followed).take(5).collect();
    assert!(unlabelled.is_empty(), "links to skipped URLs still followed: {unlabelled:?}");
    // The literal method: far fewer fetches, and the content it loses.
    assert!(strict_saved >= 0.5, "strict fetches far fewer pages: {strict_saved:.3}");
    assert!(share(&strict) < 0.9, "strict misses content reached only through menus: {:.3}", share(&strict));
    // What the filter did not follow is counted by what it was expected to
    // be: the test web's print views, AMP and mirror copies are copies.
    let skipped = &default.summary["skipped"];
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("skipped.{k} in {v}"));
    assert!(n(skipped, "copies") > 0, "{skipped}");
    // The run's count is the layers' (not followed, and held back).
    for k in ["copies", "errors", "others"] {
        let layers = default.summary["layers"].as_array().expect("layers");
        let counted: u64 = layers.iter().map(|l| n(&l["skipped"], k) + n(&l["held_back"], k)).sum();
        assert_eq!(counted, n(skipped, k), "{k}");
    }
    let barren: u64 = default.summary["layers"].as_array().expect("layers").iter().map(|l| n(l, "barren")).sum();
    assert!(
        n(skipped, "copies") + n(skipped, "errors") <= barren + held,
        "{skipped}: only barren targets are copies or errors"
    );
    assert_eq!(off.summary["skipped"], serde_json::json!({"copies": 0, "errors": 0, "others": 0}));
    // Every layer's summary reports the filter's counters.
    let l2 = &default.summary["layers"][2];
    assert!(l2["barren"].as_u64().unwrap_or(0) > 0, "{l2}");
    assert!(
        l2["dom_noise"].as_u64().unwrap_or(0) > 0
            && l2["store_hits"].is_u64()
            && l2["visit_hits"].as_u64().unwrap_or(0) > 0,
        "{l2}"
    );
}
