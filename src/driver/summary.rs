//! The end-of-run summary: a table for people, JSON for scripts.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::fetch::governor::GovernorFigures;
use crate::fetch::ErrorKind;
use crate::rules::items::RuleCounts;
use crate::store::manifest::{GateCounts, HostPace, LateHost, MapManifest, MergeManifest, NextManifest, SkipCounts};

use super::hosts::{self, HostSummary, SlowestHost};

mod complete;

/// One layer's figures, summed over its partitions.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LayerSummary {
    pub layer: u32,
    /// URLs in the layer's input.
    pub input: u64,
    /// Rows written to `doc`.
    pub fetched: u64,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    /// URLs robots.txt disallows: rows without a request, not errors.
    pub robots: u64,
    /// URLs this layer added to the next layer's input (0 for the last layer).
    pub new_urls: u64,
    /// URLs carried to the next layer unfetched.
    pub carried: u64,
    /// Of `carried`, stragglers: requests still in flight when the rest of
    /// the layer was done (handed over to the next layer), with the URLs
    /// still queued then; and requests handed over by the layer before,
    /// adopted here.
    pub stragglers: u64,
    pub stragglers_in_flight: u64,
    pub adopted: u64,
    pub bytes: u64,
    /// Pages the server said were unchanged since `--previous` (304),
    /// carried forward; body bytes and fetch time that saved.
    pub unchanged: u64,
    pub bytes_saved: u64,
    pub seconds_saved: f64,
    pub links: u64,
    pub robots_requests: u64,
    /// Requests repeated after a transient failure.
    pub retries: u64,
    /// Hosts found down (failing for `--host-down-after`; their queued URLs
    /// ended as `host_down` rows), circuit breakers opened by a burst of
    /// failures, and hosts paused by a `Retry-After`.
    pub hosts_down: u64,
    pub breaker_opens: u64,
    pub host_pauses: u64,
    /// Of `carried`, URLs a limit the user set left unrequested, by limit.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub not_requested: BTreeMap<String, u64>,
    /// DNS for the layer's hosts: queries sent, answers from the cache,
    /// failed lookups.
    pub dns_queries: u64,
    pub dns_cached: u64,
    pub dns_failures: u64,
    /// Pages rendered in headless Chromium (`--render`).
    pub rendered: u64,
    /// With a crawl plan (`--plan`): pages given a relevance, those at or
    /// above the plan's threshold, and the harvest rate (relevant pages
    /// per page fetched).
    pub scored: u64,
    pub relevant: u64,
    pub harvest_rate: f64,
    /// With `--truth FILE`: the truth's URLs this layer fetched, and the
    /// target recall so far (those fetched by this layer and the ones
    /// before, over all of the truth's URLs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truth_found: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recall: Option<f64>,
    /// URLs past the page budget (`--max-pages`), carried over unfetched.
    pub budget_cut: u64,
    /// Requests through each proxy (`--proxy`), with its failures,
    /// evictions, recoveries and response times.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proxies: Vec<crate::fetch::proxy::ProxyUse>,
    /// Sitemaps read in this layer (`--sitemaps`, layer 0): files, URLs
    /// listed, files with a problem.
    pub sitemap_files: u64,
    pub sitemap_urls: u64,
    pub sitemap_problems: u64,
    /// Adaptive politeness: rate cuts (429, 503, timeouts), hosts paced
    /// above their floor, the longest delay set (ms).
    pub backoffs: u64,
    pub hosts_slowed: u64,
    pub max_delay_ms: u64,
    /// The host whose last answer came last, and how long after every
    /// other host's: how long the layer ran for it alone (empty and 0 when
    /// no other host answered in the layer).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub late_host: String,
    pub late_host_seconds: f64,
    /// The partitions' host paces and late hosts, for the run's hosts.
    #[serde(skip)]
    pub(crate) host_paces: Vec<HostPace>,
    #[serde(skip)]
    pub(crate) lates: Vec<LateHost>,
    /// Links this layer's pages had that the link-text-ratio prefilter flagged.
    pub dom_noise: u64,
    /// Distinct link targets that single-pass LCS clustering judged noise.
    pub lcs_noise: u64,
    /// Distinct link targets judged traps.
    pub traps: u64,
    /// Distinct link targets fetched as probes of a link class that yields
    /// little, and distinct link targets not followed because their
    /// classes yield little (copies, client errors, redirects off the site).
    #[serde(default)]
    pub probes: u64,
    /// Distinct link targets of classes never fetched, past their first
    /// probes, that wait one layer for the probes' evidence.
    #[serde(default)]
    pub deferred: u64,
    #[serde(default)]
    pub barren: u64,
    /// Distinct link targets the noise filter did not follow: copies,
    /// errors, others.
    #[serde(default)]
    pub skipped: SkipCounts,
    /// URLs of this layer's input the noise filter did not fetch, decided
    /// in the layer by the first pages of their group (its probes).
    #[serde(default)]
    pub held_back: SkipCounts,
    /// URLs of those groups fetched, by why (new texts, sampled, unjudged,
    /// released).
    #[serde(default)]
    pub gates: GateCounts,
    /// Followable link targets considered for the next layer.
    pub candidates: u64,
    /// Repeats dropped by the visit list, the cache list and the visited store.
    pub visit_hits: u64,
    pub cache_hits: u64,
    pub store_hits: u64,
    /// Sum of partition wall times (partitions overlap, so ≥ the layer's time).
    pub partition_seconds: f64,
    /// Wall time of the layer in this invocation (0 when it was resumed as done).
    pub seconds: f64,
    /// Per rule (`--rules`): pages matched, items, items with errors, field fill.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub rules: BTreeMap<String, RuleCounts>,
    /// The resource governor (`--max-memory`, `--cpu-target`, local
    /// executor): peak RSS sampled, smallest and mean in-flight limit,
    /// shrinks, over the layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<GovernorFigures>,
}

impl LayerSummary {
    pub(crate) fn add(&mut self, m: &MapManifest) {
        self.input += m.input;
        self.fetched += m.fetched;
        self.ok += m.ok;
        for (k, v) in &m.errors {
            // Manifests key errors by the `error` column's names (and
            // `http_4xx` ...); robots.txt refusals are not errors.
            if k == ErrorKind::Robots.as_str() {
                self.robots += v;
            } else {
                *self.errors.entry(k.clone()).or_default() += v;
            }
        }
        self.robots += m.robots;
        self.carried += m.carried;
        self.stragglers += m.stragglers;
        self.stragglers_in_flight += m.stragglers_in_flight;
        self.adopted += m.adopted;
        self.held_back.add(&m.skipped);
        self.gates.add(&m.gates);
        self.bytes += m.bytes;
        self.unchanged += m.unchanged;
        self.bytes_saved += m.bytes_saved;
        #[allow(clippy::cast_precision_loss)]
        {
            self.seconds_saved += m.ms_saved as f64 / 1000.0;
        }
        self.links += m.links;
        self.robots_requests += m.robots_requests;
        self.retries += m.retries;
        self.hosts_down += m.hosts_down;
        self.breaker_opens += m.breaker_opens;
        self.host_pauses += m.host_pauses;
        for (why, n) in &m.not_requested {
            *self.not_requested.entry(why.clone()).or_default() += n;
        }
        self.backoffs += m.backoffs;
        self.sitemap_files += m.sitemap_files;
        self.dns_queries += m.dns_queries;
        self.dns_cached += m.dns_cached;
        self.dns_failures += m.dns_failures;
        self.rendered += m.rendered;
        self.scored += m.scored;
        self.budget_cut += m.budget_cut;
        self.relevant += m.relevant;
        #[allow(clippy::cast_precision_loss)]
        {
            self.harvest_rate = if self.fetched > 0 { self.relevant as f64 / self.fetched as f64 } else { 0.0 };
        }
        crate::fetch::proxy::merge_uses(&mut self.proxies, &m.proxies);
        self.sitemap_urls += m.sitemap_urls;
        self.sitemap_problems += m.sitemap_problems;
        self.hosts_slowed += m.hosts_slowed;
        self.max_delay_ms = self.max_delay_ms.max(m.max_delay_ms);
        self.host_paces.extend(m.host_paces.iter().cloned());
        self.lates.extend(m.late_host.iter().cloned());
        (self.late_host, self.late_host_seconds) = hosts::layer_late_host(&self.lates).unwrap_or_default();
        for (name, c) in &m.rules {
            self.rules.entry(name.clone()).or_default().merge(c);
        }
        #[allow(clippy::cast_precision_loss)]
        {
            self.partition_seconds += m.elapsed_ms as f64 / 1000.0;
        }
    }

    pub(crate) fn set_next(&mut self, n: &NextManifest) {
        self.new_urls = n.next.saturating_sub(n.carried);
        self.dom_noise = n.dom_noise;
        self.lcs_noise = n.lcs_noise;
        self.traps = n.traps;
        self.probes = n.probes;
        self.deferred = n.deferred;
        self.barren = n.barren;
        self.skipped = n.skipped;
        self.candidates = n.candidates;
        (self.visit_hits, self.cache_hits, self.store_hits) = (n.visit_hits, n.cache_hits, n.store_hits);
    }

    /// The optimise step's line of the table: noise and where repeats were caught.
    fn optimise_line(&self) -> Option<String> {
        if self.candidates == 0 && self.dom_noise == 0 {
            return None;
        }
        let repeats = self.visit_hits + self.cache_hits + self.store_hits;
        #[allow(clippy::cast_precision_loss)]
        let pct = |n: u64| if repeats == 0 { 0.0 } else { 100.0 * n as f64 / repeats as f64 };
        Some(format!(
            "      noise: {} links by DOM ratio, {} URLs by LCS clustering, {} trap URLs; not followed: {} ({} copies, {} errors, {} others); repeats: {} ({:.0}% visit list, {:.0}% cache list, {:.0}% visited store)",
            self.dom_noise,
            self.lcs_noise,
            self.traps,
            self.skipped.total(),
            self.skipped.copies,
            self.skipped.errors,
            self.skipped.others,
            repeats,
            pct(self.visit_hits),
            pct(self.cache_hits),
            pct(self.store_hits)
        ))
    }
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RunSummary {
    pub data: String,
    pub seeds: u64,
    pub seed_problems: Vec<String>,
    pub depth: u32,
    pub partitions: u32,
    /// Where the tasks ran: `local`, `processes` or `kubernetes`.
    pub executor: String,
    pub layers: Vec<LayerSummary>,
    pub merged: Option<MergeManifest>,
    pub fetched: u64,
    pub ok: u64,
    pub errors: u64,
    /// URLs robots.txt disallows (rows without a request).
    pub robots: u64,
    pub bytes: u64,
    /// Pages carried forward from `--previous` after a 304, the body bytes
    /// they did not transfer, and the fetch time saved (summed over
    /// requests, which overlap).
    pub unchanged: u64,
    pub bytes_saved: u64,
    pub seconds_saved: f64,
    pub seconds: f64,
    pub pages_per_second: f64,
    /// URLs found within the depth that the run did not request, because a
    /// limit the user set stopped it (the last layer's `not_requested`):
    /// their total, and by limit. 0 unless `--layer-timeout`, `--max-pages`
    /// or `--max-pages-per-host` cut the crawl short. They are kept in
    /// `state/carry/` (docs/src/politeness.md, "Retries and failing hosts").
    pub not_requested: u64,
    pub not_requested_by: BTreeMap<String, u64>,
    /// Where those URLs are kept, under the data location: the last layer's
    /// `state/carry/layer=L`, or the `in/layer=L` a page budget left unfetched.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub not_requested_in: String,
    /// Distinct link targets the noise filter did not follow, over every
    /// layer: copies, errors, others (docs/src/noise-filter.md).
    pub skipped: SkipCounts,
    /// URLs past their group's probes the noise filter fetched, over every
    /// layer, by why (docs/src/noise-filter.md, "Gates").
    pub gates: GateCounts,
    /// The link classes the noise filter skipped the most URLs of, with
    /// their evidence (the `skipped` dataset has every URL).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_classes: Vec<crate::optimise::SkippedClass>,
    /// Per rule, over every layer: what the rule matched and made, with
    /// each field's fill rate (items with a value / items).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub rules: BTreeMap<String, RuleSummary>,
    /// The resource governor's figures over every layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub governor: Option<GovernorFigures>,
    /// Hosts paced above `--delay`, refused or asked to wait: the pace each
    /// ended at and why, the longest alone first (at most 100), and how
    /// many there were; the host that held its layers alone the longest,
    /// the time it added to the wall.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostSummary>,
    pub hosts_paced: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowest_host: Option<SlowestHost>,
}

/// One rule's figures over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RuleSummary {
    #[serde(flatten)]
    pub counts: RuleCounts,
    /// Per field, items with a value / items.
    pub fill_rate: BTreeMap<String, f64>,
}

impl RunSummary {
    pub(crate) fn totals(&mut self) {
        self.fetched = self.layers.iter().map(|l| l.fetched).sum();
        self.ok = self.layers.iter().map(|l| l.ok).sum();
        self.errors = self.layers.iter().map(|l| l.errors.values().sum::<u64>()).sum();
        self.robots = self.layers.iter().map(|l| l.robots).sum();
        self.bytes = self.layers.iter().map(|l| l.bytes).sum();
        self.unchanged = self.layers.iter().map(|l| l.unchanged).sum();
        self.bytes_saved = self.layers.iter().map(|l| l.bytes_saved).sum();
        self.seconds_saved = self.layers.iter().map(|l| l.seconds_saved).sum();
        self.skipped = SkipCounts::default();
        for l in &self.layers {
            self.skipped.add(&l.skipped);
            self.skipped.add(&l.held_back);
            self.gates.add(&l.gates);
        }
        self.governor = self.layers.iter().filter_map(|l| l.governor).reduce(GovernorFigures::merge);
        let layers: Vec<hosts::LayerHosts<'_>> = self
            .layers
            .iter()
            .map(|l| hosts::LayerHosts {
                layer: l.layer,
                paces: &l.host_paces,
                late: (!l.late_host.is_empty()).then(|| (l.late_host.clone(), l.late_host_seconds)),
            })
            .collect();
        (self.hosts, self.hosts_paced, self.slowest_host) = hosts::run_hosts(&layers);
        // Earlier layers' carried URLs went on into the next layer; the
        // last layer's have none to go to.
        if let Some(last) = self.layers.last().filter(|l| l.layer >= self.depth) {
            self.not_requested_by = last.not_requested.clone();
            self.not_requested = last.carried;
            let known: u64 = self.not_requested_by.values().sum();
            if known < last.carried {
                // Carried for no limit: a bug's mark, never hidden.
                self.not_requested_by.insert("other".into(), last.carried - known);
            }
            if last.carried > 0 {
                self.not_requested_in = format!("state/carry/layer={}", last.layer);
            }
        }
        let mut rules: BTreeMap<String, RuleCounts> = BTreeMap::new();
        for l in &self.layers {
            for (name, c) in &l.rules {
                rules.entry(name.clone()).or_default().merge(c);
            }
        }
        self.rules = rules
            .into_iter()
            .map(|(name, counts)| {
                #[allow(clippy::cast_precision_loss)]
                let fill_rate = counts
                    .filled
                    .iter()
                    .map(|(f, n)| (f.clone(), if counts.items == 0 { 0.0 } else { *n as f64 / counts.items as f64 }))
                    .collect();
                (name, RuleSummary { counts, fill_rate })
            })
            .collect();
        let worked: f64 = self.layers.iter().map(|l| l.seconds).sum();
        #[allow(clippy::cast_precision_loss)]
        {
            self.pages_per_second = if worked > 0.0 { self.fetched as f64 / worked } else { 0.0 };
        }
    }

    /// The summary table printed at the end of `run`.
    #[must_use]
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\nlayercrawl: {} seeds, depth {}, {} partitions, data in {}",
            self.seeds, self.depth, self.partitions, self.data
        );
        let _ = writeln!(
            s,
            "{:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>10} {:>10} {:>8}  errors by kind",
            "layer",
            "input",
            "fetched",
            "ok",
            "errors",
            "robots",
            "retries",
            "new urls",
            "carried",
            "stragglers",
            "MB",
            "seconds"
        );
        for l in &self.layers {
            let errs: u64 = l.errors.values().sum();
            let kinds: Vec<String> = l.errors.iter().map(|(k, v)| format!("{k}={v}")).collect();
            #[allow(clippy::cast_precision_loss)]
            let mb = l.bytes as f64 / 1e6;
            let _ = writeln!(
                s,
                "{:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>10} {:>10.1} {:>8.1}  {}",
                l.layer,
                l.input,
                l.fetched,
                l.ok,
                errs,
                l.robots,
                l.retries,
                l.new_urls,
                l.carried,
                l.stragglers,
                mb,
                l.seconds,
                kinds.join(" ")
            );
            if l.dns_queries + l.dns_cached > 0 {
                let _ = writeln!(
                    s,
                    "      dns: {} queries, {} answers from the cache, {} names that did not resolve",
                    l.dns_queries, l.dns_cached, l.dns_failures
                );
            }
            if let Some(g) = &l.governor {
                #[allow(clippy::cast_precision_loss)]
                let mib = |b: u64| b as f64 / f64::from(1 << 20);
                let _ = write!(
                    s,
                    "      governor: peak RSS {:.0} MiB, in-flight limit min {} mean {:.0}, {} shrinks",
                    mib(g.peak_rss_bytes),
                    g.min_limit,
                    g.mean_limit,
                    g.shrinks
                );
                if g.peak_page_bytes > 0 {
                    let _ = write!(s, ", pages held at most {:.1} MiB", mib(g.peak_page_bytes));
                }
                if g.over_floor {
                    let _ = write!(s, ", --max-memory below the crawl's floor");
                }
                let _ = writeln!(s);
            }
            if l.rendered > 0 {
                let _ = writeln!(s, "      rendered in Chromium: {} pages", l.rendered);
            }
            if l.breaker_opens + l.host_pauses + l.hosts_down > 0 {
                let _ = writeln!(
                    s,
                    "      failing hosts: {} paused by Retry-After, {} breaker openings (a burst of failures, then a probe), {} found down (their URLs are host_down rows)",
                    l.host_pauses, l.breaker_opens, l.hosts_down
                );
            }
            if l.budget_cut > 0 {
                let _ = writeln!(s, "      page budget: {} URLs carried to the next layer unfetched", l.budget_cut);
            }
            if l.scored > 0 {
                let _ = writeln!(
                    s,
                    "      plan: {} of {} pages fetched are relevant (harvest rate {:.2}); {} content pages scored",
                    l.relevant, l.fetched, l.harvest_rate, l.scored
                );
            }
            if let (Some(found), Some(recall)) = (l.truth_found, l.recall) {
                let _ =
                    writeln!(s, "      truth: {found} of its URLs fetched in this layer; recall so far {recall:.2}");
            }
            for p in &l.proxies {
                #[allow(clippy::cast_precision_loss)]
                let mean = p.ms as f64 / p.requests.saturating_sub(p.failures).max(1) as f64;
                let _ = writeln!(
                    s,
                    "      proxy {}: {} requests, {} failed, mean response {mean:.0} ms, out of service {} times, back {} times",
                    p.proxy, p.requests, p.failures, p.evictions, p.recoveries
                );
            }
            if l.sitemap_files > 0 {
                let _ = writeln!(
                    s,
                    "      sitemaps: {} files read, {} URLs listed (into layer {}), {} files with problems (RUST_LOG=warn names them)",
                    l.sitemap_files,
                    l.sitemap_urls,
                    l.layer + 1,
                    l.sitemap_problems
                );
            }
            if l.hosts_slowed > 0 || l.backoffs > 0 {
                #[allow(clippy::cast_precision_loss)]
                let longest = l.max_delay_ms as f64 / 1000.0;
                let _ = writeln!(
                    s,
                    "      politeness: {} hosts slowed down (response times or refusals), {} rate cuts (429, 503, timeouts), longest delay {longest:.1} s",
                    l.hosts_slowed, l.backoffs
                );
            }
            if let Some(line) = l.optimise_line() {
                let _ = writeln!(s, "{line}");
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let mb = self.bytes as f64 / 1e6;
        let _ = writeln!(
            s,
            "total: {} fetched, {} ok, {} errors, {} skipped by robots.txt, {:.1} MB in {:.1} s ({:.0} pages/s)",
            self.fetched, self.ok, self.errors, self.robots, mb, self.seconds, self.pages_per_second
        );
        if self.skipped.total() > 0 {
            let k = &self.skipped;
            let most = self.skipped_classes.first().map_or(String::new(), |c| {
                format!(
                    "; most from {} to {} ({} skipped: {} of its {} fetched pages were new)",
                    c.source_template, c.target_template, c.skipped, c.new, c.fetched
                )
            });
            let _ = writeln!(
                s,
                "noise filter: {} link targets not followed ({} copies, {} errors, {} others{most}); every one is in {}/, and --denoise off follows them",
                k.total(),
                k.copies,
                k.errors,
                k.others,
                crate::store::dataset::SKIPPED.name,
            );
        }
        let g = &self.gates;
        if g.unjudged + g.released > 0 {
            let _ = writeln!(
                s,
                "noise filter: {} URLs fetched without their probes' verdict ({} unjudged: too few probes answered without a server error; {} released: probes still out after {} s); RUST_LOG=layercrawl=debug names each group by a URL",
                g.unjudged + g.released,
                g.unjudged,
                g.released,
                crate::denoise::gate::MAX_HOLD.as_secs(),
            );
        }
        if self.unchanged > 0 {
            #[allow(clippy::cast_precision_loss)]
            let (saved, total) = (self.bytes_saved as f64 / 1e6, (self.bytes + self.bytes_saved) as f64 / 1e6);
            let _ = writeln!(
                s,
                "unchanged since the previous crawl: {} pages carried forward (304), {saved:.1} of {total:.1} MB not transferred, {:.1} s of fetch time saved",
                self.unchanged, self.seconds_saved
            );
        }
        if let Some(m) = &self.merged {
            let _ = writeln!(s, "merged: {} doc rows, {} link rows; read with: duckdb -c \"SELECT host, count(*) FROM '{}/{}/*/*.parquet' GROUP BY host\"", m.doc_rows, m.link_rows, self.data, crate::store::dataset::DOC.name);
        }
        for (name, r) in &self.rules {
            let fills: Vec<String> = r.fill_rate.iter().map(|(f, v)| format!("{f} {:.0}%", v * 100.0)).collect();
            let _ = writeln!(
                s,
                "rule {name}: {} pages, {} items ({} with errors), {} links not followed; filled: {}",
                r.counts.pages,
                r.counts.items,
                r.counts.items_with_errors,
                r.counts.links_dropped,
                if fills.is_empty() { "-".to_string() } else { fills.join(", ") }
            );
        }
        s.push_str(&hosts::host_lines(&self.hosts, self.hosts_paced, self.slowest_host.as_ref(), 5));
        if !self.seed_problems.is_empty() {
            let _ = writeln!(s, "seed lines skipped: {}", self.seed_problems.len());
        }
        let _ = writeln!(s, "{}", self.completeness());
        s
    }
}
