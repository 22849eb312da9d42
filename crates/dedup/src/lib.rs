//! URL de-duplication between layers: the weighted visit/cache list
//! ([`cache`]) in front of the authoritative visited store of sorted
//! fingerprint runs ([`visited`]); and the first URL of each page content
//! ([`content`]), for `duplicate_of`.

// The layers below, under the names this crate's files use.
pub(crate) use layercrawl_store as store;

pub mod cache;
pub mod content;
pub mod visited;

use std::collections::hash_map::{Entry, HashMap};
use std::sync::Mutex;

use cache::{Lookup, VisitCache};
use visited::VisitedStore;

use crate::store::StoreError;

/// Where one round's repeats were caught.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundStats {
    /// Repeats within the round (the visit list).
    pub visit_hits: u64,
    /// Hot URLs of earlier rounds (the cache list).
    pub cache_hits: u64,
    /// URLs of earlier rounds that only the visited store knew.
    pub store_hits: u64,
}

/// One partition's round of URL dedup: cache lists, then the visited store.
#[derive(Debug)]
pub struct Round<T> {
    /// The new candidates, in fingerprint order, each once.
    pub admitted: Vec<T>,
    pub stats: RoundStats,
}

/// De-duplicates one round (layer) of a partition's candidates, keyed by
/// URL fingerprint (the first of repeated candidates is kept): the visit and
/// cache lists drop what they remember, the visited store is asked about
/// the rest in one sorted merge pass, and the new fingerprints are written
/// as the round's run. The caller's `cache` outlives the round.
///
/// # Errors
/// When the visited store cannot be read or written.
pub async fn dedup_round<T>(
    cache: &Mutex<VisitCache>,
    visited: &VisitedStore,
    part: u32,
    round: u32,
    candidates: Vec<(u64, T)>,
) -> Result<Round<T>, StoreError> {
    let mut stats = RoundStats::default();
    let mut pending: HashMap<u64, T> = HashMap::with_capacity(candidates.len());
    {
        let mut c = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (fp, row) in candidates {
            match c.check(fp) {
                Lookup::VisitHit => stats.visit_hits += 1,
                Lookup::CacheHit => stats.cache_hits += 1,
                Lookup::Miss => match pending.entry(fp) {
                    Entry::Occupied(_) => stats.visit_hits += 1,
                    Entry::Vacant(e) => {
                        e.insert(row);
                    }
                },
            }
        }
    }
    let mut fps: Vec<u64> = pending.keys().copied().collect();
    fps.sort_unstable();
    let seen = visited.contains_sorted(part, round, &fps).await?;
    let mut admitted = Vec::with_capacity(fps.len());
    let mut new_fps = Vec::with_capacity(fps.len());
    {
        let mut c = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for (fp, was_seen) in fps.iter().zip(seen) {
            if was_seen {
                stats.store_hits += 1;
                c.seen_in_store(*fp);
            } else if let Some(row) = pending.remove(fp) {
                c.admit(*fp);
                new_fps.push(*fp);
                admitted.push(row);
            }
        }
        c.end_round();
    }
    visited.put_run(part, round, &new_fps).await?;
    Ok(Round { admitted, stats })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[tokio::test]
    async fn rounds_admit_each_url_once_and_say_who_caught_the_repeats() {
        let visited = VisitedStore::new(Store::open("memory://").expect("store"));
        let cache = Mutex::new(VisitCache::new(cache::CacheConfig { capacity: 2, alpha: 0.5 }));
        let r0 =
            dedup_round(&cache, &visited, 0, 0, vec![(1, "a"), (2, "b"), (1, "a again"), (3, "c")]).await.expect("r0");
        assert_eq!(r0.admitted, vec!["a", "b", "c"]);
        assert_eq!(r0.stats, RoundStats { visit_hits: 1, cache_hits: 0, store_hits: 0 });
        // The cache holds at most 2 of {1, 2, 3}; whatever it evicted, the store still knows.
        let r1 = dedup_round(&cache, &visited, 0, 1, vec![(1, "a"), (2, "b"), (3, "c"), (4, "d")]).await.expect("r1");
        assert_eq!(r1.admitted, vec!["d"]);
        assert_eq!(r1.stats.cache_hits + r1.stats.store_hits, 3);
        assert!(r1.stats.store_hits >= 1, "an evicted URL is caught by the store: {:?}", r1.stats);
        // A fresh cache (a new process) changes who catches repeats, never the result.
        let cold = Mutex::new(VisitCache::new(cache::CacheConfig::default()));
        let r2 = dedup_round(&cold, &visited, 0, 2, vec![(4, "d"), (5, "e")]).await.expect("r2");
        assert_eq!((r2.admitted, r2.stats.store_hits), (vec!["e"], 1));
    }
}
