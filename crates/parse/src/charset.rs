//! Character encoding of a fetched page: BOM, then the `Content-Type`
//! header, then a `<meta>` prescan, then statistical detection (chardetng).
//! A declared charset that does not decode the bytes cleanly (a Latin-1
//! page served as UTF-8) gives way to the detected one when that one does
//! ([`decode_checked`]; the page's `charset` column says which was used).
//! The result always decodes to valid UTF-8 (malformed bytes become U+FFFD).

use std::borrow::Cow;

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// Where the encoding came from, recorded for diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Bom,
    Header,
    Meta,
    Detected,
    /// Declared (header or `<meta>`) but wrong: the bytes did not decode
    /// with it, and did with the detected encoding.
    Fallback,
}

/// How much of the document the `<meta>` prescan looks at. The HTML
/// standard says 1024 bytes; real pages put a long `<head>` first, so look
/// a little further.
const PRESCAN: usize = 4096;
/// How much of the body the detector reads: enough for a stable guess,
/// bounded so a 10 MB page costs no more than a small one.
const DETECT: usize = 64 * 1024;

/// Picks the encoding of `body`; returns it, its source and the BOM length.
#[must_use]
pub fn sniff(body: &[u8], content_type: Option<&str>) -> (&'static Encoding, Source, usize) {
    if let Some((enc, bom)) = Encoding::for_bom(body) {
        return (enc, Source::Bom, bom);
    }
    if let Some(enc) = content_type.and_then(header_charset) {
        return (html_compatible(enc), Source::Header, 0);
    }
    if let Some(enc) = meta_charset(&body[..body.len().min(PRESCAN)]) {
        return (html_compatible(enc), Source::Meta, 0);
    }
    (detect(body), Source::Detected, 0)
}

/// Decodes `body` (after its BOM) with `enc`; borrows when it is valid UTF-8.
#[must_use]
pub fn decode<'a>(body: &'a [u8], enc: &'static Encoding, bom: usize) -> Cow<'a, str> {
    enc.decode_without_bom_handling(&body[bom.min(body.len())..]).0
}

/// [`decode`], with the fallback: when a declared encoding leaves
/// malformed bytes, the detected encoding is tried, and taken if it decodes
/// them all. Returns the text and the encoding and source actually used.
/// Costs nothing more for a page its declaration decodes.
#[must_use]
pub fn decode_checked<'a>(
    body: &'a [u8],
    enc: &'static Encoding,
    source: Source,
    bom: usize,
) -> (Cow<'a, str>, &'static Encoding, Source) {
    let bytes = &body[bom.min(body.len())..];
    let (text, had_errors) = enc.decode_without_bom_handling(bytes);
    if !had_errors || !matches!(source, Source::Header | Source::Meta) {
        return (text, enc, source);
    }
    if enc == UTF_8 {
        // Mostly UTF-8 with a few stray bytes (a cut, a pasted fragment):
        // it is UTF-8; reading it as a legacy encoding would garble every
        // character that did decode.
        let bad = text.chars().filter(|&c| c == '\u{fffd}').count();
        let good = text.chars().filter(|&c| !c.is_ascii() && c != '\u{fffd}').count();
        if good >= bad {
            return (text, enc, source);
        }
    }
    let detected = detect(bytes);
    if detected != enc {
        let (again, errors) = detected.decode_without_bom_handling(bytes);
        if !errors {
            return (again, detected, Source::Fallback);
        }
    }
    (text, enc, source)
}

/// The encoding named by a `charset=` parameter of a `Content-Type` value.
#[must_use]
pub fn header_charset(content_type: &str) -> Option<&'static Encoding> {
    let lower = content_type.to_ascii_lowercase();
    let at = lower.find("charset=")?;
    let label = lower[at + 8..].split(';').next()?.trim().trim_matches(|c| c == '"' || c == '\'');
    Encoding::for_label(label.as_bytes())
}

/// The HTML standard's rule: a page cannot really be UTF-16 if its bytes
/// were read as ASCII to find the declaration; `x-user-defined` is 1252.
fn html_compatible(enc: &'static Encoding) -> &'static Encoding {
    if enc == encoding_rs::UTF_16BE || enc == encoding_rs::UTF_16LE {
        UTF_8
    } else if enc == encoding_rs::X_USER_DEFINED {
        WINDOWS_1252
    } else {
        enc
    }
}

/// Finds `<meta charset=X>` or `<meta http-equiv content="...; charset=X">`
/// in the first bytes of a document.
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let lower = head.to_ascii_lowercase();
    let mut from = 0;
    while let Some(off) = find(&lower[from..], b"<meta") {
        let start = from + off + 5;
        let end = lower[start..].iter().position(|&c| c == b'>').map_or(lower.len(), |e| start + e);
        let tag = &lower[start..end];
        if let Some(c) = find(tag, b"charset") {
            let mut rest = &tag[c + 7..];
            rest = trim_start(rest);
            if let Some(r) = rest.strip_prefix(b"=") {
                let r = trim_start(r);
                let r = r.strip_prefix(b"\"").or_else(|| r.strip_prefix(b"'")).unwrap_or(r);
                let len = r
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b':' | b'.')))
                    .unwrap_or(r.len());
                if let Some(enc) = Encoding::for_label(&r[..len]) {
                    return Some(enc);
                }
            }
        }
        from = end.max(start);
    }
    None
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &s[n..]
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Statistical detection; valid UTF-8 is taken as UTF-8 without a guess.
fn detect(body: &[u8]) -> &'static Encoding {
    let sample = &body[..body.len().min(DETECT)];
    if valid_utf8_prefix(sample) {
        return UTF_8;
    }
    let mut d = EncodingDetector::new(Iso2022JpDetection::Deny);
    d.feed(sample, sample.len() == body.len());
    d.guess(None, Utf8Detection::Allow)
}

/// Valid UTF-8, allowing a character cut at the end of the sample.
fn valid_utf8_prefix(s: &[u8]) -> bool {
    match std::str::from_utf8(s) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none() && s.len() - e.valid_up_to() < 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_declaration_gives_way_to_the_detected_encoding() {
        let latin1 = b"<html><head><meta charset=utf-8><title>Mislabeled: na\xefve r\xe9sum\xe9</title></head><body><p>Caf\xe9 cr\xe8me br\xfbl\xe9e, d\xe9j\xe0 vu.</p></body></html>";
        let (enc, source, bom) = sniff(latin1, Some("text/html; charset=utf-8"));
        assert_eq!((enc, source), (UTF_8, Source::Header));
        let (text, used, why) = decode_checked(latin1, enc, source, bom);
        assert_eq!((used, why), (WINDOWS_1252, Source::Fallback));
        assert!(text.contains("Mislabeled: naïve résumé") && !text.contains('\u{fffd}'), "{text}");
        // A page its declaration decodes keeps it, borrowed.
        let good = "<p>naïve résumé</p>".as_bytes();
        let (text, used, why) = decode_checked(good, UTF_8, Source::Header, 0);
        assert_eq!((used, why), (UTF_8, Source::Header));
        assert!(matches!(text, Cow::Borrowed(_)));
        // UTF-8 with a stray byte stays UTF-8.
        let mixed = "<p>naïve résumé café</p>".as_bytes().iter().chain(b"\xff").copied().collect::<Vec<u8>>();
        let (text, used, _) = decode_checked(&mixed, UTF_8, Source::Meta, 0);
        assert!(used == UTF_8 && text.contains("naïve résumé café"));
    }

    #[test]
    fn order_is_bom_header_meta_detection() {
        let bom = b"\xEF\xBB\xBF<meta charset=gbk>hi";
        assert_eq!(sniff(bom, Some("text/html; charset=shift_jis")), (UTF_8, Source::Bom, 3));
        let meta = b"<html><head><meta charset=\"GBK\"></head>";
        assert_eq!(sniff(meta, Some("text/html; charset=Shift_JIS")).0.name(), "Shift_JIS");
        assert_eq!(sniff(meta, Some("text/html")).0.name(), "GBK");
        let http_equiv = b"<META HTTP-EQUIV='Content-Type' CONTENT='text/html; charset=windows-1252'>";
        assert_eq!(sniff(http_equiv, None), (WINDOWS_1252, Source::Meta, 0));
        assert_eq!(sniff("plain ascii and caf\u{e9}".as_bytes(), None), (UTF_8, Source::Detected, 0));
    }

    #[test]
    fn undeclared_legacy_encodings_are_detected() {
        let text = "Le café où l'on mange une crème brûlée est très fréquenté; déjà à Noël. ".repeat(8);
        let (bytes, _, _) = WINDOWS_1252.encode(&text);
        let (enc, src, _) = sniff(&bytes, None);
        assert_eq!((enc, src), (WINDOWS_1252, Source::Detected));
        assert_eq!(decode(&bytes, enc, 0), text);
        let jp = "日本語のテキストです。東京の天気は晴れです。これは文字コードの判定の試験です。".repeat(6);
        let (bytes, _, _) = encoding_rs::SHIFT_JIS.encode(&jp);
        assert_eq!(sniff(&bytes, None).0, encoding_rs::SHIFT_JIS);
        let zh = "这是一个中文网页的正文内容，用于测试字符编码的自动识别功能。北京天气晴朗。".repeat(6);
        let (bytes, _, _) = encoding_rs::GBK.encode(&zh);
        assert_eq!(sniff(&bytes, None).0, encoding_rs::GBK);
    }

    #[test]
    fn utf16_declarations_and_bad_labels() {
        assert_eq!(sniff(b"<meta charset=utf-16>", None).0, UTF_8);
        assert_eq!(sniff(b"<meta charset=klingon><p>x", Some("text/html")).2, 0);
        assert_eq!(header_charset("text/html; charset=\"ISO-8859-1\""), Some(WINDOWS_1252));
        // Malformed bytes become U+FFFD, never invalid UTF-8.
        assert_eq!(decode(b"a\xFFb", UTF_8, 0), "a\u{FFFD}b");
    }
}
