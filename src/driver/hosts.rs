//! The summary's hosts: the pace each host worth a line ended at and why
//! (its refusals, `Retry-After`s, response times, robots.txt), and how long
//! the slowest host held its layers alone, the time it added to the wall
//! (docs/src/politeness.md, "What the summary says of each host").

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::store::manifest::{HostPace, LateHost, HOST_PACES};

/// One host over the run.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct HostSummary {
    pub host: String,
    /// The delay between two of its request starts at the end, ms, and
    /// what set it: `delay`, `crawl-delay`, `response-times`, `refusals`
    /// or `max-delay`.
    pub delay_ms: u64,
    pub why: String,
    /// Page requests answered; of them `429`s, and answers with a
    /// `Retry-After`; times a refusal cut its rate; its mean response time.
    pub answers: u64,
    pub too_many: u64,
    pub retry_after: u64,
    pub cuts: u64,
    pub mean_response_ms: u64,
    /// How long its layers ran for it alone: from the last answer of every
    /// other host of the layer to its own last one, summed over the layers
    /// whose last answer was its.
    pub alone_seconds: f64,
}

/// The host that held its layers alone the longest.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SlowestHost {
    pub host: String,
    /// The time it added to the wall: its [`HostSummary::alone_seconds`].
    pub seconds: f64,
    /// The layers it held alone.
    pub layers: Vec<u32>,
}

/// The host whose last answer came last in a layer, and how long after
/// every other host's (none when no other host answered in the layer).
#[must_use]
pub fn layer_late_host(lates: &[LateHost]) -> Option<(String, f64)> {
    let (i, late) = lates.iter().enumerate().max_by_key(|(_, l)| l.last_ms)?;
    let others = lates.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, l)| l.last_ms);
    let before = others.chain([late.others_ms]).max().unwrap_or(0);
    if before == 0 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let seconds = late.last_ms.saturating_sub(before) as f64 / 1000.0;
    Some((late.host.clone(), seconds))
}

/// One layer's share of the run's hosts: its partitions' host paces and
/// its late host ([`layer_late_host`]).
pub struct LayerHosts<'a> {
    pub layer: u32,
    pub paces: &'a [HostPace],
    pub late: Option<(String, f64)>,
}

/// The run's hosts from its layers' (in layer order): every host worth a
/// line, the longest alone first, then the slowest paced (at most
/// [`HOST_PACES`]); how many there were; the slowest host.
#[must_use]
pub fn run_hosts(layers: &[LayerHosts<'_>]) -> (Vec<HostSummary>, u64, Option<SlowestHost>) {
    let mut paces: BTreeMap<&str, HostPace> = BTreeMap::new();
    let mut alone: BTreeMap<&str, (f64, Vec<u32>)> = BTreeMap::new();
    for l in layers {
        for p in l.paces {
            paces.entry(p.host.as_str()).and_modify(|a| a.then(p)).or_insert_with(|| p.clone());
        }
        if let Some((host, seconds)) = &l.late {
            let a = alone.entry(host.as_str()).or_default();
            a.0 += seconds;
            a.1.push(l.layer);
        }
    }
    let slowest = alone.iter().max_by(|a, b| a.1 .0.total_cmp(&b.1 .0)).map(|(host, (seconds, layers))| SlowestHost {
        host: (*host).to_string(),
        seconds: *seconds,
        layers: layers.clone(),
    });
    let mut out: Vec<HostSummary> = paces
        .into_values()
        .map(|p| HostSummary {
            alone_seconds: alone.get(p.host.as_str()).map_or(0.0, |a| a.0),
            mean_response_ms: p.response_ms / p.answers.max(1),
            delay_ms: p.delay_ms,
            why: p.why,
            answers: p.answers,
            too_many: p.too_many,
            retry_after: p.retry_after,
            cuts: p.cuts,
            host: p.host,
        })
        .collect();
    out.sort_by(|a, b| {
        b.alone_seconds.total_cmp(&a.alone_seconds).then(b.delay_ms.cmp(&a.delay_ms)).then(a.host.cmp(&b.host))
    });
    let total = out.len() as u64;
    out.truncate(HOST_PACES);
    (out, total, slowest)
}

/// The table's lines about hosts: the slowest host, and the first `n`
/// hosts worth a line.
#[must_use]
pub fn host_lines(hosts: &[HostSummary], total: u64, slowest: Option<&SlowestHost>, n: usize) -> String {
    let mut s = String::new();
    if let Some(w) = slowest {
        let layers: Vec<String> = w.layers.iter().map(u32::to_string).collect();
        let _ = writeln!(
            s,
            "slowest host: {} added {:.1} s to the wall, running alone at the end of layer{} {}",
            w.host,
            w.seconds,
            if layers.len() > 1 { "s" } else { "" },
            layers.join(", ")
        );
    }
    if total == 0 {
        return s;
    }
    let _ = writeln!(
        s,
        "hosts paced above --delay, refused (429) or asked to wait (Retry-After): {total} (--json has up to {HOST_PACES})"
    );
    for h in hosts.iter().take(n) {
        #[allow(clippy::cast_precision_loss)]
        let delay = h.delay_ms as f64 / 1000.0;
        let _ = writeln!(
            s,
            "  {}: {delay:.2} s between requests at the end ({}); {} answers, {} of them 429, {} with Retry-After, {} rate cuts, mean response {} ms; alone {:.1} s",
            h.host, h.why, h.answers, h.too_many, h.retry_after, h.cuts, h.mean_response_ms, h.alone_seconds
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn late(host: &str, last_ms: u64, others_ms: u64) -> LateHost {
        LateHost { host: host.into(), last_ms, others_ms }
    }

    fn pace(host: &str, delay_ms: u64, why: &str, answers: u64, too_many: u64) -> HostPace {
        HostPace {
            host: host.into(),
            delay_ms,
            why: why.into(),
            answers,
            too_many,
            response_ms: answers * 10,
            ..HostPace::default()
        }
    }

    #[test]
    fn the_late_host_of_a_layer_is_measured_against_every_other_hosts_last_answer() {
        // Partition 0's latest host answered last at 10.0 s; its own other
        // hosts by 6.0 s, partition 1's hosts by 7.5 s: alone 2.5 s.
        let lates = [late("http://slow.test", 10_000, 6_000), late("http://b.test", 7_500, 7_000)];
        assert_eq!(layer_late_host(&lates), Some(("http://slow.test".into(), 2.5)));
        assert_eq!(layer_late_host(&[late("http://only.test", 10_000, 0)]), None, "no other host to compare");
        assert_eq!(layer_late_host(&[]), None);
    }

    #[test]
    fn a_host_over_the_layers_ends_at_its_last_pace_with_its_counts_summed() {
        let l3 = [pace("http://t.test", 2_000, "refusals", 30, 5), pace("http://c.test", 1_000, "crawl-delay", 9, 0)];
        let l4 = [pace("http://t.test", 110, "refusals", 20, 1)];
        let (hosts, total, slowest) = run_hosts(&[
            LayerHosts { layer: 3, paces: &l3, late: Some(("http://t.test".into(), 4.0)) },
            LayerHosts { layer: 4, paces: &l4, late: Some(("http://t.test".into(), 0.5)) },
            LayerHosts { layer: 5, paces: &[], late: Some(("http://other.test".into(), 1.0)) },
        ]);
        assert_eq!(total, 2);
        let t = &hosts[0];
        assert_eq!((t.host.as_str(), t.delay_ms, t.why.as_str()), ("http://t.test", 110, "refusals"));
        assert_eq!((t.answers, t.too_many, t.mean_response_ms, t.alone_seconds), (50, 6, 10, 4.5));
        assert_eq!(hosts[1].host, "http://c.test");
        let w = slowest.expect("a slowest host");
        assert_eq!((w.host.as_str(), w.seconds, w.layers.as_slice()), ("http://t.test", 4.5, &[3, 4][..]));
        let lines = host_lines(&hosts, total, Some(&w), 5);
        assert!(lines.contains("slowest host: http://t.test added 4.5 s"), "{lines}");
        assert!(lines.contains("http://c.test: 1.00 s between requests at the end (crawl-delay)"), "{lines}");
    }
}
