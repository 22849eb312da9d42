//! The exchange: how one request for one URL is performed.
//!
//! The per-host scheduler owns politeness (robots.txt, request spacing,
//! per-host and global limits, retries, redirects, stragglers) and asks an
//! [`Exchange`] for each single request it starts, robots.txt included. So a
//! new way of fetching (a headless browser that renders the page, a proxy)
//! is another implementation of this trait, and the scheduler's politeness
//! applies to it unchanged (ARCHITECTURE.md, "Where to plug
//! in"). The implementations: [`super::HttpExchange`], the plain HTTP
//! client, and [`super::proxy::ProxyExchange`], through a pool of proxies.

use futures::future::BoxFuture;
use url::Url;

use super::{ErrorKind, Response};

/// One request as the scheduler asks for it.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub url: &'a Url,
    /// At most this many bytes of the decoded body are kept.
    pub max_body: u64,
    /// Last night's validators of this URL (`--previous`): the request is
    /// conditional, and an unchanged page answers 304 without a body.
    pub validators: Option<&'a Validators>,
}

impl<'a> Request<'a> {
    /// A plain GET of `url`.
    #[must_use]
    pub fn get(url: &'a Url, max_body: u64) -> Self {
        Self { url, max_body, validators: None }
    }
}

/// What a server said identifies the version of a page it sent: sent back
/// as `If-None-Match` and `If-Modified-Since` (RFC 9110 §13.1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    /// Whether there is anything to send.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// Performs single requests for the scheduler.
///
/// The scheduler calls [`Exchange::get`] once per request it starts and
/// never retries or follows anything itself inside a call; one call is one
/// request. The call is boxed so the fetcher can hold any implementation
/// behind one pointer (`Arc<dyn Exchange>`): a virtual call and one
/// allocation per request, next to a network round trip.
///
/// # Contract
///
/// - **One request, no redirects.** A 3xx comes back as the response with
///   its `location`; the scheduler queues the target on its own host so
///   every hop is polite and robots-checked (docs/src/how-it-works.md).
/// - **Conditional requests.** With `validators`, the request carries
///   `If-None-Match` (the ETag) and `If-Modified-Since` (the date) as
///   given; the response's own `ETag` and `Last-Modified` come back in
///   [`Response`] whatever the status.
/// - **Body limit.** At most `max_body` bytes of the decoded body are kept;
///   a longer one is cut there with `truncated` set and `received` counting
///   what arrived.
/// - **Failures are values.** No panic, no error type of its own: a request
///   that got no response is `Err((kind, detail))` with the `error` column's
///   [`ErrorKind`]; a body that broke off is a response with `body_error`.
/// - **The SSRF guard stays on the connected address.** Every address the
///   implementation connects to on the crawl's behalf (after DNS, on every
///   new connection, including ones a browser opens for a page's
///   subresources) must be checked with
///   [`AddressPolicy::check`](super::resolve::AddressPolicy::check) and
///   refused with [`ErrorKind::Blocked`] when outside the policy. Checking
///   a URL's host name beforehand is not enough: DNS may answer differently
///   at connect time (rebinding). An implementation that connects through
///   a proxy must resolve and check the target itself, or not offer the
///   proxy when the policy is in force. The HTTP implementation checks in
///   its resolver ([`super::resolve::PolicyResolver`]) and checks IP-literal
///   hosts before connecting.
pub trait Exchange: Send + Sync + 'static {
    /// Performs one GET of `req.url`, keeping at most `req.max_body` bytes
    /// of its body; conditional when `req.validators` is set (a 304 comes
    /// back as the response, without a body).
    fn get<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>>;

    /// Hands over the run's fence (`crate::fence`) for the requests this
    /// exchange makes on its own, outside [`Exchange::get`]'s future (a
    /// rendered page's, its browser's relay): none may outlive it. Most
    /// exchanges make none: the scheduler fences theirs.
    fn set_fence(&self, _fence: &std::sync::Arc<crate::fence::Fence>) {}

    /// Starts what the exchange needs before its first request (the
    /// rendering browser), so that a run that cannot have it is refused at
    /// start rather than at its first page.
    ///
    /// # Errors
    /// Why it cannot start, in one line.
    fn prepare(&self) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}
