//! Relations between the linked entities of one sentence
//! (docs/src/entities.md): the main text is cut into sentences (its lines,
//! then `.`, `!`, `?` before a space, unless the `.` ends an abbreviation
//! or an initial, sits inside a linked name, or the next word starts in
//! lower case), each sentence with two linked entities or more is cut into
//! words, marks and entities, and every pattern ([`super::patterns`]) is
//! tried at every place.
//!
//! A relation's `score` is the lower of its two links' scores, times 0.8
//! when the pattern skipped words (`...`).

use super::disambiguate::Mention;
use super::kb::KnowledgeBase;
use super::matcher::fold_key;
use super::patterns::{word_char, word_end, Part, Pattern};

/// What a `...` costs a relation's score.
const GAP_FACTOR: f64 = 0.8;

/// Words after which a `.` does not end a sentence (folded).
const ABBREVIATIONS: [&str; 22] = [
    "mr", "mrs", "ms", "dr", "prof", "st", "mt", "inc", "ltd", "co", "corp", "jr", "sr", "vs", "etc", "no", "approx",
    "dept", "gen", "gov", "sen", "rep",
];

/// A relation found in one sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    /// The entities' indexes in the knowledge base.
    pub subject: u32,
    pub object: u32,
    /// The pattern's predicate.
    pub predicate: String,
    /// Byte range of the sentence in the text.
    pub sentence: (usize, usize),
    pub score: f64,
}

/// The sentences of `text` as byte ranges, trimmed, none empty; no
/// sentence ends inside a mention.
#[must_use]
pub fn sentences(text: &str, mentions: &[Mention]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut m = 0;
    let push = |s: usize, e: usize, out: &mut Vec<(usize, usize)>| {
        let piece = &text[s..e];
        let lead = piece.len() - piece.trim_start().len();
        let t = piece.trim();
        if !t.is_empty() {
            out.push((s + lead, s + lead + t.len()));
        }
    };
    for (i, c) in text.char_indices() {
        while m < mentions.len() && mentions[m].end <= i {
            m += 1;
        }
        let inside = m < mentions.len() && mentions[m].start <= i;
        if c == '\n' {
            push(start, i, &mut out);
            start = i + 1;
        } else if matches!(c, '.' | '!' | '?' | '…') && !inside && ends_sentence(text, i, c) {
            let end = i + c.len_utf8();
            push(start, end, &mut out);
            start = end;
        }
    }
    push(start, text.len(), &mut out);
    out
}

/// Whether the mark `c` at `i` ends its sentence.
fn ends_sentence(text: &str, i: usize, c: char) -> bool {
    let after = &text[i + c.len_utf8()..];
    // Closing quotes and brackets may follow the mark.
    let rest = after.trim_start_matches(['"', '\'', '\u{201d}', '\u{2019}', ')', ']']);
    match rest.chars().next() {
        None | Some('\n') => return true,
        Some(n) if !n.is_whitespace() => return false,
        _ => {}
    }
    if rest.trim_start().chars().next().is_some_and(char::is_lowercase) {
        return false;
    }
    if c != '.' {
        return true;
    }
    let before = &text[..i];
    let word_start = before
        .rfind(|ch: char| !ch.is_alphanumeric())
        .map_or(0, |k| k + before[k..].chars().next().map_or(1, char::len_utf8));
    let word = &before[word_start..];
    let initial = word.chars().count() == 1 && word.chars().all(char::is_uppercase);
    !(initial || ABBREVIATIONS.contains(&fold_key(word).as_str()))
}

/// A sentence cut for matching.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    /// A linked mention (its index among the page's mentions).
    Entity(usize),
    Word(String),
    Mark(char),
}

/// The tokens of `text[s..e]`, mentions (`(start, end, index)`, sorted,
/// inside it) made one token each.
fn tokens(text: &str, s: usize, e: usize, mentions: &[(usize, usize, usize)]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = s;
    let mut next = 0;
    while i < e {
        if next < mentions.len() && mentions[next].0 <= i {
            out.push(Token::Entity(mentions[next].2));
            i = mentions[next].1.max(i + 1);
            next += 1;
            continue;
        }
        let stop = mentions.get(next).map_or(e, |m| m.0.min(e));
        let c = text[i..].chars().next().expect("i is inside the text");
        let after_word = matches!(out.last(), Some(Token::Word(_) | Token::Entity(_)));
        let apostrophe = matches!(c, '\'' | '\u{2019}');
        if c.is_whitespace() {
            i += c.len_utf8();
        } else if word_char(c) {
            let end = word_end(text, i, stop).max(i + c.len_utf8());
            out.push(Token::Word(fold_key(&text[i..end])));
            i = end;
        } else if apostrophe && after_word && text[i + c.len_utf8()..].chars().next().is_some_and(word_char) {
            // `'s` after a name or word is a word of its own.
            let from = i + c.len_utf8();
            let end = word_end(text, from, stop).max(from);
            out.push(Token::Word(format!("'{}", fold_key(&text[from..end]))));
            i = end;
        } else {
            out.push(Token::Mark(if apostrophe { '\'' } else { c }));
            i += c.len_utf8();
        }
    }
    out
}

/// What one pattern bound in one place.
#[derive(Default, Clone, Copy)]
struct Bound {
    subject: Option<usize>,
    object: Option<usize>,
    gapped: bool,
}

/// The relations of a text whose linked mentions are `mentions` (in text
/// order), by `patterns`.
#[must_use]
pub fn relations(text: &str, mentions: &[Mention], kb: &KnowledgeBase, patterns: &[Pattern]) -> Vec<Relation> {
    let mut out: Vec<Relation> = Vec::new();
    if mentions.len() < 2 || patterns.is_empty() {
        return out;
    }
    let kinds: Vec<Option<String>> =
        mentions.iter().map(|m| kb.entities[m.entity as usize].kind.as_deref().map(fold_key)).collect();
    for (s, e) in sentences(text, mentions) {
        let inside: Vec<(usize, usize, usize)> = mentions
            .iter()
            .enumerate()
            .filter(|(_, m)| m.start >= s && m.end <= e)
            .map(|(k, m)| (m.start, m.end, k))
            .collect();
        if inside.len() < 2 {
            continue;
        }
        let toks = tokens(text, s, e, &inside);
        for p in patterns {
            for at in 0..toks.len() {
                let mut b = Bound::default();
                if !match_at(&p.parts, &toks, at, &kinds, &mut b) {
                    continue;
                }
                let (Some(si), Some(oi)) = (b.subject, b.object) else { continue };
                let (sm, om) = (&mentions[si], &mentions[oi]);
                if sm.entity == om.entity {
                    continue;
                }
                let score = sm.score.min(om.score) * if b.gapped { GAP_FACTOR } else { 1.0 };
                let r = Relation {
                    subject: sm.entity,
                    object: om.entity,
                    predicate: p.predicate.clone(),
                    sentence: (s, e),
                    score,
                };
                match out.iter_mut().find(|x| {
                    x.subject == r.subject
                        && x.object == r.object
                        && x.predicate == r.predicate
                        && x.sentence == r.sentence
                }) {
                    Some(x) => x.score = x.score.max(r.score),
                    None => out.push(r),
                }
            }
        }
    }
    out
}

/// Whether `parts` match `toks` from `at` on, binding the slots in `b`.
fn match_at(parts: &[Part], toks: &[Token], at: usize, kinds: &[Option<String>], b: &mut Bound) -> bool {
    let Some((first, rest)) = parts.split_first() else { return true };
    match first {
        Part::Slot { subject, kind } => {
            let Some(Token::Entity(m)) = toks.get(at) else { return false };
            if kind.as_ref().is_some_and(|k| kinds[*m].as_ref() != Some(k)) {
                return false;
            }
            let saved = *b;
            if *subject {
                b.subject = Some(*m);
            } else {
                b.object = Some(*m);
            }
            if match_at(rest, toks, at + 1, kinds, b) {
                return true;
            }
            *b = saved;
            false
        }
        Part::Word { alternatives, optional } => {
            if let Some(Token::Word(w)) = toks.get(at) {
                if alternatives.iter().any(|a| a == w) && match_at(rest, toks, at + 1, kinds, b) {
                    return true;
                }
            }
            *optional && match_at(rest, toks, at, kinds, b)
        }
        Part::Mark { mark, optional } => {
            if toks.get(at) == Some(&Token::Mark(*mark)) && match_at(rest, toks, at + 1, kinds, b) {
                return true;
            }
            *optional && match_at(rest, toks, at, kinds, b)
        }
        Part::Gap(max) => {
            for skip in 0..=*max {
                if at + skip > toks.len() || toks[at..at + skip].iter().any(|t| matches!(t, Token::Entity(_))) {
                    break;
                }
                let saved = *b;
                b.gapped |= skip > 0;
                if match_at(rest, toks, at + skip, kinds, b) {
                    return true;
                }
                *b = saved;
            }
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::entities::kb::parse_kb;
    use crate::extract::entities::patterns::builtin;

    const KB: &str = "id,name,aliases,type\n\
        ada,Ada Whitlock,,person\n\
        orion,Orion Dynamics,Orion,company\n\
        heron,Blue Heron Capital,,company\n\
        munich,München,Munich,city\n";

    /// Mentions of every name in `text` (all scored 0.9), as a linker would give them.
    fn mentions(kb: &KnowledgeBase, text: &str) -> Vec<Mention> {
        let mut out = Vec::new();
        for (e, ent) in kb.entities.iter().enumerate() {
            for form in std::iter::once(&ent.name).chain(&ent.aliases) {
                let mut from = 0;
                while let Some(k) = text[from..].find(form.as_str()) {
                    let start = from + k;
                    let end = start + form.len();
                    let overlaps = out.iter().any(|m: &Mention| m.start < end && start < m.end);
                    if !overlaps {
                        out.push(Mention { start, end, entity: u32::try_from(e).expect("small"), score: 0.9 });
                    }
                    from = end;
                }
            }
        }
        out.sort_by_key(|m| m.start);
        out
    }

    fn found(text: &str) -> Vec<(String, String, String, String)> {
        let kb = parse_kb("kb.csv", KB).expect("kb");
        let ms = mentions(&kb, text);
        relations(text, &ms, &kb, &builtin())
            .into_iter()
            .map(|r| {
                (
                    kb.entities[r.subject as usize].id.clone(),
                    r.predicate,
                    kb.entities[r.object as usize].id.clone(),
                    text[r.sentence.0..r.sentence.1].to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn sentences_end_at_lines_and_marks_but_not_abbreviations_or_initials() {
        let text = "First line\nDr. Ada J. Whitlock met Mr. Smith. Then she left! Really? yes.\nOrion Inc. grew.";
        let got: Vec<&str> = sentences(text, &[]).into_iter().map(|(s, e)| &text[s..e]).collect();
        assert_eq!(
            got,
            ["First line", "Dr. Ada J. Whitlock met Mr. Smith.", "Then she left!", "Really? yes.", "Orion Inc. grew."]
        );
    }

    #[test]
    fn the_builtin_patterns_find_the_usual_phrasings() {
        assert_eq!(found("Ada Whitlock, the CEO of Orion Dynamics, spoke.")[0].1, "ceo_of");
        assert_eq!(found("Orion's chief executive Ada Whitlock spoke.")[0].0, "ada");
        let f = found("Orion Dynamics acquired Blue Heron Capital last year.");
        assert_eq!((f[0].0.as_str(), f[0].1.as_str(), f[0].2.as_str()), ("orion", "acquired", "heron"));
        let f = found("Blue Heron Capital was founded in 1998 by Ada Whitlock.");
        assert_eq!((f[0].0.as_str(), f[0].1.as_str(), f[0].2.as_str()), ("ada", "founded", "heron"));
        let f = found("The Munich-based Orion Dynamics grew. Orion Dynamics is based in München.");
        assert_eq!(f.len(), 2);
        assert!(f.iter().all(|r| r.0 == "orion" && r.1 == "based_in" && r.2 == "munich"), "{f:?}");
        assert_eq!(f[0].3, "The Munich-based Orion Dynamics grew.");
        let f = found("Orion Dynamics hat Blue Heron Capital übernommen.");
        assert_eq!(f[0].1, "acquired");
    }

    #[test]
    fn entities_side_by_side_without_a_pattern_are_no_relation() {
        assert!(found("Ada Whitlock and Orion Dynamics were both at the fair.").is_empty());
        assert!(found("Orion Dynamics acquired a stake. Blue Heron Capital did not.").is_empty(), "two sentences");
        assert!(found("Orion Dynamics acquired the rights from Blue Heron Capital.").is_empty());
    }
}
