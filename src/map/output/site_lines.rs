//! The lines of each host's main texts, counted for the cross-page
//! boilerplate of later layers (`--site-boilerplate`; `extract::boilerplate`,
//! docs/src/main-text.md): one small JSON table per map task, under
//! `state/extract/site-lines/layer=L/`, published by the task's commit like
//! its shards. A map task of a later layer reads its partition's tables of
//! the layers before ([`site_for`]).

use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Opening, Output};
use crate::error::StageError;
use crate::extract::boilerplate::{Learner, SiteBoilerplate, Table};
use crate::map::{MapCtx, Processed};
use crate::store::manifest::MapManifest;
use crate::store::{layout, Store, StoreError};

/// The counts of a map attempt.
pub(super) struct SiteLines<'a> {
    staged: &'a Store,
    path: String,
    learner: Learner,
}

impl<'a> SiteLines<'a> {
    /// The output, when the run trims cross-page boilerplate and fills the
    /// `main_text` column.
    pub(super) fn open(at: &Opening<'a>) -> Option<Self> {
        main_text_column(at.ctx)?;
        Some(Self { staged: at.staged, path: layout::site_lines(at.layer, at.part), learner: Learner::default() })
    }
}

impl Output for SiteLines<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        _: &'s mut MapManifest,
        _: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        if let Some((host, lines)) = page.lines.take() {
            self.learner.add(&host, &lines);
        }
        Box::pin(async { Ok(()) })
    }

    fn finish<'s>(&'s mut self, _: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            if !self.learner.is_empty() {
                // Compact: a table is mostly numbers, one entry a line.
                let bytes = serde_json::to_vec(&self.learner.table())
                    .map_err(|source| StoreError::Json { path: self.path.clone(), source })?;
                self.staged.put(&self.path, bytes.into()).await?;
            }
            Ok(())
        })
    }
}

/// The place of the `main_text` column among the extractors' columns, when
/// the run trims cross-page boilerplate.
fn main_text_column(ctx: &MapCtx) -> Option<usize> {
    if !ctx.pages.site_boilerplate {
        return None;
    }
    ctx.extract.column_names().iter().position(|c| c == "main_text")
}

/// What a map task of `layer` trims off its pages' main text: the `main_text`
/// column's place, and the boilerplate lines its partition's hosts showed in
/// the layers before (none in layer 0, or before any host had enough pages);
/// `None` when the run does not trim.
///
/// # Errors
/// When a table cannot be read.
pub(in crate::map) async fn site_for(
    ctx: &MapCtx,
    layer: u32,
    part: u32,
) -> Result<Option<(usize, Option<Arc<SiteBoilerplate>>)>, StageError> {
    let Some(column) = main_text_column(ctx) else { return Ok(None) };
    let mut tables: Vec<Table> = Vec::new();
    for earlier in 0..layer {
        if let Some(t) = ctx.store.get_json::<Table>(&layout::site_lines(earlier, part)).await? {
            tables.push(t);
        }
    }
    let site = SiteBoilerplate::from_tables(&tables);
    Ok(Some((column, (!site.is_empty()).then(|| Arc::new(site)))))
}
