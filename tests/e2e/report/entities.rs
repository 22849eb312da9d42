//! The entity half of tests/e2e/report.rs: what the crawl's own `entities`
//! and `relations` datasets (written by `--entities` over the test web's
//! knowledge-base section) hold, read back here, for the report's figures
//! to be checked against.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::Array;

use super::common::read_all;

/// What the entity datasets hold, per entity id: mentions, pages, the mean
/// score, the type; relations per predicate; mentions per type.
#[derive(Debug, Default)]
pub struct EntityFigures {
    pub mentions: BTreeMap<String, u64>,
    pub pages: BTreeMap<String, u64>,
    pub mean_score: BTreeMap<String, f64>,
    pub types: BTreeMap<String, u64>,
    pub predicates: BTreeMap<String, u64>,
}

/// Reads `data/entities` and `data/relations` back.
pub fn entity_figures(data: &Path) -> EntityFigures {
    let mut f = EntityFigures::default();
    let mut pages: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut scores: BTreeMap<String, f64> = BTreeMap::new();
    for (_, b) in read_all(&data.join("entities")) {
        let s = |name: &str| b.column_by_name(name).unwrap_or_else(|| panic!("{name}")).as_string::<i32>().clone();
        let (url, id, kind) = (s("url"), s("entity_id"), s("entity_type"));
        let score = b.column_by_name("score").expect("score").as_primitive::<Float64Type>().clone();
        for i in 0..b.num_rows() {
            let id = id.value(i).to_string();
            *f.mentions.entry(id.clone()).or_default() += 1;
            *scores.entry(id.clone()).or_default() += score.value(i);
            let kind = if kind.is_null(i) { "none".to_string() } else { kind.value(i).to_string() };
            *f.types.entry(kind).or_default() += 1;
            pages.entry(id).or_default().insert(url.value(i).to_string());
        }
    }
    f.pages = pages.into_iter().map(|(id, urls)| (id, urls.len() as u64)).collect();
    f.mean_score = scores.into_iter().map(|(id, sum)| (id.clone(), sum / f.mentions[&id] as f64)).collect();
    for (_, b) in read_all(&data.join("relations")) {
        let predicate = b.column_by_name("predicate").expect("predicate").as_string::<i32>().clone();
        for i in 0..b.num_rows() {
            *f.predicates.entry(predicate.value(i).to_string()).or_default() += 1;
        }
    }
    f
}
