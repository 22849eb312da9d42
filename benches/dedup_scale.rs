//! Dedup at scale: 10 million synthetic URLs, many of them repeats, through
//! the real dedup code (`dedup_round`: weighted visit/cache list in front of
//! the visited store on local disk), in rounds as a crawl's layers would.
//!
//! `cargo bench --bench dedup_scale`. Prints, per round, the URLs/s and this
//! process's peak RSS, which must stay within the configured bound (cache
//! entries + one round's candidates + one read chunk) while the visited
//! store on disk grows with the crawl. Settings: `DEDUP_URLS` (10,000,000),
//! `DEDUP_ROUNDS` (10), `DEDUP_CACHE` (cache entries, 1,048,576).

use std::sync::Mutex;
use std::time::Instant;

use layercrawl::dedup::cache::{CacheConfig, VisitCache};
use layercrawl::dedup::dedup_round;
use layercrawl::dedup::visited::VisitedStore;
use layercrawl::store::Store;
use layercrawl::urlnorm::fingerprint_str;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn peak_rss_mb() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    ru.ru_maxrss as f64 / 1024.0
}

fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` probes; nothing to list.
    }
    let (total, rounds, cache_entries) =
        (env("DEDUP_URLS", 10_000_000), env("DEDUP_ROUNDS", 10).max(1), env("DEDUP_CACHE", 1 << 20));
    let per_round = total / rounds;
    let tmp = tempfile::tempdir().expect("tempdir");
    let visited = VisitedStore::new(Store::open(tmp.path().to_str().expect("utf8")).expect("store"));
    let cache = Mutex::new(VisitCache::new(CacheConfig {
        capacity: usize::try_from(cache_entries).expect("fits"),
        ..CacheConfig::default()
    }));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    println!("dedup scale: {total} URLs in {rounds} rounds of {per_round}, cache {cache_entries} entries; memory at start {:.0} MB", peak_rss_mb());
    println!(
        "{:>5} {:>10} {:>9} {:>9} {:>9} {:>9} {:>12} {:>12}",
        "round", "new", "visit", "cache", "store", "URLs/s", "store (MB)", "peak RSS MB"
    );
    let (mut seen_total, started) = (0u64, Instant::now());
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for round in 0..rounds {
        let t = Instant::now();
        // 40 % fresh URLs, 60 % repeats: of this round (hot links), of the
        // previous round (the likely cache hits) and of any earlier one.
        let candidates: Vec<(u64, ())> = (0..per_round)
            .map(|i| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let id = match rng % 10 {
                    0..=3 => round * per_round + i,
                    4 | 5 => round * per_round + rng % (i + 1),
                    6 | 7 => round.saturating_sub(1) * per_round + (rng >> 8) % per_round,
                    _ => (rng >> 8) % ((round + 1) * per_round),
                };
                let url = format!("http://s{:04}.test/section/{}/article-{id}", id % 1000, id % 97);
                (fingerprint_str(&url), ())
            })
            .collect();
        let r = rt
            .block_on(dedup_round(&cache, &visited, 0, u32::try_from(round).expect("fits"), candidates))
            .expect("round");
        seen_total += per_round;
        let secs = t.elapsed().as_secs_f64();
        let on_disk: u64 = std::fs::read_dir(tmp.path().join("state/visited/part-00000"))
            .map_or(0, |d| d.flatten().map(|e| e.metadata().map_or(0, |m| m.len())).sum());
        println!(
            "{round:>5} {:>10} {:>9} {:>9} {:>9} {:>9.0} {:>12.1} {:>12.0}",
            r.admitted.len(),
            r.stats.visit_hits,
            r.stats.cache_hits,
            r.stats.store_hits,
            per_round as f64 / secs,
            on_disk as f64 / 1e6,
            peak_rss_mb()
        );
    }
    println!(
        "total: {seen_total} URLs in {:.1} s = {:.0} URLs/s; peak RSS {:.0} MB",
        started.elapsed().as_secs_f64(),
        seen_total as f64 / started.elapsed().as_secs_f64(),
        peak_rss_mb()
    );
}
