//! A request's task: it runs on its own, takes its host's next send slot
//! before it goes out, and holds its share of the global limit until the
//! scheduler takes it.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::BoxFuture;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::Done;

/// A stamp of a host that has sent nothing yet (stamps are at least 1).
pub(super) const NEVER: u64 = 0;

/// A host's send clock, in microseconds since the fetcher's epoch: the
/// latest send slot taken ([`reserve_slot`]), and the latest request as it
/// really went out. It belongs to the fetcher, so it holds across layers.
#[derive(Debug, Default)]
pub(crate) struct SendClock {
    pub(super) slot: AtomicU64,
    went: AtomicU64,
}

fn micros(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Takes the host's next send slot: now, or `delay` after the slot its
/// latest request took, whichever is later; the request waits for it and
/// then goes out.
///
/// Politeness is enforced here, where the request leaves, not only where
/// the scheduler decides: a task the runtime polls late (a loaded machine)
/// would otherwise go out right beside the next request to the same host,
/// which the scheduler let start `delay` after this one was dispatched,
/// not after it was sent. The slot is claimed atomically, so requests of
/// one host are spaced by `delay` whichever order their tasks run in, in
/// this layer or the next (the clock belongs to the fetcher).
pub(super) fn reserve_slot(sent: &AtomicU64, epoch: Instant, delay: std::time::Duration) -> Instant {
    let now = u64::try_from(epoch.elapsed().as_micros()).unwrap_or(u64::MAX).max(1);
    let gap = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
    let mut last = sent.load(Ordering::Acquire);
    loop {
        let slot = if last == NEVER { now } else { now.max(last.saturating_add(gap)) };
        match sent.compare_exchange_weak(last, slot, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return epoch + std::time::Duration::from_micros(slot),
            Err(seen) => last = seen,
        }
    }
}

/// Waits for the host's next send slot ([`reserve_slot`]), and then, if
/// need be, for `delay` after the host's latest request as it really went
/// out: a task the runtime polled late (a loaded machine) went out late,
/// and the next one, whose slot was reserved from the earlier plan, would
/// otherwise go out right beside it (seen: 34 ms apart at an 80 ms delay).
/// Going out is claimed atomically, so no two requests of a host leave
/// closer than `delay`, whichever task runs first.
pub(super) async fn wait_for_slot(clock: &SendClock, epoch: Instant, delay: std::time::Duration) {
    let slot = reserve_slot(&clock.slot, epoch, delay);
    // Most slots are now (no delay, or a host not requested lately): no
    // timer for those.
    if slot > Instant::now() {
        tokio::time::sleep_until(slot).await;
    }
    let gap = micros(delay);
    loop {
        let now = micros(epoch.elapsed()).max(1);
        let went = clock.went.load(Ordering::Acquire);
        if went != NEVER && now < went.saturating_add(gap) {
            tokio::time::sleep_until(epoch + std::time::Duration::from_micros(went.saturating_add(gap))).await;
            continue;
        }
        if clock.went.compare_exchange(went, now.max(went), Ordering::AcqRel, Ordering::Acquire).is_ok() {
            // A late start pushes the next slots back with it.
            clock.slot.fetch_max(now, Ordering::AcqRel);
            return;
        }
    }
}

/// Runs a request as its own task, so it makes progress from the moment it
/// is dispatched, whatever the scheduler loop is doing (waiting for the
/// parser to take results, for instance). A panic inside the task comes
/// back as a failed result built by `lost`, so no URL goes missing.
///
/// The global permit is held until the scheduler takes the result, not
/// only until the response is read: a partition whose parser is behind
/// then holds its share of the permits, and the pages waiting for it are
/// counted in the limit. When it was released with the response, the other
/// partitions took the permits, and the 320-site scale crawl's heap held
/// 18.8 MB in finished requests at its peak; holding the permit took its
/// peak RSS 258 -> 234 MB (one run), and the cpu crawl's 218 -> 172 MiB
/// at the same CPU (3 pairs, medians).
pub(super) fn spawn_request(
    request: impl std::future::Future<Output = Done> + Send + 'static,
    lost: impl FnOnce(String) -> Done + Send + 'static,
    permit: OwnedSemaphorePermit,
) -> BoxFuture<'static, Done> {
    let task = tokio::spawn(futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(request)));
    Box::pin(async move {
        let _permit = permit;
        match task.await {
            Ok(Ok(done)) => done,
            Ok(Err(_)) => lost("the request task panicked".to_string()),
            Err(e) => lost(format!("the request task failed: {e}")),
        }
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::sync::Semaphore;

    use super::*;
    use crate::ErrorKind;

    /// Requests of one host take slots `delay` apart, however many claim
    /// one at once and in whatever order their tasks run.
    #[test]
    fn send_slots_are_spaced_by_the_delay_whoever_claims_them() {
        let sent = AtomicU64::new(NEVER);
        let epoch = Instant::now();
        let delay = std::time::Duration::from_millis(80);
        let slots: Vec<Instant> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..8)
                .map(|_| s.spawn(|| (0..25).map(|_| reserve_slot(&sent, epoch, delay)).collect::<Vec<_>>()))
                .collect();
            workers.into_iter().flat_map(|w| w.join().expect("no panic")).collect()
        });
        let mut slots = slots;
        slots.sort();
        assert_eq!(slots.len(), 200);
        for pair in slots.windows(2) {
            assert!(pair[1] - pair[0] >= delay, "two slots {:?} apart", pair[1] - pair[0]);
        }
        // The first slot is now: a host that sent nothing yet is not held.
        assert!(slots[0] - epoch < delay);
    }

    /// A request that went out late (its task polled late) holds the next
    /// one back, although that one's slot came from the earlier plan.
    #[tokio::test(start_paused = true)]
    async fn a_late_request_holds_the_next_one_back() {
        let clock = SendClock::default();
        let epoch = Instant::now();
        let delay = std::time::Duration::from_millis(80);
        let first = reserve_slot(&clock.slot, epoch, delay);
        assert_eq!(first, epoch + std::time::Duration::from_micros(1));
        // The first request's task runs 30 ms late; meanwhile the second
        // takes its slot at 80 ms.
        tokio::time::advance(std::time::Duration::from_millis(30)).await;
        let ahead = reserve_slot(&clock.slot, epoch, delay);
        assert!(ahead - epoch <= std::time::Duration::from_millis(81), "{:?}", ahead - epoch);
        // The first goes out now, at 30 ms ...
        clock.went.store(micros(epoch.elapsed()), Ordering::Release);
        // ... and a third request, whose slot is 160 ms, and the second,
        // which waits from 80 ms, both leave at least 80 ms after it.
        let c = std::sync::Arc::new(clock);
        let wait = |c: std::sync::Arc<SendClock>| async move {
            wait_for_slot(&c, epoch, delay).await;
            epoch.elapsed()
        };
        let (a, b) = tokio::join!(wait(std::sync::Arc::clone(&c)), wait(std::sync::Arc::clone(&c)));
        let (early, late) = (a.min(b), a.max(b));
        assert!(early >= std::time::Duration::from_millis(110), "{early:?}: 80 ms after the late one at 30 ms");
        assert!(late - early >= delay, "{early:?} and {late:?}");
    }

    #[tokio::test]
    async fn a_finished_request_keeps_its_permit_until_its_result_is_taken() {
        let limit = Arc::new(Semaphore::new(1));
        let permit = Arc::clone(&limit).try_acquire_owned().expect("one permit");
        let (tx, rx) = tokio::sync::oneshot::channel();
        let request = async move {
            let _ = tx.send(());
            Done::Robots { host: 7, resp: Err((ErrorKind::Internal, "done".into())) }
        };
        let lost = |reason: String| Done::Robots { host: 0, resp: Err((ErrorKind::Internal, reason)) };
        let pending = spawn_request(request, lost, permit);
        rx.await.expect("the request ran on its own");
        tokio::task::yield_now().await;
        assert_eq!(limit.available_permits(), 0, "finished, but not taken yet");
        let Done::Robots { host, .. } = pending.await else { panic!("a robots result") };
        assert_eq!((host, limit.available_permits()), (7, 1), "taken: the permit is back");
    }

    #[tokio::test]
    async fn a_request_that_panics_comes_back_as_lost_and_frees_its_permit() {
        let limit = Arc::new(Semaphore::new(1));
        let permit = Arc::clone(&limit).try_acquire_owned().expect("one permit");
        let request = async { boom() };
        let lost = |reason: String| Done::Robots { host: 2, resp: Err((ErrorKind::Internal, reason)) };
        let Done::Robots { host, resp } = spawn_request(request, lost, permit).await else { panic!("a robots result") };
        assert_eq!(host, 2);
        assert!(resp.is_err_and(|(_, why)| why.contains("panicked")));
        assert_eq!(limit.available_permits(), 1);
    }

    fn boom() -> Done {
        panic!("a bug met on a page")
    }
}
