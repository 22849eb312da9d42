//! Which proxy carries a request: the pool's limits, rings and health
//! (docs/src/proxies.md).
//!
//! - **Limits per proxy.** At most `concurrency` requests through a proxy
//!   at once, and at least `delay` between two request starts through it.
//! - **A ring per domain.** A registrable domain's requests go round the
//!   proxies in service, ordered by their measured response time (fastest
//!   first), starting at a place set by the domain's hash: one site's
//!   requests spread over every proxy, and two sites start on different
//!   ones. When the ring's next proxy is at its limits, the next one in
//!   ring order that is free is taken; when none is, the request waits for
//!   the first to free up.
//! - **Health.** A proxy is taken out of service after 3 failures in a row
//!   (it refused the connection or the tunnel, asked for credentials, or
//!   answered 502/504) and tried again later: once its time out is over, a
//!   TCP connection to it is the health check, and the next request through
//!   it the trial. A trial that fails takes it out for twice as long (up to
//!   10 minutes); one that succeeds puts it back in full service. Every
//!   proxy is checked the same way before the first request.
//!
//! Politeness is not the pool's business: the scheduler spaces requests
//! per target host before any proxy is chosen, so it holds whatever proxy
//! carries them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::ProxyUse;

/// Failures in a row that take a proxy out of service.
pub const EVICT_AFTER: u32 = 3;
/// Longest time out of service.
pub const MAX_TIME_OUT: Duration = Duration::from_secs(600);
/// How long the health check waits for a TCP connection.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);
/// Weight of the newest response time in a proxy's running mean.
const EWMA: f64 = 0.2;
/// The ring order is recomputed from the running means after this many
/// answers (between, it stays put, so a domain's turns stay even).
const RERANK_EVERY: u32 = 64;

/// The pool's limits.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub concurrency: u32,
    pub delay: Duration,
    /// First time out of service; doubles with each failed trial.
    pub retry: Duration,
}

/// One proxy's state.
#[derive(Debug)]
struct Slot {
    in_flight: u32,
    /// No request may start through it before this.
    next_start: Instant,
    /// Running mean of its response times, once measured.
    mean_ms: Option<f64>,
    fails_in_row: u32,
    /// Out of service until then.
    out_until: Option<Instant>,
    /// The current time out, doubled by each failed trial.
    time_out: Duration,
    /// Back from a time out: the next request is the trial.
    on_trial: bool,
    /// A health check is running.
    checking: bool,
}

/// What the pool counted, per target host (taken by the partition that
/// owns the host, like the DNS counts).
type Counts = HashMap<String, Vec<ProxyUse>>;

struct State {
    slots: Vec<Slot>,
    /// Every proxy, fastest first (unmeasured ones first, in configured
    /// order): the order of every domain's ring.
    ranking: Vec<usize>,
    /// Answers since `ranking` was computed.
    answers: u32,
    /// Each domain's place in its ring.
    cursors: HashMap<String, usize>,
    counts: Counts,
    checked: bool,
}

/// The pool's selection and health; the clients live in
/// [`super::ProxyExchange`].
pub struct Pool {
    /// Each proxy's name (its URL without credentials) and TCP address.
    names: Vec<String>,
    targets: Vec<String>,
    limits: Limits,
    state: Mutex<State>,
    /// Woken when a proxy frees up or comes back.
    freed: Notify,
}

/// A request's use of one proxy; report how it went with
/// [`Lease::finish`]. Dropped unfinished (the request was cancelled), it
/// frees the proxy without judging it.
pub struct Lease {
    pool: Arc<Pool>,
    pub index: usize,
    host: String,
    done: bool,
}

/// How a request through a proxy went, for the proxy's health.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// A response came back in this time.
    Answered(Duration),
    /// The proxy failed (see the module's "Health").
    ProxyFailed,
    /// Something that says nothing about the proxy (a target's timeout).
    Neither,
}

impl Pool {
    /// A pool of proxies by name and `host:port`.
    #[must_use]
    pub fn new(names: Vec<String>, targets: Vec<String>, limits: Limits) -> Self {
        let now = Instant::now();
        let ranking = (0..names.len()).collect();
        let slots = names
            .iter()
            .map(|_| Slot {
                in_flight: 0,
                next_start: now,
                mean_ms: None,
                fails_in_row: 0,
                out_until: None,
                time_out: limits.retry,
                on_trial: false,
                checking: false,
            })
            .collect();
        Self {
            names,
            targets,
            limits,
            state: Mutex::new(State {
                ranking,
                answers: 0,
                slots,
                cursors: HashMap::new(),
                counts: HashMap::new(),
                checked: false,
            }),
            freed: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The proxy's name (its URL without credentials).
    #[must_use]
    pub fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// Waits for a proxy for a request to `host` (of `domain`), skipping
    /// `tried`; gives up at `until`.
    ///
    /// # Errors
    /// A sentence saying why no proxy could be had.
    pub async fn acquire(
        self: &Arc<Self>,
        host: &str,
        domain: &str,
        tried: &[usize],
        until: Instant,
    ) -> Result<Lease, String> {
        self.check_all_once().await;
        loop {
            let next = {
                let mut st = self.lock();
                let now = Instant::now();
                match self.pick(&mut st, domain, tried, now) {
                    Pick::Take(i) => {
                        let slot = &mut st.slots[i];
                        slot.in_flight += 1;
                        slot.next_start = now + self.limits.delay;
                        return Ok(Lease { pool: Arc::clone(self), index: i, host: host.to_string(), done: false });
                    }
                    Pick::Check(i) => {
                        st.slots[i].checking = true;
                        Wait::Check(i)
                    }
                    Pick::Wait(at) if at > until => return Err(self.none_left(&st, tried)),
                    Pick::Wait(at) => Wait::Until(at),
                    Pick::None => return Err(self.none_left(&st, tried)),
                }
            };
            match next {
                Wait::Check(i) => self.health_check_due(i).await,
                Wait::Until(at) => {
                    let notified = self.freed.notified();
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
            }
            if Instant::now() >= until {
                let st = self.lock();
                return Err(self.none_left(&st, tried));
            }
        }
    }

    /// The choice for one request, under the lock.
    fn pick(&self, st: &mut State, domain: &str, tried: &[usize], now: Instant) -> Pick {
        let n = st.slots.len();
        // A proxy whose time out is over gets its health check first.
        if let Some(i) = (0..n).find(|&i| {
            let s = &st.slots[i];
            !tried.contains(&i) && !s.checking && s.out_until.is_some_and(|t| t <= now)
        }) {
            return Pick::Check(i);
        }
        let ring: Vec<usize> = st
            .ranking
            .iter()
            .copied()
            .filter(|&i| !tried.contains(&i) && st.slots[i].out_until.is_none() && !st.slots[i].checking)
            .collect();
        if ring.is_empty() {
            if (0..n).any(|i| !tried.contains(&i) && st.slots[i].checking) {
                // Another request is checking one: look again shortly.
                return Pick::Wait(now + Duration::from_millis(20));
            }
            // All out: wait for the first to come back, if any may.
            return (0..n)
                .filter(|i| !tried.contains(i))
                .filter_map(|i| st.slots[i].out_until)
                .min()
                .map_or(Pick::None, Pick::Wait);
        }
        let len = ring.len();
        let cursor = *st.cursors.entry(domain.to_string()).or_insert_with(|| ring_start(domain, len));
        let mut earliest: Option<Instant> = None;
        for step in 0..len {
            let i = ring[(cursor + step) % len];
            let s = &st.slots[i];
            if s.in_flight >= self.limits.concurrency || (s.on_trial && s.in_flight > 0) {
                continue;
            }
            if s.next_start > now {
                earliest = Some(earliest.map_or(s.next_start, |e| e.min(s.next_start)));
                continue;
            }
            st.cursors.insert(domain.to_string(), (cursor + step + 1) % len);
            return Pick::Take(i);
        }
        // Every proxy at its limits: wait for a start time, or for a request
        // to finish (`freed`), checking at least every second.
        Pick::Wait(earliest.unwrap_or_else(|| now + Duration::from_secs(1)))
    }

    fn none_left(&self, st: &State, tried: &[usize]) -> String {
        let out: Vec<&str> =
            (0..st.slots.len()).filter(|i| st.slots[*i].out_until.is_some()).map(|i| self.names[i].as_str()).collect();
        let failed: Vec<&str> = tried.iter().map(|&i| self.names[i].as_str()).collect();
        format!(
            "no proxy could carry the request: {} of {} out of service ({}){}",
            out.len(),
            st.slots.len(),
            out.join(", "),
            if failed.is_empty() { String::new() } else { format!("; failed on {}", failed.join(", ")) }
        )
    }

    /// Checks every proxy once, before the first request.
    async fn check_all_once(&self) {
        {
            let mut st = self.lock();
            if st.checked {
                return;
            }
            st.checked = true;
            for s in &mut st.slots {
                s.checking = true;
            }
        }
        let checks = (0..self.targets.len()).map(|i| async move { (i, tcp_check(&self.targets[i]).await) });
        let results = futures::future::join_all(checks).await;
        let mut st = self.lock();
        for (i, result) in results {
            let slot = &mut st.slots[i];
            slot.checking = false;
            if let Err(e) = result {
                tracing::warn!(
                    "proxy {} failed its health check ({e}): out of service for {:?}",
                    self.names[i],
                    slot.time_out
                );
                slot.out_until = Some(Instant::now() + slot.time_out);
                use_of(&mut st.counts, "", self.names.len(), i).evictions += 1;
            }
        }
        drop(st);
        self.freed.notify_waiters();
    }

    /// Runs the health check of a proxy whose time out is over.
    async fn health_check_due(&self, i: usize) {
        let result = tcp_check(&self.targets[i]).await;
        let mut st = self.lock();
        let slot = &mut st.slots[i];
        slot.checking = false;
        match result {
            Ok(()) => {
                slot.out_until = None;
                slot.on_trial = true;
                slot.fails_in_row = 0;
                tracing::info!("proxy {} passed its health check: on trial", self.names[i]);
            }
            Err(e) => {
                slot.time_out = (slot.time_out * 2).min(MAX_TIME_OUT);
                slot.out_until = Some(Instant::now() + slot.time_out);
                tracing::info!("proxy {} failed its health check ({e}): out for {:?}", self.names[i], slot.time_out);
            }
        }
        drop(st);
        self.freed.notify_waiters();
    }

    fn finish(&self, i: usize, host: &str, verdict: Verdict) {
        let mut st = self.lock();
        let n = self.names.len();
        let now = Instant::now();
        let State { slots, counts, ranking, answers, .. } = &mut *st;
        let slot = &mut slots[i];
        slot.in_flight = slot.in_flight.saturating_sub(1);
        let use_ = use_of(counts, host, n, i);
        match verdict {
            Verdict::Answered(t) => {
                let ms = t.as_secs_f64() * 1e3;
                slot.mean_ms = Some(slot.mean_ms.map_or(ms, |m| m + EWMA * (ms - m)));
                slot.fails_in_row = 0;
                use_.requests += 1;
                use_.ms += ms.round() as u64;
                if std::mem::take(&mut slot.on_trial) {
                    slot.time_out = self.limits.retry;
                    use_.recoveries += 1;
                    tracing::info!("proxy {} is back in service", self.names[i]);
                }
                *answers += 1;
                if *answers >= RERANK_EVERY {
                    *answers = 0;
                    rank(slots, ranking);
                }
            }
            Verdict::ProxyFailed => {
                use_.requests += 1;
                use_.failures += 1;
                slot.fails_in_row += 1;
                if slot.out_until.is_none() && (slot.on_trial || slot.fails_in_row >= EVICT_AFTER) {
                    if std::mem::take(&mut slot.on_trial) {
                        slot.time_out = (slot.time_out * 2).min(MAX_TIME_OUT);
                    }
                    slot.out_until = Some(now + slot.time_out);
                    use_.evictions += 1;
                    tracing::warn!(
                        "proxy {} failed {} times in a row: out of service for {:?}",
                        self.names[i],
                        slot.fails_in_row,
                        slot.time_out
                    );
                }
            }
            Verdict::Neither => use_.requests += 1,
        }
        drop(st);
        self.freed.notify_waiters();
    }

    /// What the pool counted for `hosts` (and for no host: health checks),
    /// removed from the pool; one entry per proxy, in configured order.
    pub fn take_counts<'a>(&self, hosts: impl IntoIterator<Item = &'a str>) -> Vec<ProxyUse> {
        let mut st = self.lock();
        let mut total: Vec<ProxyUse> =
            self.names.iter().map(|n| ProxyUse { proxy: n.clone(), ..ProxyUse::default() }).collect();
        for host in hosts.into_iter().chain([""]) {
            if let Some(uses) = st.counts.remove(host) {
                for (t, u) in total.iter_mut().zip(uses) {
                    t.add(&u);
                }
            }
        }
        total
    }

    /// Whether proxy `i` is in service now (for tests and logs).
    #[must_use]
    pub fn in_service(&self, i: usize) -> bool {
        self.lock().slots[i].out_until.is_none()
    }
}

impl Lease {
    /// Reports how the request went and frees the proxy.
    pub fn finish(mut self, verdict: Verdict) {
        self.done = true;
        self.pool.finish(self.index, &self.host, verdict);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.done {
            let mut st = self.pool.lock();
            let slot = &mut st.slots[self.index];
            slot.in_flight = slot.in_flight.saturating_sub(1);
            drop(st);
            self.pool.freed.notify_waiters();
        }
    }
}

/// Orders proxies fastest first; not yet measured ones count as fastest,
/// so each is measured early; ties keep the configured order.
fn rank(slots: &[Slot], ranking: &mut [usize]) {
    ranking.sort_by(|&a, &b| {
        let ms = |i: usize| slots[i].mean_ms.unwrap_or(0.0);
        ms(a).total_cmp(&ms(b)).then(a.cmp(&b))
    });
}

enum Pick {
    Take(usize),
    Check(usize),
    Wait(Instant),
    None,
}

enum Wait {
    Check(usize),
    Until(Instant),
}

fn use_of<'a>(counts: &'a mut Counts, host: &str, n: usize, i: usize) -> &'a mut ProxyUse {
    let uses = counts.entry(host.to_string()).or_insert_with(|| vec![ProxyUse::default(); n]);
    &mut uses[i]
}

/// Where a domain's ring starts: its hash, so sites start on different
/// proxies.
fn ring_start(domain: &str, len: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(domain.as_bytes()) % len as u64) as usize
}

/// The health check: a TCP connection to the proxy.
async fn tcp_check(target: &str) -> Result<(), String> {
    match tokio::time::timeout(CHECK_TIMEOUT, tokio::net::TcpStream::connect(target)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no connection in {CHECK_TIMEOUT:?}")),
    }
}

#[cfg(test)]
mod tests;
