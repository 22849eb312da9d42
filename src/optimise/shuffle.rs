//! Step 1 of the optimise step: the layer's links shuffled to their
//! target's partition (the spills are `crate::shuffle`'s), and each
//! partition's targets merged back into candidates.

use std::collections::HashMap;

use crate::error::{cores, StageError};
use crate::shuffle::{shuffle_shard, Merged, ShuffleCounts, Suspects, COMBINE_ENTRIES};
use crate::store::schema::{self, InRow};
use crate::urlnorm;

use super::{link_shards, off_async, Candidate, OptimiseCtx};

/// The shuffle of `layer` redone from its links files (per-partition
/// shards, or the merged file of a finished crawl), when some of its map
/// tasks did not shuffle: they ran as the last layer of a crawl that is
/// now deepened. Spills of an interrupted earlier try are removed first;
/// each file is read by its own task, as many at once as there are cores.
pub(super) async fn respill_layer(ctx: &OptimiseCtx, layer: u32) -> Result<ShuffleCounts, StageError> {
    let store = &ctx.store;
    crate::shuffle::clear(store, layer).await?;
    let max_depth = i32::try_from(ctx.depth).unwrap_or(i32::MAX);
    let parts = ctx.partitions;
    let suspects = Suspects { ratio: ctx.noise_ratio, followed: ctx.cfg.denoise.follows_suspects() };
    let seats = std::sync::Arc::new(tokio::sync::Semaphore::new(cores()));
    let mut tasks = tokio::task::JoinSet::new();
    for (j, path) in link_shards(store, layer).await?.into_iter().enumerate() {
        let (store, seats) = (store.clone(), std::sync::Arc::clone(&seats));
        tasks.spawn(async move {
            let _seat = seats.acquire_owned().await;
            shuffle_shard(&store, &path, layer, j, parts, max_depth, suspects, COMBINE_ENTRIES).await
        });
    }
    let mut total = ShuffleCounts::default();
    while let Some(joined) = tasks.join_next().await {
        let counts = joined.map_err(|e| StageError::Internal(format!("shuffle task failed: {e}")))??;
        total.candidates += counts.candidates;
        total.dom_noise += counts.dom_noise;
    }
    Ok(total)
}

/// One target partition's candidates, merged from its shuffle files: one
/// per distinct target, in URL order. Building them runs off the async
/// threads.
pub(super) async fn read_partition(
    store: &crate::store::Store,
    layer: u32,
    k: u32,
) -> Result<Vec<Candidate>, StageError> {
    let merged = crate::shuffle::read_partition(store, layer, k).await?;
    off_async("building candidates", move || candidates(merged)).await
}

/// The merged targets as candidates, in URL order.
fn candidates(merged: HashMap<String, Merged>) -> Vec<Candidate> {
    let mut cands: Vec<Candidate> = merged
        .into_iter()
        .map(|(url, m)| Candidate {
            domain: urlnorm::registrable_domain(urlnorm::host_of(&url)),
            row: InRow {
                url,
                depth: m.depth,
                referrer: Some(m.referrer),
                priority: m.score.map(schema::priority_of),
                anchor: m.anchor,
                retries: 0,
            },
            followed: m.followed,
            dom: m.dom,
            content: m.content,
            via: m.via,
            sources: m.sources,
        })
        .collect();
    cands.sort_unstable_by(|a, b| a.row.url.cmp(&b.row.url));
    cands
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::denoise::NoiseLabel;
    use crate::store::dataset::LINKS;
    use crate::store::{layout, ShardWriter, Store};

    fn link(
        src: &str,
        dst: &str,
        depth: i32,
        noise: Option<NoiseLabel>,
        followed: bool,
    ) -> crate::store::schema::LinkRow {
        crate::store::schema::LinkRow { noise, followed, ..crate::store::schema::LinkRow::followed(src, dst, depth) }
    }

    type Summary = (String, i32, Option<String>, bool, bool, bool, Option<i32>, Option<String>);

    /// What a partition's candidates say, comparable across runs.
    fn summary(cands: &[Candidate]) -> Vec<Summary> {
        cands
            .iter()
            .map(|c| {
                let r = &c.row;
                (r.url.clone(), r.depth, r.referrer.clone(), c.followed, c.dom, c.content, r.priority, r.anchor.clone())
            })
            .collect()
    }

    #[tokio::test]
    async fn spilling_in_small_runs_merges_to_the_same_candidates() {
        // Links to 40 targets on 4 sites, each target linked from several
        // pages at two depths, some DOM-flagged, some not followable.
        let mut rows = Vec::new();
        for n in 0..400 {
            let dst = format!("http://s{}.test/p{}", n % 4, n % 40);
            let src = format!("http://s{}.test/from{}", n % 4, n % 7);
            let noise = match n % 5 {
                0 => Some(NoiseLabel::DomRatio),
                1 => Some(NoiseLabel::Scope),
                _ => None,
            };
            let mut l = link(&src, &dst, 1 + (n % 3 == 0) as i32, noise, n % 10 != 0);
            // Scored links (a run with a plan) on two thirds of the targets,
            // with ties between anchors: the best score's smallest anchor wins.
            if n % 40 % 3 != 2 {
                l.score = Some(f32::from(u8::try_from(n % 6).expect("small")) / 10.0);
                l.anchor = format!("anchor {}", n % 7);
            }
            rows.push(l);
        }
        let parts = 3;
        let mut results = Vec::new();
        for (combine, layer) in [(1_000_000, 0), (3, 1)] {
            let store = Store::open("memory://").expect("store");
            let path = layout::shard(LINKS.name, layer, 0);
            let mut w = ShardWriter::create(&store, &path, schema::links_schema(), 1 << 20).expect("writer");
            for chunk in rows.chunks(64) {
                w.write(&schema::links_batch(chunk).expect("batch")).await.expect("write");
            }
            w.finish().await.expect("finish");
            let suspects = Suspects { ratio: 0.25, followed: false };
            let counts = shuffle_shard(&store, &path, layer, 0, parts, 2, suspects, combine).await.expect("shuffle");
            let files = store.parquet_files(&layout::shuffle_dir(layer)).await.expect("list").len();
            let mut all = Vec::new();
            for k in 0..parts {
                all.push(summary(&read_partition(&store, layer, k).await.expect("read")));
            }
            results.push((counts.candidates, counts.dom_noise, files, all));
        }
        let (one, many) = (&results[0], &results[1]);
        assert!(many.2 > 10 * one.2, "small runs spill many files: {} vs {}", many.2, one.2);
        assert_eq!((one.0, one.1), (many.0, many.1));
        assert_eq!(one.3, many.3, "merging is the same whatever the spills");
        let targets: usize = one.3.iter().map(Vec::len).sum();
        assert_eq!(targets, 32, "targets with only `scope` links (p1, p6, ...) are not candidates");
        // p0 is linked by n = 0, 40, ..., 360, all DOM-flagged and not followed; depth 1 from
        // from0 (n = 280), from3, from4, from5, from6: the smallest referrer wins.
        let p0 = one.3.iter().flatten().find(|c| c.0 == "http://s0.test/p0").expect("p0");
        // Its links n = 0, 40, ..., 360 score n % 6 / 10: the best, 0.4, is
        // that of n = 40, 160 and 280, whose anchors are 5, 6 and 0: the
        // smallest, "anchor 0", is kept.
        let best = (400_000, "anchor 0".to_string());
        assert_eq!(
            p0,
            &(
                "http://s0.test/p0".into(),
                1,
                Some("http://s0.test/from0".into()),
                false,
                true,
                false,
                Some(best.0),
                Some(best.1)
            )
        );
        let unscored = one.3.iter().flatten().find(|c| c.0 == "http://s2.test/p2").expect("p2");
        assert_eq!((unscored.6, unscored.7.as_deref()), (None, None), "no score, no anchor");
    }
}

#[cfg(test)]
mod sources {
    use super::*;
    use crate::shuffle::{shard_bit, Suspects, ALL_SHARDS};
    use crate::store::dataset::LINKS;
    use crate::store::{layout, ShardWriter, Store};

    #[test]
    fn a_shard_is_the_bit_of_its_number() {
        assert_eq!(shard_bit("links/layer=2/part-00006.parquet"), 1 << 6);
        assert_eq!(shard_bit("state/attempts/x/links/layer=2/part-00000.parquet"), 1);
        assert_eq!(shard_bit("links/layer=2/data-00000.parquet"), 1);
        // More than 64 partitions: shards share bits, so a set of bits names
        // a few shards more, never fewer.
        assert_eq!(shard_bit("links/layer=0/part-00070.parquet"), 1 << 6);
        assert_eq!(shard_bit("links/layer=0/odd.parquet"), ALL_SHARDS);
    }

    /// A target's candidate knows which of the layer's links shards link
    /// to it, through the spills and their merges.
    #[tokio::test]
    async fn candidates_know_the_shards_that_link_them() {
        let store = Store::open("memory://").expect("store");
        let row = |src: &str, dst: &str| crate::store::schema::LinkRow::followed(src, dst, 1);
        let shards = [
            (1, vec![row("http://a.test/", "http://a.test/x"), row("http://a.test/", "http://c.test/shared")]),
            (3, vec![row("http://b.test/", "http://b.test/y"), row("http://b.test/", "http://c.test/shared")]),
        ];
        for (part, rows) in &shards {
            let path = layout::shard(LINKS.name, 0, *part);
            let mut w = ShardWriter::create(&store, &path, crate::store::schema::links_schema(), 1 << 20).expect("w");
            w.write(&crate::store::schema::links_batch(rows).expect("batch")).await.expect("write");
            w.finish().await.expect("finish");
            let suspects = Suspects { ratio: 0.25, followed: true };
            // Combining two targets at a time: merges of merges too.
            crate::shuffle::shuffle_shard(&store, &path, 0, *part as usize, 1, 2, suspects, 2).await.expect("shuffle");
        }
        let cands = read_partition(&store, 0, 0).await.expect("read");
        let sources: Vec<(&str, u64)> = cands.iter().map(|c| (c.row.url.as_str(), c.sources)).collect();
        assert_eq!(
            sources,
            [("http://a.test/x", 1 << 1), ("http://b.test/y", 1 << 3), ("http://c.test/shared", (1 << 1) | (1 << 3))]
        );
    }
}
