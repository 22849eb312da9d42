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

/// The page budget tests' topic: not the web's most common, the least
/// common of those with a dozen articles within reach; and its plan file.
fn budget_topic(web: &Web) -> (usize, std::path::PathBuf) {
    let truth = web.farm.topic_truth(3);
    let topic = (0..TOPICS.len())
        .filter(|&t| truth.relevant(t).len() >= 12)
        .min_by_key(|&t| truth.relevant(t).len())
        .expect("a topic");
    let file = web.dir("plan.toml");
    std::fs::write(&file, plan(topic)).expect("plan");
    (topic, file)
}

/// What a crawl to depth 3 in `order` under a budget of 25 pages a layer,
/// into the folder `name`, fetched after the seeds' layer: the topic's
/// articles, all pages; its summary and data folder.
fn budget_crawl(web: &Web, plan: &Path, topic: usize, order: &str, name: &str) -> (usize, usize, Value, PathBuf) {
    let data = web.dir(name);
    let args = ["--delay", "0", "--max-pages", "25", "--order", order, "--plan", plan.to_str().expect("utf-8")];
    let summary = crawl_ok(&web.run_args(&data, 3, &args));
    let layers = summary["layers"].as_array().expect("layers").clone();
    for l in &layers {
        assert!(l["fetched"].as_u64().expect("fetched") <= 25, "{l}");
    }
    let cut: u64 = layers.iter().map(|l| l["budget_cut"].as_u64().unwrap_or(0)).sum();
    assert!(cut > 0, "the budget cut something: {summary}");
    let fetched: Vec<String> = common::read_docs(&data).into_iter().filter(|d| d.layer > 0).map(|d| d.url).collect();
    let on = fetched.iter().filter(|u| web.farm.topic_of(u) == Some(topic)).count();
    (on, fetched.len(), summary, data)
}

#[test]
fn under_a_page_budget_best_first_harvests_more_than_breadth_first() {
    let web = web();
    let (topic, file) = budget_topic(&web);
    let (best, best_n, s1, _) = budget_crawl(&web, &file, topic, "best-first", "best-first");
    let (bfs, bfs_n, s2, _) = budget_crawl(&web, &file, topic, "bfs", "bfs");
    eprintln!("best-first {best} of {best_n}, bfs {bfs} of {bfs_n}");
    assert!(best_n <= 75 && bfs_n <= 75);
    assert!(best as f64 >= 1.5 * bfs as f64, "best-first {best} of {best_n}, bfs {bfs} of {bfs_n}: {s1} {s2}");
}

/// Layer `layer`'s input over all partitions: url → (partition, priority).
fn layer_input(data: &Path, layer: u32) -> BTreeMap<String, (u32, Option<i32>)> {
    let mut out = BTreeMap::new();
    for path in common::parquet_files(&data.join(format!("in/layer={layer}"))) {
        let name = path.file_stem().and_then(|n| n.to_str()).expect("name");
        let part: u32 = name.trim_start_matches("part-").parse().expect("part-KKKKK");
        for b in common::read_file(&path) {
            let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
            let prio = b.column_by_name("priority").expect("priority").as_primitive::<Int32Type>().clone();
            for i in 0..b.num_rows() {
                out.insert(url.value(i).to_string(), (part, (!prio.is_null(i)).then(|| prio.value(i))));
            }
        }
    }
    out
}

#[test]
fn a_page_budget_goes_to_the_best_urls_of_the_whole_layer_whatever_their_partition() {
    let web = web();
    let (topic, file) = budget_topic(&web);
    // The magazine site that favours the topic, alone in its partition: its
    // links are the layer's strong ones, the other partition's weak.
    let share = |origin: &str| {
        (0..ARTICLES).filter(|id| web.farm.topic_of(&format!("{origin}/topics/a/{id}")) == Some(topic)).count()
    };
    let mut hosts: Vec<(usize, String)> = web
        .farm
        .topic_start_urls()
        .iter()
        .map(|u| {
            let origin = u.trim_end_matches("/topics/");
            (share(origin), origin.trim_start_matches("http://").to_string())
        })
        .collect();
    hosts.sort();
    let (strong, weak) = hosts.split_last().expect("sites");
    let of = |host: &str, p: u32| layercrawl::partition::partition_of_host(host, p);
    let parts = (2..64)
        .find(|&p| weak.iter().all(|(_, h)| of(h, p) != of(&strong.1, p)))
        .expect("a partition count that sets the favoured site apart");
    let strong_part = of(&strong.1, parts);
    eprintln!("{hosts:?}: {parts} partitions, the strong site in {strong_part}");

    let crawl = |name: &str| {
        let data = web.dir(name);
        let p = parts.to_string();
        let args = ["--delay", "0", "--max-pages", "25", "--partitions", &p, "--plan", file.to_str().expect("utf-8")];
        let summary = crawl_ok(&web.run_args(&data, 3, &args));
        (data, summary)
    };
    let (data, summary) = crawl("data");
    let docs = common::read_docs(&data);
    let (mut cut_layers, mut strong_fetched, mut strong_input, mut weak_fetched, mut weak_input) = (0, 0, 0, 0, 0);
    let mut strong_proportional = 0;
    for layer in 1..=3u32 {
        let input = layer_input(&data, layer);
        let fetched: std::collections::BTreeSet<&str> =
            docs.iter().filter(|d| d.layer == layer as i32).map(|d| d.url.as_str()).collect();
        let l = &summary["layers"][layer as usize];
        if input.len() <= 25 {
            assert_eq!(fetched.len(), input.len(), "layer {layer} fits its budget: {l}");
            continue;
        }
        cut_layers += 1;
        // The total is the budget, and the fetched URLs are the layer's best.
        assert_eq!(fetched.len(), 25, "layer {layer}: {l}");
        assert!(fetched.iter().all(|u| input.contains_key(*u)), "layer {layer} fetched its input only");
        let worst_fetched = fetched.iter().map(|u| input[*u].1).min().expect("fetched");
        let carried: Vec<&String> = input.keys().filter(|u| !fetched.contains(u.as_str())).collect();
        let best_carried = carried.iter().map(|u| input[*u].1).max().expect("carried");
        assert!(
            worst_fetched >= best_carried,
            "layer {layer}: fetched down to {worst_fetched:?}, carried from {best_carried:?}"
        );
        // The layer's input manifest has the cutoff and the quotas.
        let manifest: Value = serde_json::from_str(
            &std::fs::read_to_string(data.join(format!("state/manifest/layer={layer}/in.json"))).expect("in.json"),
        )
        .expect("JSON");
        let budget = &manifest["budget"];
        assert_eq!(budget["cutoff"].as_i64().map(|c| i32::try_from(c).expect("i32")), worst_fetched, "{budget}");
        let quotas: Vec<u64> = budget["quotas"].as_array().expect("quotas").iter().filter_map(Value::as_u64).collect();
        assert_eq!(quotas.iter().sum::<u64>(), 25, "{budget}");
        for (k, q) in quotas.iter().enumerate() {
            let got = fetched.iter().filter(|u| input[**u].0 as usize == k).count() as u64;
            assert_eq!(got, *q, "layer {layer}, partition {k}: {budget}");
        }
        assert_eq!(l["budget_cut"].as_u64(), Some(input.len() as u64 - 25), "{l}");
        // Nothing is lost: what was not fetched is carried into the next layer.
        if layer < 3 {
            let next = layer_input(&data, layer + 1);
            let lost: Vec<&&String> = carried.iter().filter(|u| !next.contains_key(u.as_str())).collect();
            assert!(lost.is_empty(), "layer {layer} lost {lost:?}");
        }
        let strong_here = input.values().filter(|(k, _)| *k == strong_part).count();
        strong_proportional += 25 * strong_here / input.len();
        for (u, (k, _)) in &input {
            let (f, i) = if *k == strong_part {
                (&mut strong_fetched, &mut strong_input)
            } else {
                (&mut weak_fetched, &mut weak_input)
            };
            *i += 1;
            *f += usize::from(fetched.contains(u.as_str()));
        }
    }
    assert!(cut_layers >= 2, "the budget cut at least two layers: {summary}");
    // The strong partition's URLs went first: more of its input was fetched
    // than a share in proportion to the inputs would have given it (the
    // same part of each partition's input).
    eprintln!(
        "strong partition: {strong_fetched} of {strong_input} (in proportion: {strong_proportional}); the other: {weak_fetched} of {weak_input}"
    );
    assert!(strong_fetched > strong_proportional + 3, "strong {strong_fetched}, in proportion {strong_proportional}");
    assert!(
        4 * strong_fetched * weak_input > 5 * weak_fetched * strong_input,
        "strong {strong_fetched} of {strong_input}, weak {weak_fetched} of {weak_input}"
    );

    // What a budget keeps does not depend on when pages came back: the same
    // crawl again fetches the same URLs in every layer.
    let (again, _) = crawl("again");
    let by_layer = |d: &Path| {
        let mut v: Vec<(i32, String)> = common::read_docs(d).into_iter().map(|d| (d.layer, d.url)).collect();
        v.sort();
        v
    };
    assert_eq!(by_layer(&again), by_layer(&data));
}

/// A `state/focus/pheromone` file's rows: cluster → (pages, τ).
fn pheromone_rows(batches: &[arrow_array::RecordBatch]) -> BTreeMap<String, (u64, f64)> {
    let mut out = BTreeMap::new();
    for b in batches {
        for r in ant::rows(b, "tau").expect("columns cluster, pages, tau") {
            out.insert(r.cluster, (r.pages, r.value));
        }
    }
    out
}

#[test]
fn under_a_page_budget_the_ant_order_harvests_at_least_what_breadth_first_does_and_learns_where_the_topic_is() {
    let web = web();
    let (topic, file) = budget_topic(&web);
    let (ant_on, ant_n, s1, data) = budget_crawl(&web, &file, topic, "ant", "ant");
    let (bfs_on, bfs_n, s2, _) = budget_crawl(&web, &file, topic, "bfs", "bfs");
    eprintln!("ant {ant_on} of {ant_n}, bfs {bfs_on} of {bfs_n}");
    assert!(ant_n <= 75 && bfs_n <= 75);
    assert!(ant_on >= bfs_on, "ant {ant_on} of {ant_n}, bfs {bfs_on} of {bfs_n}: {s1} {s2}");

    // Every page scored, by layer: (layer, url).
    let mut scored: Vec<(i32, String)> = Vec::new();
    for (layer, b) in read_all(&data.join("doc")) {
        let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let rel = b.column_by_name("relevance").expect("relevance").as_primitive::<Float64Type>().clone();
        scored.extend((0..b.num_rows()).filter(|&i| !rel.is_null(i)).map(|i| (layer, url.value(i).to_string())));
    }
    // One table per layer that was optimised (0 to 2, and 3 when pages
    // carried into it had links within the depth: their catch-up input is
    // built to be counted, not fetched, under the budget) and had pages
    // scored so far: the seeds' layer fetched only nav pages, so it has none.
    let mut tables: BTreeMap<i32, BTreeMap<String, (u64, f64)>> = BTreeMap::new();
    for (layer, b) in read_all(&data.join("state/focus/pheromone")) {
        tables.entry(layer).or_default().extend(pheromone_rows(&[b]));
    }
    assert!(!scored.iter().any(|(l, _)| *l == 0), "the seeds are nav pages");
    let catch_up = data.join("in/layer=4").exists();
    let want: &[i32] = if catch_up { &[1, 2, 3] } else { &[1, 2] };
    assert_eq!(tables.keys().copied().collect::<Vec<_>>(), want, "a table per layer with pages scored");
    // Each table counts every page scored up to its layer in its cluster.
    for (&layer, table) in &tables {
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for (_, url) in scored.iter().filter(|(l, _)| *l <= layer) {
            *want.entry(ant::cluster(url)).or_default() += 1;
        }
        let got: BTreeMap<String, u64> = table.iter().map(|(c, (n, _))| (c.clone(), *n)).collect();
        assert_eq!(got, want, "layer {layer}");
        assert!(table.values().all(|(_, tau)| (0.0..=1.0).contains(tau)), "{table:?}");
    }
    // Where the topic is: a site's article cluster ranks by the share of
    // its articles about the topic, the site that favours it first.
    let last = &tables[&2];
    let mut sites: Vec<(f64, f64, String)> = Vec::new();
    for seed in web.farm.topic_start_urls() {
        let origin = seed.trim_end_matches("/topics/");
        let on =
            (0..ARTICLES).filter(|id| web.farm.topic_of(&format!("{origin}/topics/a/{id}")) == Some(topic)).count();
        let c = ant::cluster(&format!("{origin}/topics/a/0"));
        let tau = last.get(&c).unwrap_or_else(|| panic!("{c}: articles of every site were scored: {last:?}")).1;
        sites.push((f64::from(u32::try_from(on).expect("small")) / f64::from(ARTICLES), tau, c));
    }
    sites.sort_by(|a, b| b.0.total_cmp(&a.0));
    eprintln!("sites (share of the topic, τ): {sites:?}");
    let (top, rest) = sites.split_first().expect("sites");
    for other in rest.iter().filter(|o| o.0 <= top.0 / 2.0) {
        assert!(top.1 > other.1, "{} ({:.2} of the topic) above {} ({:.2}): {sites:?}", top.2, top.0, other.2, other.0);
    }

    // Each partition's share of layer 2's input is in the ant's order:
    // link score times the pheromone of layer 1's table of that partition.
    let mut rows = 0;
    for path in common::parquet_files(&data.join("in/layer=2")) {
        let name = path.file_name().and_then(|n| n.to_str()).expect("name");
        let table = data.join("state/focus/pheromone/layer=1").join(name);
        let p = ant::Pheromone::from_rows(
            pheromone_rows(&common::read_file(&table))
                .into_iter()
                .map(|(cluster, (pages, value))| ant::ClusterRow { cluster, pages, value })
                .collect(),
        );
        let mut keys = Vec::new();
        for b in common::read_file(&path) {
            let url = b.column_by_name("url").expect("url").as_string::<i32>().clone();
            let prio = b.column_by_name("priority").expect("priority").as_primitive::<Int32Type>().clone();
            for i in 0..b.num_rows() {
                keys.push(p.priority(url.value(i), (!prio.is_null(i)).then(|| prio.value(i))));
            }
        }
        rows += keys.len();
        assert!(keys.windows(2).all(|w| w[0] >= w[1]), "{name}: {keys:?}");
    }
    assert!(rows > 25, "layer 2's input: {rows} rows");

    // The same crawl again from scratch learns the same tables: deposits
    // are exact sums, and what a budget keeps does not depend on the order
    // pages come back in.
    let (again_on, _, _, again) = budget_crawl(&web, &file, topic, "ant", "ant-again");
    assert_eq!(again_on, ant_on);
    for layer in [1, 2] {
        let dir = format!("state/focus/pheromone/layer={layer}");
        let read = |d: &Path| pheromone_rows(&read_all(&d.join(&dir)).into_iter().map(|(_, b)| b).collect::<Vec<_>>());
        assert_eq!(read(&again), read(&data), "layer {layer}");
    }
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
