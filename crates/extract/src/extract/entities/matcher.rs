//! Finding the knowledge base's names and aliases in a text
//! (docs/src/entities.md): one Aho-Corasick automaton over every surface
//! form, built once per run; Unicode full case folding of the forms and
//! the text alike, with a map back to the text's own offsets; whole words
//! only; the longest match wins over shorter ones it overlaps.
//!
//! Folding: every character is case-folded (`caseless`, Unicode's
//! `CaseFolding.txt`: "ÉCOLE" and "école" fold alike, "Straße" and
//! "STRASSE" too), typographic apostrophes become `'`, and a run of spaces
//! (tabs, no-break spaces) becomes one space, so "New  York" is "New
//! York"; a line break stays, so a name never runs over two lines of the
//! main text. An alias of at most five characters written all in capitals
//! (`US`, `WHO`, `IT`) is the exception: it matches only as written, so
//! the word "it" is not the country.

use std::collections::{BTreeMap, HashMap};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

pub use super::fold::fold_key;
use super::fold::push_folded;
use super::kb::KnowledgeBase;

/// The map entry's flag: this folded byte is the first of an original
/// character's folding (a match may start or end only there).
const START: u32 = 1 << 31;

/// A text folded for matching, and where each folded byte came from.
pub struct Folded {
    pub text: String,
    /// Per folded byte, then one past the end: the original byte offset of
    /// the character it came from, `START`-flagged on the first byte of
    /// each character's folding.
    map: Vec<u32>,
}

impl Folded {
    /// The original byte offset of folded byte `at` (`at` may be the end).
    #[must_use]
    pub fn original(&self, at: usize) -> usize {
        (self.map[at] & !START) as usize
    }

    /// Whether a match may start or end at folded byte `at`.
    fn boundary(&self, at: usize) -> bool {
        self.map[at] & START != 0
    }
}

/// Folds `text` for matching, keeping the map back to it. `None` for a
/// text of 2 GiB or more (offsets are kept in 31 bits).
#[must_use]
pub fn fold(text: &str) -> Option<Folded> {
    if text.len() >= START as usize {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut map: Vec<u32> = Vec::with_capacity(text.len() + 9);
    let mut space = false;
    for (i, c) in text.char_indices() {
        let before = out.len();
        if c == '\n' {
            out.push('\n');
            space = false;
        } else if c.is_whitespace() {
            if space {
                continue;
            }
            out.push(' ');
            space = true;
        } else {
            push_folded(&mut out, c);
            space = false;
        }
        #[allow(clippy::cast_possible_truncation)] // below 2^31, checked above
        let at = i as u32;
        map.push(at | START);
        map.extend(std::iter::repeat_n(at, out.len() - before - 1));
    }
    #[allow(clippy::cast_possible_truncation)]
    map.push(text.len() as u32 | START);
    Some(Folded { text: out, map })
}

/// One entity a surface form may name.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Its index in the knowledge base.
    pub entity: u32,
    /// The form is the entity's canonical name.
    pub is_name: bool,
    /// The form as written, when it matches only so (a short all-capitals alias).
    exact: Option<Box<str>>,
}

/// One surface form of the dictionary (a folded name or alias) and the
/// entities it may name.
#[derive(Clone, Debug)]
pub struct Surface {
    pub candidates: Vec<Candidate>,
    /// Words in the form: a form of several words rarely occurs by chance.
    pub words: u32,
    /// Whether its first and last characters are letters or digits (then
    /// the text must not go on with one there: whole words only).
    word_start: bool,
    word_end: bool,
}

/// A surface form found in a text: original byte offsets, and the
/// candidates that remain (the exact-case ones that did not match removed).
#[derive(Clone, Debug)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    /// Folded byte offsets of the same span.
    pub folded_start: usize,
    pub folded_end: usize,
    pub surface: u32,
    pub candidates: Vec<Candidate>,
}

/// The dictionary of a knowledge base: one automaton over every form.
pub struct Matcher {
    automaton: AhoCorasick,
    surfaces: Vec<Surface>,
}

/// Why the automaton could not be built (a knowledge base too large for it).
#[derive(Debug, thiserror::Error)]
#[error("the knowledge base's names do not fit one automaton: {0}")]
pub struct BuildError(#[from] aho_corasick::BuildError);

/// Characters at most of an all-capitals alias that matches only as written.
const EXACT_MAX_CHARS: usize = 5;

fn is_exact_form(alias: &str) -> bool {
    alias.chars().count() <= EXACT_MAX_CHARS
        && alias.chars().any(char::is_alphabetic)
        && !alias.chars().any(char::is_lowercase)
}

impl Matcher {
    /// The dictionary of `kb`'s names and aliases.
    ///
    /// # Errors
    /// When the automaton exceeds its size limits.
    pub fn new(kb: &KnowledgeBase) -> Result<Self, BuildError> {
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut keys: Vec<String> = Vec::new();
        let mut surfaces: Vec<Surface> = Vec::new();
        for (e, entity) in kb.entities.iter().enumerate() {
            let forms = std::iter::once((&entity.name, true)).chain(entity.aliases.iter().map(|a| (a, false)));
            for (form, is_name) in forms {
                let key = fold_key(form);
                if key.is_empty() {
                    continue;
                }
                let at = *index.entry(key.clone()).or_insert_with(|| {
                    let first = key.chars().next().is_some_and(char::is_alphanumeric);
                    let last = key.chars().next_back().is_some_and(char::is_alphanumeric);
                    #[allow(clippy::cast_possible_truncation)]
                    let words = key.split(' ').count() as u32;
                    surfaces.push(Surface { candidates: Vec::new(), words, word_start: first, word_end: last });
                    keys.push(key);
                    surfaces.len() - 1
                });
                #[allow(clippy::cast_possible_truncation)]
                let entity_at = e as u32;
                let exact = (!is_name && is_exact_form(form))
                    .then(|| form.split_whitespace().collect::<Vec<_>>().join(" ").into());
                let list = &mut surfaces[at].candidates;
                if !list.iter().any(|c| c.entity == entity_at) {
                    list.push(Candidate { entity: entity_at, is_name, exact });
                }
            }
        }
        let automaton = AhoCorasickBuilder::new().match_kind(MatchKind::Standard).build(&keys)?;
        Ok(Self { automaton, surfaces })
    }

    /// The surface form `i`.
    #[must_use]
    pub fn surface(&self, i: u32) -> &Surface {
        &self.surfaces[i as usize]
    }

    /// How many distinct surface forms the dictionary has.
    #[must_use]
    pub fn len(&self) -> usize {
        self.surfaces.len()
    }

    /// True for a dictionary without forms (never, for a checked knowledge base).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.surfaces.is_empty()
    }

    /// The forms found in `text` (folded as `folded`): whole words only;
    /// of forms that overlap, the longest (then the first) wins. In text
    /// order.
    #[must_use]
    pub fn find(&self, text: &str, folded: &Folded) -> Vec<Found> {
        let f = &folded.text;
        let bytes = f.as_bytes();
        let mut all: Vec<(usize, usize, u32)> = Vec::new();
        for m in self.automaton.find_overlapping_iter(f.as_str()) {
            let (s, e) = (m.start(), m.end());
            let surface = &self.surfaces[m.pattern().as_usize()];
            if !folded.boundary(s) || !folded.boundary(e) {
                continue;
            }
            if surface.word_start && f[..s].chars().next_back().is_some_and(char::is_alphanumeric) {
                continue;
            }
            if surface.word_end && e < bytes.len() && f[e..].chars().next().is_some_and(char::is_alphanumeric) {
                continue;
            }
            #[allow(clippy::cast_possible_truncation)]
            all.push((s, e, m.pattern().as_usize() as u32));
        }
        // Longest first, then leftmost; a span taken blocks the ones it overlaps.
        all.sort_by(|a, b| (b.1 - b.0).cmp(&(a.1 - a.0)).then(a.0.cmp(&b.0)));
        let mut taken: BTreeMap<usize, usize> = BTreeMap::new();
        let mut out = Vec::new();
        for (s, e, surface) in all {
            let before = taken.range(..e).next_back().is_some_and(|(_, &end)| end > s);
            if before {
                continue;
            }
            let (start, end) = (folded.original(s), folded.original(e));
            let written = &text[start..end];
            let candidates: Vec<Candidate> = self.surfaces[surface as usize]
                .candidates
                .iter()
                .filter(|c| c.exact.as_deref().is_none_or(|x| same_words(x, written)))
                .cloned()
                .collect();
            if candidates.is_empty() {
                continue;
            }
            taken.insert(s, e);
            out.push(Found { start, end, folded_start: s, folded_end: e, surface, candidates });
        }
        out.sort_by_key(|f| f.start);
        out
    }
}

/// Whether `a` and `b` are the same words, whitespace aside.
fn same_words(a: &str, b: &str) -> bool {
    a.split_whitespace().eq(b.split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::entities::kb::parse_kb;

    fn matcher(csv: &str) -> (KnowledgeBase, Matcher) {
        let kb = parse_kb("kb.csv", csv).expect("kb");
        let m = Matcher::new(&kb).expect("automaton");
        (kb, m)
    }

    fn found(m: &Matcher, text: &str) -> Vec<(String, Vec<u32>)> {
        let folded = fold(text).expect("small");
        m.find(text, &folded)
            .into_iter()
            .map(|f| (text[f.start..f.end].to_string(), f.candidates.iter().map(|c| c.entity).collect()))
            .collect()
    }

    #[test]
    fn folding_maps_back_to_the_original_offsets() {
        let t = "Die STRASSE  und\u{a0}ÉCOLE";
        let f = fold(t).expect("small");
        assert_eq!(f.text, "die strasse und école");
        let at = f.text.find("école").expect("folded");
        assert_eq!(&t[f.original(at)..f.original(f.text.len())], "ÉCOLE");
        let s = fold("Straße").expect("small");
        assert_eq!(s.text, "strasse");
        // "ss" of "ß": a match may not end between the two s.
        assert!(!s.boundary(5) && s.boundary(4) && s.boundary(7));
        assert_eq!(fold_key("  Orion\n Dynamics "), "orion dynamics");
    }

    #[test]
    fn case_and_unicode_folding_whole_words_and_the_longest_match() {
        let (_, m) = matcher(
            "id,name,aliases\n\
             ecole,École Numérique,\n\
             nord,Nordlicht Straßenbau,Nordlicht\n\
             paris,Paris,\n\
             orion,Orion Dynamics,Orion\n\
             us,United States,US\n",
        );
        assert_eq!(
            found(&m, "L'ÉCOLE NUMÉRIQUE et l'école numérique"),
            [("ÉCOLE NUMÉRIQUE".to_string(), vec![0]), ("école numérique".to_string(), vec![0])]
        );
        assert_eq!(found(&m, "NORDLICHT STRASSENBAU baut."), [("NORDLICHT STRASSENBAU".to_string(), vec![1])]);
        assert!(found(&m, "Parisian cafés and comparison").is_empty(), "no Paris inside a word");
        assert_eq!(found(&m, "Paris-based, (Paris)."), [("Paris".into(), vec![2]), ("Paris".into(), vec![2])]);
        assert_eq!(
            found(&m, "Orion Dynamics and Orion"),
            [("Orion Dynamics".into(), vec![3]), ("Orion".into(), vec![3])]
        );
        assert_eq!(found(&m, "Orion\nDynamics"), [("Orion".into(), vec![3]),], "no name over two lines");
        assert_eq!(found(&m, "the US said it would"), [("US".into(), vec![4])], "short capitals match as written");
        assert!(found(&m, "let us go").is_empty());
    }
}
