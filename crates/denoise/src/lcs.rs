//! Longest common subsequence of two URLs, bit-parallel.
//!
//! Document B's similarity is `(LCS/len(u1) + LCS/len(u2)) / 2`, with LCS
//! from the classic O(n·m) dynamic programme. Here the same number comes
//! from the bit-vector algorithm of Allison & Dix (1986) in Hyyrö's
//! formulation (2004): one pass over the text, 64 pattern characters per
//! machine word, `V' = (V + (V & M[c])) | (V & !M[c])`, and LCS = the zero
//! bits of `V`. A [`Pattern`] precomputes the match masks once, so comparing
//! many URLs against one cluster representative costs one pass each.

/// URLs are compared on their first `MAX_LEN` bytes (a cap keeps the cost
/// bounded on hostile, kilobyte-long URLs; the tail rarely separates them).
pub const MAX_LEN: usize = 256;
const WORDS: usize = MAX_LEN / 64;

/// Match masks of one string (the "pattern" side of the comparison).
#[derive(Clone)]
pub struct Pattern {
    len: usize,
    words: usize,
    /// `masks[byte][w]`: bit i of word w set where `pattern[64w + i] == byte`.
    masks: Box<[[u64; WORDS]; 256]>,
}

impl std::fmt::Debug for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pattern").field("len", &self.len).finish_non_exhaustive()
    }
}

impl Pattern {
    /// Precomputes the masks of `s` (capped at [`MAX_LEN`] bytes).
    #[must_use]
    pub fn new(s: &[u8]) -> Self {
        let s = &s[..s.len().min(MAX_LEN)];
        let mut masks = Box::new([[0u64; WORDS]; 256]);
        for (i, &c) in s.iter().enumerate() {
            masks[usize::from(c)][i / 64] |= 1 << (i % 64);
        }
        Self { len: s.len(), words: s.len().div_ceil(64), masks }
    }

    /// Length used (after the cap).
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pattern is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// LCS length of the pattern and `text` (capped at [`MAX_LEN`] bytes).
    #[must_use]
    pub fn lcs(&self, text: &[u8]) -> usize {
        let text = &text[..text.len().min(MAX_LEN)];
        let n = self.words;
        if n == 0 || text.is_empty() {
            return 0;
        }
        let mut v = [u64::MAX; WORDS];
        for &c in text {
            let m = &self.masks[usize::from(c)];
            let mut carry = 0u64;
            for w in 0..n {
                let u = v[w] & m[w];
                let (s1, c1) = v[w].overflowing_add(u);
                let (s2, c2) = s1.overflowing_add(carry);
                carry = u64::from(c1 || c2);
                v[w] = s2 | (v[w] & !m[w]);
            }
        }
        // Zero bits among the first `len` positions.
        let mut zeros = 0;
        for (w, word) in v.iter().enumerate().take(n) {
            let bits = (self.len - w * 64).min(64);
            let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
            zeros += (!word & mask).count_ones() as usize;
        }
        zeros
    }

    /// Document B's similarity of the pattern and `text`, in `0..=1`.
    #[must_use]
    pub fn similarity(&self, text: &[u8]) -> f32 {
        let lt = text.len().min(MAX_LEN);
        if self.len == 0 || lt == 0 {
            return if self.len == lt { 1.0 } else { 0.0 };
        }
        #[allow(clippy::cast_precision_loss)]
        let l = self.lcs(text) as f32;
        #[allow(clippy::cast_precision_loss)]
        let s = (l / self.len as f32 + l / lt as f32) / 2.0;
        s
    }
}

/// LCS by the plain dynamic programme (the reference the tests pin against).
#[must_use]
pub fn lcs_dp(a: &[u8], b: &[u8]) -> usize {
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for &x in a {
        for (j, &y) in b.iter().enumerate() {
            cur[j + 1] = if x == y { prev[j] + 1 } else { prev[j + 1].max(cur[j]) };
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Similarity of two strings (builds a [`Pattern`] for `a`).
#[must_use]
pub fn similarity(a: &[u8], b: &[u8]) -> f32 {
    Pattern::new(a).similarity(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so failures reproduce.
    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    fn random_string(seed: &mut u64, max_len: usize, alphabet: &[u8]) -> Vec<u8> {
        let len = (rng(seed) as usize) % (max_len + 1);
        (0..len).map(|_| alphabet[(rng(seed) as usize) % alphabet.len()]).collect()
    }

    #[test]
    fn matches_the_dynamic_programme_on_random_strings() {
        let mut seed = 0x9e37_79b9_7f4a_7c15;
        for alphabet in [&b"ab"[..], b"abcd", b"abcdefghijklmnopqrstuvwxyz/.-_?=&0123456789"] {
            for _ in 0..400 {
                let a = random_string(&mut seed, 200, alphabet);
                let b = random_string(&mut seed, 200, alphabet);
                assert_eq!(Pattern::new(&a).lcs(&b), lcs_dp(&a, &b), "a={a:?} b={b:?}");
            }
        }
    }

    #[test]
    fn word_boundaries_and_the_cap() {
        for len in [1, 63, 64, 65, 127, 128, 129, 255, 256] {
            let a: Vec<u8> = (0..len).map(|i| b'a' + (i % 7) as u8).collect();
            assert_eq!(Pattern::new(&a).lcs(&a), len, "identical of length {len}");
            let mut b = a.clone();
            b.reverse();
            assert_eq!(Pattern::new(&a).lcs(&b), lcs_dp(&a, &b), "reversed of length {len}");
        }
        let long = vec![b'x'; 1000];
        assert_eq!(Pattern::new(&long).lcs(&long), MAX_LEN);
    }

    #[test]
    fn similarity_of_urls() {
        let a = b"http://s001.test/article/17";
        assert!((similarity(a, a) - 1.0).abs() < 1e-6);
        let near = similarity(a, b"http://s001.test/article/18");
        let far = similarity(a, b"http://s001.test/calendar/2026/11?view=month");
        assert!(near > 0.9 && far < near, "near {near} far {far}");
        assert_eq!(similarity(b"", b""), 1.0);
        assert_eq!(similarity(b"abc", b""), 0.0);
        // The mean of LCS/len(u1) and LCS/len(u2), as the clustering method defines similarity.
        let (x, y) = (b"abcdef", b"abc");
        assert!((similarity(x, y) - (3.0 / 6.0 + 3.0 / 3.0) / 2.0).abs() < 1e-6);
    }
}
