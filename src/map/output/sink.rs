//! The run's sink (`--sink`, any kind: `crate::sink::SinkUrl`) as a map
//! task's output: no writer of its own, it takes part in the commit. Its
//! pages are read back from the attempt's staged `doc` shard and published
//! before the manifest is written; a task whose partition an earlier
//! attempt published commits that attempt instead (`crate::sink::Sink`;
//! the book's page of the kind, as "Kafka").

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Opening, Output};
use crate::error::StageError;
use crate::map::Processed;
use crate::rules::Rules;
use crate::sink::Sink;
use crate::store::attempt::Attempt;
use crate::store::manifest::MapManifest;
use crate::store::Store;

/// The sink of one map task.
pub(super) struct SinkOutput {
    sink: Box<dyn Sink>,
    /// The run's rules, which a sink may route pages by (Kafka: a page's
    /// topic is its rule's, its role's, or `pages`).
    rules: Option<Arc<Rules>>,
}

impl SinkOutput {
    /// The sink of a run with `--sink`, opened for the task's partition
    /// (it reaches its destination and looks for an earlier attempt's
    /// publication); none without.
    ///
    /// # Errors
    /// When the sink cannot be reached, or this build lacks its kind.
    pub(super) async fn open(at: &Opening<'_>) -> Result<Option<Self>, StageError> {
        let Some(url) = &at.ctx.pages.sink else { return Ok(None) };
        let sink = url.open(&at.ctx.store, at.layer, at.part).await?;
        Ok(Some(Self { sink, rules: at.rules.cloned() }))
    }
}

impl Output for SinkOutput {
    /// Nothing: the pages are read back from the staged `doc` shard when
    /// the task commits.
    fn add<'s>(
        &'s mut self,
        _: &'s mut Processed,
        _: &'s mut MapManifest,
        _: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async { Ok(()) })
    }

    fn finish<'s>(&'s mut self, _: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async { Ok(()) })
    }

    fn published_earlier<'s>(&'s mut self, base: &'s Store) -> BoxFuture<'s, Result<Option<MapManifest>, StageError>> {
        Box::pin(async move { Ok(self.sink.published_earlier(base).await?) })
    }

    fn publish<'s>(
        &'s mut self,
        base: &'s Store,
        attempt: &'s Attempt,
        manifest: &'s MapManifest,
    ) -> BoxFuture<'s, Result<Option<MapManifest>, StageError>> {
        Box::pin(async move { Ok(self.sink.publish(base, attempt, manifest, self.rules.clone()).await?) })
    }

    fn accept(&self, attempt: &Attempt, committed: &MapManifest) -> Result<(), StageError> {
        Ok(self.sink.accept(&attempt.id, committed)?)
    }
}
