//! The resource governor (`--max-memory`, `--cpu-target`): the in-flight
//! request limit follows the process's memory and CPU use.
//!
//! A task samples the process every [`TICK`]: its resident memory (`VmRSS`
//! of `/proc/self/status`) and its CPU time (user + system, fields 14 and
//! 15 of `/proc/self/stat`) since the sample before, over the wall time
//! between them, as a percentage of all the machine's cores. The control
//! law ([`Law`]) is additive increase, multiplicative decrease, as TCP's
//! congestion window. Under a memory cap it starts at 1/[`SLOW_START`] of
//! `--concurrency`, since a burst of responses lands within one sample;
//! memory counts as over 90 % of the cap when it is, or when its rise since
//! the last sample, twice more, would take it there. Then (or when CPU is
//! above its target) the limit is halved (never below 1), then held for
//! [`HOLD_TICKS`] samples while the requests already out finish and their
//! memory is given back, unless memory is above the cap itself; when memory is under 80 % of the cap and CPU 10
//! points under its target, the limit grows by 1/32 of `--concurrency`
//! (at least 1) a sample, up to `--concurrency`; in between it holds.
//!
//! The limit is the fetcher's global semaphore. Shrinking forgets permits:
//! those free at once, and the rest as requests in flight give theirs back
//! (a debt repaid at each sample), so a request already sent always
//! finishes and only new ones wait. Growing first cancels debt, then adds
//! permits. While memory is tight the map task also writes its batches
//! sooner ([`Governor::memory_tight`]), so fewer rows wait in memory.
//!
//! Under a memory cap the requests in flight are also counted in bytes:
//! each holds about [`REQUEST_EXPANSION`] times the mean page taken so far
//! (its body as it arrives, and the client's buffers). At each sample the
//! limit is lowered, at once and without a hold, to what half of the room
//! under 90 % of the cap holds, the room reckoned without the requests out
//! now; the other half is the pages' allowance below. A burst of large
//! pages is so cut back within one sample, not within halvings four
//! samples apart.
//!
//! Memory that grows with page size is held after the request too: the
//! pages waiting for and in the parse workers, and the rows waiting for
//! their batch. Under a memory cap those are bounded in bytes by
//! [`pages`]: an allowance set at each sample from the room under the
//! cap. And freed memory that the allocator keeps for reuse counts in the
//! resident memory the cap is about: from a sample above [`NEAR_ON`] % of
//! the cap until one under [`NEAR_OFF`] %, the governor has the allocator
//! give freed memory back to the system at once ([`set_allocator_release`]).
//!
//! Some memory no limit reaches: the program's code, its runtime and
//! threads, each map task's writers, the pages being parsed. When the
//! limit is down to 1 and memory is still above the cap, the cap is at or
//! below this crawl's floor and cannot be held: the governor says so
//! once, with the memory measured and the cap (a warning on stderr, and
//! `over_floor` in its figures), and goes on at one request at a time.

mod law;
pub mod pages;

pub use law::{byte_ceiling, Law};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Time between two samples.
pub const TICK: Duration = Duration::from_millis(150);
/// Samples after a shrink during which the limit is not halved again.
pub const HOLD_TICKS: u32 = 4;
/// Under a memory cap the limit starts at `--concurrency` / this.
pub const SLOW_START: usize = 8;
/// Bytes a request in flight holds, per byte of the mean page: the body
/// as it arrives, and the HTTP client's buffers that grow with it.
pub const REQUEST_EXPANSION: u64 = 2;
/// The allocator gives freed memory back at once from a sample above this
/// percentage of the cap...
pub const NEAR_ON: u64 = 30;
/// ...until one under this one. Far below the cap's 90 % threshold: the
/// memory the allocator keeps while a crawl ramps up stays resident, and
/// on 512 KB pages it made a crawl capped at 72M peak at 73.5-76 MiB
/// where giving it back from the start held 71.7 MiB, at the same speed.
/// A cap many times the crawl's memory never turns it on.
pub const NEAR_OFF: u64 = 25;

/// The governor's settings; a run without either has no governor.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GovernorConfig {
    /// Resident memory the process should stay under, in bytes.
    pub max_memory: Option<u64>,
    /// CPU use to stay under, in percent of all cores (1..=100).
    pub cpu_target: Option<u8>,
}

impl GovernorConfig {
    /// Whether a governor runs at all.
    #[must_use]
    pub fn active(&self) -> bool {
        self.max_memory.is_some() || self.cpu_target.is_some()
    }
}

/// One sample of the process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Resident memory, bytes.
    pub rss: u64,
    /// CPU use since the previous sample, percent of all cores.
    pub cpu: f64,
}

/// What the governor saw, over a layer or the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GovernorFigures {
    /// The largest resident memory sampled, bytes.
    pub peak_rss_bytes: u64,
    /// The smallest in-flight limit set.
    pub min_limit: u64,
    /// The in-flight limit's mean over the samples.
    pub mean_limit: f64,
    /// Times the limit was halved.
    pub shrinks: u64,
    pub samples: u64,
    /// Under a memory cap: the most bytes of pages (body and text) the map
    /// tasks held at once after their requests (see [`pages`]).
    #[serde(default)]
    pub peak_page_bytes: u64,
    /// Memory was above the cap at an in-flight limit of 1: the cap is at
    /// or below the crawl's floor.
    #[serde(default)]
    pub over_floor: bool,
}

impl GovernorFigures {
    /// `self` and `other` together (a run's figures from its layers').
    #[must_use]
    pub fn merge(self, other: Self) -> Self {
        let samples = self.samples + other.samples;
        #[allow(clippy::cast_precision_loss)]
        let mean_limit = if samples == 0 {
            0.0
        } else {
            (self.mean_limit * self.samples as f64 + other.mean_limit * other.samples as f64) / samples as f64
        };
        let min_limit = match (self.samples, other.samples) {
            (0, _) => other.min_limit,
            (_, 0) => self.min_limit,
            _ => self.min_limit.min(other.min_limit),
        };
        Self {
            peak_rss_bytes: self.peak_rss_bytes.max(other.peak_rss_bytes),
            min_limit,
            mean_limit,
            shrinks: self.shrinks + other.shrinks,
            samples,
            peak_page_bytes: self.peak_page_bytes.max(other.peak_page_bytes),
            over_floor: self.over_floor || other.over_floor,
        }
    }
}

/// What has the allocator give freed memory back at once, or keep it at
/// its own pace.
static ALLOCATOR_RELEASE: OnceLock<fn(bool)> = OnceLock::new();

/// Registers `release`, which the governor calls with `true` when memory
/// comes near the cap (above [`NEAR_ON`] %) and `false` when it is well
/// under it again (under [`NEAR_OFF`] %): with `true` the program's allocator should give the
/// memory it frees back to the system at once, and what it keeps now; with
/// `false` it may keep freed memory for reuse again, which is faster. The
/// binary registers jemalloc's decay settings; a program that registers
/// nothing keeps its allocator's own pace. The first registration stays.
pub fn set_allocator_release(release: fn(bool)) {
    let _ = ALLOCATOR_RELEASE.set(release);
}

/// The governor of one fetcher: its law, the semaphore it resizes, and
/// what it saw since its figures were last taken.
pub struct Governor {
    global: Arc<Semaphore>,
    state: Mutex<State>,
    tight: AtomicBool,
    /// `--max-memory`, bytes.
    cap: Option<u64>,
    /// The pages the map tasks hold after their requests, in bytes.
    pages: pages::PageBytes,
    /// Memory is near the cap: the allocator gives freed memory back at once.
    near: AtomicBool,
    /// The cap was found below the crawl's floor (and said so).
    over_floor: AtomicBool,
}

struct State {
    law: Law,
    /// Permits still to forget: the limit was lowered by more than were free.
    debt: usize,
    peak: u64,
    min: usize,
    limit_sum: u64,
    samples: u64,
    shrinks: u64,
    over_floor: bool,
}

impl Governor {
    /// A governor of `global`, whose `max` permits are the full limit.
    #[must_use]
    pub fn new(cfg: GovernorConfig, global: Arc<Semaphore>, max: usize) -> Self {
        let law = Law::new(cfg, max);
        // `global` was made with `max` permits: those above the law's
        // starting limit are forgotten (owed, if some are out already).
        let above = max.saturating_sub(law.limit());
        let debt = above - global.forget_permits(above);
        let state =
            State { min: law.limit(), law, debt, peak: 0, limit_sum: 0, samples: 0, shrinks: 0, over_floor: false };
        let pages = pages::PageBytes::new(cfg.max_memory.is_some());
        Self {
            global,
            state: Mutex::new(state),
            tight: AtomicBool::new(false),
            cap: cfg.max_memory,
            pages,
            near: AtomicBool::new(false),
            over_floor: AtomicBool::new(false),
        }
    }

    /// Starts sampling every [`TICK`] on the current tokio runtime, until
    /// the governor is dropped; without a runtime, nothing is started.
    pub fn start(self: &Arc<Self>) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            tracing::warn!("no async runtime: the resource governor does not run");
            return;
        };
        let weak: Weak<Self> = Arc::downgrade(self);
        rt.spawn(async move {
            let mut cpu = CpuClock::new();
            let mut tick = tokio::time::interval(TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(g) = weak.upgrade() else { break };
                let Some(rss) = resident_bytes() else { continue };
                g.feed(Sample { rss, cpu: cpu.percent() });
            }
        });
    }

    /// Feeds one sample to the law and resizes the semaphore to its limit
    /// and the pages' allowance to the room under the cap.
    pub fn feed(&self, s: Sample) {
        if let Some(cap) = self.cap {
            let near = self.near.load(Ordering::Relaxed);
            let now = if near {
                s.rss.saturating_mul(100) >= cap.saturating_mul(NEAR_OFF)
            } else {
                s.rss.saturating_mul(100) > cap.saturating_mul(NEAR_ON)
            };
            if now != near {
                self.near.store(now, Ordering::Relaxed);
                if let Some(release) = ALLOCATOR_RELEASE.get() {
                    release(now);
                }
            }
            self.pages.resize(s.rss, cap);
        }
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let before = st.law.limit();
        // Requests out now (their permits not back, the debt's included).
        let out = (before + st.debt).saturating_sub(self.global.available_permits());
        if let (Some(cap), 1) = (self.cap, before) {
            if s.rss > cap {
                st.over_floor = true;
                if !self.over_floor.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "--max-memory {} MiB is below this crawl's floor: at one request at a time its resident memory was {:.1} MiB; the crawl goes on, over the cap (raise the cap, or lower --partitions)",
                        cap >> 20,
                        mib(s.rss),
                    );
                }
            }
        }
        let mut after = st.law.step(s);
        if let (Some(cap), Some(page)) = (self.cap, self.pages.mean_page()) {
            after = st.law.ceil(byte_ceiling(s.rss, cap, out, page.saturating_mul(REQUEST_EXPANSION)));
        }
        self.tight.store(st.law.memory_tight(s), Ordering::Relaxed);
        if after < before {
            st.shrinks += 1;
            st.debt += before - after;
        } else if after > before {
            let mut more = after - before;
            let cancelled = more.min(st.debt);
            st.debt -= cancelled;
            more -= cancelled;
            self.global.add_permits(more);
        }
        // Permits given back by finished requests pay the debt off.
        let paid = self.global.forget_permits(st.debt);
        st.debt -= paid;
        tracing::debug!(
            rss = s.rss >> 20,
            cpu = s.cpu.round(),
            limit = after,
            debt = st.debt,
            pages_held = self.pages.held() >> 10,
            pages_allowed = self.pages.allowance().map(|a| a >> 10),
            "governor sample"
        );
        st.peak = st.peak.max(s.rss);
        st.min = st.min.min(after);
        st.limit_sum += after as u64;
        st.samples += 1;
    }

    /// The current in-flight limit.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).law.limit()
    }

    /// Whether the last sample was above 90 % of `--max-memory`.
    #[must_use]
    pub fn memory_tight(&self) -> bool {
        self.tight.load(Ordering::Relaxed)
    }

    /// The pages the map tasks of this process hold, and their allowance.
    #[must_use]
    pub fn pages(&self) -> &pages::PageBytes {
        &self.pages
    }

    /// What the governor saw since the figures were last taken; starts
    /// counting again (the limit itself is kept).
    pub fn take_figures(&self) -> GovernorFigures {
        let mut st = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        #[allow(clippy::cast_precision_loss)]
        let mean_limit = if st.samples == 0 { 0.0 } else { st.limit_sum as f64 / st.samples as f64 };
        let figures = GovernorFigures {
            peak_rss_bytes: st.peak,
            min_limit: st.min as u64,
            mean_limit,
            shrinks: st.shrinks,
            samples: st.samples,
            peak_page_bytes: if self.cap.is_some() { self.pages.take_peak() as u64 } else { 0 },
            over_floor: st.over_floor,
        };
        st.min = st.law.limit();
        (st.peak, st.limit_sum, st.samples, st.shrinks, st.over_floor) = (0, 0, 0, 0, false);
        figures
    }
}

fn mib(bytes: u64) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let m = bytes as f64 / f64::from(1 << 20);
    m
}

/// The process's resident memory (`VmRSS`), in bytes.
#[must_use]
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// The process's CPU time so far (user + system), in clock ticks.
fn cpu_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count from after its `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// CPU use between two readings, as a percentage of all cores.
struct CpuClock {
    last: Option<(u64, Instant)>,
    ticks_per_second: f64,
    cores: f64,
}

impl CpuClock {
    fn new() -> Self {
        // SAFETY: sysconf reads a constant of the system and has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        #[allow(clippy::cast_precision_loss)]
        let ticks_per_second = if hz > 0 { hz as f64 } else { 100.0 };
        #[allow(clippy::cast_precision_loss)]
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
        Self { last: cpu_ticks().map(|t| (t, Instant::now())), ticks_per_second, cores }
    }

    /// Percent of all cores used since the last call (0 on the first).
    fn percent(&mut self) -> f64 {
        let (Some(now_ticks), now) = (cpu_ticks(), Instant::now()) else { return 0.0 };
        let pct = match self.last {
            Some((t, at)) if now > at => {
                #[allow(clippy::cast_precision_loss)]
                let used = now_ticks.saturating_sub(t) as f64 / self.ticks_per_second;
                100.0 * used / (now - at).as_secs_f64() / self.cores
            }
            _ => 0.0,
        };
        self.last = Some((now_ticks, now));
        pct
    }
}

#[cfg(test)]
mod tests {
    use super::law::tests::{at, mem, MIB};
    use super::*;

    #[test]
    fn a_cap_below_the_floor_is_reported() {
        let sem = Arc::new(Semaphore::new(4));
        let g = Governor::new(mem(50), Arc::clone(&sem), 4);
        for _ in 0..(HOLD_TICKS + 2) {
            g.feed(at(60, 0.0));
        }
        assert_eq!(g.limit(), 1);
        assert!(g.take_figures().over_floor, "60 MiB at one request, over a 50 MiB cap");
        g.feed(at(40, 0.0));
        assert!(!g.take_figures().over_floor, "counted again per layer");
    }

    #[test]
    fn a_shrink_never_takes_a_permit_from_a_request_in_flight() {
        let sem = Arc::new(Semaphore::new(8));
        let g = Governor::new(mem(100), Arc::clone(&sem), 8);
        assert_eq!((g.limit(), sem.available_permits()), (1, 1), "slow start: 7 permits forgotten");
        while g.limit() < 8 {
            g.feed(at(10, 0.0));
        }
        assert_eq!(sem.available_permits(), 8);
        g.take_figures();
        let held: Vec<_> = (0..6).map(|_| Arc::clone(&sem).try_acquire_owned().expect("permit")).collect();
        g.feed(at(95, 0.0));
        assert_eq!(g.limit(), 4);
        assert_eq!(sem.available_permits(), 0, "the 2 free permits forgotten, 2 owed");
        drop(held);
        g.feed(at(85, 0.0));
        assert_eq!(sem.available_permits(), 4, "the debt paid from the permits given back");
        for _ in 0..8 {
            g.feed(at(10, 0.0));
        }
        assert_eq!((g.limit(), sem.available_permits()), (8, 8), "grown back to --concurrency");
        let f = g.take_figures();
        assert_eq!((f.peak_rss_bytes, f.min_limit, f.shrinks, f.samples), (95 * MIB, 4, 1, 10));
        assert!(f.mean_limit > 4.0 && f.mean_limit < 8.0, "{f:?}");
        assert_eq!(g.take_figures().samples, 0, "taken: counting starts again");
    }

    #[test]
    fn figures_merge_over_layers() {
        let a = GovernorFigures {
            peak_rss_bytes: 5,
            min_limit: 4,
            mean_limit: 6.0,
            shrinks: 1,
            samples: 2,
            peak_page_bytes: 7,
            over_floor: false,
        };
        let b = GovernorFigures {
            peak_rss_bytes: 9,
            min_limit: 2,
            mean_limit: 3.0,
            shrinks: 2,
            samples: 1,
            peak_page_bytes: 3,
            over_floor: true,
        };
        let m = a.merge(b).merge(GovernorFigures::default());
        assert_eq!((m.peak_rss_bytes, m.min_limit, m.shrinks, m.samples, m.peak_page_bytes), (9, 2, 3, 3, 7));
        assert!((m.mean_limit - 5.0).abs() < 1e-9);
        assert!(m.over_floor, "one layer over the floor: the run was");
    }

    #[test]
    fn this_process_is_sampled() {
        assert!(resident_bytes().is_some_and(|b| b > MIB));
        let mut clock = CpuClock::new();
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(200) {}
        let pct = clock.percent();
        // Other tests run beside this one; clock ticks are coarse.
        assert!(pct > 0.0 && pct <= 150.0, "{pct}");
    }
}
