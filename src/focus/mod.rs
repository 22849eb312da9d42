//! Focused crawling (README, "Focused crawling"): a crawl plan of keyword
//! groups (`--plan FILE`), each page's relevance to it and its role.
//!
//! - [`plan`]: the plan file, checked with every problem's line and column;
//!   its seed templates make navigation seeds.
//! - [`score`]: a page's relevance from its title, main text and the
//!   anchor text that led to it.
//! - [`PlanColumns`]: the extractor that writes `relevance` and `role` into
//!   `doc` (only when the run has a plan).

pub mod plan;
pub mod score;

use std::sync::Arc;

pub use plan::{parse_plan, Plan, PlanError};
pub use score::{PageText, Scorer};

use crate::extract::main_text::TextFormat;
use crate::extract::{Column, ColumnType, Extractor, Extractors, PageInput, Value};
use crate::rules::Role;

/// A plan file as the run's settings carry it (each map task compiles it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlanSource {
    pub file: String,
    pub text: String,
}

impl PlanSource {
    /// Reads and checks the plan at `path`.
    ///
    /// # Errors
    /// A file that cannot be read, or every problem of the plan.
    pub fn read(path: &std::path::Path) -> Result<(Self, Plan), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let source = Self { file: path.display().to_string(), text };
        let plan = source.compile().map_err(|e| e.to_string())?;
        Ok((source, plan))
    }

    /// The checked plan.
    ///
    /// # Errors
    /// Every problem of the file (checked when the run started, so only a
    /// settings file edited by hand gets here).
    pub fn compile(&self) -> Result<Plan, PlanError> {
        parse_plan(&self.file, &self.text)
    }
}

/// The order of a layer's input (`--order`): what a host's URLs are
/// fetched in, and what a page budget keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// The best link score first (URL order without a plan).
    #[default]
    BestFirst,
    /// URL order, whatever the scores: the baseline.
    Bfs,
}

impl std::str::FromStr for Order {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "best-first" => Ok(Self::BestFirst),
            "bfs" => Ok(Self::Bfs),
            other => Err(format!("{other:?}; allowed best-first, bfs")),
        }
    }
}

/// What the map stage needs to score a page's links: the plan's scorer,
/// and where the page's `relevance` is among the extractor columns.
pub struct LinkScoring {
    pub scorer: Scorer,
    pub relevance_at: Option<usize>,
}

impl std::fmt::Debug for LinkScoring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkScoring").field("plan", &self.scorer.plan().name).finish_non_exhaustive()
    }
}

impl LinkScoring {
    /// For a run with `plan`, whose extractor columns are `columns`.
    ///
    /// # Errors
    /// A plan that no longer compiles.
    pub fn new(plan: &PlanSource, columns: &[String]) -> Result<Self, PlanError> {
        Ok(Self { scorer: Scorer::new(plan.compile()?), relevance_at: columns.iter().position(|c| c == "relevance") })
    }

    /// The page's relevance among its extractor values, if it has one.
    #[must_use]
    pub fn relevance(&self, extra: &[Value]) -> Option<f64> {
        match extra.get(self.relevance_at?) {
            Some(Value::Float64(r)) => Some(*r),
            _ => None,
        }
    }
}

/// The extractors of a run: the built-in ones, then the plan's columns
/// when it has a plan.
///
/// # Errors
/// A plan that no longer compiles (the run checked it when it started).
pub fn run_extractors(format: TextFormat, plan: Option<&PlanSource>) -> Result<Extractors, PlanError> {
    let mut list = Extractors::builtin_list(format);
    if let Some(source) = plan {
        list.push(Arc::new(PlanColumns::new(source.compile()?, format)));
    }
    // The plan's column names are fixed and not the built-ins'.
    Ok(Extractors::new(list).unwrap_or_else(|_| Extractors::builtin(format)))
}

/// The `relevance` and `role` columns of `doc`, for a run with a plan.
///
/// `role` is the plan's role of the page's URL (`nav` or `content`) for
/// every row with a response; `relevance` (0 to 1) is given to content
/// pages that were parsed, and is null for nav pages (they lead to content,
/// their own text is not what the crawl is after), errors and non-HTML.
pub struct PlanColumns {
    scorer: Arc<Scorer>,
    /// The run's `--text-format`, so the main text is computed once.
    format: TextFormat,
}

impl PlanColumns {
    #[must_use]
    pub fn new(plan: Plan, format: TextFormat) -> Self {
        Self { scorer: Arc::new(Scorer::new(plan)), format }
    }
}

impl Extractor for PlanColumns {
    fn name(&self) -> &str {
        "plan"
    }

    fn columns(&self) -> Vec<Column> {
        vec![Column::new("relevance", ColumnType::Float64), Column::new("role", ColumnType::Utf8)]
    }

    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        let role = self.scorer.plan().role(input.url.as_str());
        let relevance = match (role, input.parsed) {
            (Role::Content, Some(parsed)) => {
                let main = parsed.main_text(self.format);
                let title = parsed.page().title.as_deref();
                self.scorer.relevance(&PageText { title, main_text: main.as_deref(), anchor: None })
            }
            _ => None,
        };
        out.push(relevance.map_or(Value::Null, Value::Float64));
        out.push(Value::Utf8(role.as_str().to_string()));
    }
}
