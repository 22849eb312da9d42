//! Rendering pages in headless Chromium (`--render never|auto|always`):
//! an [`Exchange`] around the crawl's own exchange (docs/src/rendering.md).
//!
//! The page is fetched as any page is (through the scheduler, its
//! politeness and robots.txt, the plain or proxied exchange). When it is
//! HTML and `always` is set, or `auto` is and it is a script shell
//! ([`shell`]), it is opened in a Chromium tab, and the tab's DOM after
//! its scripts ran replaces the body; the row says `rendered`.
//!
//! **Chromium never touches the network.** Every request the tab makes is
//! intercepted (the DevTools protocol's Fetch domain) and answered here:
//! - the page itself, from the body already fetched (no second request);
//! - images, fonts, media and style sheets: refused (not needed for the
//!   DOM, and they would cost the site requests);
//! - scripts and data requests (XHR, `fetch`) to the page's own origin,
//!   robots.txt permitting, at most [`MAX_SUBRESOURCES`] a page, one at a
//!   time and `--delay` apart, through the crawl's own exchange: the SSRF
//!   guard, proxies and body limit apply to them as to any request; the
//!   host's politeness slot is held by the page's request for the whole
//!   render, so nothing else is sent to the host meanwhile;
//! - anything else (other origins, frames, navigations away): refused
//!   (a document with an empty 204, so the page stays in its tab).
//!
//! What the Fetch domain does not see (WebSockets, workers' requests,
//! preconnects, beacons sent as a page goes) leaves Chromium only through
//! its proxy, a [`Relay`] on loopback started with the browser, which
//! applies the crawl's address policy as the fetcher does. Chromium is
//! told to resolve no name itself (the relay resolves them, with
//! `--resolve` rules), to send loopback through the relay too, and to send
//! WebRTC's UDP nowhere but through the proxy, which carries none.
//!
//! Budgets: a tab has `--render-timeout` (10 s) to load and go quiet; the
//! run renders at most `--render-max` pages (no limit unless given); at
//! most `--render-tabs` tabs are open at once. A page that cannot be
//! rendered keeps its fetched body (`rendered` false), the failure in the
//! log; the summary counts renders and render failures.

//!
//! The settings ([`RenderConfig`]) and the shell test ([`shell`]) are in
//! every build; the browser's side (`engine.rs`: [`RenderExchange`]; the
//! launcher, `launch.rs`; the DevTools pipe and its bridge, `pipe.rs`)
//! only with the cargo feature `render`. Without it, `--render`
//! other than `never` and rules with `render = true` are refused when the
//! run starts ([`BUILT`] is false).

#[cfg(feature = "render")]
mod engine;
#[cfg(feature = "render")]
mod launch;
#[cfg(feature = "render")]
mod pipe;
pub mod shell;

#[cfg(not(feature = "render"))]
#[path = "absent.rs"]
mod engine;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use engine::{RenderCounts, RenderExchange, BUILT};

/// Subresource requests answered per page; the rest are refused.
pub const MAX_SUBRESOURCES: usize = 24;

/// When pages are rendered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RenderMode {
    #[default]
    Never,
    /// Script shells only ([`shell`]).
    Auto,
    Always,
}

impl std::str::FromStr for RenderMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "never" => Ok(Self::Never),
            "auto" => Ok(Self::Auto),
            "always" => Ok(Self::Always),
            other => Err(format!("{other:?}; allowed never, auto, always")),
        }
    }
}

/// The rendering settings.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RenderConfig {
    pub mode: RenderMode,
    /// The browser; none: `chromium` (or `chromium-browser`) on the PATH.
    pub chromium: Option<PathBuf>,
    /// Tabs open at once.
    pub tabs: usize,
    /// Time a tab has to load and settle.
    pub timeout: Duration,
    /// Pages rendered in the whole run at most.
    pub max_pages: Option<u64>,
    /// URL patterns of rules with `render = true` (rule syntax): their
    /// pages are rendered whatever `mode` says.
    #[serde(default)]
    pub rule_patterns: Vec<String>,
    /// Chromium runs without its sandbox (`--render-no-sandbox`); never
    /// otherwise: a browser that cannot start sandboxed is an error.
    #[serde(default)]
    pub no_sandbox: bool,
}

impl RenderConfig {
    /// Whether any page may be rendered.
    #[must_use]
    pub fn active(&self) -> bool {
        self.mode != RenderMode::Never || !self.rule_patterns.is_empty()
    }
}

/// What every run rendering without the sandbox is told (docs/src/security.md).
pub const NO_SANDBOX_WARNING: &str = "Chromium runs WITHOUT its sandbox (--render-no-sandbox): a page that takes over its renderer runs as this crawler's user, with its files and environment";

/// The default `--render-tabs` and `--render-timeout`.
pub const DEFAULT_TABS: usize = 4;
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for RenderConfig {
    fn default() -> Self {
        Self {
            mode: RenderMode::Never,
            chromium: None,
            tabs: DEFAULT_TABS,
            timeout: DEFAULT_TIMEOUT,
            max_pages: None,
            rule_patterns: Vec::new(),
            no_sandbox: false,
        }
    }
}

/// Finds the browser: the configured path, or Chromium on the PATH.
///
/// # Errors
/// What to install or give when none is found.
pub fn find_chromium(configured: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = configured {
        return if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(format!("--chromium {}: no such file", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser", "google-chrome"] {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err("--render needs Chromium and none is on the PATH: install Debian's chromium package (scripts/chromium.sh), or give --chromium PATH".into())
}
