//! Page metadata that analysts can use as is (docs/src/main-text.md): the
//! page's language, description, author, publication time, canonical URL,
//! robots directives, Open Graph title and image, and its raw JSON-LD.
//! Everything comes from the crawl's single tokenizer pass
//! ([`crate::parse::tokens::Meta`]): `<meta>` tags, `<link
//! rel=canonical>`, `<html lang>`, the first `<time datetime>`, and the
//! `application/ld+json` scripts. Where a value can come from several
//! places, the page's own `<meta>` tags win, then JSON-LD, then the markup.

use serde_json::Value as Json;

use super::{Column, ColumnType, Extractor, PageInput, Tuning, Value};
use crate::parse::tokens::Meta;

/// The metadata columns.
#[derive(Default)]
pub struct PageMetadata {
    /// Per host without a language hint, the language told from its first
    /// pages, once [`HOST_AGREEMENT`] of them agreed: the trigram
    /// statistics cost about 50 µs a page, a sixth of a crawl's CPU time.
    by_host: std::sync::Mutex<std::collections::HashMap<String, HostLang>>,
}

/// What the first pages of a host said.
#[derive(Clone, Default)]
struct HostLang {
    lang: Option<String>,
    agreeing: u8,
    settled: bool,
}

/// Pages of a host that must agree before its language is taken as known.
const HOST_AGREEMENT: u8 = 3;
/// Hosts remembered at most (a crawl of more forgets, and detects again).
const MAX_HOSTS: usize = 100_000;

const COLUMNS: [(&str, ColumnType, Tuning); 9] = [
    ("lang", ColumnType::Utf8, Tuning::SMALL),
    ("description", ColumnType::Utf8, Tuning::DISTINCT),
    ("author", ColumnType::Utf8, Tuning::DEFAULT),
    ("published_at", ColumnType::TimestampMicros, Tuning::DEFAULT),
    ("canonical_url", ColumnType::Utf8, Tuning::DISTINCT),
    ("meta_robots", ColumnType::Utf8, Tuning::SMALL),
    ("og_title", ColumnType::Utf8, Tuning::DISTINCT),
    ("og_image", ColumnType::Utf8, Tuning::DISTINCT),
    ("json_ld", ColumnType::Utf8, Tuning::DISTINCT),
];

/// Characters of text the language is told from: trigram statistics are
/// reliable well before this, and the detection's cost grows with it (at
/// 2,000 characters it was a sixth of the whole crawl's CPU time).
const LANG_SAMPLE: usize = 500;

impl Extractor for PageMetadata {
    fn name(&self) -> &str {
        "metadata"
    }

    fn columns(&self) -> Vec<Column> {
        COLUMNS.iter().map(|(name, kind, tuning)| Column::new(*name, *kind).tuned(*tuning)).collect()
    }

    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        let Some(parsed) = input.parsed else { return };
        let page = parsed.page();
        let meta = &page.structure.meta;
        let ld = json_ld(meta);
        let text = |v: Option<String>| v.filter(|s| !s.is_empty()).map_or(Value::Null, Value::Utf8);
        let url = |v: Option<String>| {
            v.and_then(|u| input.final_url.join(u.trim()).ok())
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .map_or(Value::Null, |u| Value::Utf8(u.to_string()))
        };
        let host = input.final_url.host_str().unwrap_or_default();
        out.push(text(self.lang(host, &page.text, meta)));
        out.push(text(
            tag(meta, &["description", "og:description", "twitter:description", "dc.description"])
                .or_else(|| ld_str(&ld, "description")),
        ));
        out.push(text(
            tag(meta, &["author", "article:author", "parsely-author", "dc.creator", "sailthru.author", "byl"])
                .filter(|a| !a.starts_with("http"))
                .or_else(|| ld_author(&ld)),
        ));
        let published = tag(
            meta,
            &[
                "article:published_time",
                "datepublished",
                "og:published_time",
                "date",
                "pubdate",
                "publishdate",
                "dc.date.issued",
                "dc.date",
                "parsely-pub-date",
                "sailthru.date",
            ],
        )
        .or_else(|| ld_str(&ld, "datePublished"))
        .or_else(|| meta.time.clone());
        out.push(published.as_deref().and_then(parse_instant).map_or(Value::Null, Value::TimestampMicros));
        out.push(url(meta.canonical.clone()));
        out.push(text(tag(meta, &["robots"]).map(|r| r.to_ascii_lowercase())));
        out.push(text(tag(meta, &["og:title", "twitter:title"])));
        out.push(url(tag(meta, &["og:image", "og:image:url", "og:image:secure_url", "twitter:image"])));
        out.push(if ld.is_empty() {
            Value::Null
        } else {
            serde_json::to_string(&Json::Array(ld)).map_or(Value::Null, Value::Utf8)
        });
    }
}

/// The first of `keys` among the page's `<meta>` tags.
fn tag(meta: &Meta, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| meta.tags.iter().find(|(key, _)| key == k).map(|(_, v)| v.trim().to_string()))
}

/// Every JSON-LD object of the page (the items of `@graph` lists and of
/// top-level arrays as objects of their own); scripts that are not JSON
/// are skipped.
fn json_ld(meta: &Meta) -> Vec<Json> {
    let mut out = Vec::new();
    for script in &meta.json_ld {
        let Ok(v) = serde_json::from_str::<Json>(script.trim()) else { continue };
        match v {
            Json::Array(items) => out.extend(items),
            v => out.push(v),
        }
    }
    out
}

/// Objects of the JSON-LD, `@graph` items included.
fn ld_objects(ld: &[Json]) -> impl Iterator<Item = &serde_json::Map<String, Json>> {
    ld.iter().flat_map(|v| {
        let graph = v.get("@graph").and_then(Json::as_array).map(|g| g.iter().collect::<Vec<_>>()).unwrap_or_default();
        std::iter::once(v).chain(graph).filter_map(Json::as_object)
    })
}

fn ld_str(ld: &[Json], key: &str) -> Option<String> {
    ld_objects(ld).find_map(|o| o.get(key).and_then(Json::as_str)).map(|s| s.trim().to_string())
}

/// `author` of JSON-LD: a name, a person, or a list of them.
fn ld_author(ld: &[Json]) -> Option<String> {
    fn name(v: &Json) -> Option<String> {
        match v {
            Json::String(s) => Some(s.trim().to_string()),
            Json::Object(o) => o.get("name").and_then(Json::as_str).map(|s| s.trim().to_string()),
            Json::Array(a) => {
                let names: Vec<String> = a.iter().filter_map(name).filter(|n| !n.is_empty()).collect();
                (!names.is_empty()).then(|| names.join(", "))
            }
            _ => None,
        }
    }
    ld_objects(ld).find_map(|o| o.get("author").and_then(name))
}

impl PageMetadata {
    /// The page's language; see [`lang`]. A page without a hint takes its
    /// host's language once the host's first pages agreed on one.
    fn lang(&self, host: &str, text: &str, meta: &Meta) -> Option<String> {
        if hint_of(meta).is_some() {
            return lang(text, meta);
        }
        if let Ok(known) = self.by_host.lock() {
            if let Some(h) = known.get(host).filter(|h| h.settled) {
                return h.lang.clone();
            }
        }
        let found = lang(text, meta);
        if let Ok(mut known) = self.by_host.lock() {
            if known.len() >= MAX_HOSTS {
                known.clear();
            }
            let h = known.entry(host.to_string()).or_default();
            if h.lang == found {
                h.agreeing += 1;
            } else {
                *h = HostLang { lang: found.clone(), agreeing: 1, settled: false };
            }
            h.settled = h.agreeing >= HOST_AGREEMENT;
        }
        found
    }
}

/// The language hint of the markup: `<html lang>`, `og:locale`,
/// `content-language`, as a lower-case primary subtag.
fn hint_of(meta: &Meta) -> Option<String> {
    meta.lang
        .clone()
        .or_else(|| tag(meta, &["og:locale", "content-language", "language", "dc.language"]))
        .map(|l| l.split(['-', '_']).next().unwrap_or_default().trim().to_ascii_lowercase())
        .filter(|l| (2..=3).contains(&l.len()) && l.chars().all(|c| c.is_ascii_alphabetic()))
}

/// Whether a language written in `script` may be `code`: a hint that its
/// own script does not contradict is taken as it is.
fn script_allows(script: whatlang::Script, code: &str) -> bool {
    use whatlang::Script::*;
    let langs: &[&str] = match script {
        Cyrillic => &["ru", "uk", "bg", "sr", "mk", "be", "kk", "ky", "tg", "mn", "uz", "az"],
        Arabic => &["ar", "fa", "ur", "ps", "ku", "sd", "ug"],
        Greek => &["el"],
        Hebrew => &["he", "iw", "yi"],
        Mandarin => &["zh", "ja", "yue"],
        Hiragana | Katakana => &["ja"],
        Hangul => &["ko"],
        Devanagari => &["hi", "mr", "ne", "sa"],
        Thai => &["th"],
        Georgian => &["ka"],
        Armenian => &["hy"],
        Bengali => &["bn", "as"],
        Tamil => &["ta"],
        Telugu => &["te"],
        Kannada => &["kn"],
        Malayalam => &["ml"],
        Gujarati => &["gu"],
        Gurmukhi => &["pa"],
        Oriya => &["or"],
        Sinhala => &["si"],
        Khmer => &["km"],
        Myanmar => &["my"],
        Ethiopic => &["am", "ti"],
        // Latin: every other language of the web.
        Latin => {
            return !matches!(code, "ru" | "uk" | "bg" | "el" | "he" | "ar" | "fa" | "zh" | "ja" | "ko" | "hi" | "th")
        }
    };
    langs.contains(&code)
}

/// The page's language: told from its text by trigram statistics, with the
/// `<html lang>` (or `og:locale`, `content-language`) as the hint. A hint
/// that the text's script does not contradict is taken as it is (telling
/// the language apart costs far more than its script); one that it does,
/// or none, leaves the language to the statistics, and the hint wins when
/// the text is too short or mixed to tell. An ISO 639-1 code where one
/// exists (`en`, `de`), else the ISO 639-3 one.
fn lang(text: &str, meta: &Meta) -> Option<String> {
    let hint = hint_of(meta);
    // From a third of the way in: the start of a page's text is its menus.
    let skip = text.len() / 3;
    let start = (skip..text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
    let rest = &text[start..];
    let end = rest.char_indices().nth(LANG_SAMPLE).map_or(rest.len(), |(i, _)| i);
    let sample = if end < 100 {
        &text[..text.char_indices().nth(LANG_SAMPLE).map_or(text.len(), |(i, _)| i)]
    } else {
        &rest[..end]
    };
    if let (Some(h), Some(script)) = (hint.as_deref(), whatlang::detect_script(sample)) {
        if script_allows(script, h) {
            return hint;
        }
    }
    let detected = whatlang::detect(sample).filter(whatlang::Info::is_reliable).map(|i| iso639_1(i.lang()));
    detected.or(hint)
}

/// The two-letter code of a language, where it has one.
fn iso639_1(lang: whatlang::Lang) -> String {
    use whatlang::Lang::*;
    let two = match lang {
        Eng => "en",
        Rus => "ru",
        Cmn => "zh",
        Spa => "es",
        Por => "pt",
        Ita => "it",
        Ben => "bn",
        Fra => "fr",
        Deu => "de",
        Ukr => "uk",
        Kat => "ka",
        Ara => "ar",
        Hin => "hi",
        Jpn => "ja",
        Heb => "he",
        Yid => "yi",
        Pol => "pl",
        Amh => "am",
        Jav => "jv",
        Kor => "ko",
        Nob => "nb",
        Dan => "da",
        Swe => "sv",
        Fin => "fi",
        Tur => "tr",
        Nld => "nl",
        Hun => "hu",
        Ces => "cs",
        Ell => "el",
        Bul => "bg",
        Bel => "be",
        Mar => "mr",
        Kan => "kn",
        Ron => "ro",
        Slv => "sl",
        Hrv => "hr",
        Srp => "sr",
        Mkd => "mk",
        Lit => "lt",
        Lav => "lv",
        Est => "et",
        Tam => "ta",
        Vie => "vi",
        Urd => "ur",
        Tha => "th",
        Guj => "gu",
        Uzb => "uz",
        Pan => "pa",
        Aze => "az",
        Ind => "id",
        Tel => "te",
        Pes => "fa",
        Mal => "ml",
        Ori => "or",
        Mya => "my",
        Nep => "ne",
        Sin => "si",
        Khm => "km",
        Tuk => "tk",
        Aka => "ak",
        Zul => "zu",
        Sna => "sn",
        Afr => "af",
        Lat => "la",
        Slk => "sk",
        Cat => "ca",
        Tgl => "tl",
        Hye => "hy",
        Epo => "eo",
        other => return other.code().to_string(),
    };
    two.to_string()
}

/// An ISO 8601 / RFC 3339 date or instant as found in pages
/// (`2020-01-23`, `2020-01-23T10:05:00+01:00`, `2020-01-23 10:05:00Z`,
/// fractions of a second), in microseconds since the epoch, UTC; a date
/// alone is its midnight UTC, a time without an offset is taken as UTC.
/// Read by `jiff`: page text is never sliced by hand here, where a
/// multi-byte character in the wrong place would cut a char in two.
#[must_use]
pub fn parse_instant(s: &str) -> Option<i64> {
    use jiff::civil::DateTime;
    use jiff::Timestamp;
    let s = s.trim();
    // A year of four digits, as pages write them (jiff would read a
    // six-digit `+002020`, which no page means).
    let year = s.get(..4)?;
    if !year.bytes().all(|b| b.is_ascii_digit()) || year < "1000" || s.as_bytes().get(4) != Some(&b'-') {
        return None;
    }
    let t = s
        .parse::<Timestamp>()
        .ok()
        .or_else(|| s.parse::<DateTime>().ok().and_then(|dt| jiff::tz::Offset::UTC.to_timestamp(dt).ok()))?;
    Some(t.as_microsecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_as_pages_write_them() {
        assert_eq!(parse_instant("1970-01-01"), Some(0));
        assert_eq!(parse_instant("2020-01-23T10:05:00Z"), Some(1_579_773_900_000_000));
        assert_eq!(parse_instant("2020-01-23T11:05:00+01:00"), Some(1_579_773_900_000_000));
        assert_eq!(parse_instant("2020-01-23 10:05:00.25"), Some(1_579_773_900_250_000));
        assert_eq!(parse_instant("2020-01-23T10:05"), Some(1_579_773_900_000_000));
        for bad in ["23.01.2020", "2020-13-01", "yesterday", "2020-01-23T25:00", ""] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }

    /// A multi-byte character where a digit, a colon or an offset is
    /// expected is not a date (it once panicked: the time was sliced at
    /// bytes 3..5, inside the `€`).
    #[test]
    fn multibyte_characters_in_a_date_are_not_a_date() {
        for bad in [
            "2020-01-23T12:€",
            "2020-01-23T12:0€",
            "2020-01-23T1€:00",
            "2020-01-23T10:05:00+€1",
            "2020-01-23T10:05:00+01:€",
            "2020-01-23T10:05:00.€",
            "2020-01-23T10:05:00€",
            "2020-0€-23",
            "2020-01-2€",
            "€020-01-23",
            "2020-01-23€",
            "2020-01-23T€",
        ] {
            assert_eq!(parse_instant(bad), None, "{bad}");
        }
    }
}
