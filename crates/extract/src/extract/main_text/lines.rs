//! Lines inside an article that are not its text: datelines, and the
//! page's furniture that sits between paragraphs or under the article
//! (share and print buttons, "Read more", "Advertisement", tag labels,
//! reading times, a blog theme's "This entry was posted in"), captions
//! and credits in plain elements ("Abbildung 4: …", "Quelle: dpa", "… ©
//! AFP / Jane Doe"), links to other articles and the post's taxonomy
//! behind a label ("Lea también: …", "Themen: …"), prompts to follow the
//! site on a social network and calls to subscribe.
//!
//! The furniture is recognised by its words, as a short line that is
//! nothing but one of the phrases of [`phrases`] (in the languages most
//! crawled: English, German, French, Spanish, Italian, Polish, Portuguese,
//! Dutch), or starts with one of the leading phrases, or with a label and
//! a colon. A paragraph that merely contains such words is kept.

use std::sync::LazyLock;

mod phrases;
use phrases::{CALLS, CAPTION_LABELS, FOLLOW, LEADING, LINK_LABELS, NETWORKS, POSTED, WHOLE};

/// Words after a number of minutes that make it a reading time
/// ("5 min read", "11 minut czytania").
const READING: &[&str] = &["read", "lesezeit", "czytania", "de lecture", "de lectura", "lesen", "lettura", "leestijd"];

/// Longest furniture line, in characters, for each kind.
const MAX_WHOLE: usize = 60;
const MAX_LEADING: usize = 80;
const MAX_POSTED: usize = 300;
const MAX_CALL: usize = 160;
const MAX_FOLLOW: usize = 200;
/// Longest caption with a credit at its end, and longest credit.
const MAX_CREDITED: usize = 200;
const MAX_CREDIT: usize = 60;

/// What a phrase of the lists above is, for the one lookup by first byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Whole,
    Leading,
    Posted,
    /// A caption's, a link's or the taxonomy's label, and a colon.
    Caption,
    Follow,
    Call,
    /// The start of a reading time without its number ("lesezeit", "ca. ").
    Reading,
}

/// Every phrase of the lists, bucketed by its first byte (lower case):
/// a line is compared only with the phrases that start as it does, a
/// handful instead of all of them (most lines' first byte starts none).
static BY_FIRST_BYTE: LazyLock<Vec<Vec<(&'static str, Kind)>>> = LazyLock::new(|| {
    let mut buckets = vec![Vec::new(); 256];
    let lists = [
        (WHOLE, Kind::Whole),
        (LEADING, Kind::Leading),
        (POSTED, Kind::Posted),
        (CAPTION_LABELS, Kind::Caption),
        (LINK_LABELS, Kind::Caption),
        (FOLLOW, Kind::Follow),
        (CALLS, Kind::Call),
        (&["lesezeit", "ca. "][..], Kind::Reading),
    ];
    for (list, kind) in lists {
        for phrase in list {
            let first = phrase.as_bytes().first().copied().expect("phrases are not empty");
            buckets[usize::from(first)].push((*phrase, kind));
        }
    }
    buckets
});

/// A line of the page's furniture (see the module's comment).
///
/// The line's first byte (in lower case) picks the phrases it is compared
/// with; only then are its first words put in lower case, and the whole
/// line only when it is short enough to be a label: the main text's own
/// paragraphs cost a table lookup, most of them.
pub(super) fn is_furniture(line: &str) -> bool {
    let t = trimmed(line);
    // Bytes bound characters from above (at most four bytes each).
    if t.is_empty() || t.len() > MAX_POSTED * 4 {
        return false;
    }
    if is_credit(t) {
        return true;
    }
    let first = first_byte_lower(t);
    // A number of minutes starts a reading time.
    let bucket: &[(&str, Kind)] = if first.is_ascii_digit() { &[] } else { &BY_FIRST_BYTE[usize::from(first)] };
    if bucket.is_empty() && !first.is_ascii_digit() {
        return false;
    }
    LOWER.with_borrow_mut(|lower| {
        lower.clear();
        let head = &t.as_bytes()[..t.len().min(PREFIX_CHARS)];
        if head.is_ascii() {
            // ASCII (nearly every line): byte for byte, no decoding.
            lower.extend(head.iter().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            lower.extend(t.chars().take(PREFIX_CHARS).flat_map(char::to_lowercase));
        }
        let chars = || t.chars().count();
        let (mut whole, mut reading) = (first.is_ascii_digit(), first.is_ascii_digit());
        for &(phrase, kind) in bucket {
            let hit = match kind {
                Kind::Caption => is_caption(lower, phrase),
                Kind::Posted => lower.starts_with(phrase) && chars() <= MAX_POSTED,
                Kind::Call => lower.starts_with(phrase) && t.len() <= MAX_CALL * 4 && chars() <= MAX_CALL,
                Kind::Follow => {
                    lower.starts_with(phrase)
                        && t.len() <= MAX_FOLLOW * 4
                        && chars() <= MAX_FOLLOW
                        && names_a_network(t)
                }
                Kind::Leading => {
                    lower.starts_with(phrase)
                        && !t.ends_with('.')
                        && t.len() <= MAX_LEADING * 4
                        && chars() <= MAX_LEADING
                }
                Kind::Whole => {
                    // Bytes of a label and of the line in lower case differ
                    // by a few at most (a capital 'ẞ' for 'ß'): checked below.
                    whole = true;
                    false
                }
                Kind::Reading => {
                    reading |= lower.starts_with(phrase);
                    false
                }
            };
            if hit {
                return true;
            }
        }
        if !(whole || reading) || t.len() > MAX_WHOLE * 4 || chars() > MAX_WHOLE {
            return false;
        }
        lower.clear();
        lower.extend(t.chars().flat_map(char::to_lowercase));
        (whole && bucket.iter().any(|&(p, k)| k == Kind::Whole && p == lower.as_str()))
            || (reading && is_reading_time(lower))
    })
}

/// The first byte of `t` in lower case (of its first character's lower
/// case, for a character beyond ASCII).
fn first_byte_lower(t: &str) -> u8 {
    let b = t.as_bytes()[0];
    if b.is_ascii() {
        return b.to_ascii_lowercase();
    }
    let mut buf = [0u8; 4];
    t.chars().next().and_then(|c| c.to_lowercase().next()).map_or(b, |c| c.encode_utf8(&mut buf).as_bytes()[0])
}

/// Characters at the start of a line that the leading phrases, a theme's
/// line and a caption's label are looked for in.
const PREFIX_CHARS: usize = 24;

thread_local! {
    /// The line in lower case: one buffer per thread, no allocation per line.
    static LOWER: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// A line (lower case) that starts with the caption's label `label`, a
/// number perhaps, and a colon.
fn is_caption(lower: &str, label: &str) -> bool {
    lower.strip_prefix(label).is_some_and(|rest| {
        rest.trim_start().trim_start_matches(|c: char| c.is_ascii_digit()).trim_start().starts_with(':')
    })
}

/// Whether `t` names a social network ([`NETWORKS`]), in any case.
fn names_a_network(t: &str) -> bool {
    let lower = t.to_lowercase();
    NETWORKS.iter().any(|n| lower.contains(n))
}

/// A copyright or credit line ("© Bundesrat | Frank Bräuer"), or a short
/// caption that ends with its picture's credit ("… aus der Schweiz. ©
/// AFP / Marco Bertorello", "… el año escolar. Foto: Andina"): a credit
/// after `©` or a label and a colon, short, that does not end as a
/// sentence.
fn is_credit(t: &str) -> bool {
    if t.len() > MAX_CREDITED * 4 {
        return false;
    }
    if t.starts_with('©') {
        return t.chars().count() <= MAX_CREDITED;
    }
    // Where the credit would start: its marker in the line's last bytes.
    let tail_from = t.len().saturating_sub(MAX_CREDIT * 4 + 8);
    let tail = &t.as_bytes()[tail_from..];
    let marker = memchr::memrchr2(b':', 0xa9, tail).and_then(|i| {
        let at = tail_from + i;
        if tail[i] == 0xa9 {
            // The second byte of '©' (U+00A9).
            return (at > 0 && t.as_bytes()[at - 1] == 0xc2).then_some(at + 1);
        }
        let before = t[..at].trim_end();
        let word = before.rsplit(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
        CREDIT_LABELS.iter().any(|l| l.eq_ignore_ascii_case(word)).then_some(at + 1)
    });
    let Some(at) = marker else { return false };
    let credit = t[at..].trim();
    !credit.is_empty()
        && credit.chars().count() <= MAX_CREDIT
        && !credit.ends_with(['.', '!', '?'])
        && t.chars().count() <= MAX_CREDITED
}

/// Labels of a picture's credit at the end of a caption, before a colon.
const CREDIT_LABELS: &[&str] =
    &["foto", "fotos", "photo", "photos", "bild", "bilder", "credit", "credits", "fot", "zdjęcie"];

/// The line without the punctuation and bullets around a label
/// ("» Drucken", "- Anzeige -", "Advertisement:", "(Teilen)").
fn trimmed(line: &str) -> &str {
    line.trim_matches(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                ':' | '|' | '-' | '–' | '—' | '»' | '«' | '›' | '‹' | '>' | '•' | '·' | '(' | ')' | '[' | ']'
            )
    })
}

/// "5 min read", "12 minute read", "Lesezeit: 3 Minuten", "11 minut
/// czytania": a number of minutes with a word that says reading.
fn is_reading_time(lower: &str) -> bool {
    let rest = lower.strip_prefix("lesezeit").map_or(lower, |r| r.trim_start_matches([':', ' ']));
    let rest = rest.strip_prefix("ca. ").unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    let rest = rest[digits..].trim_start();
    let unit = ["minuten", "minutes", "minute", "minuty", "minutos", "minut", "mins", "min"]
        .iter()
        .find_map(|u| rest.strip_prefix(u));
    let Some(after) = unit else { return false };
    let after = after.trim_start_matches('.').trim();
    (lower.starts_with("lesezeit") && after.is_empty()) || READING.contains(&after)
}

/// Longest label, in characters.
const MAX_LABEL: usize = 40;

/// A short line that ends with a colon and is not a sentence: a label
/// that introduces what follows it ("Quellenangaben:", "Mehr Themen:",
/// "Zutaten:").
pub(super) fn is_label(line: &str) -> bool {
    let t = line.trim_end();
    t.len() <= MAX_LABEL * 4 && t.ends_with(':') && t.chars().count() <= MAX_LABEL && !t.contains(['.', '!', '?'])
}

/// A short line that is only a date or a time ("May 19, 2020", "13. 1.
/// 2020", "05:28 Uhr"): at least two groups of digits, one of them a year
/// or the two a time, and few words besides.
pub(super) fn is_date_line(line: &str) -> bool {
    if line.len() > 48 {
        return false;
    }
    let (mut groups, mut year, mut time, mut words) = (0, false, false, 0);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let mut n = c.to_digit(10).unwrap_or(0);
            let mut len = 1;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n.saturating_mul(10).saturating_add(d);
                len += 1;
                chars.next();
            }
            groups += 1;
            year |= len == 4 && (1900..2100).contains(&n);
            time |= len <= 2 && chars.peek() == Some(&':');
        } else if c.is_alphabetic() {
            while chars.peek().is_some_and(|c| c.is_alphabetic()) {
                chars.next();
            }
            words += 1;
        } else if !(c.is_whitespace() || matches!(c, '.' | ',' | '/' | '-' | ':' | '|' | '\u{b7}')) {
            // Prices, shares and counts: a date is digits, words and separators.
            return false;
        }
    }
    groups >= 2 && (year || time) && words <= 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn furniture_lines_go_and_sentences_that_mention_them_stay() {
        for line in [
            "Share",
            "» Drucken",
            "- Anzeige -",
            "Advertisement:",
            "Mehr zum Thema:",
            "Zobacz również",
            "Vous aimerez aussi",
            "Zurück zu allen Meldungen",
            "Follow us on Twitter",
            "This entry was posted in Allgemein. Bookmark the permalink.",
            "Dieser Eintrag wurde veröffentlicht in Podcast und verschlagwortet mit Linux von admin.",
            "5 min read",
            "11 minut czytania",
            "Lesezeit: 2 Minuten",
            "Abbildung 4: klassische Schwachschicht.",
            "Quelle: Deutscher Jagdverband (DJV)",
            "Źródło: ISBnews",
            "Lea también: Impiden ingreso a Nicaragua a reportero y camarógrafo",
            "LE PUEDE INTERESAR: La ficha del expresidente en el tribunal de Nueva York",
            "Czytaj też: Wyścig zbrojeń ruszył z kopyta",
            "Themen: Kritik aus dem Internet, Neue Prognosen zum Virus, Impfstoffzulassungen",
            "Category : Press Releases",
            "Follow The Gleaner on Twitter and Instagram @JamaicaGleaner",
            "Síguenos en Telegram, Instagram, Facebook y Twitter",
            "Subscribe now to our eNATION edition for the full story.",
            "Never miss the latest news by signing up to our newsletter today!",
            "© Bundesrat | Frank Bräuer",
            "Marco Odermatt, Ski-Star aus der Schweiz. © AFP / MARCO BERTORELLO",
            "Son tres los periodos de vacaciones durante el año escolar. Foto: Andina",
        ] {
            assert!(is_furniture(line), "{line:?} is furniture");
        }
        for line in [
            "Share prices fell sharply on Monday, the third fall this month.",
            "Read more about it in the report the ministry published.",
            "20 minutes",
            "Die Anzeige wurde am Montag erstattet.",
            "Tags und Nächte verbrachte er im Labor.",
            "Die Quelle: ein Bericht des Ministeriums.",
            "Themen wie Klimaschutz und Verkehr bestimmten den Wahlkampf: das zeigen die Umfragen.",
            "Follow the signs to the harbour and turn left at the old market square.",
            "Follow the money, the investigators said, and you will find the people behind it.",
            "Subscribers of the old service keep their numbers, the company said.",
            "Der Bürgermeister eröffnete die Brücke am Montag, nach zwei Jahren Bauzeit und vielen Verzögerungen, \
             vor rund 300 Gästen aus der ganzen Region, den Nachbargemeinden und dem Landkreis, die bis in \
             den Abend blieben. Foto: Stadt",
            "Die Regel lautet: Foto: nur mit Erlaubnis.",
        ] {
            assert!(!is_furniture(line), "{line:?} is text");
        }
        // A label alone, in any case: "Zurück" is a button.
        assert!(is_furniture("ZURÜCK"));
        let prefixes = POSTED.iter().chain(LEADING).chain(CAPTION_LABELS).chain(LINK_LABELS).chain(FOLLOW).chain(CALLS);
        assert!(prefixes.into_iter().all(|p| p.chars().count() < PREFIX_CHARS && *p == p.to_lowercase()));
    }

    #[test]
    fn dates_and_times_alone_are_datelines() {
        for line in ["May 19, 2020", "13. 1. 2020", "05:28 Uhr", "Mittwoch, 27.11.2019 | 15:21"] {
            assert!(is_date_line(line), "{line:?}");
        }
        for line in ["3 € (2019)", "Im Jahr 2019 wuchs der Umsatz um 12 Prozent auf 4,5 Millionen Euro."] {
            assert!(!is_date_line(line), "{line:?}");
        }
    }
}
