//! Deterministic randomness for the test web: every page's content comes
//! from a splitmix64 stream seeded by `xxh3(seed, kind, site, page)`, so a
//! page is the same on every request and every run with the same `--seed`,
//! and nothing has to be stored.

use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Domain-separation tags for [`mix`], so that e.g. an article's title and
/// its body draw from unrelated streams (the slug must be computable
/// without generating the body).
pub mod tag {
    pub const SITE: u64 = 1;
    pub const TITLE: u64 = 2;
    pub const BODY: u64 = 3;
    pub const LINKS: u64 = 4;
    pub const MINI: u64 = 5;
    pub const TRAP: u64 = 6;
    pub const LATENCY: u64 = 7;
    pub const SID: u64 = 8;
    pub const SHOP: u64 = 9;
}

/// Hashes a farm seed and a few integers into one 64-bit value.
#[must_use]
pub fn mix(seed: u64, parts: &[u64]) -> u64 {
    // Eight bytes per part on the stack: no allocation on the serving path.
    let mut buf = [0u8; 64];
    let n = parts.len().min(8);
    for (i, p) in parts.iter().take(n).enumerate() {
        buf[i * 8..i * 8 + 8].copy_from_slice(&p.to_le_bytes());
    }
    xxh3_64_with_seed(&buf[..n * 8], seed)
}

/// splitmix64: tiny, fast, and good enough for filler text.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    #[must_use]
    pub fn from_parts(seed: u64, parts: &[u64]) -> Self {
        Self(mix(seed, parts))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n` > 0; 0 gives 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift instead of `%`: unbiased enough and avoids a division.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `0..n` as `u32`.
    pub fn below_u32(&mut self, n: u32) -> u32 {
        u32::try_from(self.below(u64::from(n))).expect("below(n) < n fits u32")
    }

    /// A value in `0..n` as an index.
    pub fn index(&mut self, n: usize) -> usize {
        usize::try_from(self.below(n as u64)).expect("below(n) < n fits usize")
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        lo + u32::try_from(self.below(u64::from(hi - lo) + 1)).expect("below(n) < n fits the u32 span")
    }

    /// True with probability `pct`/100.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.index(items.len())]
    }

    pub fn word(&mut self) -> &'static str {
        self.pick(WORDS)
    }
}

/// Filler vocabulary: common English words, ASCII only, so generated text
/// never needs HTML escaping.
#[rustfmt::skip]
pub static WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "on", "by", "at", "from", "this",
    "which", "or", "an", "are", "be", "has", "had", "not", "but", "were", "they", "their", "its", "more", "new",
    "river", "garden", "market", "council", "winter", "summer", "museum", "harbour", "station", "library", "engine",
    "orchard", "valley", "bridge", "village", "forest", "island", "mountain", "research", "school", "festival",
    "report", "season", "result", "project", "budget", "science", "history", "water", "energy", "weather",
    "community", "network", "signal", "theory", "record", "journey", "canal", "factory", "archive", "harvest",
    "kitchen", "recipe", "travel", "coast", "castle", "painter", "concert", "player", "coach", "league", "match",
    "stadium", "election", "policy", "vote", "court", "judge", "trial", "study", "sample", "planet", "comet",
    "telescope", "battery", "circuit", "software", "update", "release", "version", "server", "cloud", "storage",
    "bicycle", "railway", "airport", "ferry", "tunnel", "street", "square", "tower", "chapel", "quarter",
    "farmers", "students", "teachers", "doctors", "engineers", "visitors", "residents", "players", "voters",
    "scientists", "officials", "writers", "artists", "workers", "families", "children", "neighbours",
    "announced", "described", "reported", "measured", "observed", "explained", "suggested", "confirmed",
    "published", "opened", "closed", "expanded", "restored", "rebuilt", "discovered", "tested", "compared",
    "collected", "shared", "planned", "approved", "rejected", "welcomed", "questioned", "followed", "reviewed",
    "quickly", "slowly", "carefully", "recently", "finally", "early", "late", "often", "rarely", "mostly",
    "nearly", "almost", "still", "again", "together", "already", "perhaps", "certainly", "clearly",
    "small", "large", "quiet", "busy", "green", "bright", "dark", "cold", "warm", "ancient", "modern", "local",
    "regional", "national", "public", "private", "young", "old", "careful", "surprising", "familiar", "rare",
    "important", "simple", "complex", "northern", "southern", "eastern", "western", "central", "open", "narrow",
    "after", "before", "during", "while", "because", "although", "since", "until", "between", "across",
    "through", "around", "without", "within", "beyond", "under", "over", "near", "along", "against",
    "many", "several", "few", "most", "some", "every", "each", "other", "another", "first", "second", "third",
    "year", "month", "week", "morning", "evening", "night", "century", "decade", "moment", "plan", "idea",
    "question", "answer", "problem", "solution", "change", "growth", "decline", "price", "cost", "value",
    "story", "letter", "photo", "map", "book", "film", "song", "voice", "crowd", "team", "group", "family",
    "city", "town", "region", "country", "border", "road", "path", "field", "farm", "lake", "hill", "shore",
];

/// Section names of regular sites (a site uses 3-5 of them).
#[rustfmt::skip]
pub static SECTIONS: &[&str] = &[
    "news", "sport", "tech", "culture", "science", "travel", "food", "business", "health", "opinion", "local",
    "music",
];

#[rustfmt::skip]
pub static FIRST_NAMES: &[&str] =
    &["Ada", "Ben", "Clara", "David", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kira", "Liam", "Mira", "Noah"];

#[rustfmt::skip]
pub static LAST_NAMES: &[&str] =
    &["Abbott", "Berg", "Costa", "Dahl", "Eriksen", "Fischer", "Garcia", "Horvat", "Ivanova", "Jensen", "Kowalski"];

/// Capitalises the first ASCII letter of `w` into `out`.
pub fn push_capitalised(out: &mut String, w: &str) {
    let mut chars = w.chars();
    if let Some(c) = chars.next() {
        out.push(c.to_ascii_uppercase());
        out.push_str(chars.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_separated() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::from_parts(7, &[tag::BODY, 1, 2]);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::from_parts(7, &[tag::BODY, 1, 2]);
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::from_parts(7, &[tag::TITLE, 1, 2]);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(mix(1, &[1, 2]), mix(2, &[1, 2]));
    }

    #[test]
    fn below_and_range_stay_in_bounds() {
        let mut r = Rng::from_parts(3, &[]);
        for _ in 0..10_000 {
            assert!(r.below(7) < 7);
            let v = r.range(3, 5);
            assert!((3..=5).contains(&v));
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.range(4, 4), 4);
    }

    #[test]
    fn vocabulary_needs_no_escaping() {
        for w in WORDS.iter().chain(SECTIONS).chain(FIRST_NAMES).chain(LAST_NAMES) {
            assert!(w.bytes().all(|b| b.is_ascii_alphanumeric()), "{w}");
        }
    }
}
