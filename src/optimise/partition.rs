//! One target partition's share of the optimise step (steps 2 and 3 of
//! [`super`]): its merged candidates labelled by the noise filter,
//! de-duplicated against the visited store and written as its share of the
//! next layer's input.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;

use crate::config::Denoise;
use crate::dedup::dedup_round;
use crate::dedup::visited::VisitedStore;
use crate::denoise::yields::{ClassCount, Verdict};
use crate::denoise::{Method, NoiseLabel};
use crate::error::StageError;
use crate::store::dataset::{IN, SKIPPED};
use crate::store::manifest::{NextManifest, SkipCounts};
use crate::store::schema::{self, InRow};
use crate::store::{layout, stream_batches, ShardWriter, Store, StoreError};
use crate::urlnorm;

use super::{budget, labels, off_async, shuffle, yields, Candidate, OptimiseCtx};

/// What one partition's share of the optimise step found.
pub(super) struct PartitionNext {
    pub(super) stats: NextManifest,
    /// Noise labels of this partition's targets, by URL fingerprint.
    pub(super) labels: HashMap<u64, NoiseLabel>,
    /// The links shards that link to them (`shuffle::shard_bit`).
    pub(super) label_sources: u64,
    pub(super) followed_targets: u64,
}

/// Steps 2 and 3 for target partition `k`: its merged candidates
/// labelled, de-duplicated and written as its share of `in/layer=L+1`.
pub(super) async fn optimise_partition(ctx: &OptimiseCtx, layer: u32, k: u32) -> Result<PartitionNext, StageError> {
    let (store, opt) = (&ctx.store, &*ctx.cfg);
    let mut m = NextManifest::default();
    // The filter's counts are read and judged while the candidates are
    // read and labelled: neither needs the other.
    let counting = (opt.denoise != Denoise::Off)
        .then(|| tokio::spawn(yields::count(store.clone(), ctx.previous.clone(), layer, k)));
    let mut cands = shuffle::read_partition(store, layer, k).await?;
    let followed_targets = cands.iter().filter(|c| c.followed).count() as u64;
    // Candidates the filter deferred here are decided with this layer's.
    let again = if opt.denoise == Denoise::Off {
        std::collections::HashSet::new()
    } else {
        yields::add_deferred(store, layer, k, &mut cands, layer >= ctx.depth).await?
    };
    // Traps first: they are never followed, whatever --denoise says.
    let mut labels = labels::find_traps(&cands, opt.max_query_variants);
    m.traps += labels.len() as u64;
    let mark = opt.denoise == Denoise::Mark;
    let mut skipped = SkipCounts::default();
    let mut verdicts: Vec<Option<Verdict>> = Vec::new();
    let mut classes: Vec<Option<u64>> = Vec::new();
    let mut deferred: Vec<usize> = Vec::new();
    let mut gates: Vec<(usize, crate::denoise::gate::Gate)> = Vec::new();
    let mut counts_written = None;
    if opt.denoise != Denoise::Off {
        let known: Vec<String> = opt.noise_patterns.clone();
        let method = opt.denoise.method();
        // By evidence, clustering only finds the user's known noise: without
        // any, it would compare every pair of URLs for nothing.
        if method == Method::Strict || !known.is_empty() {
            let cfg = opt.cluster.clone();
            let (back, (noise, clusters, comparisons)) = off_async("clustering", move || {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                let found = labels::cluster_partition(&cands, &known, &cfg, method);
                (cands, found)
            })
            .await?;
            cands = back;
            m.clusters += clusters;
            m.comparisons += comparisons;
            m.lcs_noise += noise.len() as u64;
            for fp in noise {
                labels.entry(fp).or_insert(NoiseLabel::LcsCluster);
            }
        }
        let counted = counting
            .ok_or_else(|| StageError::Internal("the filter's counts were not started".into()))?
            .await
            .map_err(|e| StageError::Internal(format!("counting the link classes failed: {e}")))??;
        counts_written = Some(counted.written);
        let evidence = counted.yields;
        let depth = i32::try_from(ctx.depth).unwrap_or(i32::MAX);
        let (back, decided) = off_async("deciding by yield", move || {
            let decided = yields::decide(&evidence, &cands, depth, &again);
            (cands, decided)
        })
        .await?;
        cands = back;
        verdicts = decided.verdicts;
        classes = decided.classes;
        // `mark` follows what the filter would not: nothing waits either.
        if !mark {
            deferred = decided.deferred;
            gates = decided.gates;
        }
        m.probes += decided.probes;
    }
    let mut skips: Vec<(&InRow, &ClassCount)> = Vec::new();
    let mut via: Vec<yields::Via> = Vec::new();
    let mut fresh: Vec<InRow> = Vec::new();
    let mut waiting = deferred.iter().peekable();
    let mut held: Vec<&Candidate> = Vec::new();
    let mut gated = gates.iter().peekable();
    let mut gate_rows = Vec::new();
    for (i, c) in cands.iter().enumerate().filter(|(_, c)| c.followed) {
        if waiting.next_if_eq(&&i).is_some() {
            held.push(c);
            continue;
        }
        let fp = urlnorm::fingerprint_str(&c.row.url);
        let label = labels.get(&fp).copied().or_else(|| match verdicts.get(i) {
            Some(Some(Verdict::Skip(_))) => Some(NoiseLabel::Barren),
            _ => None,
        });
        if let Some(label) = label {
            labels.entry(fp).or_insert(label);
            if !(mark && label.followed_when_marked()) {
                match (label, verdicts.get(i)) {
                    (NoiseLabel::Barren, Some(Some(Verdict::Skip(class)))) => {
                        if yields::skip_reason(class) == "errors" {
                            skipped.errors += 1;
                        } else {
                            skipped.copies += 1;
                        }
                        skips.push((&c.row, class));
                    }
                    (NoiseLabel::LcsCluster, _) => skipped.others += 1,
                    // Traps are never followed, filter or not.
                    _ => {}
                }
                continue;
            }
        }
        if let (false, Some(Some(class))) = (c.via.is_empty(), classes.get(i)) {
            via.push(yields::Via {
                fingerprint: fp,
                via: c.via.join("\n"),
                referrer: c.row.referrer.clone(),
                class: *class,
            });
        }
        while gated.next_if(|(at, _)| *at < i).is_some() {}
        if let Some((_, gate)) = gated.next_if(|(at, _)| *at == i) {
            gate_rows.push((fp, *gate));
        }
        fresh.push(c.row.clone());
    }
    m.barren += skipped.copies + skipped.errors;
    m.deferred += held.len() as u64;
    m.skipped = skipped;
    // The filter's files are written while the next layer's input is
    // made: neither reads the other.
    let filter_files = async {
        if opt.denoise != Denoise::Off {
            let skipped_path = layout::shard(SKIPPED.name, layer + 1, k);
            tokio::try_join!(
                yields::write_via(store, layer + 1, k, &via),
                yields::write_skipped(store, &skipped_path, &skips),
                yields::write_deferred(store, layer + 1, k, &held),
                yields::write_gates(store, layer + 1, k, &gate_rows),
            )?;
        }
        if let Some(written) = counts_written {
            written
                .await
                .map_err(|e| StageError::Internal(format!("writing the link classes' counts failed: {e}")))??;
        }
        Ok::<(), StageError>(())
    };
    let next_input = async {
        let (carried, held) = tokio::try_join!(read_carried(store, layer, k), yields::read_held_back(store, layer, k))?;
        // A URL the map task held back, followed again from a link of this
        // layer (by a class that yields, or as a probe), is fetched: it was
        // never fetched, though the visited store has it.
        let (held_back, fresh) = fresh.into_iter().partition(|r| held.contains(&urlnorm::fingerprint_str(&r.url)));
        // The ant-colony and learned orders learn from the layer's pages first.
        let ranking = crate::focus::Ranking::learn(store, layer, k, opt.order).await?;
        let probes = gate_rows.iter().filter(|(_, g)| g.probe).map(|(fp, _)| *fp).collect();
        let parts = InputParts { fresh, carried, held_back, probes };
        write_partition_input(ctx, layer + 1, k, parts, &ranking, &mut m).await
    };
    tokio::try_join!(filter_files, next_input)?;
    // The links shards the seal rewrites for these labels.
    let label_sources = if labels.is_empty() {
        0
    } else {
        cands
            .iter()
            .filter(|c| labels.contains_key(&urlnorm::fingerprint_str(&c.row.url)))
            .fold(0, |a, c| a | c.sources)
    };
    Ok(PartitionNext { stats: m, labels, label_sources, followed_targets })
}

/// The URLs partition `k` carried over unfetched from `layer`.
async fn read_carried(store: &Store, layer: u32, k: u32) -> Result<Vec<InRow>, StoreError> {
    let path = layout::carry(layer, k);
    let mut rows = Vec::new();
    if store.exists(&path).await? {
        let mut batches = stream_batches(store, &path, None).await?;
        while let Some(b) = batches.next().await {
            rows.extend(schema::input_rows(&b?, &path)?);
        }
    }
    Ok(rows)
}

/// The rows of a partition's input: the targets of the layer's links it
/// follows, and the URLs it takes without asking the visited store.
#[derive(Default)]
pub(super) struct InputParts {
    pub(super) fresh: Vec<InRow>,
    /// URLs carried over unfetched (in the visited store from their first
    /// layer)...
    pub(super) carried: Vec<InRow>,
    /// ...and URLs the map task held back in the layer (the noise filter's
    /// gates), followed now from another link.
    pub(super) held_back: Vec<InRow>,
    /// The noise filter's gated probes, by URL fingerprint: written first,
    /// since the rest of their groups wait for them (an input ranked best
    /// first has no gates: `map::gate`).
    pub(super) probes: HashSet<u64>,
}

/// De-duplicates and writes partition `k`'s share of layer `target`'s
/// input, in the run's order (with `--order ant` or `learned`, by what it
/// learned: `ranking`).
pub(super) async fn write_partition_input(
    ctx: &OptimiseCtx,
    target: u32,
    k: u32,
    parts: InputParts,
    ranking: &crate::focus::Ranking,
    m: &mut NextManifest,
) -> Result<Option<budget::Ranks>, StageError> {
    let InputParts { fresh: mut rows, carried, held_back, probes } = parts;
    let store = &ctx.store;
    let visited = VisitedStore::new(store.clone());
    m.carried += carried.len() as u64;
    // Smallest depth first, so the row kept for a repeated URL has it.
    rows.sort_by_key(|r| r.depth);
    let keyed: Vec<(u64, InRow)> = rows.into_iter().map(|r| (urlnorm::fingerprint_str(&r.url), r)).collect();
    let round = dedup_round(&ctx.caches[k as usize], &visited, k, target, keyed).await?;
    (m.visit_hits, m.cache_hits, m.store_hits) = (
        m.visit_hits + round.stats.visit_hits,
        m.cache_hits + round.stats.cache_hits,
        m.store_hits + round.stats.store_hits,
    );
    let mut out = round.admitted;
    // Carried URLs are in the visited store already (from their first layer).
    out.extend(carried);
    out.extend(held_back);
    // Best first (docs/src/focused-crawling.md): the scheduler fetches each
    // host's URLs in input order. Without a plan every priority is none
    // and the order is the URL's.
    let mut out = ranking.order(store, target, k, out).await?;
    // The scheduler fetches each host's URLs in input order. An input in
    // the URLs' order puts the probes first; one ranked best first (a crawl
    // plan, a learned order) stays so, its probes where their ranks are.
    let ranked = !matches!(ranking, crate::focus::Ranking::Plain(_))
        || ctx.budget.max_pages.is_some()
        || out.iter().any(|r| r.priority.is_some());
    if !probes.is_empty() && !ranked {
        out.sort_by_key(|r| !probes.contains(&urlnorm::fingerprint_str(&r.url)));
    }
    m.next += out.len() as u64;
    let path = layout::shard(IN.name, target, k);
    if out.is_empty() {
        store.delete(&path).await?;
        return Ok(None);
    }
    let mut w = ShardWriter::create(store, &path, schema::input_schema(), 32 << 20)?;
    for chunk in out.chunks(8192) {
        w.write(&schema::input_batch(chunk)?).await?;
    }
    w.finish().await?;
    // Beside the input, for the layer's page budget: how many of its URLs
    // have each rank (the seal reads every partition's).
    if ctx.budget.max_pages.is_none() || !ctx.cfg.order.ranks() {
        return Ok(None);
    }
    let order = ctx.cfg.order;
    let pheromone = match ranking {
        crate::focus::Ranking::Ant(p) => Some(p),
        _ => None,
    };
    let ranks = budget::Ranks::of(out.iter().map(|r| order.rank(r, pheromone)));
    ranks.write(store, &layout::ranks(target, k)).await?;
    Ok(Some(ranks))
}
