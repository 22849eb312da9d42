//! The learned order's one source of randomness: SplitMix64, seeded from
//! the run, the layer and the partition (docs/src/focused-crawling.md), so
//! that a task run again, or a resumed crawl, draws the same numbers.
//!
//! Small and written out here rather than taken from a crate: the stream
//! must never change under the crawl's feet (a dependency's upgrade that
//! changed its generator would change every learned order).

use xxhash_rust::xxh3::xxh3_64;

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator of `purpose` (a short tag: "init", "train", ...) for
    /// the run whose identity is `run`, in `layer` and partition `part`.
    #[must_use]
    pub fn new(run: u64, purpose: &str, layer: u32, part: u32) -> Self {
        let mut key = Vec::with_capacity(24 + purpose.len());
        key.extend_from_slice(&run.to_le_bytes());
        key.extend_from_slice(&layer.to_le_bytes());
        key.extend_from_slice(&part.to_le_bytes());
        key.extend_from_slice(purpose.as_bytes());
        Self(xxh3_64(&key))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0; 0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // Lemire's multiply-shift: no modulo bias worth speaking of for
        // the small `n` used here.
        let n = n as u64;
        #[allow(clippy::cast_possible_truncation)]
        let i = ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as usize;
        i
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let u = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        u
    }

    /// A number in `[-a, a)`.
    pub fn symmetric(&mut self, a: f64) -> f32 {
        #[allow(clippy::cast_possible_truncation)]
        let x = ((self.unit() * 2.0 - 1.0) * a) as f32;
        x
    }

    /// A standard normal number (Box–Muller).
    pub fn normal(&mut self) -> f32 {
        let u1 = self.unit().max(f64::MIN_POSITIVE);
        let u2 = self.unit();
        #[allow(clippy::cast_possible_truncation)]
        let z = ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32;
        z
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_numbers_and_another_does_not() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7, "train", 2, 3);
            (0..8).map(|_| r.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7, "train", 2, 3);
            (0..8).map(|_| r.next_u64()).collect()
        };
        assert_eq!(a, b);
        for other in [Rng::new(7, "train", 2, 4), Rng::new(7, "train", 3, 3), Rng::new(8, "train", 2, 3)] {
            let mut o = other;
            assert_ne!(o.next_u64(), a[0]);
        }
        let mut r = Rng::new(1, "x", 0, 0);
        for _ in 0..1000 {
            assert!(r.below(5) < 5);
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
            assert!(r.normal().is_finite());
        }
        assert_eq!(r.below(0), 0);
    }
}
