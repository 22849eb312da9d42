//! Focused crawling (docs/src/focused-crawling.md): a crawl plan's relevance
//! and roles on the test web's topical magazine (`--topics N`), whose every
//! article has a known topic; the plan's seed templates; the plan's errors.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, TimestampMicrosecondType};
use arrow_array::Array;
use common::{crawl_ok, layercrawl, read_all, Web};
use layercrawl::focus::ant;
use serde_json::Value;
use testweb::topics::TOPICS;
use testweb::{Farm, FarmConfig};

mod budget;

use budget::budget_topic;

const ARTICLES: u32 = 40;

fn web() -> Web {
    let cfg = FarmConfig { sites: 3, pages: 10, faults: false, topics: ARTICLES, seed: 5, ..FarmConfig::default() };
    let farm = Farm::start_background(cfg).expect("test web");
    let seeds = farm.topic_start_urls();
    Web::with_seeds(farm, &seeds)
}

/// A plan for `topic`: its name and ten of its sixteen words (the words two
/// topics share left out), a `not` term, a seed template over the first
/// site's search.
fn plan(topic: usize) -> String {
    let words: Vec<String> = testweb::topics::plan_words(topic).iter().map(|w| format!("{w:?}")).collect();
    format!(
        r#"
name = "{name}"
threshold = 0.3
[[group]]
name = "topic"
any = [{words}]
not = ["horoscope"]
query = true
[[seeds]]
template = "http://{{site}}/topics/search?q={{keywords}}"
site = ["s000.test"]
max = 2
[[role]]
role = "nav"
urls = ["http://*/topics/", "http://*/topics/*/", "http://*/topics/search?**"]
"#,
        name = TOPICS[topic].0,
        words = words.join(", ")
    )
}

/// The web, its topic with the most articles within two hops, and a plan
/// file for it.
fn web_and_plan() -> (Web, usize, std::path::PathBuf) {
    let web = web();
    let truth = web.farm.topic_truth(2);
    let topic = (0..TOPICS.len()).max_by_key(|&t| truth.relevant(t).len()).expect("topics");
    let file = web.dir("plan.toml");
    std::fs::write(&file, plan(topic)).expect("plan");
    (web, topic, file)
}

/// url → (relevance, role) of every `doc` row.
fn scores(data: &std::path::Path) -> BTreeMap<String, (Option<f64>, Option<String>)> {
    let mut out = BTreeMap::new();
    for (_, b) in read_all(&data.join("doc")) {
        let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let rel = b.column_by_name("relevance").expect("a relevance column").as_primitive::<Float64Type>().clone();
        let role = b.column_by_name("role").expect("a role column").as_string::<i32>().clone();
        for i in 0..b.num_rows() {
            let r = (!rel.is_null(i)).then(|| rel.value(i));
            let o = (!role.is_null(i)).then(|| role.value(i).to_string());
            out.insert(url.value(i).to_string(), (r, o));
        }
    }
    out
}

#[test]
fn relevance_tells_the_plans_topic_from_the_others_and_nav_pages_are_not_scored() {
    let (web, topic, file) = web_and_plan();
    let data = web.dir("data");
    let summary = crawl_ok(&web.run_args(&data, 2, &["--delay", "0", "--plan", file.to_str().expect("utf-8")]));
    let rows = scores(&data);

    let (mut on, mut off) = (vec![], vec![]);
    for (url, (relevance, role)) in &rows {
        match web.farm.topic_of(url) {
            Some(t) => {
                assert_eq!(role.as_deref(), Some("content"), "{url}");
                let r = relevance.unwrap_or_else(|| panic!("{url}: an article has a relevance"));
                assert!((0.0..=1.0).contains(&r));
                if t == topic {
                    on.push(r);
                } else {
                    off.push(r);
                }
            }
            None => {
                assert_eq!(role.as_deref(), Some("nav"), "{url}: navigation pages are nav");
                assert_eq!(*relevance, None, "{url}: nav pages are not scored");
            }
        }
    }
    assert!(on.len() >= 15 && off.len() >= 40, "{} on topic, {} off: {summary}", on.len(), off.len());
    let above = |v: &[f64]| v.iter().filter(|&&r| r >= 0.3).count() as f64 / v.len() as f64;
    assert!(above(&on) >= 0.95, "on-topic articles above the threshold: {:.2} of {}: {on:?}", above(&on), on.len());
    assert!(above(&off) <= 0.05, "other articles above the threshold: {:.2} of {}: {off:?}", above(&off), off.len());

    // The summary counts what the rows say, layer by layer.
    let relevant = rows.values().filter(|(r, _)| r.is_some_and(|r| r >= 0.3)).count() as u64;
    let scored = rows.values().filter(|(r, _)| r.is_some()).count() as u64;
    let layers = summary["layers"].as_array().expect("layers");
    let sum = |k: &str| layers.iter().map(|l| l[k].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!((sum("relevant"), sum("scored")), (relevant, scored), "{summary}");
    let l2 = &layers[2];
    let rate = l2["relevant"].as_f64().expect("relevant") / l2["fetched"].as_f64().expect("fetched");
    assert!((l2["harvest_rate"].as_f64().expect("harvest rate") - rate).abs() < 1e-9, "{summary}");

    // Links are scored: a link to an article of the plan's topic (its
    // anchor is that article's title) scores above one to another topic's.
    let (mut to_on, mut to_off) = (vec![], vec![]);
    for (_, b) in read_all(&data.join("links")) {
        let dst = b.column_by_name("dst_url").expect("dst_url").as_string::<i32>().clone();
        let score = b.column_by_name("score").expect("a score column").as_primitive::<Float32Type>().clone();
        for i in 0..b.num_rows() {
            assert!(!score.is_null(i), "every link of a run with a plan has a score");
            let v = score.value(i);
            assert!((0.0..=1.0).contains(&v));
            match web.farm.topic_of(dst.value(i)) {
                Some(t) if t == topic => to_on.push(v),
                Some(_) => to_off.push(v),
                None => {}
            }
        }
    }
    let ordered = to_on.iter().map(|a| to_off.iter().filter(|b| a > *b).count()).sum::<usize>() as f64
        / (to_on.len() * to_off.len()).max(1) as f64;
    assert!(ordered >= 0.9, "links to the topic outrank links to others in {ordered:.3} of the pairs");

    // The template's two searches joined the seeds: nav pages, crawled.
    let searches: Vec<&String> = rows.keys().filter(|u| u.contains("/topics/search?q=")).collect();
    assert_eq!(searches.len(), 2, "{searches:?}");
    let first = TOPICS[topic].2[0];
    assert!(searches[0].starts_with(&format!("http://s000.test/topics/search?q={first}")), "{searches:?}");
    for s in searches {
        assert_eq!(rows[s].1.as_deref(), Some("nav"));
    }
}

#[test]
fn with_a_plan_each_layer_is_written_and_fetched_best_first() {
    let (web, topic, file) = web_and_plan();
    let data = web.dir("data");
    // One request at a time per host: its pages start in queue order.
    let args = ["--delay", "0", "--per-host", "1", "--plan", file.to_str().expect("utf-8")];
    crawl_ok(&web.run_args(&data, 2, &args));

    // Layer 2's input: every row has the best score of the links to it,
    // written best first; the plan's articles come first.
    // (Each partition's share is in its own order: pairs are counted within one.)
    let (mut on_total, mut pairs, mut ahead) = (0usize, 0usize, 0usize);
    let mut priority: BTreeMap<String, i32> = BTreeMap::new();
    for (_, b) in read_all(&data.join("in").join("layer=2")) {
        let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let prio = b.column_by_name("priority").expect("priority").as_primitive::<Int32Type>().clone();
        let (mut on, mut off) = (vec![], vec![]);
        for i in 0..b.num_rows() {
            assert!(!prio.is_null(i), "{}: a linked URL has a priority", url.value(i));
            priority.insert(url.value(i).to_string(), prio.value(i));
            if i > 0 {
                assert!(prio.value(i) <= prio.value(i - 1), "best first: {} after {}", url.value(i), url.value(i - 1));
            }
            match web.farm.topic_of(url.value(i)) {
                Some(t) if t == topic => on.push(i),
                Some(_) => off.push(i),
                None => {}
            }
        }
        on_total += on.len();
        pairs += on.len() * off.len();
        ahead += on.iter().map(|a| off.iter().filter(|b| a < *b).count()).sum::<usize>();
    }
    assert!(pairs > 100, "{pairs} pairs");

    // Each row also carries the anchor text of its best link in layer 1
    // (the smallest of the best's on a tie), for its page's relevance.
    let mut best: BTreeMap<String, (f32, String)> = BTreeMap::new();
    for (layer, b) in read_all(&data.join("links")) {
        if layer != 1 {
            continue;
        }
        let dst = b.column_by_name("dst_url").expect("dst_url").as_string::<i32>().clone();
        let anchor = b.column_by_name("anchor").expect("anchor").as_string::<i32>().clone();
        let noise = b.column_by_name("noise").expect("noise").as_string::<i32>().clone();
        let score = b.column_by_name("score").expect("score").as_primitive::<Float32Type>().clone();
        for i in 0..b.num_rows() {
            // Links the shuffle never sees: nofollow, out of scope, held back by a rule.
            if !noise.is_null(i) && ["nofollow", "scope", "rule"].contains(&noise.value(i)) {
                continue;
            }
            let candidate = (score.value(i), anchor.value(i).to_string());
            let e = best.entry(dst.value(i).to_string()).or_insert_with(|| candidate.clone());
            if candidate.0 > e.0 || (candidate.0 == e.0 && candidate.1 < e.1) {
                *e = candidate;
            }
        }
    }
    let mut anchors = 0;
    for (_, b) in read_all(&data.join("in").join("layer=2")) {
        let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let anchor = b.column_by_name("anchor").expect("an anchor column").as_string::<i32>().clone();
        for i in 0..b.num_rows() {
            let want = best.get(url.value(i)).unwrap_or_else(|| panic!("{}: linked in layer 1", url.value(i)));
            assert!(!anchor.is_null(i), "{}: a scored URL has its best link's anchor", url.value(i));
            let want = (layercrawl::store::schema::priority_of(want.0), want.1.as_str());
            assert_eq!((priority[url.value(i)], anchor.value(i)), want, "{}", url.value(i));
            anchors += usize::from(!anchor.value(i).is_empty());
        }
    }
    assert!(anchors > 50, "{anchors} rows with a non-empty anchor");

    // Each host's pages of layer 2 started in that order: the priorities of
    // its rows, by fetch time, never rise.
    let mut by_host: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for (layer, b) in read_all(&data.join("doc")) {
        if layer != 2 {
            continue;
        }
        let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let host = b.column_by_name("host").expect("host").as_string::<i32>().clone();
        let at = b.column_by_name("fetched_at").expect("fetched_at").as_primitive::<TimestampMicrosecondType>().clone();
        for i in 0..b.num_rows() {
            by_host.entry(host.value(i).to_string()).or_default().push((at.value(i), url.value(i).to_string()));
        }
    }
    let mut fetched_on = 0;
    for (host, mut pages) in by_host {
        pages.sort();
        let p: Vec<i32> = pages.iter().map(|(_, u)| priority[u]).collect();
        assert!(p.windows(2).all(|w| w[0] >= w[1]), "{host}: fetched in this order of priority: {p:?}");
        fetched_on += pages.iter().filter(|(_, u)| web.farm.topic_of(u) == Some(topic)).count();
    }
    assert_eq!(fetched_on, on_total, "every article of the topic in the input was fetched");
    let ahead = ahead as f64 / pairs as f64;
    assert!(ahead >= 0.9, "the plan's articles are ahead of the others in {ahead:.3} of the pairs");
}

#[test]
fn the_summary_measures_target_recall_against_a_truth_file() {
    let web = web();
    let (topic, plan) = budget_topic(&web);
    let truth = web.farm.topic_truth(3);
    let relevant: std::collections::BTreeSet<&str> = truth.relevant(topic).into_iter().collect();
    let file = web.dir("truth.txt");
    let listed: Vec<&str> = relevant.iter().copied().collect();
    std::fs::write(&file, format!("# the topic's articles within depth 3\n{}\n", listed.join("\n"))).expect("truth");
    let data = web.dir("data");
    let args = ["--delay", "0", "--max-pages", "10", "--plan", plan.to_str().expect("utf-8"), "--truth"];
    let mut args: Vec<&str> = args.to_vec();
    args.push(file.to_str().expect("utf-8"));
    let summary = crawl_ok(&web.run_args(&data, 3, &args));
    // Each layer's count is its doc rows that the truth lists; the recall
    // is the running total over the truth's size.
    let docs = common::read_docs(&data);
    let mut so_far = 0;
    for l in summary["layers"].as_array().expect("layers") {
        let layer = i32::try_from(l["layer"].as_u64().expect("layer")).expect("small");
        let found = docs.iter().filter(|d| d.layer == layer && relevant.contains(d.url.as_str())).count() as u64;
        assert_eq!(l["truth_found"].as_u64(), Some(found), "{l}");
        so_far += found;
        let recall = l["recall"].as_f64().expect("a recall");
        assert!((recall - so_far as f64 / relevant.len() as f64).abs() < 1e-9, "{l}");
    }
    assert!(
        so_far > 0 && so_far < relevant.len() as u64,
        "a budget finds some, not all: {so_far} of {}",
        relevant.len()
    );
    // A line that is not a URL is refused before anything is crawled.
    std::fs::write(&file, "http://s000.test/\nnot a url\n").expect("truth");
    let bad = web.dir("bad");
    let out = layercrawl(&web.run_args(&bad, 1, &["--truth", file.to_str().expect("utf-8")]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("option `truth`") && err.contains("truth.txt:2:"), "{err}");
    assert!(!bad.join("doc").exists(), "nothing was crawled");
}

#[test]
fn the_ant_order_without_a_plan_is_refused_saying_what_to_add() {
    let web = web();
    let data = web.dir("data");
    let out = layercrawl(&web.run_args(&data, 1, &["--order", "ant"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("option `order`") && err.contains("add --plan FILE"), "{err}");
    assert!(!data.join("doc").exists(), "nothing was crawled");
}

#[test]
fn a_bad_plan_is_refused_with_every_problem_where_it_is() {
    let web = web();
    let plan = web.dir("bad.toml");
    std::fs::write(&plan, "threshold = 2\n[[group]]\nany = ['x^zero']\n[[role]]\nrole = 'hub'\nurls = ['**']\n")
        .expect("plan");
    let data = web.dir("data");
    let out = layercrawl(&web.run_args(&data, 1, &["--plan", plan.to_str().expect("utf-8")]));
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let file = plan.display().to_string();
    for want in [
        format!("{file}:1:13: threshold 2: a relevance is from 0 to 1"),
        format!("{file}:3:8: \"x^zero\": the weight after ^ must be a number above 0"),
        format!("{file}:5:8: role \"hub\""),
    ] {
        assert!(err.contains(&want), "missing {want:?} in:\n{err}");
    }
    assert!(!data.join("doc").exists(), "nothing was crawled");

    // `plan check` says the same, and exits 2.
    let out = layercrawl(&["plan", "check", plan.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{file}:3:8:")));
}

#[test]
fn plan_check_shows_what_a_good_plan_makes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("plan.toml");
    std::fs::write(&file, plan(1)).expect("plan");
    let out = layercrawl(&["plan", "check", file.to_str().expect("utf-8"), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["ok"], true);
    assert_eq!(v["name"], TOPICS[1].0);
    assert_eq!(v["groups"][0]["any"].as_array().map(Vec::len), Some(11));
    let seeds: Vec<&str> = v["seeds"].as_array().expect("seeds").iter().filter_map(|s| s.as_str()).collect();
    assert_eq!(
        seeds,
        [
            format!("http://s000.test/topics/search?q={}", TOPICS[1].2[0]),
            format!("http://s000.test/topics/search?q={}", TOPICS[1].2[1]),
        ]
    );
}
