//! The entity datasets of tests/report.rs: a small knowledge base's
//! mentions and relations on the crawl's own pages, written as the
//! `entities` and `relations` datasets are specified (README, "Output").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};

/// A small knowledge base's mentions and relations on the crawl's own ok
/// pages, written as the `entities` and `relations` datasets are specified
/// (README, "Output"): the report must read any crawl that has them.
pub fn write_entities(data: &Path, docs: &[(u32, String)]) -> EntityFigures {
    const KB: [(&str, &str, Option<&str>); 5] = [
        ("Q7259", "Ada Lovelace", Some("person")),
        ("Q46633", "Charles Babbage", Some("person")),
        ("Q187180", "Analytical Engine", Some("product")),
        ("Q84", "London", Some("place")),
        ("Q1147", "Royal Society", None),
    ];
    // Per layer: mentions (page, entity) and relations (page, subject, predicate, object).
    type Rows<'a> = (Vec<(String, usize)>, Vec<(String, &'a str, &'a str, &'a str)>);
    let mut by_layer: BTreeMap<u32, Rows> = BTreeMap::new();
    let (mut mentions, mut pages, mut predicates) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    for (i, (layer, url)) in docs.iter().enumerate() {
        let here: BTreeSet<usize> = [i % 5, (i / 5) % 5].into_iter().collect();
        let entry = by_layer.entry(*layer).or_default();
        for &e in &here {
            let times = if e == i % 5 { 1 } else { 2 };
            for _ in 0..times {
                entry.0.push((url.clone(), e));
                *mentions.entry(KB[e].0.to_string()).or_insert(0u64) += 1;
            }
            *pages.entry(KB[e].0.to_string()).or_insert(0u64) += 1;
        }
        if here.contains(&1) && here.contains(&2) {
            entry.1.push((url.clone(), KB[1].0, "designed", KB[2].0));
            *predicates.entry("designed".to_string()).or_insert(0u64) += 1;
        }
        if here.contains(&0) && here.contains(&3) {
            entry.1.push((url.clone(), KB[0].0, "born_in", KB[3].0));
            *predicates.entry("born_in".to_string()).or_insert(0u64) += 1;
        }
    }
    let entity_schema = Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("entity_id", DataType::Utf8, false),
        Field::new("entity_name", DataType::Utf8, false),
        Field::new("entity_type", DataType::Utf8, true),
        Field::new("mention", DataType::Utf8, false),
        Field::new("offset", DataType::Int64, false),
        Field::new("score", DataType::Float64, false),
    ]));
    let relation_schema = Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("subject_id", DataType::Utf8, false),
        Field::new("predicate", DataType::Utf8, false),
        Field::new("object_id", DataType::Utf8, false),
        Field::new("sentence", DataType::Utf8, false),
        Field::new("score", DataType::Float64, false),
    ]));
    let write = |path: PathBuf, batch: RecordBatch| {
        std::fs::create_dir_all(path.parent().expect("folder")).expect("mkdir");
        let f = std::fs::File::create(&path).expect("create");
        let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
    };
    for (layer, (ms, rels)) in by_layer {
        let str_col = |v: Vec<&str>| Arc::new(arrow::array::StringArray::from(v)) as Arc<dyn Array>;
        let batch = RecordBatch::try_new(
            Arc::clone(&entity_schema),
            vec![
                str_col(ms.iter().map(|(u, _)| u.as_str()).collect()),
                str_col(ms.iter().map(|&(_, e)| KB[e].0).collect()),
                str_col(ms.iter().map(|&(_, e)| KB[e].1).collect()),
                Arc::new(arrow::array::StringArray::from(ms.iter().map(|&(_, e)| KB[e].2).collect::<Vec<_>>())),
                str_col(ms.iter().map(|&(_, e)| KB[e].1).collect()),
                Arc::new(arrow::array::Int64Array::from((0..ms.len() as i64).collect::<Vec<_>>())),
                Arc::new(arrow::array::Float64Array::from(vec![0.75; ms.len()])),
            ],
        )
        .expect("entities batch");
        write(data.join(format!("entities/layer={layer}/data-00000.parquet")), batch);
        if rels.is_empty() {
            continue;
        }
        let batch = RecordBatch::try_new(
            Arc::clone(&relation_schema),
            vec![
                str_col(rels.iter().map(|r| r.0.as_str()).collect()),
                str_col(rels.iter().map(|r| r.1).collect()),
                str_col(rels.iter().map(|r| r.2).collect()),
                str_col(rels.iter().map(|r| r.3).collect()),
                str_col(rels.iter().map(|_| "A sentence.").collect()),
                Arc::new(arrow::array::Float64Array::from(vec![0.9; rels.len()])),
            ],
        )
        .expect("relations batch");
        write(data.join(format!("relations/layer={layer}/data-00000.parquet")), batch);
    }
    EntityFigures { mentions, pages, predicates }
}

/// What the entity files written hold: mentions and pages per entity id, relations per predicate.
pub struct EntityFigures {
    pub mentions: BTreeMap<String, u64>,
    pub pages: BTreeMap<String, u64>,
    pub predicates: BTreeMap<String, u64>,
}
