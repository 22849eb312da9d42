//! `layercrawl studio`: the rule editor, a local web page for writing a
//! rules file by pointing at a page's elements (docs/src/studio.md).
//!
//! A small HTTP/1.1 server on 127.0.0.1 (a random port unless told) serves
//! one self-contained page (`app.html`, inside the binary: no CDN) and a
//! JSON API. Nothing is served to other hosts: the listener is loopback
//! only, every request must carry the unguessable token printed at start
//! (query `token=` or header `X-Studio-Token`), and the Host header must
//! name the listener itself (a DNS-rebinding page cannot use it).
//!
//! Sample pages come from a crawl's stored bodies (`--data`) or are fetched
//! live through the crawler's own politeness (robots.txt obeyed, one
//! request per host per `--delay`, `Crawl-delay` honoured). A page is shown
//! in a sandboxed frame without scripts (the iframe's `sandbox` has no
//! `allow-scripts`, and the frame's document is served with a CSP that
//! forbids scripts), so a page's own code never runs in the editor; the
//! editor's code reaches into the frame's DOM to pick elements.

use futures::future::LocalBoxFuture;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, HOST};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value as Json};
use tokio::net::TcpListener;
use url::Url;

use crate::fetch::robots::{origin_of, RobotsRules};
use crate::fetch::Fetcher;
use crate::parse::ParseConfig;
use crate::rules::{parse_rules, show, Rules, RulesError, Source};

mod edit;
mod pages;
mod safe;

use pages::{live_page, stored_page, stored_urls};

/// The editor's page: HTML, CSS and script in one file.
const APP: &str = include_str!("app.html");

/// Largest request body the API reads (a rules file and a few URLs).
const MAX_REQUEST: usize = 4 << 20;

/// `layercrawl studio` settings.
#[derive(Clone, Debug, clap::Args)]
pub struct StudioArgs {
    /// The rules file to edit (created on save if it does not exist).
    #[arg(long, value_name = "FILE")]
    pub rules: PathBuf,
    /// A crawl whose stored pages serve as samples.
    #[arg(long, value_name = "DIR|URL")]
    pub data: Option<String>,
    /// Sample pages a rule is tried on at once.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub samples: usize,
    /// Port on 127.0.0.1 (0: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// How live pages are fetched: `run`'s options (robots.txt
    /// `Crawl-delay` raises `--delay`).
    #[command(flatten)]
    pub politeness: crate::config::Politeness,
    #[command(flatten)]
    pub addresses: crate::config::Addresses,
    /// Print the editor's address as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A page the editor has seen: its body, kept for the session.
struct Page {
    /// The frame's name: random, so that the frame's address is a
    /// capability of its own and never carries the editor's token.
    nonce: String,
    url: Url,
    content_type: Option<String>,
    body: Bytes,
    source: &'static str,
}

struct Studio {
    file: PathBuf,
    token: String,
    /// `127.0.0.1:PORT`: the only Host header accepted.
    host: String,
    samples: usize,
    parse: ParseConfig,
    data: Option<crate::store::Store>,
    data_name: Option<String>,
    /// URLs of the crawl's stored pages (final URLs, in file order).
    stored: Vec<String>,
    /// The `doc` file holding each of them.
    stored_in: HashMap<String, String>,
    pages: Mutex<Vec<Arc<Page>>>,
    fetcher: Fetcher,
    agent: String,
    delay: Duration,
    robots: tokio::sync::Mutex<HashMap<String, Arc<RobotsRules>>>,
    /// Per host: when its next live request may start.
    next: tokio::sync::Mutex<HashMap<String, tokio::time::Instant>>,
}

/// Why the editor cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StudioError {
    #[error("{0}")]
    Setup(String),
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Listen { port: u16, source: std::io::Error },
}

/// Runs the editor until the process is stopped; `ready` gets the address
/// to open (with its token) once it listens.
///
/// # Errors
/// A data location that cannot be read, a port in use.
pub fn serve<'a>(args: StudioArgs, ready: Box<dyn FnOnce(&str) + 'a>) -> LocalBoxFuture<'a, Result<(), StudioError>> {
    // Boxed here, so a caller in another crate (the binary) does not compile
    // this whole async call tree again (Contributing, "Builds").
    Box::pin(listen(args, ready))
}

async fn listen(args: StudioArgs, ready: Box<dyn FnOnce(&str) + '_>) -> Result<(), StudioError> {
    let cfg = crate::config::single_pages(&args.politeness, &args.addresses);
    let fetcher = Fetcher::new(&cfg).map_err(|e| StudioError::Setup(format!("cannot build the HTTP client: {e}")))?;
    let (data, stored) = match &args.data {
        Some(d) => {
            let store = crate::store::Store::open(d).map_err(|e| StudioError::Setup(format!("--data {d}: {e}")))?;
            let stored = stored_urls(&store).await.map_err(|e| StudioError::Setup(format!("--data {d}: {e}")))?;
            (Some(store), stored)
        }
        None => (None, Vec::new()),
    };
    let stored_in: HashMap<String, String> = stored.iter().cloned().collect();
    let stored: Vec<String> = stored.into_iter().map(|(u, _)| u).collect();
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|source| StudioError::Listen { port: args.port, source })?;
    let addr: SocketAddr = listener.local_addr().map_err(|source| StudioError::Listen { port: args.port, source })?;
    let token = token().map_err(|e| StudioError::Setup(format!("no random token: {e}")))?;
    let studio = Arc::new(Studio {
        file: args.rules.clone(),
        host: addr.to_string(),
        token,
        samples: args.samples.max(1),
        parse: ParseConfig::default(),
        data,
        data_name: args.data.clone(),
        stored,
        stored_in,
        pages: Mutex::new(Vec::new()),
        fetcher,
        agent: crate::fetch::robots::product_token(&cfg.politeness.user_agent),
        delay: cfg.politeness.min_delay(),
        robots: tokio::sync::Mutex::default(),
        next: tokio::sync::Mutex::default(),
    });
    ready(&format!("http://{}/?token={}", studio.host, studio.token));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        let studio = Arc::clone(&studio);
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let studio = Arc::clone(&studio);
                async move { Ok::<_, Infallible>(handle(&studio, req).await) }
            });
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
        });
    }
}

/// 128 random bits, hex: the token that must come with every request.
fn token() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

type Reply = Response<Full<Bytes>>;

fn reply(status: StatusCode, ctype: &'static str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // The token is in the frame's address: no page the frame loads from
    // (its images, its styles) is told where it came from, and no other
    // site may frame the editor.
    r.headers_mut().insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r.headers_mut().insert("x-frame-options", HeaderValue::from_static("SAMEORIGIN"));
    r.headers_mut().insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    r
}

fn json_reply(status: StatusCode, value: &Json) -> Reply {
    reply(status, "application/json", serde_json::to_vec(value).unwrap_or_default())
}

fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|kv| kv.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

async fn handle(s: &Studio, req: Request<Incoming>) -> Reply {
    // Only this listener's own address: a page elsewhere that rebinds a
    // name of its own to 127.0.0.1 sends its own name here.
    let host = req.headers().get(HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if host != s.host {
        return reply(StatusCode::MISDIRECTED_REQUEST, "text/plain", "wrong Host\n");
    }
    let path = req.uri().path().to_string();
    if req.method() == Method::GET && path.starts_with("/frame/") {
        return frame(s, &path["/frame/".len()..]);
    }
    let token = req
        .headers()
        .get("x-studio-token")
        .and_then(|h| h.to_str().ok())
        .or_else(|| query_param(req.uri().query(), "token"));
    if !token.is_some_and(|t| safe::same_token(t.as_bytes(), s.token.as_bytes())) {
        return reply(StatusCode::FORBIDDEN, "text/plain", "this editor needs the token printed when it started\n");
    }
    let method = req.method().clone();
    if method == Method::POST {
        // Only the editor's own page: a JSON body (a cross-site form or
        // `text/plain` request cannot send one without a preflight, which
        // this server does not answer) from this origin.
        let json = req
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        let origin_ok =
            req.headers().get("origin").and_then(|v| v.to_str().ok()).is_none_or(|o| o == format!("http://{}", s.host));
        let site_ok = req
            .headers()
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_none_or(|v| v == "same-origin" || v == "none");
        if !(json && origin_ok && site_ok) {
            return reply(
                StatusCode::FORBIDDEN,
                "text/plain",
                "the editor's API takes JSON from the editor's own page only\n",
            );
        }
    }
    if method == Method::GET && path == "/" {
        let mut r = reply(StatusCode::OK, "text/html; charset=utf-8", APP);
        r.headers_mut().insert(
            "content-security-policy",
            HeaderValue::from_static("default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:; frame-src 'self'; frame-ancestors 'none'"),
        );
        return r;
    }
    if method == Method::GET && path == "/api/state" {
        return json_reply(StatusCode::OK, &state(s));
    }
    if method != Method::POST || !path.starts_with("/api/") {
        return reply(StatusCode::NOT_FOUND, "text/plain", "not found\n");
    }
    let limited = http_body_util::Limited::new(req.into_body(), MAX_REQUEST);
    let body = match limited.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return json_reply(StatusCode::PAYLOAD_TOO_LARGE, &json!({"error": "request too large or cut"})),
    };
    let input: Json = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return json_reply(StatusCode::BAD_REQUEST, &json!({"error": format!("not JSON: {e}")})),
    };
    let text = input["text"].as_str().unwrap_or_default();
    match path.as_str() {
        "/api/check" => json_reply(StatusCode::OK, &check_json(&s.file, text)),
        "/api/open" => {
            let url = input["url"].as_str().unwrap_or_default();
            json_reply(StatusCode::OK, &open(s, url, input["text"].as_str()).await)
        }
        "/api/eval" => {
            let urls: Vec<String> = input["urls"]
                .as_array()
                .map(|a| a.iter().filter_map(|u| u.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            json_reply(StatusCode::OK, &eval(s, text, &urls).await)
        }
        "/api/add_field" => {
            let rule = input["rule"].as_str().unwrap_or_default();
            match edit::add_field(text, rule, &input["field"]) {
                Ok(new) => json_reply(StatusCode::OK, &json!({"text": new, "check": check_json(&s.file, &new)})),
                // 200 with the reason, as `/api/open` does: the page shows it.
                Err(e) => json_reply(StatusCode::OK, &json!({"error": e})),
            }
        }
        "/api/samples" => json_reply(StatusCode::OK, &json!({"urls": samples(s, text, input["rule"].as_str())})),
        "/api/diff" => {
            let on_disk = std::fs::read_to_string(&s.file).unwrap_or_default();
            let diff = similar::TextDiff::from_lines(&on_disk, text)
                .unified_diff()
                .context_radius(3)
                .header(&s.file.display().to_string(), &s.file.display().to_string())
                .to_string();
            json_reply(StatusCode::OK, &json!({"diff": diff, "changed": on_disk != text}))
        }
        "/api/save" => save(s, text),
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n"),
    }
}

/// The file, its check, and the stored samples.
fn state(s: &Studio) -> Json {
    let text = std::fs::read_to_string(&s.file).unwrap_or_default();
    json!({
        "file": s.file.display().to_string(),
        "text": text,
        "check": check_json(&s.file, &text),
        "samples": s.stored.iter().take(500).collect::<Vec<_>>(),
        "data": s.data_name,
    })
}

fn compile(file: &std::path::Path, text: &str) -> Result<Rules, RulesError> {
    parse_rules(&file.display().to_string(), text)
}

fn problems_json(e: &RulesError) -> Json {
    json!({"ok": false, "problems": e.problems.iter().map(|p| json!({"line": p.line, "column": p.column, "message": p.message})).collect::<Vec<_>>()})
}

/// The rules of `text` as the editor shows them, or their problems.
fn check_json(file: &std::path::Path, text: &str) -> Json {
    match compile(file, text) {
        Err(e) => problems_json(&e),
        Ok(rules) => {
            let list: Vec<Json> = rules
                .list
                .iter()
                .map(|r| {
                    let fields: Vec<Json> = r
                        .fields
                        .iter()
                        .map(|f| {
                            let source = match &f.source {
                                Source::Css(_) => "css",
                                Source::XPath(_) => "xpath",
                                Source::JsonLd(_) => "jsonld",
                                Source::Regex(_) => "regex",
                            };
                            json!({"name": f.name, "type": f.kind.name(), "multiple": f.multiple, "required": f.required, "source": source, "selector": f.selector, "attr": f.attr})
                        })
                        .collect();
                    json!({
                        "name": r.name,
                        "role": r.role.as_str(),
                        "urls": r.urls.iter().map(|p| p.text.clone()).collect::<Vec<_>>(),
                        "each": r.each_text,
                        "fields": fields,
                        "links": r.links.is_some(),
                    })
                })
                .collect();
            json!({"ok": true, "rules": list})
        }
    }
}

/// Opens `url`: stored by the crawl, seen already, or fetched now; names
/// the rule of `text` (the editor's, else the file's) that matches it.
async fn open(s: &Studio, url: &str, text: Option<&str>) -> Json {
    let Ok(parsed) = Url::parse(url.trim()) else {
        return json!({"error": format!("`{url}` is not a URL (write it whole, with http:// or https://)")});
    };
    match page(s, &parsed).await {
        Ok((_, p)) => {
            let text = text.map_or_else(|| std::fs::read_to_string(&s.file).unwrap_or_default(), str::to_string);
            let rule =
                compile(&s.file, &text).ok().and_then(|r| r.matching(p.url.as_str()).map(|(_, r)| r.name.clone()));
            json!({"url": p.url.as_str(), "source": p.source, "rule": rule, "frame": format!("/frame/{}", p.nonce), "error": null})
        }
        Err(e) => json!({"error": e}),
    }
}

/// The page at `url` and its id, from the session, the crawl or the web.
async fn page(s: &Studio, url: &Url) -> Result<(usize, Arc<Page>), String> {
    if let Some(found) = s.pages_find(url.as_str()) {
        return Ok(found);
    }
    let p = match stored_page(s, url).await? {
        Some(p) => p,
        None => live_page(s, url).await?,
    };
    let p = Arc::new(p);
    let mut pages = s.pages.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    pages.push(Arc::clone(&p));
    Ok((pages.len() - 1, p))
}

impl Studio {
    fn pages_find(&self, url: &str) -> Option<(usize, Arc<Page>)> {
        let pages = self.pages.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pages.iter().enumerate().find(|(_, p)| p.url.as_str() == url).map(|(i, p)| (i, Arc::clone(p)))
    }
}

/// The page for the sandboxed frame: the page's HTML with a `<base>` so its
/// relative links and images resolve, served with a policy that forbids
/// every script, form and frame.
fn frame(s: &Studio, nonce: &str) -> Reply {
    let page = {
        let pages = s.pages.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The nonce is a capability too: compared as the token is.
        pages.iter().find(|p| safe::same_token(nonce.as_bytes(), p.nonce.as_bytes())).cloned()
    };
    let Some(p) = page else { return reply(StatusCode::NOT_FOUND, "text/plain", "no such page\n") };
    let parsed = crate::extract::ParsedPage::parse(&p.body, p.content_type.as_deref(), &p.url, &s.parse);
    let html = edit::framed_html(parsed.html(), &p.url);
    let origin = origin_of(&p.url);
    let csp = format!(
        "default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; form-action 'none'; frame-ancestors 'self'; base-uri {origin}; img-src {origin} data:; style-src {origin} 'unsafe-inline'; font-src {origin}"
    );
    // No page without its policy: an origin that cannot be written in a
    // header is refused, never served without one.
    let Ok(policy) = HeaderValue::from_str(&csp) else {
        return reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            "this page's origin cannot be put in a policy\n",
        );
    };
    let mut r = reply(StatusCode::OK, "text/html; charset=utf-8", html);
    r.headers_mut().insert("content-security-policy", policy);
    r
}

/// Applies `text` to each page of `urls` (opened as needed).
async fn eval(s: &Studio, text: &str, urls: &[String]) -> Json {
    let rules = match compile(&s.file, text) {
        Ok(r) => r,
        Err(e) => return problems_json(&e),
    };
    let mut pages = Vec::new();
    for u in urls.iter().take(s.samples.max(urls.len().min(50))) {
        let Ok(url) = Url::parse(u) else {
            pages.push(json!({"url": u, "rule": null, "items": [], "links": [], "error": "not a URL"}));
            continue;
        };
        match page(s, &url).await {
            Err(e) => pages.push(json!({"url": u, "rule": null, "items": [], "links": [], "error": e})),
            Ok((_, p)) => match rules.apply(&p.url, p.content_type.as_deref(), &p.body, 0, &s.parse) {
                None => {
                    pages.push(json!({"url": p.url.as_str(), "rule": null, "items": [], "links": [], "error": null}))
                }
                Some(a) => pages.push(json!({
                    "url": p.url.as_str(),
                    "rule": a.rule.name,
                    "items": show::items_json(&a),
                    "links": a.links.iter().map(|(u, f)| json!({"url": u, "followed": f})).collect::<Vec<_>>(),
                    "error": null,
                })),
            },
        }
    }
    json!({"ok": true, "pages": pages})
}

/// Pages to try `rule` on: those opened in this session (latest first),
/// then stored ones, that it matches.
fn samples(s: &Studio, text: &str, rule: Option<&str>) -> Vec<String> {
    let Ok(rules) = compile(&s.file, text) else { return Vec::new() };
    let wanted = |u: &str| rules.matching(u).is_some_and(|(_, r)| rule.is_none_or(|name| r.name == name));
    let opened: Vec<String> = {
        let pages = s.pages.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pages.iter().rev().map(|p| p.url.to_string()).collect()
    };
    let mut out: Vec<String> = Vec::new();
    for u in opened.iter().chain(&s.stored) {
        if out.len() >= s.samples {
            break;
        }
        if wanted(u) && !out.contains(u) {
            out.push(u.clone());
        }
    }
    out
}

/// Writes `text` to the rules file, whole or not at all, if it has no problem.
fn save(s: &Studio, text: &str) -> Reply {
    if let Err(e) = compile(&s.file, text) {
        return json_reply(StatusCode::BAD_REQUEST, &problems_json(&e));
    }
    match safe::write_rules(&s.file, text) {
        Ok(()) => json_reply(StatusCode::OK, &json!({"ok": true, "file": s.file.display().to_string()})),
        Err(e) => json_reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            &json!({"ok": false, "problems": [{"line": 0, "column": 0, "message": format!("cannot write {}: {e}", s.file.display())}]}),
        ),
    }
}
