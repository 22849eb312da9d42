//! Case folding of names and texts, shared by the dictionary (`kb.rs`),
//! which folds each name once, and the matcher, which folds each page's
//! text the same way so that the two meet.

use caseless::Caseless;

/// Appends the folding of `c` (never a line break or space) to `out`.
pub(crate) fn push_folded(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else if matches!(c, '\u{2019}' | '\u{2018}' | '\u{02BC}' | '\u{FF07}') {
        out.push('\'');
    } else {
        out.extend(std::iter::once(c).default_case_fold());
    }
}

/// A name or alias folded for the dictionary: whitespace runs (line breaks
/// too) made one space, ends trimmed.
#[must_use]
pub fn fold_key(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in word.chars() {
            push_folded(&mut out, c);
        }
    }
    out
}
