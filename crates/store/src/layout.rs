//! Every object path of the data layout, in one place (docs/src/output.md;
//! ARCHITECTURE.md, "Rules, and what holds each"). Hive-style `layer=L`
//! folders, so one glob reads a whole dataset; crawl state under `state/`.
//! Nothing else in the crate builds an object path by hand. The datasets'
//! names are [`super::dataset`]'s: a path here is a function of one.

use super::dataset::{ITEMS, SKIPPED, WARC};

/// `NAME/layer=L/part-PPPPP.parquet`: partition `P`'s shard of layer `L`
/// of the dataset `NAME` (a name from `store::dataset`, or an items
/// dataset of [`items_dataset`]).
#[must_use]
pub fn shard(dataset: &str, layer: u32, part: u32) -> String {
    format!("{dataset}/layer={layer}/part-{part:05}.parquet")
}
/// `items/rule=NAME/layer=L/part-PPPPP.parquet`: the items rule `NAME`
/// made from the pages of layer `L` (docs/src/rules.md).
#[must_use]
pub fn items(rule: &str, layer: u32, part: u32) -> String {
    shard(&items_dataset(rule), layer, part)
}
/// The dataset of one rule's items: `items/rule=NAME` (its layers below).
#[must_use]
pub fn items_dataset(rule: &str) -> String {
    format!("{}/rule={rule}", ITEMS.name)
}
/// `warc/layer=L/part-PPPPP.warc.gz`: one partition's exchanges of layer
/// `L` as WARC records.
#[must_use]
pub fn warc(layer: u32, part: u32) -> String {
    format!("{}/layer={layer}/part-{part:05}.warc.gz", WARC.name)
}
/// `warc/layer=L/part-PPPPP.cdxj`: the CDXJ index of [`warc`]'s file.
#[must_use]
pub fn warc_index(layer: u32, part: u32) -> String {
    format!("{}/layer={layer}/part-{part:05}.cdxj", WARC.name)
}
/// The run's id in its archives' record ids, made by the first map task
/// that writes one.
pub const WARC_RUN: &str = "state/warc.json";
/// URLs a partition could not fetch in its layer (time or host budget),
/// carried into the next layer.
#[must_use]
pub fn carry(layer: u32, part: u32) -> String {
    format!("state/carry/layer={layer}/part-{part:05}.parquet")
}
/// The commit marker of one map partition.
#[must_use]
pub fn map_manifest(layer: u32, part: u32) -> String {
    format!("state/manifest/layer={layer}/map-{part:05}.json")
}
/// The commit marker of a layer's complete `in` set (from the seeds
/// for layer 0, from the optimise step of the layer before otherwise).
#[must_use]
pub fn input_manifest(layer: u32) -> String {
    format!("state/manifest/layer={layer}/in.json")
}
/// The commit marker of the optimise step of target partition `part`
/// after `layer` (its share of `in/layer=L+1`).
#[must_use]
pub fn optimise_manifest(layer: u32, part: u32) -> String {
    format!("state/manifest/layer={layer}/optimise-{part:05}.json")
}
/// The rules the map tasks of `layer` run with (their hash), written by the
/// layer's first task: the others must use the same.
#[must_use]
pub fn layer_rules(layer: u32) -> String {
    format!("state/manifest/layer={layer}/rules.json")
}
/// When the map phase of `layer` must end (`--layer-timeout`), as the
/// driver set it for tasks run in other processes.
#[must_use]
pub fn layer_deadline(layer: u32) -> String {
    format!("state/manifest/layer={layer}/deadline.json")
}
/// The commit marker of a layer's shuffle redone from its links files.
#[must_use]
pub fn shuffle_manifest(layer: u32) -> String {
    format!("state/manifest/layer={layer}/shuffle.json")
}
/// Noise labels that the optimise step of target partition `part` gave
/// to link targets of `layer`, applied to the links when the layer is sealed.
#[must_use]
pub fn labels(layer: u32, part: u32) -> String {
    format!("{}/part-{part:05}.bin", labels_dir(layer))
}
/// The labels of every target partition after `layer`.
#[must_use]
pub fn labels_dir(layer: u32) -> String {
    format!("state/labels/layer={layer}")
}
/// Every attempt folder of every task (see `store::attempt`).
pub const ATTEMPTS: &str = "state/attempts";
/// The attempt folders of the tasks of one layer.
#[must_use]
pub fn layer_attempts(layer: u32) -> String {
    format!("{ATTEMPTS}/layer={layer}")
}
/// The attempt folders of one task: `phase` is `map` or `optimise`.
#[must_use]
pub fn task_attempts(layer: u32, phase: &str, part: u32) -> String {
    format!("{}/{phase}-{part:05}", layer_attempts(layer))
}
/// The merge's attempts: each names itself when it passes the merge's
/// claim ([`MERGE_FENCE`]); the merge writes in place, nothing here.
pub const MERGE_ATTEMPTS: &str = "state/attempts/merge";
/// The fencing claims of the tasks of one layer (see `store::fencing`).
#[must_use]
pub fn layer_fences(layer: u32) -> String {
    format!("state/fence/layer={layer}")
}
/// The fencing claim of one task: the newest lease generation that
/// fenced it, and the attempt that passed it to commit.
#[must_use]
pub fn task_fence(layer: u32, phase: &str, part: u32) -> String {
    format!("{}/{phase}-{part:05}.json", layer_fences(layer))
}
/// The fencing claim of the merge, one for every depth: a merge of an
/// older lease generation must not land after a newer run's (see
/// `store::fencing`).
pub const MERGE_FENCE: &str = "state/fence/merge.json";
/// The crawl's id for its sink (docs/src/kafka.md): random, made by the
/// first map task that publishes, the same for every resumed run.
pub const SINK_RUN: &str = "state/sink/run.json";
/// What the map task of partition `part` of `layer` published to the sink
/// (docs/src/kafka.md): staged with the task's outputs before its pages'
/// transaction commits, published with them.
#[must_use]
pub fn sink_record(layer: u32, part: u32) -> String {
    format!("state/sink/layer={layer}/map-{part:05}.json")
}
/// The driver's lease: one run per data location.
pub const LEASE: &str = "state/lease.json";
/// The commit marker of the final merge.
pub const MERGE_MANIFEST: &str = "state/manifest/merge.json";
/// The settings of the latest run, which its units of work read.
pub const SETTINGS: &str = "state/settings.json";
/// The run's fixed settings, checked on every re-run.
pub const RUN: &str = "state/run.json";
/// Sorted URL fingerprints of one partition added in one layer.
#[must_use]
pub fn visited(part: u32, layer: u32) -> String {
    format!("{}/layer={layer}.u64", visited_dir(part))
}
/// What one partition's pages of one layer turned out to be, for the
/// noise filter's evidence (status, text size, text fingerprints).
#[must_use]
pub fn samples(layer: u32, part: u32) -> String {
    format!("state/denoise/samples/layer={layer}/part-{part:05}.parquet")
}
/// On how many pages of each host of one partition each line of the main
/// text appeared in `layer` (`extract::boilerplate`).
#[must_use]
pub fn site_lines(layer: u32, part: u32) -> String {
    format!("state/extract/site-lines/layer={layer}/part-{part:05}.json")
}
/// What each link class's fetched pages brought, over layers up to
/// `layer`, in one partition (`denoise::yields`).
#[must_use]
pub fn yields(layer: u32, part: u32) -> String {
    format!("{YIELDS_DIR}/layer={layer}/part-{part:05}.parquet")
}
/// The folder of every layer's [`yields`] files.
pub const YIELDS_DIR: &str = "state/denoise/yields";
/// The link classes of the URLs one partition follows into `layer`.
#[must_use]
pub fn via(layer: u32, part: u32) -> String {
    format!("state/denoise/via/layer={layer}/part-{part:05}.parquet")
}
/// The URLs of one partition's input of `layer` decided in the layer by
/// their group's probes (the noise filter's gates).
#[must_use]
pub fn gates(layer: u32, part: u32) -> String {
    format!("state/denoise/gates/layer={layer}/part-{part:05}.parquet")
}
/// Candidates of one partition that wait to be decided with `layer`'s:
/// their link classes were never fetched, and their first probes were
/// (`denoise::yields`).
#[must_use]
pub fn deferred(layer: u32, part: u32) -> String {
    format!("state/denoise/deferred/layer={layer}/part-{part:05}.parquet")
}
/// What one partition's pages of `layer` deposited per URL cluster, for
/// the ant-colony order (`--order ant`; `focus::ant`).
#[must_use]
pub fn deposits(layer: u32, part: u32) -> String {
    format!("state/focus/deposits/layer={layer}/part-{part:05}.parquet")
}
/// One partition's pheromone per URL cluster after `layer` (`--order ant`;
/// `focus::ant`).
#[must_use]
pub fn pheromone(layer: u32, part: u32) -> String {
    format!("state/focus/pheromone/layer={layer}/part-{part:05}.parquet")
}
/// How many of one partition's input URLs for `layer` have each rank in
/// the run's order, for the layer's page budget (`--max-pages`;
/// `optimise::budget`), next to the input it counts.
#[must_use]
pub fn ranks(layer: u32, part: u32) -> String {
    format!("state/budget/layer={layer}/part-{part:05}.parquet")
}
/// Content hashes of one partition's pages of one layer (duplicate detection).
#[must_use]
pub fn content(part: u32, layer: u32) -> String {
    format!("state/content/part-{part:05}/layer={layer}.parquet")
}

/// The folder of one layer of a dataset.
#[must_use]
pub fn layer_dir(dataset: &str, layer: u32) -> String {
    format!("{dataset}/layer={layer}")
}
/// The one file a layer of a dataset is merged into after the last layer.
#[must_use]
pub fn merged(dataset: &str, layer: u32) -> String {
    format!("{dataset}/layer={layer}/data-00000.parquet")
}
/// The `skipped` rows of one partition's input of `layer` that its map
/// task did not fetch (the noise filter's gates); beside the optimise
/// step's shard of the same layer and partition.
#[must_use]
pub fn held_back(layer: u32, part: u32) -> String {
    format!("{}/layer={layer}/part-{part:05}-held.parquet", SKIPPED.name)
}
/// Whether `path` is a per-partition shard (`.../part-PPPPP.parquet`), not a merged file.
#[must_use]
pub fn is_shard(path: &str) -> bool {
    path.rsplit('/').next().is_some_and(|f| f.starts_with("part-") && f.ends_with(".parquet"))
}
/// Every spill file of the optimise step's shuffle, all layers.
pub const SHUFFLE: &str = "state/shuffle";
/// The shuffle's spill files of one layer.
#[must_use]
pub fn shuffle_dir(layer: u32) -> String {
    format!("{SHUFFLE}/layer={layer}")
}
/// The shuffle's spill files of one layer for target partition `to`.
#[must_use]
pub fn shuffle_partition(layer: u32, to: u32) -> String {
    format!("{}/part-{to:05}", shuffle_dir(layer))
}
/// One spill file: links of layer `layer` for target partition `to`,
/// from links shard number `from`, its `run`-th spill.
#[must_use]
pub fn shuffle_file(layer: u32, to: u32, from: usize, run: u32) -> String {
    format!("{}/from-{from:05}-{run:05}.parquet", shuffle_partition(layer, to))
}
/// Every visited-store run of one partition.
#[must_use]
pub fn visited_dir(part: u32) -> String {
    format!("state/visited/part-{part:05}")
}
