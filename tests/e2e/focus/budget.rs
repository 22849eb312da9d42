//! A page budget (`--max-pages`) with a crawl plan: best first, breadth
//! first and the ant-colony order compared by the topic's articles they
//! harvest, and the budget shared among partitions by the whole layer's
//! priorities.

use super::*;

/// The page budget tests' topic: not the web's most common, the least
/// common of those with a dozen articles within reach; and its plan file.
pub(super) fn budget_topic(web: &Web) -> (usize, std::path::PathBuf) {
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
