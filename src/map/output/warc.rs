//! The WARC archive (`--warc`): the task's `TaskArchive`, for which the
//! pages' records are built on the rayon pool, and its `WarcFile`, which
//! appends them to `warc/layer=L/part-PPPPP.warc.gz` and writes the CDXJ
//! index when the task finishes (`crate::warc`).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Opening, Output};
use crate::error::StageError;
use crate::map::Processed;
use crate::store::manifest::MapManifest;
use crate::warc::{TaskArchive, WarcFile};

/// A map attempt's archive.
pub(super) struct Warc<'a> {
    archive: Arc<TaskArchive>,
    file: Option<WarcFile<'a>>,
}

impl<'a> Warc<'a> {
    /// The archive of a run with `--warc`; none without. Its id lives in
    /// the data location itself, so it is read through the task's
    /// context, not the attempt's folder.
    ///
    /// # Errors
    /// When the run's archive id cannot be read or made.
    pub(super) async fn open(at: &Opening<'a>) -> Result<Option<Self>, StageError> {
        if !at.ctx.pages.warc {
            return Ok(None);
        }
        let archive = Arc::new(
            TaskArchive::open(&at.ctx.store, at.layer, at.part, &at.ctx.fetcher.settings().politeness.user_agent)
                .await?,
        );
        Ok(Some(Self { file: Some(WarcFile::new(at.staged, Arc::clone(&archive))), archive }))
    }

    /// The archive the pages' records are built for.
    pub(super) fn archive(&self) -> Arc<TaskArchive> {
        Arc::clone(&self.archive)
    }
}

impl Output for Warc<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        _: &'s mut MapManifest,
        _tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            if let (Some(file), Some(records)) = (self.file.as_mut(), page.warc.take()) {
                file.add(records).await?;
            }
            Ok(())
        })
    }

    fn finish<'s>(&'s mut self, _: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            if let Some(file) = self.file.take() {
                file.finish().await?;
            }
            Ok(())
        })
    }
}
