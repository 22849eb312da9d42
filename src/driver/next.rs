//! The optimise step between layers: the next layer's `in` set.
//!
//! Followable links of layer `L` are shuffled to the partition of their
//! target's registrable domain, de-duplicated (smallest depth wins), checked
//! against the visited store, and written as `in/layer=L+1`, together with
//! the URLs layer `L` carried over unfetched.
//!
//! The visited store is exact for now: per partition, one sorted run of
//! 64-bit URL fingerprints per layer (`state/visited/part-K/layer=L.u64`),
//! checked with a merge pass, the MapReduce way; nothing is kept in memory
//! between layers.

use std::collections::HashMap;

use bytes::Bytes;
use url::Url;

use crate::partition::partition_of_domain;
use crate::store::manifest::NextManifest;
use crate::store::schema::{self, InRow};
use crate::store::{layout, read_batches, ShardWriter, Store, StoreError};
use crate::urlnorm;

use super::{Ctx, RunError};

/// Writes layer 0's input from the seeds.
///
/// # Errors
/// On storage failures.
pub async fn seed_layer(ctx: &Ctx, seeds: &[Url]) -> Result<NextManifest, RunError> {
    let rows: Vec<InRow> = seeds.iter().map(|u| InRow { url: u.to_string(), depth: 0, referrer: None }).collect();
    write_layer_input(ctx, 0, rows, Vec::new()).await
}

/// Builds `in/layer=L+1` from layer `L`'s links and carried URLs.
///
/// # Errors
/// On storage failures.
pub async fn next_layer(ctx: &Ctx, layer: u32) -> Result<NextManifest, RunError> {
    let store = &ctx.store;
    let max_depth = i32::try_from(ctx.cfg.depth).unwrap_or(i32::MAX);
    let mut candidates = Vec::new();
    for (path, _) in store.list(&format!("links/layer={layer}")).await? {
        if !path.ends_with(".parquet") {
            continue;
        }
        for b in read_batches(store, &path, Some(&["src_url", "dst_url", "depth", "noise"])).await? {
            let src = schema::string_col(&b, "src_url", &path)?;
            let dst = schema::string_col(&b, "dst_url", &path)?;
            let noise = schema::string_col(&b, "noise", &path)?;
            let depth = b
                .column_by_name("depth")
                .and_then(|c| c.as_any().downcast_ref::<arrow::array::Int32Array>())
                .ok_or_else(|| StoreError::Schema { path: path.clone(), reason: "column `depth` missing".into() })?;
            for i in 0..b.num_rows() {
                if arrow::array::Array::is_null(noise, i) && depth.value(i) <= max_depth {
                    candidates.push(InRow {
                        url: dst.value(i).to_string(),
                        depth: depth.value(i),
                        referrer: Some(src.value(i).to_string()),
                    });
                }
            }
        }
    }
    let mut carried = Vec::new();
    for (path, _) in store.list(&format!("state/carry/layer={layer}")).await? {
        for b in read_batches(store, &path, None).await? {
            carried.extend(schema::input_rows(&b, &path)?);
        }
    }
    let mut m = write_layer_input(ctx, layer + 1, candidates, carried).await?;
    m.layer = layer + 1;
    Ok(m)
}

/// Partitions, de-duplicates and writes one layer's input, then commits it.
async fn write_layer_input(ctx: &Ctx, target: u32, candidates: Vec<InRow>, carried: Vec<InRow>) -> Result<NextManifest, RunError> {
    let store = &ctx.store;
    let p = ctx.cfg.partitions;
    let mut m = NextManifest { layer: target, candidates: candidates.len() as u64, carried: carried.len() as u64, ..NextManifest::default() };
    let mut by_part: Vec<HashMap<u64, InRow>> = (0..p).map(|_| HashMap::new()).collect();
    for row in candidates {
        let Ok(url) = Url::parse(&row.url) else { continue };
        let k = partition_of(&url, p);
        let fp = urlnorm::fingerprint(&url);
        match by_part[k as usize].entry(fp) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                m.seen += 1;
                if row.depth < e.get().depth {
                    e.insert(row);
                }
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(row);
            }
        }
    }
    let mut carried_by_part: Vec<Vec<InRow>> = (0..p).map(|_| Vec::new()).collect();
    for row in carried {
        if let Ok(url) = Url::parse(&row.url) {
            carried_by_part[partition_of(&url, p) as usize].push(row);
        }
    }
    for (k, (fresh, carry)) in by_part.into_iter().zip(carried_by_part).enumerate() {
        let k = u32::try_from(k).expect("partition index fits u32");
        let mut fps: Vec<u64> = fresh.keys().copied().collect();
        fps.sort_unstable();
        let seen = visited_among(store, k, target, &fps).await?;
        let mut rows: Vec<InRow> = Vec::with_capacity(fps.len() + carry.len());
        let mut new_fps = Vec::with_capacity(fps.len());
        let mut fresh = fresh;
        for (fp, was_seen) in fps.iter().zip(seen) {
            if was_seen {
                m.seen += 1;
            } else if let Some(row) = fresh.remove(fp) {
                new_fps.push(*fp);
                rows.push(row);
            }
        }
        // The carried URLs are in the visited store already (from their first layer).
        rows.extend(carry);
        rows.sort_by(|a, b| a.url.cmp(&b.url));
        m.next += rows.len() as u64;
        store.put(&layout::visited(k, target), encode_fps(&new_fps)).await?;
        let path = layout::input(target, k);
        if rows.is_empty() {
            store.delete(&path).await?;
        } else {
            let mut w = ShardWriter::create(store, &path, schema::input_schema(), 32 << 20)?;
            w.write(&schema::input_batch(&rows)?).await?;
            w.finish().await?;
        }
    }
    store.put_json(&layout::input_manifest(target), &m).await?;
    Ok(m)
}

fn partition_of(url: &Url, partitions: u32) -> u32 {
    partition_of_domain(&urlnorm::registrable_domain(url.host_str().unwrap_or_default()), partitions)
}

/// For sorted `fps`, whether each is in a visited run of a layer before `target`.
async fn visited_among(store: &Store, part: u32, target: u32, fps: &[u64]) -> Result<Vec<bool>, StoreError> {
    let mut seen = vec![false; fps.len()];
    for layer in 0..target {
        let Some(bytes) = store.get(&layout::visited(part, layer)).await? else { continue };
        let run = decode_fps(&bytes);
        // Both sides are sorted: one merge pass.
        let (mut i, mut j) = (0, 0);
        while i < fps.len() && j < run.len() {
            match fps[i].cmp(&run[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    seen[i] = true;
                    i += 1;
                }
            }
        }
    }
    Ok(seen)
}

fn encode_fps(fps: &[u64]) -> Bytes {
    let mut v = Vec::with_capacity(fps.len() * 8);
    for fp in fps {
        v.extend_from_slice(&fp.to_le_bytes());
    }
    Bytes::from(v)
}

fn decode_fps(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn visited_merge_finds_exactly_the_earlier_layers() {
        let store = Store::open("memory://").expect("store");
        store.put(&layout::visited(3, 0), encode_fps(&[1, 5, 9])).await.expect("put");
        store.put(&layout::visited(3, 1), encode_fps(&[2, 6])).await.expect("put");
        store.put(&layout::visited(3, 2), encode_fps(&[7])).await.expect("put");
        let seen = visited_among(&store, 3, 2, &[1, 2, 3, 6, 7, 9, 10]).await.expect("merge");
        assert_eq!(seen, vec![true, true, false, true, false, true, false], "layer 2's own run is not consulted");
    }

    #[test]
    fn fingerprint_runs_round_trip() {
        let fps = vec![0, 1, u64::MAX, 42];
        assert_eq!(decode_fps(&encode_fps(&fps)), fps);
    }
}
