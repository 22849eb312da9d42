//! The HTTP side: an accept loop, one hyper HTTP/1.1 keep-alive connection
//! task per socket, and the request handler that picks the host from the
//! Host header, counts the request for the politeness audit, waits the
//! injected latency and answers from the generated web.

use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, HOST, LOCATION};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::body::FarmBody;
use super::rng::{self, tag};
use super::site::{self, HostId, Route, Special};
use super::stats::Slot;
use super::{faults, files, pages, shop, Core};
use super::{sitemaps, validators};

pub const HTML: &str = "text/html; charset=utf-8";

/// A response with a body and a Content-Type.
pub fn with_body(status: StatusCode, ctype: &'static str, body: FarmBody) -> Response<FarmBody> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

pub fn typed(status: StatusCode, ctype: &'static str, body: Bytes) -> Response<FarmBody> {
    with_body(status, ctype, FarmBody::full(body))
}

pub fn html(status: StatusCode, body: impl Into<Bytes>) -> Response<FarmBody> {
    typed(status, HTML, body.into())
}

pub fn not_found() -> Response<FarmBody> {
    html(StatusCode::NOT_FOUND, Bytes::from_static(files::NOT_FOUND_HTML.as_bytes()))
}

pub fn redirect(status: StatusCode, location: &str) -> Response<FarmBody> {
    let mut r = html(
        status,
        Bytes::from_static(
            b"<!DOCTYPE html>\n<html><head><title>Moved</title></head><body><p>Moved.</p></body></html>\n",
        ),
    );
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

fn json(status: StatusCode, value: &impl serde::Serialize) -> Response<FarmBody> {
    match serde_json::to_vec_pretty(value) {
        Ok(v) => typed(status, "application/json", Bytes::from(v)),
        Err(e) => typed(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", Bytes::from(e.to_string())),
    }
}

/// Accepts connections until `stop` changes; each connection stops then too.
pub async fn accept_loop(listener: TcpListener, core: Arc<Core>, mut stop: watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                tracing::warn!("test web: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let core = Arc::clone(&core);
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| handle(Arc::clone(&core), req));
            let conn = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = stop.changed() => {}
            }
        });
    }
}

pub(crate) async fn handle(core: Arc<Core>, req: Request<Incoming>) -> Result<Response<FarmBody>, Infallible> {
    let raw_path = req.uri().path();
    if raw_path.starts_with("/__farm/") || raw_path == "/__farm" {
        return Ok(farm_endpoint(&core, raw_path, req.uri().query()).await);
    }
    let host_raw = req.headers().get(HOST).and_then(|v| v.to_str().ok()).or_else(|| req.uri().host()).unwrap_or("");
    let host = core.world.parse_host(host_raw);
    let decoded = site::decode_unreserved(raw_path);
    let path = decoded.as_deref().unwrap_or(raw_path);
    let query = req.uri().query();
    let pq = req.uri().path_and_query().map_or(raw_path, |pq| pq.as_str());
    let slot = match host {
        Some(h) => Slot::Known(h.index(core.world.sites)),
        None => {
            let name = host_raw
                .rsplit_once(':')
                .filter(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
                .map_or(host_raw, |(h, _)| h);
            Slot::Other(name.to_ascii_lowercase().into_boxed_str())
        }
    };
    let robots = path == "/robots.txt";
    let disallowed = host.is_some_and(|h| core.world.disallows(h, path));
    let arrival = core.stats.arrive(slot.clone(), pq, robots, disallowed);
    let (lo, hi) = core.latency_ms;
    if hi > 0 {
        let n = core.requests.fetch_add(1, Ordering::Relaxed);
        let mut r = rng::Rng::from_parts(core.world.seed, &[tag::LATENCY, n]);
        tokio::time::sleep(Duration::from_millis(u64::from(r.range(lo, hi)))).await;
    }
    let edition = core.edition.load(Ordering::SeqCst);
    let named = |name: &str| matches!(&slot, Slot::Other(n) if &**n == name);
    let trouble = core.trouble.as_ref().filter(|_| named(super::trouble::HOST));
    let limited = core.limited.as_ref().filter(|_| named(super::limited::HOST));
    let mut resp = match (trouble, limited) {
        (Some(t), _) => t.respond(path),
        (None, Some(l)) => l.respond(path),
        (None, None) => answer(&core, host, path, query, arrival.gap).await,
    };
    if let Some(HostId::Site(_) | HostId::Blog(_) | HostId::Shop | HostId::Special(Special::Faults)) = host {
        let changed_in = if validators::edited(edition, path) { edition } else { 0 };
        validators::apply(req.headers(), &mut resp, changed_in);
    }
    let body_bytes = resp.body().whole().map_or(0, |b| b.len() as u64);
    let agent = req.headers().get(hyper::header::USER_AGENT).and_then(|v| v.to_str().ok());
    core.stats.finish(&slot, pq, arrival.at_ms, resp.status().as_u16(), body_bytes, agent);
    resp.body_mut().set_guard(arrival.guard);
    Ok(resp)
}

/// The response for a request to `host` (`None`: not a farm host);
/// `path` has its unreserved `%XX` escapes decoded; `gap` is the time since
/// the previous request to the same host.
pub async fn answer(
    core: &Core,
    host: Option<HostId>,
    path: &str,
    query: Option<&str>,
    gap: Option<Duration>,
) -> Response<FarmBody> {
    match host {
        None => not_found(),
        Some(HostId::Special(s)) => faults::respond(core, s, path, gap).await,
        Some(HostId::Shop) => shop::respond(&core.world, path, query),
        Some(_)
            if core.rate_limit_ms > 0
                && gap.is_some_and(|g| g < Duration::from_millis(u64::from(core.rate_limit_ms))) =>
        {
            html(StatusCode::TOO_MANY_REQUESTS, "<h1>429 Too Many Requests</h1><p>Slow down.</p>")
        }
        Some(h) => site_response(core, h, path, query),
    }
}

/// Answers a request to a regular site or blog.
fn site_response(core: &Core, host: HostId, path: &str, query: Option<&str>) -> Response<FarmBody> {
    let world = &core.world;
    if core.apps {
        if let Some(r) = super::apps::respond(host, path) {
            return r;
        }
    }
    if let (true, HostId::Site(site)) = (core.topics > 0, host) {
        if let Some(p) = super::topics::page(world, core.topics, site, path, query) {
            return html(StatusCode::OK, p.html);
        }
    }
    if let (true, HostId::Site(site)) = (core.kb > 0, host) {
        if let Some(p) = super::kb::page(world, core.kb, site, path) {
            return html(StatusCode::OK, p.html);
        }
    }
    if core.sitemaps {
        if let Some(r) = sitemaps::respond(world, host, path) {
            return r;
        }
    }
    match world.route(host, path, query) {
        Route::Page(page, variant) => {
            let out = pages::render(world, host, page, variant, query, None).out;
            let edition = core.edition.load(Ordering::SeqCst);
            html(StatusCode::OK, if validators::edited(edition, path) { validators::edit(out, edition) } else { out })
        }
        Route::Robots if site::has_robots(host.site_number()) => {
            match sitemaps::robots_line(world, host).filter(|_| core.sitemaps) {
                Some(line) => typed(StatusCode::OK, "text/plain", Bytes::from(format!("{}{line}", files::ROBOTS_SITE))),
                None => typed(StatusCode::OK, "text/plain", Bytes::from_static(files::ROBOTS_SITE.as_bytes())),
            }
        }
        Route::Resource(r) => typed(StatusCode::OK, r.content_type(), files::resource_body(r)),
        Route::Redirect(loc) => redirect(StatusCode::MOVED_PERMANENTLY, &loc),
        Route::Robots | Route::NotFound => not_found(),
    }
}

/// `/__farm/…` on any host: stats, reset, truth, fault cases, page links, shop truth.
async fn farm_endpoint(core: &Arc<Core>, path: &str, query: Option<&str>) -> Response<FarmBody> {
    let params: Vec<(String, String)> =
        url::form_urlencoded::parse(query.unwrap_or("").as_bytes()).into_owned().collect();
    let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    match path {
        "/__farm/stats" => json(StatusCode::OK, &core.stats.snapshot()),
        "/__farm/reset" => {
            core.reset();
            typed(StatusCode::OK, "text/plain", Bytes::from_static(b"stats reset\n"))
        }
        "/__farm/faults" => json(StatusCode::OK, &faults::cases(&core.world)),
        "/__farm/proxies" => json(StatusCode::OK, &core.proxies.iter().map(super::proxy::ProxyLive::snapshot).collect::<Vec<_>>()),
        "/__farm/edition" => match param("n").and_then(|n| n.parse::<u32>().ok()) {
            Some(n) => {
                core.edition.store(n, Ordering::SeqCst);
                typed(StatusCode::OK, "text/plain", Bytes::from(format!("edition {n}\n")))
            }
            None => typed(StatusCode::BAD_REQUEST, "text/plain", Bytes::from_static(b"usage: /__farm/edition?n=N\n")),
        },
        "/__farm/shop" => json(StatusCode::OK, &shop::truth(&core.world)),
        "/__farm/kb.csv" => typed(StatusCode::OK, "text/csv; charset=utf-8", Bytes::from(super::kb::kb_csv())),
        "/__farm/truth" => {
            let depth = param("depth").and_then(|d| d.parse::<u32>().ok()).unwrap_or(3);
            let mut seeds: Vec<String> = params.iter().filter(|(k, _)| k == "seed").map(|(_, v)| v.clone()).collect();
            if seeds.is_empty() {
                seeds = core.start_urls();
            }
            // The BFS renders every page it reaches: CPU work, off the async threads.
            let c = Arc::clone(core);
            match tokio::task::spawn_blocking(move || super::truth::compute(&c.world, &seeds, depth)).await {
                Ok(t) => json(StatusCode::OK, &t),
                Err(e) => typed(StatusCode::INTERNAL_SERVER_ERROR, "text/plain", Bytes::from(e.to_string())),
            }
        }
        "/__farm/links" => match param("url").and_then(|u| super::truth::page_links(&core.world, &u)) {
            Some(links) => json(StatusCode::OK, &links),
            None => not_found(),
        },
        _ => typed(
            StatusCode::OK,
            "text/plain",
            Bytes::from_static(b"test web endpoints: /__farm/stats /__farm/reset /__farm/faults /__farm/truth?depth=N[&seed=URL...] /__farm/links?url=URL /__farm/shop /__farm/kb.csv /__farm/edition?n=N /__farm/proxies\n"),
        ),
    }
}
