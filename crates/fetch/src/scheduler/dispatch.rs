//! Starting requests: when a host may start its next one (its turn, its
//! delay, its pause, its breaker), putting it back in the heap, and
//! sending the request itself through the fetcher's exchange.

use std::cmp::Reverse;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;
use url::Url;

use super::queue::Queued;
use super::request::{spawn_request, wait_for_slot, NEVER};
use super::{robots_delay, Admit, Done, Job, State, ADMIT_AGAIN};
use crate::ErrorKind;

impl State<'_> {
    /// Queues a job coming back on host `h` (from [`Self::host_index`]).
    pub(super) fn enqueue_again(&mut self, h: usize, job: Job) {
        if self.hosts[h].breaker.is_down() {
            let detail = self.down_detail(h);
            self.finish(job, None, Some((ErrorKind::HostDown, detail)), None);
            return;
        }
        self.hosts[h].queue.again.push_back(Box::new(job));
        self.reschedule(h, Instant::now());
    }

    /// The earliest instant the host's next request may start: its turn,
    /// the delay after the latest request as actually sent, the end of its
    /// pause, and its first job that may start.
    pub(super) fn ready_at(&self, h: usize, now: Instant) -> Instant {
        let host = &self.hosts[h];
        let mut at = match host.sent.slot.load(Ordering::Acquire) {
            NEVER => host.next_start,
            us => host.next_start.max(self.epoch + Duration::from_micros(us) + host.delay),
        };
        if let Some(until) = host.breaker.paused_until() {
            at = at.max(until);
        }
        if let Some(first) = host.queue.ready_at(now) {
            at = at.max(first);
        }
        at
    }

    /// Puts the host in the heap if it has work it may start, or moves its
    /// entry earlier when work that may start sooner came in (a retry at
    /// the host's next turn beside one that waits out a `Retry-After`:
    /// keyed at the later one, the host held the sooner one 5 s in the
    /// real-site bench). The entry it had stays in the heap, superseded
    /// (see [`Self::live`]).
    pub(super) fn reschedule(&mut self, h: usize, now: Instant) {
        let host = &self.hosts[h];
        let room = host.breaker.has_room(host.in_flight, self.f.cfg.politeness.per_host);
        if host.queue.is_empty() || host.robots_pending || !room {
            return;
        }
        let at = self.ready_at(h, now).max(now);
        if host.in_heap && at >= host.heap_at {
            return;
        }
        self.seq += 1;
        let host = &mut self.hosts[h];
        (host.in_heap, host.heap_at, host.heap_key) = (true, at, self.seq);
        self.heap.push(Reverse((at, self.seq, h)));
    }

    /// Whether a heap entry (its key and host) is its host's entry, not
    /// one superseded by an earlier entry or left after the host was taken.
    pub(super) fn live(&self, key: u64, h: usize) -> bool {
        let host = &self.hosts[h];
        host.in_heap && host.heap_key == key
    }

    /// Starts the host's next request; returns the permit if none started.
    pub(super) fn dispatch(
        &mut self,
        h: usize,
        permit: OwnedSemaphorePermit,
        now: Instant,
    ) -> Option<OwnedSemaphorePermit> {
        let f = self.f;
        if self.hosts[h].breaker.is_down() {
            self.fail_host(h);
            return Some(permit);
        }
        let host = &mut self.hosts[h];
        if !host.breaker.allows(host.in_flight, f.cfg.politeness.per_host, now) {
            return Some(permit);
        }
        if self.hosts[h].robots.is_none() {
            if let Some(cached) = f.robots.get(&self.hosts[h].origin) {
                self.hosts[h].floor = robots_delay(f.cfg.politeness.min_delay(), Some(&cached));
                self.repace(h);
                let host = &mut self.hosts[h];
                host.robots = Some(cached);
            } else {
                let host = &mut self.hosts[h];
                host.robots_pending = true;
                host.in_flight += 1;
                host.next_start = now + host.delay;
                self.report.robots_requests += 1;
                self.report.requests += 1;
                let url = Url::parse(&format!("{}/robots.txt", host.origin));
                let (exchange, max) = (Arc::clone(&f.exchange), f.cfg.max_body.min(512 * 1024));
                let (sent, epoch, delay) = (Arc::clone(&host.sent), self.epoch, host.delay);
                let fence = f.fence.clone();
                let request = async move {
                    let resp = match url {
                        Ok(u) => {
                            let get = async {
                                wait_for_slot(&sent, epoch, delay).await;
                                exchange.get(crate::Request::get(&u, max)).await
                            };
                            fenced(fence, get).await
                        }
                        Err(e) => Err((ErrorKind::Connect, format!("no robots.txt URL for this origin: {e}"))),
                    };
                    Done::Robots { host: h, resp }
                };
                let lost = move |reason: String| Done::Robots { host: h, resp: Err((ErrorKind::Internal, reason)) };
                let request = spawn_request(request, lost, permit);
                self.track(request, None, now);
                return None;
            }
        }
        let rules = Arc::clone(self.hosts[h].robots.as_ref().expect("robots set above"));
        let probe = self.hosts[h].breaker.probing();
        loop {
            let host = &mut self.hosts[h];
            let next = if probe { host.queue.pop_probe(&self.order, now) } else { host.queue.pop(&self.order, now) };
            let Some(q) = next else { break };
            let mut job = match q {
                Queued::Again(job) => *job,
                // It parsed when it was queued; the same text parses again.
                Queued::Fresh(id) => match self.fresh_job(id) {
                    Some(job) => job,
                    None => continue,
                },
            };
            if !rules.allows(&job.url) {
                if let Some(err) = &rules.unreachable {
                    // No robots.txt answer at all: the page fails for the same reason.
                    self.finish(job, None, Some(err.clone()), None);
                    continue;
                }
                let detail = format!("robots.txt of {} disallows this URL; no request was sent", self.hosts[h].origin);
                self.finish(job, None, Some((ErrorKind::Robots, detail)), None);
                continue;
            }
            // Asked once per try until it is sent: a URL the source holds
            // back waits apart, as a retry does, and never holds its host.
            if job.started_at.is_none() {
                match self.urls.admit(job.id, &job.orig) {
                    Admit::Now => {}
                    Admit::Later => {
                        self.hosts[h].queue.hold(job, now + ADMIT_AGAIN);
                        continue;
                    }
                    Admit::Never => {
                        self.report.declined.push(job.id);
                        continue;
                    }
                }
            }
            if f.cfg.max_pages_per_host.is_some_and(|m| self.hosts[h].pages >= m) {
                if job.retries > 0 {
                    self.report.retried.push((job.id, job.retries));
                }
                self.carry([job.id], "max-pages-per-host");
                continue;
            }
            let host = &mut self.hosts[h];
            host.pages += 1;
            host.in_flight += 1;
            if probe {
                host.breaker.probe_sent();
                job.probe = true;
            }
            host.next_start = now + host.delay;
            self.report.requests += 1;
            job.started_at.get_or_insert_with(SystemTime::now);
            job.sent = Some(now);
            let (exchange, max) = (Arc::clone(&f.exchange), f.cfg.max_body);
            let shadow = job.shadow();
            let (sent, epoch, delay) = (Arc::clone(&self.hosts[h].sent), self.epoch, self.hosts[h].delay);
            let validators = self.urls.validators(&job.url);
            let fence = f.fence.clone();
            let request = async move {
                let req = crate::Request { url: &job.url, max_body: max, validators: validators.as_ref() };
                // The wait for the host's slot too: it may be long (a
                // Crawl-delay), and the fence may run out meanwhile.
                let get = async {
                    wait_for_slot(&sent, epoch, delay).await;
                    exchange.get(req).await
                };
                let result = fenced(fence, get).await;
                Done::Page { host: h, job, result }
            };
            let page = Some((shadow.id, crate::urlnorm::fingerprint(&shadow.orig)));
            let lost =
                move |reason: String| Done::Page { host: h, job: shadow, result: Err((ErrorKind::Internal, reason)) };
            let request = spawn_request(request, lost, permit);
            self.track(request, page, now);
            return None;
        }
        Some(permit)
    }
}

/// `request`, unless the run's fence has run out: the slot may come after
/// it ran out (a process stopped and resumed), and then nothing goes out;
/// a request waiting for its slot, or in flight, when it runs out is
/// abandoned (its connection
/// dropped), so no request outlives the fence (docs/src/cluster.md, "One
/// run per data location"; a rendered page's own requests go through the
/// same exchange).
async fn fenced<T>(
    fence: Option<Arc<crate::fence::Fence>>,
    request: impl std::future::Future<Output = Result<T, (ErrorKind, String)>>,
) -> Result<T, (ErrorKind, String)> {
    let Some(fence) = fence else { return request.await };
    if !fence.holds() {
        return Err((ErrorKind::Internal, "the run's lease could not be renewed; no request was sent".into()));
    }
    tokio::select! {
        r = request => r,
        () = fence.ran_out() => {
            Err((ErrorKind::Internal, "the run's lease ran out while the request was in flight: abandoned".into()))
        }
    }
}
