//! Forward proxies (`proxies: N`): listeners on loopback that reach the
//! test web for a crawler configured to go through a proxy, and count what
//! went through each, so tests can check how a crawler spreads its
//! requests over a pool.
//!
//! - A plain HTTP request in absolute form (`GET http://s000.test/p
//!   HTTP/1.1`, or the site's address with its name in `Host`) is answered
//!   as the web answers it, the request counted as the web counts any
//!   (politeness audit per target host) and as this proxy's, by its `Host`.
//! - `CONNECT host:port` opens a tunnel to the web's own listener (the web
//!   speaks plain HTTP inside it), counted as a tunnel.
//! - A proxy set down (`Farm::set_proxy_down`) answers 502 to everything,
//!   as a failing proxy would, until set up again.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::body::FarmBody;
use crate::{server, Core};

/// What one proxy saw (part of `/__farm/stats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxyStats {
    pub addr: String,
    /// Plain HTTP requests forwarded, and CONNECT tunnels opened.
    pub requests: u64,
    pub tunnels: u64,
    /// Requests refused while the proxy was down.
    pub refused: u64,
    /// Forwarded requests per target host.
    pub hosts: BTreeMap<String, u64>,
    /// Arrival of each forwarded request, ms since the web started, with
    /// its target host (the first 10,000).
    pub log: Vec<(String, f64)>,
}

/// Forwarded requests per target host, and the arrival log.
type Seen = (BTreeMap<String, u64>, Vec<(String, f64)>);

/// One proxy's live counters.
pub(crate) struct ProxyLive {
    pub addr: SocketAddr,
    pub down: AtomicBool,
    requests: AtomicU64,
    tunnels: AtomicU64,
    refused: AtomicU64,
    seen: Mutex<Seen>,
}

impl ProxyLive {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            down: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            tunnels: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            seen: Mutex::default(),
        }
    }

    pub(crate) fn snapshot(&self) -> ProxyStats {
        let seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ProxyStats {
            addr: self.addr.to_string(),
            requests: self.requests.load(Ordering::Relaxed),
            tunnels: self.tunnels.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            hosts: seen.0.clone(),
            log: seen.1.clone(),
        }
    }

    pub(crate) fn reset(&self) {
        self.requests.store(0, Ordering::Relaxed);
        self.tunnels.store(0, Ordering::Relaxed);
        self.refused.store(0, Ordering::Relaxed);
        *self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Default::default();
    }
}

/// Serves proxy `i` on `listener` until `stop` changes.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    core: Arc<Core>,
    i: usize,
    web: SocketAddr,
    started: Instant,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let stream = tokio::select! {
            a = listener.accept() => match a { Ok((s, _)) => s, Err(_) => continue },
            _ = stop.changed() => break,
        };
        let core = Arc::clone(&core);
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| serve(Arc::clone(&core), i, web, started, req));
            let conn =
                http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), svc).with_upgrades();
            tokio::select! {
                _ = conn => {}
                _ = stop.changed() => {}
            }
        });
    }
}

async fn serve(
    core: Arc<Core>,
    i: usize,
    web: SocketAddr,
    started: Instant,
    req: Request<Incoming>,
) -> Result<Response<FarmBody>, Infallible> {
    let p = &core.proxies[i];
    if p.down.load(Ordering::SeqCst) {
        p.refused.fetch_add(1, Ordering::Relaxed);
        return Ok(server::typed(StatusCode::BAD_GATEWAY, "text/plain", Bytes::from_static(b"proxy down\n")));
    }
    if req.method() == Method::CONNECT {
        p.tunnels.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            if let Ok(upgraded) = hyper::upgrade::on(req).await {
                if let Ok(mut to_web) = tokio::net::TcpStream::connect(web).await {
                    let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut to_web).await;
                }
            }
        });
        return Ok(Response::new(FarmBody::full(Bytes::new())));
    }
    // The site the request is for: its Host header, as the web routes it
    // (a crawler that names the checked address in the request line keeps
    // the name there), else the request line's host.
    let named = req.headers().get(hyper::header::HOST).and_then(|v| v.to_str().ok()).or_else(|| req.uri().host());
    let host = named.unwrap_or_default().split(':').next().unwrap_or_default().to_ascii_lowercase();
    p.requests.fetch_add(1, Ordering::Relaxed);
    {
        let mut seen = p.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *seen.0.entry(host.clone()).or_insert(0) += 1;
        if seen.1.len() < crate::stats::LOG_CAP {
            seen.1.push((host, started.elapsed().as_secs_f64() * 1000.0));
        }
    }
    server::handle(core, req).await
}
