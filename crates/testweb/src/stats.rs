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
    /// With `log_requests`: when each of the first 10,000 requests was with
    /// the server, all of them (the log misses requests whose client left
    /// before an answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<RequestSpan>,
}

impl HostStats {
    /// [`spacing`] over this host's logged requests (robots.txt included),
    /// with the lag [`LAG_MS`]: the crawler's spacing, which a starved
    /// server's clock alone (`min_gap_ms`) cannot show.
    ///
    /// # Errors
    /// The window that came too fast, or a log that misses requests
    /// (`log_requests` off, or past its cap).
    pub fn spaced(&self, delay_ms: f64) -> Result<(), String> {
        if self.spans.len() as u64 != self.requests {
            return Err(format!(
                "{} of {} requests logged: start the farm with log_requests",
                self.spans.len(),
                self.requests
            ));
        }
        let at: Vec<f64> = self.spans.iter().map(|r| r.at_ms).collect();
        spacing(&at, delay_ms, LAG_MS)
    }

    /// The most requests the crawler can have had in flight at once here
    /// ([`in_flight`] over the spans, with the lag [`LAG_MS`]); the server's
    /// own count (`max_in_flight`) when the spans miss requests.
    #[must_use]
    pub fn crawler_in_flight(&self) -> usize {
        if self.spans.len() as u64 == self.requests {
            in_flight(&self.spans, LAG_MS)
        } else {
            self.max_in_flight as usize
        }
    }
}

/// When one request was with the server (with `log_requests`): from its
/// arrival, whether or not its handler got as far as the request log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestSpan {
    /// Arrival, in ms since the farm started.
    pub at_ms: f64,
    /// When the server let go of it: the last byte of its body handed to
    /// the connection (before it is written), or the connection dropped.
    /// `None` while it runs.
    pub done_ms: Option<f64>,
    /// Whether its whole body was handed over (`done_ms` came before the
    /// client could have read the end); otherwise the client went away
    /// first, and the server noticed it some time after.
    pub whole: bool,
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
    /// Its arrival, which finds its log entry.
    at_ms: f64,
    /// Whether its body was handed over whole ([`InFlight::whole`]).
    whole: bool,
}

impl InFlight {
    /// The request's body has been handed over whole.
    pub fn whole(&mut self) {
        self.whole = true;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let done_ms = micros_as_ms(self.stats.start.elapsed());
        let (at_ms, whole) = (self.at_ms, self.whole);
        self.stats.with(&self.slot, |l| {
            l.in_flight = l.in_flight.saturating_sub(1);
            // The spans are in arrival order; an entry of a reset log is gone.
            if let Some(e) = l.s.spans.iter_mut().rev().take(4096).find(|e| e.at_ms == at_ms && e.done_ms.is_none()) {
                (e.done_ms, e.whole) = (Some(done_ms), whole);
            }
        });
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
        let at_ms = micros_as_ms(now.saturating_duration_since(self.start));
        let log = self.log;
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
            if log && l.s.spans.len() < LOG_CAP {
                l.s.spans.push(RequestSpan { at_ms, done_ms: None, whole: false });
            }
            gap
        });
        Arrival { gap, at_ms, guard: InFlight { stats: Arc::clone(self), slot, at_ms, whole: false } }
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

/// How far behind the crawler a loaded machine may let the server see a
/// request: its arrival stamped late, or a client that went away noticed
/// late. Two busy loops on two cores delay a handler by tens of ms; 250 ms
/// leaves room, and a crawler that broke its spacing or its connection
/// budget still shows, as the checks below measure many requests at once.
pub const LAG_MS: f64 = 250.0;

/// Checks that the crawler sent requests at arrivals `at` (ms, any order)
/// at least `delay_ms` apart, from the server's clock, under a lag of up to
/// `lag_ms` per request. Request k+j was sent at least j delays after
/// request k, and each arrives up to `lag_ms` late, so the arrivals k and
/// k+j, sorted, are at least j delays less `lag_ms` apart: one lag, not
/// one per gap. A pair that arrives closer than a delay says little on a
/// loaded machine; a run of requests that arrives faster than its delays
/// says the crawler sent them so.
///
/// # Errors
/// The first window of arrivals that came too fast, described.
pub fn spacing(at: &[f64], delay_ms: f64, lag_ms: f64) -> Result<(), String> {
    let mut at = at.to_vec();
    at.sort_by(f64::total_cmp);
    // b_k = at_k - k·delay: the check is b_j >= b_i - lag for every i < j.
    let mut best: Option<(usize, f64)> = None;
    for (j, &a) in at.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let b = a - j as f64 * delay_ms;
        if let Some((i, bi)) = best {
            if b < bi - lag_ms {
                return Err(format!(
                    "{} requests arrived in {:.1} ms ({:.1} ms to {:.1} ms), {} delays of {delay_ms} ms less a lag of {lag_ms} ms would take {:.1} ms",
                    j - i + 1,
                    at[j] - at[i],
                    at[i],
                    at[j],
                    j - i,
                    (j - i) as f64 * delay_ms - lag_ms
                ));
            }
        }
        if best.is_none_or(|(_, bi)| b > bi) {
            best = Some((j, b));
        }
    }
    Ok(())
}

/// The most requests of `log` the crawler can have had in flight at once:
/// each from its arrival to the moment the server let go of it, less
/// `lag_ms` when the client went away first (the server notices that late,
/// at its next write). A request still running counts to the end. Bodies
/// handed over whole need no margin: the server lets go before the client
/// can read their end, and the client sends nothing in its place before.
#[must_use]
pub fn in_flight(log: &[RequestSpan], lag_ms: f64) -> usize {
    let mut events: Vec<(f64, i32)> = Vec::with_capacity(log.len() * 2);
    for r in log {
        let end = match r.done_ms {
            Some(d) if r.whole => d,
            Some(d) => d - lag_ms,
            None => f64::INFINITY,
        };
        if end > r.at_ms {
            events.push((r.at_ms, 1));
            events.push((end, -1));
        }
    }
    // Ends before starts at the same instant.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spacing_allows_one_lag_and_not_one_per_gap() {
        // Sent 100 ms apart; the second arrives 60 ms late: 40 ms apart.
        assert!(spacing(&[0.0, 160.0, 200.0, 300.0], 100.0, 80.0).is_ok());
        // Ten requests within 200 ms at a 100 ms delay: no lag explains that.
        let fast: Vec<f64> = (0..10).map(|k| f64::from(k) * 20.0).collect();
        let err = spacing(&fast, 100.0, 250.0).expect_err("too fast");
        assert!(err.contains("requests arrived in"), "{err}");
        assert!(spacing(&(0..10).map(|k| f64::from(k) * 100.0).collect::<Vec<_>>(), 100.0, 0.0).is_ok());
    }

    #[test]
    fn in_flight_counts_overlaps_and_forgives_late_noticed_hang_ups() {
        let r = |at_ms: f64, done: f64, whole: bool| RequestSpan { at_ms, done_ms: Some(done), whole };
        // Two whole requests overlap; a third starts as one ends.
        assert_eq!(in_flight(&[r(0.0, 100.0, true), r(50.0, 150.0, true), r(100.0, 200.0, true)], 250.0), 2);
        // A client that hung up at 100 ms, noticed at 300 ms, then sent another.
        assert_eq!(in_flight(&[r(0.0, 300.0, false), r(120.0, 400.0, true)], 250.0), 1);
        assert_eq!(in_flight(&[r(0.0, 300.0, false), r(120.0, 400.0, true)], 0.0), 2);
    }

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
