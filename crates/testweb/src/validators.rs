//! Validators and conditional requests, as a static file server has them:
//! every 200 response with a whole body gets an `ETag` (a hash of the
//! body) and a `Last-Modified` date, and a request whose `If-None-Match`
//! names the current ETag (or, without one, whose `If-Modified-Since` is
//! not before the date) is answered 304 Not Modified, without a body
//! (RFC 9110 §13).
//!
//! **Editions** make a night pass: edition N changes one regular page in
//! ten (a paragraph naming the edition, so its ETag changes) and dates
//! those pages N days later; the other pages stay byte for byte the same.

use hyper::header::{HeaderMap, HeaderValue, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use hyper::{Response, StatusCode};

use crate::body::FarmBody;

/// The date every page was last modified at edition 0.
const BASE_SECS: u64 = 1_793_491_200; // Sun, 01 Nov 2026 00:00:00 GMT

/// Whether edition `edition` changes the page at `path` (one in ten).
#[must_use]
pub fn edited(edition: u32, path: &str) -> bool {
    edition > 0 && xxhash_rust::xxh3::xxh3_64(path.as_bytes()) % 10 == 0
}

/// The page as edition `edition` has it: a paragraph before `</body>`.
#[must_use]
pub fn edit(mut page: String, edition: u32) -> String {
    let at = page.rfind("</body>").unwrap_or(page.len());
    page.insert_str(at, &format!("<p>Edition {edition} of this page.</p>"));
    page
}

/// Adds the validators to a 200 response with a whole body, and turns it
/// into a 304 when the request's conditions say the client has it.
/// `changed_in` is the edition that last changed the page (0: never).
pub fn apply(request: &HeaderMap, resp: &mut Response<FarmBody>, changed_in: u32) {
    if resp.status() != StatusCode::OK {
        return;
    }
    let Some(body) = resp.body().whole() else { return };
    let etag = format!("\"{:016x}\"", xxhash_rust::xxh3::xxh3_64(body));
    let modified = BASE_SECS + u64::from(changed_in) * 86_400;
    let date = http_date(modified);
    let fresh = match request.get(IF_NONE_MATCH).and_then(|v| v.to_str().ok()) {
        Some(list) => list.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == etag),
        None => request
            .get(IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_http_date)
            .is_some_and(|since| since >= modified),
    };
    if fresh {
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        *resp.body_mut() = FarmBody::full(bytes::Bytes::new());
        resp.headers_mut().remove(hyper::header::CONTENT_TYPE);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        resp.headers_mut().insert(ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&date) {
        resp.headers_mut().insert(LAST_MODIFIED, v);
    }
}

const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// Seconds since the epoch as an IMF-fixdate (`Sun, 01 Nov 2026 00:00:00 GMT`).
#[must_use]
pub fn http_date(secs: u64) -> String {
    let days = secs / 86_400;
    let (y, m, d) = civil(i64::try_from(days).unwrap_or(0));
    let rem = secs % 86_400;
    format!(
        "{}, {d:02} {} {y} {:02}:{:02}:{:02} GMT",
        DAYS[usize::try_from(days % 7).unwrap_or(0)],
        MONTHS[usize::try_from(m - 1).unwrap_or(0)],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// An IMF-fixdate back to seconds since the epoch.
#[must_use]
pub fn parse_http_date(s: &str) -> Option<u64> {
    let mut it = s.split_ascii_whitespace().skip(1);
    let d: i64 = it.next()?.parse().ok()?;
    let month = it.next()?;
    let m = i64::try_from(MONTHS.iter().position(|&x| x == month)?).ok()? + 1;
    let y: i64 = it.next()?.parse().ok()?;
    let hms: Vec<u64> = it.next()?.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [h, mi, se] = hms[..] else { return None };
    let days = u64::try_from(days_from_civil(y, m, d)).ok()?;
    Some(days * 86_400 + h * 3600 + mi * 60 + se)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// (year, month, day) to days since 1970-01-01.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(http_date(BASE_SECS), "Sun, 01 Nov 2026 00:00:00 GMT");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        for s in [0, BASE_SECS, BASE_SECS + 86_400 * 3 + 3723, 951_782_400] {
            assert_eq!(parse_http_date(&http_date(s)), Some(s));
        }
        assert_eq!(parse_http_date("yesterday"), None);
    }

    fn page(body: &'static str) -> Response<FarmBody> {
        Response::new(FarmBody::full(bytes::Bytes::from_static(body.as_bytes())))
    }

    #[test]
    fn a_matching_etag_or_a_recent_date_gets_a_304_without_body() {
        let mut first = page("<p>hello</p>");
        apply(&HeaderMap::new(), &mut first, 0);
        assert_eq!(first.status(), StatusCode::OK);
        let etag = first.headers()[ETAG].clone();
        let date = first.headers()[LAST_MODIFIED].clone();
        let ask = |name, v: &HeaderValue, body| {
            let mut h = HeaderMap::new();
            h.insert(name, v.clone());
            let mut r = page(body);
            apply(&h, &mut r, 0);
            r
        };
        let same = ask(IF_NONE_MATCH, &etag, "<p>hello</p>");
        assert_eq!(same.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(same.body().whole().map(<[u8]>::len), Some(0));
        assert_eq!(same.headers()[ETAG], etag, "a 304 names the current ETag");
        assert_eq!(ask(IF_NONE_MATCH, &etag, "<p>changed</p>").status(), StatusCode::OK);
        assert_eq!(ask(IF_MODIFIED_SINCE, &date, "<p>hello</p>").status(), StatusCode::NOT_MODIFIED);
        let weak = HeaderValue::from_str(&format!("W/{}", etag.to_str().unwrap())).unwrap();
        assert_eq!(ask(IF_NONE_MATCH, &weak, "<p>hello</p>").status(), StatusCode::NOT_MODIFIED);
        let mut later = page("<p>hello</p>");
        let mut h = HeaderMap::new();
        h.insert(IF_MODIFIED_SINCE, date);
        apply(&h, &mut later, 2);
        assert_eq!(later.status(), StatusCode::OK, "changed two days after the date asked about");
    }

    #[test]
    fn an_edition_changes_one_page_in_ten() {
        let paths: Vec<String> = (0..1000).map(|i| format!("/p/{i}")).collect();
        let n = paths.iter().filter(|p| edited(1, p)).count();
        assert!((60..140).contains(&n), "{n} of 1000");
        assert_eq!(paths.iter().filter(|p| edited(0, p)).count(), 0);
        assert!(edit("<html><body><p>x</p></body></html>".into(), 3).contains("Edition 3"));
    }
}
