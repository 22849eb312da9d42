//! The optimise step between layers (S300-S400): the next layer's `in` set.
//!
//! 1. The links of layer `L` are read and shuffled to the partition of their
//!    target's registrable domain: the followable ones are candidates, the
//!    ones the DOM prefilter flagged are kept as noise samples.
//! 2. **Clustering** (S311-S314): per domain block, single-pass LCS
//!    clustering over the distinct targets; a cluster that matches the noise
//!    samples (or a user's known noise URLs), and strong deviants inside a
//!    cluster, are noise. Their links are relabelled `lcs_cluster` in
//!    `links/layer=L` and, with `--denoise drop`, not followed.
//! 3. **Dedup** (S400): each partition's weighted visit/cache list drops
//!    repeats it remembers; the rest are checked against the visited store
//!    in one merge pass; the new ones, with the URLs layer `L` carried over,
//!    become `in/layer=L+1`.
//!
//! Everything here is deterministic for the same input, so a re-run after
//! a kill rebuilds exactly the same set (the caches only save work).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, StringArray};
use arrow::datatypes::Int32Type;
use rayon::prelude::*;
use url::Url;

use crate::config::Denoise;
use crate::dedup::dedup_round;
use crate::dedup::visited::VisitedStore;
use crate::denoise::{noise_by_cluster, BlockUrl};
use crate::partition::partition_of_domain;
use crate::store::manifest::NextManifest;
use crate::store::schema::{self, InRow};
use crate::store::{layout, read_batches, ShardWriter, Store, StoreError};
use crate::urlnorm;

use super::{Ctx, RunError};

/// One link target of the layer, on its way to the next layer.
/// All the links of a layer to one URL, merged: the depth is the smallest
/// (with its referrer, the smallest on a tie, so the choice does not depend
/// on which page was fetched first).
struct Candidate {
    row: InRow,
    /// Registrable domain of the URL: its partition and its clustering block.
    domain: String,
    /// Some link to it is followed (by the map-side labels), unless
    /// clustering or the trap guards say otherwise.
    followed: bool,
    /// Every link to it was flagged by the DOM prefilter (a noise sample).
    dom: bool,
    /// Some link to it is followable and not DOM-flagged.
    content: bool,
}

/// Writes layer 0's input from the seeds.
///
/// # Errors
/// On storage failures.
pub async fn seed_layer(ctx: &Ctx, seeds: &[Url]) -> Result<NextManifest, RunError> {
    let mut by_part: Vec<Vec<InRow>> = (0..ctx.cfg.partitions).map(|_| Vec::new()).collect();
    for u in seeds {
        by_part[partition_of(u.as_str(), ctx.cfg.partitions) as usize].push(InRow { url: u.to_string(), depth: 0, referrer: None });
    }
    let mut m = NextManifest { layer: 0, candidates: seeds.len() as u64, ..NextManifest::default() };
    write_layer_input(ctx, 0, by_part, Vec::new(), &mut m).await?;
    Ok(m)
}

/// Builds `in/layer=L+1` from layer `L`'s links and carried URLs.
///
/// # Errors
/// On storage failures.
pub async fn next_layer(ctx: &Ctx, layer: u32) -> Result<NextManifest, RunError> {
    let store = &ctx.store;
    let opt = &ctx.cfg.optimise;
    let mut m = NextManifest { layer: layer + 1, ..NextManifest::default() };
    let mut by_part = read_candidates(ctx, layer, &mut m).await?;

    // Traps first: they are never followed, whatever --denoise says.
    let mut labels: HashMap<u64, &'static str> = find_traps(&by_part, opt.max_query_variants);
    m.traps = labels.len() as u64;
    if opt.denoise != Denoise::Off {
        let known: Vec<String> = opt.noise_patterns.clone();
        let cfg = opt.cluster.clone();
        let (parts, lcs, stats) = tokio::task::spawn_blocking(move || {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            let lcs = cluster_partitions(&by_part, &known, &cfg);
            let stats = lcs.iter().fold((0u64, 0u64), |a, p| (a.0 + p.1, a.1 + p.2));
            let noise: HashSet<u64> = lcs.into_iter().flat_map(|p| p.0).collect();
            (std::mem::take(&mut by_part), noise, stats)
        })
        .await
        .map_err(|e| RunError::Internal(format!("clustering failed: {e}")))?;
        by_part = parts;
        (m.clusters, m.comparisons) = stats;
        m.lcs_noise = lcs.len() as u64;
        for fp in lcs {
            labels.entry(fp).or_insert("lcs_cluster");
        }
    }
    if !labels.is_empty() {
        let mark = opt.denoise == Denoise::Mark;
        relabel_links(store, layer, &labels, mark).await?;
        for part in &mut by_part {
            part.retain(|c| match labels.get(&urlnorm::fingerprint_str(&c.row.url)) {
                Some(&"lcs_cluster") => mark,
                Some(_) => false,
                None => true,
            });
        }
    }

    let mut carried: Vec<InRow> = Vec::new();
    for path in store.parquet_files(&format!("state/carry/layer={layer}")).await? {
        for b in read_batches(store, &path, None).await? {
            carried.extend(schema::input_rows(&b, &path)?);
        }
    }
    let fresh: Vec<Vec<InRow>> =
        by_part.into_iter().map(|p| p.into_iter().filter(|c| c.followed).map(|c| c.row).collect()).collect();
    write_layer_input(ctx, layer + 1, fresh, carried, &mut m).await?;
    Ok(m)
}

/// Reads layer `layer`'s links: one candidate per distinct target (followed
/// or DOM-flagged) within the depth limit, per target partition, in URL
/// order. Memory grows with the distinct targets, not with the links.
async fn read_candidates(ctx: &Ctx, layer: u32, m: &mut NextManifest) -> Result<Vec<Vec<Candidate>>, RunError> {
    let store = &ctx.store;
    let max_depth = i32::try_from(ctx.cfg.depth).unwrap_or(i32::MAX);
    let p = ctx.cfg.partitions;
    // One entry per distinct target; the domain (a public-suffix lookup) is
    // worked out once per target below, not once per link.
    let mut targets: HashMap<String, Candidate> = HashMap::new();
    for path in link_shards(store, layer).await? {
        for b in read_batches(store, &path, Some(&["src_url", "dst_url", "depth", "noise", "followed"])).await? {
            let (src, dst, noise) = (str_col(&b, "src_url", &path)?, str_col(&b, "dst_url", &path)?, str_col(&b, "noise", &path)?);
            let depth = b.column_by_name("depth").and_then(|c| c.as_primitive_opt::<Int32Type>()).ok_or_else(|| missing(&path, "depth"))?;
            let followed = bool_col(&b, "followed", &path)?;
            for i in 0..b.num_rows() {
                let label = (!noise.is_null(i)).then(|| noise.value(i));
                // A label from an earlier attempt of this step is undone: it is recomputed.
                let (follows, dom) = match label {
                    None | Some("lcs_cluster" | "trap") => (true, false),
                    Some("dom_ratio") => (followed.value(i), true),
                    Some(_) => continue,
                };
                m.dom_noise += u64::from(dom);
                if depth.value(i) > max_depth {
                    continue;
                }
                let (url, d, from) = (dst.value(i), depth.value(i), src.value(i));
                m.candidates += u64::from(follows);
                if let Some(c) = targets.get_mut(url) {
                    // A repeat within this round: what the visit list is for.
                    m.visit_hits += u64::from(follows && c.followed);
                    c.followed |= follows;
                    c.dom &= dom;
                    c.content |= follows && !dom;
                    if (d, from) < (c.row.depth, c.row.referrer.as_deref().unwrap_or_default()) {
                        c.row.depth = d;
                        c.row.referrer = Some(from.to_string());
                    }
                } else {
                    let row = InRow { url: url.to_string(), depth: d, referrer: Some(from.to_string()) };
                    let c = Candidate { row, domain: String::new(), followed: follows, dom, content: follows && !dom };
                    targets.insert(url.to_string(), c);
                }
            }
        }
    }
    let mut by_part: Vec<Vec<Candidate>> = (0..p).map(|_| Vec::new()).collect();
    for (_, mut c) in targets {
        c.domain = urlnorm::registrable_domain(urlnorm::host_of(&c.row.url));
        by_part[partition_of_domain(&c.domain, p) as usize].push(c);
    }
    for part in &mut by_part {
        part.sort_unstable_by(|a, b| a.row.url.cmp(&b.row.url));
    }
    Ok(by_part)
}

/// Per partition: the fingerprints of followable URLs that clustering
/// judged noise, the clusters made and the comparisons done.
fn cluster_partitions(by_part: &[Vec<Candidate>], known: &[&str], cfg: &crate::denoise::cluster::ClusterConfig) -> Vec<(Vec<u64>, u64, u64)> {
    by_part
        .par_iter()
        .map(|cands| {
            // Domain blocks of distinct URLs, each in URL order: single-pass
            // clustering depends on order, and the links' order depends on which
            // fetch finished first, so sorting keeps a resumed run identical.
            // Per URL: all its links DOM-flagged; any of them followable content.
            let mut by_domain: BTreeMap<&str, BTreeMap<&str, (bool, bool)>> = BTreeMap::new();
            for c in cands {
                let url = c.row.url.as_str();
                let e = by_domain.entry(c.domain.as_str()).or_default().entry(url).or_insert((true, false));
                e.0 &= c.dom;
                e.1 |= c.content;
            }
            let blocks: Vec<(Vec<BlockUrl>, Vec<bool>)> = by_domain
                .into_values()
                .map(|urls| {
                    let content = urls.values().map(|v| v.1).collect();
                    (urls.into_iter().map(|(u, (dom, _))| BlockUrl { url: u.to_string(), dom_noise: dom }).collect(), content)
                })
                .collect();
            let (mut noise, mut clusters, mut comparisons) = (Vec::new(), 0u64, 0u64);
            for (urls, content) in &blocks {
                let v = noise_by_cluster(urls, known, cfg);
                clusters += v.clusters as u64;
                comparisons += v.comparisons;
                // Only links that would be followed need the label: DOM-flagged ones have theirs.
                noise.extend(urls.iter().zip(&v.noise).zip(content).filter(|((_, n), c)| **n && **c).map(|((u, _), _)| urlnorm::fingerprint_str(&u.url)));
            }
            (noise, clusters, comparisons)
        })
        .collect()
}

/// Trap URLs among the followable candidates: ever-deeper paths (a path
/// segment repeated 3 or more times, or more than [`MAX_SEGMENTS`]) and
/// query explosions (more than `budget` distinct queries for one host and
/// path in this layer: the first `budget` in URL order are kept, so the
/// choice does not depend on fetch order).
fn find_traps(by_part: &[Vec<Candidate>], budget: usize) -> HashMap<u64, &'static str> {
    let mut out = HashMap::new();
    for cands in by_part {
        let mut variants: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for c in cands.iter().filter(|c| c.followed) {
            let url = c.row.url.as_str();
            let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
            let path = base.split_once("://").map_or(base, |(_, r)| r.find('/').map_or("", |at| &r[at..]));
            if deep_path(path) {
                out.insert(urlnorm::fingerprint_str(url), "trap");
            } else if query.is_some() {
                variants.entry(base).or_default().insert(url);
            }
        }
        for urls in variants.values().filter(|v| v.len() > budget) {
            out.extend(urls.iter().skip(budget).map(|u| (urlnorm::fingerprint_str(u), "trap")));
        }
    }
    out
}

/// Paths longer than this many segments are traps.
const MAX_SEGMENTS: usize = 32;

fn deep_path(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() > MAX_SEGMENTS {
        return true;
    }
    let mut counts: HashMap<&str, u32> = HashMap::new();
    segments.iter().any(|s| {
        let n = counts.entry(s).or_default();
        *n += 1;
        *n >= 3
    })
}

/// Rewrites `links/layer=L` shards so that links to labelled targets carry
/// their label: `lcs_cluster` (followed only with `--denoise mark`) or
/// `trap` (never followed). Each shard is replaced atomically; shards
/// without such links are left alone.
async fn relabel_links(store: &Store, layer: u32, noise: &HashMap<u64, &'static str>, mark: bool) -> Result<(), StoreError> {
    for path in link_shards(store, layer).await? {
        let batches = read_batches(store, &path, None).await?;
        let mut changed = false;
        let mut out = Vec::with_capacity(batches.len());
        for b in &batches {
            let (dst, noise_col) = (str_col(b, "dst_url", &path)?, str_col(b, "noise", &path)?);
            let followed = bool_col(b, "followed", &path)?;
            let hit: Vec<Option<&str>> = (0..b.num_rows())
                .map(|i| if noise_col.is_null(i) { noise.get(&urlnorm::fingerprint_str(dst.value(i))).copied() } else { None })
                .collect();
            if hit.iter().all(Option::is_none) {
                out.push(b.clone());
                continue;
            }
            changed = true;
            let labels: StringArray = (0..b.num_rows()).map(|i| hit[i].or_else(|| (!noise_col.is_null(i)).then(|| noise_col.value(i)))).collect();
            let follows: BooleanArray = (0..b.num_rows()).map(|i| Some(match hit[i] { Some("lcs_cluster") => mark, Some(_) => false, None => followed.value(i) })).collect();
            out.push(replace_columns(b, &path, labels, follows)?);
        }
        if changed {
            let mut w = ShardWriter::create(store, &path, schema::links_schema(), 32 << 20)?;
            for b in &out {
                w.write(b).await?;
            }
            w.finish().await?;
        }
    }
    Ok(())
}

fn replace_columns(b: &RecordBatch, path: &str, noise: StringArray, followed: BooleanArray) -> Result<RecordBatch, StoreError> {
    let schema = b.schema();
    let mut cols = b.columns().to_vec();
    let at = |name: &str| schema.index_of(name).map_err(|_| missing(path, name));
    cols[at("noise")?] = std::sync::Arc::new(noise);
    cols[at("followed")?] = std::sync::Arc::new(followed);
    RecordBatch::try_new(schema, cols).map_err(|e| StoreError::Schema { path: path.to_string(), reason: e.to_string() })
}

/// De-duplicates and writes one layer's input (per partition), then commits it.
async fn write_layer_input(ctx: &Ctx, target: u32, fresh: Vec<Vec<InRow>>, carried: Vec<InRow>, m: &mut NextManifest) -> Result<(), RunError> {
    let store = &ctx.store;
    let p = ctx.cfg.partitions;
    let visited = VisitedStore::new(store.clone());
    m.carried = carried.len() as u64;
    let mut carried_by_part: Vec<Vec<InRow>> = (0..p).map(|_| Vec::new()).collect();
    for row in carried {
        carried_by_part[partition_of(&row.url, p) as usize].push(row);
    }
    for (k, (mut rows, carry)) in fresh.into_iter().zip(carried_by_part).enumerate() {
        let k32 = u32::try_from(k).expect("partition index fits u32");
        // Smallest depth first, so the row kept for a repeated URL has it.
        rows.sort_by_key(|r| r.depth);
        let keyed: Vec<(u64, InRow)> = rows.into_iter().map(|r| (urlnorm::fingerprint_str(&r.url), r)).collect();
        let round = dedup_round(&ctx.caches[k], &visited, k32, target, keyed).await?;
        (m.visit_hits, m.cache_hits, m.store_hits) =
            (m.visit_hits + round.stats.visit_hits, m.cache_hits + round.stats.cache_hits, m.store_hits + round.stats.store_hits);
        let mut out = round.admitted;
        // Carried URLs are in the visited store already (from their first layer).
        out.extend(carry);
        out.sort_by(|a, b| a.url.cmp(&b.url));
        m.next += out.len() as u64;
        let path = layout::input(target, k32);
        if out.is_empty() {
            store.delete(&path).await?;
        } else {
            let mut w = ShardWriter::create(store, &path, schema::input_schema(), 32 << 20)?;
            w.write(&schema::input_batch(&out)?).await?;
            w.finish().await?;
        }
    }
    m.seen = m.visit_hits + m.cache_hits + m.store_hits;
    store.put_json(&layout::input_manifest(target), m).await?;
    Ok(())
}

async fn link_shards(store: &Store, layer: u32) -> Result<Vec<String>, StoreError> {
    store.parquet_files(&format!("links/layer={layer}")).await
}

fn partition_of(url: &str, partitions: u32) -> u32 {
    partition_of_domain(&urlnorm::registrable_domain(urlnorm::host_of(url)), partitions)
}

fn str_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a StringArray, StoreError> {
    schema::string_col(b, name, path)
}

fn bool_col<'a>(b: &'a RecordBatch, name: &str, path: &str) -> Result<&'a BooleanArray, StoreError> {
    b.column_by_name(name).and_then(|c| c.as_boolean_opt()).ok_or_else(|| missing(path, name))
}

fn missing(path: &str, name: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: format!("column `{name}` missing or of another type") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(url: &str) -> Candidate {
        let domain = urlnorm::registrable_domain(urlnorm::host_of(url));
        Candidate { row: InRow { url: url.to_string(), depth: 1, referrer: None }, domain, followed: true, dom: false, content: true }
    }

    #[test]
    fn deep_paths_and_query_explosions_are_traps() {
        assert!(deep_path("/docs/a/a/a/"));
        assert!(deep_path(&"/x".repeat(MAX_SEGMENTS + 1)));
        assert!(!deep_path("/2026/11/22/a-b"));
        assert!(!deep_path("/a/b/a/c"));
        let mut part: Vec<Candidate> = (0..7).map(|i| cand(&format!("http://s.test/search?q={i}"))).collect();
        part.push(cand("http://s.test/docs/a/a/a/"));
        part.push(cand("http://s.test/other?x=1"));
        let traps = find_traps(&[part], 5);
        let trapped: BTreeSet<u64> = traps.keys().copied().collect();
        let fp = urlnorm::fingerprint_str;
        let want: BTreeSet<u64> =
            [fp("http://s.test/search?q=5"), fp("http://s.test/search?q=6"), fp("http://s.test/docs/a/a/a/")].into_iter().collect();
        assert_eq!(trapped, want, "the first five queries in URL order are kept");
    }
}
