//! Lines inside an article that are not its text: datelines, and the
//! page's furniture that sits between paragraphs or under the article
//! (share and print buttons, "Read more", "Advertisement", tag labels,
//! reading times, a blog theme's "This entry was posted in"), and captions
//! and credits in plain elements ("Abbildung 4: …", "Quelle: dpa").
//!
//! The furniture is recognised by its words, as a short line that is
//! nothing but one of the phrases below (in the languages most crawled:
//! English, German, French, Spanish, Italian, Polish, Portuguese, Dutch),
//! or starts with one of the leading phrases. A paragraph that merely
//! contains such words is kept.

use std::sync::LazyLock;

/// Whole lines of furniture, lower case, without the punctuation around
/// them that [`trimmed`] takes off.
const WHOLE: &[&str] = &[
    // English
    "share",
    "share this",
    "share this article",
    "share this story",
    "share this post",
    "tweet",
    "print",
    "print this page",
    "email",
    "e-mail",
    "advertisement",
    "advertising",
    "sponsored",
    "sponsored content",
    "tags",
    "topics",
    "related",
    "related articles",
    "related posts",
    "related stories",
    "related content",
    "read more",
    "read next",
    "more on this topic",
    "more stories",
    "you may also like",
    "you might also like",
    "recommended",
    "recommended for you",
    "comments",
    "leave a comment",
    "leave a reply",
    "permalink",
    "back to top",
    "subscribe",
    "newsletter",
    "useful",
    "was this article helpful?",
    "about the author",
    "show more",
    "load more",
    // German
    "teilen",
    "jetzt teilen",
    "artikel teilen",
    "beitrag teilen",
    "seite teilen",
    "news teilen",
    "drucken",
    "artikel drucken",
    "seite drucken",
    "rezept drucken",
    "anzeige",
    "werbung",
    "themen",
    "schlagworte",
    "schlagwörter",
    "stichworte",
    "stichwörter",
    "mehr zum thema",
    "weitere informationen",
    "das könnte sie auch interessieren",
    "das könnte dich auch interessieren",
    "das könnte ihnen auch gefallen",
    "auch interessant",
    "lesen sie auch",
    "lesen sie mehr",
    "weiterlesen",
    "zum weiterlesen",
    "mehr lesen",
    "mehr erfahren",
    "über den autor",
    "über die autorin",
    "zur person",
    "kommentare",
    "kommentieren",
    "kommentar schreiben",
    "bild anzeigen",
    "bilder anzeigen",
    "alle bilder anzeigen",
    "quellen ausblenden",
    "quellen anzeigen",
    "externer inhalt",
    "zurück",
    "nach oben",
    "war der artikel nützlich?",
    "war dieser artikel hilfreich?",
    "möchten sie den artikel teilen?",
    "zum artikel",
    "kontakt",
    "von",
    "autor",
    "autorin",
    "quelle",
    "bildquelle",
    "fotos",
    "foto",
    // French
    "partager",
    "partagez",
    "imprimer",
    "publicité",
    "vous aimerez aussi",
    "à lire aussi",
    "a lire aussi",
    "lire aussi",
    "sur le même sujet",
    "permalien",
    "commentaires",
    "mots-clés",
    "mots clés",
    // Spanish
    "compartir",
    "publicidad",
    "te puede interesar",
    "lee también",
    "relacionados",
    "noticias relacionadas",
    "etiquetas",
    // Italian
    "condividi",
    "pubblicità",
    "leggi anche",
    "potrebbe interessarti",
    // Polish
    "zobacz również",
    "zobacz też",
    "czytaj też",
    "czytaj także",
    "udostępnij",
    "reklama",
    "tagi",
    // Portuguese
    "compartilhe",
    "partilhar",
    "publicidade",
    "leia também",
    "veja também",
    // Dutch
    "delen",
    "advertentie",
    "lees ook",
    "gerelateerde artikelen",
];

/// Leading phrases of short furniture lines ("Back to all news",
/// "More on coronavirus:", "Follow us on Twitter"); a line that ends as a
/// sentence ends, with a full stop, is text.
const LEADING: &[&str] = &[
    "zurück zu",
    "back to ",
    "mehr zu ",
    "more on ",
    "read more",
    "lesen sie auch",
    "das könnte",
    "you may also",
    "you might also",
    "weitere artikel",
    "weitere meldungen",
    "alle artikel",
    "alle meldungen",
    "share on",
    "teilen auf",
    "folgen sie uns",
    "follow us",
];

/// Leading phrases of a blog theme's line under a post, which names the
/// post's categories and tags and can run long.
const POSTED: &[&str] = &[
    "this entry was posted",
    "dieser eintrag wurde",
    "dieser beitrag wurde",
    "der beitrag wurde",
    "bookmark the permalink",
];

/// Words after a number of minutes that make it a reading time
/// ("5 min read", "11 minut czytania").
const READING: &[&str] = &["read", "lesezeit", "czytania", "de lecture", "de lectura", "lesen", "lettura", "leestijd"];

/// Longest furniture line, in characters, for each kind.
const MAX_WHOLE: usize = 60;
const MAX_LEADING: usize = 80;
const MAX_POSTED: usize = 300;

/// What a phrase of the lists above is, for the one lookup by first byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Whole,
    Leading,
    Posted,
    Caption,
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

/// Labels of a picture's caption or credit, or of a source, when a line
/// starts with one and a colon ("Abbildung 4: …", "Foto: …", "Quelle:
/// dpa", "Źródło: ISBnews"): what `<figcaption>` would hold, in a plain
/// element.
const CAPTION_LABELS: &[&str] = &[
    "abbildung",
    "abb.",
    "bild",
    "bilder",
    "foto",
    "fotos",
    "fot.",
    "photo",
    "photos",
    "image",
    "images",
    "fig.",
    "figure",
    "grafik",
    "quelle",
    "quellen",
    "source",
    "sources",
    "credit",
    "credits",
    "crédit",
    "crédits",
    "bildquelle",
    "fuente",
    "źródło",
    "zdjęcie",
];

/// A line (lower case) that starts with the caption's label `label`, a
/// number perhaps, and a colon.
fn is_caption(lower: &str, label: &str) -> bool {
    lower.strip_prefix(label).is_some_and(|rest| {
        rest.trim_start().trim_start_matches(|c: char| c.is_ascii_digit()).trim_start().starts_with(':')
    })
}

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
        ] {
            assert!(!is_furniture(line), "{line:?} is text");
        }
        // A label alone, in any case: "Zurück" is a button.
        assert!(is_furniture("ZURÜCK"));
        assert!(POSTED.iter().chain(LEADING).chain(CAPTION_LABELS).all(|p| p.chars().count() < PREFIX_CHARS));
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
