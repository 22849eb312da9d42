//! Commit markers: a task's outputs count only once its manifest exists.
//!
//! The protocol needs no lock service: every output file is written
//! atomically into the attempt's own folder first, the manifest last,
//! create-if-absent, and then the outputs are moved into place
//! ([`super::attempt`]). A re-run treats a task with a manifest as done and
//! redoes any other one from scratch in a new attempt, so a killed run
//! resumes with nothing lost or doubled.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::dataset::{Count, Dataset};

/// What one map partition of one layer did; written after its outputs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MapManifest {
    pub layer: u32,
    pub partition: u32,
    /// The attempt that committed it ([`super::attempt`]).
    #[serde(default)]
    pub attempt: String,
    /// URLs in this partition's input.
    pub input: u64,
    /// Rows written to `doc` (fetched or failed).
    pub fetched: u64,
    /// Rows with a 2xx status and no error.
    pub ok: u64,
    /// Rows by error kind, and by HTTP status class for responses >= 400.
    pub errors: BTreeMap<String, u64>,
    /// URLs that straggled when the rest of the layer was done (carried,
    /// with `carried`), of which requests still in flight, handed to the
    /// next layer; and requests handed over by the layer before, adopted.
    #[serde(default)]
    pub stragglers: u64,
    #[serde(default)]
    pub stragglers_in_flight: u64,
    #[serde(default)]
    pub adopted: u64,
    /// URLs of the input the noise filter did not fetch, decided in the
    /// layer by their group's probes (copies, errors).
    #[serde(default)]
    pub skipped: SkipCounts,
    /// How the rest of those groups' URLs that were fetched came to be.
    #[serde(default, skip_serializing_if = "GateCounts::is_empty")]
    pub gates: GateCounts,
    /// Rows of URLs robots.txt disallows: no request was sent, and it is
    /// not an error (manifests written before this field count them in
    /// `errors` as `robots`; the summary moves them here).
    #[serde(default)]
    pub robots: u64,
    /// Body bytes received.
    pub bytes: u64,
    /// Pages the server said were not modified since last night's crawl
    /// (`--previous`), carried forward; the body bytes they did not send
    /// (last night's sizes), and the fetch time they saved (last night's
    /// time less tonight's 304), milliseconds.
    #[serde(default)]
    pub unchanged: u64,
    #[serde(default)]
    pub bytes_saved: u64,
    #[serde(default)]
    pub ms_saved: u64,
    /// The rules the task ran with (`--rules`): file name and a hash of the
    /// text; every partition of a layer must have run with the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules_used: Option<String>,
    /// Per rule (`--rules`), what it matched and made.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rules: BTreeMap<String, RuleCounts>,
    /// Rows written to each row extractor's dataset (`entities`, `relations`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extracted: BTreeMap<String, u64>,
    /// Rows written to `links`.
    pub links: u64,
    /// URLs carried to the next layer: stragglers, and URLs a limit the
    /// user set left unrequested (`not_requested`).
    pub carried: u64,
    /// Of `carried`, the URLs a limit left unrequested, by limit:
    /// `layer-timeout`, `max-pages`, `max-pages-per-host` (and `unreadable`,
    /// when the task's temporary file failed).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_requested: BTreeMap<String, u64>,
    /// Requests for robots.txt.
    pub robots_requests: u64,
    /// Requests repeated after a transient failure.
    #[serde(default)]
    pub retries: u64,
    /// Hosts found down (failing for `--host-down-after`): their queued
    /// URLs ended as `host_down` rows.
    #[serde(default, alias = "hosts_given_up")]
    pub hosts_down: u64,
    /// Circuit breakers opened by a burst of failures (and reopened by a
    /// failed probe); hosts paused by a `Retry-After`.
    #[serde(default)]
    pub breaker_opens: u64,
    #[serde(default)]
    pub host_pauses: u64,
    /// Adaptive politeness: 429s, 503s and timeouts that backed a host off;
    /// hosts paced above their floor; the longest delay set, ms.
    #[serde(default)]
    pub backoffs: u64,
    #[serde(default)]
    pub hosts_slowed: u64,
    #[serde(default)]
    pub max_delay_ms: u64,
    /// The pace of the task's hosts that were slowed, refused or paused
    /// (at most [`HOST_PACES`], the slowest first), and its latest host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_paces: Vec<HostPace>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_host: Option<LateHost>,
    /// Sitemaps (`--sitemaps`, layer 0): files read, URLs they listed,
    /// files with a problem.
    /// DNS for the partition's hosts: queries sent, answers from the
    /// cache, failed lookups.
    #[serde(default)]
    pub dns_queries: u64,
    #[serde(default)]
    pub dns_cached: u64,
    #[serde(default)]
    pub dns_failures: u64,
    /// Pages rendered in headless Chromium (`--render`).
    #[serde(default)]
    pub rendered: u64,
    /// With a crawl plan: pages given a relevance, and those at or above
    /// the plan's threshold.
    #[serde(default)]
    pub scored: u64,
    /// URLs of the input past the partition's share of the page budget
    /// (`--max-pages`), carried over unfetched (counted in `carried` too).
    #[serde(default)]
    pub budget_cut: u64,
    #[serde(default)]
    pub relevant: u64,
    /// Requests through each proxy for this partition's hosts
    /// (docs/src/proxies.md); empty without proxies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proxies: Vec<ProxyUse>,
    #[serde(default)]
    pub sitemap_files: u64,
    #[serde(default)]
    pub sitemap_urls: u64,
    #[serde(default)]
    pub sitemap_problems: u64,
    /// Wall time of the partition, milliseconds.
    pub elapsed_ms: u64,
    /// Followable links to targets within `--depth`, as shuffled to their
    /// target partitions for the optimise step (before dedup).
    #[serde(default)]
    pub candidates: u64,
    /// Links the link-text-ratio prefilter flagged.
    #[serde(default)]
    pub dom_noise: u64,
    /// Whether the task shuffled its links for the optimise step (every
    /// layer but the last; a crawl deepened later shuffles them then).
    #[serde(default)]
    pub shuffled: bool,
}

/// The shuffle of a layer redone from its links files, when some of its
/// map tasks did not shuffle (they ran as the last layer of a crawl that
/// was deepened later); its counts replace theirs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ShuffleManifest {
    pub layer: u32,
    pub candidates: u64,
    pub dom_noise: u64,
}

impl super::attempt::Committed for MapManifest {
    fn attempt(&self) -> &str {
        &self.attempt
    }
}

/// What the optimise step of one target partition produced: its share of
/// the next layer's input.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct OptimiseManifest {
    /// The layer whose links were optimised (its share is of `layer + 1`).
    pub layer: u32,
    pub partition: u32,
    #[serde(default)]
    pub attempt: String,
    /// Its counts (summed over partitions into the layer's [`NextManifest`]).
    pub stats: NextManifest,
    /// Distinct targets some link follows.
    pub followed_targets: u64,
    /// Targets given a noise label (`state/labels`).
    pub labels: u64,
    /// The links shards that link to them, as bits (`shuffle::shard_bit`):
    /// the seal rewrites those only. A manifest of an older version says
    /// nothing, which is every shard.
    #[serde(default = "every_shard")]
    pub label_sources: u64,
    /// Wall time, milliseconds.
    pub elapsed_ms: u64,
}

fn every_shard() -> u64 {
    u64::MAX
}

impl super::attempt::Committed for OptimiseManifest {
    fn attempt(&self) -> &str {
        &self.attempt
    }
}

/// What the optimise step of one layer produced: the next layer's input.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct NextManifest {
    pub layer: u32,
    /// Link targets considered (followable links, before dedup).
    pub candidates: u64,
    /// Dropped because already visited (or repeated within the layer).
    pub seen: u64,
    /// URLs written to the next layer's `in` (new plus carried).
    pub next: u64,
    /// Of `next`, URLs carried over unfetched from this layer.
    pub carried: u64,
    /// Links the link-text-ratio prefilter flagged.
    #[serde(default)]
    pub dom_noise: u64,
    /// Distinct followable targets that single-pass LCS clustering judged noise.
    #[serde(default)]
    pub lcs_noise: u64,
    /// Distinct targets judged traps (ever-deeper paths, query explosions).
    #[serde(default)]
    pub traps: u64,
    /// Distinct targets followed as probes of a link class that yields
    /// little (`denoise::yields`), and distinct targets not followed
    /// because their classes yield little.
    #[serde(default)]
    pub probes: u64,
    #[serde(default)]
    pub barren: u64,
    /// Distinct targets of link classes never fetched, past their first
    /// probes: decided again with the next layer's candidates.
    #[serde(default)]
    pub deferred: u64,
    /// Distinct targets the noise filter did not follow, by what they were
    /// expected to be.
    #[serde(default)]
    pub skipped: SkipCounts,
    /// Clusters made, and URL comparisons done, over all domain blocks.
    #[serde(default)]
    pub clusters: u64,
    #[serde(default)]
    pub comparisons: u64,
    /// Repeats dropped by the visit list (within the round), by the cache
    /// list (hot URLs of earlier rounds) and by the visited store.
    #[serde(default)]
    pub visit_hits: u64,
    #[serde(default)]
    pub cache_hits: u64,
    #[serde(default)]
    pub store_hits: u64,
    /// The layer's page budget (`--max-pages`) given to the best URLs of
    /// the whole layer; none when every URL fits, without a budget, or in
    /// an order that does not rank URLs (`bfs`: shared in proportion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<LayerBudget>,
}

/// Distinct link targets the noise filter did not follow, by what they
/// were expected to be: copies (their link class's fetched pages were
/// mostly copies of other pages), errors (mostly client errors or
/// redirects off the site), others (LCS clustering's verdict).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkipCounts {
    pub copies: u64,
    pub errors: u64,
    pub others: u64,
}

impl SkipCounts {
    pub fn add(&mut self, o: &Self) {
        self.copies += o.copies;
        self.errors += o.errors;
        self.others += o.others;
    }

    #[must_use]
    pub fn total(&self) -> u64 {
        self.copies + self.errors + self.others
    }
}

/// The URLs a layer's gates let through (the rest of a cold group, past its
/// probes), by why: the probes' pages brought new texts; they were copies
/// and this is one of the few fetched still (sampled); too few probes were
/// judged (they failed, answered with server errors, or no request was
/// made); probes were still out after the longest hold (released). Those
/// not fetched are counted in `skipped`.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct GateCounts {
    pub new_texts: u64,
    pub sampled: u64,
    pub unjudged: u64,
    pub released: u64,
}

impl GateCounts {
    pub fn add(&mut self, o: &Self) {
        self.new_texts += o.new_texts;
        self.sampled += o.sampled;
        self.unjudged += o.unjudged;
        self.released += o.released;
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A page budget over a whole layer (docs/src/focused-crawling.md, "A page
/// budget"): the cutoff rank that admits `max_pages` URLs, and what each
/// partition fetches.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LayerBudget {
    /// The budget it was made for (`--max-pages`).
    pub max_pages: u64,
    /// The rank of the last URLs admitted, in millionths of a priority;
    /// none when the cut fell among URLs without one. Every URL ranked
    /// above it is fetched, none ranked below.
    pub cutoff: Option<i32>,
    /// URLs ranked at the cutoff, over the layer, and how many of them are
    /// admitted (split among the partitions in proportion to theirs).
    pub at_cutoff: u64,
    pub admitted_at_cutoff: u64,
    /// Per partition: URLs fetched, from the first of its input (which is
    /// written best first).
    pub quotas: Vec<u64>,
}

impl NextManifest {
    /// Adds the counts of one partition's share of the step.
    pub fn add_partition(&mut self, p: &Self) {
        self.candidates += p.candidates;
        self.next += p.next;
        self.carried += p.carried;
        self.dom_noise += p.dom_noise;
        self.lcs_noise += p.lcs_noise;
        self.traps += p.traps;
        self.probes += p.probes;
        self.deferred += p.deferred;
        self.barren += p.barren;
        self.skipped.add(&p.skipped);
        self.clusters += p.clusters;
        self.comparisons += p.comparisons;
        self.visit_hits += p.visit_hits;
        self.cache_hits += p.cache_hits;
        self.store_hits += p.store_hits;
    }
}

/// The final merge: each layer's shards concatenated into one file.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct MergeManifest {
    pub layers: u32,
    /// Merged files, by dataset name.
    pub files: BTreeMap<String, Vec<String>>,
    pub doc_rows: u64,
    pub link_rows: u64,
    /// Rows of each rule's items dataset (`items/rule=NAME`), and of the
    /// other datasets counted by name here (`store::dataset::Count::Items`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub item_rows: BTreeMap<String, u64>,
    /// Rows of the `sitemaps` dataset (`--sitemaps`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sitemap_rows: u64,
    /// Rows of each row extractor's dataset (`entities`, `relations`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extracted_rows: BTreeMap<String, u64>,
}

impl MergeManifest {
    /// Counts `rows` merged rows of `dataset` (named `name`: a rule's items
    /// are `items/rule=NAME`) where its row of `store::dataset` says.
    pub fn count(&mut self, dataset: &Dataset, name: &str, rows: u64) {
        match dataset.count {
            Count::No => {}
            Count::Doc => self.doc_rows += rows,
            Count::Links => self.link_rows += rows,
            Count::Sitemaps => self.sitemap_rows += rows,
            Count::Extracted => *self.extracted_rows.entry(name.to_string()).or_default() += rows,
            Count::Items => *self.item_rows.entry(name.to_string()).or_default() += rows,
        }
    }
}

/// Settings fixed for the life of a data location (`state/run.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct RunState {
    pub format: u32,
    pub partitions: u32,
    pub scope: crate::scope::Scope,
    pub seeds: Vec<String>,
    /// The query parameters normalisation strips: fingerprints depend on it.
    #[serde(default)]
    pub strip_params: Option<Vec<String>>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What one rule did in one map task (and, summed, in a layer or a run):
/// the summary's per-rule line.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RuleCounts {
    /// Pages the rule matched.
    pub pages: u64,
    pub items: u64,
    /// Items with at least one reason in `_errors`.
    pub items_with_errors: u64,
    /// Per field, the items where it has a value.
    #[serde(default)]
    pub filled: BTreeMap<String, u64>,
    /// Links of matched pages the rule did not follow.
    #[serde(default)]
    pub links_dropped: u64,
}

impl RuleCounts {
    /// Adds `other`'s counts.
    pub fn merge(&mut self, other: &Self) {
        self.pages += other.pages;
        self.items += other.items;
        self.items_with_errors += other.items_with_errors;
        self.links_dropped += other.links_dropped;
        for (k, v) in &other.filled {
            *self.filled.entry(k.clone()).or_default() += v;
        }
    }
}

/// What went through one proxy (a partition's share, in its manifest).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ProxyUse {
    /// The proxy's URL without credentials.
    pub proxy: String,
    /// Requests sent through it, failed ones included.
    pub requests: u64,
    /// Requests it failed (refused, 407, 502, 504).
    pub failures: u64,
    /// Times it was taken out of service, and put back.
    pub evictions: u64,
    pub recoveries: u64,
    /// Sum of its answered requests' response times, ms.
    pub ms: u64,
}

impl ProxyUse {
    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Self) {
        self.requests += other.requests;
        self.failures += other.failures;
        self.evictions += other.evictions;
        self.recoveries += other.recoveries;
        self.ms += other.ms;
    }
}

/// Hosts a map task's manifest tells the pace of, at most.
pub const HOST_PACES: usize = 100;

/// One host's pace in one map task: the summary's per-host lines
/// (docs/src/politeness.md, "Politeness").
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostPace {
    /// The host's origin (`https://example.org`).
    pub host: String,
    /// The delay between two of its request starts when the task ended, ms,
    /// and what set it: `delay` (`--delay`), `crawl-delay` (robots.txt),
    /// `response-times` (`--delay-factor`), `refusals` (the rate its 429s,
    /// 503s without `Retry-After` and timeouts allow) or `max-delay`.
    pub delay_ms: u64,
    pub why: String,
    /// Page requests answered (a timeout counts as an answer).
    pub answers: u64,
    /// Answers `429 Too Many Requests`, and answers with a `Retry-After`.
    pub too_many: u64,
    pub retry_after: u64,
    /// Times a refusal cut its rate.
    pub cuts: u64,
    /// Its response times summed, ms (their mean is this over `answers`).
    pub response_ms: u64,
}

impl HostPace {
    /// Adds a later task's figures of the same host: its counts, and the
    /// pace it ended at there.
    pub fn then(&mut self, later: &Self) {
        self.delay_ms = later.delay_ms;
        self.why.clone_from(&later.why);
        self.answers += later.answers;
        self.too_many += later.too_many;
        self.retry_after += later.retry_after;
        self.cuts += later.cuts;
        self.response_ms += later.response_ms;
    }
}

/// The host of a map task whose last answer came last, and when the
/// task's other hosts had their last answer (ms since the Unix epoch): over
/// a layer's tasks, how long one host held the layer alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LateHost {
    pub host: String,
    pub last_ms: u64,
    /// 0 when the task had no other host with an answer.
    pub others_ms: u64,
}
