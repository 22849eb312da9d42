//! What a partition tells of its hosts' pace when it ends: per host the
//! delay it ended at and what set it, its refusals and `Retry-After`s
//! ([`HostPace`]), and the host whose last answer came last ([`LateHost`]),
//! from which the summary finds how long one host held a layer alone.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::pace::Why;
use super::State;
use crate::store::manifest::{HostPace, LateHost, HOST_PACES};

/// One host's answers in this partition.
#[derive(Clone, Debug, Default)]
pub(super) struct Tally {
    pub(super) answers: u64,
    pub(super) response_ms: u64,
    pub(super) too_many: u64,
    pub(super) retry_after: u64,
    /// Times a refusal cut the host's rate.
    pub(super) cuts: u64,
    pub(super) last_answer: Option<Instant>,
}

/// `at` as ms since the Unix epoch (an instant is only comparable within
/// a process; the layer's tasks may run in several).
fn unix_ms(at: Instant) -> u64 {
    let ago = Instant::now().saturating_duration_since(at);
    let wall = SystemTime::now().checked_sub(ago).unwrap_or(SystemTime::UNIX_EPOCH);
    let since = wall.duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

impl State<'_> {
    /// The pace of every host worth a line (ending a millisecond or more
    /// above `--delay`, held to a Crawl-delay, refused or asked to wait; at
    /// most [`HOST_PACES`], the slowest first), and the host whose last
    /// answer came last.
    pub(super) fn host_paces(&self) -> (Vec<HostPace>, Option<LateHost>) {
        let base = self.f.cfg.politeness.min_delay();
        let worth = |h: &&super::Host| {
            let above = h.pace.delay(self.limits(h.floor)).saturating_sub(base) >= Duration::from_millis(1);
            above || h.floor > base || h.tally.too_many + h.tally.retry_after + h.tally.cuts > 0
        };
        let mut paces: Vec<HostPace> = self
            .hosts
            .iter()
            .filter(worth)
            .map(|h| {
                let limits = self.limits(h.floor);
                let why = match h.pace.why(limits) {
                    Why::Floor if h.floor > base => "crawl-delay",
                    Why::Floor => "delay",
                    Why::ResponseTimes => "response-times",
                    Why::Refusals => "refusals",
                    Why::Cap => "max-delay",
                };
                HostPace {
                    host: h.origin.clone(),
                    delay_ms: u64::try_from(h.pace.delay(limits).as_millis()).unwrap_or(u64::MAX),
                    why: why.to_string(),
                    answers: h.tally.answers,
                    too_many: h.tally.too_many,
                    retry_after: h.tally.retry_after,
                    cuts: h.tally.cuts,
                    response_ms: h.tally.response_ms,
                }
            })
            .collect();
        paces.sort_by(|a, b| b.delay_ms.cmp(&a.delay_ms).then_with(|| a.host.cmp(&b.host)));
        paces.truncate(HOST_PACES);
        let mut answered: Vec<(Instant, &str)> =
            self.hosts.iter().filter_map(|h| Some((h.tally.last_answer?, h.origin.as_str()))).collect();
        answered.sort_unstable();
        let late = answered.last().map(|&(last, host)| LateHost {
            host: host.to_string(),
            last_ms: unix_ms(last),
            others_ms: answered.iter().rev().nth(1).map_or(0, |&(t, _)| unix_ms(t)),
        });
        (paces, late)
    }
}
