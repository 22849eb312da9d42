//! The error of a stage's unit of work (a map partition, an optimise step,
//! the merge). A failed URL is never one of these: it is a row. Only
//! storage, the temporary folder, or a crawler bug stop a unit of work.

use crate::StoreError;

/// Why a unit of work of a layer stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StageError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The temporary folder (`TMPDIR`) refused a scratch file.
    #[error("scratch file in {dir}: {source}. Point TMPDIR at a writable folder with free space.")]
    Scratch {
        dir: String,
        #[source]
        source: std::io::Error,
    },
    /// The run's lease could not be renewed in time (or was taken over):
    /// the task stopped its requests and did not commit.
    #[error("the run's lease on the data location could not be renewed in time, or another run took it over: this task stopped without committing (run the same command again once the other run is done, or the store is back)")]
    LeaseLost,
    /// A unit of work was asked of a data location where no crawl started.
    #[error("data location {data} has no {what}: start the crawl there with `layercrawl run` first")]
    NotStarted { data: String, what: &'static str },
    /// A map task was given other extractors than its run's: its `doc`
    /// shards would not match the other partitions'.
    #[error("the run's doc files have extractor columns {run:?}, but this task was given {given:?}: register the run's extractors (MapCtx::extract)")]
    ExtractorsDiffer { run: Vec<String>, given: Vec<String> },
    /// The rules file changed while a layer was half done: the layer's
    /// committed partitions made items with the rules it started with.
    #[error("layer {layer} was started with another rules file ({started}); its committed partitions made their items with it, so this run cannot finish the layer with {now}: run again with the rules file the layer started with, or start the crawl in a new data folder")]
    RulesChanged { layer: u32, started: String, now: String },
    /// A stage's own failure, as that stage's error type (the WARC
    /// archive's `warc::WarcError`, last night's crawl's
    /// `map::previous::PreviousError`, the sink's `sink::SinkError`). Each
    /// stage converts its error with `From`: this module names no stage,
    /// as it sits below them (ARCHITECTURE.md, "Layers, bottom to top").
    #[error(transparent)]
    Stage(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The run's settings ask for a capability this build lacks (they
    /// were written by a build that has it).
    #[error(transparent)]
    NotBuilt(#[from] NotBuilt),
    /// A crawler bug (a task that panicked, a worker that died).
    #[error("internal error: {0}")]
    Internal(String),
}

/// A capability this build lacks: `what` (a flag and its value, a command)
/// needs the cargo feature `feature` (docs/src/features.md). The message
/// says how to build a binary that has it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} needs the \"{feature}\" feature: cargo build --release --features {feature} (or --features full)")]
pub struct NotBuilt {
    pub what: String,
    pub feature: &'static str,
}

impl NotBuilt {
    #[must_use]
    pub fn new(what: impl Into<String>, feature: &'static str) -> Self {
        Self { what: what.into(), feature }
    }
}

impl StageError {
    /// A stage's own error, kept whole (`source()` and downcasting reach it).
    #[must_use]
    pub fn stage(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Stage(Box::new(e))
    }

    /// A scratch-file failure in the temporary folder.
    #[must_use]
    pub fn scratch(source: std::io::Error) -> Self {
        Self::Scratch { dir: std::env::temp_dir().display().to_string(), source }
    }
}

/// Cores of this machine: how many of a stage's CPU-bound steps (the
/// optimise step's partitions and shards, the merge's files) run at once.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
}
