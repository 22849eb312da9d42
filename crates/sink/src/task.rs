//! The sink of one map task: the contract every kind of sink keeps with
//! the map task's commit (`map/output/` in the binary, docs/src/kafka.md
//! for Kafka's side of it).

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::rules::Rules;
use crate::store::attempt::Attempt;
use crate::store::manifest::MapManifest;
use crate::store::Store;
use crate::SinkError;

/// The sink of the map task of one partition of one layer, opened by
/// [`crate::SinkUrl::open`] when the task starts (a trait object has no
/// constructor: opening is its kind's, through its [`crate::SinkConfig`]).
///
/// The order of one attempt's calls: [`Sink::published_earlier`] before it
/// fetches; once its outputs are staged, [`Sink::publish`] before its
/// manifest is written; [`Sink::accept`] only when another attempt's
/// manifest was written first. A kind that keeps this contract leaves its
/// destination and the data store with the same pages, each once, however
/// often the task is killed and run again.
///
/// The calls take `&self` and return boxed futures, so that the map task
/// holds any kind as a `Box<dyn Sink>`.
pub trait Sink: Send + Sync {
    /// When an earlier attempt published the partition (a run killed
    /// between the sink's commit and the manifest's), commits that
    /// attempt's outputs and returns its manifest: the task has nothing
    /// left to fetch.
    ///
    /// # Errors
    /// When that attempt's outputs are gone, or storage fails.
    fn published_earlier<'a>(&'a self, store: &'a Store) -> BoxFuture<'a, Result<Option<MapManifest>, SinkError>>;

    /// Publishes the pages of `attempt` (its staged `doc` shard) before its
    /// manifest is written, unless another attempt published first: that
    /// attempt is then committed and its manifest returned (the caller
    /// drops its own). With `None`, the attempt's pages are out (or were,
    /// by an earlier call) and its manifest may be written; a manifest
    /// found written then must name it ([`Sink::accept`]). `rules` are the
    /// run's compiled rules (`--rules`), which may route pages.
    ///
    /// # Errors
    /// When the destination is unreachable or refuses the pages, or
    /// storage fails: the attempt is then not committed.
    fn publish<'a>(
        &'a self,
        store: &'a Store,
        attempt: &'a Attempt,
        manifest: &'a MapManifest,
        rules: Option<Arc<Rules>>,
    ) -> BoxFuture<'a, Result<Option<MapManifest>, SinkError>>;

    /// Whether the manifest `committed`, found written when attempt
    /// `published` went to write its own, is that attempt's: the sink
    /// holds `published`'s pages.
    ///
    /// # Errors
    /// When it names another attempt: the sink and the data store would
    /// disagree.
    fn accept(&self, published: &str, committed: &MapManifest) -> Result<(), SinkError>;
}
