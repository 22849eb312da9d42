//! The fetch stage's settings. They live here, not in `crate::config`,
//! so that `fetch/` depends on nothing above it: `config/` builds a
//! [`FetchConfig`] from flags and the job file, and the fetcher (and any
//! other program driving it) needs only this module (ARCHITECTURE.md,
//! "Modules, in pipeline order").

use std::time::Duration;

use super::resolve::ResolveRule;

/// Fetch-stage settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct FetchConfig {
    pub concurrency: usize,
    pub per_host: usize,
    pub delay: Duration,
    pub user_agent: String,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    pub max_body: u64,
    pub max_redirects: u32,
    /// Retries of a transient failure (408/429/5xx, timeout, reset, refused).
    pub retries: u32,
    /// First backoff before a retry without Retry-After; doubles each time.
    pub backoff: Duration,
    pub resolve: Vec<ResolveRule>,
    pub allow_private: bool,
    pub max_pages_per_host: Option<u64>,
    /// When the rest of a layer is done, requests in flight this long (and
    /// at least 8 times the layer's median request time) and URLs whose host
    /// may not start before then are stragglers: they go on into the next
    /// layer instead of holding this one. `None`: off.
    pub straggler_after: Option<Duration>,
    /// How redirect targets are normalised.
    pub urls: std::sync::Arc<crate::urlnorm::UrlPolicy>,
}
