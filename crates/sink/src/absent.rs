//! The Kafka sink's place in a build without the cargo feature `kafka`:
//! `--sink` is refused when the run starts ([`BUILT`] is false), and a
//! task whose run's settings ask for a sink (written by another build)
//! refuses to start, so that no page is left unpublished unnoticed.

use std::sync::Arc;

use crate::rules::Rules;
use crate::store::attempt::Attempt;
use crate::store::manifest::MapManifest;
use crate::store::Store;
use crate::{SinkError, SinkSpec};

/// This build has no Kafka sink.
pub const BUILT: bool = false;

/// The sink of one map task: none can be made in this build.
pub enum TaskSink {}

impl TaskSink {
    /// # Errors
    /// Always: [`SinkError::NotBuilt`].
    pub async fn open(_: &SinkSpec, _: &Store, _: u32, _: u32) -> Result<Self, SinkError> {
        Err(SinkError::NotBuilt)
    }

    /// # Errors
    /// None: no `TaskSink` exists in this build.
    pub async fn published_earlier(&self, _: &Store) -> Result<Option<MapManifest>, SinkError> {
        match *self {}
    }

    /// # Errors
    /// None: no `TaskSink` exists in this build.
    pub async fn publish(
        &self,
        _: &Store,
        _: &Attempt,
        _: &MapManifest,
        _: Option<Arc<Rules>>,
    ) -> Result<Option<MapManifest>, SinkError> {
        match *self {}
    }

    /// # Errors
    /// None: no `TaskSink` exists in this build.
    pub fn accept(&self, _: &str, _: &MapManifest) -> Result<(), SinkError> {
        match *self {}
    }
}
