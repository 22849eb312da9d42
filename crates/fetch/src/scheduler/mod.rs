//! The per-host scheduler of one partition.
//!
//! Hosts (origins) sit in a min-heap keyed by the instant they may start
//! their next request, so picking the next host is O(log hosts) and a slow
//! host never holds another host's turn. Per host: robots.txt first, then
//! at most `per_host` requests in flight, request starts spaced by
//! `max(delay, Crawl-delay)`. All partitions share one global semaphore of
//! `concurrency` permits. Redirects re-enter the queue of their target host
//! (when this partition owns it), so every hop obeys the same politeness.
//! Each request, robots.txt included, is one call of the fetcher's
//! [`Exchange`](super::Exchange); what its result leads to is in [`outcome`].
//! A URL that must wait for its retry waits alone ([`queue`]); a host whose
//! server asks for a pause or keeps failing is paused and probed by its
//! circuit breaker ([`breaker`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::mpsc::Sender;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use url::Url;

mod breaker;
mod dispatch;
mod leftover;
mod outcome;
mod pace;
mod queue;
mod request;
mod tail;
mod tally;
#[cfg(test)]
mod tests;

use super::robots::{origin_of, RobotsRules};
use super::{ErrorKind, Fetched, Fetcher, Response};
pub(crate) use breaker::Breaker;
pub(crate) use pace::Pace;
use queue::HostQueue;
pub(crate) use request::SendClock;
use tail::Tracked;
pub use tail::{Handover, LayerTail, TailSeat};

/// Longest Retry-After waited for; a server asking for more is answered
/// with the failure (and the URL's row says so).
const MAX_RETRY_AFTER_SECS: u64 = 60;

/// A partition's input URLs by id (the index echoed in [`Fetched::id`]).
/// The scheduler keeps only ids in its host queues and reads a URL again
/// when its request starts, so a queued URL costs a few bytes, not a job.
pub trait UrlSource: Send + Sync {
    fn len(&self) -> usize;
    /// The URL of `id`. An error (the source could not be read) carries
    /// the id over unfetched; the source's owner reports the failure.
    ///
    /// # Errors
    /// When the URL cannot be read.
    fn url(&self, id: usize) -> std::io::Result<String>;
    /// The URL of `id` and the retries it spent in earlier layers (a URL
    /// carried over after a transient failure); none by default.
    ///
    /// # Errors
    /// When the URL cannot be read.
    fn start(&self, id: usize) -> std::io::Result<(String, u32)> {
        Ok((self.url(id)?, 0))
    }
    /// What makes the request of `url` conditional (last night's ETag and
    /// date of the page, `--previous`); none by default.
    fn validators(&self, _url: &Url) -> Option<super::Validators> {
        None
    }
    /// How many of the URLs, from the first, may be fetched (a page budget,
    /// `--max-pages`); the rest are carried over unfetched. All by default.
    fn budget(&self) -> Option<usize> {
        None
    }
    /// Whether the URL of `id` (`url`) is fetched now, later in the layer
    /// or not at all, asked as its first request is about to start: a
    /// source that decides some URLs by what others turn out to be (the
    /// noise filter's probes) answers here. Now by default.
    fn admit(&self, _id: usize, _url: &Url) -> Admit {
        Admit::Now
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What [`UrlSource::admit`] answers for a URL about to be requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Request it.
    Now,
    /// Ask again in [`ADMIT_AGAIN`]: what decides it is not known yet.
    Later,
    /// Never request it in this layer; it is listed in
    /// [`PartitionFetch::declined`].
    Never,
}

/// How long a URL answered [`Admit::Later`] waits before it is asked
/// about again.
pub const ADMIT_AGAIN: Duration = Duration::from_millis(40);

/// What the scheduler did besides the [`Fetched`] values it sent.
#[derive(Clone, Debug, Default)]
pub struct PartitionFetch {
    /// Input ids not fetched (stragglers, or a limit the user set): carry
    /// them over.
    pub carried: Vec<usize>,
    /// Input ids its source answered [`Admit::Never`]: not requested, not
    /// carried.
    pub declined: Vec<usize>,
    /// Carried ids whose URL failed in this layer, with its retries so far
    /// (they go with it into the next layer).
    pub retried: Vec<(usize, u32)>,
    /// Why URLs were carried, besides stragglers: `max-pages`,
    /// `max-pages-per-host`, `layer-timeout`, `unreadable` (the input's
    /// temporary file failed), with their counts.
    pub not_requested: std::collections::BTreeMap<String, u64>,
    pub robots_requests: u64,
    pub requests: u64,
    /// Requests repeated after a transient failure.
    pub retries: u64,
    /// Hosts found down in this layer (failing for `--host-down-after`):
    /// their queued URLs ended as `host_down` rows.
    pub hosts_down: u64,
    /// Times a host's circuit breaker opened on a burst of failures, and
    /// times a `Retry-After` paused a host.
    pub breaker_opens: u64,
    pub host_pauses: u64,
    /// Stragglers when the layer's tail came: requests in flight handed to
    /// the next layer, and the URLs still queued then (both carried).
    pub stragglers_in_flight: u64,
    pub stragglers_waiting: u64,
    /// Requests handed over by the layer before and adopted here.
    pub adopted: u64,
    /// Adaptive politeness: 429s, 503s and timeouts that cut a host's
    /// rate; hosts paced above their floor at some point; the longest
    /// delay set, in ms.
    pub backoffs: u64,
    pub hosts_slowed: u64,
    pub max_delay_ms: u64,
    /// The pace each host worth a line ended at, and why; the host whose
    /// last answer came last.
    pub host_paces: Vec<crate::store::manifest::HostPace>,
    pub late_host: Option<crate::store::manifest::LateHost>,
    /// DNS for this partition's hosts: queries sent, answers from the
    /// cache, failed lookups.
    pub dns: super::dns::DnsCounts,
    /// What went through each proxy for this partition's hosts (empty
    /// without proxies).
    pub proxies: Vec<super::proxy::ProxyUse>,
}

struct Job {
    id: usize,
    orig: Url,
    url: Url,
    hops: u32,
    retries: u32,
    chain: Vec<u64>,
    /// The redirect responses followed so far, with their captures
    /// (`FetchConfig::capture` only).
    redirects: Vec<Response>,
    started_at: Option<SystemTime>,
    /// When this try was dispatched.
    sent: Option<Instant>,
    elapsed: Duration,
    /// This request is its host's breaker probe.
    probe: bool,
    /// Refused once already (a 429 without `Retry-After`) in this layer.
    refused: bool,
}

impl Job {
    fn new(id: usize, url: Url) -> Self {
        Self {
            id,
            orig: url.clone(),
            url,
            hops: 0,
            retries: 0,
            chain: Vec::new(),
            redirects: Vec::new(),
            started_at: None,
            sent: None,
            elapsed: Duration::ZERO,
            probe: false,
            refused: false,
        }
    }

    /// A copy of the job's identity, to report it if its request task dies.
    fn shadow(&self) -> Self {
        Self {
            id: self.id,
            orig: self.orig.clone(),
            url: self.url.clone(),
            hops: self.hops,
            // A shadow never retries: its failure is final.
            retries: u32::MAX,
            chain: Vec::new(),
            redirects: Vec::new(),
            started_at: self.started_at,
            sent: self.sent,
            elapsed: self.elapsed,
            probe: self.probe,
            refused: self.refused,
        }
    }
}

struct Host {
    origin: String,
    queue: HostQueue,
    in_flight: usize,
    next_start: Instant,
    robots: Option<Arc<RobotsRules>>,
    robots_pending: bool,
    /// The delay between two requests now: `floor` paced by `pace`.
    delay: Duration,
    /// `--delay`, or the robots.txt Crawl-delay when longer.
    floor: Duration,
    pace: Pace,
    /// Paced above the floor at some point in this partition.
    slowed: bool,
    /// Its answers in this partition, for the summary.
    tally: tally::Tally,
    pages: u64,
    /// Paused, probed or found down (see [`breaker`]).
    breaker: Breaker,
    in_heap: bool,
    /// The instant and key of its entry in the heap, when in it.
    heap_at: Instant,
    heap_key: u64,
    /// When the host's latest request actually went out (µs since `epoch`),
    /// stamped by the request task itself: a task that starts late on a busy
    /// machine must not make the next request follow it closer than the delay.
    sent: Arc<SendClock>,
}

// Both variants are large and short-lived (one per request in flight); boxing buys nothing.
#[allow(clippy::large_enum_variant)]
enum Done {
    Robots { host: usize, resp: Result<Response, (ErrorKind, String)> },
    Page { host: usize, job: Job, result: Result<Response, (ErrorKind, String)> },
}

struct State<'a> {
    f: &'a Fetcher,
    urls: &'a dyn UrlSource,
    /// Input ids grouped by host; each host's queue is a range of it.
    order: Vec<u32>,
    epoch: Instant,
    hosts: Vec<Host>,
    by_origin: HashMap<String, usize>,
    heap: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    seq: u64,
    outbox: Vec<Fetched>,
    report: PartitionFetch,
    inflight: FuturesUnordered<Tracked>,
    /// Start of every request in flight, by token: the youngest tells
    /// whether the partition still has active work (see [`tail`]).
    starts: std::collections::BTreeSet<(Instant, u64)>,
    started: HashMap<u64, Instant>,
    tokens: u64,
    /// This partition's place in its layer's tail, if stragglers are on.
    tail: Option<TailSeat>,
    /// Why the partition ended with URLs left: its deadline, or its tail.
    ended_early: Option<&'static str>,
}

/// Runs the partition to completion (or `deadline`); see the module doc.
pub async fn run(
    f: &Fetcher,
    urls: &dyn UrlSource,
    follows: impl Fn(&Url) -> bool + Send,
    deadline: Option<std::time::Instant>,
    tail: Option<TailSeat>,
    out: Sender<Fetched>,
) -> PartitionFetch {
    let deadline = deadline.map(Instant::from_std);
    let mut st = State {
        f,
        urls,
        order: Vec::new(),
        hosts: Vec::new(),
        by_origin: HashMap::new(),
        heap: BinaryHeap::new(),
        seq: 0,
        outbox: Vec::new(),
        report: PartitionFetch::default(),
        inflight: FuturesUnordered::new(),
        starts: std::collections::BTreeSet::new(),
        started: HashMap::new(),
        tokens: 0,
        tail,
        epoch: f.epoch,
        ended_early: None,
    };
    st.queue_input();
    // Every host's name looked up at once, ahead of its first request.
    let names = st.dns_names();
    if let Some(dns) = &f.dns {
        dns.prefetch(names.clone());
    }
    let mut permit: Option<OwnedSemaphorePermit> = None;
    loop {
        for done in st.outbox.drain(..) {
            if out.send(done).await.is_err() {
                // The consumer is gone (the run is stopping): nothing left to report to.
                return st.report;
            }
        }
        let now = Instant::now();
        // A run whose lease could not be renewed stops as at a deadline.
        let stopped = deadline.is_some_and(|d| now >= d) || f.fenced();
        if !stopped {
            while let Some(&Reverse((t, key, h))) = st.heap.peek() {
                if !st.live(key, h) {
                    st.heap.pop();
                    continue;
                }
                if t > now {
                    break;
                }
                let Some(p) = permit.take().or_else(|| Arc::clone(&f.global).try_acquire_owned().ok()) else {
                    break;
                };
                st.heap.pop();
                st.hosts[h].in_heap = false;
                let ready = st.ready_at(h, now);
                if ready > now {
                    // The host's turn moved later while it waited in the heap
                    // (a pause, a Crawl-delay): queue it again.
                    permit = Some(p);
                    st.reschedule(h, now);
                    continue;
                }
                permit = st.dispatch(h, p, now);
                st.reschedule(h, now);
            }
        }
        if !st.outbox.is_empty() {
            continue;
        }
        if st.inflight.is_empty() && (stopped || st.heap.is_empty()) {
            if stopped {
                st.ended_early = Some(if f.fenced() { "lease-lost" } else { "layer-timeout" });
            }
            break;
        }
        // Only stragglers left here, and nowhere else in the layer: end it.
        let (quiet, tail_wake) = st.tail_check(now, stopped);
        if quiet && st.tail.as_ref().is_some_and(TailSeat::layer_in_tail) {
            st.hand_over();
            st.ended_early = Some("straggler");
            break;
        }
        let next = st.heap.peek().map(|r| r.0 .0);
        let want_permit = !stopped && permit.is_none() && next.is_some_and(|t| t <= now);
        let wake = if stopped { None } else { next.filter(|&t| t > now) };
        let wake = match (wake, deadline) {
            (Some(w), Some(d)) if !stopped => Some(w.min(d)),
            (None, Some(d)) if !stopped => Some(d),
            (w, _) => w,
        };
        let wake = match (wake, tail_wake) {
            (Some(w), Some(t)) => Some(w.min(t)),
            (w, t) => w.or(t),
        };
        let watch_tail = quiet && st.tail.is_some();
        tokio::select! {
            Some((token, done)) = st.inflight.next(), if !st.inflight.is_empty() => {
                st.untrack(token);
                st.complete(done, &follows);
            }
            p = Arc::clone(&f.global).acquire_owned(), if want_permit => permit = p.ok(),
            () = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => {}
            () = async { if let Some(t) = st.tail.as_mut() { t.changed().await } }, if watch_tail => {}
            // The run's fence running out stops it at once, not at the next
            // host's turn (which a Crawl-delay may put far off).
            () = async { if let Some(fc) = &f.fence { fc.ran_out().await } }, if !stopped && f.fence.is_some() => {}
        }
    }
    if let Ok(mut next) = f.next_start.lock() {
        for host in &st.hosts {
            next.insert(host.origin.clone(), host.next_start);
        }
    }
    if let Ok(mut paces) = f.paces.lock() {
        for host in &st.hosts {
            paces.insert(host.origin.clone(), host.pace.clone());
        }
    }
    if let Ok(mut breakers) = f.breakers.lock() {
        for host in &st.hosts {
            breakers.insert(host.origin.clone(), host.breaker.clone());
        }
    }
    st.report.hosts_slowed = st.hosts.iter().filter(|h| h.slowed).count() as u64;
    (st.report.host_paces, st.report.late_host) = st.host_paces();
    if let Some(dns) = &f.dns {
        st.report.dns = dns.take_counts(names.iter().map(String::as_str));
    }
    if let Some(pool) = &f.proxies {
        // Every host of the partition, --resolve'd and IP literals included.
        let hosts: Vec<String> = st
            .hosts
            .iter()
            .filter_map(|h| Url::parse(&h.origin).ok()?.host_str().map(str::to_ascii_lowercase))
            .collect();
        st.report.proxies = pool.take_counts(hosts.iter().map(String::as_str));
    }
    st.carry_the_rest();
    st.report.carried.sort_unstable();
    st.report
}

impl State<'_> {
    fn host_index(&mut self, url: &Url) -> usize {
        let origin = origin_of(url);
        if let Some(&h) = self.by_origin.get(&origin) {
            return h;
        }
        let robots = self.f.robots.get(&origin);
        let floor = robots_delay(self.f.cfg.politeness.min_delay(), robots.as_deref());
        let pace = self.f.paces.lock().ok().and_then(|m| m.get(&origin).cloned()).unwrap_or_default();
        let mut breaker = self.f.breakers.lock().ok().and_then(|m| m.get(&origin).cloned()).unwrap_or_default();
        breaker.retest();
        let delay = pace.delay(self.limits(floor));
        // Paced above its floor by what an earlier layer saw: slowed here too.
        let slowed = pace.slowed(self.limits(floor));
        let earlier = self.f.next_start.lock().ok().and_then(|m| m.get(&origin).copied());
        self.hosts.push(Host {
            origin: origin.clone(),
            queue: HostQueue::default(),
            in_flight: 0,
            next_start: earlier.unwrap_or_else(Instant::now),
            robots,
            robots_pending: false,
            delay,
            floor,
            pace,
            slowed,
            tally: tally::Tally::default(),
            pages: 0,
            breaker,
            in_heap: false,
            heap_at: Instant::now(),
            heap_key: 0,
            sent: self.f.send_clock(&origin),
        });
        let h = self.hosts.len() - 1;
        self.by_origin.insert(origin, h);
        h
    }

    /// Queues every input URL on its host, in input order per host: a
    /// counting sort of the ids by host into `order`.
    fn queue_input(&mut self) {
        const NONE: u32 = u32::MAX;
        // Ids are held as u32: a partition of more URLs than that would not
        // fit in memory anyway; the rest are carried over, not lost.
        // A page budget keeps the first URLs (the input is written best
        // first), and carries the rest over, as over-long inputs are.
        let n = self.urls.len().min(NONE as usize).min(self.urls.budget().unwrap_or(usize::MAX));
        self.carry(n..self.urls.len(), "max-pages");
        let mut host_of = Vec::with_capacity(n);
        let adopting = !self.f.handover.is_empty();
        // Retries that the layer before left waiting (their Retry-After or
        // backoff not over yet), by URL fingerprint.
        let mut waits = self.f.retry_at.lock().map(|mut m| std::mem::take(&mut *m)).unwrap_or_default();
        for id in 0..n {
            let (text, retries) = match self.urls.start(id) {
                Ok(started) => started,
                Err(e) => {
                    tracing::error!(id, "input URL cannot be read ({e}); carried over");
                    self.carry([id], "unreadable");
                    host_of.push(NONE);
                    continue;
                }
            };
            host_of.push(match Url::parse(&text) {
                // A request the layer before handed over is adopted, not queued.
                Ok(url) if adopting && self.adopt(id, &url) => NONE,
                Ok(url) if !waits.is_empty() && waits.contains_key(&crate::urlnorm::fingerprint(&url)) => {
                    let until = waits.remove(&crate::urlnorm::fingerprint(&url)).expect("looked up above");
                    let h = self.host_index(&url);
                    let mut job = Job::new(id, url);
                    job.retries = retries;
                    self.hosts[h].queue.waiting.push((until, Box::new(job)));
                    NONE
                }
                Ok(url) => u32::try_from(self.host_index(&url)).unwrap_or(NONE),
                Err(e) => {
                    tracing::warn!(url = text, "input URL does not parse ({e}); skipped");
                    NONE
                }
            });
        }
        let mut counts = vec![0usize; self.hosts.len()];
        for &h in &host_of {
            if let Some(c) = counts.get_mut(h as usize) {
                *c += 1;
            }
        }
        let mut start = 0;
        for (host, &c) in self.hosts.iter_mut().zip(&counts) {
            (host.queue.next, host.queue.end) = (start, start);
            start += c;
        }
        self.order = vec![0; start];
        for (id, &h) in host_of.iter().enumerate() {
            if let Some(host) = self.hosts.get_mut(h as usize) {
                self.order[host.queue.end] = u32::try_from(id).unwrap_or(NONE);
                host.queue.end += 1;
            }
        }
        let now = Instant::now();
        for h in 0..self.hosts.len() {
            self.reschedule(h, now);
        }
    }
}

impl State<'_> {
    /// The names of this partition's hosts that DNS answers for (not IP
    /// literals, not `--resolve` overrides).
    fn dns_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .hosts
            .iter()
            .filter_map(|h| Url::parse(&h.origin).ok())
            .filter_map(|u| match u.host() {
                Some(url::Host::Domain(d)) => Some(d.to_ascii_lowercase()),
                _ => None,
            })
            .filter(|d| !self.f.cfg.resolve.iter().any(|r| r.matches(d)))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The pacing limits of a host whose floor is `floor`.
    fn limits(&self, floor: Duration) -> pace::Limits {
        pace::Limits {
            floor,
            factor: self.f.cfg.politeness.delay_factor,
            cap: self.f.cfg.politeness.max_delay.0.max(floor),
            connections: u32::try_from(self.f.cfg.politeness.per_host).unwrap_or(u32::MAX),
        }
    }

    /// Sets host `h`'s delay from its floor and pace.
    fn repace(&mut self, h: usize) {
        let limits = self.limits(self.hosts[h].floor);
        let host = &mut self.hosts[h];
        host.delay = host.pace.delay(limits);
        host.slowed |= host.pace.slowed(limits);
        let ms = u64::try_from(host.delay.as_millis()).unwrap_or(u64::MAX);
        self.report.max_delay_ms = self.report.max_delay_ms.max(ms);
    }
}

fn robots_delay(base: Duration, rules: Option<&RobotsRules>) -> Duration {
    rules.and_then(RobotsRules::crawl_delay).map_or(base, |d| d.max(base))
}
