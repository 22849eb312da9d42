//! A host's circuit breaker (docs/src/politeness.md, "Retries and failing hosts").
//!
//! One URL's trouble is that URL's: it waits for its own retry (its
//! `Retry-After`, or a backoff) while the other URLs of its host go on at
//! the host's polite rate. The host as a whole stops only when the server
//! says so or shows it:
//!
//! - **Closed** (normal): requests at the host's pace, `--per-host` at once.
//! - **Open** (paused): no request starts until the pause ends. A
//!   `Retry-After` (429, 503) pauses the host for [`ASK_PAUSE`] at most,
//!   once per URL, and its probe tells whose the ask was: a probe that
//!   answers says the host serves, and only the URL that asked waits out
//!   its `Retry-After`; a probe asked to wait too says the server asks it
//!   of every URL, and the host pauses for the time asked, at most
//!   [`MAX_PAUSE`]. A URL that keeps asking waits alone. A burst of
//!   [`OPEN_AFTER`] failures in a row (5xx, timeouts or no answer within
//!   the low-speed window, resets, refused connections, whatever their
//!   URLs) opens it for a cooldown, [`FIRST_COOLDOWN`] doubling after
//!   each failed probe up to [`MAX_COOLDOWN`].
//!   A failure while it is open or half-open is the host's, not its URL's:
//!   the URL goes back without spending a retry ([`Breaker::in_outage`]).
//! - **Half-open**: after the pause, one request (the probe) and no other
//!   until it answers. An answer closes the breaker; a failure opens it
//!   again for twice as long. Requests started before the pause may still
//!   be running (a body trickling in for seconds); they do not hold the
//!   probe back, since they are not new load on the server.
//! - **Down**: a host whose failures have gone on for `--host-down-after`
//!   without one good answer. Its queued URLs end as `host_down` error rows
//!   at once, without requests. The state lives as long as the fetcher, so
//!   a later layer probes a down host once before it fails its URLs.
//!
//! Politeness toward a failing host stays as strict as on a healthy one:
//! while open or half-open it gets at most one new request at a time, and each
//! failure also raises its pace's backoff ([`super::pace`]).

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

/// Failed requests in a row that open the breaker.
pub(super) const OPEN_AFTER: u32 = 5;
/// The first cooldown of a breaker opened by failures.
pub(super) const FIRST_COOLDOWN: Duration = Duration::from_secs(1);
/// The longest cooldown between two probes: a probe every 5 s is one
/// request a failing host hardly notices, and a host that recovers is
/// found within 5 s. The wait between a server's recovery and the probe
/// that finds it is wall time of the whole crawl when that host is its
/// tail: a 30 s cap lost up to 30 s, a 10 s cap up to 10 s (its half was
/// most of the run-to-run spread of the real-site bench's wall).
pub(super) const MAX_COOLDOWN: Duration = Duration::from_secs(5);
/// The longest pause a `Retry-After` sets on its host.
pub(super) const MAX_PAUSE: Duration = Duration::from_secs(60);
/// The pause a `Retry-After` of one URL sets on its host until a probe
/// shows that the server asks it of other URLs too. One URL that always
/// answers `503 Retry-After: 5` used to pause its host 5 s: its host's
/// other URLs, and a retry queued on it, waited for one URL's trouble.
pub(super) const ASK_PAUSE: Duration = Duration::from_secs(1);

/// What a finished request says about its host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Health {
    /// The server answered (any status but 5xx and 429).
    Good,
    /// 5xx, a timeout, a reset or a refused connection.
    Failed,
    /// Neither (a 429: the server is up but asks for less).
    Neutral,
}

/// What changed in the breaker, for the log and the counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
    None,
    /// Opened by a burst of failures, for the cooldown.
    Opened(Duration),
    /// Paused by a `Retry-After`.
    Paused(Duration),
    /// A failed probe: open again, for the cooldown.
    Reopened(Duration),
    /// An answer after trouble: closed again.
    Closed,
    /// Failing for longer than `--host-down-after`.
    Down,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Closed,
    Open {
        until: Instant,
    },
    HalfOpen,
    Down,
}

/// One host's breaker.
#[derive(Clone, Debug, Default)]
pub(crate) struct Breaker {
    state: State,
    /// Failures in a row.
    failures: u32,
    cooldown: Duration,
    /// The first failure of the current run of failures.
    failing_since: Option<Instant>,
    /// URLs (fingerprints) whose `Retry-After` has paused the host already.
    paused_by: HashSet<u64>,
    /// A probe is in flight: no other request starts until it ends.
    probe_out: bool,
    /// When the host last gave a good answer (kept across layers, as the
    /// breaker is: a request handed on from the layer before is judged
    /// by what its host did while it waited).
    answered: Option<Instant>,
}

impl Breaker {
    /// Whether a request may start now with `in_flight` requests of the
    /// host running (`per_host` when closed); an open breaker whose pause
    /// is over becomes half-open here, and its probe is the next request.
    pub(super) fn allows(&mut self, in_flight: usize, per_host: usize, now: Instant) -> bool {
        if let State::Open { until } = self.state {
            if now < until {
                return false;
            }
            self.state = State::HalfOpen;
        }
        match self.state {
            State::Closed => in_flight < per_host,
            State::HalfOpen => !self.probe_out,
            State::Open { .. } | State::Down => false,
        }
    }

    /// Whether the host has room for its next start to be considered:
    /// `per_host` requests when closed; otherwise none while a probe is out
    /// (requests from before the pause do not count).
    pub(super) fn has_room(&self, in_flight: usize, per_host: usize) -> bool {
        match self.state {
            State::Closed => in_flight < per_host,
            _ => !self.probe_out,
        }
    }

    /// The probe was sent.
    pub(super) fn probe_sent(&mut self) {
        self.probe_out = true;
    }

    /// The probe's request ended (before its outcome is recorded).
    pub(super) fn probe_ended(&mut self) {
        self.probe_out = false;
    }

    /// When the host's pause ends, if it is paused.
    pub(super) fn paused_until(&self) -> Option<Instant> {
        match self.state {
            State::Open { until } => Some(until),
            _ => None,
        }
    }

    /// Whether the next request is a probe.
    pub(super) fn probing(&self) -> bool {
        self.state == State::HalfOpen
    }

    pub(super) fn is_down(&self) -> bool {
        self.state == State::Down
    }

    /// When the host last gave a good answer.
    pub(super) fn answered(&self) -> Option<Instant> {
        self.answered
    }

    /// Whether the host is in an outage: paused or probed because its
    /// requests keep failing, whatever their URLs (not because a server
    /// asked for a pause). A failure now is the host's, not its URL's.
    pub(super) fn in_outage(&self) -> bool {
        self.failures >= OPEN_AFTER && matches!(self.state, State::Open { .. } | State::HalfOpen)
    }

    /// How long the host has been failing.
    pub(super) fn failing_for(&self, now: Instant) -> Duration {
        self.failing_since.map_or(Duration::ZERO, |t| now.saturating_duration_since(t))
    }

    /// The host met again (a later layer). A down host gets one probe
    /// before its URLs fail; a probe of the earlier layer's no longer
    /// holds the host (if it was handed over, it ends as any request).
    pub(super) fn retest(&mut self) {
        self.probe_out = false;
        if self.state == State::Down {
            self.state = State::HalfOpen;
        }
    }

    /// Records a finished request's outcome; `probe`: it was the probe;
    /// `down_after`: how long a host may fail before it is down.
    ///
    /// Any answer closes the breaker, the probe's or that of a request sent
    /// before the pause: the server answers. While a probe is out, a
    /// failure of an older request leaves the decision to the probe.
    pub(super) fn record(&mut self, health: Health, probe: bool, now: Instant, down_after: Duration) -> Change {
        if health == Health::Failed && self.probe_out && !probe {
            return Change::None;
        }
        match health {
            Health::Neutral => Change::None,
            Health::Good => {
                self.answered = Some(now);
                let was = self.state;
                self.state = State::Closed;
                self.failures = 0;
                self.cooldown = Duration::ZERO;
                self.failing_since = None;
                if was == State::Closed {
                    Change::None
                } else {
                    Change::Closed
                }
            }
            Health::Failed => {
                self.failures = self.failures.saturating_add(1);
                let since = *self.failing_since.get_or_insert(now);
                match self.state {
                    State::HalfOpen | State::Down if now.saturating_duration_since(since) >= down_after => {
                        self.state = State::Down;
                        Change::Down
                    }
                    State::HalfOpen | State::Down => {
                        self.cooldown = (self.cooldown * 2).clamp(FIRST_COOLDOWN, MAX_COOLDOWN);
                        self.state = State::Open { until: now + self.cooldown };
                        Change::Reopened(self.cooldown)
                    }
                    State::Closed if self.failures >= OPEN_AFTER => {
                        self.cooldown = FIRST_COOLDOWN;
                        self.state = State::Open { until: now + self.cooldown };
                        Change::Opened(self.cooldown)
                    }
                    // Still closed, or already open (a request that was in
                    // flight when it opened).
                    State::Closed | State::Open { .. } => Change::None,
                }
            }
        }
    }

    /// A `Retry-After` of `wait` from the URL with fingerprint `url`
    /// (`probe`: the answer to the probe after a pause): the server asks
    /// the whole host when it asks its probe too, and the host pauses for
    /// the time asked (at most [`MAX_PAUSE`]); otherwise it pauses for
    /// [`ASK_PAUSE`] at most, until its probe tells. A URL that has paused
    /// the host before waits alone.
    pub(super) fn retry_after(&mut self, url: u64, wait: Duration, probe: bool, now: Instant) -> Change {
        if self.state == State::Down || !self.paused_by.insert(url) {
            return Change::None;
        }
        let wait = if probe { wait.min(MAX_PAUSE) } else { wait.min(ASK_PAUSE) };
        let until = now + wait;
        self.state = match self.state {
            State::Open { until: was } => State::Open { until: was.max(until) },
            _ => State::Open { until },
        };
        Change::Paused(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOWN: Duration = Duration::from_secs(300);

    #[test]
    fn failures_scattered_among_answers_never_open_it() {
        let (mut b, t) = (Breaker::default(), Instant::now());
        for i in 0..100 {
            let health = if i % 4 == 0 { Health::Failed } else { Health::Good };
            assert!(matches!(b.record(health, false, t, DOWN), Change::None | Change::Closed));
            assert!(b.allows(0, 2, t));
        }
    }

    #[test]
    fn a_burst_opens_it_a_probe_tests_it_and_an_answer_closes_it() {
        let (mut b, t) = (Breaker::default(), Instant::now());
        for _ in 1..OPEN_AFTER {
            assert_eq!(b.record(Health::Failed, false, t, DOWN), Change::None);
        }
        assert_eq!(b.record(Health::Failed, false, t, DOWN), Change::Opened(FIRST_COOLDOWN));
        assert!(!b.allows(0, 2, t), "open: nothing starts");
        assert_eq!(b.paused_until(), Some(t + FIRST_COOLDOWN));
        let t1 = t + FIRST_COOLDOWN;
        assert!(b.allows(1, 2, t1), "half-open: a request from before the pause does not hold the probe back");
        b.probe_sent();
        assert!(!b.allows(0, 2, t1) && !b.has_room(0, 2), "half-open: one probe, nothing beside it");
        b.probe_ended();
        // The probe fails: open again, twice as long; then again, up to the cap.
        assert_eq!(b.record(Health::Failed, true, t1, DOWN), Change::Reopened(FIRST_COOLDOWN * 2));
        let mut last = Duration::ZERO;
        for _ in 0..10 {
            let at = b.paused_until().expect("open");
            assert!(b.allows(0, 2, at));
            let Change::Reopened(c) = b.record(Health::Failed, true, at, DOWN) else { panic!("reopened") };
            last = c;
        }
        assert_eq!(last, MAX_COOLDOWN);
        let at = b.paused_until().expect("open");
        assert!(b.allows(0, 2, at));
        assert_eq!(b.record(Health::Good, true, at, DOWN), Change::Closed);
        assert!(b.allows(1, 2, at) && !b.allows(2, 2, at), "closed: the per-host limit again");
        assert_eq!(b.failing_for(at), Duration::ZERO);
    }

    #[test]
    fn a_host_failing_past_the_limit_is_down_and_a_later_layer_probes_it_once() {
        let (mut b, t) = (Breaker::default(), Instant::now());
        for _ in 0..OPEN_AFTER {
            b.record(Health::Failed, false, t, DOWN);
        }
        let mut at;
        let change = loop {
            at = b.paused_until().expect("open");
            assert!(b.allows(0, 2, at));
            match b.record(Health::Failed, true, at, DOWN) {
                Change::Reopened(_) => {}
                other => break other,
            }
        };
        assert_eq!(change, Change::Down);
        assert!(at - t >= DOWN && b.is_down() && !b.allows(0, 2, at));
        b.retest();
        assert!(b.allows(0, 2, at), "one probe");
        assert_eq!(b.record(Health::Failed, true, at, DOWN), Change::Down, "still failing: down at once");
        b.retest();
        assert_eq!(b.record(Health::Good, true, at, DOWN), Change::Closed, "it came back");
    }

    #[test]
    fn an_older_request_neither_holds_the_probe_back_nor_fails_it() {
        let (mut b, t) = (Breaker::default(), Instant::now());
        let five = Duration::from_secs(5);
        assert_eq!(b.retry_after(7, five, false, t), Change::Paused(ASK_PAUSE));
        let t1 = t + ASK_PAUSE;
        assert!(b.allows(3, 4, t1), "half-open: the probe goes out beside the requests sent before the pause");
        b.probe_sent();
        assert!(!b.allows(0, 4, t1) && !b.has_room(0, 4), "one probe at a time");
        assert_eq!(
            b.record(Health::Failed, false, t1, DOWN),
            Change::None,
            "an older request fails: the probe decides"
        );
        b.probe_ended();
        assert_eq!(b.record(Health::Good, true, t1, DOWN), Change::Closed);
        assert!(b.allows(3, 4, t1) && !b.allows(4, 4, t1));
    }

    #[test]
    fn a_retry_after_pauses_the_host_once_per_url_and_its_probe_tells_for_how_long() {
        let (mut b, t) = (Breaker::default(), Instant::now());
        let five = Duration::from_secs(5);
        assert_eq!(b.retry_after(7, five, false, t), Change::Paused(ASK_PAUSE), "one URL's ask: a short pause");
        assert_eq!(b.paused_until(), Some(t + ASK_PAUSE));
        let t1 = t + ASK_PAUSE;
        assert!(b.allows(0, 2, t1) && b.probing(), "then one probe");
        assert_eq!(b.record(Health::Good, true, t1, DOWN), Change::Closed, "the probe answers: the host serves");
        assert_eq!(b.retry_after(7, five, false, t1), Change::None, "the same URL again: it waits alone");
        assert!(b.allows(0, 2, t1));
        // The server asks every URL: the probe is asked too, and the host
        // waits the time asked, bounded.
        assert_eq!(b.retry_after(8, five, false, t1), Change::Paused(ASK_PAUSE));
        let t2 = t1 + ASK_PAUSE;
        assert!(b.allows(0, 2, t2) && b.probing());
        b.probe_sent();
        b.probe_ended();
        let hour = Duration::from_secs(3600);
        assert_eq!(b.retry_after(9, hour, true, t2), Change::Paused(MAX_PAUSE), "the probe asked too: a bounded pause");
        assert_eq!(b.paused_until(), Some(t2 + MAX_PAUSE));
        assert!(!b.allows(0, 2, t2 + five), "no request until the pause ends");
    }
}
