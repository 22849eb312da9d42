//! The settings a run's units of work need, kept in the data store.
//!
//! The driver writes them to `state/settings.json` when a run starts (a
//! resumed run may change any setting but the fixed ones of
//! `state/run.json`), so a unit of work run on its own — in another
//! process, on another machine, or in a test — needs nothing but the data
//! store (ARCHITECTURE.md, "Units of work").

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{CrawlConfig, OptimiseConfig};
use crate::fetch::FetchConfig;
use crate::map::PageSettings;
use crate::store::{layout, Compression, Store, StoreError};

/// Everything but the fixed settings that a stage reads from a run's config.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSettings {
    pub depth: u32,
    pub compression: Compression,
    pub layer_timeout: Option<Duration>,
    pub pages: PageSettings,
    pub fetch: FetchConfig,
    pub optimise: OptimiseConfig,
}

impl RunSettings {
    /// The settings of `cfg`.
    #[must_use]
    pub fn of(cfg: &CrawlConfig) -> Self {
        Self {
            depth: cfg.depth,
            compression: cfg.compression,
            layer_timeout: cfg.layer_timeout,
            pages: PageSettings {
                parse: cfg.parse.clone(),
                store_body: cfg.store_body,
                denoise: cfg.optimise.denoise,
                extract_columns: cfg.extractors.column_names(),
                rules: cfg.rules.clone(),
                plan: cfg.plan.clone(),
                entities: cfg.entities.clone(),
                max_pages: cfg.max_pages,
                order: cfg.optimise.order,
                previous: cfg.previous.clone(),
                sitemaps: cfg.sitemaps,
                warc: cfg.warc,
                sink: cfg.sink.clone(),
            },
            fetch: cfg.fetch.clone(),
            optimise: cfg.optimise.clone(),
        }
    }

    /// Writes them for this run's units of work.
    ///
    /// # Errors
    /// When the write fails.
    pub async fn save(&self, store: &Store) -> Result<(), StoreError> {
        store.put_json(layout::SETTINGS, self).await
    }

    /// Reads the settings of the run that made `store`, or `None` before
    /// any run started there.
    ///
    /// # Errors
    /// When the file cannot be read or decoded.
    pub async fn load(store: &Store) -> Result<Option<Self>, StoreError> {
        store.get_json(layout::SETTINGS).await
    }
}
