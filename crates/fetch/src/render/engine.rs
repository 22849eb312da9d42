//! The browser's side of rendering (the cargo feature `render`): the
//! exchange that opens fetched pages in Chromium and answers its requests
//! (the module's notes in `mod.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use chromiumoxide::browser::Browser;
use chromiumoxide::cdp::browser_protocol::fetch::{
    AuthChallengeResponse, AuthChallengeResponseResponse, AuthChallengeSource, ContinueWithAuthParams, EnableParams,
    EventAuthRequired, EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::{ErrorReason, ResourceType};
use chromiumoxide::Page;
use futures::future::BoxFuture;
use futures::StreamExt;
use tokio::sync::{OnceCell, Semaphore};
use tokio::time::Instant;
use url::Url;

use super::super::exchange::{Exchange, Request};
use super::super::relay::Relay;
use super::super::robots::{origin_of, RobotsCache};
use super::super::{ErrorKind, Response};
use super::{find_chromium, launch, pipe, shell, RenderConfig, RenderMode, MAX_SUBRESOURCES};

/// A page counts as settled when no request of its has been open for this
/// long, and its DOM has not changed for this long since (`drive`).
const QUIET: Duration = Duration::from_millis(150);
/// Longest a page's DOM is watched for a stable state once its network
/// went quiet: a page that never stops changing (a clock, a ticker, a
/// carousel) is taken as it is then, not at the render timeout.
const SETTLE_MAX: Duration = Duration::from_secs(2);
/// The size of the page's DOM, once its main thread is idle (the tasks
/// already queued, a script's reading of its answers among them, have
/// run; at most a second when it never is).
const IDLE_DOM_SIZE: &str = "new Promise(function (done) {
  var size = function () { done(document.documentElement ? document.documentElement.outerHTML.length : 0); };
  if (window.requestIdleCallback) { requestIdleCallback(size, { timeout: 1000 }); } else { setTimeout(size, 0); }
})";

/// This build renders pages.
pub const BUILT: bool = true;

/// What rendering did (for the summary).
#[derive(Debug, Default)]
pub struct RenderCounts {
    pub rendered: AtomicU64,
    pub failed: AtomicU64,
    pub subresources: AtomicU64,
    pub refused: AtomicU64,
}

/// The rendering exchange.
pub struct RenderExchange {
    inner: Arc<dyn Exchange>,
    robots: RobotsCache,
    cfg: RenderConfig,
    chromium: PathBuf,
    /// Spacing of a page's subresource requests (`--delay`).
    delay: Duration,
    browser: OnceCell<Result<Arc<Chromium>, String>>,
    /// Pages of rules with `render = true`.
    rule_pages: Vec<crate::urlnorm::Pattern>,
    /// Chromium's only way out (see the module's notes).
    relay: Relay,
    tabs: Semaphore,
    started: AtomicU64,
    pub counts: Arc<RenderCounts>,
    /// The run's fence: a tab's own requests stop when it runs out, and a
    /// render cut short by it closes its tab (docs/src/cluster.md).
    fence: std::sync::OnceLock<Arc<crate::fence::Fence>>,
}

/// The running browser; killed when dropped.
struct Chromium {
    browser: Browser,
    /// Tabs that rendered a page and were emptied (`about:blank`): opening
    /// a tab costs Chromium more than navigating one.
    idle: Mutex<Vec<Page>>,
    _handler: tokio::task::JoinHandle<()>,
    /// Its process, killed and reaped when dropped (`pipe.rs`).
    _process: pipe::Process,
    _profile: tempfile::TempDir,
    /// The folder of its launcher (`launch.rs`).
    _launcher: tempfile::TempDir,
}

impl RenderExchange {
    /// Wraps `inner`; the browser starts with the first page to render,
    /// with `relay` as its proxy.
    ///
    /// # Errors
    /// When no Chromium can be found.
    pub fn new(
        inner: Arc<dyn Exchange>,
        robots: RobotsCache,
        cfg: RenderConfig,
        delay: Duration,
        relay: Relay,
    ) -> Result<Self, String> {
        let chromium = find_chromium(cfg.chromium.as_deref())?;
        let rule_pages =
            cfg.rule_patterns.iter().map(|p| crate::urlnorm::Pattern::new(p)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            rule_pages,
            relay,
            inner,
            robots,
            tabs: Semaphore::new(cfg.tabs.max(1)),
            cfg,
            chromium,
            delay,
            browser: OnceCell::new(),
            started: AtomicU64::new(0),
            counts: Arc::default(),
            fence: std::sync::OnceLock::new(),
        })
    }

    /// Whether a fetched page is to be rendered. robots.txt never is, even
    /// when served as `text/html` under `--render always`: its rules are
    /// the bytes the server sent, not a DOM a browser made of them.
    fn wants(&self, url: &Url, resp: &Response) -> bool {
        let html = resp.content_type.as_deref().is_some_and(|t| t.to_ascii_lowercase().contains("html"));
        if resp.status != 200 || !html || resp.body.is_empty() || resp.body_error.is_some() {
            return false;
        }
        if url.path() == "/robots.txt" {
            return false;
        }
        if self.rule_pages.iter().any(|p| p.matches(url.as_str())) {
            return true;
        }
        match self.cfg.mode {
            RenderMode::Never => false,
            RenderMode::Always => true,
            RenderMode::Auto => shell::scan(&resp.body).is_shell(),
        }
    }

    async fn chromium(&self) -> Result<Arc<Chromium>, String> {
        self.browser
            .get_or_init(|| async {
                // Its sandbox on, none of the crawler's environment
                // (`launch.rs`); no background traffic of its own. A launch
                // with the sandbox that fails is an error, never retried
                // without it: unsandboxed, a page that takes over the
                // renderer runs as the crawler's user (docs/src/security.md).
                // Only --render-no-sandbox turns it off.
                let sandbox = !self.cfg.no_sandbox;
                match self.launch(sandbox).await {
                    Ok(c) => Ok(Arc::new(c)),
                    Err(e) if sandbox => Err(launch::sandbox_refused(&e)),
                    Err(e) => Err(e),
                }
            })
            .await
            .clone()
    }

    /// Starts Chromium in a new profile, through its launcher.
    async fn launch(&self, sandbox: bool) -> Result<Chromium, String> {
        self.relay.serve()?;
        let proxy = self.relay.url();
        let profile = tempfile::tempdir().map_err(|e| format!("cannot make Chromium's profile folder: {e}"))?;
        // The launcher's own folder, this process's alone (mode 0700).
        let bin = tempfile::Builder::new()
            .prefix("layercrawl-launcher-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|e| format!("cannot make the folder of Chromium's launcher: {e}"))?;
        let launcher = launch::prepare(bin.path(), profile.path(), &self.chromium, sandbox)?;
        let switches = launch::switches(profile.path(), proxy.as_str(), launcher.sandbox, self.cfg.tabs);
        // Over a pipe, not a DevTools port another local user could reach
        // (`pipe.rs`, docs/src/security.md).
        let started = std::time::Instant::now();
        let (browser, mut handler, process, bridge) = pipe::start(&launcher.path, &switches, pipe::handler_config())
            .await
            .map_err(|e| format!("cannot start Chromium at {}: {e}", self.chromium.display()))?;
        let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
        tracing::debug!(
            "Chromium answers over its pipe after {:?}; its DevTools bridged once on {bridge} (closed)",
            started.elapsed()
        );
        if launcher.sandbox {
            tracing::info!(sandbox = true, "Chromium started for rendering: {}", self.chromium.display());
        } else {
            tracing::warn!(sandbox = false, "{}: {}", super::NO_SANDBOX_WARNING, self.chromium.display());
        }
        Ok(Chromium {
            browser,
            idle: Mutex::default(),
            _handler: handler,
            _process: process,
            _profile: profile,
            _launcher: bin,
        })
    }

    /// Renders `url`, whose fetched response is `resp`: the DOM after its
    /// scripts ran.
    async fn render(&self, url: &Url, resp: &Response, max_body: u64) -> Result<String, String> {
        let _tab = self.tabs.acquire().await.map_err(|e| e.to_string())?;
        let chromium = self.chromium().await?;
        let idle = chromium.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let page = match idle {
            Some(page) => page,
            None => chromium
                .browser
                .new_page("about:blank")
                .await
                .map_err(|e| format!("cannot open a Chromium tab: {e}"))?,
        };
        // A render dropped half-way (the run's fence ran out, and the
        // scheduler abandoned the request) closes its tab.
        let mut tab = CloseOnDrop(Some(page.clone()));
        let result = tokio::time::timeout(self.cfg.timeout, self.drive(&page, url, resp, max_body)).await;
        tab.0 = None;
        let (html, reusable) = match result {
            Ok(r) => {
                let ok = r.is_ok();
                (r, ok)
            }
            // Out of time: what the DOM holds so far is still the page.
            Err(_) => {
                tracing::warn!(
                    "{url}: not settled within the render timeout ({:?}); its DOM taken as it was",
                    self.cfg.timeout
                );
                (page.content().await.map_err(|e| format!("no DOM after {:?}: {e}", self.cfg.timeout)), false)
            }
        };
        // A tab that went quiet is emptied and kept for the next page (its
        // scripts stop with the navigation); one that did not is closed.
        if reusable && page.goto("about:blank").await.is_ok() {
            chromium.idle.lock().unwrap_or_else(PoisonError::into_inner).push(page);
        } else {
            let _ = page.close().await;
        }
        html
    }

    async fn drive(&self, page: &Page, url: &Url, resp: &Response, max_body: u64) -> Result<String, String> {
        let cdp = |e: chromiumoxide::error::CdpError| e.to_string();
        let mut paused = page.event_listener::<EventRequestPaused>().await.map_err(cdp)?;
        let mut challenged = page.event_listener::<EventAuthRequired>().await.map_err(cdp)?;
        page.execute(
            EnableParams::builder()
                .pattern(RequestPattern::builder().url_pattern("*").build())
                .handle_auth_requests(true)
                .build(),
        )
        .await
        .map_err(cdp)?;
        // What reaches the relay must carry its secret (`relay/`): Chromium
        // is handed it when the relay challenges it, and nothing to anyone
        // else (a server's challenge is cancelled).
        let password = self.relay.password().to_string();
        let answering_auth = {
            let page = page.clone();
            AbortOnDrop(tokio::spawn(async move {
                while let Some(ev) = challenged.next().await {
                    let proxy = ev.auth_challenge.source == Some(AuthChallengeSource::Proxy);
                    let response = if proxy {
                        AuthChallengeResponse {
                            response: AuthChallengeResponseResponse::ProvideCredentials,
                            username: Some(crate::relay::USER.to_string()),
                            password: Some(password.clone()),
                        }
                    } else {
                        AuthChallengeResponse {
                            response: AuthChallengeResponseResponse::CancelAuth,
                            username: None,
                            password: None,
                        }
                    };
                    let _ = page.execute(ContinueWithAuthParams::new(ev.request_id.clone(), response)).await;
                }
            }))
        };
        let open = Arc::new(AtomicUsize::new(0));
        let asked = Arc::new(AtomicUsize::new(0));
        let last = Arc::new(Mutex::new(Instant::now()));
        let answering = {
            let (page, open, last, asked) = (page.clone(), Arc::clone(&open), Arc::clone(&last), Arc::clone(&asked));
            let document = strip_fragment(url);
            let ctx = self.answer_context(url, resp, max_body);
            async move {
                let mut served_document = false;
                let mut sent = 0usize;
                let mut next_at = Instant::now();
                while let Some(ev) = paused.next().await {
                    open.fetch_add(1, Ordering::SeqCst);
                    asked.fetch_add(1, Ordering::SeqCst);
                    let answer = ctx.answer(&ev, &document, &mut served_document, &mut sent, &mut next_at).await;
                    let _ = match answer {
                        Answer::Fulfil(f) => page.execute(f).await.map(drop),
                        Answer::Fail => page
                            .execute(FailRequestParams::new(ev.request_id.clone(), ErrorReason::BlockedByClient))
                            .await
                            .map(drop),
                    };
                    *last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
                    open.fetch_sub(1, Ordering::SeqCst);
                }
            }
        };
        // Aborted however `drive` ends, dropped half-way included.
        let answering = AbortOnDrop(tokio::spawn(answering));
        let nav = page.goto(url.as_str()).await.map_err(|e| format!("Chromium could not load the page: {e}"));
        if let Err(e) = nav {
            drop(answering);
            return Err(e);
        }
        // Settled: the network quiet for QUIET (scripts may fetch after
        // load), and then the page itself: twice, QUIET apart, its main
        // thread idle with the same DOM and no request asked in between. A
        // quiet network alone is not enough: a script may still be reading
        // its last answer, or building from it, when its main thread is
        // slow (a heavy script, a loaded machine).
        let mut seen: Option<(usize, u64, Instant)> = None;
        let (loaded, mut checks, mut first_look) = (Instant::now(), 0, None::<Instant>);
        loop {
            tokio::time::sleep(QUIET / 3).await;
            let since = last.lock().unwrap_or_else(PoisonError::into_inner).elapsed();
            if open.load(Ordering::SeqCst) != 0 || since < QUIET {
                continue;
            }
            if first_look.get_or_insert_with(Instant::now).elapsed() >= SETTLE_MAX {
                tracing::debug!("{url}: its DOM still changes {SETTLE_MAX:?} after its network went quiet");
                break;
            }
            let before = asked.load(Ordering::SeqCst);
            let dom = page
                .evaluate_expression(IDLE_DOM_SIZE)
                .await
                .map_err(|e| format!("cannot read the DOM: {e}"))?
                .into_value::<u64>()
                .map_err(|e| format!("cannot read the DOM's size: {e}"))?;
            checks += 1;
            if before != asked.load(Ordering::SeqCst) || open.load(Ordering::SeqCst) != 0 {
                seen = None;
                continue;
            }
            match seen {
                Some((a, d, at)) if a == before && d == dom => {
                    if at.elapsed() >= QUIET {
                        break;
                    }
                }
                _ => seen = Some((before, dom, Instant::now())),
            }
        }
        tracing::debug!("{url}: settled {:?} after its load, {checks} looks at its DOM", loaded.elapsed());
        let html = page.content().await.map_err(|e| format!("cannot read the DOM: {e}"));
        drop(answering);
        drop(answering_auth);
        html
    }

    fn answer_context(&self, url: &Url, resp: &Response, max_body: u64) -> AnswerContext {
        AnswerContext {
            inner: Arc::clone(&self.inner),
            rules: self.robots.get(&origin_of(url)),
            origin: url.origin(),
            body: resp.body.clone(),
            content_type: resp.content_type.clone().unwrap_or_else(|| "text/html".into()),
            max_body,
            delay: self.delay,
            counts: Arc::clone(&self.counts),
            fence: self.fence.get().cloned(),
        }
    }

    async fn get_and_render(&self, req: Request<'_>) -> Result<Response, (ErrorKind, String)> {
        let mut resp = self.inner.get(req).await?;
        if !self.wants(req.url, &resp) {
            return Ok(resp);
        }
        if let Some(max) = self.cfg.max_pages {
            if self.started.fetch_add(1, Ordering::Relaxed) >= max {
                return Ok(resp);
            }
        }
        let started = std::time::Instant::now();
        match self.render(req.url, &resp, req.max_body).await {
            Ok(html) => {
                self.counts.rendered.fetch_add(1, Ordering::Relaxed);
                let mut body = html.into_bytes();
                resp.truncated |= body.len() as u64 > req.max_body;
                body.truncate(usize::try_from(req.max_body).unwrap_or(usize::MAX));
                let served = std::mem::replace(&mut resp.body, body.into());
                if let Some(c) = resp.capture.as_mut() {
                    // The archive keeps what the server sent beside the DOM.
                    c.served_body = Some(served);
                }
                resp.content_type = Some("text/html; charset=utf-8".into());
                resp.rendered = true;
                resp.elapsed += started.elapsed();
            }
            Err(e) => {
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("{}: not rendered, kept as fetched: {e}", req.url);
            }
        }
        Ok(resp)
    }
}

impl Exchange for RenderExchange {
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        Box::pin(self.get_and_render(req))
    }

    fn prepare(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if self.cfg.mode == RenderMode::Never && self.rule_pages.is_empty() {
                return Ok(());
            }
            self.chromium().await.map(drop)
        })
    }

    fn set_fence(&self, fence: &Arc<crate::fence::Fence>) {
        self.inner.set_fence(fence);
        self.relay.set_fence(fence);
        let _ = self.fence.set(Arc::clone(fence));
    }
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A tab closed when dropped while still set.
struct CloseOnDrop(Option<Page>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        if let Some(page) = self.0.take() {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = page.close().await;
                });
            }
        }
    }
}

/// Everything the answering task needs, owned.
struct AnswerContext {
    inner: Arc<dyn Exchange>,
    rules: Option<Arc<super::super::robots::RobotsRules>>,
    origin: url::Origin,
    body: bytes::Bytes,
    content_type: String,
    max_body: u64,
    delay: Duration,
    counts: Arc<RenderCounts>,
    fence: Option<Arc<crate::fence::Fence>>,
}

enum Answer {
    Fulfil(FulfillRequestParams),
    Fail,
}

impl AnswerContext {
    async fn answer(
        &self,
        ev: &EventRequestPaused,
        document: &str,
        served_document: &mut bool,
        sent: &mut usize,
        next_at: &mut Instant,
    ) -> Answer {
        let Ok(target) = Url::parse(&ev.request.url) else { return Answer::Fail };
        if ev.resource_type == ResourceType::Document {
            // The page itself, once, from what was fetched; no other
            // document (frames, navigations away).
            if !*served_document && strip_fragment(&target) == document {
                *served_document = true;
                return fulfil(ev, 200, &self.content_type, &self.body);
            }
            // Answered 204 rather than failed: a navigation that gets no
            // content leaves the page as it was, where a failed one would
            // put Chromium's error page in its place (and in the row).
            self.counts.refused.fetch_add(1, Ordering::Relaxed);
            return fulfil(ev, 204, "text/plain", b"");
        }
        let needed = matches!(
            ev.resource_type,
            ResourceType::Script | ResourceType::Xhr | ResourceType::Fetch | ResourceType::Other
        );
        let allowed = self.rules.as_ref().is_none_or(|r| r.allows(&target));
        if !needed
            || target.origin() != self.origin
            || !allowed
            || ev.request.method != "GET"
            || *sent >= MAX_SUBRESOURCES
        {
            return self.refuse();
        }
        *sent += 1;
        tokio::time::sleep_until(*next_at).await;
        let request = self.inner.get(Request::get(&target, self.max_body));
        let got = match &self.fence {
            Some(f) if !f.holds() => return self.refuse(),
            Some(f) => tokio::select! {
                r = request => r,
                () = f.ran_out() => return self.refuse(),
            },
            None => request.await,
        };
        *next_at = Instant::now() + self.delay;
        self.counts.subresources.fetch_add(1, Ordering::Relaxed);
        match got {
            Ok(r) => {
                let ct = r.content_type.clone().unwrap_or_else(|| "application/octet-stream".into());
                fulfil(ev, r.status, &ct, &r.body)
            }
            Err(_) => Answer::Fail,
        }
    }

    fn refuse(&self) -> Answer {
        self.counts.refused.fetch_add(1, Ordering::Relaxed);
        Answer::Fail
    }
}

fn fulfil(ev: &EventRequestPaused, status: u16, content_type: &str, body: &[u8]) -> Answer {
    let params = FulfillRequestParams::builder()
        .request_id(ev.request_id.clone())
        .response_code(i64::from(status))
        .response_header(HeaderEntry::new("Content-Type", content_type))
        .body(base64::engine::general_purpose::STANDARD.encode(body))
        .build();
    params.map_or(Answer::Fail, Answer::Fulfil)
}

fn strip_fragment(url: &Url) -> String {
    let mut u = url.clone();
    u.set_fragment(None);
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exchange that is never called (the test asks `wants` only).
    struct Unused;

    impl Exchange for Unused {
        fn get<'a>(&'a self, _: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
            Box::pin(async { Err((ErrorKind::Internal, "not called".into())) })
        }
    }

    #[test]
    fn robots_txt_is_never_rendered_even_as_html_under_always() {
        // Any existing file stands in for the browser: it is never started.
        let cfg =
            RenderConfig { mode: RenderMode::Always, chromium: Some("/bin/sh".into()), ..RenderConfig::default() };
        let relay = Relay::bind(
            crate::resolve::PolicyResolver::default(),
            crate::relay::Upstream::Direct,
            Duration::from_secs(1),
        )
        .expect("relay");
        let r = RenderExchange::new(Arc::new(Unused), RobotsCache::default(), cfg, Duration::ZERO, relay)
            .expect("exchange");
        let html = Response {
            status: 200,
            content_type: Some("text/html; charset=utf-8".into()),
            body: bytes::Bytes::from_static(b"<html><body>User-agent: *<br>Disallow: /private/</body></html>"),
            ..Response::default()
        };
        let at = |p: &str| Url::parse(&format!("http://a.test{p}")).expect("url");
        assert!(!r.wants(&at("/robots.txt"), &html), "robots.txt is read as sent");
        assert!(r.wants(&at("/robots.txt/page"), &html) && r.wants(&at("/"), &html), "pages are rendered");
    }
}
