//! Focused crawling (docs/src/focused-crawling.md): a crawl plan of keyword
//! groups (`--plan FILE`), each page's relevance to it and its role.
//!
//! - [`plan`]: the plan file, checked with every problem's line and column;
//!   its seed templates make navigation seeds.
//! - [`score`]: a page's relevance from its title, main text and the
//!   anchor text that led to it.
//! - The extractor that writes `relevance` and `role` into `doc` (only
//!   when the run has a plan) is `extract::plan::PlanColumns`, registered
//!   with the run's other extractors in `extract/registry.rs`; [`LinkScoring`]
//!   reads its `relevance` back for the page's links.
//! - [`Order`]: the order of a layer's input; [`ant`]: the ant-colony
//!   order's pheromone per URL cluster; [`learned`]: the learned order's
//!   URL encoder and Q-network (the cargo feature `learned`); [`Ranking`]: what an order learned, applied
//!   where a partition's share of the next input is written.

pub mod ant;
#[cfg(feature = "learned")]
pub mod learned;
#[cfg(not(feature = "learned"))]
#[path = "learned/absent.rs"]
pub mod learned;
pub mod plan;
pub mod score;
pub mod truth;

use std::sync::Arc;

pub use plan::{parse_plan, Plan, PlanError};
pub use score::{PageText, Scorer};

use crate::store::column::Value;
use crate::store::schema::InRow;
use crate::store::{Store, StoreError};

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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Order {
    /// The best link score first (URL order without a plan).
    #[default]
    BestFirst,
    /// URL order, whatever the scores: the baseline.
    Bfs,
    /// The best link score times its URL cluster's pheromone first
    /// ([`ant`]); needs a plan.
    Ant,
    /// Drawn cluster by cluster by a DQN trained on the crawl's own pages
    /// ([`learned`]); needs a plan.
    Learned,
}

impl std::str::FromStr for Order {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "best-first" => Ok(Self::BestFirst),
            "bfs" => Ok(Self::Bfs),
            "ant" => Ok(Self::Ant),
            "learned" => Ok(Self::Learned),
            other => Err(format!("{other:?}; allowed best-first, bfs, ant, learned")),
        }
    }
}

impl Order {
    /// Sorts a partition's share of a layer's input into this order: URL
    /// order for `bfs`; the best `priority` first for `best-first`; for
    /// `ant`, the best [`ant::Pheromone::priority`] first (the rows keep
    /// their link score as `priority`, so a URL carried over is ranked
    /// again with the next layer's pheromone), as best-first without a
    /// table; `learned` as best-first here (its order is drawn by
    /// [`Ranking::order`]). Ties, and rows without a priority (last), go
    /// by URL.
    pub fn sort(self, rows: &mut [InRow], pheromone: Option<&ant::Pheromone>) {
        use std::cmp::Reverse;
        match (self, pheromone) {
            (Self::Bfs, _) => rows.sort_by(|a, b| a.url.cmp(&b.url)),
            // A priority is never negative, and the bits of non-negative
            // floats sort as the floats do.
            (Self::Ant, Some(p)) => rows.sort_by_cached_key(|r| {
                (Reverse(p.priority(&r.url, r.priority).map(f64::to_bits)), Reverse(r.priority), r.url.clone())
            }),
            _ => rows.sort_by(|a, b| b.priority.cmp(&a.priority).then_with(|| a.url.cmp(&b.url))),
        }
    }

    /// Whether this order ranks every URL by a number that means the same
    /// in every partition, so that a page budget can go to the best URLs
    /// of the whole layer: best-first and ant do, and so does `learned`
    /// by the link score its Q-values start from (its models are a
    /// partition's own, their values not comparable across partitions:
    /// the layer's budget is shared by link score, and each partition's
    /// draws choose which of its URLs fill its share); `bfs` does not (its
    /// budget is shared in proportion to the partitions' inputs).
    #[must_use]
    pub fn ranks(self) -> bool {
        matches!(self, Self::BestFirst | Self::Ant | Self::Learned)
    }

    /// The rank of `row` in this order, in millionths: the key [`Self::sort`]
    /// sorts by, best first (its `priority`, or for `ant` the priority times
    /// the pheromone; for `learned` the priority, which its draws do not
    /// sort by); none for a row without a priority, which goes last.
    /// Rounding to millionths keeps the sorted order: ranks never rise
    /// along a sorted input.
    #[must_use]
    pub fn rank(self, row: &InRow, pheromone: Option<&ant::Pheromone>) -> Option<i32> {
        match (self, pheromone) {
            (Self::Ant, Some(p)) =>
            {
                #[allow(clippy::cast_possible_truncation)]
                p.priority(&row.url, row.priority).map(|x| (x.clamp(0.0, 1.0) * 1e6).round() as i32)
            }
            _ => row.priority,
        }
    }
}

/// What a partition's order learned from the layer just fetched, applied
/// where its share of the next layer's input is written
/// (`optimise::write_partition_input`): nothing for best-first and bfs,
/// the pheromone table for `ant`, the trained scheduler for `learned`.
#[derive(Debug)]
pub enum Ranking {
    Plain(Order),
    Ant(ant::Pheromone),
    Learned(Arc<learned::Scheduler>),
}

impl Ranking {
    /// Partition `part`'s ranking after `layer` in `order`: the ant-colony
    /// and learned orders learn from the layer's pages first, writing their
    /// state through `store` (the optimise task's attempt).
    ///
    /// # Errors
    /// On storage failures, or a learned model that fails.
    pub async fn learn(store: &Store, layer: u32, part: u32, order: Order) -> Result<Self, crate::error::StageError> {
        Ok(match order {
            Order::Ant => Self::Ant(ant::advance(store, layer, part).await?),
            Order::Learned => Self::Learned(Arc::new(learned::advance(store, layer, part).await?)),
            plain => Self::Plain(plain),
        })
    }

    /// `rows`, partition `part`'s share of layer `target`'s input, in the
    /// order (the learned order writes its draws through `store`).
    ///
    /// # Errors
    /// On storage failures, or a learned model that fails.
    pub async fn order(
        &self,
        store: &Store,
        target: u32,
        part: u32,
        mut rows: Vec<InRow>,
    ) -> Result<Vec<InRow>, crate::error::StageError> {
        match self {
            Self::Plain(order) => order.sort(&mut rows, None),
            Self::Ant(p) => Order::Ant.sort(&mut rows, Some(p)),
            Self::Learned(s) => return Arc::clone(s).order(store, target, part, rows).await,
        }
        Ok(rows)
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

/// A map task's tally of its pages' relevance: the pages scored and those
/// at or above the plan's threshold (the summary's harvest rate); with
/// `--order ant`, each URL cluster's deposits; with `--order learned`,
/// every page's reward.
#[derive(Debug)]
pub struct Harvest {
    scoring: Arc<LinkScoring>,
    threshold: f64,
    scored: u64,
    relevant: u64,
    deposits: Option<ant::Deposits>,
    outcomes: Option<learned::Outcomes>,
}

impl Harvest {
    /// The tally of a run with a plan whose pages are scored by `scoring`.
    #[must_use]
    pub fn new(scoring: Arc<LinkScoring>, order: Order) -> Self {
        let threshold = scoring.scorer.plan().threshold;
        let deposits = (order == Order::Ant).then(|| ant::Deposits::new(threshold));
        let outcomes = (order == Order::Learned).then(learned::Outcomes::default);
        Self { scoring, threshold, scored: 0, relevant: 0, deposits, outcomes }
    }

    /// Counts the page at `url`, whose extractor values are `extra`, if it
    /// was scored (and, for the learned order, whether or not it was).
    pub fn add(&mut self, url: &str, extra: &[Value]) {
        let relevance = self.scoring.relevance(extra);
        if let Some(o) = &mut self.outcomes {
            o.add(url, learned::reward(relevance));
        }
        let Some(r) = relevance else { return };
        self.scored += 1;
        self.relevant += u64::from(r >= self.threshold);
        if let Some(d) = &mut self.deposits {
            d.add(url, r);
        }
    }

    /// Writes the deposits of partition `part`'s pages of `layer`, or its
    /// outcomes and transitions (through the map task's attempt `store`),
    /// if it tallies them; returns the pages scored and relevant.
    ///
    /// # Errors
    /// On storage failures.
    pub async fn finish(self, store: &Store, layer: u32, part: u32) -> Result<(u64, u64), StoreError> {
        if let Some(d) = &self.deposits {
            ant::write_deposits(store, layer, part, d).await?;
        }
        if let Some(o) = self.outcomes {
            learned::record(store, layer, part, o).await?;
        }
        Ok((self.scored, self.relevant))
    }
}
