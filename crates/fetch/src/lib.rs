//! Fetching (the map stage's network side): polite async HTTP for one partition.
//!
//! [`Fetcher`] is shared by a whole run: one [`Exchange`] that performs
//! each request (the HTTP client, [`HttpExchange`], unless another is
//! given), one global in-flight limit, one robots.txt cache.
//! [`Fetcher::fetch_partition`] takes a partition's URLs and drives the
//! per-host scheduler ([`scheduler`]), reporting each finished URL as a
//! [`Fetched`] value on a channel. A failed URL is data, not an error.
//!
//! `fetch/` imports nothing from `crate::config`: its settings are
//! [`FetchConfig`], which the configuration builds.

pub mod capture;
mod client;
mod config;
pub mod dns;
pub mod exchange;
pub mod governor;
pub mod proxy;
pub mod relay;
pub mod render;
pub mod resolve;
pub mod robots;
mod scheduler;

// The layers below fetching, under the names its files use.
pub(crate) use layercrawl_store as store;
pub(crate) use layercrawl_vocab::{self as vocab, fence, urlnorm};

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use tokio::sync::Semaphore;
use url::Url;

use robots::RobotsCache;

pub use capture::Capture;
pub use client::HttpExchange;
pub use config::{
    FetchConfig, Politeness, DEFAULT_DELAY_FACTOR, DEFAULT_DELAY_MS, DEFAULT_HOST_DOWN_AFTER, DEFAULT_MAX_BODY,
    DEFAULT_MAX_DELAY, DEFAULT_PER_HOST, DEFAULT_SPEED_LIMIT, DEFAULT_SPEED_TIME, DEFAULT_TIMEOUT, DEFAULT_USER_AGENT,
};
pub use exchange::{Exchange, Request, Validators};
pub use scheduler::{Admit, Handover, LayerTail, PartitionFetch, TailSeat, UrlSource, ADMIT_AGAIN};

pub use crate::vocab::{ErrorKind, UnknownErrorKind};

/// One HTTP response as received.
#[derive(Clone, Debug, Default)]
pub struct Response {
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    /// Seconds from a numeric Retry-After header.
    pub retry_after: Option<u64>,
    /// The `ETag` and `Last-Modified` headers, as sent.
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// The body, decompressed, at most `max_body` bytes.
    pub body: Bytes,
    /// Bytes received before the cap (≥ `body.len()`).
    pub received: u64,
    pub truncated: bool,
    pub elapsed: Duration,
    /// Set when the body broke off (reset, timeout, bad compression).
    pub body_error: Option<(ErrorKind, String)>,
    /// The body is the DOM after the page's scripts ran in headless
    /// Chromium (`--render`), not the bytes the server sent.
    pub rendered: bool,
    /// The exchange as it crossed the wire, for the archive (`--warc`);
    /// none unless [`FetchConfig::capture`] is on.
    pub capture: Option<Box<Capture>>,
}

/// The final state of one input URL after its redirect chain.
#[derive(Debug)]
pub struct Fetched {
    /// Index of the URL in the partition's input.
    pub id: usize,
    pub url: Url,
    pub final_url: Url,
    pub redirects: u32,
    /// The last response, when there was one.
    pub response: Option<Response>,
    /// The error, when the URL failed (a response may still be present).
    pub error: Option<(ErrorKind, String)>,
    /// A redirect target this partition does not follow (another
    /// partition's site, out of scope, or disallowed): it becomes a link.
    pub redirect_out: Option<Url>,
    /// The redirects followed before `response`, in order, each with its
    /// capture (kept only when [`FetchConfig::capture`] is on).
    pub hops: Vec<Response>,
    pub started_at: SystemTime,
    /// Wall time over all hops, excluding politeness waits.
    pub elapsed: Duration,
}

/// Errors that stop the fetcher itself (not a URL's failure).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// The run-wide fetcher.
#[derive(Clone)]
pub struct Fetcher {
    /// Performs every request the scheduler starts, robots.txt included.
    pub(crate) exchange: Arc<dyn Exchange>,
    pub(crate) cfg: Arc<FetchConfig>,
    pub(crate) robots: RobotsCache,
    pub(crate) global: Arc<Semaphore>,
    pub(crate) agent: String,
    /// When each origin may next be requested, kept across partitions and
    /// layers: a new layer must not open with a burst to a host that the
    /// last one has just visited.
    pub(crate) next_start: Arc<std::sync::Mutex<std::collections::HashMap<String, tokio::time::Instant>>>,
    /// Requests in flight that a layer's tail handed to the next layer.
    pub handover: Handover,
    /// The send slot each origin's latest request took (µs since `epoch`),
    /// shared by every partition and layer of this fetcher, so a request
    /// handed over a layer's end and the next layer's first request to the
    /// same host are spaced like any two others.
    send_clocks: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<scheduler::SendClock>>>>,
    pub(crate) epoch: tokio::time::Instant,
    /// Each origin's pace (adaptive politeness), kept across partitions and
    /// layers like `next_start`: a host found slow stays paced.
    pub(crate) paces: Arc<std::sync::Mutex<std::collections::HashMap<String, scheduler::Pace>>>,
    /// Each origin's circuit breaker, kept across partitions and layers: a
    /// host paused or down stays so in the next layer.
    pub(crate) breakers: Arc<std::sync::Mutex<std::collections::HashMap<String, scheduler::Breaker>>>,
    /// When a URL carried over while waiting for its retry may be tried
    /// again, by URL fingerprint (a `Retry-After` outlives the layer).
    pub(crate) retry_at: Arc<std::sync::Mutex<std::collections::HashMap<u64, tokio::time::Instant>>>,
    /// The DNS cache (none: the system's resolver, uncached).
    pub(crate) dns: Option<Arc<dns::DnsCache>>,
    /// The proxy pool, when requests go through proxies.
    pub(crate) proxies: Option<Arc<proxy::pool::Pool>>,
    /// The resource governor that resizes `global` (`--max-memory`,
    /// `--cpu-target`); none without either.
    governor: Option<Arc<governor::Governor>>,
    /// The run's fence (its lease renewed in time): no request starts once
    /// it has run out ([`crate::fence`]); none outside a run.
    pub(crate) fence: Option<Arc<crate::fence::Fence>>,
}

impl Fetcher {
    /// The fence this fetcher's requests stop at, if its run is leased.
    #[must_use]
    pub fn fence(&self) -> Option<&Arc<crate::fence::Fence>> {
        self.fence.as_ref()
    }

    /// The settings it fetches with.
    #[must_use]
    pub fn settings(&self) -> &FetchConfig {
        &self.cfg
    }

    /// The send clock of `origin` (see [`scheduler`]'s send slots).
    pub(crate) fn send_clock(&self, origin: &str) -> Arc<scheduler::SendClock> {
        let mut clocks = self.send_clocks.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(clocks.entry(origin.to_string()).or_default())
    }

    /// Builds the HTTP exchange and the shared limits.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(cfg: &FetchConfig) -> Result<Self, FetchError> {
        let dns = match dns::DnsCache::new(&cfg.dns) {
            Ok(d) => Some(Arc::new(d)),
            Err(e) if cfg.dns.is_empty() => {
                tracing::warn!("{e}; names are resolved by the system, without a cache");
                None
            }
            Err(e) => return Err(FetchError::Client(e)),
        };
        let mut f = if cfg.proxy.urls.is_empty() {
            Self::with_exchange(cfg, Arc::new(HttpExchange::new(cfg, dns.clone())?))
        } else {
            let exchange = proxy::ProxyExchange::new(cfg, dns.clone())?;
            let pool = exchange.pool();
            let mut f = Self::with_exchange(cfg, Arc::new(exchange));
            f.proxies = Some(pool);
            f
        };
        if cfg.render.active() {
            // Around the plain or proxied exchange: the page is fetched as
            // any page, then rendered (see `render`).
            let inner = Arc::clone(&f.exchange);
            // Chromium's only way out: the same policy, resolver and
            // proxy (the first of the pool, if any) as the crawl's.
            let policy = resolve::AddressPolicy::new(cfg.allow_private.clone());
            let resolver = resolve::PolicyResolver::new(cfg.resolve.clone(), policy).with_cache(dns.clone());
            let relay = relay::Relay::bind(resolver, proxy::first_upstream(cfg)?, cfg.connect_timeout)
                .map_err(|e| FetchError::Client(format!("cannot bind Chromium's relay on loopback: {e}")))?;
            let r = render::RenderExchange::new(
                inner,
                f.robots.clone(),
                cfg.render.clone(),
                cfg.politeness.min_delay(),
                relay,
            )
            .map_err(FetchError::Client)?;
            f.exchange = Arc::new(r);
        }
        f.dns = dns;
        Ok(f)
    }

    /// The shared limits around a given exchange, which must keep the SSRF
    /// guard on the addresses it connects to (see [`Exchange`]).
    /// With `cfg.governor` set, its sampling task starts here, on the
    /// current runtime.
    #[must_use]
    pub fn with_exchange(cfg: &FetchConfig, exchange: Arc<dyn Exchange>) -> Self {
        let global = Arc::new(Semaphore::new(cfg.politeness.concurrency));
        let governor = cfg.governor.active().then(|| {
            let g = Arc::new(governor::Governor::new(cfg.governor, Arc::clone(&global), cfg.politeness.concurrency));
            g.start();
            g
        });
        Self {
            exchange,
            robots: RobotsCache::default(),
            global,
            governor,
            next_start: Arc::default(),
            handover: Handover::default(),
            send_clocks: Arc::default(),
            epoch: tokio::time::Instant::now(),
            paces: Arc::default(),
            breakers: Arc::default(),
            retry_at: Arc::default(),
            fence: None,
            dns: None,
            proxies: None,
            agent: robots::product_token(&cfg.politeness.user_agent),
            cfg: Arc::new(cfg.clone()),
        }
    }

    /// This fetcher stops starting requests once `fence` runs out.
    #[must_use]
    pub fn with_fence(mut self, fence: Arc<crate::fence::Fence>) -> Self {
        self.exchange.set_fence(&fence);
        self.fence = Some(fence);
        self
    }

    /// Starts what its exchange needs before the first request (the
    /// rendering browser, with its sandbox): a run that cannot have it is
    /// refused at start.
    ///
    /// # Errors
    /// Why not, in one line.
    pub async fn prepare(&self) -> Result<(), String> {
        self.exchange.prepare().await
    }

    /// Whether the run's fence has run out: nothing may be requested or
    /// committed any more.
    #[must_use]
    pub fn fenced(&self) -> bool {
        self.fence.as_ref().is_some_and(|f| !f.holds())
    }

    /// The resource governor, when the run has one.
    #[must_use]
    pub fn governor(&self) -> Option<&governor::Governor> {
        self.governor.as_deref()
    }

    /// Whether memory is near `--max-memory` now (never without it): rows
    /// are then written in smaller batches.
    #[must_use]
    pub fn memory_tight(&self) -> bool {
        self.governor.as_ref().is_some_and(|g| g.memory_tight())
    }

    /// The robots.txt rules of `origin`, once fetched.
    #[must_use]
    pub fn robots_rules(&self, origin: &str) -> Option<Arc<robots::RobotsRules>> {
        self.robots.get(origin)
    }

    /// Fetches `urls` through the scheduler (robots.txt, delays, the global
    /// limit) and returns every result, `Fetched::id` being the index in
    /// `urls`; `follows` says which redirect targets are followed.
    pub async fn fetch_list(
        &self,
        urls: Vec<String>,
        follows: impl Fn(&Url) -> bool + Send + 'static,
        deadline: Option<Instant>,
    ) -> Vec<Fetched> {
        struct List(Vec<String>);
        impl UrlSource for List {
            fn len(&self) -> usize {
                self.0.len()
            }
            fn url(&self, id: usize) -> std::io::Result<String> {
                self.0.get(id).cloned().ok_or_else(|| std::io::Error::other("no such URL in the list"))
            }
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Fetched>(16);
        let f = self.clone();
        let list = Arc::new(List(urls));
        let run = tokio::spawn(async move { f.fetch_partition(&*list, follows, deadline, None, tx).await });
        let mut out = Vec::new();
        while let Some(got) = rx.recv().await {
            out.push(got);
        }
        let _ = run.await;
        out
    }

    /// One GET without redirects, outside the scheduler's politeness.
    pub async fn get_once(&self, url: &Url) -> Result<Response, (ErrorKind, String)> {
        self.exchange.get(Request::get(url, self.cfg.max_body)).await
    }

    /// Fetches a partition's URLs politely; see [`scheduler`].
    /// `deadline` stops new requests; unstarted URLs come back as carried.
    /// With a `tail` seat, the partition ends with its layer's tail and its
    /// stragglers go on into the next layer (see [`LayerTail`]).
    pub async fn fetch_partition(
        &self,
        urls: &dyn UrlSource,
        follows: impl Fn(&Url) -> bool + Send,
        deadline: Option<Instant>,
        tail: Option<TailSeat>,
        out: tokio::sync::mpsc::Sender<Fetched>,
    ) -> PartitionFetch {
        scheduler::run(self, urls, follows, deadline, tail, out).await
    }
}
