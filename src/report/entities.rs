//! The entities a crawl linked (`--entities`): the `entities` and
//! `relations` datasets (docs/src/output.md), absent from most crawls. Top
//! entities by mentions, mentions by type, relations by predicate, and the
//! entity graph: entities as nodes, relations and co-mentions (two
//! entities on one page) as edges.

use std::collections::{BTreeMap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, RecordBatch};
use futures::StreamExt;
use serde::Serialize;

use super::graph::{Edge, Graph, Node};
use super::{on_rayon, ReportError};
use crate::store::dataset::{ENTITIES, RELATIONS};
use crate::store::schema::string_col;
use crate::store::{stream_batches, Store, StoreError};

const ENTITY_COLUMNS: &[&str] = &["url", "entity_id", "entity_name", "entity_type", "score"];
const RELATION_COLUMNS: &[&str] = &["subject_id", "predicate", "object_id"];

/// Entities in the table, and drawn in the graph, at most.
const TOP: usize = 50;
const GRAPH_NODES: usize = 120;
/// Edges of each kind drawn at most.
const GRAPH_RELATIONS: usize = 300;
const GRAPH_CO: usize = 400;

/// What the entity datasets say.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct EntityReport {
    /// Mention rows, distinct entities, pages with a mention.
    pub mentions: u64,
    pub entities: u64,
    pub pages: u64,
    pub top: Vec<EntityRow>,
    /// Mentions by entity type (`none` for entities without one).
    pub types: BTreeMap<String, u64>,
    /// Relation rows, by predicate, and the most frequent triples.
    pub relations: u64,
    pub predicates: BTreeMap<String, u64>,
    pub top_relations: Vec<RelationRow>,
    pub graph: Graph,
}

/// One entity's figures.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct EntityRow {
    pub id: String,
    pub name: String,
    pub kind: String,
    pub mentions: u64,
    pub pages: u64,
    /// Mean confidence of its links.
    pub score: f64,
}

/// One subject–predicate–object triple and how often it was found.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RelationRow {
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub count: u64,
}

#[derive(Clone, Debug, Default)]
struct Entity {
    id: String,
    name: String,
    kind: String,
    mentions: u64,
    score_sum: f64,
}

#[derive(Debug, Default)]
struct Tally {
    ents: Vec<Entity>,
    index: HashMap<String, u32>,
    /// The entities mentioned on each page (by URL fingerprint).
    pages: HashMap<u64, Vec<u32>>,
    mentions: u64,
    predicates: Vec<String>,
    pred_index: HashMap<String, u32>,
    triples: HashMap<(u32, u32, u32), u64>,
    relations: u64,
}

fn missing(path: &str, name: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: format!("column `{name}` missing or of another type") }
}

impl Tally {
    fn entity(&mut self, id: &str) -> u32 {
        if let Some(&i) = self.index.get(id) {
            return i;
        }
        let i = u32::try_from(self.ents.len()).unwrap_or(u32::MAX);
        self.ents.push(Entity { id: id.to_string(), name: id.to_string(), ..Entity::default() });
        self.index.insert(id.to_string(), i);
        i
    }

    fn add_mentions(&mut self, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        let (url, id, name) =
            (string_col(b, "url", path)?, string_col(b, "entity_id", path)?, string_col(b, "entity_name", path)?);
        let kind = string_col(b, "entity_type", path)?;
        let score = b
            .column_by_name("score")
            .and_then(|c| c.as_primitive_opt::<Float64Type>())
            .ok_or_else(|| missing(path, "score"))?;
        for i in 0..b.num_rows() {
            let e = self.entity(id.value(i));
            let ent = &mut self.ents[e as usize];
            if ent.mentions == 0 {
                ent.name = name.value(i).to_string();
                ent.kind = if kind.is_null(i) { String::new() } else { kind.value(i).to_string() };
            }
            ent.mentions += 1;
            ent.score_sum += score.value(i);
            self.mentions += 1;
            let on = self.pages.entry(crate::urlnorm::fingerprint_str(url.value(i))).or_default();
            if !on.contains(&e) {
                on.push(e);
            }
        }
        Ok(())
    }

    fn add_relations(&mut self, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        let (s, p, o) =
            (string_col(b, "subject_id", path)?, string_col(b, "predicate", path)?, string_col(b, "object_id", path)?);
        for i in 0..b.num_rows() {
            let (s, o) = (self.entity(s.value(i)), self.entity(o.value(i)));
            let pred = match self.pred_index.get(p.value(i)) {
                Some(&k) => k,
                None => {
                    let k = u32::try_from(self.predicates.len()).unwrap_or(u32::MAX);
                    self.predicates.push(p.value(i).to_string());
                    self.pred_index.insert(p.value(i).to_string(), k);
                    k
                }
            };
            *self.triples.entry((s, pred, o)).or_default() += 1;
            self.relations += 1;
        }
        Ok(())
    }

    fn report(self) -> EntityReport {
        let mut pages_of = vec![0u64; self.ents.len()];
        for on in self.pages.values() {
            for &e in on {
                pages_of[e as usize] += 1;
            }
        }
        let mentioned = self.ents.iter().filter(|e| e.mentions > 0).count() as u64;
        let mut types: BTreeMap<String, u64> = BTreeMap::new();
        for e in self.ents.iter().filter(|e| e.mentions > 0) {
            let k = if e.kind.is_empty() { "none" } else { e.kind.as_str() };
            *types.entry(k.to_string()).or_default() += e.mentions;
        }
        let mut ranked: Vec<u32> = (0..self.ents.len()).filter_map(|i| u32::try_from(i).ok()).collect();
        ranked.sort_by(|&a, &b| {
            let (x, y) = (&self.ents[a as usize], &self.ents[b as usize]);
            y.mentions.cmp(&x.mentions).then(x.id.cmp(&y.id))
        });
        let row = |e: u32| {
            let ent = &self.ents[e as usize];
            #[allow(clippy::cast_precision_loss)]
            let score = if ent.mentions == 0 { 0.0 } else { ent.score_sum / ent.mentions as f64 };
            EntityRow {
                id: ent.id.clone(),
                name: ent.name.clone(),
                kind: ent.kind.clone(),
                mentions: ent.mentions,
                pages: pages_of[e as usize],
                score,
            }
        };
        let top = ranked.iter().take(TOP).map(|&e| row(e)).collect();
        let mut predicates: BTreeMap<String, u64> = BTreeMap::new();
        for (&(_, p, _), &n) in &self.triples {
            *predicates.entry(self.predicates[p as usize].clone()).or_default() += n;
        }
        let mut triples: Vec<((u32, u32, u32), u64)> = self.triples.iter().map(|(&k, &n)| (k, n)).collect();
        triples.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let name = |e: u32| self.ents[e as usize].name.clone();
        let top_relations = triples
            .iter()
            .take(TOP)
            .map(|&((s, p, o), count)| RelationRow {
                subject: name(s),
                predicate: self.predicates[p as usize].clone(),
                object: name(o),
                count,
            })
            .collect();
        let graph = self.graph(&ranked, &triples, &pages_of);
        EntityReport {
            mentions: self.mentions,
            entities: mentioned,
            pages: self.pages.len() as u64,
            top,
            types,
            relations: self.relations,
            predicates,
            top_relations,
            graph,
        }
    }

    /// The most mentioned entities and the ends of the most frequent
    /// relations; relation edges (one per triple) and co-mention edges (pages
    /// mentioning both) between them.
    fn graph(&self, ranked: &[u32], triples: &[((u32, u32, u32), u64)], pages_of: &[u64]) -> Graph {
        let mut at: HashMap<u32, u32> = HashMap::new();
        let mut order: Vec<u32> = Vec::new();
        let mut add = |e: u32, order: &mut Vec<u32>| {
            if order.len() < GRAPH_NODES && !at.contains_key(&e) {
                at.insert(e, u32::try_from(order.len()).unwrap_or(u32::MAX));
                order.push(e);
            }
        };
        for &((s, _, o), _) in triples.iter().take(GRAPH_RELATIONS / 3) {
            add(s, &mut order);
            add(o, &mut order);
        }
        for &e in ranked.iter().filter(|&&e| self.ents[e as usize].mentions > 0) {
            add(e, &mut order);
        }
        let nodes = order
            .iter()
            .map(|&e| {
                let ent = &self.ents[e as usize];
                Node {
                    label: ent.name.clone(),
                    weight: ent.mentions.max(1),
                    group: if ent.kind.is_empty() { "none".into() } else { ent.kind.clone() },
                    detail: format!(
                        "{} ({}): {} mentions on {} pages",
                        ent.id,
                        if ent.kind.is_empty() { "no type" } else { &ent.kind },
                        ent.mentions,
                        pages_of[e as usize]
                    ),
                }
            })
            .collect();
        let mut edges: Vec<Edge> = triples
            .iter()
            .filter_map(|&((s, p, o), w)| {
                Some(Edge {
                    s: *at.get(&s)?,
                    t: *at.get(&o)?,
                    w,
                    kind: "relation".into(),
                    label: self.predicates[p as usize].clone(),
                })
            })
            .take(GRAPH_RELATIONS)
            .collect();
        let mut co: HashMap<(u32, u32), u64> = HashMap::new();
        for on in self.pages.values() {
            let mut here: Vec<u32> = on.iter().filter_map(|e| at.get(e).copied()).collect();
            here.sort_unstable();
            for (k, &a) in here.iter().enumerate() {
                for &b in &here[k + 1..] {
                    *co.entry((a, b)).or_default() += 1;
                }
            }
        }
        let all_co = co.len() as u64;
        let mut co: Vec<((u32, u32), u64)> = co.into_iter().collect();
        co.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        edges.extend(co.into_iter().take(GRAPH_CO).map(|((s, t), w)| Edge {
            s,
            t,
            w,
            kind: "co".into(),
            label: String::new(),
        }));
        Graph {
            nodes,
            edges,
            all_nodes: self.ents.iter().filter(|e| e.mentions > 0).count() as u64,
            all_edges: self.triples.len() as u64 + all_co,
        }
    }
}

/// The entity figures of the crawl in `store`, or `None` when it has no
/// `entities` dataset (a crawl without `--entities`).
///
/// # Errors
/// When a file of the datasets cannot be read or lacks a column.
pub(super) async fn gather(store: &Store) -> Result<Option<EntityReport>, ReportError> {
    let files = store.parquet_files(ENTITIES.name).await?;
    if files.is_empty() {
        return Ok(None);
    }
    let mut tally = Tally::default();
    for path in &files {
        let mut batches = stream_batches(store, path, Some(ENTITY_COLUMNS)).await?;
        while let Some(b) = batches.next().await {
            let (b, p) = (b?, path.clone());
            tally = on_rayon(move || tally.add_mentions(&b, &p).map(|()| tally)).await??;
        }
    }
    for path in store.parquet_files(RELATIONS.name).await? {
        let mut batches = stream_batches(store, &path, Some(RELATION_COLUMNS)).await?;
        while let Some(b) = batches.next().await {
            let (b, p) = (b?, path.clone());
            tally = on_rayon(move || tally.add_relations(&b, &p).map(|()| tally)).await??;
        }
    }
    Ok(Some(on_rayon(move || tally.report()).await?))
}
