//! Noise samples learned from what fetched pages turned out to be.
//!
//! Where a link sits (a menu, a sidebar, a table of contents) says little
//! about where it leads: on documentation sites nearly every page is reached
//! through link-dense blocks. So the default filter drops a URL only on
//! evidence from pages already fetched. After each layer, every fetched page
//! of a partition is judged ([`Outcome`]):
//!
//! * **barren** — a client error (404, 410, ...), a redirect off the site,
//!   or a copy: the same text as a page seen before, or a near-copy, whose
//!   paragraphs (lines of at least [`MIN_LINE_CHARS`] characters) were nearly
//!   all seen before (at least [`NEAR_COPY_SHARE`] of their characters), when
//!   the text is long enough for the comparison to mean something. A print
//!   view, an AMP copy or a comment-reply URL of an article is one; two
//!   articles that share a footer are not;
//! * **fruitful** — an HTML page with text of its own, long and new;
//! * **neutral** — the rest (short pages, server errors, timeouts, files).
//!   Thin pages are not evidence: a site's index pages are thin too.
//!
//! Pages are judged in a fixed order (earlier layers first, then the shorter
//! URL first, so a copy's longer URL is the one found to copy), which makes
//! the verdicts the same on every run. Each page counts for its URL's two
//! [`templates`]: the fine one (`/news/*?print`) and the coarse one (every
//! `?print` URL of the host). A template with at least [`MIN_BARREN`]
//! barren pages that make at least [`BARREN_SHARE`] of its fetched pages
//! is **barren**: the optimise step stops following link targets of that
//! template. The counts accumulate from layer to layer.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, BinaryArray, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::store::column::{Tuned, Tuning};

/// Barren pages a template needs: one or two copies are chance, three of
/// one URL pattern are a habit of the site.
pub const MIN_BARREN: usize = 3;
/// Share of a template's fetched pages that must be barren.
pub const BARREN_SHARE: f32 = 0.9;
/// Characters of text from which an exact copy counts as a duplicate.
pub const MIN_DUP_CHARS: u32 = 200;
/// Characters of text from which a page is fruitful, and a near-copy counts.
pub const MIN_TEXT_CHARS: u32 = 500;
/// Lines shorter than this are not paragraphs (headings, bylines, menus).
pub const MIN_LINE_CHARS: usize = 40;
/// Share of a page's paragraph characters seen before that makes it a near-copy.
pub const NEAR_COPY_SHARE: f32 = 0.8;

/// The paragraphs of a text, for near-copy detection: per line of at least
/// [`MIN_LINE_CHARS`] characters, its hash and its length.
#[must_use]
pub fn paragraphs(text: &str) -> Vec<Paragraph> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| {
            let chars = l.chars().count();
            (chars >= MIN_LINE_CHARS).then(|| Paragraph {
                hash: xxhash_rust::xxh3::xxh3_64(l.as_bytes()),
                chars: u32::try_from(chars).unwrap_or(u32::MAX),
            })
        })
        .collect()
}

/// One paragraph of a page's text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Paragraph {
    pub hash: u64,
    pub chars: u32,
}

/// What the map task records of one fetched page, for judging it later.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub url: String,
    pub status: i32,
    /// A 2xx HTML page that was parsed.
    pub html: bool,
    /// The URL redirected to another site or out of scope.
    pub redirect_out: bool,
    /// Characters of main text.
    pub text_chars: u32,
    pub content_hash: Option<u64>,
    /// Its paragraphs, when the text is at least [`MIN_TEXT_CHARS`] long.
    pub paragraphs: Vec<Paragraph>,
}

/// Why a page is barren.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barren {
    ClientError,
    RedirectOut,
    Duplicate,
    NearDuplicate,
}

/// What a fetched page turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Fruitful,
    Barren(Barren),
    Neutral,
}

/// Texts seen so far in a partition: exact hashes and paragraph hashes.
/// Those of earlier layers sit in sorted lists (8 bytes each); those of the
/// layer being judged in hash sets.
#[derive(Debug, Default)]
pub struct SeenTexts {
    earlier_exact: Vec<u64>,
    earlier_lines: Vec<u64>,
    exact: HashSet<u64>,
    lines: HashSet<u64>,
}

impl SeenTexts {
    /// Remembers a page of an earlier layer; call [`Self::freeze`] after the last.
    pub fn add(&mut self, s: &Sample) {
        if s.html && s.text_chars >= MIN_DUP_CHARS {
            self.earlier_exact.extend(s.content_hash);
        }
        self.earlier_lines.extend(s.paragraphs.iter().map(|p| p.hash));
    }

    /// Sorts what [`Self::add`] gathered, for lookups.
    pub fn freeze(&mut self) {
        for v in [&mut self.earlier_exact, &mut self.earlier_lines] {
            v.sort_unstable();
            v.dedup();
            v.shrink_to_fit();
        }
    }

    fn seen_text(&self, h: u64) -> bool {
        self.exact.contains(&h) || self.earlier_exact.binary_search(&h).is_ok()
    }

    fn seen_line(&self, h: u64) -> bool {
        self.lines.contains(&h) || self.earlier_lines.binary_search(&h).is_ok()
    }

    /// Judges `s` against the texts seen before it, then remembers it.
    pub fn judge(&mut self, s: &Sample) -> Outcome {
        let outcome = if s.redirect_out {
            Outcome::Barren(Barren::RedirectOut)
        } else if (400..500).contains(&s.status) && !matches!(s.status, 408 | 429) {
            Outcome::Barren(Barren::ClientError)
        } else if !s.html {
            Outcome::Neutral
        } else if s.text_chars >= MIN_DUP_CHARS && s.content_hash.is_some_and(|h| self.seen_text(h)) {
            Outcome::Barren(Barren::Duplicate)
        } else if s.text_chars >= MIN_TEXT_CHARS && self.near_copy(&s.paragraphs) {
            Outcome::Barren(Barren::NearDuplicate)
        } else if s.text_chars >= MIN_TEXT_CHARS {
            Outcome::Fruitful
        } else {
            Outcome::Neutral
        };
        if s.html && s.text_chars >= MIN_DUP_CHARS {
            self.exact.extend(s.content_hash);
        }
        self.lines.extend(s.paragraphs.iter().map(|p| p.hash));
        outcome
    }

    fn near_copy(&self, paragraphs: &[Paragraph]) -> bool {
        let total: u64 = paragraphs.iter().map(|p| u64::from(p.chars)).sum();
        let seen: u64 = paragraphs.iter().filter(|p| self.seen_line(p.hash)).map(|p| u64::from(p.chars)).sum();
        #[allow(clippy::cast_precision_loss)]
        let share = seen as f32 / total.max(1) as f32;
        total > 0 && share >= NEAR_COPY_SHARE
    }
}

/// The order pages of one layer are judged in: shorter URLs first (so the
/// copy, whose URL adds `?print=1`, `/amp/` or a mirror prefix, is the one
/// found to copy), then by URL.
pub fn judging_order(samples: &mut [Sample]) {
    samples.sort_by(|a, b| (a.url.len(), &a.url).cmp(&(b.url.len(), &b.url)));
}

/// A URL's two templates, `[fine, coarse]`, both starting with the host.
///
/// Fine: every path segment that holds a digit or a `-`/`_`-joined slug
/// becomes `*` (ids, dates, titles), other segments stay (`tag`, `amp`,
/// `index.html`), the trailing slash stays, and the query is its sorted
/// keys: `s.test/news/*?print`; a folded last segment keeps its file
/// extension (`s.test/api/*.html`). Coarse: for a URL with a query, the
/// host and the query keys (`s.test?print`: every print view of the host);
/// without one, the host, the first path segment, the number of segments
/// and the extension (`s.test/amp/+3`, `s.test/boost/+5.hpp`).
#[must_use]
pub fn templates(url: &str) -> [String; 2] {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let (host, path_query) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
    let (path, query) = path_query.split_once('?').map_or((path_query, ""), |(p, q)| (p, q));
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // The file extension says what kind of resource it is: a site's broken
    // `.hpp` links and its `.html` pages are not one family.
    let ext = segments.last().and_then(|last| {
        let (stem, ext) = last.rsplit_once('.')?;
        (!stem.is_empty() && (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric()))
            .then(|| format!(".{}", ext.to_ascii_lowercase()))
    });
    let ext = ext.as_deref().unwrap_or("");
    let mut fine = host.to_string();
    for seg in &segments {
        fine.push('/');
        let variable =
            seg.chars().any(|c| c.is_ascii_digit()) || seg.contains('-') || seg.contains('_') || seg.len() > 24;
        fine.push_str(if variable { "*" } else { seg });
    }
    if fine.ends_with('*') {
        fine.push_str(ext);
    }
    if path.ends_with('/') {
        fine.push('/');
    }
    let keys = if query.is_empty() {
        String::new()
    } else {
        let mut keys: Vec<&str> = query.split('&').map(|kv| kv.split_once('=').map_or(kv, |(k, _)| k)).collect();
        keys.sort_unstable();
        keys.dedup();
        format!("?{}", keys.join("&"))
    };
    fine.push_str(&keys);
    let coarse = if keys.is_empty() {
        let first = segments.first().map_or("", |s| if s.chars().any(|c| c.is_ascii_digit()) { "0" } else { s });
        format!("{host}/{first}/+{}{ext}", segments.len())
    } else {
        format!("{host}{keys}")
    };
    [fine, coarse]
}

/// Fetched and barren pages of one URL template in one partition, counted
/// over the layers so far.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct TemplateCount {
    pub template: String,
    pub fetched: u64,
    pub barren: u64,
    /// Of the barren pages, the copies (the rest are errors and
    /// redirects off the site).
    pub copies: u64,
}

impl TemplateCount {
    /// Whether its pages were barren often enough to stop following it.
    #[must_use]
    pub fn is_barren(&self) -> bool {
        #[allow(clippy::cast_precision_loss)]
        let share = self.barren as f32 / self.fetched.max(1) as f32;
        self.barren >= MIN_BARREN as u64 && share >= BARREN_SHARE
    }

    /// Why a URL of this barren template is skipped: mostly copies, or
    /// mostly errors.
    #[must_use]
    pub fn skip_reason(&self) -> SkipReason {
        if self.copies * 2 >= self.barren {
            SkipReason::Copies
        } else {
            SkipReason::Errors
        }
    }
}

/// What the noise filter's skipped URLs were expected to be, as counted in
/// the summary: copies (their template's pages were copies), errors (client
/// errors or redirects off the site), others (clustering's verdict).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SkipReason {
    Copies,
    Errors,
    Others,
}

/// Adds one layer's judged pages (URL, outcome) to the counts so far.
/// Neutral pages count as fetched: a template whose pages are mostly thin
/// or failing is not barren. Sorted by template, deterministic.
#[must_use]
pub fn count_templates(before: Vec<TemplateCount>, judged: &[(String, Outcome)]) -> Vec<TemplateCount> {
    let mut map: BTreeMap<String, (u64, u64, u64)> =
        before.into_iter().map(|t| (t.template, (t.fetched, t.barren, t.copies))).collect();
    for (url, outcome) in judged {
        for t in templates(url) {
            let e = map.entry(t).or_default();
            e.0 += 1;
            e.1 += u64::from(matches!(outcome, Outcome::Barren(_)));
            e.2 += u64::from(matches!(outcome, Outcome::Barren(Barren::Duplicate | Barren::NearDuplicate)));
        }
    }
    map.into_iter()
        .map(|(template, (fetched, barren, copies))| TemplateCount { template, fetched, barren, copies })
        .collect()
}

/// Schema of the map task's per-partition sample file.
#[must_use]
pub fn samples_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false).tuned(Tuning::DISTINCT),
            Field::new("status", DataType::Int32, false).tuned(Tuning::SMALL),
            Field::new("html", DataType::Boolean, false),
            Field::new("redirect_out", DataType::Boolean, false),
            Field::new("text_chars", DataType::Int32, false),
            Field::new("content_hash", DataType::Int64, true).tuned(Tuning::SMALL),
            // Per paragraph: its hash (8 bytes) and length (4), little-endian.
            Field::new("paragraphs", DataType::Binary, false),
        ]))
    }))
}

/// Encodes samples.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn samples_batch(rows: &[Sample]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    // The hashes are stored as int64 (their bits), which every reader takes.
    let as_i64 = |h: Option<u64>| h.map(|v| i64::from_ne_bytes(v.to_ne_bytes()));
    let cols: Vec<arrow_array::ArrayRef> = vec![
        Arc::new(rows.iter().map(|r| Some(r.url.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| Some(r.status)).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| Some(r.html)).collect::<BooleanArray>()),
        Arc::new(rows.iter().map(|r| Some(r.redirect_out)).collect::<BooleanArray>()),
        Arc::new(rows.iter().map(|r| Some(i32::try_from(r.text_chars).unwrap_or(i32::MAX))).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| as_i64(r.content_hash)).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| Some(encode_paragraphs(&r.paragraphs))).collect::<BinaryArray>()),
    ];
    RecordBatch::try_new(samples_schema(), cols)
}

/// Decodes samples; `None` when a column is missing or of another type.
#[must_use]
pub fn samples_rows(b: &RecordBatch) -> Option<Vec<Sample>> {
    let url = b.column_by_name("url")?.as_string_opt::<i32>()?;
    let status = b.column_by_name("status")?.as_primitive_opt::<Int32Type>()?;
    let html = b.column_by_name("html")?.as_boolean_opt()?;
    let out = b.column_by_name("redirect_out")?.as_boolean_opt()?;
    let chars = b.column_by_name("text_chars")?.as_primitive_opt::<Int32Type>()?;
    let hash = b.column_by_name("content_hash")?.as_primitive_opt::<Int64Type>()?;
    let paras = b.column_by_name("paragraphs")?.as_binary_opt::<i32>()?;
    let get = |a: &Int64Array, i: usize| (!a.is_null(i)).then(|| u64::from_ne_bytes(a.value(i).to_ne_bytes()));
    Some(
        (0..b.num_rows())
            .map(|i| Sample {
                url: url.value(i).to_string(),
                status: status.value(i),
                html: html.value(i),
                redirect_out: out.value(i),
                text_chars: u32::try_from(chars.value(i)).unwrap_or(0),
                content_hash: get(hash, i),
                paragraphs: decode_paragraphs(paras.value(i)),
            })
            .collect(),
    )
}

fn encode_paragraphs(p: &[Paragraph]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len() * 12);
    for x in p {
        out.extend_from_slice(&x.hash.to_le_bytes());
        out.extend_from_slice(&x.chars.to_le_bytes());
    }
    out
}

fn decode_paragraphs(b: &[u8]) -> Vec<Paragraph> {
    b.chunks_exact(12)
        .map(|c| {
            let (h, n) = c.split_at(8);
            Paragraph {
                hash: u64::from_le_bytes(h.try_into().expect("8 bytes by chunks_exact")),
                chars: u32::from_le_bytes(n.try_into().expect("4 bytes by chunks_exact")),
            }
        })
        .collect()
}

/// Schema of the template counts (`state/denoise/`).
#[must_use]
pub fn templates_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("template", DataType::Utf8, false),
            Field::new("fetched", DataType::Int64, false),
            Field::new("barren", DataType::Int64, false),
            Field::new("copies", DataType::Int64, false),
        ]))
    }))
}

/// Encodes template counts.
///
/// # Errors
/// Never in practice.
pub fn templates_batch(rows: &[TemplateCount]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let t: StringArray = rows.iter().map(|r| Some(r.template.as_str())).collect();
    let f: Int64Array = rows.iter().map(|r| Some(n(r.fetched))).collect();
    let b: Int64Array = rows.iter().map(|r| Some(n(r.barren))).collect();
    let c: Int64Array = rows.iter().map(|r| Some(n(r.copies))).collect();
    RecordBatch::try_new(templates_schema(), vec![Arc::new(t), Arc::new(f), Arc::new(b), Arc::new(c)])
}

/// Decodes template counts; `None` when a column is missing.
#[must_use]
pub fn templates_rows(b: &RecordBatch) -> Option<Vec<TemplateCount>> {
    let t = b.column_by_name("template")?.as_string_opt::<i32>()?;
    let f = b.column_by_name("fetched")?.as_primitive_opt::<Int64Type>()?;
    let n = b.column_by_name("barren")?.as_primitive_opt::<Int64Type>()?;
    let c = b.column_by_name("copies")?.as_primitive_opt::<Int64Type>()?;
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    Some(
        (0..b.num_rows())
            .map(|i| TemplateCount {
                template: t.value(i).to_string(),
                fetched: u(f.value(i)),
                barren: u(n.value(i)),
                copies: u(c.value(i)),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(url: &str, chars: u32, hash: u64, text: &str) -> Sample {
        Sample {
            url: url.into(),
            status: 200,
            html: true,
            text_chars: chars,
            content_hash: Some(hash),
            paragraphs: paragraphs(text),
            ..Sample::default()
        }
    }

    const P1: &str = "The council met on Tuesday to discuss the new bridge over the river.";
    const P2: &str = "Residents asked for a safer crossing near the school, and engineers listened.";
    const P3: &str = "A decision is expected next month, after a public consultation on Friday.";
    const FOOTER: &str = "Copyright 2024 The Gazette. All rights reserved worldwide, forever.";

    #[test]
    fn templates_fold_ids_and_slugs_and_keep_structure() {
        assert_eq!(templates("http://s.test/news/12-x"), ["s.test/news/*", "s.test/news/+2"]);
        assert_eq!(templates("http://s.test/news/12-x?print=1"), ["s.test/news/*?print", "s.test?print"]);
        assert_eq!(templates("http://s.test/amp/news/12-x"), ["s.test/amp/news/*", "s.test/amp/+3"]);
        assert_eq!(templates("http://s.test/2019/03/x?b=1&a=2&b=3"), ["s.test/*/*/x?a&b", "s.test?a&b"]);
        assert_eq!(templates("http://s.test/tag/around/"), ["s.test/tag/around/", "s.test/tag/+2"]);
        assert_eq!(templates("http://s.test/calendar/2023/06/"), ["s.test/calendar/*/*/", "s.test/calendar/+3"]);
        assert_eq!(templates("http://s.test"), ["s.test", "s.test//+0"]);
        assert_eq!(templates("http://s.test/library/os.html"), ["s.test/library/os.html", "s.test/library/+2.html"]);
        // Broken header links and pages beside them are two families.
        assert_eq!(templates("http://s.test/boost/x/as_expr.hpp"), ["s.test/boost/x/*.hpp", "s.test/boost/+3.hpp"]);
        assert_eq!(templates("http://s.test/boost/x/as_expr.HTML"), ["s.test/boost/x/*.html", "s.test/boost/+3.html"]);
        assert_eq!(templates("http://s.test/v1.2/x"), ["s.test/*/x", "s.test/0/+2"]);
    }

    #[test]
    fn a_template_is_barren_from_three_copies_making_nine_tenths_of_it() {
        let copy = Outcome::Barren(Barren::Duplicate);
        let mut judged: Vec<(String, Outcome)> =
            (0..3).map(|i| (format!("http://s.test/news/{i}-x?print=1"), copy)).collect();
        judged.extend((0..30).map(|i| (format!("http://s.test/news/{i}-x"), Outcome::Fruitful)));
        let counts = count_templates(Vec::new(), &judged);
        let barren: Vec<&str> = counts.iter().filter(|t| t.is_barren()).map(|t| t.template.as_str()).collect();
        assert_eq!(barren, ["s.test/news/*?print", "s.test?print"]);
        // Counts accumulate: one fruitful print view more keeps it barren
        // (3 of 4 is under nine tenths: not barren any more).
        let later = count_templates(counts, &[("http://s.test/news/9-x?print=1".to_string(), Outcome::Fruitful)]);
        assert!(later.iter().all(|t| !t.is_barren()), "{later:?}");
        // Thin pages count as fetched, so a template of thin pages and two copies is not barren.
        let mut mixed: Vec<(String, Outcome)> =
            (0..20).map(|i| (format!("http://s.test/genindex-{i}"), Outcome::Neutral)).collect();
        mixed.extend((0..3).map(|i| (format!("http://s.test/genindex-{i}x"), copy)));
        assert!(count_templates(Vec::new(), &mixed).iter().all(|t| !t.is_barren()));
    }

    #[test]
    fn copies_errors_and_redirects_are_barren_thin_pages_are_neutral() {
        let mut seen = SeenTexts::default();
        let article = format!("{P1}\n{P2}\nBy Mira\n{P3}\n{FOOTER}");
        assert_eq!(seen.judge(&page("http://s.test/a", 4000, 1, &article)), Outcome::Fruitful);
        assert_eq!(seen.judge(&page("http://s.test/a?print=1", 4000, 1, &article)), Outcome::Barren(Barren::Duplicate));
        let amp = format!("{P1}\n{P2}\n{P3}\nYou are reading the mobile version of this story.");
        assert_eq!(seen.judge(&page("http://s.test/amp/a", 4100, 2, &amp)), Outcome::Barren(Barren::NearDuplicate));
        let other = format!("Our bakery opens at seven every morning, and closes at noon.\n{FOOTER}");
        assert_eq!(
            seen.judge(&page("http://s.test/b", 4000, 3, &other)),
            Outcome::Fruitful,
            "a shared footer is not a copy"
        );
        // A short page is no evidence either way, even when it repeats.
        assert_eq!(seen.judge(&page("http://s.test/genindex-A", 120, 9, "A")), Outcome::Neutral);
        assert_eq!(seen.judge(&page("http://s.test/genindex-B", 120, 9, "A")), Outcome::Neutral);
        let gone = Sample { url: "http://s.test/old".into(), status: 404, ..Sample::default() };
        assert_eq!(seen.judge(&gone), Outcome::Barren(Barren::ClientError));
        let busy = Sample { status: 503, ..gone.clone() };
        assert_eq!(seen.judge(&busy), Outcome::Neutral);
        let away = Sample { status: 302, redirect_out: true, ..gone };
        assert_eq!(seen.judge(&away), Outcome::Barren(Barren::RedirectOut));
    }

    #[test]
    fn pages_of_earlier_layers_count_once_frozen() {
        let mut seen = SeenTexts::default();
        seen.add(&page("http://s.test/a", 4000, 1, &format!("{P1}\n{P2}\n{P3}")));
        seen.freeze();
        assert_eq!(seen.judge(&page("http://s.test/a?replytocom=7", 4000, 1, P1)), Outcome::Barren(Barren::Duplicate));
        assert_eq!(
            seen.judge(&page("http://s.test/amp/a", 4000, 5, &format!("{P1}\n{P2}"))),
            Outcome::Barren(Barren::NearDuplicate)
        );
    }

    #[test]
    fn the_judging_order_puts_originals_before_their_copies() {
        let mut v = vec![
            page("http://s.test/mirror/news/1", 1, 1, ""),
            page("http://s.test/news/1", 1, 1, ""),
            page("http://s.test/news/1?print=1", 1, 1, ""),
        ];
        judging_order(&mut v);
        let urls: Vec<&str> = v.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["http://s.test/news/1", "http://s.test/mirror/news/1", "http://s.test/news/1?print=1"]);
    }

    #[test]
    fn samples_and_template_rows_round_trip() {
        let rows = vec![
            page("http://s.test/a", 10, u64::MAX, P1),
            Sample { url: "http://s.test/b".into(), status: 404, ..Sample::default() },
        ];
        let b = samples_batch(&rows).expect("batch");
        assert_eq!(samples_rows(&b).expect("decode"), rows);
        let t = vec![TemplateCount { template: "s.test?print".into(), fetched: 9, barren: 8, copies: 8 }];
        assert_eq!(templates_rows(&templates_batch(&t).expect("batch")).expect("decode"), t);
    }
}
