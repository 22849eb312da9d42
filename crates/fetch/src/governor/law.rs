//! The control law of the governor (docs/src/governor.md): the
//! in-flight limit after each sample, additive increase and multiplicative
//! decrease, and the byte ceiling a memory cap puts on it.

use super::{GovernorConfig, Sample, HOLD_TICKS, SLOW_START};

/// The control law: the in-flight limit after each sample.
#[derive(Clone, Debug)]
pub struct Law {
    cfg: GovernorConfig,
    /// `--concurrency`: the limit never goes above it.
    max: usize,
    limit: usize,
    /// Samples left before the limit may be halved again.
    hold: u32,
    /// The previous sample's resident memory: its rise since says where
    /// the next sample will be.
    last_rss: Option<u64>,
}

impl Law {
    /// A law that starts at the full limit `max`.
    #[must_use]
    pub fn new(cfg: GovernorConfig, max: usize) -> Self {
        let max = max.max(1);
        // Under a memory cap, start slow: a layer's first burst of
        // responses lands within one sample, before any could be seen.
        let limit = if cfg.max_memory.is_some() { (max / SLOW_START).max(1) } else { max };
        Self { cfg, max, limit, hold: 0, last_rss: None }
    }

    /// The current limit.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether `s` is above the memory threshold (90 % of the cap).
    #[must_use]
    pub fn memory_tight(&self, s: Sample) -> bool {
        self.cfg.max_memory.is_some_and(|cap| s.rss.saturating_mul(10) > cap.saturating_mul(9))
    }

    /// Feeds one sample; returns the new limit.
    pub fn step(&mut self, s: Sample) -> usize {
        let cpu_over = self.cfg.cpu_target.is_some_and(|t| s.cpu > f64::from(t));
        // Memory rising fast enough to cross the threshold within two more
        // samples counts as over it already.
        let rise = s.rss.saturating_sub(self.last_rss.unwrap_or(s.rss));
        self.last_rss = Some(s.rss);
        let ahead = Sample { rss: s.rss.saturating_add(rise.saturating_mul(2)), ..s };
        self.hold = self.hold.saturating_sub(1);
        // Above the cap itself, waiting for the requests out is too late.
        let over_cap = self.cfg.max_memory.is_some_and(|cap| s.rss > cap);
        if self.memory_tight(ahead) || cpu_over {
            if (self.hold == 0 || over_cap) && self.limit > 1 {
                self.limit = (self.limit / 2).max(1);
                self.hold = HOLD_TICKS;
            }
            return self.limit;
        }
        let memory_low = self.cfg.max_memory.is_none_or(|cap| s.rss.saturating_mul(10) < cap.saturating_mul(8));
        let cpu_low = self.cfg.cpu_target.is_none_or(|t| s.cpu < f64::from(t) - 10.0);
        if memory_low && cpu_low {
            self.limit = (self.limit + (self.max / 32).max(1)).min(self.max);
        }
        self.limit
    }

    /// Lowers the limit to `ceiling` (at least 1) if it is above it, at
    /// once; returns the limit.
    pub fn ceil(&mut self, ceiling: usize) -> usize {
        self.limit = self.limit.min(ceiling.max(1));
        self.limit
    }
}

/// The most requests that half of the room under 90 % of `cap` holds, at
/// `per_request` bytes each, when the process is at `rss` with `out`
/// requests in flight (whose bytes are in `rss`); at least 1.
#[must_use]
pub fn byte_ceiling(rss: u64, cap: u64, out: usize, per_request: u64) -> usize {
    let per_request = per_request.max(1);
    let without = rss.saturating_sub((out as u64).saturating_mul(per_request));
    let room = (cap / 10 * 9).saturating_sub(without);
    usize::try_from(room / 2 / per_request).unwrap_or(usize::MAX).max(1)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::governor) const MIB: u64 = 1 << 20;

    /// Settings with a memory cap of `cap_mib` MiB and no CPU target.
    pub(in crate::governor) fn mem(cap_mib: u64) -> GovernorConfig {
        GovernorConfig { max_memory: Some(cap_mib * MIB), cpu_target: None }
    }

    /// A sample of `rss_mib` MiB resident and `cpu` % CPU.
    pub(in crate::governor) fn at(rss_mib: u64, cpu: f64) -> Sample {
        Sample { rss: rss_mib * MIB, cpu }
    }

    /// A law under a 100 MiB cap grown to its full limit at 10 MiB.
    fn grown(max: usize) -> Law {
        let mut law = Law::new(mem(100), max);
        while law.limit() < max {
            law.step(at(10, 0.0));
        }
        law
    }

    #[test]
    fn memory_over_the_threshold_halves_then_holds() {
        let mut law = grown(64);
        assert_eq!(law.step(at(95, 0.0)), 32, "above 90 % of the cap: halved");
        for _ in 1..HOLD_TICKS {
            assert_eq!(law.step(at(95, 0.0)), 32, "held while requests out finish");
        }
        assert_eq!(law.step(at(95, 0.0)), 16, "halved again after the hold");
    }

    #[test]
    fn a_memory_cap_starts_slow_and_a_steep_rise_shrinks_early() {
        assert_eq!(Law::new(mem(100), 64).limit(), 64 / SLOW_START);
        let cpu = GovernorConfig { max_memory: None, cpu_target: Some(50) };
        assert_eq!(Law::new(cpu, 64).limit(), 64, "no memory cap: no slow start");
        let mut law = grown(64);
        assert_eq!(law.step(at(30, 0.0)), 64, "+20 MiB at 30 MiB: 70 MiB in two samples, fine");
        assert_eq!(law.step(at(55, 0.0)), 32, "+25 MiB at 55 MiB: 105 MiB in two samples, shrink now");
    }

    #[test]
    fn above_the_cap_itself_the_hold_is_not_waited_for() {
        let mut law = grown(64);
        assert_eq!(law.step(at(95, 0.0)), 32);
        assert_eq!(law.step(at(95, 0.0)), 32, "over 90 %, under the cap: held");
        assert_eq!(law.step(at(101, 0.0)), 16, "over the cap: halved again at once");
    }

    #[test]
    fn the_byte_ceiling_gives_requests_half_the_room() {
        // Cap 100 MiB: threshold 90 MiB. At 70 MiB with 4 requests of
        // 1 MiB out, 66 MiB without them: 24 MiB of room, 12 requests.
        assert_eq!(byte_ceiling(70 * MIB, 100 * MIB, 4, MIB), 12);
        assert_eq!(byte_ceiling(95 * MIB, 100 * MIB, 0, MIB), 1, "no room: one request");
        let mut law = grown(64);
        assert_eq!(law.ceil(12), 12, "lowered at once");
        assert_eq!(law.ceil(0), 1, "never below one");
    }

    #[test]
    fn never_below_one_and_never_above_concurrency() {
        let mut law = Law::new(mem(100), 5);
        for _ in 0..100 {
            assert!(law.step(at(200, 0.0)) >= 1);
        }
        assert_eq!(law.limit(), 1);
        for _ in 0..100 {
            assert!(law.step(at(10, 0.0)) <= 5);
        }
        assert_eq!(law.limit(), 5);
    }

    #[test]
    fn grows_additively_only_with_margin() {
        let mut law = Law::new(mem(100), 256);
        assert_eq!(law.limit(), 32);
        assert_eq!(law.step(at(50, 0.0)), 40, "under 80 %: + concurrency / 32");
        assert_eq!(law.step(at(50, 0.0)), 48);
        assert_eq!(law.step(at(95, 0.0)), 24, "over 90 %: halved");
        assert_eq!(law.step(at(85, 0.0)), 24, "between 80 and 90 %: held");
        assert_eq!(law.step(at(50, 0.0)), 32, "under 80 % again: grows");
    }

    #[test]
    fn cpu_over_its_target_shrinks_and_needs_ten_points_to_grow() {
        let cfg = GovernorConfig { max_memory: None, cpu_target: Some(50) };
        let mut law = Law::new(cfg, 16);
        assert_eq!(law.step(at(1 << 20, 60.0)), 8, "no memory cap: any RSS is fine");
        assert_eq!(law.step(at(0, 45.0)), 8, "under the target by less than 10 points");
        assert_eq!(law.step(at(0, 30.0)), 9, "+1 (16 / 32 rounds to 0, at least 1)");
    }
}
