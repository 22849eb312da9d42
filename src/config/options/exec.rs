//! The options of where a run's tasks run (docs/src/cluster.md).

use serde::{Deserialize, Serialize};

use crate::config::values::Span;

/// The executor named by `--executor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// In this process.
    Local,
    /// Child processes of this program, --workers at a time.
    Processes,
    /// Kubernetes Indexed Jobs.
    Kubernetes,
}

/// Where the tasks of each layer run.
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Executors")]
pub struct Executors {
    /// Where the tasks of each layer run: in this process (local), as
    /// child processes of this program, W at a time (processes), or as
    /// Kubernetes Indexed Jobs (kubernetes; docs/src/cluster.md).
    #[arg(long, value_name = "local|processes|kubernetes", value_enum, default_value_t = ExecutorKind::Local)]
    pub executor: ExecutorKind,
    /// Tasks at once with --executor processes or kubernetes (default: the
    /// number of cores).
    #[arg(long, value_name = "W")]
    pub workers: Option<usize>,
    /// Kubernetes: the task pods' image (env LAYERCRAWL_IMAGE).
    #[arg(long, value_name = "IMAGE", env = "LAYERCRAWL_IMAGE")]
    pub image: Option<String>,
    /// Kubernetes: the namespace of the Jobs (default: the driver pod's own).
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Kubernetes: a Secret whose keys become the task pods' environment
    /// (storage credentials).
    #[arg(long, value_name = "NAME")]
    pub worker_secret: Option<String>,
    /// Kubernetes: the task pods' ServiceAccount.
    #[arg(long, value_name = "NAME", default_value = "layercrawl-worker")]
    pub service_account: String,
    /// Kubernetes: the task pods' seccomp profile, a file under each node's
    /// kubelet seccomp folder (type Localhost) instead of the runtime's
    /// default. Rendering needs one that lets Chromium's sandbox make user
    /// namespaces: jobs/k8s/seccomp/render.json (docs/src/cluster.md).
    #[arg(long, value_name = "PATH")]
    pub worker_seccomp_profile: Option<String>,
    /// When another run holds the data location, wait for it to finish
    /// instead of refusing (exit code 2).
    #[arg(long)]
    pub wait: bool,
    /// How long the run's lease on the data location may go unrenewed
    /// before another run takes it over (6s to 1h; the run renews it every
    /// sixth of this and stops its requests at two thirds). Shorter: a
    /// stalled driver's location is free sooner; longer: a store that
    /// answers slowly stops no run (docs/src/cluster.md).
    #[arg(long, value_name = "DURATION", default_value_t = Span(crate::store::lease::EXPIRY))]
    pub lease_expiry: Span,
    /// Print the Kubernetes Jobs the run would create (for the first layer
    /// and the merge), and exit.
    #[arg(long)]
    #[serde(skip)]
    pub dry_run: bool,
}
