//! The web-application benchmark: does the noise filter reach a web
//! application's texts with fewer requests?
//!
//! The corpus is three real applications from Debian's archive over this
//! repository's pinned history (`scripts/webapps.sh`; docs/src/web-apps.md):
//! cgit (a git viewer), DokuWiki (a wiki whose pages are the book, one
//! revision per commit that changed a page) and Fossil (a version-control
//! system with its own web views), each on its own host behind nginx on
//! loopback. For each application, alone, and each depth (3 and 4) it
//! crawls with `--denoise off` and with the default filter, then the next
//! night's crawl with the default's as `--previous` (the filter starts from
//! what it learned), and at the first depth with Scrapy
//! (`benches/peers/scrapy_crawl.py`), and prints:
//!
//! - requests (`doc` rows), pages fetched with 200, distinct main texts,
//!   and the content items of the application's truth the pages show
//!   (each commit once, each file once at each version, each wiki page and
//!   revision once);
//! - the default's requests and distinct main texts as shares of `off`'s,
//!   on the first night and the next;
//! - what a random sample of `off`'s requests of the same size as the
//!   default's keeps of `off`'s distinct main texts (the mean of 50 draws,
//!   and the best of them): the filter must keep more than chance;
//! - the fewest requests that reach `off`'s distinct main texts, for a
//!   filter that knew every page in advance (see [`fewest_requests`]):
//!   where the room is; and for one that takes or leaves whole link
//!   classes, as the filter does, knowing each class in advance
//!   ([`fewest_by_class`]): the room a filter that learns by class has;
//! - what the default spent on link classes at the first layer it met
//!   them, before it had their evidence ([`first_sight`]);
//! - wall time and pages per second, and the default's pages per second
//!   over Scrapy's.
//!
//! Settings: 64 requests in flight, 16 per host, no delay, robots.txt
//! obeyed. DokuWiki marks its generated views nofollow and serves them at
//! one path, so its crawls ignore nofollow and lift the cap on distinct
//! queries per path (`App::whole_space`), as Scrapy ignores nofollow too:
//! polite, the wiki is its 34 current pages. Everything goes to `target/bench-webapps.json`.
//!
//! ```sh
//! scripts/webapps.sh                      # installs the applications (apt-get; minutes, once)
//! cargo bench --bench webapps             # every application, depths 3 and 4, Scrapy at 3
//! WEBAPPS_APPS=cgit WEBAPPS_DEPTHS=4 WEBAPPS_PEER=0 cargo bench --bench webapps
//! ```
//!
//! `WEBAPPS_APPS` picks applications (`cgit,dokuwiki,fossil`),
//! `WEBAPPS_DEPTHS` the depths (`3,4`), `WEBAPPS_SMALL=1` the small
//! history (60 commits, as the CI test crawls), `WEBAPPS_PEER=0` leaves
//! Scrapy out, `WEBAPPS_BIN` names another layercrawl binary to measure
//! (a release build, with the harness itself built by `cargo test --bench
//! webapps`), `WEBAPPS_KEEP=DIR` keeps each crawl's data folder in `DIR`
//! (on the temporary folder's file system) as `APP-DEPTH-CRAWL`. Scrapy runs from `target/peers-venv`, which
//! `benches/peers/setup.sh` makes when it is missing.

#[allow(unused_imports)]
#[path = "../tests/e2e/common/mod.rs"]
mod common;
#[path = "common/measure.rs"]
mod measure;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use common::webapps::{self, App, Apps, Score, Truth};
use layercrawl::denoise::yields::{coarse_of, link_template, PageClass, COLD_BATCH, MIN_YIELD};
use measure::{last_json_line, peers_python, run_measured, Measured};

const SETTINGS: [&str; 6] = ["--concurrency", "64", "--per-host", "16", "--delay", "0"];
/// Random samples drawn to compare the filter with chance.
const DRAWS: u64 = 50;

/// One layercrawl crawl of one application.
struct Crawl {
    score: Score,
    /// Per request: the main text of a page fetched with 200 (None
    /// otherwise), to draw random samples from.
    texts: Vec<Option<String>>,
    /// The fewest requests that reach every distinct main text, and 99 %
    /// of them ([`fewest_requests`]).
    fewest: (usize, usize),
    /// The same for a filter that takes or leaves whole link classes
    /// ([`fewest_by_class`]).
    by_class: ByClass,
    /// What it spent on link classes it saw for the first time
    /// ([`first_sight`]).
    first_sight: FirstSight,
    m: Measured,
    summary: Value,
    /// Its data folder, until [`Crawl::done`].
    data: PathBuf,
    /// Its name under `WEBAPPS_KEEP` (application, depth, crawl).
    kept_as: String,
}

impl Crawl {
    /// Removes its data folder, or keeps it in `WEBAPPS_KEEP` for a closer look.
    fn done(self) {
        match std::env::var_os("WEBAPPS_KEEP") {
            Some(keep) => {
                let to = Path::new(&keep).join(&self.kept_as);
                let _ = std::fs::remove_dir_all(&to);
                std::fs::create_dir_all(&keep).expect("WEBAPPS_KEEP folder");
                std::fs::rename(&self.data, &to).expect("WEBAPPS_KEEP must be on the temporary folder's file system");
            }
            None => {
                let _ = std::fs::remove_dir_all(&self.data);
            }
        }
    }
}

fn layercrawl(apps: &Apps, truths: &BTreeMap<App, Truth>, app: App, depth: u32, extra: &[&str], name: &str) -> Crawl {
    let tmp = apps.dir.path();
    let seeds_file = tmp.join(format!("{name}.seeds"));
    std::fs::write(&seeds_file, apps.url(app, app.start())).expect("seeds");
    let data = tmp.join(name);
    let bin = std::env::var_os("WEBAPPS_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_layercrawl").into());
    let mut cmd = Command::new(bin);
    cmd.args(["run", "--seeds"]).arg(&seeds_file).args(["--depth", &depth.to_string(), "--data"]).arg(&data);
    cmd.args(apps.resolve_args()).args(["--allow-private", "--json", "--quiet"]).args(SETTINGS);
    cmd.args(app.whole_space()).args(extra);
    let m = run_measured(&mut cmd, &tmp.join(format!("{name}.out")), &tmp.join(format!("{name}.err")));
    assert!(m.ok, "layercrawl failed: {}", m.stderr_tail());
    let summary: Value = serde_json::from_str(&m.stdout).expect("summary JSON");
    assert_eq!(summary["not_requested"].as_u64(), Some(0), "{name}: every URL within the depth requested");
    let score = apps.score(&data, truths).remove(&app).unwrap_or_default();
    let docs: Vec<common::Doc> =
        common::read_docs(&data).into_iter().filter(|d| apps.app_of(&d.url) == Some(app)).collect();
    let fewest = fewest_requests(&docs, &common::read_links(&data));
    let by_class = fewest_by_class(&docs);
    let first_sight = first_sight(&docs);
    let texts = docs.into_iter().map(|d| page_text(&d).map(str::to_string)).collect();
    let kept_as = format!("{}-{depth}-{name}", app.name());
    Crawl { score, texts, fewest, by_class, first_sight, m, summary, data, kept_as }
}

/// The main text a request brought: that of a page fetched with 200, when
/// it has any.
fn page_text(d: &common::Doc) -> Option<&str> {
    (d.status == 200 && d.error.is_none()).then_some(d.main_text.as_deref()).flatten().filter(|t| !t.trim().is_empty())
}

/// What a filter that knew every page in advance would need, read off a
/// crawl without filters: for each distinct main text, the shallowest page
/// that has it and one chain of links from a seed to it, each chain
/// reusing the pages earlier chains took. Returns the requests for every
/// text, and for 99 % of them (without the 1 % whose chains added the
/// most pages). A bound no filter that learns as it goes can beat.
fn fewest_requests(docs: &[common::Doc], links: &[common::Link]) -> (usize, usize) {
    let depth: BTreeMap<&str, i32> = docs.iter().map(|d| (d.url.as_str(), d.depth)).collect();
    let mut parents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for l in links {
        if let (Some(s), Some(t)) = (depth.get(l.src_url.as_str()), depth.get(l.dst_url.as_str())) {
            if s + 1 == *t {
                parents.entry(l.dst_url.as_str()).or_default().push(l.src_url.as_str());
            }
        }
    }
    let mut first: BTreeMap<&str, (i32, &str)> = BTreeMap::new();
    for d in docs {
        let Some(t) = page_text(d) else { continue };
        let e = first.entry(t).or_insert((d.depth, d.url.as_str()));
        *e = (*e).min((d.depth, d.url.as_str()));
    }
    let mut order: Vec<(i32, &str)> = first.into_values().collect();
    order.sort_unstable();
    let mut need: BTreeSet<&str> = BTreeSet::new();
    let mut costs = Vec::with_capacity(order.len());
    for (_, mut url) in order {
        let before = need.len();
        while need.insert(url) {
            let Some(ps) = parents.get(url) else { break };
            url = ps.iter().find(|p| need.contains(*p)).or_else(|| ps.iter().min()).copied().unwrap_or(url);
        }
        costs.push(need.len() - before);
    }
    costs.sort_unstable_by(|a, b| b.cmp(a));
    let spared: usize = costs.iter().take(costs.len() / 100).sum();
    (need.len(), need.len() - spared)
}

/// What [`fewest_by_class`] found.
#[derive(Clone, Copy, Debug, Default)]
struct ByClass {
    /// Link classes among the crawl's requests, each layer's apart.
    classes: usize,
    /// Requests of the classes taken for 99 % of the distinct main texts.
    texts_99: usize,
}

/// What a filter that follows or skips whole link classes would need for
/// 99 % of a crawl's distinct main texts if it knew every class's pages in
/// advance. The classes are the noise filter's own ([`PageClass::of`]: a
/// page's link template as its referrer links it, its kind of file and the
/// referrer's template), in each layer apart, as the filter decides a
/// class again at each layer. Choosing the fewest requests is a set-cover
/// problem, too hard to solve exactly: the classes are taken greedily, the
/// most new texts a request first, then those the others make unneeded are
/// dropped, largest first. Links are ignored (a page counts as reachable
/// whether the classes on its way were taken or not), which only makes the
/// figure lower. A filter that learns a class from its first pages also
/// pays for the pages it judges it by. Where a target is below this, no
/// choice among these classes that the bench finds meets it: only telling
/// the pages of one class apart could.
fn fewest_by_class(docs: &[common::Doc]) -> ByClass {
    use std::collections::{BinaryHeap, HashMap};
    // Each distinct text a number; each class its requests and texts.
    let mut text_ids: HashMap<&str, u32> = HashMap::new();
    let mut classes: HashMap<(u64, i32), (usize, BTreeSet<u32>)> = HashMap::new();
    for d in docs {
        let via: Vec<String> = d.referrer.as_deref().map(link_template).into_iter().collect();
        let class = PageClass::of(&d.url, d.referrer.as_deref(), &via);
        let entry = classes.entry((class.key(), d.layer)).or_default();
        entry.0 += 1;
        if let Some(t) = page_text(d) {
            let next = u32::try_from(text_ids.len()).expect("texts fit u32");
            entry.1.insert(*text_ids.entry(t).or_insert(next));
        }
    }
    let need = (text_ids.len() * 99).div_ceil(100);
    // Lazy greedy: a class's gain only falls as others are taken, so one
    // whose gain, counted again, still leads is the best.
    #[derive(PartialEq, Eq)]
    struct Gain(usize, usize, (u64, i32));
    impl Ord for Gain {
        fn cmp(&self, o: &Self) -> std::cmp::Ordering {
            (self.0 * o.1).cmp(&(o.0 * self.1)).then(o.2.cmp(&self.2))
        }
    }
    impl PartialOrd for Gain {
        fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
            Some(self.cmp(o))
        }
    }
    let mut heap: BinaryHeap<Gain> = classes.iter().map(|(k, (n, t))| Gain(t.len(), *n, *k)).collect();
    // How many taken classes hold each text.
    let mut holders: HashMap<u32, usize> = HashMap::new();
    let mut taken: Vec<(u64, i32)> = Vec::new();
    while holders.len() < need {
        let Some(Gain(_, n, key)) = heap.pop() else { break };
        let gain = classes[&key].1.iter().filter(|t| !holders.contains_key(t)).count();
        if heap.peek().is_some_and(|next| Gain(gain, n, key) < *next) {
            heap.push(Gain(gain, n, key));
            continue;
        }
        for &t in &classes[&key].1 {
            *holders.entry(t).or_default() += 1;
        }
        taken.push(key);
    }
    // Reverse delete: largest first, a class goes if the rest still reach
    // the 99 %.
    taken.sort_by_key(|k| (std::cmp::Reverse(classes[k].0), *k));
    taken.retain(|k| {
        let texts = &classes[k].1;
        let only = texts.iter().filter(|t| holders[t] == 1).count();
        if holders.len() - only < need {
            return true;
        }
        for t in texts {
            let held = holders.get_mut(t).expect("a taken class's text is held");
            *held -= 1;
            if *held == 0 {
                holders.remove(t);
            }
        }
        false
    });
    ByClass { classes: classes.len(), texts_99: taken.iter().map(|k| classes[k].0).sum() }
}

/// What [`first_sight`] found.
#[derive(Clone, Copy, Debug, Default)]
struct FirstSight {
    /// Requests past a class's first [`COLD_BATCH`] at its first layer, in
    /// classes that brought less than [`MIN_YIELD`] new texts a request
    /// there.
    requests: usize,
    /// The new texts those classes brought at that layer (all of them, a
    /// bound on what waiting for their first pages could have lost).
    texts: usize,
}

/// The price of a first sight: a crawl's requests in link classes at the
/// first layer it fetched any of their pages in, past the first
/// [`COLD_BATCH`] (the pages a class never fetched waits for, on a site of
/// copies, before the rest is decided), in classes that brought less than
/// [`MIN_YIELD`] new texts a request at that layer. These the filter
/// fetched before it had any evidence of their class: before the crawl's
/// depth a template never judged as a hub is followed whole, for where it
/// leads, and on a site whose pages had been mostly new so far a class
/// does not wait, since waiting costs a layer. The classes are those a
/// class never fetched waits in: the coarse templates ([`coarse_of`]) of
/// the referrer and of the page as the referrer links it
/// ([`PageClass::of`]). A page's text is new when no page before it in
/// the crawl had it (pages in the order the filter judges them: by layer,
/// then shorter URLs first).
fn first_sight(docs: &[common::Doc]) -> FirstSight {
    use std::collections::{HashMap, HashSet};
    let mut order: Vec<&common::Doc> = docs.iter().collect();
    order.sort_by(|a, b| (a.layer, a.url.len(), &a.url).cmp(&(b.layer, b.url.len(), &b.url)));
    let mut seen: HashSet<&str> = HashSet::new();
    // Per (class, layer): requests and new texts; per class: its first layer.
    let mut classes: HashMap<((String, String), i32), (usize, usize)> = HashMap::new();
    let mut first: HashMap<(String, String), i32> = HashMap::new();
    for d in order {
        let source = d.referrer.as_deref().map(link_template).unwrap_or_default();
        let target = PageClass::of(&d.url, d.referrer.as_deref(), &[]).target;
        let key = (coarse_of(&source), coarse_of(&target));
        let new = page_text(d).is_some_and(|t| seen.insert(t));
        first.entry(key.clone()).or_insert(d.layer);
        let e = classes.entry((key, d.layer)).or_default();
        e.0 += 1;
        e.1 += usize::from(new);
    }
    let mut out = FirstSight::default();
    for ((key, layer), (n, new)) in &classes {
        #[allow(clippy::cast_precision_loss)]
        let low = (*new as f32) < MIN_YIELD * *n as f32;
        if first[key] == *layer && *n > COLD_BATCH && low {
            out.requests += n - COLD_BATCH;
            out.texts += *new;
        }
    }
    out
}

/// Distinct main texts in random samples of `n` of `off`'s requests: the
/// mean over [`DRAWS`] draws, and the largest.
fn random_samples(off: &[Option<String>], n: usize) -> (f64, usize) {
    let mut counts = Vec::new();
    for draw in 0..DRAWS {
        let mut order: Vec<usize> = (0..off.len()).collect();
        order.sort_by_key(|&i| xxhash_rust::xxh3::xxh3_64_with_seed(&i.to_le_bytes(), draw));
        let kept: BTreeSet<&str> = order.iter().take(n).filter_map(|&i| off[i].as_deref()).collect();
        counts.push(kept.len());
    }
    #[allow(clippy::cast_precision_loss)]
    let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    (mean, counts.into_iter().max().unwrap_or(0))
}

/// Scrapy on one application: its 200 pages and its process figures.
fn scrapy(apps: &Apps, app: App, depth: u32, name: &str) -> (usize, Measured) {
    let tmp = apps.dir.path();
    let seeds_file = tmp.join(format!("{name}.seeds"));
    std::fs::write(&seeds_file, apps.url(app, app.start())).expect("seeds");
    let out = tmp.join(name);
    let mut cmd = Command::new(peers_python());
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/scrapy_crawl.py"))
        .arg("--seeds")
        .arg(&seeds_file)
        .args(["--proxy", &apps.proxy(), "--depth", &depth.to_string()])
        .args(["--per-host", "16", "--concurrency", "64", "--delay-ms", "0"])
        .arg("--out")
        .arg(&out);
    let m = run_measured(&mut cmd, &tmp.join(format!("{name}.out")), &tmp.join(format!("{name}.err")));
    assert!(last_json_line(&m.stdout).is_some(), "Scrapy printed no summary; its log: {}", m.stderr_tail());
    let pages: BTreeSet<String> = std::fs::read_to_string(out.join("pages.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["status"].as_i64() == Some(200))
        .filter_map(|v| v["url"].as_str().map(str::to_string))
        .collect();
    let _ = std::fs::remove_dir_all(&out);
    (pages.len(), m)
}

#[allow(clippy::cast_precision_loss)]
/// URLs a crawl's filter made wait for their class's first probes, over
/// its layers.
fn deferred(summary: &Value) -> u64 {
    summary["layers"].as_array().map_or(0, |ls| ls.iter().filter_map(|l| l["deferred"].as_u64()).sum())
}

fn share(a: usize, b: usize) -> f64 {
    a as f64 / b.max(1) as f64
}

fn main() {
    webapps::install();
    let small = std::env::var("WEBAPPS_SMALL").is_ok_and(|v| v == "1");
    let which: Vec<App> = match std::env::var("WEBAPPS_APPS") {
        Ok(names) => App::ALL.into_iter().filter(|a| names.split(',').any(|n| n.trim() == a.name())).collect(),
        Err(_) => App::ALL.to_vec(),
    };
    assert!(!which.is_empty(), "WEBAPPS_APPS names none of cgit, dokuwiki, fossil");
    let depths: Vec<u32> = std::env::var("WEBAPPS_DEPTHS")
        .unwrap_or_else(|_| "3,4".into())
        .split(',')
        .map(|d| d.trim().parse().expect("WEBAPPS_DEPTHS: depths, comma-separated"))
        .collect();
    let peer = std::env::var("WEBAPPS_PEER").map_or(true, |v| v != "0");
    let apps = Apps::start(&which, small);
    let truths = apps.truths();
    println!(
        "web applications ({} history), 64 in flight, 16 per host, no delay",
        if small { "small" } else { "full" }
    );
    println!(
        "| app | depth | crawl | requests | pages | distinct main texts | items | of off's requests | of off's texts | random sample's texts (mean, best) | wall s | pages/s |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows: Vec<Value> = Vec::new();
    for &app in &which {
        for (k, &depth) in depths.iter().enumerate() {
            let off =
                layercrawl(&apps, &truths, app, depth, &["--denoise", "off"], &format!("{}-off-{depth}", app.name()));
            let def = layercrawl(&apps, &truths, app, depth, &[], &format!("{}-default-{depth}", app.name()));
            let (mean, best) = random_samples(&off.texts, def.score.rows);
            let line = |name: &str, c: &Crawl, vs_off: &str, sample: &str| {
                let s = &c.score;
                println!(
                    "| {} | {depth} | {name} | {} | {} | {} | {} of {} | {vs_off} | {sample} | {:.1} | {:.0} |",
                    app.name(),
                    s.rows,
                    s.pages,
                    s.texts,
                    s.items,
                    s.of_items,
                    c.m.wall,
                    share(s.pages, 1) / c.m.wall
                );
            };
            line("off", &off, "", "");
            let ratios = format!(
                "{:.1} % | {:.1} %",
                100.0 * share(def.score.rows, off.score.rows),
                100.0 * share(def.score.texts, off.score.texts)
            );
            #[allow(clippy::cast_precision_loss)]
            let chance = format!(
                "{:.1} % ({:.0}), {:.1} %",
                100.0 * mean / off.score.texts.max(1) as f64,
                mean,
                100.0 * share(best, off.score.texts)
            );
            line("default", &def, &ratios, &chance);
            // The next night: the same crawl with the first night's as
            // `--previous` (its pages come back 304 where the application
            // sends validators; the filter starts from its counts).
            let previous = def.data.to_str().expect("a UTF-8 temporary folder").to_string();
            let night = layercrawl(
                &apps,
                &truths,
                app,
                depth,
                &["--previous", &previous],
                &format!("{}-next-night-{depth}", app.name()),
            );
            let night_ratios = format!(
                "{:.1} % | {:.1} %",
                100.0 * share(night.score.rows, off.score.rows),
                100.0 * share(night.score.texts, off.score.texts)
            );
            line("default, next night", &night, &night_ratios, "");
            let (all, most) = off.fewest;
            println!(
                "  the fewest requests that reach off's texts, knowing every page in advance: {all} ({:.1} % of off's), for 99 % of them {most} ({:.1} %)",
                100.0 * share(all, off.score.rows),
                100.0 * share(most, off.score.rows)
            );
            let b = off.by_class;
            println!(
                "  the fewest for a filter that takes or leaves whole link classes ({} of them), knowing each in advance: 99 % of off's texts in {} requests ({:.1} %)",
                b.classes,
                b.texts_99,
                100.0 * share(b.texts_99, off.score.rows)
            );
            let f = def.first_sight;
            println!(
                "  the default's first sight: {} requests ({:.1} % of off's) past the first {COLD_BATCH} of coarse link classes at their first layer that brought under {MIN_YIELD} new texts a request there ({} new texts)",
                f.requests,
                100.0 * share(f.requests, off.score.rows),
                f.texts
            );
            // A default that fetched what `off` did had nothing to choose.
            let everything = def.score.rows >= off.score.rows;
            let beats_chance = def.score.texts > best || (everything && def.score.texts >= off.score.texts);
            if everything {
                println!("  the default fetched what off fetched: nothing to compare with chance");
            } else if !beats_chance {
                println!("  ! the default keeps no more texts than the best random sample of its size");
            }
            let mut row = json!({
                "app": app.name(), "depth": depth, "small": small,
                "off": { "requests": off.score.rows, "pages": off.score.pages, "texts": off.score.texts, "items": off.score.items, "wall_s": off.m.wall, "cpu_s": off.m.cpu },
                "default": { "requests": def.score.rows, "pages": def.score.pages, "texts": def.score.texts, "items": def.score.items, "wall_s": def.m.wall, "cpu_s": def.m.cpu,
                             "skipped": def.summary["skipped"], "skipped_classes": def.summary["skipped_classes"], "deferred": deferred(&def.summary), "layers": def.summary["layers"].as_array().map_or(0, Vec::len) },
                "next_night": { "requests": night.score.rows, "pages": night.score.pages, "texts": night.score.texts, "items": night.score.items, "wall_s": night.m.wall, "cpu_s": night.m.cpu,
                                "skipped": night.summary["skipped"], "deferred": deferred(&night.summary), "unchanged": night.summary["unchanged"] },
                "of_items": off.score.of_items,
                "fewest_requests": { "all_texts": all, "texts_99": most },
                "fewest_by_class": { "classes": b.classes, "texts_99": b.texts_99 },
                "first_sight": { "requests": f.requests, "texts": f.texts },
                "random_sample_texts": { "mean": mean, "best": best, "draws": DRAWS },
                "beats_chance": beats_chance,
            });
            if peer && k == 0 {
                let (pages, m) = scrapy(&apps, app, depth, &format!("{}-scrapy-{depth}", app.name()));
                let (ours, theirs) = (share(def.score.pages, 1) / def.m.wall, share(pages, 1) / m.wall);
                println!(
                    "| {} | {depth} | Scrapy | | {pages} | | | | | | {:.1} | {theirs:.0} (default: {:.1}×) |",
                    app.name(),
                    m.wall,
                    ours / theirs
                );
                row["scrapy"] = json!({ "pages": pages, "wall_s": m.wall, "cpu_s": m.cpu, "pages_per_s": theirs, "default_over_scrapy": ours / theirs });
            }
            rows.push(row);
            for c in [off, def, night] {
                c.done();
            }
        }
    }
    let by_app: BTreeMap<&str, Vec<&Value>> = rows.iter().fold(BTreeMap::new(), |mut m, r| {
        m.entry(r["app"].as_str().unwrap_or_default()).or_default().push(r);
        m
    });
    for (app, rs) in by_app {
        let all = rs.iter().all(|r| r["beats_chance"] == true);
        println!("{app}: the default keeps more than chance at every depth: {all}");
    }
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-webapps.json");
    std::fs::write(&out, serde_json::to_string_pretty(&rows).expect("JSON")).expect("write the results");
    println!("written to {}", out.display());
}
