//! Which entity a found name means, and how sure the link is
//! (docs/src/entities.md, the method).
//!
//! Each candidate entity of a found form gets a plausibility from 0 to 1:
//!
//! - the **form**: the entity's name or an alias of several words rarely
//!   occurs by chance (strength 0.8); a one-word alias often does (0.4);
//!   scaled by the entity's prior, `0.5 + prior / 2`;
//! - the **evidence** for it, combined as independent clues (`1 − Π(1 −
//!   w·x)`): its context words within 25 words of the mention (w 0.9, `x
//!   = 1 − 2^−n` for n occurrences), anywhere on the page (w 0.5, `x = 1 −
//!   2^−n/2`), a word of its type near the mention (`company`, `city`, or
//!   the built-in cue words of common types, such as "based" for a
//!   place, w 0.5), and its full name
//!   written elsewhere on the page (w 0.9: "Whitlock" after "Ada
//!   Whitlock");
//! - plausibility `= 1 − (1 − form)(1 − evidence)`.
//!
//! A one-word form written all in lower case ("mercury") where the
//! entity's name has capitals is most likely the common word: only the
//! context words near it count as evidence, and its form half as much.
//!
//! The most plausible candidate wins (a higher prior, then the knowledge
//! base's order, breaks ties); the link's `score` is its plausibility
//! times its share of all candidates' plausibilities, so a coin flip
//! between two equally plausible entities scores low. Links below the
//! threshold (`--entity-threshold`) are dropped.

use std::collections::{HashMap, HashSet};

use xxhash_rust::xxh3::Xxh3Builder;

use super::kb::KnowledgeBase;
use super::matcher::{fold_key, Folded, Found, Matcher};

/// Words on either side of a mention that count as near it.
pub const WINDOW: usize = 25;
/// Strength of a form that is a name or has several words, and of a
/// one-word alias.
const STRONG_FORM: f64 = 0.8;
const WEAK_FORM: f64 = 0.4;
/// Weights of the clues.
const W_NEAR: f64 = 0.9;
const W_PAGE: f64 = 0.5;
const W_TYPE: f64 = 0.5;
const W_NAMED: f64 = 0.9;

/// Cue words of common types (folded), besides the type's own name.
const TYPE_CUES: [(&[&str], &[&str]); 4] = [
    (
        &["company", "organization", "organisation", "org", "corporation", "business", "firm", "brand"],
        &["company", "firm", "corporation", "group", "maker", "startup", "inc", "ltd", "shares", "subsidiary", "brand"],
    ),
    (
        &["person", "people", "human", "individual"],
        &["mr", "mrs", "ms", "dr", "said", "says", "told", "founder", "chief", "executive", "born", "she", "he"],
    ),
    (
        &["city", "town", "place", "location", "country", "region", "village", "capital"],
        &[
            "city",
            "town",
            "capital",
            "village",
            "region",
            "country",
            "streets",
            "mayor",
            "residents",
            "based",
            "headquartered",
        ],
    ),
    (&["product", "device", "software"], &["launched", "released", "version", "model", "device", "users"]),
];

/// A mention linked to an entity.
#[derive(Clone, Debug, PartialEq)]
pub struct Mention {
    /// Original byte offsets in the text.
    pub start: usize,
    pub end: usize,
    /// The entity's index in the knowledge base.
    pub entity: u32,
    pub score: f64,
}

/// The linker of a knowledge base: its entities' clue words by id.
pub struct Linker {
    /// Every context and type-cue word of the knowledge base.
    vocabulary: HashMap<String, u32, Xxh3Builder>,
    /// Per entity: its context word ids and type-cue word ids, sorted.
    context: Vec<Vec<u32>>,
    cues: Vec<Vec<u32>>,
    prior: Vec<f64>,
    /// Per entity: whether its name has a capital letter (a proper name).
    proper: Vec<bool>,
    threshold: f64,
}

impl Linker {
    /// The linker of `kb`, dropping links that score below `threshold`.
    #[must_use]
    pub fn new(kb: &KnowledgeBase, threshold: f64) -> Self {
        let mut vocabulary: HashMap<String, u32, Xxh3Builder> = HashMap::default();
        let mut id = |w: &str| {
            let next = u32::try_from(vocabulary.len()).unwrap_or(u32::MAX);
            *vocabulary.entry(w.to_string()).or_insert(next)
        };
        let mut context = Vec::with_capacity(kb.entities.len());
        let mut cues = Vec::with_capacity(kb.entities.len());
        for e in &kb.entities {
            let mut c: Vec<u32> = e.context.iter().map(|w| id(w)).collect();
            c.sort_unstable();
            c.dedup();
            context.push(c);
            let mut t: Vec<u32> = Vec::new();
            if let Some(kind) = &e.kind {
                let kind = fold_key(kind);
                for w in kind.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                    t.push(id(w));
                    t.push(id(&format!("{w}s")));
                }
                for (names, words) in TYPE_CUES {
                    if names.contains(&kind.as_str()) {
                        t.extend(words.iter().map(|w| id(w)));
                    }
                }
            }
            t.sort_unstable();
            t.dedup();
            cues.push(t);
        }
        let prior = kb.entities.iter().map(|e| e.prior).collect();
        let proper = kb.entities.iter().map(|e| e.name.chars().any(char::is_uppercase)).collect();
        Self { vocabulary, context, cues, prior, proper, threshold }
    }

    /// The links of the forms `found` in `text` (folded as `folded`), in
    /// text order, those below the threshold left out.
    #[must_use]
    pub fn link(&self, matcher: &Matcher, text: &str, folded: &Folded, found: &[Found]) -> Vec<Mention> {
        if found.is_empty() {
            return Vec::new();
        }
        let words = Words::of(self, &folded.text);
        // Entities named in full somewhere on the page: a form of theirs
        // that names no other entity and is their name or several words.
        let named: HashSet<u32> = found
            .iter()
            .filter(|f| f.candidates.len() == 1)
            .filter(|f| f.candidates[0].is_name || matcher.surface(f.surface).words > 1)
            .map(|f| f.candidates[0].entity)
            .collect();
        let mut out = Vec::with_capacity(found.len());
        for f in found {
            let (first, last) = (words.index(f.folded_start), words.index(f.folded_end.saturating_sub(1)));
            let surface = matcher.surface(f.surface);
            let written = &text[f.start..f.end];
            let lower = surface.words == 1 && !written.chars().any(char::is_uppercase);
            let mut best: Option<(f64, u32)> = None;
            let mut total = 0.0;
            for c in &f.candidates {
                let e = c.entity as usize;
                let form = if c.is_name || surface.words > 1 { STRONG_FORM } else { WEAK_FORM };
                let common = lower && self.proper[e];
                let form = form * (0.5 + self.prior[e] / 2.0) * if common { 0.5 } else { 1.0 };
                let near = words.near(first, last, &self.context[e]);
                let page = if common { 0 } else { words.on_page(&self.context[e]) };
                let type_near = !common && words.near(first, last, &self.cues[e]) > 0;
                let evidence = 1.0
                    - (1.0 - W_NEAR * (1.0 - (-f64::from(near)).exp2()))
                        * (1.0 - W_PAGE * (1.0 - (-f64::from(page) / 2.0).exp2()))
                        * (1.0 - if type_near { W_TYPE } else { 0.0 })
                        * (1.0 - if !common && named.contains(&c.entity) { W_NAMED } else { 0.0 });
                let plausible = 1.0 - (1.0 - form) * (1.0 - evidence);
                total += plausible;
                let better = best
                    .is_none_or(|(p, b)| plausible > p || (plausible == p && self.prior[e] > self.prior[b as usize]));
                if better {
                    best = Some((plausible, c.entity));
                }
            }
            let Some((p, entity)) = best else { continue };
            let score = if total > 0.0 { p * p / total } else { 0.0 };
            if score >= self.threshold {
                out.push(Mention { start: f.start, end: f.end, entity, score: score.clamp(0.0, 1.0) });
            }
        }
        out
    }
}

/// The words of a folded text that are clues of some entity.
struct Words {
    /// The folded byte offset where each word starts, all words.
    starts: Vec<usize>,
    /// (word index, vocabulary id) of each clue word, in text order.
    clues: Vec<(u32, u32)>,
}

impl Words {
    fn of(linker: &Linker, text: &str) -> Self {
        let mut starts = Vec::with_capacity(text.len() / 6);
        let mut clues = Vec::new();
        let mut at = 0;
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if !word.is_empty() {
                if let Some(&id) = linker.vocabulary.get(word) {
                    clues.push((u32::try_from(starts.len()).unwrap_or(u32::MAX), id));
                }
                starts.push(at);
            }
            // The separator is one character; find where the next piece starts.
            at += word.len();
            at += text[at..].chars().next().map_or(0, char::len_utf8);
        }
        Self { starts, clues }
    }

    /// The index of the word at or before folded byte `at`.
    fn index(&self, at: usize) -> u32 {
        let i = self.starts.partition_point(|&s| s <= at).saturating_sub(1);
        u32::try_from(i).unwrap_or(u32::MAX)
    }

    /// Clue words of `ids` within [`WINDOW`] words of words `first..=last`,
    /// those words themselves left out.
    fn near(&self, first: u32, last: u32, ids: &[u32]) -> u32 {
        #[allow(clippy::cast_possible_truncation)]
        let (lo, hi) = (first.saturating_sub(WINDOW as u32), last.saturating_add(WINDOW as u32));
        let from = self.clues.partition_point(|&(w, _)| w < lo);
        let mut n = 0;
        for &(w, id) in &self.clues[from..] {
            if w > hi {
                break;
            }
            if (w < first || w > last) && ids.binary_search(&id).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Clue words of `ids` anywhere in the text.
    fn on_page(&self, ids: &[u32]) -> u32 {
        let n = self.clues.iter().filter(|(_, id)| ids.binary_search(id).is_ok()).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::entities::kb::parse_kb;
    use crate::extract::entities::matcher::fold;

    fn link(csv: &str, text: &str) -> Vec<(String, String, f64)> {
        let kb = parse_kb("kb.csv", csv).expect("kb");
        let m = Matcher::new(&kb).expect("automaton");
        let l = Linker::new(&kb, 0.35);
        let folded = fold(text).expect("small");
        let found = m.find(text, &folded);
        l.link(&m, text, &folded, &found)
            .into_iter()
            .map(|x| (text[x.start..x.end].to_string(), kb.entities[x.entity as usize].id.clone(), x.score))
            .collect()
    }

    const KB: &str = "id,name,aliases,type,prior,context\n\
        orion-d,Orion Dynamics,Orion,company,0.5,rocket satellite launch aerospace\n\
        orion-f,Orion Foods,Orion,company,0.5,bakery snacks flour grocery\n\
        mercury,Mercury Bank,Mercury,company,0.5,loans deposits lending\n\
        whitlock,Ada Whitlock,Whitlock,person,0.5,engineer\n";

    #[test]
    fn context_resolves_an_alias_that_names_two_entities() {
        let got = link(KB, "Orion will launch a new rocket next spring.");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].1, "orion-d");
        let got = link(KB, "At its bakery, Orion sells flour and snacks.");
        assert_eq!(got[0].1, "orion-f");
        assert!(got[0].2 > 0.35);
    }

    #[test]
    fn a_coin_flip_and_a_lone_common_word_are_dropped() {
        assert!(link(KB, "Orion was mentioned once.").is_empty(), "two equally likely entities");
        assert!(link(KB, "mercury in the thermometer").is_empty(), "a one-word alias without a clue");
        assert!(link(KB, "Mercury Bank rose; mercury in the thermometer").len() == 1, "the common word stays one");
        let got = link(KB, "Mercury approved more loans.");
        assert_eq!(got.iter().map(|g| g.1.as_str()).collect::<Vec<_>>(), ["mercury"]);
    }

    #[test]
    fn a_full_name_on_the_page_supports_its_short_form() {
        let got = link(KB, "Ada Whitlock spoke first. Later, Whitlock left.");
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|g| g.1 == "whitlock"));
        assert!(link(KB, "Later, Whitlock left.").is_empty());
        // A name alone is enough.
        let got = link(KB, "Orion Dynamics");
        assert_eq!(got[0].1, "orion-d");
        assert!(got[0].2 > 0.5);
    }
}
