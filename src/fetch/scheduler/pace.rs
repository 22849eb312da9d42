//! Adaptive politeness: how long a host waits between two requests
//! (docs/src/politeness.md).
//!
//! A host's delay is never below its floor (`--delay`, or its robots.txt
//! Crawl-delay when longer). Above it, two terms, whichever is longer:
//!
//! - **Response time**: `--delay-factor` times the mean time of the host's
//!   last [`WINDOW`] responses (a sliding window, as Heritrix's delay factor
//!   and the sliding-window weights of the link scorer), shared among the
//!   `--per-host` connections: with one connection a server that takes
//!   400 ms a page gets 800 ms between requests at the default 2; with K,
//!   a K-th of that, so it is kept as busy, relative to the connections the
//!   run allows it, as with one. It gets back to the floor when it is quick
//!   again. (Not divided, one slow page among K connections spaced a whole
//!   host's requests as if it had one: seen as 1.6 s between requests to a
//!   host of 4 connections after a few 800 ms pages.)
//! - **Backoff**: a 429, a 503 or a timeout is the server saying it is
//!   overloaded. Each one doubles the host's backoff (from 250 ms, or the
//!   floor when longer, up to [`MAX_LEVEL`] doublings); [`CALM`] good
//!   answers in a row halve it again, so a host recovers slowly and does
//!   not swing between overload and full speed. Like TCP's congestion
//!   window, it rises once per round: the answers to requests sent before
//!   the last rise say what that rise already answered, so sixteen 429s
//!   to sixteen requests in flight are one doubling, not six (six took a
//!   rate-limited host to 8 s between requests, and it needed two minutes
//!   of calm answers to come back).
//!
//! Both are capped by `--max-delay`, which never lowers the floor.

use std::time::Duration;

use tokio::time::Instant;

/// Responses in the sliding window.
pub(super) const WINDOW: usize = 8;
/// Most doublings of the backoff.
pub(super) const MAX_LEVEL: u8 = 6;
/// Good answers in a row that halve the backoff.
pub(super) const CALM: u8 = 8;
/// The first step of the backoff when the floor is shorter.
const BACKOFF_STEP: Duration = Duration::from_millis(250);

/// One host's pace.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pace {
    /// Response times (ms), a ring of the latest [`WINDOW`].
    recent: [u32; WINDOW],
    seen: usize,
    level: u8,
    calm: u8,
    /// When the backoff last rose.
    raised_at: Option<Instant>,
}

/// What the fetcher's settings say about pacing.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub floor: Duration,
    pub factor: f64,
    pub cap: Duration,
    /// `--per-host`: the response-time term is shared among them.
    pub connections: u32,
}

impl Pace {
    /// Records a request that finished at `now` after `elapsed`; `trouble`:
    /// a 429, a 503 or a timeout. Returns whether the backoff rose.
    pub(super) fn record(&mut self, elapsed: Duration, trouble: bool, now: Instant) -> bool {
        let ms = u32::try_from(elapsed.as_millis()).unwrap_or(u32::MAX);
        self.recent[self.seen % WINDOW] = ms;
        self.seen += 1;
        if trouble {
            self.calm = 0;
            let sent = now.checked_sub(elapsed).unwrap_or(now);
            let new_round = self.raised_at.is_none_or(|raised| sent >= raised);
            if new_round && self.level < MAX_LEVEL {
                self.level += 1;
                self.raised_at = Some(now);
                return true;
            }
        } else if self.level > 0 {
            self.calm += 1;
            if self.calm >= CALM {
                self.level -= 1;
                self.calm = 0;
            }
        }
        false
    }

    /// The mean of the window (zero before any response).
    fn mean(&self) -> Duration {
        let n = self.seen.min(WINDOW);
        if n == 0 {
            return Duration::ZERO;
        }
        let sum: u64 = self.recent[..n].iter().map(|&m| u64::from(m)).sum();
        Duration::from_millis(sum / n as u64)
    }

    /// The delay between two requests to the host now.
    pub(super) fn delay(&self, l: Limits) -> Duration {
        let by_time = self.mean().mul_f64(l.factor.max(0.0)) / l.connections.max(1);
        let backoff = if self.level == 0 {
            Duration::ZERO
        } else {
            l.floor.max(BACKOFF_STEP).saturating_mul(1 << (self.level - 1))
        };
        let above = by_time.max(backoff).min(l.cap);
        l.floor.max(above)
    }

    /// Whether the host is paced above its floor now.
    pub(super) fn slowed(&self, l: Limits) -> bool {
        self.delay(l) > l.floor
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records answers one second apart, each sent after the one before.
    struct Clock(Instant);

    impl Clock {
        fn rec(&mut self, p: &mut Pace, ms: u64, trouble: bool) -> bool {
            self.0 += Duration::from_secs(1);
            p.record(Duration::from_millis(ms), trouble, self.0)
        }
    }

    const L: Limits =
        Limits { floor: Duration::from_millis(100), factor: 2.0, cap: Duration::from_secs(5), connections: 1 };

    #[test]
    fn slow_answers_lengthen_the_delay_and_quick_ones_bring_it_back() {
        let mut p = Pace::default();
        let mut c = Clock(Instant::now());
        assert_eq!(p.delay(L), L.floor, "no answer yet: the floor");
        for _ in 0..WINDOW {
            c.rec(&mut p, 400, false);
        }
        assert_eq!(p.delay(L), Duration::from_millis(800), "twice the mean response time");
        let four = Limits { connections: 4, ..L };
        assert_eq!(p.delay(four), Duration::from_millis(200), "shared among four connections");
        for _ in 0..WINDOW {
            c.rec(&mut p, 10, false);
        }
        assert_eq!(p.delay(L), L.floor, "quick again: the floor, never below it");
        for _ in 0..WINDOW {
            c.rec(&mut p, 20_000, false);
        }
        assert_eq!(p.delay(L), L.cap, "capped");
        let off = Limits { factor: 0.0, ..L };
        assert_eq!(p.delay(off), L.floor, "factor 0: response times do not count");
    }

    #[test]
    fn trouble_doubles_the_backoff_and_calm_answers_halve_it() {
        let zero = Limits { floor: Duration::ZERO, factor: 0.0, cap: Duration::from_secs(30), connections: 1 };
        let mut p = Pace::default();
        let mut c = Clock(Instant::now());
        assert!(c.rec(&mut p, 1, true));
        assert_eq!(p.delay(zero), Duration::from_millis(250), "a first step even with no floor");
        assert!(c.rec(&mut p, 1, true));
        assert!(c.rec(&mut p, 1, true));
        assert_eq!(p.delay(zero), Duration::from_millis(1000));
        for _ in 0..CALM - 1 {
            c.rec(&mut p, 1, false);
        }
        assert_eq!(p.delay(zero), Duration::from_millis(1000), "not calm long enough");
        c.rec(&mut p, 1, false);
        assert_eq!(p.delay(zero), Duration::from_millis(500), "halved");
        for _ in 0..CALM * 2 {
            c.rec(&mut p, 1, false);
        }
        assert_eq!(p.delay(zero), Duration::ZERO, "recovered");
        for _ in 0..20 {
            c.rec(&mut p, 1, true);
        }
        assert_eq!(p.delay(zero), Duration::from_millis(250 << (MAX_LEVEL - 1)), "bounded doublings");
        assert!(p.slowed(zero));
    }

    #[test]
    fn answers_to_requests_in_flight_at_a_rise_do_not_raise_it_again() {
        let zero = Limits { floor: Duration::ZERO, factor: 0.0, cap: Duration::from_secs(30), connections: 1 };
        let mut p = Pace::default();
        let t0 = Instant::now();
        // Sixteen requests sent at once, all answered 429 within 50 ms.
        let rises = (0..16u64)
            .filter(|i| p.record(Duration::from_millis(40), true, t0 + Duration::from_millis(40 + i)))
            .count();
        assert_eq!((rises, p.delay(zero)), (1, Duration::from_millis(250)), "one round, one doubling");
        // A request sent after the rise that meets trouble again is a new round.
        assert!(p.record(Duration::from_millis(5), true, t0 + Duration::from_millis(400)));
        assert_eq!(p.delay(zero), Duration::from_millis(500));
    }
}
