//! The report's figures, aggregated from the crawl's data location: each
//! layer's funnel from the manifests (summed by the run summary's own
//! [`LayerSummary`]), statuses, hosts, distributions, noise labels and
//! duplicates from the `doc` and `links` rows, entities when the crawl has
//! them, and the host graph. All of it is bounded in size whatever the
//! crawl's (docs/src/report.md).

use arrow_array::RecordBatch;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use super::entities::{self, EntityReport};
use super::graph::{self, Graph};
use super::history::Night;
use super::rows::{median, DocTally, Histogram, LayerLinks, LayerRows, LinkTally, DOC_COLUMNS, LINK_COLUMNS};
use super::{on_rayon, ReportError};
use crate::driver::LayerSummary;
use crate::store::dataset::{DOC, LINKS};
use crate::store::manifest::{MapManifest, MergeManifest, NextManifest, OptimiseManifest, RunState};
use crate::store::{layout, stream_batches, Store, StoreError};

/// Hosts listed in the hosts table at most (the rest are summed in one line).
const MAX_HOST_ROWS: usize = 500;
/// The most duplicated pages listed.
const MAX_DUPLICATED: usize = 20;
/// The skipped link classes listed at most.
const MAX_SKIPPED_CLASSES: usize = 20;

/// Everything the page shows.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReportData {
    /// When the report was made (UTC), and by which version.
    pub generated: String,
    pub version: String,
    pub data: String,
    pub partitions: u32,
    /// The run's `--depth` and `--denoise`, from its settings.
    pub depth: Option<u32>,
    pub denoise: String,
    /// Whether the final merge is done (the crawl finished).
    pub merged: bool,
    pub layers: Vec<LayerReport>,
    pub totals: Totals,
    pub hosts: HostTable,
    /// `fetch_ms` of the rows that made a request; `content_length` of
    /// the rows with a response.
    pub latency: Histogram,
    pub sizes: Histogram,
    /// The pages most often found copied (`duplicate_of`).
    pub duplicated: Vec<Duplicated>,
    /// The link classes the noise filter skipped the most URLs of (the
    /// `skipped` dataset, grouped).
    pub skipped_classes: Vec<crate::optimise::SkippedClass>,
    pub link_graph: Graph,
    /// `None` for a crawl run without `--entities`.
    pub entities: Option<EntityReport>,
    pub history: Vec<Night>,
}

/// One layer.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LayerReport {
    pub layer: u32,
    /// Map tasks committed, of the run's partitions.
    pub partitions_done: u32,
    /// Whether the next layer's input is committed (the optimise step is done).
    pub sealed: bool,
    /// The run summary's figures of the layer, from its manifests.
    pub summary: LayerSummary,
    pub funnel: Vec<Step>,
    /// What its `doc` and `links` rows say.
    pub rows: LayerRows,
    pub links: LayerLinks,
}

/// One step of a layer's funnel.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Step {
    pub name: &'static str,
    pub count: u64,
    /// What is counted: `urls`, `rows` or `links`.
    pub unit: &'static str,
}

/// The crawl's totals, from its rows.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Totals {
    pub pages: u64,
    pub ok: u64,
    pub errors: u64,
    pub robots: u64,
    pub bytes: u64,
    pub link_rows: u64,
    pub hosts: u64,
    pub duplicates: u64,
}

/// The hosts table.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostTable {
    /// The hosts with the most pages.
    pub rows: Vec<HostRow>,
    /// The others, summed (`host` says how many).
    pub rest: Option<HostRow>,
}

/// One host's row.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct HostRow {
    pub host: String,
    pub pages: u64,
    pub ok: u64,
    pub errors: u64,
    pub robots: u64,
    /// Median `fetch_ms` of its rows that made a request.
    pub median_ms: u32,
    pub bytes: u64,
}

/// A page whose content other pages repeat.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Duplicated {
    pub url: String,
    pub copies: u64,
}

/// The run's settings the report shows; anything else in the file is not
/// read (so a report reads crawls of other versions too).
#[derive(Deserialize, Default)]
struct Settings {
    #[serde(default)]
    depth: Option<u32>,
    #[serde(default)]
    optimise: OptimiseSettings,
}

#[derive(Deserialize, Default)]
struct OptimiseSettings {
    #[serde(default)]
    denoise: Option<crate::config::Denoise>,
}

/// Reads and aggregates the crawl in `store`.
///
/// # Errors
/// When a manifest or a Parquet file cannot be read or decoded.
pub async fn gather(store: &Store, progress: &(dyn Fn(&str) + Sync)) -> Result<ReportData, ReportError> {
    let run: RunState = store
        .get_json(layout::RUN)
        .await?
        .ok_or_else(|| ReportError::NoCrawl { data: store.location().to_string() })?;
    let settings: Settings = store.get_json(layout::SETTINGS).await?.unwrap_or_default();
    let merged = store.get_json::<MergeManifest>(layout::MERGE_MANIFEST).await?.is_some();
    let mut layers = Vec::new();
    for layer in 0.. {
        if !store.exists(&layout::input_manifest(layer)).await? {
            break;
        }
        match layer_report(store, layer, run.partitions).await? {
            Some(l) => layers.push(l),
            None => break,
        }
    }
    progress(&format!("{} layers in {}; reading doc and links", layers.len(), store.location()));
    let mut doc_files = Vec::new();
    let mut link_files = Vec::new();
    for l in &layers {
        for p in store.parquet_files(&layout::layer_dir(DOC.name, l.layer)).await? {
            doc_files.push((l.layer, p));
        }
        for p in store.parquet_files(&layout::layer_dir(LINKS.name, l.layer)).await? {
            link_files.push((l.layer, p));
        }
    }
    let docs: DocTally = read_tally(store, doc_files).await?;
    let links: LinkTally = read_tally(store, link_files).await?;
    let entities = entities::gather(store).await?;
    let skipped_classes = crate::optimise::skipped_classes(store, MAX_SKIPPED_CLASSES).await?;
    if entities.is_some() {
        progress("entities read");
    }
    for l in &mut layers {
        l.rows = docs.layers.get(&l.layer).cloned().unwrap_or_default();
        l.links = links.layers.get(&l.layer).cloned().unwrap_or_default();
    }
    let (hosts, latency, sizes, duplicated, link_graph, totals) = on_rayon(move || summarise(docs, &links)).await?;
    Ok(ReportData {
        generated: jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC").to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        data: store.location().to_string(),
        partitions: run.partitions,
        depth: settings.depth,
        denoise: settings.optimise.denoise.map_or_else(String::new, |d| format!("{d:?}").to_lowercase()),
        merged,
        layers,
        totals,
        hosts,
        latency,
        sizes,
        duplicated,
        skipped_classes,
        link_graph,
        entities,
        history: Vec::new(),
    })
}

/// Layer `layer`'s manifests: its map tasks' summed as the run summary sums
/// them, the next layer's input manifest, and its funnel; `None` when no
/// map task of the layer has committed yet.
async fn layer_report(store: &Store, layer: u32, partitions: u32) -> Result<Option<LayerReport>, ReportError> {
    let mut summary = LayerSummary { layer, ..LayerSummary::default() };
    let mut done = 0;
    for part in 0..partitions {
        if let Some(m) = store.get_json::<MapManifest>(&layout::map_manifest(layer, part)).await? {
            summary.add(&m);
            done += 1;
        }
    }
    if done == 0 {
        return Ok(None);
    }
    let next = store.get_json::<NextManifest>(&layout::input_manifest(layer + 1)).await?;
    // Distinct followable targets, from the optimise tasks (all of them, or none known).
    let mut targets = Some(0u64);
    if next.is_some() {
        for part in 0..partitions {
            let m = store.get_json::<OptimiseManifest>(&layout::optimise_manifest(layer, part)).await?;
            targets = targets.zip(m).map(|(t, m)| t + m.followed_targets);
        }
    }
    if let Some(n) = &next {
        summary.set_next(n);
    }
    let funnel = funnel(&summary, next.as_ref(), targets);
    Ok(Some(LayerReport {
        layer,
        partitions_done: done,
        sealed: next.is_some(),
        summary,
        funnel,
        rows: LayerRows::default(),
        links: LayerLinks::default(),
    }))
}

/// A layer's funnel: its input, what was fetched and ok, the links found,
/// and, once the optimise step made the next layer's input, the targets
/// left after each of its filters (docs/src/noise-filter.md and docs/src/dedup.md).
///
/// The optimise step counts repeats in one sum: a followable link to a
/// target after its first (the distinct targets are what its tasks
/// followed), and targets that dedup found in its visit list, cache list
/// or visited store. What dedup was given (the targets left after the
/// labels: LCS clusters, traps, skipped link classes, less the targets
/// deferred a layer) is what it admitted plus what it found repeated.
fn funnel(s: &LayerSummary, next: Option<&NextManifest>, targets: Option<u64>) -> Vec<Step> {
    let step = |name, count, unit| Step { name, count, unit };
    let mut steps = vec![
        step("input URLs", s.input, "urls"),
        step("fetched", s.fetched, "rows"),
        step("ok", s.ok, "rows"),
        step("links found", s.links, "links"), // not a dataset: a unit
    ];
    let Some(n) = next else { return steps };
    steps.push(step("followable after the DOM prefilter", s.candidates, "links")); // not a dataset: a unit
    if let Some(targets) = targets {
        let repeats = s.visit_hits + s.cache_hits + s.store_hits;
        let dedup_hits = repeats.saturating_sub(s.candidates.saturating_sub(targets));
        steps.push(step("distinct targets", targets, "urls"));
        // Targets of cold link classes wait one layer past their first
        // probes: followed, but not given to dedup yet.
        steps.push(step("after LCS clustering", s.new_urls + dedup_hits + s.deferred, "urls"));
    }
    steps.push(step("after dedup", s.new_urls, "urls"));
    steps.push(step("next layer's input", n.next, "urls"));
    steps
}

/// What one dataset's files are read into: a tally of its rows, built per
/// file on the rayon pool and merged.
trait Tally: Default + Send + 'static {
    /// The columns the tally reads.
    const COLUMNS: &'static [&'static str];
    fn add(&mut self, layer: u32, b: &RecordBatch, path: &str) -> Result<(), StoreError>;
    fn merge(&mut self, other: Self);
}

impl Tally for DocTally {
    const COLUMNS: &'static [&'static str] = DOC_COLUMNS;
    fn add(&mut self, layer: u32, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        DocTally::add(self, layer, b, path)
    }
    fn merge(&mut self, other: Self) {
        DocTally::merge(self, other);
    }
}

impl Tally for LinkTally {
    const COLUMNS: &'static [&'static str] = LINK_COLUMNS;
    fn add(&mut self, layer: u32, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        LinkTally::add(self, layer, b, path)
    }
    fn merge(&mut self, other: Self) {
        LinkTally::merge(self, other);
    }
}

/// Reads `files` (each with its layer) into one tally, as many files at
/// once as there are cores.
async fn read_tally<T: Tally>(store: &Store, files: Vec<(u32, String)>) -> Result<T, ReportError> {
    let tallies: Vec<T> = futures::stream::iter(files)
        .map(|(layer, path)| async move {
            let mut t = T::default();
            let mut batches = stream_batches(store, &path, Some(T::COLUMNS)).await?;
            while let Some(b) = batches.next().await {
                let (b, p) = (b?, path.clone());
                t = on_rayon(move || t.add(layer, &b, &p).map(|()| t)).await??;
            }
            Ok::<_, ReportError>(t)
        })
        .buffer_unordered(crate::error::cores())
        .try_collect()
        .await?;
    on_rayon(move || {
        tallies.into_iter().fold(T::default(), |mut all, t| {
            all.merge(t);
            all
        })
    })
    .await
}

type Summaries = (HostTable, Histogram, Histogram, Vec<Duplicated>, Graph, Totals);

/// The hosts table, the distributions, the most copied pages, the host
/// graph and the totals, from the rows' tallies.
fn summarise(mut docs: DocTally, links: &LinkTally) -> Summaries {
    let link_graph = graph::host_graph(&docs, links);
    let mut totals = Totals {
        link_rows: links.layers.values().map(|l| l.rows).sum(),
        hosts: docs.hosts.len() as u64,
        ..Totals::default()
    };
    for l in docs.layers.values() {
        totals.pages += l.rows;
        totals.duplicates += l.duplicates;
    }
    let mut all_ms = Vec::new();
    let mut rows: Vec<HostRow> = docs
        .hosts
        .iter_mut()
        .map(|(host, t)| {
            all_ms.extend_from_slice(&t.ms);
            totals.ok += t.ok;
            totals.errors += t.errors;
            totals.robots += t.robots;
            totals.bytes += t.bytes;
            HostRow {
                host: host.clone(),
                pages: t.pages,
                ok: t.ok,
                errors: t.errors,
                robots: t.robots,
                median_ms: median(&mut t.ms),
                bytes: t.bytes,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.pages.cmp(&a.pages).then_with(|| a.host.cmp(&b.host)));
    let rest = (rows.len() > MAX_HOST_ROWS).then(|| {
        let others = rows.split_off(MAX_HOST_ROWS);
        HostRow {
            host: format!("{} other hosts", others.len()),
            pages: others.iter().map(|r| r.pages).sum(),
            ok: others.iter().map(|r| r.ok).sum(),
            errors: others.iter().map(|r| r.errors).sum(),
            robots: others.iter().map(|r| r.robots).sum(),
            median_ms: 0,
            bytes: others.iter().map(|r| r.bytes).sum(),
        }
    });
    let mut duplicated: Vec<Duplicated> =
        docs.dup_targets.into_iter().map(|(url, copies)| Duplicated { url, copies }).collect();
    duplicated.sort_by(|a, b| b.copies.cmp(&a.copies).then_with(|| a.url.cmp(&b.url)));
    duplicated.truncate(MAX_DUPLICATED);
    let latency = Histogram::of(all_ms);
    let sizes = Histogram::of(docs.sizes);
    (HostTable { rows, rest }, latency, sizes, duplicated, link_graph, totals)
}
