//! What a map task holds after the request, in bytes, under the memory
//! cap (docs/src/governor.md): pages taken from the fetcher and not
//! yet processed, and processed rows not yet handed to the Parquet
//! encoder. The task takes a fetched page only while the governor's
//! allowance for the whole process fits ([`crate::fetch::governor::pages`]);
//! without a memory cap it counts nothing and every page fits.

use tokio::sync::watch;

use crate::fetch::governor::pages::PageBytes;

/// One map task's share of the process's page bytes.
pub(super) struct HeldPages<'a> {
    pages: Option<&'a PageBytes>,
    /// Bytes of pages taken and not yet back from the parse workers.
    fetched: usize,
    /// Bytes of rows waiting in the task's outputs.
    buffered: usize,
    wake: Option<watch::Receiver<u64>>,
}

impl<'a> HeldPages<'a> {
    /// The accounting of a task whose fetcher's governor is `pages` (none
    /// without a memory cap).
    pub(super) fn new(pages: Option<&'a PageBytes>) -> Self {
        let pages = pages.filter(|p| p.allowance().is_some());
        Self { pages, fetched: 0, buffered: 0, wake: pages.map(PageBytes::subscribe) }
    }

    /// Whether the task may take one more fetched page now. Marks the
    /// wake-ups seen, so [`Self::changed`] waits for the next one.
    pub(super) fn room(&mut self) -> bool {
        if let Some(w) = &mut self.wake {
            w.borrow_and_update();
        }
        self.pages.is_none_or(PageBytes::fits)
    }

    /// Waits until a page may have become possible to take (a page
    /// released anywhere in the process, or a new allowance); never
    /// without a memory cap.
    pub(super) async fn changed(&mut self) {
        if let Some(w) = &mut self.wake {
            if w.changed().await.is_ok() {
                return;
            }
        }
        std::future::pending::<()>().await;
    }

    /// Whether rows should be written as soon as they come: the process
    /// holds as much as it may.
    pub(super) fn over(&self) -> bool {
        self.pages.is_some_and(|p| !p.fits())
    }

    /// Fetched pages that may wait between the fetcher and the task: under
    /// a memory cap one, since pages waiting there are not counted.
    pub(super) fn queue(&self, uncapped: usize) -> usize {
        if self.pages.is_some() {
            1
        } else {
            uncapped
        }
    }

    /// A page of `bytes` was taken from the fetcher.
    pub(super) fn took(&mut self, bytes: usize) {
        if let Some(p) = self.pages {
            self.fetched += bytes;
            p.took_page(bytes);
            p.hold(bytes);
        }
    }

    /// A page taken with `bytes` came back from the parse workers; its row
    /// is now in the outputs, which hold `buffered` bytes in all.
    pub(super) fn processed(&mut self, bytes: usize, buffered: usize) {
        if let Some(p) = self.pages {
            // The row's bytes are counted before the page's are released.
            self.written(buffered);
            self.fetched = self.fetched.saturating_sub(bytes);
            p.release(bytes);
        }
    }

    /// The outputs now hold `buffered` bytes of rows (fewer after a batch
    /// was written).
    pub(super) fn written(&mut self, buffered: usize) {
        if let Some(p) = self.pages {
            if buffered > self.buffered {
                p.hold(buffered - self.buffered);
            } else {
                p.release(self.buffered - buffered);
            }
            self.buffered = buffered;
        }
    }
}

impl Drop for HeldPages<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.pages {
            p.release(self.fetched + self.buffered);
        }
    }
}
