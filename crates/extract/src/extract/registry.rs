//! The registry of a run's extractors: the one place their list is made
//! from the run's settings, by the run's config when it starts
//! (`CrawlConfig::extractors`) and by a map task run on its own
//! (`MapCtx::open`) alike, so the two cannot differ.
//!
//! In order: the built-in extractors (main text, filled as `--store-text`
//! says, and the page's metadata), the crawl plan's columns with `--plan`
//! ([`super::plan::PlanColumns`]), then with `--entities` the entities'
//! row extractor ([`super::entities::EntityExtractor`]), compiled for main
//! texts rendered as `--text-format`.

use std::sync::Arc;

use super::entities::{EntitiesError, EntitiesSource, EntityExtractor};
use super::main_text::{StoreText, TextFormat};
use super::plan::PlanColumns;
use super::Extractors;
use crate::focus::{PlanError, PlanSource};

/// Why a run's extractors cannot be made from its settings.
#[derive(Debug, thiserror::Error)]
pub enum RunExtractorsError {
    /// The plan no longer compiles.
    #[error("the run's plan: {0}")]
    Plan(#[from] PlanError),
    /// The entity settings no longer compile.
    #[error("the run's entities: {0}")]
    Entities(#[from] EntitiesError),
}

impl Extractors {
    /// The extractors of a run whose main text is rendered as `format` and
    /// stored as `store`, with its crawl plan and its entity settings.
    ///
    /// # Errors
    /// A plan or entity settings that no longer compile (the run checked
    /// them when it started, so only an edited settings file gets here).
    pub fn of_run(
        format: TextFormat,
        store: StoreText,
        plan: Option<&PlanSource>,
        entities: Option<&EntitiesSource>,
    ) -> Result<Self, RunExtractorsError> {
        let mut list = Self::builtin_storing(format, store);
        if let Some(source) = plan {
            list.push(Arc::new(PlanColumns::new(source.compile()?, format)));
        }
        // The plan's column names are fixed and not the built-ins'.
        let base = Self::new(list).unwrap_or_else(|_| Self::builtin(format));
        let Some(source) = entities else { return Ok(base) };
        let recognizer = Arc::new(source.compile(format)?);
        Ok(base.with_rows(vec![Arc::new(EntityExtractor::new(recognizer))]).map_err(EntitiesError::from)?)
    }
}
