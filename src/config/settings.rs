//! The settings a run's units of work need, kept in the data store.
//!
//! The driver writes them to `state/settings.json` when a run starts (a
//! resumed run may change any setting but the fixed ones of
//! `state/run.json`), so a unit of work run on its own — in another
//! process, on another machine, or in a test — needs nothing but the data
//! store (docs/src/contributing.md, "Units of work").

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{BodyPolicy, CrawlConfig, OptimiseConfig};
use crate::error::StageError;
use crate::fetch::FetchConfig;
use crate::parse::ParseConfig;
use crate::rules::Rules;
use crate::store::manifest::RunState;
use crate::store::{layout, Compression, Store, StoreError};

/// Everything but the fixed settings that a stage reads from a run's config.
/// Each setting is written once: what two stages share (the URL
/// normalisation of the parse and of the fetcher's redirects, `--warc` for
/// the map task's archive and the fetcher's capture) is written in one
/// place and handed to both when read ([`Self::load`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSettings {
    pub depth: u32,
    pub compression: Compression,
    pub layer_timeout: Option<Duration>,
    /// URL normalisation (`--strip-params`), of outlinks and redirects.
    pub urls: std::sync::Arc<crate::urlnorm::UrlPolicy>,
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
            urls: std::sync::Arc::clone(&cfg.urls),
            pages: PageSettings {
                parse: cfg.parse.clone(),
                text_format: cfg.text_format,
                store_text: cfg.store_text,
                site_boilerplate: cfg.site_boilerplate,
                nofollow: cfg.nofollow,
                store_body: cfg.store_body,
                extract_columns: cfg.extractors.column_names(),
                rules: cfg.rules.clone(),
                plan: cfg.plan.clone(),
                entities: cfg.entities.clone(),
                budget: cfg.budget,
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
        let settings: Option<Self> = store.get_json(layout::SETTINGS).await?;
        Ok(settings.map(|mut s| {
            s.pages.parse.urls = std::sync::Arc::clone(&s.urls);
            s.fetch.urls = std::sync::Arc::clone(&s.urls);
            s.fetch.capture = s.pages.warc;
            s
        }))
    }
}

/// How fetched pages become rows: the run's settings for the parse, the
/// stored bodies and the noise filter's map-side labels.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PageSettings {
    pub parse: ParseConfig,
    /// How the main text is rendered (`--text-format`), and which of
    /// `text` and `main_text` are stored (`--store-text`).
    #[serde(default)]
    pub text_format: crate::extract::main_text::TextFormat,
    #[serde(default)]
    pub store_text: crate::extract::main_text::StoreText,
    /// Trim cross-page boilerplate off `main_text` (`--site-boilerplate`;
    /// `extract::boilerplate`).
    #[serde(default)]
    pub site_boilerplate: bool,
    /// Links marked nofollow: obeyed or ignored (`--nofollow`).
    #[serde(default)]
    pub nofollow: crate::config::values::Nofollow,
    pub store_body: BodyPolicy,
    /// The names of the run's extractor columns (`MapCtx::extract`), in
    /// order: a map task given other extractors refuses to write `doc`
    /// shards that the run's others would not match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extract_columns: Vec<String>,
    /// The rules file (`--rules`): its name and text, compiled by each map
    /// task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<RulesSource>,
    /// The crawl plan (`--plan`): its `relevance` and `role` columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::focus::PlanSource>,
    /// The knowledge base and its settings (`--entities`): the `entities`
    /// and `relations` datasets, compiled where the run's extractors are made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entities: Option<crate::extract::entities::EntitiesSource>,
    /// Last night's crawl (`--previous`), opened by each map task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// Read the seeds' sitemaps into layer 1 (`--sitemaps`): at most this
    /// many URLs per host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sitemaps: Option<usize>,
    /// Pages fetched per layer at most (`--max-pages`), given to the best
    /// URLs of the whole layer (in proportion to the partitions' inputs
    /// with `--order bfs`); each partition fetches the first of its input
    /// (best first with a plan) and carries the rest over.
    #[serde(flatten)]
    pub budget: super::PageBudget,
    /// Write each exchange as WARC records (`--warc`; `crate::warc`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warc: bool,
    /// Where each task publishes its pages (`--sink`) as part of its
    /// commit (docs/src/kafka.md), kept as its URL; the settings of a run
    /// that an older build started, which kept the sink's parts instead,
    /// still load (`crate::sink::SinkUrl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink: Option<crate::sink::SinkUrl>,
}

/// A rules file as the run's settings carry it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RulesSource {
    pub file: String,
    pub text: String,
}

impl RulesSource {
    /// A hash of the text, then the file's name, as map manifests record
    /// it (the same text under another path is the same rules).
    #[must_use]
    pub fn identity(&self) -> String {
        format!("{:016x} {}", xxhash_rust::xxh3::xxh3_64(self.text.as_bytes()), self.file)
    }

    /// The compiled rules.
    ///
    /// # Errors
    /// Every problem of the file (checked when the run started, so only a
    /// settings file edited by hand gets here).
    pub fn compile(&self) -> Result<Rules, crate::rules::RulesError> {
        crate::rules::parse_rules(&self.file, &self.text)
    }
}

/// `state/run.json` and `state/settings.json` of the crawl at `store`: what
/// a unit of work of any stage starts from.
///
/// # Errors
/// When either is missing or unreadable.
pub async fn load_run(store: &Store) -> Result<(RunState, RunSettings), StageError> {
    let not_started = |what| StageError::NotStarted { data: store.location().to_string(), what };
    let state: RunState = store.get_json(layout::RUN).await?.ok_or_else(|| not_started(layout::RUN))?;
    let settings = RunSettings::load(store).await?.ok_or_else(|| not_started(layout::SETTINGS))?;
    Ok((state, settings))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Every `.rs` file under `dir`.
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("source folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// One word per thing (Contributing, "Names"): a component's settings
    /// are its `…Config`; `…Settings` names only what a run keeps in its
    /// data location for its units of work, which is this file.
    #[test]
    fn settings_are_only_what_a_run_keeps() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        sources(&root.join("crates"), &mut files);
        let here = root.join(file!());
        let mut elsewhere = Vec::new();
        for file in files.iter().filter(|f| **f != here) {
            let text = std::fs::read_to_string(file).expect("source file");
            for (n, line) in text.lines().enumerate() {
                let Some(rest) = line.split("struct ").nth(1) else { continue };
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if name.ends_with("Settings") && line.trim_start().starts_with("pub") {
                    elsewhere.push(format!("{}:{}: {name}", file.display(), n + 1));
                }
            }
        }
        assert!(
            elsewhere.is_empty(),
            "settings types outside config/settings.rs; name a component's settings …Config: {elsewhere:?}"
        );
        assert!(files.len() > 100, "the scan read {} files", files.len());
    }
}
