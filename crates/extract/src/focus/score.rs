//! A page's relevance to a crawl plan (docs/src/focused-crawling.md).
//!
//! Text is cut into words: runs of letters and digits, lower-cased
//! (Unicode). A term is one word or a phrase of several in a row; a term
//! ending in `*` matches any word that starts with it. For each field of the
//! page (title, main text, the anchor text that led to it) and each keyword
//! group:
//!
//! - the group counts nothing when one of its `not` terms occurs anywhere in
//!   the page, or one of its `all` terms occurs nowhere;
//! - otherwise each of its terms scores `1 − 2^−n`, where `n` is how often
//!   the term occurs: once counts ½, twice ¾, and so on, so that one word
//!   repeated cannot make a page relevant. In the main text `n` is counted
//!   per 200 words (a long page mentions everything more often);
//! - its `any` terms combine as a soft OR, `1 − Π (1 − s)^w` (one term that
//!   occurs is enough, more raise the score; a weight `^w` counts the term
//!   `w` times), its `all` terms as their weighted mean, and the group's
//!   score is the mean of the two (or the one it has).
//!
//! The groups' scores are combined by the plan's `match`: `all` (every group
//! must have a term somewhere in the page, then their weighted mean) or
//! `any` (the weighted mean). The page's relevance is the fields' scores weighted by the plan's `[weights]`,
//! over the fields the page has: a number from 0 to 1.

use std::collections::HashMap;

use xxhash_rust::xxh3::Xxh3Builder;

pub use super::plan::words;
use super::plan::{Combine, Group, Plan, Term};

/// Words per which the main text's occurrences are counted.
const MAIN_TEXT_UNIT: f64 = 200.0;

/// Occurrences of every term of a plan in one text.
struct Counts {
    /// Per term (in [`Scorer::terms`] order).
    n: Vec<u32>,
    words: usize,
}

/// Scores pages against a plan; built once per run, shared by every parse
/// worker.
pub struct Scorer {
    plan: Plan,
    /// Every distinct term of the plan, each once.
    terms: Vec<Term>,
    /// Terms by their first word (exact terms only).
    by_first: HashMap<String, Vec<usize>, Xxh3Builder>,
    /// Terms whose only word is a prefix (`rotor*`), checked one by one.
    prefixes: Vec<usize>,
    /// A quick test before the hash lookup: first bytes and lengths (up to
    /// 63 bytes) of the plan's first words and prefixes. Most words of a
    /// page are no term: they are turned away without hashing.
    first_bytes: [u64; 4],
    lengths: u64,
    /// Whether a prefix term exists (then any length may match).
    any_length: bool,
    /// Per group: (term index, weight) of its `all`, `any` and `not` terms.
    groups: Vec<GroupTerms>,
}

struct GroupTerms {
    all: Vec<(usize, f64)>,
    any: Vec<(usize, f64)>,
    not: Vec<usize>,
}

/// The fields of one page that relevance is computed from.
#[derive(Clone, Copy, Debug, Default)]
pub struct PageText<'a> {
    pub title: Option<&'a str>,
    pub main_text: Option<&'a str>,
    /// The anchor text of the link that led to the page, when known.
    pub anchor: Option<&'a str>,
}

impl Scorer {
    #[must_use]
    pub fn new(plan: Plan) -> Self {
        let mut terms: Vec<Term> = Vec::new();
        let index = |t: &Term, terms: &mut Vec<Term>| {
            if let Some(i) = terms.iter().position(|u| u.words == t.words && u.prefix == t.prefix) {
                i
            } else {
                terms.push(t.clone());
                terms.len() - 1
            }
        };
        let groups = plan
            .groups
            .iter()
            .map(|g: &Group| GroupTerms {
                all: g.all.iter().map(|t| (index(t, &mut terms), t.weight)).collect(),
                any: g.any.iter().map(|t| (index(t, &mut terms), t.weight)).collect(),
                not: g.not.iter().map(|t| index(t, &mut terms)).collect(),
            })
            .collect();
        let mut by_first: HashMap<String, Vec<usize>, Xxh3Builder> = HashMap::default();
        let mut prefixes = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            if t.prefix && t.words.len() == 1 {
                prefixes.push(i);
            } else if let Some(first) = t.words.first() {
                by_first.entry(first.clone()).or_default().push(i);
            }
        }
        let (mut first_bytes, mut lengths) = ([0u64; 4], 0u64);
        for t in &terms {
            let w = t.words[0].as_bytes();
            if let Some(&b) = w.first() {
                first_bytes[usize::from(b >> 6)] |= 1 << (b & 63);
            }
            lengths |= length_bit(w.len());
        }
        let any_length = !prefixes.is_empty() || terms.iter().any(|t| t.prefix);
        Self { plan, terms, by_first, prefixes, first_bytes, lengths, any_length, groups }
    }

    /// Whether `word` may start a term (no false negatives).
    fn may_start(&self, word: &str) -> bool {
        let Some(&b) = word.as_bytes().first() else { return false };
        if self.first_bytes[usize::from(b >> 6)] & (1 << (b & 63)) == 0 {
            return false;
        }
        self.any_length || self.lengths & length_bit(word.len()) != 0
    }

    /// The plan scored against.
    #[must_use]
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    fn count(&self, text: &str) -> Counts {
        // One lower-cased copy of the text, its words borrowed from it: no
        // allocation per word (docs/src/focused-crawling.md: what it costs).
        let lower = if text.is_ascii() { text.to_ascii_lowercase() } else { text.to_lowercase() };
        let w = split_words(&lower);
        let mut n = vec![0u32; self.terms.len()];
        for (i, word) in w.iter().enumerate() {
            if !self.may_start(word) {
                continue;
            }
            if let Some(candidates) = self.by_first.get(*word) {
                for &t in candidates {
                    if self.terms[t].matches_at(&w, i) {
                        n[t] += 1;
                    }
                }
            }
            for &t in &self.prefixes {
                if word.starts_with(self.terms[t].words[0].as_str()) {
                    n[t] += 1;
                }
            }
        }
        // A phrase whose last word is a prefix (`solar pan*`) starts with an
        // exact word, so it is in `by_first`; `matches_at` handles the prefix.
        Counts { n, words: w.len() }
    }

    /// The relevance of a page, from 0 to 1; `None` when it has no text in
    /// any field the plan weighs.
    #[must_use]
    pub fn relevance(&self, page: &PageText<'_>) -> Option<f64> {
        let weights = &self.plan.weights;
        let fields: Vec<(Counts, f64, bool)> = [
            (page.title, weights.title, false),
            (page.main_text, weights.main_text, true),
            (page.anchor, weights.anchor, false),
        ]
        .into_iter()
        .filter_map(|(text, w, per_unit)| {
            let text = text.filter(|t| !t.trim().is_empty())?;
            (w > 0.0).then(|| (self.count(text), w, per_unit))
        })
        .collect();
        if fields.is_empty() {
            return None;
        }
        // Gates over the whole page: a `not` term anywhere, an `all` term nowhere.
        let anywhere = |t: usize| fields.iter().any(|(c, _, _)| c.n[t] > 0);
        let open: Vec<bool> = self
            .groups
            .iter()
            .map(|g| {
                let gated = !g.not.iter().any(|&t| anywhere(t)) && g.all.iter().all(|&(t, _)| anywhere(t));
                // With `match = "all"` every group must occur somewhere.
                let occurs = self.plan.combine == Combine::Any || g.all.iter().chain(&g.any).any(|&(t, _)| anywhere(t));
                gated && occurs
            })
            .collect();
        let (mut sum, mut weight) = (0.0, 0.0);
        for (counts, w, per_unit) in &fields {
            let unit = if *per_unit { (counts.words as f64 / MAIN_TEXT_UNIT).max(1.0) } else { 1.0 };
            sum += w * self.combine(counts, unit, &open);
            weight += w;
        }
        Some((sum / weight).clamp(0.0, 1.0))
    }

    /// The score of a short text alone (an anchor, a URL's words), 0 to
    /// 1: the groups' gates are this text's; `None` for no words.
    #[must_use]
    pub fn short_text(&self, text: &str) -> Option<f64> {
        let counts = self.count(text);
        if counts.words == 0 {
            return None;
        }
        let open: Vec<bool> = self
            .groups
            .iter()
            .map(|g| {
                let gated = !g.not.iter().any(|&t| counts.n[t] > 0) && g.all.iter().all(|&(t, _)| counts.n[t] > 0);
                let occurs =
                    self.plan.combine == Combine::Any || g.all.iter().chain(&g.any).any(|&(t, _)| counts.n[t] > 0);
                gated && occurs
            })
            .collect();
        Some(self.combine(&counts, 1.0, &open))
    }

    /// A link's score, 0 to 1 (document D's R(l), with the URL's words for
    /// the target page not fetched yet): its anchor text's, its page's
    /// relevance and its URL's words', weighted by the plan's `[link]` over
    /// the parts it has (a nav page has no relevance).
    #[must_use]
    pub fn link_score(&self, anchor: &str, parent: Option<f64>, url: &url::Url) -> f64 {
        let w = &self.plan.link;
        let url_words = format!("{} {}", url.path(), url.query().unwrap_or(""));
        let parts = [(self.short_text(anchor), w.anchor), (parent, w.parent), (self.short_text(&url_words), w.url)];
        let (mut sum, mut weight) = (0.0, 0.0);
        for (score, w) in parts {
            if let (Some(s), true) = (score, w > 0.0) {
                sum += w * s;
                weight += w;
            }
        }
        if weight > 0.0 {
            (sum / weight).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// The groups' scores in one field, combined.
    fn combine(&self, counts: &Counts, unit: f64, open: &[bool]) -> f64 {
        let (mut sum, mut weight) = (0.0, 0.0);
        for ((g, terms), &open) in self.plan.groups.iter().zip(&self.groups).zip(open) {
            if !open && self.plan.combine == Combine::All {
                return 0.0;
            }
            let score = if open { group_score(terms, counts, unit) } else { 0.0 };
            sum += g.weight * score;
            weight += g.weight;
        }
        if weight > 0.0 {
            sum / weight
        } else {
            0.0
        }
    }
}

/// The words of a lower-cased text, borrowed from it; ASCII text is cut
/// byte by byte, without decoding characters.
fn split_words(text: &str) -> Vec<&str> {
    if !text.is_ascii() {
        return text.split(|c: char| !c.is_alphanumeric()).filter(|s| !s.is_empty()).collect();
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 6);
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && !bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        if start < i {
            out.push(&text[start..i]);
        }
    }
    out
}

/// A word length's bit: lengths of 63 bytes and more share the last.
fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

fn group_score(g: &GroupTerms, counts: &Counts, unit: f64) -> f64 {
    let s = |t: usize| 1.0 - (-(f64::from(counts.n[t]) / unit)).exp2();
    let any = (!g.any.is_empty()).then(|| 1.0 - g.any.iter().map(|&(t, w)| (1.0 - s(t)).powf(w)).product::<f64>());
    let weight: f64 = g.all.iter().map(|&(_, w)| w).sum();
    let all = (weight > 0.0).then(|| g.all.iter().map(|&(t, w)| w * s(t)).sum::<f64>() / weight);
    match (all, any) {
        (Some(a), Some(b)) => (a + b) / 2.0,
        (Some(x), None) | (None, Some(x)) => x,
        (None, None) => 0.0,
    }
}

impl Term {
    /// Whether the term occurs at word `i` of `words`.
    fn matches_at(&self, words: &[&str], i: usize) -> bool {
        let last = self.words.len() - 1;
        self.words.iter().enumerate().all(|(k, t)| match words.get(i + k) {
            Some(w) if k == last && self.prefix => w.starts_with(t.as_str()),
            Some(w) => *w == t,
            None => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::focus::plan::parse_plan;

    fn scorer(toml: &str) -> Scorer {
        Scorer::new(parse_plan("plan.toml", toml).expect("a good plan"))
    }

    fn main_only(text: &str) -> PageText<'_> {
        PageText { title: None, main_text: Some(text), anchor: None }
    }

    #[test]
    fn words_are_lower_cased_runs_of_letters_and_digits() {
        assert_eq!(words("Über-Größe: 3D  Dark matter!"), ["über", "größe", "3d", "dark", "matter"]);
    }

    #[test]
    fn repeats_count_less_and_less() {
        let s = scorer("[[group]]\nany = ['galaxy']\n");
        let r = |t| s.relevance(&main_only(t)).expect("text");
        assert!((r("a galaxy") - 0.5).abs() < 1e-9);
        assert!((r("galaxy galaxy") - 0.75).abs() < 1e-9);
        assert_eq!(r("nothing here"), 0.0);
        assert_eq!(s.relevance(&PageText::default()), None, "no text, no relevance");
    }

    #[test]
    fn phrases_prefixes_and_weights() {
        let s = scorer("[[group]]\nany = ['dark matter', 'planet*', 'orbit^3']\n");
        let r = |t| s.relevance(&main_only(t)).expect("text");
        // Soft OR: dark matter ½, planets ½: 1 − ½·½.
        assert!((r("dark matter and planets") - 0.75).abs() < 1e-9);
        // orbit^3 once: 1 − ½³.
        assert!((r("an orbit") - 0.875).abs() < 1e-9);
        assert_eq!(r("dark energy, matter"), 0.0, "a phrase is words in a row");
        assert!((r("planetarium") - 0.5).abs() < 1e-9, "a prefix matches longer words");
    }

    #[test]
    fn and_or_not() {
        let s = scorer(
            "match = 'all'\n[[group]]\nname = 'topic'\nall = ['wind']\nany = ['turbine']\nnot = ['windows']\n\
             [[group]]\nname = 'place'\nany = ['north sea', 'baltic']\n",
        );
        let r = |t| s.relevance(&main_only(t)).expect("text");
        assert!(r("wind turbine in the baltic") > 0.4);
        assert_eq!(r("a turbine in the baltic"), 0.0, "an `all` term is missing");
        assert_eq!(r("wind turbine in the baltic, on windows"), 0.0, "a `not` term occurs");
        assert_eq!(r("wind turbine"), 0.0, "match = all: every group must score");
        let any = scorer(
            "match = 'any'\n[[group]]\nall = ['wind']\nany = ['turbine']\n[[group]]\nany = ['north sea', 'baltic']\n",
        );
        assert!(any.relevance(&main_only("wind turbine")).expect("text") > 0.2);
    }

    #[test]
    fn fields_are_weighted_and_main_text_counts_per_200_words() {
        let s = scorer("[weights]\ntitle = 1\nmain_text = 1\nanchor = 0\n[[group]]\nany = ['comet']\n");
        let long = "word ".repeat(800) + "comet";
        let page = PageText { title: Some("A comet"), main_text: Some(&long), anchor: Some("comet") };
        // Title ½; main text 1 in 801 words: 1 − 2^(−1/4.005); anchor weighs nothing.
        let want = (0.5 + (1.0 - (-1.0f64 / (801.0 / 200.0)).exp2())) / 2.0;
        assert!((s.relevance(&page).expect("text") - want).abs() < 1e-9);
    }
}
