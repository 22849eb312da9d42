//! The Kubernetes executor's place in a build without the cargo feature
//! `kubernetes`: `--executor kubernetes` is refused when the run starts
//! ([`BUILT`] is false), and connecting fails saying so.

use futures::future::BoxFuture;

use super::super::{ExecError, Executor, PhaseRun};
use super::KubeConfig;
use crate::error::NotBuilt;

/// This build has no Kubernetes executor.
pub const BUILT: bool = false;

/// The Kubernetes executor: none can be made in this build.
pub enum Kubernetes {}

impl Kubernetes {
    /// # Errors
    /// Always: this build has no Kubernetes client.
    pub async fn connect(_: KubeConfig, _: &str, _: u32) -> Result<Self, ExecError> {
        Err(ExecError::Setup(NotBuilt::new("--executor kubernetes", "kubernetes").to_string()))
    }

    /// Never called: no value of this type exists.
    #[must_use]
    pub fn with_generation(self, _: u64) -> Self {
        match self {}
    }
}

impl Executor for Kubernetes {
    fn name(&self) -> &'static str {
        match *self {}
    }

    fn run<'a>(&'a self, _: &'a PhaseRun) -> BoxFuture<'a, Result<(), ExecError>> {
        match *self {}
    }
}
