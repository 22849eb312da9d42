//! Parsing: a fetched body becomes title, main text and outlinks.
//!
//! CPU work, called from the rayon pool (never on an async thread). One
//! pass: [`charset`] picks the encoding (BOM, header, `<meta>`, detection)
//! and decodes to UTF-8; [`tokens`] runs html5ever's tokenizer once and
//! yields the title, the text runs and links per DOM block. The block's
//! link-text ratio (docs/src/noise-filter.md) rides along on every link, and the
//! main text keeps only blocks at or under the noise ratio, so navigation
//! bars, sidebars and footers stay out of `text`.
//!
//! ```
//! use layercrawl_parse::{parse_html, ParseConfig};
//! let html = b"<title>Hi</title><nav><a href=/a>Home</a> <a href=/b>About</a></nav>\
//!              <p>Some article text with <a href='/c?utm_source=x'>a link</a> inside.</p>";
//! let base = url::Url::parse("http://s001.test/x/").expect("an absolute URL");
//! let page = parse_html(html, Some("text/html"), &base, &ParseConfig::default());
//! assert_eq!(page.title.as_deref(), Some("Hi"));
//! assert_eq!(page.text, "Some article text with a link inside.");
//! assert_eq!(page.links[2].url.as_str(), "http://s001.test/c");
//! assert!(page.links[0].block_ratio > 0.25 && page.links[2].block_ratio < 0.25);
//! ```

pub mod charset;
pub mod tokens;

use encoding_rs::Encoding;
use url::Url;

use layercrawl_vocab::urlnorm;

/// Settings of the parse.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ParseConfig {
    /// Link-text ratio above which a block is navigation (default 1/4, `--noise-ratio`).
    pub noise_ratio: f32,
    /// Links kept per page at most (hostile pages carry millions). Real
    /// index pages carry tens of thousands: rustdoc's `core/all.html` has
    /// 17,942, and a cap of 10,000 silently lost the pages only it links to.
    pub max_links: usize,
    /// Bytes of main text kept per page at most.
    pub max_text: usize,
    /// How outlinks are normalised (which parameters are stripped; written
    /// once in the run's settings, `config::RunSettings`).
    #[serde(skip)]
    pub urls: std::sync::Arc<urlnorm::UrlPolicy>,
}

/// The default `--noise-ratio`.
pub const DEFAULT_NOISE_RATIO: f32 = 0.25;

impl Default for ParseConfig {
    fn default() -> Self {
        Self {
            noise_ratio: DEFAULT_NOISE_RATIO,
            max_links: 100_000,
            max_text: 1 << 20,
            urls: std::sync::Arc::default(),
        }
    }
}

/// One outlink of a page.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Absolute, normalised (see [`urlnorm`]).
    pub url: Url,
    /// Anchor text, whitespace collapsed (image `alt` text included).
    pub anchor: String,
    /// `rel="nofollow"` on the link.
    pub nofollow: bool,
    /// Link-text ratio of the DOM block holding the link.
    pub block_ratio: f32,
}

/// What the parser found in one HTML page.
#[derive(Clone, Debug)]
pub struct Page {
    pub encoding: &'static Encoding,
    pub encoding_source: charset::Source,
    pub title: Option<String>,
    /// Main text: the page's text without navigation blocks, one line per block run.
    pub text: String,
    pub links: Vec<Link>,
    /// `<meta name=robots content=nofollow>`: no link of the page is followed.
    pub meta_nofollow: bool,
    /// The page's text structure and meta data, from the same pass, for
    /// extraction (main text, metadata).
    pub structure: Structure,
}

/// Every text run of a page with its block and kind, the blocks, and the
/// page's meta data, as the tokenizer pass found them.
#[derive(Clone, Debug, Default)]
pub struct Structure {
    /// All the page's visible text; runs are slices of it.
    pub text: String,
    pub segments: Vec<tokens::Segment>,
    pub blocks: Vec<tokens::Block>,
    pub meta: tokens::Meta,
}

/// Whether a response is HTML: by its declared type, sniffing the body when
/// the type is missing or generic (`text/plain`, `application/octet-stream`),
/// and refusing binary bodies mislabelled as HTML.
#[must_use]
pub fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    let mime =
        content_type.and_then(|c| c.split(';').next()).map(|m| m.trim().to_ascii_lowercase()).unwrap_or_default();
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => !looks_binary(body),
        "" | "text/plain" | "application/octet-stream" | "unknown/unknown" | "application/unknown" => looks_html(body),
        _ => false,
    }
}

/// The HTML standard's sniffing signatures, after leading whitespace / BOM.
fn looks_html(body: &[u8]) -> bool {
    let head = &body[..body.len().min(1024)];
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    let start = head.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(head.len());
    let head = &head[start..];
    const SIGS: [&[u8]; 14] = [
        b"<!doctype html",
        b"<html",
        b"<head",
        b"<script",
        b"<iframe",
        b"<h1",
        b"<div",
        b"<font",
        b"<table",
        b"<a",
        b"<style",
        b"<title",
        b"<body",
        b"<p",
    ];
    SIGS.iter().any(|sig| {
        head.len() > sig.len()
            && head[..sig.len()].eq_ignore_ascii_case(sig)
            && matches!(head[sig.len()], b' ' | b'>' | b'\t' | b'\n' | b'\r' | b'/')
    }) || (head.starts_with(b"<!--") && !looks_binary(body))
}

/// Magic numbers of common binary formats, or NUL bytes near the start.
fn looks_binary(body: &[u8]) -> bool {
    const MAGIC: [&[u8]; 8] =
        [b"\x89PNG", b"%PDF-", b"GIF8", b"\xFF\xD8\xFF", b"PK\x03\x04", b"\x1F\x8B", b"RIFF", b"\x00\x00\x01\x00"];
    let head = &body[..body.len().min(512)];
    MAGIC.iter().any(|m| head.starts_with(m)) || head.contains(&0)
}

/// Parses an HTML body fetched from `url` (the final URL, after redirects).
/// Never fails: whatever the bytes, the result is valid UTF-8 and bounded.
#[must_use]
pub fn parse_html(body: &[u8], content_type: Option<&str>, url: &Url, cfg: &ParseConfig) -> Page {
    parse_html_keeping_source(body, content_type, url, cfg).1
}

/// [`parse_html`], handing back the decoded HTML too (borrowed from `body`
/// when it was UTF-8 already): the extractors read it
/// (the crawler's `extract::ParsedPage`) without decoding the body a second time.
#[must_use]
pub fn parse_html_keeping_source<'a>(
    body: &'a [u8],
    content_type: Option<&str>,
    url: &Url,
    cfg: &ParseConfig,
) -> (std::borrow::Cow<'a, str>, Page) {
    let (html, page, _) = parse_source(body, content_type, url, cfg, false);
    (html, page)
}

/// [`parse_html_keeping_source`], and the page's DOM built by the same
/// tokenizer pass ([`tokens::tokenize_with_dom`]) when `dom` is set.
#[must_use]
pub fn parse_source<'a>(
    body: &'a [u8],
    content_type: Option<&str>,
    url: &Url,
    cfg: &ParseConfig,
    dom: bool,
) -> (std::borrow::Cow<'a, str>, Page, Option<scraper::Html>) {
    let (encoding, encoding_source, bom) = charset::sniff(body, content_type);
    let (html, encoding, encoding_source) = charset::decode_checked(body, encoding, encoding_source, bom);
    let (ex, tree) = if dom {
        let (ex, tree) = tokens::tokenize_with_dom(&html, cfg.max_links, cfg.max_text);
        (ex, Some(tree))
    } else {
        (tokens::tokenize(&html, cfg.max_links, cfg.max_text), None)
    };
    let base = ex
        .base
        .as_deref()
        .and_then(|b| url.join(b.trim()).ok())
        .filter(|b| matches!(b.scheme(), "http" | "https"))
        .unwrap_or_else(|| url.clone());
    let ratios: Vec<f32> = ex.blocks.iter().map(|b| b.ratio()).collect();
    let links = ex
        .links
        .into_iter()
        .filter(|l| !l.href.trim().is_empty() && !l.href.trim_start().starts_with('#'))
        .filter_map(|l| {
            let target = cfg.urls.resolve_link(&base, &l.href)?;
            Some(Link { url: target, anchor: l.anchor, nofollow: l.nofollow, block_ratio: ratios[l.block] })
        })
        .collect();
    let mut text = String::with_capacity(ex.text.len());
    for seg in &ex.segments {
        if ratios[seg.block] <= cfg.noise_ratio && seg.end > seg.start {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&ex.text[seg.start..seg.end]);
        }
    }
    let structure = Structure { text: ex.text, segments: ex.segments, blocks: ex.blocks, meta: ex.meta };
    let page =
        Page { encoding, encoding_source, title: ex.title, text, links, meta_nofollow: ex.meta_nofollow, structure };
    (html, page, tree)
}

#[cfg(test)]
mod tests;
