//! The `focus` scenario: ordering policies under a page budget, against
//! the truth of the test web's topical magazine (docs/src/focused-crawling.md).
//!
//! For each of `SUITE_FOCUS_SEEDS` webs (default 3; six sites, 60 articles
//! each, `--topics`): a crawl plan for the web's least common topic with at
//! least 20 articles within reach (its name and ten of its words), and for
//! budgets of 10, 25 and 50 % of the pages reachable within depth 3, one
//! crawl per policy with `--max-pages` set to the budget spread over the
//! three layers after the seeds. Harvest rate: the topic's articles among
//! the pages fetched after the seeds; recall: the topic's articles fetched
//! among those within reach. Medians over the webs, with min and max;
//! breadth-first (`--order bfs`) is the baseline. The web runs in this
//! process: the figures are counts, not times, but for what the learned
//! order's training and draws cost: their wall time from its `stats` files
//! (milliseconds per layer, over the partitions, medians over every
//! crawl's layers), and the crawl's CPU time over best-first's on the same
//! web and budget, per layer that trains (what it costs however busy the
//! machine is).
//! `SUITE_FOCUS_ANCHOR` sets the plan's `weights.anchor` (0: pages scored
//! without their anchor).

use std::path::Path;

use testweb::topics::TOPICS;
use testweb::{Farm, FarmConfig};

use super::{crawl, env_u32, median, DirBatches, Table};
use arrow_array::cast::AsArray;
use arrow_array::Array;

const DEPTH: u32 = 3;
const POLICIES: [&str; 4] = ["bfs", "best-first", "ant", "learned"];
const BUDGETS: [f64; 3] = [0.10, 0.25, 0.50];

fn plan(topic: usize) -> String {
    let words: Vec<String> = testweb::topics::plan_words(topic).iter().map(|w| format!("{w:?}")).collect();
    // `SUITE_FOCUS_ANCHOR`: the weight of the anchor that led to a page in
    // its relevance (the plan's default, 0.2, unless set; 0 leaves it out).
    let weights =
        std::env::var("SUITE_FOCUS_ANCHOR").map_or_else(|_| String::new(), |w| format!("[weights]\nanchor = {w}\n"));
    format!("threshold = 0.3\n{weights}[[group]]\nany = [{}]\n", words.join(", "))
}

pub(super) fn focus(tmp: &Path, table: &mut Table) {
    let webs = env_u32("SUITE_FOCUS_SEEDS", 3).max(1);
    // (policy, budget) → per web: (harvest, recall).
    let mut results: Vec<Vec<(f64, f64)>> = vec![Vec::new(); POLICIES.len() * BUDGETS.len()];
    // The learned order's cost per layer: (training ms, drawing ms); and
    // each crawl's CPU seconds, as `results`.
    let mut learned_ms: Vec<(f64, f64)> = Vec::new();
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); POLICIES.len() * BUDGETS.len()];
    for web in 0..webs {
        let cfg = FarmConfig {
            sites: 6,
            pages: 10,
            faults: false,
            topics: 60,
            seed: 100 + u64::from(web),
            ..FarmConfig::default()
        };
        let farm = Farm::start_background(cfg).expect("the test web");
        let truth = farm.topic_truth(DEPTH);
        let Some(topic) =
            (0..TOPICS.len()).filter(|&t| truth.relevant(t).len() >= 20).min_by_key(|&t| truth.relevant(t).len())
        else {
            continue;
        };
        let relevant: std::collections::BTreeSet<&str> = truth.relevant(topic).into_iter().collect();
        let reachable = truth.reachable.len();
        let seeds = tmp.join(format!("focus-seeds-{web}.txt"));
        std::fs::write(&seeds, farm.topic_start_urls().join("\n")).expect("seeds");
        let plan_file = tmp.join(format!("focus-plan-{web}.toml"));
        std::fs::write(&plan_file, plan(topic)).expect("plan");
        println!(
            "  focus web {web}: {reachable} pages within depth {DEPTH}, {} articles about {}",
            relevant.len(),
            TOPICS[topic].0
        );
        for (b, &fraction) in BUDGETS.iter().enumerate() {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let per_layer = ((reachable as f64 * fraction) / f64::from(DEPTH)).ceil().max(1.0) as u64;
            for (p, policy) in POLICIES.iter().enumerate() {
                if *policy == "learned" && !layercrawl::focus::learned::BUILT {
                    continue; // Refused by a build without the `learned` feature: no row.
                }
                let data = tmp.join(format!("focus-{web}-{b}-{policy}"));
                let mut a: Vec<String> = vec!["run".into(), "--seeds".into(), seeds.display().to_string()];
                a.extend(["--depth".into(), DEPTH.to_string(), "--data".into(), data.display().to_string()]);
                a.extend(["--resolve".into(), farm.resolve_rule(), "--allow-private".into()]);
                a.extend(["--json", "--quiet", "--delay", "0", "--order", policy].map(String::from));
                a.extend(["--plan".into(), plan_file.display().to_string()]);
                a.extend(["--max-pages".into(), per_layer.to_string()]);
                let run = crawl(&a);
                cpu[b * POLICIES.len() + p].push(run.cpu);
                let (mut fetched, mut on) = (0usize, 0usize);
                for layer in 1..=DEPTH {
                    for batch in DirBatches::new(&data.join("doc").join(format!("layer={layer}")), &["url"]) {
                        let urls = batch.column(0).as_string::<i32>();
                        fetched += urls.len();
                        on += urls.iter().flatten().filter(|u| relevant.contains(u)).count();
                    }
                }
                if *policy == "learned" {
                    learned_ms.extend(learned_cost(&data));
                }
                let _ = std::fs::remove_dir_all(&data);
                #[allow(clippy::cast_precision_loss)]
                let (harvest, recall) = (on as f64 / fetched.max(1) as f64, on as f64 / relevant.len().max(1) as f64);
                println!(
                    "    budget {:.0} % ({per_layer} pages a layer), {policy}: {on} of {fetched} pages on topic, recall {recall:.2}",
                    fraction * 100.0
                );
                results[b * POLICIES.len() + p].push((harvest, recall));
            }
        }
        farm.shutdown();
    }
    let s = "focus";
    if !learned_ms.is_empty() {
        let n = learned_ms.len();
        let train = median(learned_ms.iter().map(|x| x.0).collect());
        let draw = median(learned_ms.iter().map(|x| x.1).collect());
        println!("  learned order: {n} layers, median {train:.0} ms training and {draw:.0} ms drawing a layer");
        table.add(s, "learned order: training a layer (all its partitions)", train, "ms");
        table.add(s, "learned order: drawing a layer's input", draw, "ms");
        // CPU over best-first's, same web and budget, per optimised layer:
        // what training and drawing cost whatever else the machine runs.
        if let (Some(l), Some(b)) =
            (POLICIES.iter().position(|p| *p == "learned"), POLICIES.iter().position(|p| *p == "best-first"))
        {
            let extra: Vec<f64> = (0..BUDGETS.len())
                .flat_map(|k| {
                    let (lc, bc) = (&cpu[k * POLICIES.len() + l], &cpu[k * POLICIES.len() + b]);
                    lc.iter().zip(bc).map(|(x, y)| (x - y) * 1000.0 / f64::from(DEPTH)).collect::<Vec<_>>()
                })
                .collect();
            let lo = extra.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = extra.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let extra_median = median(extra);
            println!(
                "  learned order: {extra_median:.0} ms more CPU a layer than best-first (min {lo:.0}, max {hi:.0})"
            );
            let name = format!("learned order: CPU a layer over best-first's (min {lo:.0}, max {hi:.0})");
            table.add(s, &name, extra_median, "ms");
        }
    }
    for (b, &fraction) in BUDGETS.iter().enumerate() {
        for (p, policy) in POLICIES.iter().enumerate() {
            let r = &results[b * POLICIES.len() + p];
            if r.is_empty() {
                continue;
            }
            let spread = |v: Vec<f64>| {
                let (lo, hi) = (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(0.0, f64::max));
                (median(v), lo, hi)
            };
            let (h, hl, hh) = spread(r.iter().map(|x| x.0).collect());
            let (c, cl, ch) = spread(r.iter().map(|x| x.1).collect());
            let budget = format!("{:.0} %", fraction * 100.0);
            table.add(s, &format!("harvest rate, {policy}, budget {budget} (min {hl:.2}, max {hh:.2})"), h, "share");
            table.add(s, &format!("recall, {policy}, budget {budget} (min {cl:.2}, max {ch:.2})"), c, "share");
        }
    }
}

/// Per optimised layer of the learned crawl in `data`: the milliseconds
/// its partitions spent training and drawing, summed (their `stats`
/// files, `state/focus/learned/stats/layer=L/part-K.json`).
fn learned_cost(data: &Path) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let Ok(layers) = std::fs::read_dir(data.join("state/focus/learned/stats")) else { return out };
    for layer in layers.flatten() {
        let (mut train, mut draw) = (0.0, 0.0);
        for f in std::fs::read_dir(layer.path()).into_iter().flatten().flatten() {
            let Ok(text) = std::fs::read(f.path()) else { continue };
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&text) else { continue };
            #[allow(clippy::cast_precision_loss)]
            {
                train += v["train_ms"].as_u64().unwrap_or(0) as f64;
                draw += v["draw_ms"].as_u64().unwrap_or(0) as f64;
            }
        }
        out.push((train, draw));
    }
    out
}
