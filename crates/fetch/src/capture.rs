//! What an archive record needs of one exchange beyond [`Response`]: the
//! request's headers as sent, the response's HTTP version, reason phrase
//! and every header, the address connected to (docs/src/warc.md).
//!
//! Kept only when [`FetchConfig::capture`](super::FetchConfig) is on
//! (`--warc`), so a crawl that writes no archive carries none of it. With
//! it on, the request's headers are set on the request explicitly (the
//! client's defaults would otherwise be added out of sight), so the record
//! holds what was sent; the response's headers are moved out of the
//! client's response, not copied.

use std::net::IpAddr;
use std::time::SystemTime;

use bytes::Bytes;
use reqwest::header::{
    HeaderMap, HeaderValue, ACCEPT, ACCEPT_ENCODING, HOST, IF_MODIFIED_SINCE, IF_NONE_MATCH, USER_AGENT,
};
use url::Url;

use super::exchange::Validators;

/// What the client accepts: the value its decompression layer would add,
/// set explicitly so it is known (gzip, deflate and brotli are decoded).
const ACCEPT_ENCODINGS: &str = "gzip,deflate,br";

/// One request and its response as they crossed the wire.
#[derive(Clone, Debug)]
pub struct Capture {
    /// The URL requested (a redirect hop's own URL, not the chain's first).
    pub url: Url,
    /// When the request was sent.
    pub sent_at: SystemTime,
    /// The request's headers, `Host` first.
    pub request: HeaderMap,
    /// The status as received (a replayed 304 keeps 304 here while the
    /// page's status becomes last night's).
    pub status: u16,
    pub version: reqwest::Version,
    /// The reason phrase when the server sent one other than the status's
    /// standard phrase.
    pub reason: Option<String>,
    /// Every response header as the client gave it: names lower-cased, and
    /// `Content-Encoding` and `Content-Length` already removed when the
    /// client decoded the body.
    pub headers: HeaderMap,
    /// The address the response came from; none through a proxy.
    pub remote_ip: Option<IpAddr>,
    /// The body as the server sent it (decoded), when the response's body
    /// is something else: the DOM after rendering (`--render`).
    pub served_body: Option<Bytes>,
}

/// The headers a captured request is sent with: `Host` as the client
/// derives it from the URL (first, as on the wire; the client adds it
/// itself), then the user agent, `Accept`, `Accept-Encoding` and the
/// conditional headers, which the caller sets on the request.
#[must_use]
pub fn request_headers(user_agent: &str, url: &Url, validators: Option<&Validators>) -> HeaderMap {
    let mut h = HeaderMap::with_capacity(6);
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_string(),
    };
    let mut put = |name, value: &str| {
        if let Ok(v) = HeaderValue::from_str(value) {
            h.insert(name, v);
        }
    };
    put(HOST, &host);
    put(USER_AGENT, user_agent);
    put(ACCEPT, "*/*");
    put(ACCEPT_ENCODING, ACCEPT_ENCODINGS);
    if let Some(v) = validators {
        if let Some(etag) = &v.etag {
            put(IF_NONE_MATCH, etag);
        }
        if let Some(date) = &v.last_modified {
            put(IF_MODIFIED_SINCE, date);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_header_names_a_port_only_when_the_url_does() {
        let v = Validators { etag: Some("\"abc\"".into()), last_modified: None };
        let h = request_headers("layercrawl/1", &Url::parse("http://a.test:8080/x?y").expect("url"), Some(&v));
        let names: Vec<&str> = h.keys().map(reqwest::header::HeaderName::as_str).collect();
        assert_eq!(names, ["host", "user-agent", "accept", "accept-encoding", "if-none-match"]);
        assert_eq!(h[HOST], "a.test:8080");
        assert_eq!(h[IF_NONE_MATCH], "\"abc\"");
        let h = request_headers("ua", &Url::parse("https://b.test/").expect("url"), None);
        assert_eq!(h[HOST], "b.test");
        assert_eq!(h.len(), 4);
    }
}
