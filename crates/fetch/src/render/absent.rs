//! Rendering's place in a build without the cargo feature `render`:
//! `--render` and rules with `render = true` are refused when the run
//! starts ([`BUILT`] is false), and a task whose run's settings ask for
//! rendering (written by another build) refuses to start, so that no page
//! is kept unrendered unnoticed.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::super::exchange::{Exchange, Request};
use super::super::relay::Relay;
use super::super::robots::RobotsCache;
use super::super::{ErrorKind, Response};
use super::RenderConfig;
use layercrawl_store::error::NotBuilt;

/// This build does not render pages.
pub const BUILT: bool = false;

/// What rendering did (for the summary): nothing, in this build.
#[derive(Debug, Default)]
pub struct RenderCounts {
    pub rendered: AtomicU64,
    pub failed: AtomicU64,
    pub subresources: AtomicU64,
    pub refused: AtomicU64,
}

/// The rendering exchange: none can be made in this build.
pub enum RenderExchange {}

impl RenderExchange {
    /// # Errors
    /// Always: this build has no browser driver.
    pub fn new(_: Arc<dyn Exchange>, _: RobotsCache, _: RenderConfig, _: Duration, _: Relay) -> Result<Self, String> {
        Err(NotBuilt::new("rendering pages (--render, or a rule with render = true)", "render").to_string())
    }
}

impl Exchange for RenderExchange {
    fn get<'a>(&'a self, _: Request<'a>) -> BoxFuture<'a, Result<Response, (ErrorKind, String)>> {
        match *self {}
    }
}
