//! What fetched pages turned out to be: the noise filter's evidence.
//!
//! Where a link sits (a menu, a sidebar, a table of contents) says little
//! about where it leads: on documentation sites nearly every page is reached
//! through link-dense blocks, and on a web application the same menu leads
//! to both the content and its hundred views. So the filter judges a link
//! by what the pages of its kind *brought* (see [`super::yields`]). After
//! each layer, every fetched page of a partition is judged ([`Outcome`]):
//!
//! * **new** — what the crawl keeps of it was not seen before in the
//!   partition: its main text (the `main_text` column, white space
//!   collapsed), or the body of a file that is not HTML when the run keeps
//!   such bodies (`--store-body all`);
//! * **copy** — nothing new: the same text as a page fetched before (a print
//!   view, a file at a version where it did not change, a listing in
//!   another sort order), or nothing the crawl keeps (a page without main
//!   text, a file whose body is not kept);
//! * **error** — a client error (404, 410, ...) or a redirect off the site;
//! * **neutral** — no evidence: server errors, timeouts, answers cut short.
//!
//! Pages are judged in a fixed order (earlier layers first, then the shorter
//! URL first, so a copy's longer URL is the one found to copy), which makes
//! the verdicts the same on every run.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::store::column::{Tuned, Tuning};

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
    /// The fingerprint of what the crawl keeps of the page ([`text_hash`]
    /// of its main text, or of the body of a file that is not HTML when
    /// bodies of files are kept); none when it keeps nothing.
    pub text_hash: Option<u64>,
}

/// The fingerprint of a text as the filter compares texts: its words, with
/// white space collapsed (a re-indented copy is a copy), which is the hash
/// of its words joined by single spaces. The joined words are copied into
/// a small buffer on the stack that goes to the hasher a few kilobytes at
/// a time: no second copy of a long text, and no call per word (word by
/// word it cost more than the filter saved on sites with little noise; see
/// the `stages` benchmark). An ASCII text is split on ASCII white space,
/// which is faster and the same words (a vertical tab, white space to
/// `char::is_whitespace` only, sends a text the general way). A text whose
/// white space is collapsed already, as the `main_text` column's is, takes
/// a shorter way still ([`hash_collapsed`]).
#[must_use]
pub fn text_hash(text: &str) -> Option<u64> {
    if let Some(h) = hash_collapsed(text) {
        h
    } else if text.is_ascii() && !text.contains('\u{b}') {
        hash_words(text.split_ascii_whitespace())
    } else {
        hash_words(text.split_whitespace())
    }
}

/// [`text_hash`] of a text whose words are separated by one space or one
/// line break, with nothing before the first or after the last: its words
/// joined by single spaces are its own bytes with each line break read as
/// a space, so they go to the hasher as they are, a few kilobytes at a
/// time, with no splitting. Any other white space (two in a row, a tab,
/// white space outside ASCII) gives `None`, for the general way. Each test
/// is a pass of the `memchr` crate's vector search; a byte that may start
/// white space outside ASCII only sends the text to an exact check.
fn hash_collapsed(text: &str) -> Option<Option<u64>> {
    const CHUNK: usize = 4096;
    let bytes = text.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return None;
    };
    if first.is_ascii_whitespace()
        || last.is_ascii_whitespace()
        || memchr::memchr3(b'\t', b'\r', 0x0b, bytes).is_some()
        || memchr::memchr(0x0c, bytes).is_some()
    {
        return None;
    }
    if (memchr::memchr3(0xc2, 0xe1, 0xe2, bytes).is_some() || memchr::memchr(0xe3, bytes).is_some())
        && text.chars().any(|c| !c.is_ascii() && c.is_whitespace())
    {
        return None;
    }
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = [0u8; CHUNK];
    let mut after_space = false;
    for chunk in bytes.chunks(CHUNK) {
        let out = &mut buf[..chunk.len()];
        for (o, &b) in out.iter_mut().zip(chunk) {
            *o = if b == b'\n' { b' ' } else { b };
        }
        // Two separators in a row, within the chunk or across its edge.
        if (after_space && out[0] == b' ') || memchr::memmem::find(out, b"  ").is_some() {
            return None;
        }
        after_space = out[out.len() - 1] == b' ';
        h.update(out);
    }
    Some(Some(h.digest()))
}

fn hash_words<'a>(words: impl Iterator<Item = &'a str>) -> Option<u64> {
    const CHUNK: usize = 4096;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = [0u8; CHUNK];
    let mut len = 0;
    let mut any = false;
    for word in words {
        let sep = usize::from(any);
        if len + sep + word.len() > CHUNK {
            h.update(&buf[..len]);
            len = 0;
        }
        if any {
            buf[len] = b' ';
            len += 1;
        }
        if word.len() > CHUNK - len {
            // A "word" longer than the buffer (a run of data without
            // spaces) goes to the hasher as it is.
            h.update(&buf[..len]);
            len = 0;
            h.update(word.as_bytes());
        } else {
            buf[len..len + word.len()].copy_from_slice(word.as_bytes());
            len += word.len();
        }
        any = true;
    }
    h.update(&buf[..len]);
    any.then(|| h.digest())
}

/// What a fetched page turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    New,
    Copy,
    Error,
    Neutral,
}

/// Texts seen so far in a partition: those of earlier layers in a sorted
/// list (8 bytes each), those of the layer being judged in a hash set.
#[derive(Debug, Default)]
pub struct SeenTexts {
    earlier: Vec<u64>,
    now: HashSet<u64>,
}

impl SeenTexts {
    /// Remembers the text fingerprints of an earlier layer's pages (their
    /// samples' `text_hash` column); call [`Self::freeze`] after the last.
    pub fn add_hashes(&mut self, hashes: impl Iterator<Item = u64>) {
        self.earlier.extend(hashes);
    }

    /// Sorts what [`Self::add_hashes`] gathered, for lookups.
    pub fn freeze(&mut self) {
        self.earlier.sort_unstable();
        self.earlier.dedup();
        self.earlier.shrink_to_fit();
    }

    fn seen(&self, h: u64) -> bool {
        self.now.contains(&h) || self.earlier.binary_search(&h).is_ok()
    }

    /// Judges `s` against the earlier layers' texts and `also` (texts of
    /// this layer judged before it), adding its text to `also`; the texts
    /// of this layer that [`Self::judge`] remembered are not looked at.
    pub fn judge_beside(&self, s: &Sample, also: &mut HashSet<u64>) -> Outcome {
        match outcome_of(s) {
            Err(outcome) => outcome,
            Ok(None) => Outcome::Copy,
            Ok(Some(h)) if also.contains(&h) || self.earlier.binary_search(&h).is_ok() => Outcome::Copy,
            Ok(Some(h)) => {
                also.insert(h);
                Outcome::New
            }
        }
    }

    /// Judges `s` against the texts seen before it, then remembers it.
    pub fn judge(&mut self, s: &Sample) -> Outcome {
        match outcome_of(s) {
            Err(outcome) => outcome,
            Ok(None) => Outcome::Copy,
            Ok(Some(h)) if self.seen(h) => Outcome::Copy,
            Ok(Some(h)) => {
                self.now.insert(h);
                Outcome::New
            }
        }
    }
}

/// What a page is without looking at texts (`Err`: an error, or no
/// evidence), or the fingerprint of its text to look up (`Ok(None)`: it
/// keeps nothing, a copy).
fn outcome_of(s: &Sample) -> Result<Option<u64>, Outcome> {
    if s.redirect_out || ((400..500).contains(&s.status) && !matches!(s.status, 408 | 429)) {
        Err(Outcome::Error)
    } else if !(200..300).contains(&s.status) {
        Err(Outcome::Neutral)
    } else {
        Ok(s.text_hash)
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
        fine.push_str(if variable(seg) { "*" } else { seg });
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

/// Whether a path segment or query value names one thing among many (an
/// id, a date, a slug) rather than a kind of page.
#[must_use]
pub fn variable(seg: &str) -> bool {
    seg.chars().any(|c| c.is_ascii_digit()) || seg.contains('-') || seg.contains('_') || seg.len() > 24
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
            Field::new("text_hash", DataType::Int64, true),
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
        Arc::new(rows.iter().map(|r| as_i64(r.text_hash)).collect::<Int64Array>()),
    ];
    RecordBatch::try_new(samples_schema(), cols)
}

/// Decodes samples; `None` when a column is missing or of another type
/// (a sample file of an older version: its layer is then no evidence).
#[must_use]
pub fn samples_rows(b: &RecordBatch) -> Option<Vec<Sample>> {
    let url = b.column_by_name("url")?.as_string_opt::<i32>()?;
    let status = b.column_by_name("status")?.as_primitive_opt::<Int32Type>()?;
    let html = b.column_by_name("html")?.as_boolean_opt()?;
    let out = b.column_by_name("redirect_out")?.as_boolean_opt()?;
    let chars = b.column_by_name("text_chars")?.as_primitive_opt::<Int32Type>()?;
    let hash = b.column_by_name("text_hash")?.as_primitive_opt::<Int64Type>()?;
    Some(
        (0..b.num_rows())
            .map(|i| Sample {
                url: url.value(i).to_string(),
                status: status.value(i),
                html: html.value(i),
                redirect_out: out.value(i),
                text_chars: u32::try_from(chars.value(i)).unwrap_or(0),
                text_hash: (!hash.is_null(i)).then(|| u64::from_ne_bytes(hash.value(i).to_ne_bytes())),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The noise filter's own files keep the store's column tuning: a
    /// URL has no dictionary, a status is stored uncompressed, the rest
    /// is dictionary-encoded and compressed, with statistics.
    #[test]
    fn the_filters_files_keep_their_column_tuning() {
        use crate::store::{shard_properties, Compression};
        use crate::yields::counts_schema;
        use parquet::file::properties::EnabledStatistics;
        let zstd = Compression::Zstd(1).codec();
        for schema in [samples_schema(), counts_schema()] {
            let props = shard_properties(zstd, &schema, 1 << 20);
            for f in schema.fields() {
                let col = parquet::schema::types::ColumnPath::from(f.name().as_str());
                assert_eq!(props.dictionary_enabled(&col), f.name() != "url", "{}", f.name());
                let plain = props.compression(&col) == parquet::basic::Compression::UNCOMPRESSED;
                assert_eq!(plain, f.name() == "status", "{}", f.name());
                assert_ne!(props.statistics_enabled(&col), EnabledStatistics::None, "{}", f.name());
            }
        }
    }

    fn page(url: &str, text: &str) -> Sample {
        Sample {
            url: url.into(),
            status: 200,
            html: true,
            text_chars: u32::try_from(text.chars().count()).expect("short"),
            text_hash: text_hash(text),
            ..Sample::default()
        }
    }

    /// The hash of a text is the hash of its words joined by one space,
    /// whichever way the chunks of the buffer fall: short words, words
    /// across a chunk's edge, a word longer than a chunk.
    #[test]
    fn a_text_hashes_as_its_words_joined_by_single_spaces() {
        let long = "x".repeat(5000);
        let words: Vec<String> = (0..3000).map(|i| format!("w{}", "o".repeat(i % 13))).collect();
        for text in [
            "  one\ttwo \n three  ".to_string(),
            // Unicode white space (no-break, ideographic, em space, VT)
            // and words of several bytes.
            " caf\u{e9}\u{a0}na\u{ef}ve\u{3000}\u{2003}x\u{b}y \u{1f600}".to_string(),
            "\u{e9}".repeat(3000),
            "ascii\u{b}with a vertical tab".to_string(),
            words.join(" \n\t "),
            format!("a {long} b"),
            long.clone(),
            format!("{} {long} {}", words.join(" "), words.join("  ")),
            // Collapsed already, as main texts are: the short way.
            words.join(" "),
            words
                .iter()
                .enumerate()
                .map(|(i, w)| format!("{w}{}", if i % 7 == 0 { '\n' } else { ' ' }))
                .collect::<String>()
                .trim_end()
                .to_string(),
            format!("{long}\n{long} {long}"),
            "caf\u{e9} na\u{ef}ve \u{2014} \u{201c}quoted\u{201d}\nnext line".to_string(),
            // Collapsed but for one white space outside ASCII, or a tab.
            "caf\u{e9} na\u{ef}ve\u{a0}x".to_string(),
            "one two\u{2003}three".to_string(),
            "one two\tthree".to_string(),
            "one two \nthree".to_string(),
        ] {
            let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(text_hash(&text), Some(xxhash_rust::xxh3::xxh3_64(joined.as_bytes())), "{}", text.len());
        }
        assert_eq!(text_hash(" \n\t "), None);
        // Which texts take the short way.
        assert!(hash_collapsed(&words.join(" ")).is_some());
        assert!(hash_collapsed("caf\u{e9} \u{2014} na\u{ef}ve\nx").is_some());
        for other in ["one  two", "one\ttwo", " one", "one\n", "one\u{a0}two", "one\u{3000}two", ""] {
            assert!(hash_collapsed(other).is_none(), "{other:?}");
        }
    }

    #[test]
    fn templates_fold_ids_and_slugs_and_keep_structure() {
        assert_eq!(templates("http://s.test/news/12-x"), ["s.test/news/*", "s.test/news/+2"]);
        assert_eq!(templates("http://s.test/news/12-x?print=1"), ["s.test/news/*?print", "s.test?print"]);
        assert_eq!(templates("http://s.test/amp/news/12-x"), ["s.test/amp/news/*", "s.test/amp/+3"]);
        assert_eq!(templates("http://s.test/2019/03/x?b=1&a=2&b=3"), ["s.test/*/*/x?a&b", "s.test?a&b"]);
        assert_eq!(templates("http://s.test/tag/around/"), ["s.test/tag/around/", "s.test/tag/+2"]);
        assert_eq!(templates("http://s.test"), ["s.test", "s.test//+0"]);
        assert_eq!(templates("http://s.test/library/os.html"), ["s.test/library/os.html", "s.test/library/+2.html"]);
        assert_eq!(templates("http://s.test/boost/x/as_expr.hpp"), ["s.test/boost/x/*.hpp", "s.test/boost/+3.hpp"]);
        assert_eq!(templates("http://s.test/v1.2/x"), ["s.test/*/x", "s.test/0/+2"]);
    }

    #[test]
    fn new_texts_copies_errors_and_silence() {
        let mut seen = SeenTexts::default();
        assert_eq!(seen.judge(&page("http://s.test/a", "The council met on Tuesday.")), Outcome::New);
        assert_eq!(seen.judge(&page("http://s.test/a?print=1", "The council  met\non Tuesday.")), Outcome::Copy);
        assert_eq!(seen.judge(&page("http://s.test/b", "The council met on Wednesday.")), Outcome::New);
        assert_eq!(seen.judge(&page("http://s.test/empty", "")), Outcome::Copy, "nothing new");
        let gone = Sample { url: "http://s.test/old".into(), status: 404, ..Sample::default() };
        assert_eq!(seen.judge(&gone), Outcome::Error);
        assert_eq!(seen.judge(&Sample { status: 503, ..gone.clone() }), Outcome::Neutral);
        assert_eq!(seen.judge(&Sample { status: 302, redirect_out: true, ..gone }), Outcome::Error);
    }

    #[test]
    fn pages_of_earlier_layers_count_once_frozen() {
        let mut seen = SeenTexts::default();
        seen.add_hashes(page("http://s.test/a", "One text.").text_hash.into_iter());
        seen.freeze();
        assert_eq!(seen.judge(&page("http://s.test/a?replytocom=7", "One   text.")), Outcome::Copy);
        assert_eq!(seen.judge(&page("http://s.test/b", "Another text.")), Outcome::New);
    }

    #[test]
    fn the_judging_order_puts_originals_before_their_copies() {
        let mut v = vec![
            page("http://s.test/mirror/news/1", "x"),
            page("http://s.test/news/1", "x"),
            page("http://s.test/news/1?print=1", "x"),
        ];
        judging_order(&mut v);
        let urls: Vec<&str> = v.iter().map(|s| s.url.as_str()).collect();
        assert_eq!(urls, ["http://s.test/news/1", "http://s.test/mirror/news/1", "http://s.test/news/1?print=1"]);
    }

    #[test]
    fn samples_round_trip() {
        let rows = vec![
            page("http://s.test/a", "some text"),
            Sample { url: "http://s.test/b".into(), status: 404, ..Sample::default() },
        ];
        let b = samples_batch(&rows).expect("batch");
        assert_eq!(samples_rows(&b).expect("decode"), rows);
    }
}
