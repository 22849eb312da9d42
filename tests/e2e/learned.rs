//! The learned order (`--order learned`; docs/src/focused-crawling.md): real
//! crawls of the test web's topical magazine (`--topics N`) under a page
//! budget, and the state files the order keeps, read back.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::Array;
use common::{crawl_ok, layercrawl, read_all, read_file, Web};
use layercrawl::focus::learned::{dqn::Dqn, embed, nn, replay::Steps, rng::Rng, FEATURES, REPLAY_CAPACITY};
use layercrawl::urlnorm::fingerprint_str;
use serde_json::Value;
use testweb::topics::TOPICS;
use testweb::{Farm, FarmConfig};

const DEPTH: u32 = 3;
const BUDGET: u64 = 25;

fn web() -> Web {
    let cfg = FarmConfig { sites: 3, pages: 10, faults: false, topics: 40, seed: 5, ..FarmConfig::default() };
    let farm = Farm::start_background(cfg).expect("test web");
    let seeds = farm.topic_start_urls();
    Web::with_seeds(farm, &seeds)
}

/// A plan for the least common topic with a dozen articles within reach:
/// its name and ten of its words; the magazine's lists are nav pages.
fn plan(web: &Web) -> PathBuf {
    let truth = web.farm.topic_truth(DEPTH);
    let topic = (0..TOPICS.len())
        .filter(|&t| truth.relevant(t).len() >= 12)
        .min_by_key(|&t| truth.relevant(t).len())
        .expect("a topic");
    let words: Vec<String> = testweb::topics::plan_words(topic).iter().map(|w| format!("{w:?}")).collect();
    let text = format!(
        "name = {:?}\nthreshold = 0.3\n[[group]]\nany = [{}]\n[[role]]\nrole = \"nav\"\nurls = [\"http://*/topics/\", \"http://*/topics/*/\"]\n",
        TOPICS[topic].0,
        words.join(", ")
    );
    let file = web.dir("plan.toml");
    std::fs::write(&file, text).expect("plan");
    file
}

/// A crawl to depth 3 in the learned order, `BUDGET` pages a layer, into `name`.
fn crawl(web: &Web, plan: &Path, name: &str) -> (Value, PathBuf) {
    let data = web.dir(name);
    let budget = BUDGET.to_string();
    let args = ["--delay", "0", "--max-pages", &budget, "--order", "learned", "--plan", plan.to_str().expect("utf-8")];
    (crawl_ok(&web.run_args(&data, DEPTH, &args)), data)
}

/// The `url` column of every file under `dir`, per layer, in file order.
fn urls_by_layer(dir: &Path) -> BTreeMap<i32, Vec<String>> {
    let mut out: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for (layer, b) in read_all(dir) {
        let u = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        out.entry(layer).or_default().extend(u.iter().flatten().map(str::to_string));
    }
    out
}

/// The `url` column of one Parquet file, in its order.
fn file_urls(path: &Path) -> Vec<String> {
    read_file(path)
        .iter()
        .flat_map(|b| {
            b.column_by_name("url")
                .expect("url")
                .as_string::<i32>()
                .iter()
                .flatten()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The learned order's files of one kind, per layer and partition file name.
fn state_files(data: &Path, kind: &str) -> BTreeMap<(u32, String), PathBuf> {
    let mut out = BTreeMap::new();
    let Ok(layers) = std::fs::read_dir(data.join("state/focus/learned").join(kind)) else { return out };
    for l in layers.flatten() {
        let name = l.file_name().to_string_lossy().to_string();
        let layer: u32 = name.strip_prefix("layer=").and_then(|n| n.parse().ok()).expect("layer=L");
        for f in std::fs::read_dir(l.path()).expect("layer folder").flatten() {
            out.insert((layer, f.file_name().to_string_lossy().to_string()), f.path());
        }
    }
    out
}

fn arrays(path: &Path) -> HashMap<String, nn::Array> {
    nn::decode(&std::fs::read(path).expect("read")).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn steps(path: &Path, value: &str) -> Steps {
    Steps::from_arrays(&arrays(path), value).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn stem(name: &str) -> &str {
    name.split('.').next().expect("a name")
}

#[test]
fn under_a_page_budget_the_learned_order_keeps_or_carries_every_url_and_its_files_read_back() {
    let web = web();
    let plan = plan(&web);
    let (summary, data) = crawl(&web, &plan, "learned");
    let layers = summary["layers"].as_array().expect("layers");
    assert_eq!(layers.len(), DEPTH as usize + 1, "{summary}");
    let cut: u64 = layers.iter().map(|l| l["budget_cut"].as_u64().unwrap_or(0)).sum();
    assert!(cut > 0, "the budget cut something: {summary}");
    for l in layers {
        assert!(l["fetched"].as_u64().expect("fetched") <= BUDGET, "{l}");
    }

    // Every URL of a layer's input was fetched, carried into the next, or
    // held back in the layer by the noise filter (a `skipped` row of the
    // layer: docs/src/noise-filter.md, "Gates").
    let input = urls_by_layer(&data.join("in"));
    let docs = urls_by_layer(&data.join("doc"));
    let carried = urls_by_layer(&data.join("state/carry"));
    let skipped = urls_by_layer(&data.join("skipped"));
    for layer in 0..=DEPTH as i32 {
        let want: BTreeSet<&String> = input.get(&layer).map(|v| v.iter().collect()).unwrap_or_default();
        let fetched: BTreeSet<&String> = docs.get(&layer).map(|v| v.iter().collect()).unwrap_or_default();
        let kept: BTreeSet<&String> = carried.get(&layer).map(|v| v.iter().collect()).unwrap_or_default();
        let held: BTreeSet<&String> =
            skipped.get(&layer).map(|v| v.iter().filter(|u| want.contains(u)).collect()).unwrap_or_default();
        assert!(fetched.is_disjoint(&kept), "layer {layer}: a URL both fetched and carried");
        assert!(held.is_disjoint(&fetched) && held.is_disjoint(&kept), "layer {layer}: a URL held back went on");
        let all: BTreeSet<&String> = fetched.union(&kept).chain(&held).copied().collect();
        assert_eq!(all, want, "layer {layer}: fetched, carried and held back make the input");
        if layer < DEPTH as i32 {
            let next: BTreeSet<&String> = input[&(layer + 1)].iter().collect();
            assert!(kept.is_subset(&next), "layer {layer}'s carried URLs are in layer {}'s input", layer + 1);
        }
    }
    assert!(carried.values().map(Vec::len).sum::<usize>() > 0, "the budget carried URLs over");

    // Each page's reward: its relevance when it has one, else 0.
    let mut relevance: HashMap<String, Option<f64>> = HashMap::new();
    for (_, b) in read_all(&data.join("doc")) {
        let u = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let r = b.column_by_name("relevance").expect("relevance").as_primitive::<Float64Type>().clone();
        for i in 0..b.num_rows() {
            relevance.insert(u.value(i).to_string(), (!r.is_null(i)).then(|| r.value(i)));
        }
    }
    let outcomes = urls_by_layer(&data.join("state/focus/learned/outcomes"));
    let mut rewards: HashMap<(u32, u64), f32> = HashMap::new();
    let (mut scored, mut unscored) = (0, 0);
    for (layer, b) in read_all(&data.join("state/focus/learned/outcomes")) {
        let u = b.column_by_name("url").expect("url").as_string::<i32>().clone();
        let r = b.column_by_name("reward").expect("reward").as_primitive::<Float64Type>().clone();
        for i in 0..b.num_rows() {
            let (url, reward) = (u.value(i), r.value(i));
            rewards.insert((u32::try_from(layer).expect("layer"), fingerprint_str(url)), reward as f32);
            match relevance.get(url).unwrap_or_else(|| panic!("layer {layer}: {url} has a doc row")) {
                Some(rel) => {
                    assert!((reward - rel).abs() < 1e-6, "{url}: reward {reward}, relevance {rel}");
                    scored += 1;
                }
                None => {
                    assert_eq!(reward, 0.0, "{url}: no relevance, no reward");
                    unscored += 1;
                }
            }
        }
    }
    assert!(scored > 20 && unscored > 3, "pages scored {scored}, not scored {unscored}");
    for (layer, urls) in &docs {
        let mut got = outcomes.get(layer).cloned().unwrap_or_default();
        let mut want = urls.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "layer {layer}: an outcome per page fetched");
    }

    // The draws of each layer are its input's first rows, in order; the
    // transitions are the draws that the layer fetched, with their page's
    // reward (a draw carried over is drawn again in the next layer).
    let draws = state_files(&data, "draws");
    let transitions = state_files(&data, "transitions");
    assert!(!draws.is_empty() && !transitions.is_empty());
    // Under the budget, pages carried into the last layer may have links
    // within the depth: their catch-up layer's input is built (and drawn)
    // to count them, not fetched.
    let catch_up = u32::from(data.join(format!("in/layer={}", DEPTH + 1)).exists());
    let last = DEPTH + catch_up;
    assert!(draws.keys().all(|(l, _)| (1..=last).contains(l)), "layers 1 to {last} are drawn: {draws:?}");
    let mut added: BTreeMap<(u32, String), usize> = BTreeMap::new();
    for ((layer, name), path) in &draws {
        let d = steps(path, "q");
        let file = data.join(format!("in/layer={layer}/{}.parquet", stem(name)));
        let rows = file_urls(&file);
        assert!(d.len() <= rows.len() && !d.is_empty());
        for (i, url) in rows.iter().take(d.len()).enumerate() {
            assert_eq!(d.fingerprint(i), fingerprint_str(url), "{}: draw {i}", file.display());
        }
        assert!(d.done(rows.len() - 1) || d.len() < rows.len(), "the last draw has no next state");
        let t = transitions.get(&(*layer, name.clone())).map(|p| steps(p, "reward")).unwrap_or_default();
        let fetched: Vec<usize> = (0..d.len()).filter(|&i| rewards.contains_key(&(*layer, d.fingerprint(i)))).collect();
        assert_eq!(t.len(), fetched.len(), "layer {layer} {name}: a transition per draw fetched");
        for (k, &i) in fetched.iter().enumerate() {
            assert_eq!(t.fingerprint(k), d.fingerprint(i));
            assert_eq!(t.phi_of(k), d.phi_of(i));
            assert_eq!(t.value[k], rewards[&(*layer, d.fingerprint(i))]);
        }
        added.insert((*layer, stem(name).to_string()), t.len());
    }

    // Per layer 0 to 2 and partition: a model and a replay buffer. The
    // buffer holds every transition so far; the model read back gives the
    // Q-values the next layer was drawn with.
    let models = state_files(&data, "model");
    let replays = state_files(&data, "replay");
    assert!(models.keys().any(|(l, _)| *l == 0) && models.keys().any(|(l, _)| *l == DEPTH - 1), "{models:?}");
    assert!(models.keys().all(|(l, _)| *l < last), "the last layer fetched is optimised only for a catch-up input");
    let mut checked = 0;
    for ((layer, name), path) in &models {
        let a = arrays(path);
        assert_eq!(a["enc.emb"].shape, [embed::VOCAB, embed::EMB]);
        assert_eq!(a["q.l1.w"].shape, [32, FEATURES]);
        assert_eq!(a["target.l3.w"].shape, [1, 32]);
        let stats: Value = serde_json::from_slice(
            &std::fs::read(data.join(format!("state/focus/learned/stats/layer={layer}/{}.json", stem(name))))
                .expect("a stats file beside the model"),
        )
        .expect("stats JSON");
        assert_eq!(
            a["dqn_steps"].ints().expect("i64")[0],
            stats["dqn_steps_total"].as_i64().expect("steps"),
            "{stats}"
        );
        let so_far: usize = added.iter().filter(|((l, n), _)| *l <= *layer && n == stem(name)).map(|(_, n)| n).sum();
        let replay = replays.get(&(*layer, name.clone())).map(|p| steps(p, "reward"));
        assert_eq!(replay.map_or(0, |r| r.len()), so_far.min(REPLAY_CAPACITY), "layer {layer} {name}");
        if so_far > 0 {
            assert!(stats["dqn_steps"].as_u64() > Some(0), "trained on its transitions: {stats}");
        }
        if let Some(d) = draws.get(&(layer + 1, name.clone())) {
            let d = steps(d, "q");
            let dqn = Dqn::new(&mut Rng::new(0, "test", 0, 0)).expect("dqn");
            nn::assign(&dqn.vars(), &a).expect("the model's variables");
            let q = dqn.q(&d.phi).expect("q");
            for (got, want) in q.iter().zip(&d.value) {
                assert!((got - want).abs() < 1e-5, "layer {layer} {name}: {got} against {want}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 2, "models checked against their draws: {checked}");
}

#[test]
fn the_same_crawl_twice_draws_the_same_order_and_learns_the_same_model() {
    let web = web();
    let plan = plan(&web);
    let (_, first) = crawl(&web, &plan, "first");
    let (_, second) = crawl(&web, &plan, "second");
    let order = |data: &Path| -> BTreeMap<String, Vec<String>> {
        common::parquet_files(&data.join("in"))
            .into_iter()
            .map(|p| {
                let urls = file_urls(&p);
                (p.strip_prefix(data).expect("under data").display().to_string(), urls)
            })
            .collect()
    };
    let a = order(&first);
    assert!(a.len() > 3, "{a:?}");
    assert_eq!(a, order(&second), "each partition's input in the same order");
    for kind in ["model", "replay", "draws", "transitions"] {
        let (x, y) = (state_files(&first, kind), state_files(&second, kind));
        assert!(!x.is_empty(), "{kind}");
        assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>(), "{kind}");
        for (k, p) in &x {
            assert!(
                std::fs::read(p).expect("read") == std::fs::read(&y[k]).expect("read"),
                "{kind} {k:?}: the same bytes"
            );
        }
    }
}

#[test]
fn the_learned_order_without_a_plan_is_refused_saying_what_to_add() {
    let web = web();
    let data = web.dir("data");
    let out = layercrawl(&web.run_args(&data, 1, &["--order", "learned"]));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("option `order`") && err.contains("learned") && err.contains("add --plan FILE"), "{err}");
    assert!(!data.join("doc").exists(), "nothing was crawled");
}
