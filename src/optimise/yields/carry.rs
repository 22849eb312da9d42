//! What a partition's noise filter passes on to a later step besides its
//! counts: candidates deferred to be decided with the next layer's
//! (`state/denoise/deferred/`), the gates of the next layer's input
//! (`state/denoise/gates/`), and the URLs the map task held back in a gate,
//! read back so that one followed again is fetched.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::denoise::gate::{gates_batch, gates_schema, Gate};
use crate::denoise::yields::add_via;
use crate::optimise::{missing, str_col, Candidate};
use crate::store::column::{Tuned, Tuning};
use crate::store::schema::InRow;
use crate::store::{layout, read_if_exists, ShardWriter, Store, StoreError};
use crate::urlnorm;

fn deferred_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false).tuned(Tuning::DISTINCT),
            Field::new("depth", DataType::Int32, false).tuned(Tuning::SMALL),
            Field::new("referrer", DataType::Utf8, true),
            Field::new("via", DataType::Utf8, false),
        ]))
    }))
}

/// Keeps partition `k`'s deferred candidates, to be decided again with the
/// candidates of `layer`'s links.
pub(in crate::optimise) async fn write_deferred(
    store: &Store,
    layer: u32,
    k: u32,
    rows: &[&Candidate],
) -> Result<(), StoreError> {
    let path = layout::deferred(layer, k);
    if rows.is_empty() {
        return store.delete(&path).await;
    }
    let mut w = ShardWriter::create(store, &path, deferred_schema(), 8 << 20)?;
    for chunk in rows.chunks(8192) {
        let cols: Vec<arrow_array::ArrayRef> = vec![
            Arc::new(chunk.iter().map(|c| Some(c.row.url.as_str())).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|c| Some(c.row.depth)).collect::<Int32Array>()),
            Arc::new(chunk.iter().map(|c| c.row.referrer.as_deref()).collect::<StringArray>()),
            Arc::new(chunk.iter().map(|c| Some(c.via.join("\n"))).collect::<StringArray>()),
        ];
        let b = RecordBatch::try_new(deferred_schema(), cols)
            .map_err(|e| StoreError::Schema { path: path.clone(), reason: e.to_string() })?;
        w.write(&b).await?;
    }
    w.finish().await?;
    Ok(())
}

/// Writes the gates of partition `k`'s input of `layer` (each URL by its
/// fingerprint), for its map task ([`crate::denoise::gate`]).
pub(in crate::optimise) async fn write_gates(
    store: &Store,
    layer: u32,
    k: u32,
    rows: &[(u64, Gate)],
) -> Result<(), StoreError> {
    let path = layout::gates(layer, k);
    if rows.is_empty() {
        return store.delete(&path).await;
    }
    let mut w = ShardWriter::create(store, &path, gates_schema(), 8 << 20)?;
    for chunk in rows.chunks(8192) {
        w.write(&gates_batch(chunk).map_err(|e| StoreError::Schema { path: path.clone(), reason: e.to_string() })?)
            .await?;
    }
    w.finish().await?;
    Ok(())
}

/// The URLs partition `k`'s map task held back in `layer` (the noise
/// filter's gates), by fingerprint.
pub(in crate::optimise) async fn read_held_back(store: &Store, layer: u32, k: u32) -> Result<HashSet<u64>, StoreError> {
    let path = layout::held_back(layer, k);
    let mut held = HashSet::new();
    for b in read_if_exists(store, &path).await? {
        let url = str_col(&b, "url", &path)?;
        held.extend(url.iter().flatten().map(urlnorm::fingerprint_str));
    }
    Ok(held)
}

/// Adds partition `k`'s candidates deferred into `layer` to `cands` (a
/// candidate found again takes the smaller depth and both link classes),
/// keeping URL order; returns their fingerprints. `unshuffled`: some of the
/// layer's links were not shuffled (a layer at or past the crawl's depth),
/// so a deferred candidate not among `cands` may still be linked from it.
pub(in crate::optimise) async fn add_deferred(
    store: &Store,
    layer: u32,
    k: u32,
    cands: &mut Vec<Candidate>,
    unshuffled: bool,
) -> Result<HashSet<u64>, StoreError> {
    let path = layout::deferred(layer, k);
    let mut again = HashSet::new();
    let mut added = Vec::new();
    for b in read_if_exists(store, &path).await? {
        let url = str_col(&b, "url", &path)?;
        let referrer = str_col(&b, "referrer", &path)?;
        let via = str_col(&b, "via", &path)?;
        let depth = b
            .column_by_name("depth")
            .and_then(|c| c.as_primitive_opt::<Int32Type>())
            .ok_or_else(|| missing(&path, "depth"))?;
        for i in 0..b.num_rows() {
            let u = url.value(i);
            again.insert(urlnorm::fingerprint_str(u));
            let templates: Vec<String> = via.value(i).split('\n').filter(|t| !t.is_empty()).map(String::from).collect();
            match cands.binary_search_by(|c| c.row.url.as_str().cmp(u)) {
                Ok(at) => {
                    let c = &mut cands[at];
                    c.row.depth = c.row.depth.min(depth.value(i));
                    c.followed = true;
                    for t in &templates {
                        add_via(&mut c.via, t);
                    }
                }
                Err(_) => added.push(Candidate {
                    domain: urlnorm::registrable_domain(urlnorm::host_of(u)),
                    row: InRow {
                        url: u.to_string(),
                        depth: depth.value(i),
                        referrer: (!referrer.is_null(i)).then(|| referrer.value(i).to_string()),
                        ..InRow::default()
                    },
                    followed: true,
                    dom: false,
                    content: true,
                    via: templates,
                    // Its links in the layer that deferred it keep their
                    // labels as they were. Where this layer's links were
                    // not all read here, its pages may link it too: should
                    // it be skipped, every shard of the layer is looked at.
                    sources: if unshuffled { u64::MAX } else { 0 },
                }),
            }
        }
    }
    if !added.is_empty() {
        cands.extend(added);
        cands.sort_unstable_by(|a, b| a.row.url.cmp(&b.row.url));
    }
    Ok(again)
}
