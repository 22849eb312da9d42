//! The governor's byte allowance for pages (docs/src/governor.md):
//! under `--max-memory`, what the map tasks of a process hold after the
//! request, in bytes of body and text, is bounded as well as the requests
//! in flight.
//!
//! A page is held from the moment a map task takes it from its fetcher
//! (waiting for a parse worker, being parsed) until its row is handed to
//! the Parquet encoder (its batch written). Map tasks count what they hold
//! here ([`PageBytes::hold`], [`PageBytes::release`]) and take a fetched
//! page only while [`PageBytes::fits`]: while the process holds less than
//! the allowance, or nothing at all (one page at a time always goes
//! through, so a crawl never stalls).
//!
//! The allowance follows the process's resident memory at each sample:
//! the room left under 90 % of the cap, divided by [`EXPANSION`] (what a
//! page costs while it is parsed and written, per byte of body), on top of
//! what is held at the sample. Memory above 90 % of the cap makes the
//! allowance smaller than what is held, so no page is taken until enough
//! are written; whatever made the memory (pages or not), pages then go one
//! at a time. The map tasks are woken whenever the allowance is set or a
//! page released ([`PageBytes::subscribe`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::watch;

/// Bytes of memory a page takes while it is parsed and its row written,
/// per byte of body and text counted: the body, its decoded copy, the
/// parse's text runs and blocks, the row's copy in the batch and the
/// encoder's open page. On the test web's 512 KB pages the resident memory
/// rose by about 2 bytes per byte held (the governor's samples over the
/// second layer of `tests/e2e/governor.rs`'s capped crawl, fitted); the pages
/// being parsed take more than those waiting, and 4 leaves that margin.
pub const EXPANSION: u64 = 4;

/// The pages held by the map tasks of one process, and how many bytes of
/// them the memory cap allows.
#[derive(Debug)]
pub struct PageBytes {
    capped: bool,
    held: AtomicUsize,
    peak: AtomicUsize,
    allowance: AtomicUsize,
    /// Pages taken from the fetchers, and their bytes: the mean page the
    /// in-flight limit's byte ceiling is reckoned in.
    taken: AtomicU64,
    taken_bytes: AtomicU64,
    /// Bumped whenever the allowance is set or a page released.
    wake: watch::Sender<u64>,
}

impl PageBytes {
    /// The accounting of a process under a memory cap (`capped`), or
    /// without one: then every page fits.
    #[must_use]
    pub fn new(capped: bool) -> Self {
        // Until the first sample: one page at a time.
        let allowance = if capped { 0 } else { usize::MAX };
        Self {
            capped,
            held: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            allowance: AtomicUsize::new(allowance),
            taken: AtomicU64::new(0),
            taken_bytes: AtomicU64::new(0),
            wake: watch::Sender::new(0),
        }
    }

    /// Whether a map task may take one more fetched page.
    #[must_use]
    pub fn fits(&self) -> bool {
        let held = self.held.load(Ordering::Acquire);
        held == 0 || held < self.allowance.load(Ordering::Acquire)
    }

    /// A map task now holds `bytes` more.
    pub fn hold(&self, bytes: usize) {
        let now = self.held.fetch_add(bytes, Ordering::AcqRel).saturating_add(bytes);
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// A map task took a fetched page of `bytes` (counted for the mean
    /// page, apart from what is held).
    pub fn took_page(&self, bytes: usize) {
        self.taken.fetch_add(1, Ordering::Relaxed);
        self.taken_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The mean bytes of the pages taken so far (none before the first).
    #[must_use]
    pub fn mean_page(&self) -> Option<u64> {
        let n = self.taken.load(Ordering::Relaxed);
        (n > 0).then(|| self.taken_bytes.load(Ordering::Relaxed) / n)
    }

    /// A map task no longer holds `bytes` (written, or dropped).
    pub fn release(&self, bytes: usize) {
        if bytes == 0 {
            return;
        }
        let _ = self.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |h| Some(h.saturating_sub(bytes)));
        if self.capped {
            self.wake.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Bytes held now.
    #[must_use]
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }

    /// The allowance, under a memory cap.
    #[must_use]
    pub fn allowance(&self) -> Option<usize> {
        self.capped.then(|| self.allowance.load(Ordering::Acquire))
    }

    /// The most bytes held at once since the last call.
    pub fn take_peak(&self) -> usize {
        self.peak.swap(self.held(), Ordering::AcqRel)
    }

    /// Changes whenever a page may have become possible to take.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.wake.subscribe()
    }

    /// Sets the allowance from a sample of resident memory `rss` under the
    /// cap `cap`: what is held now plus the room under 90 % of the cap per
    /// [`EXPANSION`] (less what is held when memory is above it).
    pub fn resize(&self, rss: u64, cap: u64) {
        let threshold = cap / 10 * 9;
        let held = self.held() as u64;
        let allowance = if rss <= threshold {
            held.saturating_add((threshold - rss) / EXPANSION)
        } else {
            held.saturating_sub((rss - threshold) / EXPANSION)
        };
        self.allowance.store(usize::try_from(allowance).unwrap_or(usize::MAX), Ordering::Release);
        self.wake.send_modify(|n| *n = n.wrapping_add(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn without_a_cap_every_page_fits() {
        let p = PageBytes::new(false);
        p.hold(1 << 40);
        assert!(p.fits());
        assert_eq!(p.allowance(), None);
    }

    #[test]
    fn the_mean_page_is_of_the_pages_taken() {
        let p = PageBytes::new(true);
        assert_eq!(p.mean_page(), None);
        p.took_page(100);
        p.took_page(300);
        p.hold(1 << 20);
        assert_eq!(p.mean_page(), Some(200), "rows held are not pages taken");
    }

    #[test]
    fn the_allowance_is_the_room_under_the_threshold_per_expansion() {
        let p = PageBytes::new(true);
        assert!(p.fits(), "nothing held: one page always goes");
        p.hold(1);
        assert!(!p.fits(), "before the first sample, one page at a time");
        p.release(1);
        // Cap 100 MiB: threshold 90 MiB; at 50 MiB, 40 MiB of room: 10 MiB of pages.
        p.resize(50 * MIB, 100 * MIB);
        let allowance = usize::try_from(40 * MIB / EXPANSION).expect("fits");
        assert_eq!(p.allowance(), Some(allowance));
        p.hold(allowance - 1);
        assert!(p.fits());
        p.hold(1);
        assert!(!p.fits());
        assert_eq!(p.take_peak(), allowance);
        // Above the threshold: the allowance falls below what is held.
        p.resize(98 * MIB, 100 * MIB);
        assert!(p.allowance().is_some_and(|a| a < p.held()));
        assert!(!p.fits());
        p.release(allowance);
        assert!(p.fits(), "everything written: one page goes again");
    }

    #[tokio::test]
    async fn a_release_wakes_a_waiting_task() {
        let p = std::sync::Arc::new(PageBytes::new(true));
        let mut rx = p.subscribe();
        rx.borrow_and_update();
        p.hold(10);
        let waiter = tokio::spawn(async move {
            rx.changed().await.expect("sender alive");
        });
        p.release(10);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.expect("woken").expect("task");
    }
}
