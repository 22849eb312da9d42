//! Stragglers: the few slow URLs that must not hold a whole layer.
//!
//! A layer ends when all its partitions are done. On real sites most of a
//! layer finishes in seconds, and then one page trickling its body until the
//! timeout, or one URL waiting out a `Retry-After`, holds everything. So
//! each partition tells a [`LayerTail`] whether it still has *active* work:
//! a request in flight for less than `straggler_after`, a host that may
//! start a request within `straggler_after`, or a host whose next request
//! waits for nothing but its pace. A straggler is a slow request (or a URL
//! waiting out its own retry, or its host's pause by the breaker), never a
//! URL waiting for its host's turn: the pace is the host's speed, and the
//! layer after would wait for it just the same, after its own fixed costs.
//! (Counted as stragglers, the URLs of a host paced at 2 s went on one
//! layer at a time: in the real-site bench six catch-up layers fetched one
//! URL each, two seconds a layer.) When no partition of the layer has
//! active work (the layer's tail), every partition ends: its queued URLs are
//! carried into the next layer with their own depth, and its requests in
//! flight are handed over ([`Handover`]) to the next layer's scheduler,
//! which adopts them instead of requesting the URL again. The request keeps
//! its global permit and counts against its host's connections in the next
//! layer, so politeness is the same as if the layer had waited. If the
//! process dies, the hand-over is lost with it and the carried URL is simply
//! requested again: the next layer's input is the same either way.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{BoxFuture, FutureExt};
use tokio::sync::watch;
use tokio::time::Instant;
use url::Url;

use super::{Done, State};

/// How many times the layer's median request time a request must have
/// been in flight to straggle (like speculative execution in MapReduce,
/// slowness is judged against the layer's own tasks).
const MEDIAN_FACTOR: u32 = 8;
/// Buckets of the request-time histogram: bucket `b` holds times under 2^b ms.
const BUCKETS: usize = 24;

/// The partitions of one layer that still have active work, and how long
/// the layer's requests take.
#[derive(Debug)]
pub struct LayerTail {
    busy: watch::Sender<usize>,
    floor: Duration,
    times: [std::sync::atomic::AtomicU64; BUCKETS],
    /// A layer at or past the depth ([`LayerTail::at_depth`]): it ends
    /// early only once `next_work` is set.
    at_depth: bool,
    /// A page of the layer had links within the depth: a catch-up layer
    /// follows, with work to do beside the stragglers.
    next_work: AtomicBool,
}

impl LayerTail {
    /// A layer of `partitions` map tasks, each of which takes one
    /// [`TailSeat`]; work straggles when older or later than
    /// [`LayerTail::after`], never less than `floor`.
    #[must_use]
    pub fn new(partitions: usize, floor: Duration) -> Arc<Self> {
        Arc::new(Self::build(partitions, floor, false))
    }

    fn build(partitions: usize, floor: Duration, at_depth: bool) -> Self {
        Self {
            busy: watch::Sender::new(partitions),
            floor,
            times: Default::default(),
            at_depth,
            next_work: AtomicBool::new(false),
        }
    }

    /// The tail of a layer at or past the depth, which has no next layer of
    /// its own: it hands its stragglers on only when one of its pages had
    /// links within the depth ([`LayerTail::next_has_work`]), so that the
    /// catch-up layer that fetches them runs beside the stragglers.
    /// Otherwise it waits for them, as the last layer does.
    #[must_use]
    pub fn at_depth(partitions: usize, floor: Duration) -> Arc<Self> {
        Arc::new(Self::build(partitions, floor, true))
    }

    /// A page of the layer had links within the depth.
    pub fn next_has_work(&self) {
        if !self.next_work.swap(true, Ordering::Relaxed) {
            // Wakes the partitions waiting in their tail.
            self.busy.send_modify(|_| {});
        }
    }

    /// Whether the layer may end with stragglers left.
    fn may_hand_on(&self) -> bool {
        !self.at_depth || self.next_work.load(Ordering::Relaxed)
    }

    /// Records how long a finished request took.
    pub fn record(&self, took: Duration) {
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        let b = (64 - ms.leading_zeros() as usize).min(BUCKETS - 1);
        self.times[b].fetch_add(1, Ordering::Relaxed);
    }

    /// The straggler threshold now: `MEDIAN_FACTOR` times the layer's
    /// median request time so far (to the histogram's power of two), and
    /// at least the floor (`--straggler-after`).
    #[must_use]
    pub fn after(&self) -> Duration {
        let counts: Vec<u64> = self.times.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        let mut seen = 0;
        for (b, c) in counts.iter().enumerate() {
            seen += c;
            if total > 0 && seen * 2 >= total {
                let median = Duration::from_millis(1 << b);
                return self.floor.max(median * MEDIAN_FACTOR);
            }
        }
        self.floor
    }

    /// One partition's seat, counted active until it says otherwise or is dropped.
    #[must_use]
    pub fn seat(self: &Arc<Self>) -> TailSeat {
        TailSeat { rx: self.busy.subscribe(), tail: Arc::clone(self), active: true }
    }

    /// Partitions still busy (for tests and logs).
    #[must_use]
    pub fn busy(&self) -> usize {
        *self.busy.borrow()
    }
}

/// A partition's place in its layer's [`LayerTail`].
#[derive(Debug)]
pub struct TailSeat {
    tail: Arc<LayerTail>,
    rx: watch::Receiver<usize>,
    active: bool,
}

impl TailSeat {
    /// How old a request, or how far off a host's next start, makes it a
    /// straggler (see [`LayerTail::after`]).
    #[must_use]
    pub fn after(&self) -> Duration {
        self.tail.after()
    }

    /// Records how long a finished request took.
    pub fn record(&self, took: Duration) {
        self.tail.record(took);
    }

    /// Records whether this partition has active work.
    pub fn set_active(&mut self, active: bool) {
        if active != self.active {
            self.active = active;
            self.tail.busy.send_modify(|n| if active { *n += 1 } else { *n = n.saturating_sub(1) });
        }
    }

    /// True when no partition of the layer has active work.
    #[must_use]
    pub fn layer_in_tail(&self) -> bool {
        *self.rx.borrow() == 0 && self.tail.may_hand_on()
    }

    /// Waits until some partition changes its state.
    pub async fn changed(&mut self) {
        if self.rx.changed().await.is_err() {
            // The layer's tail object is gone: nothing will change any more.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for TailSeat {
    fn drop(&mut self) {
        self.set_active(false);
    }
}

/// A request handed over from one layer to the next.
pub(super) struct Handed {
    /// When the request started (it straggles again in the next layer if it
    /// is still slow).
    pub(super) started: Instant,
    pub(super) request: BoxFuture<'static, Done>,
}

/// Requests in flight handed over between layers, by the fingerprint of the
/// URL they were started for (run-wide, on the fetcher).
#[derive(Clone, Default)]
pub struct Handover(Arc<Mutex<HashMap<u64, Handed>>>);

impl Handover {
    pub(super) fn put(&self, fingerprint: u64, handed: Handed) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(fingerprint, handed);
        }
    }

    pub(super) fn take(&self, fingerprint: u64) -> Option<Handed> {
        self.0.lock().ok().and_then(|mut m| m.remove(&fingerprint))
    }

    /// Requests waiting to be adopted.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.lock().map_or(0, |m| m.len())
    }

    /// Whether none is waiting.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every request not adopted (after the last layer): their
    /// permits go back, and their URLs stay carried.
    pub fn clear(&self) {
        if let Ok(mut m) = self.0.lock() {
            m.clear();
        }
    }
}

/// A request in flight, with what the tail rule needs to know of it.
pub(super) struct Tracked {
    token: u64,
    started: Instant,
    /// For a page request: its input id and the fingerprint of the URL it
    /// was started for (robots.txt requests have none).
    page: Option<(usize, u64)>,
    request: BoxFuture<'static, Done>,
}

impl Future for Tracked {
    type Output = (u64, Done);
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let token = self.token;
        self.request.as_mut().poll(cx).map(|done| (token, done))
    }
}

impl State<'_> {
    /// Puts a request in flight; `page` is its input id and URL fingerprint.
    pub(super) fn track(&mut self, request: BoxFuture<'static, Done>, page: Option<(usize, u64)>, started: Instant) {
        self.tokens += 1;
        self.starts.insert((started, self.tokens));
        self.started.insert(self.tokens, started);
        self.inflight.push(Tracked { token: self.tokens, started, page, request });
    }

    /// Forgets a request whose result was taken, and counts how long it took.
    pub(super) fn untrack(&mut self, token: u64) {
        if let Some(start) = self.started.remove(&token) {
            self.starts.remove(&(start, token));
            if let Some(seat) = &self.tail {
                seat.record(start.elapsed());
            }
        }
    }

    /// Whether this partition has only stragglers left (and tells its seat),
    /// and when to look again: when the youngest request becomes a
    /// straggler, or a host's turn comes within reach.
    pub(super) fn tail_check(&mut self, now: Instant, stopped: bool) -> (bool, Option<Instant>) {
        let Some(after) = self.tail.as_ref().map(TailSeat::after) else { return (false, None) };
        let next_turn = if stopped { None } else { self.heap.peek().map(|r| r.0 .0) };
        let turn_soon = next_turn.is_some_and(|t| t <= now + after);
        let youngest = self.starts.last().map(|&(t, _)| t);
        let young = youngest.is_some_and(|t| now.saturating_duration_since(t) < after);
        // Looked for only when nothing else is active: it scans the heap.
        let quiet = !turn_soon && !young && self.outbox.is_empty() && (stopped || !self.paced(now));
        if let Some(seat) = self.tail.as_mut() {
            seat.set_active(!quiet);
        }
        let wake = [youngest.filter(|_| young).map(|t| t + after), next_turn.filter(|_| !turn_soon).map(|t| t - after)]
            .into_iter()
            .flatten()
            .min();
        (quiet, wake)
    }

    /// Whether a host waits for nothing but its pace (its delay, its
    /// Crawl-delay, the rate its refusals allow) to start its next request:
    /// work that may start now but for the host's turn, no pause of its
    /// breaker, no retry's own wait.
    fn paced(&self, now: Instant) -> bool {
        self.heap.iter().any(|&std::cmp::Reverse((_, key, h))| {
            let host = &self.hosts[h];
            self.live(key, h)
                && !host.robots_pending
                && !host.breaker.is_down()
                && host.breaker.paused_until().is_none_or(|until| until <= now)
                && host.queue.ready_at(now) == Some(now)
        })
    }

    /// Ends the partition's layer in its tail: page requests in flight go to
    /// the hand-over for the next layer and their URLs are carried; queued
    /// URLs are carried by the caller. A robots.txt request in flight is
    /// dropped (its host's URLs are all carried).
    pub(super) fn hand_over(&mut self) {
        let waiting: usize = self.hosts.iter().map(|h| h.queue.len()).sum();
        self.report.stragglers_waiting += waiting as u64;
        for t in std::mem::take(&mut self.inflight) {
            if let Some((id, fingerprint)) = t.page {
                self.f.handover.put(fingerprint, Handed { started: t.started, request: t.request });
                self.report.carried.push(id);
                self.report.stragglers_in_flight += 1;
            }
        }
        self.starts.clear();
        self.started.clear();
        if waiting + self.report.stragglers_in_flight as usize > 0 {
            tracing::info!(
                in_flight = self.report.stragglers_in_flight,
                waiting,
                "stragglers go on into the next layer"
            );
        }
    }

    /// Adopts the request handed over for input `id` (URL `url`), if any:
    /// it counts against its host as if it had been started here.
    pub(super) fn adopt(&mut self, id: usize, url: &Url) -> bool {
        let Some(handed) = self.f.handover.take(crate::urlnorm::fingerprint(url)) else { return false };
        let h = self.host_index(url);
        self.hosts[h].in_flight += 1;
        self.report.adopted += 1;
        let request = handed
            .request
            .map(move |done| match done {
                Done::Page { mut job, result, .. } => {
                    job.id = id;
                    Done::Page { host: h, job, result }
                }
                robots @ Done::Robots { .. } => robots,
            })
            .boxed();
        self.track(request, Some((id, crate::urlnorm::fingerprint(url))), handed.started);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_follows_the_layers_median_request_time_above_its_floor() {
        let tail = LayerTail::new(1, Duration::from_secs(1));
        assert_eq!(tail.after(), Duration::from_secs(1), "no request yet: the floor");
        for _ in 0..10 {
            tail.record(Duration::from_millis(5));
        }
        assert_eq!(tail.after(), Duration::from_secs(1), "fast requests: the floor");
        for _ in 0..20 {
            tail.record(Duration::from_millis(300));
        }
        // Median in the 256-511 ms bucket: 8 x 512 ms.
        assert_eq!(tail.after(), Duration::from_millis(4096));
    }

    #[tokio::test]
    async fn the_layer_is_in_its_tail_when_every_seat_is_quiet_or_gone() {
        let tail = LayerTail::new(3, Duration::from_secs(1));
        let (mut a, mut b, c) = (tail.seat(), tail.seat(), tail.seat());
        assert_eq!(tail.busy(), 3);
        a.set_active(false);
        a.set_active(false);
        assert_eq!(tail.busy(), 2, "a seat counts once");
        drop(c);
        assert_eq!(tail.busy(), 1, "a partition that ended is not busy");
        assert!(!a.layer_in_tail());
        b.set_active(false);
        a.changed().await;
        assert!(a.layer_in_tail() && b.layer_in_tail());
        // A straggler's result can make a partition busy again.
        b.set_active(true);
        assert!(!a.layer_in_tail());
        drop(b);
        assert!(a.layer_in_tail());
        drop(a);
        assert_eq!(tail.busy(), 0, "never below zero");
    }

    #[tokio::test]
    async fn the_layer_at_the_depth_hands_on_only_once_a_page_had_links_within_it() {
        let tail = LayerTail::at_depth(2, Duration::from_secs(1));
        let (mut a, mut b) = (tail.seat(), tail.seat());
        a.set_active(false);
        b.set_active(false);
        b.changed().await;
        assert!(!b.layer_in_tail(), "only stragglers left, but no catch-up layer to hand them to: it waits");
        assert!(!b.rx.has_changed().unwrap_or(true));
        tail.next_has_work();
        assert!(b.rx.has_changed().unwrap_or(false), "a partition waiting in its tail wakes up");
        b.changed().await;
        assert!(a.layer_in_tail() && b.layer_in_tail(), "links within the depth: a catch-up layer follows");
        tail.next_has_work();
        assert!(!b.rx.has_changed().unwrap_or(true), "said once");
    }
}
