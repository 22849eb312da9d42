//! Progress bars: one per layer, on stderr, hidden when not a terminal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Live counters of the current layer, drawn as a bar.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    bar: Mutex<Option<ProgressBar>>,
    errors: AtomicU64,
    carried: AtomicU64,
}

impl Progress {
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self { enabled, bar: Mutex::new(None), errors: AtomicU64::new(0), carried: AtomicU64::new(0) }
    }

    /// Starts the bar of `layer` with `total` URLs to fetch.
    pub fn start_layer(&self, layer: u32, total: u64, done: u64) {
        self.errors.store(0, Ordering::Relaxed);
        self.carried.store(0, Ordering::Relaxed);
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix:>8} [{bar:30}] {pos}/{len} pages {per_sec:>10} {msg} [{elapsed_precise}]",
            )
            .expect("template is valid")
            .progress_chars("=> "),
        );
        bar.set_prefix(format!("layer {layer}"));
        bar.set_position(done);
        if let Ok(mut b) = self.bar.lock() {
            *b = Some(bar);
        }
    }

    /// One URL finished.
    pub fn page_done(&self, failed: bool) {
        let errors =
            if failed { self.errors.fetch_add(1, Ordering::Relaxed) + 1 } else { self.errors.load(Ordering::Relaxed) };
        if let Ok(b) = self.bar.lock() {
            if let Some(bar) = b.as_ref() {
                bar.inc(1);
                if failed {
                    bar.set_message(format!("errors {errors}"));
                }
            }
        }
    }

    /// URLs left for the next layer.
    pub fn pages_carried(&self, n: u64) {
        self.carried.fetch_add(n, Ordering::Relaxed);
        if let Ok(b) = self.bar.lock() {
            if let Some(bar) = b.as_ref() {
                bar.inc(n);
            }
        }
    }

    /// Ends the current bar, leaving its last state on screen.
    pub fn finish_layer(&self) {
        if let Ok(mut b) = self.bar.lock() {
            if let Some(bar) = b.take() {
                bar.finish();
            }
        }
    }
}

impl crate::map::MapProgress for Progress {
    fn page_done(&self, failed: bool) {
        Progress::page_done(self, failed);
    }
    fn pages_carried(&self, n: u64) {
        Progress::pages_carried(self, n);
    }
    fn pages_skipped(&self, n: u64) {
        if let Ok(b) = self.bar.lock() {
            if let Some(bar) = b.as_ref() {
                bar.inc(n);
            }
        }
    }
}
