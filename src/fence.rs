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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

/// Until when this process may act, in ms since `origin`.
#[derive(Debug)]
pub struct Fence {
    origin: Instant,
    until_ms: AtomicU64,
}

impl Fence {
    /// A fence that holds for `valid_for` from now.
    #[must_use]
    pub fn new(valid_for: Duration) -> Arc<Self> {
        let origin = Instant::now();
        Arc::new(Self { origin, until_ms: AtomicU64::new(ms(valid_for)) })
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
}
