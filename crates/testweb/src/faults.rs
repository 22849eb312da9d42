//! The special hosts that exist when faults are on: `faults.test` (every
//! HTTP-level fault at its own path), `charset.test`, and four small sites
//! that differ only in robots.txt or rate limiting. [`cases`] lists every
//! fault URL with what a correct crawler records for it.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde::{Deserialize, Serialize};
use url::Url;

use super::body::{self, FarmBody};
use super::charset::{self, Decl, Enc};
use super::files;
use super::render::{push_home, sentence, Html};
use super::rng::{tag, Rng};
use super::server::{self, HTML};
use super::site::{HostId, Page, Special, World};
use super::truth::LinkRole;
use super::Core;

/// Pages of each small special-host site (`/p/1` … `/p/3`).
pub const MINI_PAGES: u32 = 3;
/// `ratelimit.test` answers 429 to a request arriving sooner than this after the previous one.
pub const RATE_LIMIT_GAP: Duration = Duration::from_millis(100);
/// Redirect chains longer than this are refused (404).
const MAX_CHAIN: u32 = 50;

/// One fault URL and what a correct crawler records for it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCase {
    pub url: String,
    /// Stable name, e.g. `redirect_loop`.
    pub name: String,
    /// For humans: the expected outcome in the crawler's terms.
    pub expect: String,
    /// UTF-8 text the decoded page must contain (charset cases).
    pub expect_text: Option<String>,
}

/// `faults.test` paths with their case name and expectation.
pub(super) const FAULT_PATHS: &[(&str, &str, &str)] = &[
    ("/ok", "ok", "status=200 (control case)"),
    ("/redirect/chain/3", "redirect_chain", "status=200 redirects=3 final_url=http://faults.test/redirect/chain/0 (307, 303 and 302 hops; absolute and relative Locations)"),
    ("/redirect/chain/15", "redirect_too_many", "error=too_many_redirects (15 hops, more than the usual limit of 10)"),
    ("/redirect/loop/a", "redirect_loop", "error=redirect_loop (/redirect/loop/a -> /redirect/loop/b -> /redirect/loop/a)"),
    ("/status/302", "redirect_no_location", "error=bad_redirect (302 without Location)"),
    ("/status/404", "status_404", "status=404"),
    ("/status/410", "status_410", "status=410"),
    ("/status/500", "status_500", "status=500"),
    ("/503", "status_503", "status=503 retry_after=2 (always 503)"),
    ("/503-once", "status_503_once", "status=200 after one retry: the first request after start (or a stats reset) gets 503 with Retry-After: 1"),
    ("/slow-headers", "slow_headers", "status=200 after slow_ms before the headers; error=timeout if the client timeout is shorter"),
    ("/trickle", "trickle", "status=200, the body drips 10 bytes every 100 ms for slow_ms; error=timeout if the client timeout is shorter"),
    ("/reset", "reset", "error=reset truncated (Content-Length 100000, connection dropped after 4096 bytes)"),
    ("/big", "too_large", "error=too_large truncated (11 MiB + a few bytes with Content-Length; cap 10 MiB)"),
    ("/big-chunked", "too_large_chunked", "error=too_large truncated (the same 11 MiB page, chunked, no Content-Length)"),
    ("/gzip-bomb", "gzip_bomb", "error=too_large truncated (Content-Encoding: gzip, ~1 MB inflating to 1 GiB of zeros)"),
    ("/wrong-type/html-as-binary", "wrong_type_html_as_binary", "content_type=application/octet-stream although the body is an HTML page titled 'Mislabelled HTML'"),
    ("/wrong-type/pdf-as-html", "wrong_type_pdf_as_html", "content_type=text/html although the body is a PDF (%PDF-1.4): no title, no links"),
    ("/wrong-type/png-as-html", "wrong_type_png_as_html", "content_type=text/html although the body is a PNG image (binary, NUL bytes)"),
    ("/malformed", "malformed_html", "status=200, title 'Malformed page', its links still found despite unclosed and misnested tags"),
    ("/no-content-type", "no_content_type", "status=200 content_type=null, the body is HTML titled 'No content type'"),
    ("/empty", "empty_body", "status=200 content_length=0"),
];

/// Every fault case (none when faults are off).
#[must_use]
pub fn cases(world: &World) -> Vec<FaultCase> {
    if !world.faults {
        return Vec::new();
    }
    let case = |url: String, name: &str, expect: &str, text: Option<&str>| FaultCase {
        url,
        name: name.into(),
        expect: expect.into(),
        expect_text: text.map(Into::into),
    };
    let mut out: Vec<FaultCase> =
        FAULT_PATHS.iter().map(|(p, n, e)| case(format!("http://faults.test{p}"), n, e, None)).collect();
    out.push(case(
        "http://faults.test/malformed".into(),
        "malformed_html_text",
        "the text survives the broken markup",
        Some("This text survives the broken markup"),
    ));
    for enc in Enc::ALL {
        for decl in Decl::ALL {
            let declared = match decl {
                Decl::Header => "declared in the Content-Type header",
                Decl::Meta => "declared only in <meta>",
                Decl::None => "declared nowhere (detect it)",
            };
            out.push(case(
                format!("http://charset.test/{}/{}", enc.slug(), decl.slug()),
                &format!("charset_{}_{}", enc.slug(), decl.slug()),
                &format!("charset={} ({declared}) text contains {}", enc.label(), enc.snippet()),
                Some(enc.snippet()),
            ));
        }
    }
    out.push(case(
        format!("http://charset.test{}", charset::MISLABELED),
        // `_header`: its Content-Type header names a charset (the wrong one).
        "charset_mislabeled_header",
        "charset=windows-1252 (the header and <meta> say UTF-8, the bytes are windows-1252: detected when the declared one does not decode), title 'Mislabeled: naïve résumé'",
        Some(charset::MISLABELED_SNIPPET),
    ));
    out.push(case("http://robots500.test/".into(), "robots_500", "error=robots for every URL: robots.txt answers 500 (RFC 9309: disallow all); the server must see only /robots.txt", None));
    out.push(case(
        "http://crawldelay.test/".into(),
        "crawl_delay",
        "Crawl-delay: 1, so the server sees gaps of at least 1000 ms; /hidden/secret is disallowed",
        None,
    ));
    out.push(case("http://ratelimit.test/".into(), "rate_limit_429", "status=429 with Retry-After: 1 for a request arriving < 100 ms after the previous one to the host; a polite crawler never sees it", None));
    out.push(case(
        "http://norobots.test/".into(),
        "robots_404",
        "robots.txt answers 404 (allow all): /p/1../p/3 are fetched",
        None,
    ));
    out
}

/// The HTML pages of a special host that are not faults: its home and,
/// on the small sites, `/p/K`.
#[must_use]
pub fn special_page(s: Special, path: &str) -> Option<Page> {
    if path == "/" {
        return Some(Page::Home);
    }
    let small = matches!(s, Special::Robots500 | Special::CrawlDelay | Special::RateLimit | Special::NoRobots);
    let k = path.strip_prefix("/p/")?.parse::<u32>().ok()?;
    (small && (1..=MINI_PAGES).contains(&k)).then_some(Page::Mini(k))
}

/// Renders a page found by [`special_page`].
#[must_use]
pub fn special_html(world: &World, s: Special, page: Page, record: Option<Url>) -> Html {
    let host = HostId::Special(s);
    match (s, page) {
        (Special::Faults, _) => {
            let links: Vec<(&str, &str)> = FAULT_PATHS.iter().map(|(p, n, _)| (*p, *n)).collect();
            mini_home(host, 0, &links, record)
        }
        (Special::Charset, _) => {
            let paths: Vec<(String, String)> = Enc::ALL
                .iter()
                .flat_map(|e| {
                    Decl::ALL
                        .iter()
                        .map(move |d| (format!("/{}/{}", e.slug(), d.slug()), format!("{} ({})", e.label(), d.slug())))
                })
                .collect();
            let mut links: Vec<(&str, &str)> = paths.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
            links.push((charset::MISLABELED, "windows-1252 declared UTF-8"));
            mini_home(host, 0, &links, record)
        }
        (_, Page::Mini(k)) => mini_page(world, host, k, MINI_PAGES, record),
        (Special::CrawlDelay, _) => mini_home(host, MINI_PAGES, &[("/hidden/secret", "Hidden")], record),
        _ => mini_home(host, MINI_PAGES, &[], record),
    }
}

/// Answers a request to a special host. `gap` is the time since the
/// previous request to the same host (for the rate limiter).
pub async fn respond(core: &Core, s: Special, path: &str, gap: Option<Duration>) -> Response<FarmBody> {
    let world = &core.world;
    if path == "/robots.txt" {
        return match s {
            Special::Robots500 => server::html(StatusCode::INTERNAL_SERVER_ERROR, "<h1>500 Internal Server Error</h1>"),
            Special::NoRobots => server::not_found(),
            Special::CrawlDelay => {
                server::typed(StatusCode::OK, "text/plain", Bytes::from_static(files::ROBOTS_CRAWL_DELAY.as_bytes()))
            }
            _ => server::typed(StatusCode::OK, "text/plain", Bytes::from_static(files::ROBOTS_ALLOW_ALL.as_bytes())),
        };
    }
    if s == Special::RateLimit && gap.is_some_and(|g| g < RATE_LIMIT_GAP) {
        let mut r = server::html(StatusCode::TOO_MANY_REQUESTS, "<h1>429 Too Many Requests</h1><p>Slow down.</p>");
        r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    if let Some(page) = special_page(s, path) {
        return server::html(StatusCode::OK, special_html(world, s, page, None).out);
    }
    match s {
        Special::Faults => fault(core, path).await,
        Special::Charset if path == charset::MISLABELED => {
            let (ctype, bytes) = charset::mislabeled();
            server::typed(StatusCode::OK, ctype, bytes)
        }
        Special::Charset => match charset::parse(path) {
            Some((enc, decl)) => {
                let (ctype, bytes) = charset::page(enc, decl);
                server::typed(StatusCode::OK, ctype, bytes)
            }
            None => server::not_found(),
        },
        Special::CrawlDelay if path == "/hidden/secret" => server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>Hidden</title></head><body><p>Robots may not see this.</p></body></html>"),
        // Every path of robots500.test is disallowed; serve pages anyway so
        // a crawler that ignores the rule is visible in the stats.
        Special::Robots500 => server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>Forbidden fruit</title></head><body><p>Disallowed by a failing robots.txt.</p></body></html>"),
        _ => server::not_found(),
    }
}

async fn fault(core: &Core, path: &str) -> Response<FarmBody> {
    let slow = Duration::from_millis(core.slow_ms);
    if let Some(n) = path.strip_prefix("/redirect/chain/").and_then(|n| n.parse::<u32>().ok()) {
        if n == 0 {
            return server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>End of the chain</title></head><body><p>You followed every redirect.</p></body></html>");
        }
        if n > MAX_CHAIN {
            return server::not_found();
        }
        let status = [
            StatusCode::MOVED_PERMANENTLY,
            StatusCode::FOUND,
            StatusCode::SEE_OTHER,
            StatusCode::TEMPORARY_REDIRECT,
            StatusCode::PERMANENT_REDIRECT,
        ][n as usize % 5];
        // Odd hops send an absolute Location, even hops a relative one.
        let loc =
            if n % 2 == 1 { format!("http://faults.test/redirect/chain/{}", n - 1) } else { format!("{}", n - 1) };
        return server::redirect(status, &loc);
    }
    match path {
        "/ok" => server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>OK</title></head><body><p>Nothing wrong here.</p></body></html>"),
        "/redirect/loop/a" => server::redirect(StatusCode::FOUND, "/redirect/loop/b"),
        "/redirect/loop/b" => server::redirect(StatusCode::FOUND, "http://faults.test/redirect/loop/a"),
        "/503" => {
            let mut r = server::html(StatusCode::SERVICE_UNAVAILABLE, "<h1>503 Service Unavailable</h1>");
            r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("2"));
            r
        }
        "/503-once" => {
            if core.once_503.swap(true, Ordering::SeqCst) {
                server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>Back again</title></head><body><p>Served on the second try.</p></body></html>")
            } else {
                let mut r = server::html(StatusCode::SERVICE_UNAVAILABLE, "<h1>503 Service Unavailable</h1><p>Try again in a second.</p>");
                r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("1"));
                r
            }
        }
        // A server that asks for a five-second pause once (a straggler on
        // real sites: the URL waits, the rest of its layer does not). Not
        // linked from the fault index: tests seed it.
        "/wait-then-ok" => {
            if core.once_wait.swap(true, Ordering::SeqCst) {
                server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>Worth the wait</title></head><body><p>Served after the pause the server asked for.</p></body></html>")
            } else {
                let mut r = server::html(StatusCode::SERVICE_UNAVAILABLE, "<h1>503 Service Unavailable</h1><p>Come back in five seconds.</p>");
                r.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("5"));
                r
            }
        }
        "/slow-headers" => {
            tokio::time::sleep(slow).await;
            server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>Slow headers</title></head><body><p>Worth the wait.</p></body></html>")
        }
        "/trickle" => server::with_body(StatusCode::OK, HTML, body::trickle(slow)),
        "/reset" => {
            let mut r = server::with_body(StatusCode::OK, HTML, body::reset_after(4096));
            r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from_static("100000"));
            r
        }
        "/big" | "/big-chunked" => {
            let (b, len) = body::big(176); // 176 × 64 KiB = 11 MiB
            let mut r = server::with_body(StatusCode::OK, HTML, b);
            if path == "/big" {
                r.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(len));
            }
            r
        }
        "/gzip-bomb" => {
            // Building the bomb compresses 1 GiB once: keep it off the async threads.
            let bomb = tokio::task::spawn_blocking(body::gzip_bomb).await.unwrap_or_else(|_| Bytes::new());
            let mut r = server::typed(StatusCode::OK, HTML, bomb);
            r.headers_mut().insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            r
        }
        "/wrong-type/html-as-binary" => server::typed(StatusCode::OK, "application/octet-stream", Bytes::from_static(b"<!DOCTYPE html>\n<html><head><title>Mislabelled HTML</title></head><body><p>An HTML page served as application/octet-stream.</p><a href=\"/ok\">ok</a></body></html>\n")),
        "/wrong-type/pdf-as-html" => server::typed(StatusCode::OK, HTML, Bytes::from_static(files::PDF.as_bytes())),
        "/wrong-type/png-as-html" => server::typed(StatusCode::OK, HTML, Bytes::from_static(files::PNG)),
        "/malformed" => server::html(StatusCode::OK, MALFORMED),
        "/no-content-type" => {
            let mut r = server::html(StatusCode::OK, "<!DOCTYPE html>\n<html><head><title>No content type</title></head><body><p>Sniff me.</p></body></html>");
            r.headers_mut().remove(CONTENT_TYPE);
            r
        }
        "/empty" => server::typed(StatusCode::OK, HTML, Bytes::new()),
        p => match p.strip_prefix("/status/").and_then(|c| c.parse::<u16>().ok()).and_then(|c| StatusCode::from_u16(c).ok()) {
            Some(code) if code.as_u16() >= 200 => {
                let mut page = String::with_capacity(128);
                let _ = write!(page, "<!DOCTYPE html>\n<html><head><title>{code}</title></head><body><h1>{code}</h1></body></html>\n");
                server::html(code, page)
            }
            _ => server::not_found(),
        },
    }
}

/// Broken markup a lenient parser must survive: unquoted and
/// single-quoted attributes, misnested and unclosed tags, a `<p>` inside a
/// table, bare entities and a comment that never ends.
const MALFORMED: &str = "<html><head><title>Malformed page</title>\n<body><div class=main><p>This text survives the broken markup: browsers have always repaired pages like this one, and a crawler must keep every word of it too <b>bold <i>nested</b> wrong</i>\n\
<a href=/ok>unquoted link</a> <a href='/status/404'>single quoted</a>\n\
<table><tr><td>cell<p>paragraph in a cell</td></div></table>\n\
<p>Unclosed paragraph <span>unclosed span\n\
<a href=\"/redirect/chain/3\"  >link with spaces</a >\n\
</p></p></div></div> &nbsp &amp &copy; &#x41; &#65\n\
<!-- a comment that never ends\n<a href=\"/hidden-by-comment\">hidden</a>\n";

/// Home of a small special-host site: links to its pages `/p/1..=count`.
pub fn mini_home(host: HostId, count: u32, extra: &[(&str, &str)], record: Option<Url>) -> Html {
    let mut h = Html::new(4096, record);
    let name = match host {
        HostId::Special(s) => s.host(),
        _ => "site",
    };
    let _ = write!(
        h.out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{name}</title></head><body><h1>{name}</h1><ul>"
    );
    for k in 1..=count {
        h.push("<li>");
        h.link(
            LinkRole::Content,
            false,
            |s| {
                let _ = write!(s, "/p/{k}");
            },
            "Page",
        );
        h.push("</li>");
    }
    for (href, text) in extra {
        h.push("<li>");
        h.link(LinkRole::Content, false, |s| s.push_str(href), text);
        h.push("</li>");
    }
    h.push("</ul></body></html>\n");
    h
}

/// Page `k` of a small special-host site.
pub fn mini_page(world: &World, host: HostId, k: u32, count: u32, record: Option<Url>) -> Html {
    let mut h = Html::new(2048, record);
    let mut r = Rng::from_parts(world.seed, &[tag::MINI, u64::from(k), host.index(0) as u64]);
    let _ = write!(
        h.out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Page {k}</title></head><body><h1>Page {k}</h1><p>"
    );
    sentence(&mut r, &mut h.out);
    h.push(" ");
    sentence(&mut r, &mut h.out);
    h.push("</p>");
    h.link(LinkRole::Nav, false, |s| push_home(world, host, s), "Home");
    if k < count {
        h.push(" ");
        h.link(
            LinkRole::Pagination,
            false,
            |s| {
                let _ = write!(s, "/p/{}", k + 1);
            },
            "Next",
        );
    }
    h.push("</body></html>\n");
    h
}
