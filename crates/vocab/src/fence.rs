//! A fence: how long this process may still act for its run
//! (docs/src/cluster.md, "One run per data location").
//!
//! The driver's lease is renewed every few seconds. A driver that cannot
//! renew it (its store fails, or the process was stopped and resumed) must
//! stop before another driver may take the lease over, or two runs crawl
//! at once. So every successful renewal extends the fence, measured on this
//! process's monotonic clock (never the wall clock, which another machine
//! may disagree with), and the fetcher checks it before each request: a
//! fence that has run out stops the requests and the map tasks do not
//! commit. It sits at the bottom of the crate so that the store (which
//! extends it) and the fetcher (which reads it) share it without knowing
//! each other.
//!
//! A fence also carries its lease's generation, the fencing token: a task
//! run in another process (`layercrawl task`) acts under the generation of
//! the driver that started it, watches the lease itself, and its commit is
//! refused by the store once a newer generation fenced the task
//! (`store/fencing.rs`; docs/src/cluster.md, "One run per data location").
//! A request in flight when the fence runs out is abandoned
//! ([`Fence::ran_out`]), so none outlives it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

/// Until when this process may act, in ms since `origin`.
#[derive(Debug)]
pub struct Fence {
    origin: Instant,
    until_ms: AtomicU64,
    /// The lease generation it acts under (0: none known).
    generation: u64,
}

impl Fence {
    /// A fence that holds for `valid_for` from now.
    #[must_use]
    pub fn new(valid_for: Duration) -> Arc<Self> {
        Self::of_generation(valid_for, 0)
    }

    /// A fence of lease generation `generation` that holds for `valid_for`
    /// from now (a zero `valid_for`: not yet).
    #[must_use]
    pub fn of_generation(valid_for: Duration, generation: u64) -> Arc<Self> {
        let origin = Instant::now();
        let until = if valid_for.is_zero() { NOT_YET } else { ms(valid_for) };
        Arc::new(Self { origin, until_ms: AtomicU64::new(until), generation })
    }

    /// The lease generation this fence acts under: the fencing token of
    /// every commit made under it (0: none).
    #[must_use]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// How long it still holds (zero once it ran out or was revoked).
    #[must_use]
    pub fn remaining(&self) -> Duration {
        let until = self.until_ms.load(Ordering::Acquire);
        if until == REVOKED {
            return Duration::ZERO;
        }
        Duration::from_millis(until.saturating_sub(ms(self.origin.elapsed())))
    }

    /// Resolves once the fence no longer holds (ran out or revoked): a
    /// request raced against it is dropped then, so none outlives the fence.
    pub async fn ran_out(&self) {
        while self.holds() {
            // Woken at the latest every RAN_OUT_POLL: a revocation, or an
            // extension that moved the end, is seen within it.
            tokio::time::sleep(self.remaining().min(RAN_OUT_POLL)).await;
        }
    }

    /// Extends the fence to `valid_for` after `from` (the moment a renewal
    /// started, not when it ended), unless it was revoked.
    pub fn extend(&self, from: Instant, valid_for: Duration) {
        let until = ms(from.saturating_duration_since(self.origin) + valid_for);
        let _ = self
            .until_ms
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| (now != REVOKED && until > now).then_some(until));
    }

    /// Ends it for good (the lease is someone else's).
    pub fn revoke(&self) {
        self.until_ms.store(REVOKED, Ordering::Release);
    }

    /// Whether this process may still act.
    #[must_use]
    pub fn holds(&self) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != REVOKED && ms(self.origin.elapsed()) < until
    }
}

/// `until_ms` of a revoked fence.
const REVOKED: u64 = 0;
/// `until_ms` of a fence that does not hold yet (and was never revoked).
const NOT_YET: u64 = 1;
/// How often [`Fence::ran_out`] looks again while the fence holds.
const RAN_OUT_POLL: Duration = Duration::from_millis(250);

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_fence_holds_until_its_time_and_renewals_extend_it() {
        let f = Fence::new(Duration::from_secs(40));
        assert!(f.holds());
        tokio::time::advance(Duration::from_secs(30)).await;
        f.extend(Instant::now(), Duration::from_secs(40));
        tokio::time::advance(Duration::from_secs(39)).await;
        assert!(f.holds(), "extended from the renewal");
        f.extend(Instant::now() - Duration::from_secs(60), Duration::from_secs(40));
        assert!(f.holds(), "an older renewal never shortens it");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(!f.holds(), "ran out");
        f.extend(Instant::now(), Duration::from_secs(40));
        assert!(f.holds());
        f.revoke();
        f.extend(Instant::now(), Duration::from_secs(40));
        assert!(!f.holds(), "revoked for good");
    }

    #[tokio::test(start_paused = true)]
    async fn a_fence_of_a_generation_may_start_closed_and_ran_out_resolves_when_it_ends() {
        let f = Fence::of_generation(Duration::ZERO, 7);
        assert_eq!((f.generation(), f.holds(), f.remaining()), (7, false, Duration::ZERO), "not yet");
        f.extend(Instant::now(), Duration::from_secs(40));
        assert!(f.holds());
        let started = Instant::now();
        f.ran_out().await;
        assert_eq!(started.elapsed().as_secs(), 40, "resolved when it ran out");
        let g = Fence::of_generation(Duration::from_secs(40), 8);
        let revoker = Arc::clone(&g);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(3)).await;
            revoker.revoke();
        });
        let started = Instant::now();
        g.ran_out().await;
        assert!(started.elapsed() < Duration::from_secs(4), "a revocation is seen at once");
    }
}
