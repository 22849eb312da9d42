//! The politeness audit, measured by the server: per host the request
//! count, the smallest gap between two request arrivals, the most requests
//! in flight at once, requests for robots-disallowed paths, statuses, and
//! (for tests) a bounded request log. Served at `/__farm/stats`.
//!
//! Farm hosts have a fixed slot each (one uncontended mutex per host, so
//! hosts never contend with each other); hosts outside the farm share a
//! small map.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Paths kept per host in `disallowed_requests`.
pub const DISALLOWED_CAP: usize = 100;
/// Entries kept per host in `log` (the first ones).
pub const LOG_CAP: usize = 10_000;
/// Distinct off-farm host names tracked; more are counted as `(other)`.
const OTHER_CAP: usize = 256;

/// A snapshot of the audit (also the JSON of `/__farm/stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FarmStats {
    /// Hosts that received at least one request, by lower-case name.
    pub hosts: BTreeMap<String, HostStats>,
    pub total_requests: u64,
    /// Most requests in flight at once over all hosts.
    #[serde(default)]
    pub max_in_flight: u32,
}

/// What one host saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostStats {
    /// All requests, robots.txt included.
    pub requests: u64,
    pub robots_requests: u64,
    /// Smallest gap between two request arrivals (robots.txt included), in ms.
    pub min_gap_ms: Option<f64>,
    /// Most requests in flight at once (arrival until the last body byte).
    pub max_in_flight: u32,
    /// Path and query of requests its robots.txt disallows (first 100).
    pub disallowed_requests: Vec<String>,
    pub statuses: BTreeMap<u16, u64>,
    /// Bytes of response bodies sent whole (streamed bodies not counted).
    #[serde(default)]
    pub body_bytes: u64,
    /// With `log_requests`: the first 10,000 requests in arrival order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<RequestLog>,
}

/// One logged request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestLog {
    /// Path and query as requested.
    pub path: String,
    /// Arrival, in ms since the farm started.
    pub at_ms: f64,
    pub status: u16,
    /// The request's `User-Agent`, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

#[derive(Default)]
struct Live {
    s: HostStats,
    last: Option<Instant>,
    in_flight: u32,
}

/// Where a host's numbers live.
#[derive(Clone, Debug)]
pub enum Slot {
    Known(usize),
    Other(Box<str>),
}

/// The live counters.
pub struct LiveStats {
    start: Instant,
    log: bool,
    names: Vec<String>,
    known: Vec<Mutex<Live>>,
    other: Mutex<HashMap<Box<str>, Live>>,
    total: AtomicU64,
    in_flight: AtomicU32,
    max_in_flight: AtomicU32,
}

/// Keeps a request counted as in flight until dropped.
pub struct InFlight {
    stats: Arc<LiveStats>,
    slot: Slot,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.stats.with(&self.slot, |l| l.in_flight = l.in_flight.saturating_sub(1));
        self.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the arrival of a request found.
pub struct Arrival {
    /// Time since the previous request to the same host.
    pub gap: Option<std::time::Duration>,
    /// Milliseconds since the farm started.
    pub at_ms: f64,
    pub guard: InFlight,
}

/// Milliseconds with microsecond resolution: short decimals that survive a
/// JSON round trip exactly (long ones may come back one ulp off).
fn micros_as_ms(d: std::time::Duration) -> f64 {
    // Microseconds since the farm started fit an f64 exactly for 285 years.
    #[allow(clippy::cast_precision_loss)]
    let us = d.as_micros() as f64;
    us / 1000.0
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a stats lock leaves plain counters behind: keep going.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LiveStats {
    /// `names[i]` is the host name of slot `Known(i)`.
    #[must_use]
    pub fn new(names: Vec<String>, log: bool) -> Self {
        let known = names.iter().map(|_| Mutex::new(Live::default())).collect();
        Self {
            start: Instant::now(),
            log,
            names,
            known,
            other: Mutex::new(HashMap::new()),
            total: AtomicU64::new(0),
            in_flight: AtomicU32::new(0),
            max_in_flight: AtomicU32::new(0),
        }
    }

    fn with<R>(&self, slot: &Slot, f: impl FnOnce(&mut Live) -> R) -> R {
        match slot {
            Slot::Known(i) => f(&mut lock(&self.known[*i])),
            Slot::Other(name) => {
                let mut m = lock(&self.other);
                let key: Box<str> =
                    if m.len() >= OTHER_CAP && !m.contains_key(name) { "(other)".into() } else { name.clone() };
                f(m.entry(key).or_default())
            }
        }
    }

    /// Counts a request's arrival. `path_and_query` is only turned into a
    /// `String` when the request is disallowed.
    pub fn arrive(self: &Arc<Self>, slot: Slot, path_and_query: &str, robots: bool, disallowed: bool) -> Arrival {
        let now = Instant::now();
        self.total.fetch_add(1, Ordering::Relaxed);
        let now_in_flight = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now_in_flight, Ordering::Relaxed);
        let gap = self.with(&slot, |l| {
            l.s.requests += 1;
            if robots {
                l.s.robots_requests += 1;
            }
            if disallowed && l.s.disallowed_requests.len() < DISALLOWED_CAP {
                l.s.disallowed_requests.push(path_and_query.to_string());
            }
            let gap = l.last.map(|t| now.saturating_duration_since(t));
            if let Some(g) = gap {
                let ms = micros_as_ms(g);
                l.s.min_gap_ms = Some(l.s.min_gap_ms.map_or(ms, |m| m.min(ms)));
            }
            l.last = Some(now);
            l.in_flight += 1;
            l.s.max_in_flight = l.s.max_in_flight.max(l.in_flight);
            gap
        });
        let at_ms = micros_as_ms(now.saturating_duration_since(self.start));
        Arrival { gap, at_ms, guard: InFlight { stats: Arc::clone(self), slot } }
    }

    /// Records the status a request got (when its response head is ready);
    /// `agent` is its `User-Agent`.
    pub fn finish(
        &self,
        slot: &Slot,
        path_and_query: &str,
        at_ms: f64,
        status: u16,
        body_bytes: u64,
        agent: Option<&str>,
    ) {
        let log = self.log;
        self.with(slot, |l| {
            *l.s.statuses.entry(status).or_insert(0) += 1;
            l.s.body_bytes += body_bytes;
            if log && l.s.log.len() < LOG_CAP {
                let agent = agent.map(str::to_string);
                l.s.log.push(RequestLog { path: path_and_query.to_string(), at_ms, status, agent });
            }
        });
    }

    #[must_use]
    pub fn snapshot(&self) -> FarmStats {
        let mut hosts = BTreeMap::new();
        for (name, m) in self.names.iter().zip(&self.known) {
            let l = lock(m);
            if l.s.requests > 0 {
                hosts.insert(name.clone(), l.s.clone());
            }
        }
        for (name, l) in lock(&self.other).iter() {
            hosts.insert(name.to_string(), l.s.clone());
        }
        FarmStats {
            hosts,
            total_requests: self.total.load(Ordering::Relaxed),
            max_in_flight: self.max_in_flight.load(Ordering::Relaxed),
        }
    }

    /// Forgets everything except the requests in flight right now.
    pub fn reset(&self) {
        for m in &self.known {
            let mut l = lock(m);
            let in_flight = l.in_flight;
            *l = Live { in_flight, ..Live::default() };
        }
        for l in lock(&self.other).values_mut() {
            let in_flight = l.in_flight;
            *l = Live { in_flight, ..Live::default() };
        }
        lock(&self.other).retain(|_, l| l.in_flight > 0);
        self.total.store(0, Ordering::Relaxed);
        self.max_in_flight.store(self.in_flight.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_gaps_in_flight_and_disallowed() {
        let st = Arc::new(LiveStats::new(vec!["a.test".into(), "b.test".into()], true));
        let a1 = st.arrive(Slot::Known(0), "/robots.txt", true, false);
        st.finish(&Slot::Known(0), "/robots.txt", a1.at_ms, 200, 0, None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let a2 = st.arrive(Slot::Known(0), "/private/x", false, true);
        st.finish(&Slot::Known(0), "/private/x", a2.at_ms, 200, 0, None);
        assert!(a2.gap.expect("second request has a gap") >= std::time::Duration::from_millis(20));
        drop(a1);
        let o = st.arrive(Slot::Other("ext.test".into()), "/", false, false);
        st.finish(&Slot::Other("ext.test".into()), "/", o.at_ms, 404, 0, None);
        let snap = st.snapshot();
        let a = &snap.hosts["a.test"];
        assert_eq!((a.requests, a.robots_requests, a.max_in_flight), (2, 1, 2));
        assert!(a.min_gap_ms.expect("gap") >= 20.0);
        assert_eq!(a.disallowed_requests, vec!["/private/x".to_string()]);
        assert_eq!(a.statuses[&200], 2);
        assert_eq!(a.log.len(), 2);
        assert!(!snap.hosts.contains_key("b.test"));
        assert_eq!(snap.hosts["ext.test"].statuses[&404], 1);
        assert_eq!(
            (snap.total_requests, snap.max_in_flight),
            (3, 2),
            "a.test had two at once, then one of them and ext.test"
        );
        let json = serde_json::to_string(&snap).expect("json");
        assert_eq!(serde_json::from_str::<FarmStats>(&json).expect("parse"), snap);
        drop((a2, o));
        st.reset();
        assert_eq!(st.snapshot(), FarmStats::default());
    }
}
