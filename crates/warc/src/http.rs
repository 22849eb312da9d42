//! The HTTP messages inside `request` and `response` records, written from
//! a [`Capture`] in HTTP/1.1 syntax.
//!
//! The crawl keeps a response's body decoded (docs/src/warc.md): the client
//! removes `Content-Encoding` and `Content-Length` when it decodes gzip,
//! deflate or brotli, and the body is kept whole, not in chunks. So the
//! head is rewritten to describe the body the record holds: no
//! `Transfer-Encoding`, and `Content-Length` set to the body's length. A
//! `Content-Encoding` the client did not decode stays, with the body as
//! sent.

use reqwest::header::{HeaderMap, CONTENT_LENGTH, TRANSFER_ENCODING};

use crate::fetch::Capture;

/// The request line and headers of `c`, ending with the empty line.
#[must_use]
pub fn request_head(c: &Capture) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(c.url.path().as_bytes());
    if let Some(q) = c.url.query() {
        out.push(b'?');
        out.extend_from_slice(q.as_bytes());
    }
    out.extend_from_slice(b" ");
    out.extend_from_slice(version(c).as_bytes());
    out.extend_from_slice(b"\r\n");
    push_headers(&mut out, &c.request, |_| true);
    out.extend_from_slice(b"\r\n");
    out
}

/// The status line and headers of `c`'s response for a record holding
/// `body_len` bytes of body, ending with the empty line.
#[must_use]
pub fn response_head(c: &Capture, body_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    let status = reqwest::StatusCode::from_u16(c.status).ok();
    let reason = c.reason.as_deref().or_else(|| status.and_then(|s| s.canonical_reason())).unwrap_or("");
    out.extend_from_slice(format!("{} {} {reason}\r\n", version(c), c.status).as_bytes());
    push_headers(&mut out, &c.headers, |name| name != TRANSFER_ENCODING && name != CONTENT_LENGTH);
    // A 304 has no body and says nothing of its length.
    if c.status != 304 || body_len > 0 {
        out.extend_from_slice(format!("content-length: {body_len}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// The version written on the first line: HTTP/1.0 as such, anything else
/// (HTTP/2 and 3 too, whose messages have no text form) as HTTP/1.1, the
/// syntax the record uses.
fn version(c: &Capture) -> &'static str {
    if c.version == reqwest::Version::HTTP_10 {
        "HTTP/1.0"
    } else {
        "HTTP/1.1"
    }
}

fn push_headers(out: &mut Vec<u8>, headers: &HeaderMap, keep: impl Fn(&reqwest::header::HeaderName) -> bool) {
    for (name, value) in headers.iter().filter(|(n, _)| keep(n)) {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn capture(status: u16) -> Capture {
        let url = url::Url::parse("http://a.test:8080/p/q?x=1").expect("url");
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("text/html"));
        headers.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        headers.insert("content-length", HeaderValue::from_static("999"));
        headers.append("set-cookie", HeaderValue::from_static("a=1"));
        headers.append("set-cookie", HeaderValue::from_static("b=2"));
        Capture {
            request: crate::fetch::capture::request_headers("ua/1", &url, None),
            url,
            sent_at: std::time::SystemTime::UNIX_EPOCH,
            status,
            version: reqwest::Version::HTTP_11,
            reason: None,
            headers,
            remote_ip: None,
            served_body: None,
        }
    }

    #[test]
    fn the_request_line_has_the_path_and_query() {
        let head = String::from_utf8(request_head(&capture(200))).expect("utf8");
        assert_eq!(
            head,
            "GET /p/q?x=1 HTTP/1.1\r\nhost: a.test:8080\r\nuser-agent: ua/1\r\naccept: */*\r\naccept-encoding: gzip,deflate,br\r\n\r\n"
        );
    }

    #[test]
    fn the_response_head_describes_the_body_kept() {
        let head = String::from_utf8(response_head(&capture(200), 12)).expect("utf8");
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\nset-cookie: a=1\r\nset-cookie: b=2\r\ncontent-length: 12\r\n\r\n"
        );
        let mut c = capture(299);
        c.reason = Some("Fine".into());
        c.version = reqwest::Version::HTTP_10;
        assert!(String::from_utf8(response_head(&c, 0)).expect("utf8").starts_with("HTTP/1.0 299 Fine\r\n"));
        let head = String::from_utf8(response_head(&capture(304), 0)).expect("utf8");
        assert!(head.starts_with("HTTP/1.1 304 Not Modified\r\n") && !head.contains("content-length"), "{head}");
    }
}
