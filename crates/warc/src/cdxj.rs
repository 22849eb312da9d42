//! The CDXJ index of a WARC file: one line per `response` and `revisit`
//! record, `SURT-KEY TIMESTAMP {json}`, sorted byte-wise as replay tools
//! (pywb) and `cdxj-indexer --sort` expect, so a lookup is a binary search.
//!
//! The JSON holds what `cdxj-indexer` writes, in its order and as strings:
//! `url`, `mime` (the media type, without parameters), `status`,
//! `digest` (the payload's), `length` (of the gzip member), `offset` (of
//! the member in the file) and `filename` (the file's path under the data
//! location).

use url::Url;

/// One index line before its record's place in the file is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `SURT-KEY TIMESTAMP`, the sort key.
    pub key: String,
    pub url: String,
    pub mime: Option<String>,
    pub status: u16,
    pub digest: String,
    /// The gzip member's length.
    pub length: u64,
    /// Where the member starts among its page's records.
    pub start: u64,
}

#[derive(serde::Serialize)]
struct Json<'a> {
    url: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime: Option<&'a str>,
    status: String,
    digest: &'a str,
    length: String,
    offset: String,
    filename: &'a str,
}

impl Entry {
    /// The line, for a page whose records start at `page_offset` in the
    /// file named `filename`; no line break.
    #[must_use]
    pub fn line(&self, page_offset: u64, filename: &str) -> String {
        let json = Json {
            url: &self.url,
            mime: self.mime.as_deref(),
            status: self.status.to_string(),
            digest: &self.digest,
            length: self.length.to_string(),
            offset: (page_offset + self.start).to_string(),
            filename,
        };
        // Serialising a struct of strings cannot fail.
        format!("{} {}", self.key, serde_json::to_string(&json).expect("JSON of strings"))
    }
}

/// The index's media type of a `Content-Type` value: up to the first `;`
/// or white space, as `cdxj-indexer` cuts it.
#[must_use]
pub fn mime(content_type: &str) -> Option<String> {
    let m = content_type.split([';', ' ', '\t']).next().unwrap_or_default().trim();
    (!m.is_empty()).then(|| m.to_string())
}

/// The SURT form of `url` that indexes sort by (Sort-friendly URI
/// Reordering Transform, as the Internet Archive's canonicaliser makes it
/// and the `surt` package writes it): no scheme; the host lower-cased,
/// without a leading `www.` (or `www2.`...), its labels reversed and
/// joined by commas (`org,example`; an IPv4 address too), a port other
/// than the scheme's own kept (`:8080`); then `)` and the path and query,
/// percent-escapes decoded and re-encoded only where needed, lower-cased,
/// runs of `/` collapsed, a trailing `/` dropped (not the root's), the
/// query's parameters sorted and an empty query dropped. The fragment is
/// dropped. Session ids are not removed here (the crawl's `--strip-params`
/// removes the common ones from every URL before it is fetched).
#[must_use]
pub fn surt(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
    let host = strip_www(&host);
    let mut out: String = host.split('.').rev().collect::<Vec<_>>().join(",");
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push(')');
    let mut path = collapse_slashes(&escape(&unescape(url.path().as_bytes()))).to_ascii_lowercase();
    if path.len() > 1 && path.ends_with('/') {
        path.pop();
    }
    out.push_str(&path);
    if let Some(q) = url.query() {
        let q = escape(&unescape(q.as_bytes())).to_ascii_lowercase();
        if !q.is_empty() {
            let mut args: Vec<(&str, Option<&str>)> = q
                .split('&')
                .map(|a| match a.split_once('=') {
                    Some((k, v)) => (k, Some(v)),
                    None => (a, None),
                })
                .collect();
            args.sort_unstable();
            out.push('?');
            let joined: Vec<String> = args
                .into_iter()
                .map(|(k, v)| match v {
                    Some(v) => format!("{k}={v}"),
                    None => k.to_string(),
                })
                .collect();
            out.push_str(&joined.join("&"));
        }
    }
    out
}

/// `host` without a leading `www.`, `www2.` and the like.
fn strip_www(host: &str) -> &str {
    let Some(rest) = host.strip_prefix("www") else { return host };
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.strip_prefix('.').unwrap_or(host)
}

/// Percent-escapes decoded until none is left (`%2541` becomes `A`).
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut current = s.to_vec();
    loop {
        let once = percent_decode(&current);
        if once == current {
            return once;
        }
        current = once;
    }
}

fn percent_decode(s: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if let (b'%', Some(&h), Some(&l)) = (s[i], s.get(i + 1), s.get(i + 2)) {
            if let (Some(h), Some(l)) = (hex(h), hex(l)) {
                #[allow(clippy::cast_possible_truncation)] // two hex digits
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// Escapes what a key cannot hold as is: bytes outside printable ASCII,
/// space, `#` and `%`.
fn escape(s: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s {
        if b.is_ascii_graphic() && b != b'#' && b != b'%' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `a//b` is `a/b`; a trailing `/` is kept.
fn collapse_slashes(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(u: &str) -> String {
        surt(&Url::parse(u).expect("url"))
    }

    #[test]
    fn keys_reverse_the_host_and_canonicalise_the_rest() {
        // Each as the `surt` package writes it.
        assert_eq!(s("http://www.Example.org/"), "org,example)/");
        assert_eq!(s("https://www2.example.org:8443/A/B/?b=2&a=1#frag"), "org,example:8443)/a/b?a=1&b=2");
        assert_eq!(s("http://site-a.test:8080/Path/X?b=2&a=1"), "test,site-a:8080)/path/x?a=1&b=2");
        assert_eq!(s("http://127.0.0.1/a"), "1,0,0,127)/a");
        assert_eq!(s("http://wwwexample.org/x?"), "org,wwwexample)/x");
        assert_eq!(s("http://a.test/%7Euser//x%2541?q=%41&flag"), "test,a)/~user/xa?flag&q=a");
        assert_eq!(s("http://a.test/a?b&a=&a"), "test,a)/a?a&a=&b");
        assert_eq!(s("http://a.test/x/?a=1&a"), "test,a)/x?a&a=1");
        assert_eq!(s("http://a.test/caf%C3%A9 x"), "test,a)/caf%c3%a9%20x");
    }

    #[test]
    fn mime_is_the_media_type_alone() {
        assert_eq!(mime("text/html; charset=utf-8").as_deref(), Some("text/html"));
        assert_eq!(mime(" ").as_deref(), None);
    }

    #[test]
    fn a_line_places_the_record_in_its_file() {
        let e = Entry {
            key: "test,a)/ 20261125060102".into(),
            url: "http://a.test/".into(),
            mime: Some("text/html".into()),
            status: 200,
            digest: "sha1:X".into(),
            length: 120,
            start: 300,
        };
        assert_eq!(
            e.line(1000, "warc/layer=0/part-00000.warc.gz"),
            r#"test,a)/ 20261125060102 {"url":"http://a.test/","mime":"text/html","status":"200","digest":"sha1:X","length":"120","offset":"1300","filename":"warc/layer=0/part-00000.warc.gz"}"#
        );
    }
}
