//! Executors: where the units of work of a layer run (docs/src/cluster.md,
//! "Executors"). The driver sequences phases and layers; an
//! executor runs one phase's tasks and returns when every one of them has
//! committed, or fails naming the ones that did not.
//!
//! - [`Local`]: in the driver's own process (the default).
//! - [`Processes`]: child processes of the same binary (`layercrawl task`),
//!   W at a time, largest first, each failed task retried.
//! - [`Kubernetes`]: one Indexed Job per phase and layer, watched until it
//!   completes (the cargo feature `kubernetes`).
//!
//! A task needs nothing but the data store ([`task::run_task`]), and each
//! commits exactly once whatever runs it, however often
//! ([`crate::store::attempt`]); so executors differ only in where the
//! process is.

mod kubernetes;
mod local;
mod processes;
pub mod task;

use futures::future::BoxFuture;

pub use kubernetes::{job_object, KubeConfig, Kubernetes, OwnerPod, BUILT as KUBERNETES_BUILT};
pub use local::Local;
pub use processes::Processes;

use crate::error::StageError;

/// The phases of a layer, as `layercrawl task <phase>` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Map partition I of layer L: fetch, parse, write its shards and its
    /// links bucketed by target partition.
    Map,
    /// The optimise step of target partition I after layer L: its share of
    /// layer L+1's input.
    Optimise,
    /// The final merge of every layer (one task; no partition).
    Merge,
}

impl Phase {
    /// The name on the command line and in messages.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Map => "map",
            Self::Optimise => "optimise",
            Self::Merge => "merge",
        }
    }
}

/// One phase of one layer to run: which partitions, in the order to start
/// them (largest first by the cost recorded in the layer before).
#[derive(Clone, Debug)]
pub struct PhaseRun {
    pub phase: Phase,
    pub layer: u32,
    pub parts: Vec<u32>,
}

impl PhaseRun {
    /// The name of one of its tasks, for messages.
    #[must_use]
    pub fn task_name(&self, part: u32) -> String {
        match self.phase {
            Phase::Merge => "merge task".into(),
            p => format!("{} task of layer {} partition {part}", p.as_str(), self.layer),
        }
    }
}

/// Why a phase did not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// A task run in this process failed.
    #[error(transparent)]
    Stage(#[from] StageError),
    /// Tasks that failed every attempt.
    #[error("{phase} phase of layer {layer}: {} task(s) failed (partitions {}): {}. Run the same command again to retry them: committed tasks are kept", failed.len(), failed.iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>().join(", "), failed.first().map_or("", |(_, why)| why.as_str()))]
    Failed { phase: &'static str, layer: u32, failed: Vec<(u32, String)> },
    /// The executor itself could not work (no binary, no cluster access).
    #[error("{0}")]
    Setup(String),
}

/// Where a phase's tasks run.
pub trait Executor: Send + Sync {
    /// The executor's name, for the summary and logs.
    fn name(&self) -> &'static str;

    /// Runs every task of `run` to its commit.
    fn run<'a>(&'a self, run: &'a PhaseRun) -> BoxFuture<'a, Result<(), ExecError>>;
}
