//! Relation patterns (docs/src/entities.md): the built-in
//! ones and a `--relations FILE` of the user's, one a line,
//! `predicate: template`.
//!
//! A template is the words of a sentence between and around two linked
//! entities: `{S}` the subject, `{O}` the object (`{S:person}` only an
//! entity of that type), words compared after case folding, `a|b|c` one
//! of several words, `[the]` or `[,]` a word or mark that may be missing,
//! `...` up to four words of anything but another entity; punctuation is
//! matched as written. `ceo_of: {S} , [the] ceo|chairman of {O}` finds
//! "Ada Whitlock, the CEO of Orion Dynamics".

use crate::rules::file::{render_problems, Problem};

use super::matcher::fold_key;

/// Words a `...` gap may skip at most.
pub const GAP: usize = 4;

/// The built-in patterns: English, and a few French and German ones.
pub const BUILTIN: &str = r"
ceo_of: {S} , [the] ceo|chairman|chairwoman|president|boss of {O}
ceo_of: {S} , [the] chief executive [officer] of {O}
ceo_of: {S} is|was|became|remains [the] ceo|chairman|chairwoman|president|boss of {O}
ceo_of: {S} is|was|became|remains [the] chief executive [officer] of {O}
ceo_of: {S} runs|leads|heads {O}
ceo_of: {O} ceo|chairman|chairwoman|president|boss {S}
ceo_of: {O} chief executive [officer] {S}
ceo_of: {O} 's ceo|chairman|chairwoman|president|boss [,] {S}
ceo_of: {O} 's chief executive [officer] [,] {S}
ceo_of: {S} , pdg|président|présidente|directeur|directrice de|d' {O}
ceo_of: {S} , chef|chefin|vorstandschef|vorstandschefin|geschäftsführer|geschäftsführerin von|der|des {O}
founded: {S} founded|co-founded|cofounded|started|established|created {O}
founded: {S} , who founded|co-founded|started|established {O}
founded: {S} , [the] founder|co-founder|cofounder of {O}
founded: {S} is|was [the] founder|co-founder|cofounder of {O}
founded: {O} was|were|is founded|co-founded|started|established|created by {S}
founded: {O} was|were|is founded|co-founded|started|established ... by {S}
founded: {O} , founded|co-founded|started|established [...] by {S}
founded: {O} founder {S}
founded: {O} 's founder [,] {S}
founded: {S} a fondé|créé {O}
founded: {O} a été fondée|fondé|créée|créé par {S}
founded: {S} gründete {O}
founded: {O} wurde von {S} gegründet
acquired: {S} acquired|bought|purchased|acquires|buys|purchases {O}
acquired: {S} has|have|had acquired|bought|purchased {O}
acquired: {S} took|takes over {O}
acquired: {S} agreed to acquire|buy|purchase {O}
acquired: {S} completed [its|the] acquisition|purchase of {O}
acquired: {O} was|were|is acquired|bought|purchased by {S}
acquired: {O} has|have been acquired|bought|purchased by {S}
acquired: {O} , acquired|bought|purchased by {S}
acquired: {S} a racheté|acquis {O}
acquired: {O} a été racheté|rachetée|acquis|acquise par {S}
acquired: {S} übernahm|kaufte|übernimmt|kauft {O}
acquired: {S} hat {O} übernommen|gekauft
based_in: {S} is|was|are based|headquartered|located in {O}
based_in: {S} , based|headquartered in {O}
based_in: {S} has|had its headquarters|base in {O}
based_in: {S} has|had its head office in {O}
based_in: {O} - based {S}
based_in: {S} , basée|basé|installée|installé à {O}
based_in: {S} est|sont basée|basé|installée|installé à {O}
based_in: {S} mit sitz in {O}
based_in: {S} hat seinen|ihren sitz in {O}
subsidiary_of: {S} , a subsidiary|unit|division of {O}
subsidiary_of: {S} is|was|became a subsidiary|unit|division of {O}
";

/// One element of a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    /// `{S}` (subject) or `{O}`, with a type the entity must have (folded).
    Slot { subject: bool, kind: Option<String> },
    /// One of these words (folded); `optional`: it may be missing.
    Word { alternatives: Vec<String>, optional: bool },
    /// A punctuation mark, as written.
    Mark { mark: char, optional: bool },
    /// Up to this many words of anything but an entity.
    Gap(usize),
}

/// A relation pattern: its predicate and template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    pub predicate: String,
    pub parts: Vec<Part>,
}

/// Why a relation patterns file cannot be used: every problem.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", render_problems(.file, .problems))]
pub struct PatternsError {
    pub file: String,
    pub problems: Vec<Problem>,
}

/// The patterns of `text` (a `--relations` file, or [`BUILTIN`]): one a
/// line, `predicate: template`; blank lines and `#` comments skipped.
///
/// # Errors
/// Every line that is not a pattern, with its line and column.
pub fn parse_patterns(file: &str, text: &str) -> Result<Vec<Pattern>, PatternsError> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let Some(colon) = trimmed.find(':') else {
            problems.push(Problem {
                line: i + 1,
                column: 1,
                message: "not a pattern: write `predicate: template`, e.g. `acquired: {S} acquired {O}`".into(),
            });
            continue;
        };
        let (predicate, template) = (trimmed[..colon].trim(), &trimmed[colon + 1..]);
        let valid = predicate.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && predicate.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !valid {
            problems.push(Problem {
                line: i + 1,
                column: indent + 1,
                message: format!("predicate {predicate:?}: lower-case letters, digits and `_`, starting with a letter"),
            });
            continue;
        }
        let template_at = indent + colon + 1;
        match parse_template(template) {
            Ok(parts) => out.push(Pattern { predicate: predicate.to_string(), parts }),
            Err((at, message)) => problems.push(Problem {
                line: i + 1,
                column: line[..(template_at + at).min(line.len())].chars().count() + 1,
                message,
            }),
        }
    }
    if problems.is_empty() && out.is_empty() {
        problems.push(Problem {
            line: 1,
            column: 1,
            message: "no patterns (one a line: `predicate: template`)".into(),
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(PatternsError { file: file.to_string(), problems })
    }
}

/// The built-in patterns.
#[must_use]
pub fn builtin() -> Vec<Pattern> {
    parse_patterns("built-in patterns", BUILTIN).expect("the built-in patterns parse (a unit test checks)")
}

/// Whether `c` continues a word (letters, digits; a `-` between two).
pub fn word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// The end of the word that starts at `at` in `s`: letters and digits,
/// and hyphens between them (`co-founded`); it stops before `stop`.
pub fn word_end(s: &str, at: usize, stop: usize) -> usize {
    let mut end = at;
    let mut chars = s[at..].char_indices().peekable();
    while let Some((k, c)) = chars.next() {
        let i = at + k;
        if i >= stop {
            break;
        }
        if word_char(c) {
            end = i + c.len_utf8();
        } else if c == '-' && chars.peek().is_some_and(|&(_, n)| word_char(n)) && i + 1 < stop {
            continue;
        } else {
            break;
        }
    }
    end
}

/// The parts of a template, checked: one subject, one object, no gap at
/// an end; an error is (byte offset in it, message).
fn parse_template(t: &str) -> Result<Vec<Part>, (usize, String)> {
    let parts = parse_parts(t)?;
    let count =
        |subject: bool| parts.iter().filter(|p| matches!(p, Part::Slot { subject: s, .. } if *s == subject)).count();
    let (subjects, objects) = (count(true), count(false));
    if subjects != 1 || objects != 1 {
        return Err((0, format!("a template has one {{S}} and one {{O}}; this one has {subjects} and {objects}")));
    }
    if matches!(parts.first(), Some(Part::Gap(_))) || matches!(parts.last(), Some(Part::Gap(_))) {
        return Err((0, "`...` between two parts, not at an end".into()));
    }
    Ok(parts)
}

/// The parts of (a piece of) a template.
fn parse_parts(t: &str) -> Result<Vec<Part>, (usize, String)> {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let c = t[i..].chars().next().expect("i is inside t");
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        if c == '{' {
            let close = t[i..].find('}').ok_or((i, "`{` without its `}`".to_string()))?;
            let inner = &t[i + 1..i + close];
            let (which, kind) = match inner.split_once(':') {
                Some((w, k)) => (w.trim(), Some(fold_key(k))),
                None => (inner.trim(), None),
            };
            let subject = match which {
                "S" => true,
                "O" => false,
                _ => return Err((i, format!("{{{inner}}}: a slot is {{S}} or {{O}}, with a type as {{S:person}}"))),
            };
            parts.push(Part::Slot { subject, kind: kind.filter(|k| !k.is_empty()) });
            i += close + 1;
        } else if c == '[' {
            let close = t[i..].find(']').ok_or((i, "`[` without its `]`".to_string()))?;
            let inner = &t[i + 1..i + close];
            match parse_parts(inner).map_err(|(at, m)| (i + 1 + at, m))?.as_slice() {
                [Part::Word { alternatives, .. }] => {
                    parts.push(Part::Word { alternatives: alternatives.clone(), optional: true });
                }
                [Part::Mark { mark, .. }] => parts.push(Part::Mark { mark: *mark, optional: true }),
                [Part::Gap(n)] => parts.push(Part::Gap(*n)),
                _ => return Err((i, format!("[{inner}]: an optional part is one word (or `a|b`) or one mark"))),
            }
            i += close + 1;
        } else if t[i..].starts_with("...") {
            parts.push(Part::Gap(GAP));
            i += 3;
        } else if word_char(c) || (c == '\'' && t[i + 1..].chars().next().is_some_and(word_char)) {
            // Words and their alternatives: `a|b|c`; `'s` is a word.
            let mut alternatives = Vec::new();
            let mut j = i;
            loop {
                let start = j;
                if t[j..].starts_with('\'') {
                    j += 1;
                }
                j = word_end(t, j, t.len());
                if j == start || (j == start + 1 && t[start..].starts_with('\'')) {
                    return Err((start, "`|` must be followed by a word".into()));
                }
                alternatives.push(fold_key(&t[start..j]));
                if t[j..].starts_with('|') {
                    j += 1;
                } else {
                    break;
                }
            }
            parts.push(Part::Word { alternatives, optional: false });
            i = j;
        } else {
            let mark = if matches!(c, '\u{2019}' | '\u{2018}') { '\'' } else { c };
            parts.push(Part::Mark { mark, optional: false });
            i += c.len_utf8();
        }
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_patterns_parse() {
        let b = builtin();
        assert!(b.len() > 30);
        for p in ["ceo_of", "founded", "acquired", "based_in", "subsidiary_of"] {
            assert!(b.iter().any(|x| x.predicate == p), "{p}");
        }
    }

    #[test]
    fn templates_have_slots_words_options_marks_and_gaps() {
        let p = parse_patterns("r.txt", "ceo_of: {S:Person} , [the] CEO|Boss of {O}\nx: {O} 's ... by {S}\n")
            .expect("patterns");
        assert_eq!(
            p[0].parts,
            [
                Part::Slot { subject: true, kind: Some("person".into()) },
                Part::Mark { mark: ',', optional: false },
                Part::Word { alternatives: vec!["the".into()], optional: true },
                Part::Word { alternatives: vec!["ceo".into(), "boss".into()], optional: false },
                Part::Word { alternatives: vec!["of".into()], optional: false },
                Part::Slot { subject: false, kind: None },
            ]
        );
        assert_eq!(p[1].parts[1], Part::Word { alternatives: vec!["'s".into()], optional: false });
        assert_eq!(p[1].parts[2], Part::Gap(GAP));
    }

    #[test]
    fn bad_lines_are_named_with_their_column() {
        let e = parse_patterns(
            "r.txt",
            "# mine\nacquired {S} bought {O}\nBad-Name: {S} x {O}\nok: {S} x {X}\nok: {S} [a b] {O}\n",
        )
        .expect_err("bad lines")
        .to_string();
        assert!(e.contains("r.txt:2:1: not a pattern"), "{e}");
        assert!(e.contains("r.txt:3:1: predicate \"Bad-Name\""), "{e}");
        assert!(e.contains("r.txt:4:11: {X}: a slot is"), "{e}");
        assert!(e.contains("r.txt:5:9: [a b]: an optional part"), "{e}");
    }
}
