//! Adaptive politeness: how long a host waits between two requests
//! (docs/src/politeness.md).
//!
//! A host's delay is never below its floor (`--delay`, or its robots.txt
//! Crawl-delay when longer). Above it, two terms, whichever is longer,
//! capped by `--max-delay` (which never lowers the floor):
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
//! - **The allowed rate**: a 429, a 503 without `Retry-After` or a timeout
//!   is the server refusing the pace it was sent. It finds the rate the
//!   server allows the way congestion control finds a link's: a refusal
//!   cuts the rate at once to [`BETA`] of the pace in force (the first one
//!   to at least a [`FIRST_STEP`] between requests), and calm answers raise it again,
//!   one round of calm answers (about a second's worth, at most
//!   [`ROUND_MAX`]) at a time. With no refusal known it probes upwards,
//!   [`PROBE`] times faster a round; after a refusal it closes half the
//!   distance to a target [`MARGIN`] below the refused rate a round (a
//!   binary search, as BIC-TCP's), holds there [`HOLD`] rounds and then
//!   probes past it by [`STEP`] a round, since the server's limit may have
//!   risen. Well past the refused rate the refusal is forgotten, and a gap
//!   below the floor (or a millisecond) is no limit any more.
//!
//! Why not the doubling backoff it replaces: a doubling per refusal and a
//! halving per 8 calm answers has no memory of where the refusals came,
//! so on a server limited to 10 requests a second it swung between 250 ms
//! and 2 s, and on a host whose 429s came from a rate-limited area it
//! stayed at 2 s for the rest of the crawl (the real-site bench: 37 s on 31
//! URLs the server would have served in 3 s). Hand-written, as the breaker
//! is: no crate paces a client by its server's refusals.
//!
//! A rate is cut once per round, as TCP's congestion window is: answers to
//! requests sent before the last cut say what that cut already answered,
//! so sixteen 429s to sixteen requests in flight are one cut, not sixteen;
//! and a URL refused again after calm answers to other URLs at the pace
//! set since (a page that always answers 429) is that URL's trouble: it
//! cuts its host's rate once only.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

/// Responses in the sliding window.
pub(super) const WINDOW: usize = 8;
/// A refusal cuts the rate to this share of the pace in force.
pub(super) const BETA: f64 = 0.7;
/// The shortest gap a first refusal sets, when the pace in force was
/// quicker (no delay): four requests a second.
pub(super) const FIRST_STEP: Duration = Duration::from_millis(250);
/// With no refusal known, each calm round makes the rate this much faster.
pub(super) const PROBE: f64 = 1.5;
/// After a refusal, the rate aimed at is this share of the refused one.
pub(super) const MARGIN: f64 = 0.9;
/// Calm rounds at that target before probing past it.
pub(super) const HOLD: u32 = 8;
/// The smallest step a calm round takes, and the step past the target.
pub(super) const STEP: f64 = 0.05;
/// Calm answers in a round at most (a round is otherwise a second's worth
/// of answers at the allowed rate, at least one).
pub(super) const ROUND_MAX: u32 = 8;
/// A gap this short is no limit.
const FORGET: Duration = Duration::from_millis(1);

/// One host's pace.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pace {
    /// Response times (ms), a ring of the latest [`WINDOW`].
    recent: [u32; WINDOW],
    seen: usize,
    /// The gap between request starts the server's refusals allow; none
    /// before a refusal, or once the host has recovered.
    allowed: Option<Duration>,
    /// The delay in force when the server last refused (none when it
    /// refused a host sent at no delay at all).
    refused: Option<Duration>,
    /// When the rate was last cut.
    cut_at: Option<Instant>,
    /// Calm answers in this round, and rounds held at the target.
    calm: u32,
    held: u32,
    /// A calm answer came since the last cut: the pace it set is one the
    /// server takes.
    calmed: bool,
    /// URLs (fingerprints) whose refusal has cut the rate already.
    refused_by: HashSet<u64>,
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

/// Which term sets a host's delay (the summary's `why`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The floor: `--delay`, or robots.txt's Crawl-delay (the caller tells
    /// which).
    Floor,
    /// `--delay-factor` times the host's response times.
    ResponseTimes,
    /// The rate its refusals allow.
    Refusals,
    /// `--max-delay` capped one of those.
    Cap,
}

impl Pace {
    /// Records a request that finished at `now` after `elapsed`;
    /// `refused`: the fingerprint of its URL when the server refused the
    /// pace (a 429, a 503 without `Retry-After`, a timeout). Returns
    /// whether the rate was cut.
    pub(super) fn record(&mut self, elapsed: Duration, refused: Option<u64>, now: Instant, l: Limits) -> bool {
        let ms = u32::try_from(elapsed.as_millis()).unwrap_or(u32::MAX);
        self.recent[self.seen % WINDOW] = ms;
        self.seen += 1;
        let sent = now.checked_sub(elapsed).unwrap_or(now);
        let after_cut = self.cut_at.is_none_or(|cut| sent > cut);
        if let Some(url) = refused {
            self.calm = 0;
            // A URL refused again after calm answers at the pace set since
            // is that URL's trouble; refused again with no calm answer in
            // between, the pace is still too quick.
            let first = self.refused_by.insert(url);
            if !(after_cut && (first || !self.calmed)) {
                return false;
            }
            let in_force = self.delay(l);
            self.refused = (!in_force.is_zero()).then_some(in_force);
            let cut = in_force.div_f64(BETA);
            // The first cut of a host sent at no delay (or a short one) has
            // no rate to cut from: a first step.
            let cut = if self.allowed.is_none() { cut.max(FIRST_STEP) } else { cut };
            self.allowed = Some(cut.min(l.cap.max(l.floor)));
            self.cut_at = Some(now);
            (self.held, self.calmed) = (0, false);
            return true;
        }
        let Some(gap) = self.allowed.filter(|_| after_cut) else { return false };
        self.calmed = true;
        self.calm += 1;
        let per_second = Duration::from_secs(1).as_secs_f64() / gap.as_secs_f64().max(1e-6);
        // Rounds of a second's worth of answers, from 1 to ROUND_MAX.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let round = (per_second.round() as u32).clamp(1, ROUND_MAX);
        if self.calm < round {
            return false;
        }
        self.calm = 0;
        let next = match self.refused {
            Some(refused) => {
                let target = refused.div_f64(MARGIN);
                if gap > target {
                    let step = ((gap - target) / 2).max(gap.mul_f64(STEP));
                    gap.saturating_sub(step).max(target)
                } else {
                    self.held += 1;
                    if self.held < HOLD {
                        gap
                    } else {
                        gap.mul_f64(1.0 - STEP)
                    }
                }
            }
            None => gap.div_f64(PROBE),
        };
        if self.refused.is_some_and(|r| next < r / 2) {
            // Twice the refused rate without a refusal: the limit has moved.
            self.refused = None;
        }
        if next <= l.floor.max(FORGET) {
            (self.allowed, self.refused) = (None, None);
        } else {
            self.allowed = Some(next);
        }
        false
    }

    /// The mean of the window (zero before any response).
    pub(super) fn mean(&self) -> Duration {
        let n = self.seen.min(WINDOW);
        if n == 0 {
            return Duration::ZERO;
        }
        let sum: u64 = self.recent[..n].iter().map(|&m| u64::from(m)).sum();
        Duration::from_millis(sum / n as u64)
    }

    fn by_time(&self, l: Limits) -> Duration {
        self.mean().mul_f64(l.factor.max(0.0)) / l.connections.max(1)
    }

    /// The delay between two requests to the host now.
    pub(super) fn delay(&self, l: Limits) -> Duration {
        let above = self.by_time(l).max(self.allowed.unwrap_or_default()).min(l.cap);
        l.floor.max(above)
    }

    /// Whether the host is paced above its floor now.
    pub(super) fn slowed(&self, l: Limits) -> bool {
        self.delay(l) > l.floor
    }

    /// Which term sets the delay now.
    pub(super) fn why(&self, l: Limits) -> Why {
        let (by_time, allowed) = (self.by_time(l), self.allowed.unwrap_or_default());
        let above = by_time.max(allowed);
        if above <= l.floor {
            Why::Floor
        } else if above > l.cap && l.cap > l.floor {
            Why::Cap
        } else if allowed >= by_time {
            Why::Refusals
        } else {
            Why::ResponseTimes
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records answers one second apart, each sent after the one before.
    struct Clock(Instant);

    impl Clock {
        fn rec(&mut self, p: &mut Pace, ms: u64, l: Limits) {
            self.0 += Duration::from_secs(1);
            p.record(Duration::from_millis(ms), None, self.0, l);
        }

        /// A refusal of URL `url`, sent after everything before.
        fn refuse(&mut self, p: &mut Pace, url: u64, l: Limits) -> bool {
            self.0 += Duration::from_secs(1);
            p.record(Duration::from_millis(1), Some(url), self.0, l)
        }
    }

    const L: Limits =
        Limits { floor: Duration::from_millis(100), factor: 2.0, cap: Duration::from_secs(5), connections: 1 };
    const ZERO: Limits = Limits { floor: Duration::ZERO, factor: 0.0, cap: Duration::from_secs(30), connections: 1 };

    #[test]
    fn slow_answers_lengthen_the_delay_and_quick_ones_bring_it_back() {
        let mut p = Pace::default();
        let mut c = Clock(Instant::now());
        assert_eq!(p.delay(L), L.floor, "no answer yet: the floor");
        for _ in 0..WINDOW {
            c.rec(&mut p, 400, L);
        }
        assert_eq!(p.delay(L), Duration::from_millis(800), "twice the mean response time");
        assert_eq!(p.why(L), Why::ResponseTimes);
        let four = Limits { connections: 4, ..L };
        assert_eq!(p.delay(four), Duration::from_millis(200), "shared among four connections");
        for _ in 0..WINDOW {
            c.rec(&mut p, 10, L);
        }
        assert_eq!((p.delay(L), p.why(L)), (L.floor, Why::Floor), "quick again: the floor, never below it");
        for _ in 0..WINDOW {
            c.rec(&mut p, 20_000, L);
        }
        assert_eq!((p.delay(L), p.why(L)), (L.cap, Why::Cap), "capped");
        let off = Limits { factor: 0.0, ..L };
        assert_eq!(p.delay(off), L.floor, "factor 0: response times do not count");
    }

    #[test]
    fn a_refusal_cuts_the_rate_at_once_and_calm_rounds_raise_it_again() {
        let mut p = Pace::default();
        let mut c = Clock(Instant::now());
        assert!(c.refuse(&mut p, 1, ZERO));
        assert_eq!(p.delay(ZERO), FIRST_STEP, "a first step even with no delay");
        assert_eq!(p.why(ZERO), Why::Refusals);
        // No refused rate known (the host was sent at no delay at all):
        // each calm round (a second's worth: four answers at 250 ms) is
        // PROBE times faster.
        for _ in 0..3 {
            c.rec(&mut p, 1, ZERO);
        }
        assert_eq!(p.delay(ZERO), FIRST_STEP, "a round is not over");
        c.rec(&mut p, 1, ZERO);
        assert_eq!(p.delay(ZERO), FIRST_STEP.div_f64(PROBE), "one round: PROBE times the rate");
        // Refused again at 167 ms: cut to BETA of that rate.
        let in_force = p.delay(ZERO);
        assert!(c.refuse(&mut p, 2, ZERO));
        let cut = in_force.div_f64(BETA);
        assert_eq!(p.delay(ZERO), cut);
        // Calm rounds close in on a target MARGIN below the refused rate,
        // half the distance a round, and hold there.
        let target = in_force.div_f64(MARGIN);
        let mut gaps = Vec::new();
        for _ in 0..40 {
            c.rec(&mut p, 1, ZERO);
            gaps.push(p.delay(ZERO));
        }
        assert!(gaps.windows(2).all(|w| w[1] <= w[0]), "never slower while calm: {gaps:?}");
        let held = gaps.iter().filter(|&&g| g == target).count();
        assert!(held >= 5, "held at the target {target:?}: {gaps:?}");
        // Then past it, slowly: the limit may have risen.
        for _ in 0..200 {
            c.rec(&mut p, 1, ZERO);
        }
        assert!(p.delay(ZERO) < target.mul_f64(0.9), "{:?} after many calm rounds", p.delay(ZERO));
        // At last no limit at all.
        for _ in 0..2000 {
            c.rec(&mut p, 1, ZERO);
        }
        assert_eq!((p.delay(ZERO), p.why(ZERO)), (Duration::ZERO, Why::Floor), "recovered");
    }

    #[test]
    fn the_delay_set_by_refusals_keeps_the_floor_and_the_cap() {
        let floor = Limits { floor: Duration::from_secs(1), ..ZERO };
        let mut p = Pace::default();
        let mut c = Clock(Instant::now());
        assert!(c.refuse(&mut p, 1, floor));
        assert_eq!(p.delay(floor), Duration::from_secs(1).div_f64(BETA), "slower than the floor in force");
        let capped = Limits { cap: Duration::from_secs(2), ..floor };
        for url in 2..20 {
            c.refuse(&mut p, url, capped);
        }
        assert_eq!(p.delay(capped), Duration::from_secs(2), "never past --max-delay");
        // Back down, never below the floor, and no limit once under it.
        for _ in 0..5000 {
            c.rec(&mut p, 1, floor);
        }
        assert_eq!(p.delay(floor), floor.floor);
        assert!(!p.slowed(floor));
    }

    #[test]
    fn answers_to_requests_in_flight_at_a_cut_do_not_cut_it_again() {
        let mut p = Pace::default();
        let t0 = Instant::now();
        // Sixteen requests sent at once, all answered 429 within 50 ms.
        let cuts = (0..16u64)
            .filter(|&i| p.record(Duration::from_millis(40), Some(i), t0 + Duration::from_millis(40 + i), ZERO))
            .count();
        assert_eq!((cuts, p.delay(ZERO)), (1, FIRST_STEP), "one round, one cut");
        // Their calm neighbours sent before the cut do not raise it either.
        for i in 0..8u64 {
            p.record(Duration::from_millis(45), None, t0 + Duration::from_millis(45 + i), ZERO);
        }
        assert_eq!(p.delay(ZERO), FIRST_STEP);
        // A request sent after the cut that meets trouble again is a new round.
        assert!(p.record(Duration::from_millis(5), Some(100), t0 + Duration::from_millis(400), ZERO));
        assert_eq!(p.delay(ZERO), FIRST_STEP.div_f64(BETA));
    }

    #[test]
    fn a_url_refused_again_between_calm_answers_cuts_its_host_once() {
        let mut p = Pace::default();
        let mut c = Clock(Instant::now());
        assert!(c.refuse(&mut p, 7, ZERO));
        let once = p.delay(ZERO);
        c.rec(&mut p, 1, ZERO);
        assert!(!c.refuse(&mut p, 7, ZERO), "the same URL again, after a calm answer: its own trouble");
        c.rec(&mut p, 1, ZERO);
        assert!(!c.refuse(&mut p, 7, ZERO));
        assert_eq!(p.delay(ZERO), once);
        assert!(c.refuse(&mut p, 8, ZERO), "another URL refused: the host's");
        // Refused again with nothing calm in between: still too quick.
        assert!(c.refuse(&mut p, 8, ZERO), "no calm answer since the cut");
    }
}
