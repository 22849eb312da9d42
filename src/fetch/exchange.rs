//! The exchange: how one request for one URL is performed.
//!
//! The per-host scheduler owns politeness (robots.txt, request spacing,
//! per-host and global limits, retries, redirects, stragglers) and asks an
//! [`Exchange`] for each single request it starts, robots.txt included. So a
//! new way of fetching (a headless browser that renders the page, a proxy)
//! is another implementation of this trait, and the scheduler's politeness
//! applies to it unchanged (ARCHITECTURE.md, "Where new capabilities plug
//! in"). Today's only implementation is [`super::HttpExchange`], the plain
//! HTTP client.

use futures::future::BoxFuture;
use url::Url;

use super::{ErrorKind, Response};

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
///   every hop is polite and robots-checked (README, "How it works").
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
    /// Performs one GET of `url`, keeping at most `max_body` bytes of its body.
    fn get<'a>(&'a self, url: &'a Url, max_body: u64) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>>;
}
