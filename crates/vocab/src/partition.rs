//! Partitioning for the map step: one partition owns whole sites
//! (docs/src/how-it-works.md).
//!
//! The key is the URL's registrable domain, hashed with xxh3-64 and mapped
//! to one of `P` buckets by jump consistent hashing (Lamping & Veach 2014):
//! growing `P` to `P + 1` moves only about `1/(P+1)` of the domains, the
//! property a consistent-hash ring is chosen for.

use xxhash_rust::xxh3::xxh3_64;

/// The bucket in `0..buckets` for a 64-bit key (jump consistent hash).
///
/// `buckets` must be at least 1; 0 is treated as 1.
#[must_use]
pub fn jump_hash(mut key: u64, buckets: u32) -> u32 {
    let buckets = i64::from(buckets.max(1));
    let (mut b, mut j): (i64, i64) = (-1, 0);
    while j < buckets {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        // (b + 1) * 2^31 / ((key >> 33) + 1), computed in floating point as in Lamping & Veach's paper.
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        {
            j = ((b + 1) as f64 * ((1_i64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
        }
    }
    u32::try_from(b).expect("b < buckets <= u32::MAX")
}

/// The partition of a registrable domain among `partitions`.
#[must_use]
pub fn partition_of_domain(domain: &str, partitions: u32) -> u32 {
    jump_hash(xxh3_64(domain.as_bytes()), partitions)
}

/// The partition of the site `host` belongs to: its registrable domain's.
#[must_use]
pub fn partition_of_host(host: &str, partitions: u32) -> u32 {
    partition_of_domain(&crate::urlnorm::registrable_domain(host), partitions)
}

/// The partition of a URL (normalised, as stored): its host's site's.
#[must_use]
pub fn partition_of_url(url: &str, partitions: u32) -> u32 {
    partition_of_host(crate::urlnorm::host_of(url), partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_stay_in_range_and_are_stable() {
        for p in [1, 2, 7, 16, 1000] {
            for i in 0..2000 {
                let d = format!("s{i:03}.test");
                let k = partition_of_domain(&d, p);
                assert!(k < p);
                assert_eq!(k, partition_of_domain(&d, p));
            }
        }
    }

    #[test]
    fn growing_by_one_moves_few_keys_and_only_to_the_new_bucket() {
        let n = 20_000;
        let moved = (0..n)
            .filter(|i| {
                let d = format!("site{i}.example");
                let (a, b) = (partition_of_domain(&d, 16), partition_of_domain(&d, 17));
                if a != b {
                    assert_eq!(b, 16, "a moved key goes to the new bucket");
                }
                a != b
            })
            .count();
        // Expected n/17 ≈ 1176; allow generous noise.
        assert!((900..1500).contains(&moved), "moved {moved}");
    }

    #[test]
    fn spread_is_roughly_even() {
        let mut counts = [0u32; 8];
        for i in 0..8000 {
            counts[partition_of_domain(&format!("d{i}.org"), 8) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
    }
}
