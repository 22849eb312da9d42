//! Entities and relations (docs/src/entities.md): a crawl of
//! the test web's knowledge-base section (`--kb N`) with its knowledge
//! base, whose every article's mentions and relations are known; the
//! `entities` and `relations` datasets read back against that truth, the
//! merge, DuckDB's entity → URL query, `--prefer-entities` under a page
//! budget, and the knowledge base's errors.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int64Type};
use arrow_array::Array;
use common::{crawl_ok, layercrawl, read_all, Web};
use testweb::kb::ENTITIES;
use testweb::{Farm, FarmConfig};

const ARTICLES: u32 = 40;
/// The crawl's `--entity-threshold` (the default).
const THRESHOLD: f64 = 0.35;

fn web() -> Web {
    let cfg = FarmConfig { sites: 3, pages: 10, faults: false, kb: ARTICLES, seed: 5, ..FarmConfig::default() };
    let farm = Farm::start_background(cfg).expect("test web");
    let seeds = farm.kb_start_urls();
    Web::with_seeds(farm, &seeds)
}

/// The test web's knowledge base in a file.
fn kb_file(web: &Web) -> String {
    let file = web.dir("kb.csv");
    std::fs::write(&file, web.farm.kb_csv()).expect("knowledge base");
    file.display().to_string()
}

/// One `entities` row.
#[derive(Clone, Debug)]
struct Row {
    url: String,
    id: String,
    name: String,
    kind: Option<String>,
    mention: String,
    offset: i64,
    score: f64,
}

fn entity_rows(data: &Path) -> Vec<Row> {
    let mut out = Vec::new();
    for (_, b) in read_all(&data.join("entities")) {
        let s = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("column {n}")).as_string::<i32>().clone();
        let (url, id, name, kind, mention) =
            (s("url"), s("entity_id"), s("entity_name"), s("entity_type"), s("mention"));
        let offset = b.column_by_name("offset").expect("offset").as_primitive::<Int64Type>().clone();
        let score = b.column_by_name("score").expect("score").as_primitive::<Float64Type>().clone();
        for i in 0..b.num_rows() {
            out.push(Row {
                url: url.value(i).into(),
                id: id.value(i).into(),
                name: name.value(i).into(),
                kind: (!kind.is_null(i)).then(|| kind.value(i).to_string()),
                mention: mention.value(i).into(),
                offset: offset.value(i),
                score: score.value(i),
            });
        }
    }
    out
}

/// `relations` rows: (url, subject, predicate, object, sentence, score).
fn relation_rows(data: &Path) -> Vec<(String, String, String, String, String, f64)> {
    let mut out = Vec::new();
    for (_, b) in read_all(&data.join("relations")) {
        let s = |n: &str| b.column_by_name(n).unwrap_or_else(|| panic!("column {n}")).as_string::<i32>().clone();
        let (url, sub, pred, obj, sentence) =
            (s("url"), s("subject_id"), s("predicate"), s("object_id"), s("sentence"));
        let score = b.column_by_name("score").expect("score").as_primitive::<Float64Type>().clone();
        for i in 0..b.num_rows() {
            out.push((
                url.value(i).into(),
                sub.value(i).into(),
                pred.value(i).into(),
                obj.value(i).into(),
                sentence.value(i).into(),
                score.value(i),
            ));
        }
    }
    out
}

/// Precision and recall of `found` against `truth` (multisets).
fn precision_recall<T: Ord + Clone>(found: &[T], truth: &[T]) -> (f64, f64, usize) {
    let mut want: BTreeMap<T, usize> = BTreeMap::new();
    for t in truth {
        *want.entry(t.clone()).or_default() += 1;
    }
    let mut hits = 0;
    for f in found {
        if let Some(n) = want.get_mut(f).filter(|n| **n > 0) {
            *n -= 1;
            hits += 1;
        }
    }
    (hits as f64 / found.len().max(1) as f64, hits as f64 / truth.len().max(1) as f64, hits)
}

#[test]
fn a_crawl_with_a_knowledge_base_links_mentions_and_relations_as_the_truth_says() {
    let web = web();
    let kb = kb_file(&web);
    let data = web.dir("data");
    let summary = crawl_ok(&web.run_args(&data, 2, &["--delay", "0", "--entities", &kb]));
    let truth = web.farm.kb_truth(2);
    let docs = common::read_docs(&data);
    let main_text: BTreeMap<&str, &str> =
        docs.iter().filter_map(|d| d.main_text.as_deref().map(|t| (d.url.as_str(), t))).collect();
    let articles: Vec<&str> = docs.iter().map(|d| d.url.as_str()).filter(|u| truth.articles.contains_key(*u)).collect();
    assert!(articles.len() >= 60, "{} articles fetched: {summary}", articles.len());
    let rows = entity_rows(&data);

    // Every row: its offset (in characters) points at its mention in the
    // page's main text; the name and type are the knowledge base's.
    for r in &rows {
        let text = main_text.get(r.url.as_str()).unwrap_or_else(|| panic!("{}: a row of a page with main text", r.url));
        let at: String =
            text.chars().skip(usize::try_from(r.offset).expect("offset")).take(r.mention.chars().count()).collect();
        assert_eq!(at, r.mention, "{} at {}", r.url, r.offset);
        let e =
            ENTITIES.iter().find(|e| e.0 == r.id).unwrap_or_else(|| panic!("{} is an id of the knowledge base", r.id));
        assert_eq!((r.name.as_str(), r.kind.as_deref()), (e.1, Some(e.3)));
        assert!((THRESHOLD..=1.0).contains(&r.score), "{r:?}");
    }
    assert!(rows.iter().all(|r| truth.articles.contains_key(&r.url)), "navigation pages mention no entity");

    // Against the truth, page by page: (url, entity, mention as written).
    let mut found = Vec::new();
    let mut want = Vec::new();
    for url in &articles {
        let page = &truth.articles[*url];
        want.extend(page.mentions.iter().map(|(e, m)| (url.to_string(), ENTITIES[*e].0.to_string(), m.clone())));
    }
    found.extend(rows.iter().map(|r| (r.url.clone(), r.id.clone(), r.mention.clone())));
    let (precision, recall, _) = precision_recall(&found, &want);
    eprintln!("entity linking: precision {precision:.3}, recall {recall:.3} over {} mentions", want.len());
    // Every mention the test web writes is a name or alias as the
    // knowledge base has it, next to words that tell which entity an
    // ambiguous one is; what the linker may miss is a one-word alias
    // whose clues are weak, so a few per cent at most.
    assert!(precision >= 0.97 && recall >= 0.93, "precision {precision:.3}, recall {recall:.3}");

    // The ambiguous forms: "Orion", "Ferreira" and "Paris" name two entities each.
    let ambiguous: Vec<_> =
        want.iter().filter(|w| ["Orion", "Ferreira", "Paris"].contains(&w.2.as_str())).cloned().collect();
    let (p, r, _) = precision_recall(
        &found.iter().filter(|f| ambiguous.iter().any(|a| a.0 == f.0 && a.2 == f.2)).cloned().collect::<Vec<_>>(),
        &ambiguous,
    );
    eprintln!("ambiguous forms: precision {p:.3}, recall {r:.3} over {}", ambiguous.len());
    assert!(
        ambiguous.len() >= 40 && p >= 0.95 && r >= 0.9,
        "ambiguous: {} mentions, precision {p:.3}, recall {r:.3}",
        ambiguous.len()
    );
    // Case and Unicode folding: the all-capitals spellings are found and linked.
    for (form, id) in [("ÉCOLE NUMÉRIQUE", "ecole-numerique"), ("NORDLICHT STRASSENBAU", "nordlicht")] {
        let written = want.iter().filter(|w| w.2 == form).count();
        let linked = rows.iter().filter(|r| r.mention == form && r.id == id).count();
        assert!(written > 0 && linked == written, "{form}: {linked} of {written} linked to {id}");
    }
    // Whole words: "Parisian", "Orionids" are no mentions; "mercury levels" is the metal.
    for r in &rows {
        assert!(!["Parisian", "Orionids", "mercury"].contains(&r.mention.as_str()), "{r:?}");
    }

    // Relations: subject, predicate, object per page against the facts
    // the pages state.
    let rels = relation_rows(&data);
    let found: Vec<(String, String, String, String)> =
        rels.iter().map(|r| (r.0.clone(), r.1.clone(), r.2.clone(), r.3.clone())).collect();
    let mut want = Vec::new();
    for url in &articles {
        for (s, p, o) in &truth.articles[*url].relations {
            want.push((url.to_string(), ENTITIES[*s].0.to_string(), (*p).to_string(), ENTITIES[*o].0.to_string()));
        }
    }
    let (precision, recall, _) = precision_recall(&found, &want);
    eprintln!("relations: precision {precision:.3}, recall {recall:.3} over {} facts", want.len());
    // One phrasing in four of `ceo_of` and `based_in` is one no built-in
    // pattern covers ("X has steered Y since", "Y is home to X"): about a
    // tenth of the facts stated are out of reach by design.
    assert!(precision >= 0.97 && recall >= 0.8, "relations: precision {precision:.3}, recall {recall:.3}");
    for r in &rels {
        let text = main_text[r.0.as_str()];
        assert!(text.contains(&r.4), "{}: the sentence {:?} is in the main text", r.0, r.4);
        assert!((THRESHOLD * 0.8..=1.0).contains(&r.5), "{r:?}");
    }

    // The merge kept both datasets, one file per layer, and counted them.
    for dataset in ["entities", "relations"] {
        let files = common::parquet_files(&data.join(dataset));
        assert!(!files.is_empty() && files.iter().all(|f| f.ends_with("data-00000.parquet")), "{dataset}: {files:?}");
    }
    let merge: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("state/manifest/merge.json")).expect("merge manifest"))
            .expect("JSON");
    assert_eq!(merge["extracted_rows"]["entities"].as_u64(), Some(rows.len() as u64), "{merge}");
    assert_eq!(merge["extracted_rows"]["relations"].as_u64(), Some(rels.len() as u64), "{merge}");
    // The settings carry the knowledge base, for tasks run on their own.
    let settings = std::fs::read_to_string(data.join("state/settings.json")).expect("settings");
    assert!(settings.contains("\"entities\"") && settings.contains("orion-dynamics"), "{settings}");

    // Which pages mention an entity: the DuckDB query of docs/src/entities.md.
    let python = common::pyenv_python();
    let script = r#"
import duckdb, json, sys
con = duckdb.connect()
rows = con.execute("""
    SELECT entity_id, list(DISTINCT url ORDER BY url) AS urls, count(*) AS mentions
    FROM read_parquet(? || '/entities/*/*.parquet', hive_partitioning = true)
    WHERE score >= 0.5
    GROUP BY entity_id ORDER BY entity_id""", [sys.argv[1]]).fetchall()
print(json.dumps({r[0]: r[1] for r in rows}))
"#;
    let out =
        std::process::Command::new(&python).args(["-c", script, &data.display().to_string()]).output().expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let by_duckdb: BTreeMap<String, Vec<String>> = serde_json::from_slice(&out.stdout).expect("JSON");
    let mut by_rows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.score >= 0.5) {
        by_rows.entry(r.id.clone()).or_default().insert(r.url.clone());
    }
    let by_rows: BTreeMap<String, Vec<String>> =
        by_rows.into_iter().map(|(k, v)| (k, v.into_iter().collect())).collect();
    assert_eq!(by_duckdb, by_rows);
    assert!(by_duckdb.len() >= 15, "{} entities mentioned", by_duckdb.len());
}

/// The fetched pages after the seeds' layer that mention `id`, and all of them.
fn budget_crawl(web: &Web, kb: &str, name: &str, extra: &[&str]) -> (usize, usize, std::path::PathBuf) {
    let data = web.dir(name);
    let mut args = vec!["--delay", "0", "--max-pages", "20", "--entities", kb];
    args.extend_from_slice(extra);
    let summary = crawl_ok(&web.run_args(&data, 3, &args));
    let cut: u64 =
        summary["layers"].as_array().expect("layers").iter().map(|l| l["budget_cut"].as_u64().unwrap_or(0)).sum();
    assert!(cut > 0, "the budget cut something: {summary}");
    let fetched: Vec<String> = common::read_docs(&data).into_iter().filter(|d| d.layer > 0).map(|d| d.url).collect();
    let on = fetched
        .iter()
        .filter(|u| {
            web.farm
                .kb_page(u)
                .is_some_and(|p| p.subject.is_some() && p.mentions.iter().any(|m| ENTITIES[m.0].0 == PREFERRED))
        })
        .count();
    (on, fetched.len(), data)
}

/// The preference test's entity: a company that is the subject of a
/// minority of the articles.
const PREFERRED: &str = "kestrel";

#[test]
fn preferring_an_entity_fetches_the_pages_that_mention_it_first_under_a_budget() {
    let web = web();
    let kb = kb_file(&web);
    let truth = web.farm.kb_truth(3);
    let share = truth.articles.values().filter(|p| p.mentions.iter().any(|m| ENTITIES[m.0].0 == PREFERRED)).count()
        as f64
        / truth.articles.len() as f64;
    assert!(share < 0.5, "{PREFERRED} is on {share:.2} of the articles");
    let (with, with_n, data) = budget_crawl(&web, &kb, "prefer", &["--prefer-entities", PREFERRED]);
    let (without, without_n, _) = budget_crawl(&web, &kb, "plain", &[]);
    eprintln!("pages mentioning {PREFERRED}: {with} of {with_n} preferred, {without} of {without_n} without");
    assert!(with_n <= 60 && without_n <= 60);
    assert!(with as f64 >= 1.5 * without as f64, "preferred {with} of {with_n}, without {without} of {without_n}");
    // Every link of a parsed page has a score; links whose anchor names
    // the preferred company score above the others.
    let (mut named, mut other) = (Vec::new(), Vec::new());
    for (_, b) in read_all(&data.join("links")) {
        let anchor = b.column_by_name("anchor").expect("anchor").as_string::<i32>().clone();
        let score = b.column_by_name("score").expect("score").as_primitive::<Float32Type>().clone();
        for i in 0..b.num_rows() {
            if score.is_null(i) {
                continue;
            }
            if anchor.value(i).starts_with("Kestrel Software") {
                named.push(score.value(i));
            } else {
                other.push(score.value(i));
            }
        }
    }
    let low = named.iter().copied().fold(f32::MAX, f32::min);
    let above = other.iter().filter(|s| **s < low).count() as f64 / other.len().max(1) as f64;
    assert!(
        !named.is_empty() && above >= 0.9,
        "{} named links, lowest {low}; {above:.2} of the others below",
        named.len()
    );
}

#[test]
fn bad_entity_settings_are_refused_before_the_crawl_naming_file_and_line() {
    let web = web();
    let data = web.dir("data");
    let refused = |extra: &[&str]| {
        let out = layercrawl(&web.run_args(&data, 1, extra));
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        assert!(!data.join("doc").exists(), "nothing was crawled");
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let kb = web.dir("kb.csv");
    std::fs::write(&kb, "id,name,aliases,type,prior\nx,Xeno Corp,,company,0.5\nx,Again,,,\ny,,,,\nz,Zeta,,,1.5\n")
        .expect("kb");
    let file = kb.display().to_string();
    let err = refused(&["--entities", &file]);
    for want in [
        "option `entities`".to_string(),
        format!("{file}:3:1: id \"x\" is used twice (first on line 2)"),
        format!("{file}:4:1: `name` \"\" has no letter"),
        format!("{file}:5:1: `prior` 1.5 is outside 0 to 1"),
    ] {
        assert!(err.contains(&want), "{want:?} in:\n{err}");
    }
    let jsonl = web.dir("kb.jsonl");
    std::fs::write(&jsonl, "{\"id\":\"a\",\"name\":\"A\"}\n{\"id\":\"b\",\"name\":\"B\",\"alias\":[\"x\"]}\n")
        .expect("kb");
    let err = refused(&["--entities", jsonl.to_str().expect("utf-8")]);
    assert!(err.contains(&format!("{}:2:", jsonl.display())) && err.contains("unknown field `alias`"), "{err}");

    std::fs::write(&kb, web.farm.kb_csv()).expect("kb");
    let patterns = web.dir("relations.txt");
    std::fs::write(&patterns, "# mine\nowns: {S} owns {O}\nowns {S} has {O}\n").expect("patterns");
    let err = refused(&["--entities", &file, "--relations", patterns.to_str().expect("utf-8")]);
    assert!(
        err.contains("option `relations`") && err.contains(&format!("{}:3:1: not a pattern", patterns.display())),
        "{err}"
    );
    let err = refused(&["--entities", &file, "--prefer-entities", "kestrel,planet"]);
    assert!(err.contains("option `prefer-entities`") && err.contains("\"planet\" is neither"), "{err}");
    let err = refused(&["--prefer-entities", "kestrel"]);
    assert!(err.contains("add --entities FILE"), "{err}");
}
