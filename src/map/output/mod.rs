//! A map task's outputs, as Vector has sinks: each is one [`Output`] in a
//! module of its own (`doc`, `links`, the noise filter's `samples`, the
//! rules' `items`, the row extractors' datasets such as `entities` and
//! `relations`, the `warc` archive, the run's `sink` (any kind: Kafka…),
//! the main texts' `site_lines`), and [`Outputs::open`] is the one place
//! they are registered.
//!
//! An output is opened when the task starts (it may look for an earlier
//! attempt's publication then: [`Output::published_earlier`]), takes every
//! processed page ([`Output::add`]) and is finished into the task's commit
//! ([`Outputs::finish`], then [`Finished::commit`]):
//!
//! 1. every output writes what it holds and closes its files, which are
//!    staged in the attempt's folder (`Store::staged_in`);
//! 2. every output may publish before the manifest ([`Output::publish`]):
//!    an output that must hold exactly what the data store holds (a sink:
//!    Kafka sends the staged pages in one transaction) publishes them
//!    there, or finds that an earlier attempt did and commits that attempt
//!    instead;
//! 3. the manifest is written create-if-absent; the attempt that wrote it
//!    publishes its folder; an attempt that finds another's manifest asks
//!    each output whether it accepts it ([`Output::accept`]), drops its own
//!    folder and finishes the other's publish (`attempt::roll_forward`).
//!
//! So a new dataset is a module here and a line in [`Outputs::open`]. Its
//! CPU part (building a record, recognising entities) runs in
//! [`super::process`] on the rayon pool and rides on [`Processed`], which
//! the output takes its share of; its paths live in `store/layout.rs`. A
//! new kind of sink changes nothing here: `sink.rs` takes every kind
//! through `crate::sink::Sink` (the crate docs of `crates/sink/` list the
//! places a kind touches).

mod doc;
mod extracted;
mod items;
mod links;
mod samples;
mod shard;
mod sink;
mod site_lines;
mod warc;

pub(in crate::map) use site_lines::site_for;

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::StageError;
use crate::map::{MapCtx, Processed};
use crate::rules::Rules;
use crate::store::attempt::{self, Attempt};
use crate::store::manifest::MapManifest;
use crate::store::schema::LinkRow;
use crate::store::{layout, Created, Store, StoreError};
use crate::warc::TaskArchive;

/// While memory is near `--max-memory` (the fetcher's governor says so),
/// batches are this many times smaller: fewer rows wait in memory.
const TIGHT_BATCH_DIVISOR: usize = 8;

/// What a map task's outputs are opened with.
pub(in crate::map) struct Opening<'a> {
    /// The map task's context (the run's settings and extractors).
    pub ctx: &'a MapCtx,
    /// The attempt's handle on the data store: writes go to its folder.
    pub staged: &'a Store,
    pub layer: u32,
    pub part: u32,
    /// The run's rules, compiled (`--rules`).
    pub rules: Option<&'a Arc<Rules>>,
}

/// One output of a map task. Every method but [`Output::add`] and
/// [`Output::finish`] has a default that does nothing.
pub(in crate::map) trait Output: Send {
    /// Takes this output's share of one processed page (moving out of
    /// `page` what it keeps), writing a batch when one is full; `tight`:
    /// memory is near its cap, so batches are smaller.
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        manifest: &'s mut MapManifest,
        tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>>;

    /// Bytes of pages it holds waiting for a batch (counted against the
    /// memory cap).
    fn buffered_bytes(&self) -> usize {
        0
    }

    /// Writes what it holds of pages now: the memory cap wants them back.
    fn flush(&mut self) -> BoxFuture<'_, Result<(), StageError>> {
        Box::pin(async { Ok(()) })
    }

    /// Links that no page of the task holds (the seeds' sitemaps): the
    /// `links` output takes them.
    fn add_links(&mut self, _links: &mut Vec<LinkRow>) {}

    /// Writes what is left and closes its files, staged in the attempt's
    /// folder; counts what it wrote into `manifest`.
    fn finish<'s>(&'s mut self, manifest: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>>;

    /// Before the task fetches: the manifest of an earlier attempt that
    /// this output published, committed now, if there is one (the task
    /// then has nothing left to do).
    fn published_earlier<'s>(&'s mut self, _base: &'s Store) -> BoxFuture<'s, Result<Option<MapManifest>, StageError>> {
        Box::pin(async { Ok(None) })
    }

    /// Before the manifest is written: publishes the attempt's staged
    /// outputs, or finds an earlier attempt that did and commits it,
    /// returning its manifest (the attempt is then dropped).
    fn publish<'s>(
        &'s mut self,
        _base: &'s Store,
        _attempt: &'s Attempt,
        _manifest: &'s MapManifest,
    ) -> BoxFuture<'s, Result<Option<MapManifest>, StageError>> {
        Box::pin(async { Ok(None) })
    }

    /// Another attempt's manifest was written first: an error if this
    /// output published `attempt` and so cannot take `committed`.
    ///
    /// # Errors
    /// When the data store and this output would disagree.
    fn accept(&self, _attempt: &Attempt, _committed: &MapManifest) -> Result<(), StageError> {
        Ok(())
    }
}

/// The outputs of one map attempt, in the order they take a page.
pub(in crate::map) struct Outputs<'a> {
    list: Vec<Box<dyn Output + 'a>>,
    /// The WARC output's archive, which the page's records are built for
    /// on the rayon pool (`ProcessCtx::warc`).
    archive: Option<Arc<TaskArchive>>,
}

/// What opening a task's outputs found.
pub(in crate::map) enum Opened<'a> {
    /// The outputs, ready for the task's pages.
    Ready(Outputs<'a>),
    /// An earlier attempt's manifest, committed: nothing left to do.
    Committed(Box<MapManifest>),
}

impl<'a> Outputs<'a> {
    /// Opens every output the run has: the registry of a map task's
    /// outputs. An output the run does not have opens as none; no file is
    /// made before an output's first row.
    ///
    /// # Errors
    /// When an output cannot be opened (a sink's brokers unreachable, the
    /// archive's id unreadable), or an earlier attempt's commit fails.
    pub(in crate::map) async fn open(at: &Opening<'a>) -> Result<Opened<'a>, StageError> {
        let mut list: Vec<Box<dyn Output + 'a>> = Vec::new();
        // The sink first: a partition an earlier attempt published is
        // committed from that attempt's outputs, not fetched again.
        if let Some(sink) = sink::SinkOutput::open(at).await? {
            list.push(Box::new(sink));
        }
        let warc = warc::Warc::open(at).await?;
        let archive = warc.as_ref().map(warc::Warc::archive);
        if let Some(w) = warc {
            list.push(Box::new(w));
        }
        if let Some(e) = extracted::Extracted::open(at) {
            list.push(Box::new(e));
        }
        list.push(Box::new(samples::Samples::open(at)));
        if let Some(s) = site_lines::SiteLines::open(at) {
            list.push(Box::new(s));
        }
        if let Some(i) = items::Items::open(at) {
            list.push(Box::new(i));
        }
        // After every output that reads the `doc` row (the items take its
        // URL): this one takes it.
        list.push(Box::new(doc::Doc::open(at)));
        list.push(Box::new(links::Links::open(at)));
        let mut outputs = Self { list, archive };
        for out in &mut outputs.list {
            if let Some(done) = out.published_earlier(&at.ctx.store).await? {
                return Ok(Opened::Committed(Box::new(done)));
            }
        }
        Ok(Opened::Ready(outputs))
    }

    /// The archive the page's WARC records are built for (`--warc`).
    pub(in crate::map) fn archive(&self) -> Option<Arc<TaskArchive>> {
        self.archive.clone()
    }

    /// Hands one processed page to every output.
    ///
    /// # Errors
    /// When a batch cannot be built or written.
    pub(in crate::map) async fn add(
        &mut self,
        mut page: Processed,
        manifest: &mut MapManifest,
        tight: bool,
    ) -> Result<(), StageError> {
        for out in &mut self.list {
            out.add(&mut page, manifest, tight).await?;
        }
        Ok(())
    }

    /// Bytes of pages the outputs hold waiting for their batches.
    pub(in crate::map) fn buffered_bytes(&self) -> usize {
        self.list.iter().map(|o| o.buffered_bytes()).sum()
    }

    /// Writes what the outputs hold of pages now (the memory cap wants
    /// their pages back).
    ///
    /// # Errors
    /// When a batch cannot be built or written.
    pub(in crate::map) async fn flush_pages(&mut self) -> Result<(), StageError> {
        for out in &mut self.list {
            out.flush().await?;
        }
        Ok(())
    }

    /// Links that no page of this task holds (the seeds' sitemaps).
    pub(in crate::map) fn add_links(&mut self, mut links: Vec<LinkRow>) {
        for out in &mut self.list {
            out.add_links(&mut links);
        }
    }

    /// Writes what is left and closes every file; `manifest` counts what
    /// was written. The outputs then wait for the task's commit.
    ///
    /// # Errors
    /// When a batch cannot be built or written, or a file not closed.
    pub(in crate::map) async fn finish(mut self, manifest: &mut MapManifest) -> Result<Finished<'a>, StageError> {
        for out in &mut self.list {
            out.finish(manifest).await?;
        }
        Ok(Finished { list: self.list })
    }
}

/// A map attempt's outputs, written and staged, waiting for its commit.
pub(in crate::map) struct Finished<'a> {
    list: Vec<Box<dyn Output + 'a>>,
}

impl Finished<'_> {
    /// Commits `attempt` by its manifest, written only if none is there:
    /// of two attempts of one task, the first to commit wins (its outputs
    /// are published) and the other gets the committed manifest back.
    /// Outputs that publish (a sink) do so first, and the attempt whose
    /// pages they published is the one that commits (docs/src/kafka.md).
    ///
    /// # Errors
    /// When an output fails to publish, or the store fails.
    pub(in crate::map) async fn commit(
        mut self,
        base: &Store,
        attempt: &Attempt,
        manifest: MapManifest,
    ) -> Result<(MapManifest, Created), StageError> {
        // Fenced before anything leaves the attempt (a sink's transaction
        // included): a newer lease generation refuses it (`store/fencing.rs`).
        attempt.pass_fence(base).await?;
        for out in &mut self.list {
            if let Some(theirs) = out.publish(base, attempt, &manifest).await? {
                return Ok((theirs, Created::Existed));
            }
        }
        let path = layout::map_manifest(manifest.layer, manifest.partition);
        match base.put_json_new(&path, &manifest).await? {
            Created::New => {
                base.publish(&attempt.dir).await?;
                Ok((manifest, Created::New))
            }
            Created::Existed => {
                let theirs: MapManifest = base.get_json(&path).await?.ok_or_else(|| StoreError::Schema {
                    path: path.clone(),
                    reason: "the manifest vanished while it was read".into(),
                })?;
                for out in &self.list {
                    out.accept(attempt, &theirs)?;
                }
                if theirs.attempt != attempt.id {
                    attempt::discard(base, &attempt.dir).await?;
                }
                attempt::roll_forward(base, &attempt.task_dir, &theirs).await?;
                Ok((theirs, Created::Existed))
            }
        }
    }
}

/// The size a batch waits for: `rows`, or fewer while memory is tight.
const fn batch_rows(rows: usize, tight: bool) -> usize {
    if tight {
        rows / TIGHT_BATCH_DIVISOR
    } else {
        rows
    }
}
