//! The weighted visit list and cache list of URL dedup (docs/src/dedup.md).
//!
//! In front of the authoritative visited store sit two lists keyed by URL
//! fingerprint:
//! * the **visit list**: URLs admitted in the current round (layer);
//! * the **cache list**: hot URLs, each with a repeat count `rep` (starts at
//!   1) and the logical time of its last access.
//!
//! A candidate is checked against the visit list, then the cache list; a hit
//! drops it and bumps the entry's `rep` and time. A miss goes to the store.
//! When the cache list is full, the entries of lowest weight are evicted:
//!
//! `w = α · norm(ln(1 + rep)) + (1 − α) · norm(t_last − t_min)`
//!
//! with `norm` the min-max normalisation over the cache list and α = 0.5 by
//! default: an entry seen often *or* recently survives. The published method
//! this follows weighs repeats and recency, but its exact formula is lost
//! from the text we have. The log damps a few huge counts so they cannot pin
//! the list forever. Eviction removes the lowest eighth at once, so its
//! O(n log n) sort is amortised.

use std::collections::{HashMap, HashSet};

/// Settings of the lists.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheConfig {
    /// Entries the cache list holds at most.
    pub capacity: usize,
    /// Weight of the repeat count against recency, in `0..=1`.
    pub alpha: f32,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self { capacity: 1 << 20, alpha: 0.5 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    rep: u32,
    last: u64,
}

/// Where a candidate was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    VisitHit,
    CacheHit,
    /// Not in either list: ask the visited store.
    Miss,
}

/// Hit counters, for the run summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheStats {
    pub lookups: u64,
    pub visit_hits: u64,
    pub cache_hits: u64,
    pub evictions: u64,
}

/// The two lists of one worker.
#[derive(Debug)]
pub struct VisitCache {
    cfg: CacheConfig,
    visit: HashSet<u64>,
    cache: HashMap<u64, Entry>,
    clock: u64,
    pub stats: CacheStats,
}

impl VisitCache {
    #[must_use]
    pub fn new(cfg: CacheConfig) -> Self {
        Self { cfg, visit: HashSet::new(), cache: HashMap::new(), clock: 0, stats: CacheStats::default() }
    }

    /// Checks a candidate; a hit bumps the entry.
    pub fn check(&mut self, fp: u64) -> Lookup {
        self.clock += 1;
        self.stats.lookups += 1;
        if self.visit.contains(&fp) {
            self.stats.visit_hits += 1;
            // A repeat within the round makes the URL hot for later rounds.
            self.touch(fp);
            return Lookup::VisitHit;
        }
        if let Some(e) = self.cache.get_mut(&fp) {
            e.rep = e.rep.saturating_add(1);
            e.last = self.clock;
            self.stats.cache_hits += 1;
            return Lookup::CacheHit;
        }
        Lookup::Miss
    }

    /// Records a URL the store says is new: it joins the visit list.
    pub fn admit(&mut self, fp: u64) {
        self.visit.insert(fp);
    }

    /// Records a URL the store says was seen before: it is hot, cache it.
    pub fn seen_in_store(&mut self, fp: u64) {
        self.touch(fp);
    }

    /// Ends a round: the visit list's URLs move to the cache list (they are
    /// the likeliest repeats of the next round) and the visit list empties.
    pub fn end_round(&mut self) {
        let visit = std::mem::take(&mut self.visit);
        for fp in visit {
            self.touch(fp);
        }
    }

    /// Entries in the cache list.
    #[must_use]
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// Whether `fp` is in the cache list (for tests and diagnostics).
    #[must_use]
    pub fn is_cached(&self, fp: u64) -> bool {
        self.cache.contains_key(&fp)
    }

    fn touch(&mut self, fp: u64) {
        self.clock += 1;
        let now = self.clock;
        self.cache
            .entry(fp)
            .and_modify(|e| {
                e.rep = e.rep.saturating_add(1);
                e.last = now;
            })
            .or_insert(Entry { rep: 1, last: now });
        if self.cache.len() > self.cfg.capacity {
            self.evict();
        }
    }

    /// Removes the lowest-weight eighth of the cache list.
    fn evict(&mut self) {
        let (mut rmin, mut rmax, mut tmin, mut tmax) = (f32::MAX, f32::MIN, u64::MAX, 0u64);
        for e in self.cache.values() {
            let r = rep_term(e.rep);
            rmin = rmin.min(r);
            rmax = rmax.max(r);
            tmin = tmin.min(e.last);
            tmax = tmax.max(e.last);
        }
        let alpha = self.cfg.alpha;
        let norm = |v: f32, lo: f32, hi: f32| if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
        #[allow(clippy::cast_precision_loss)]
        let weight = |e: &Entry| {
            alpha * norm(rep_term(e.rep), rmin, rmax)
                + (1.0 - alpha) * norm((e.last - tmin) as f32, 0.0, (tmax - tmin) as f32)
        };
        let mut ranked: Vec<(f32, u64, u64)> = self.cache.iter().map(|(fp, e)| (weight(e), e.last, *fp)).collect();
        // Lowest weight first; among equals the least recent goes first.
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let n = (self.cache.len() / 8).max(self.cache.len() - self.cfg.capacity).max(1);
        for &(_, _, fp) in ranked.iter().take(n) {
            self.cache.remove(&fp);
        }
        self.stats.evictions += n as u64;
    }
}

fn rep_term(rep: u32) -> f32 {
    #[allow(clippy::cast_precision_loss)]
    (1.0 + rep as f32).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visit_then_cache_then_miss() {
        let mut c = VisitCache::new(CacheConfig::default());
        assert_eq!(c.check(1), Lookup::Miss);
        c.admit(1);
        assert_eq!(c.check(1), Lookup::VisitHit);
        assert_eq!(c.check(2), Lookup::Miss);
        c.seen_in_store(2);
        assert_eq!(c.check(2), Lookup::CacheHit);
        c.end_round();
        assert_eq!(c.check(1), Lookup::CacheHit, "last round's URLs are cached");
        assert_eq!(c.stats, CacheStats { lookups: 5, visit_hits: 1, cache_hits: 2, evictions: 0 });
    }

    #[test]
    fn eviction_keeps_frequent_and_recent_entries() {
        let mut c = VisitCache::new(CacheConfig { capacity: 16, alpha: 0.5 });
        // Entry 100 is old but very frequent.
        for _ in 0..50 {
            c.seen_in_store(100);
        }
        for fp in 0..16 {
            c.seen_in_store(fp);
        }
        assert!(c.cached() <= 16);
        assert!(c.is_cached(100), "frequent entry survives");
        assert!(c.is_cached(15), "most recent entry survives");
        assert!(!c.is_cached(0), "old, once-seen entry is evicted first");
        assert!(c.stats.evictions >= 1);
    }

    #[test]
    fn pure_recency_and_pure_frequency_orderings() {
        let mut recent = VisitCache::new(CacheConfig { capacity: 8, alpha: 0.0 });
        for _ in 0..20 {
            recent.seen_in_store(7);
        }
        for fp in 100..109 {
            recent.seen_in_store(fp);
        }
        assert!(!recent.is_cached(7), "alpha 0: frequency does not count");
        let mut frequent = VisitCache::new(CacheConfig { capacity: 8, alpha: 1.0 });
        for _ in 0..20 {
            frequent.seen_in_store(7);
        }
        for fp in 100..109 {
            frequent.seen_in_store(fp);
        }
        assert!(frequent.is_cached(7), "alpha 1: frequency is all that counts");
    }

    #[test]
    fn memory_stays_bounded_under_a_stream_of_new_urls() {
        // Half the stream repeats 100 hot URLs (navigation), half is unique.
        let mut c = VisitCache::new(CacheConfig { capacity: 1000, alpha: 0.5 });
        for i in 0..100_000u64 {
            let fp = if i % 2 == 0 { i % 100 } else { 1_000_000 + i };
            if c.check(fp) == Lookup::Miss {
                c.seen_in_store(fp);
            }
        }
        assert!(c.cached() <= 1000);
        assert!(c.stats.cache_hits > 49_000, "hot URLs stay cached: {:?}", c.stats);
    }
}
