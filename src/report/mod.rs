//! `layercrawl report`: a crawl's health as one self-contained HTML file
//! (docs/src/report.md). It reads what a crawl left in its data
//! location, never the crawl's internals: the manifests under `state/`
//! (each layer's funnel, through the run summary's own sums) and the
//! `doc`, `links`, `entities` and `relations` Parquet files, only the
//! columns it needs. Everything is aggregated here, in Rust
//! ([`data::gather`]), so the page carries figures of bounded size, not the
//! crawl; earlier nights come from their `layercrawl run --json` summaries
//! ([`history`]). The page itself (`report.html` and `report.js`, inside
//! the binary) draws its own charts and graphs: no library, no network.

mod data;
mod entities;
mod graph;
mod history;
mod html;
mod rows;

use futures::future::LocalBoxFuture;
use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use crate::store::{layout, Store, StoreError};

pub use data::ReportData;
pub use history::Night;

/// `layercrawl report` settings.
#[derive(Clone, Debug, clap::Args)]
pub struct ReportArgs {
    /// The crawl's data location (where `layercrawl run` wrote it).
    #[arg(long, value_name = "DIR|URL", default_value = "data")]
    pub data: String,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE", default_value = "report.html")]
    pub out: PathBuf,
    /// Earlier nights for the trends: `layercrawl run --json` summaries,
    /// as files or folders of `.json` files (jobs/nightly.sh keeps them in
    /// data/history).
    #[arg(long, value_name = "FILE|DIR", num_args = 1..)]
    pub history: Vec<PathBuf>,
    /// Print what was written as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Why no report was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The data location holds no crawl.
    #[error(
        "data location {data} holds no crawl (no {}): run `layercrawl run --data {data}` there first",
        layout::RUN
    )]
    NoCrawl { data: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A history file could not be read.
    #[error("history file {path}: {source}")]
    HistoryRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A history file is not what `layercrawl run --json` prints.
    #[error("history file {path} line {line}: {reason}; --history takes what `layercrawl run --json` prints")]
    History { path: String, line: usize, reason: String },
    /// A history folder holds no summary.
    #[error("history folder {path} holds no .json summaries")]
    EmptyHistory { path: String },
    /// The HTML file could not be written.
    #[error("cannot write the report to {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("internal error: {0}")]
    Internal(String),
}

impl ReportError {
    /// Exit code: 2 for bad input (no crawl there, a bad history file), 1
    /// for anything else.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        match self {
            Self::NoCrawl { .. } | Self::HistoryRead { .. } | Self::History { .. } | Self::EmptyHistory { .. } => 2,
            _ => 1,
        }
    }
}

/// What a report run wrote (`--json` prints it).
#[derive(Clone, Debug, Serialize)]
pub struct Written {
    /// The HTML file.
    pub out: String,
    /// Its size, and the size of the figures embedded in it.
    pub bytes: u64,
    pub data_bytes: u64,
    /// The crawl read.
    pub data: String,
    pub layers: usize,
    pub pages: u64,
    pub link_rows: u64,
    pub hosts: u64,
    /// Hosts and host-to-host edges drawn in the link graph.
    pub graph_nodes: usize,
    pub graph_edges: usize,
    /// Entity mentions read (0 for a crawl without `--entities`).
    pub entity_mentions: u64,
    /// Nights in the trends.
    pub nights: usize,
    pub seconds: f64,
}

/// Writes the report of the crawl at `args.data` to `args.out`; `progress`
/// hears what is being read.
///
/// # Errors
/// When the data location holds no crawl, a history file is unreadable or
/// not a summary, the crawl's files cannot be read, or the HTML file cannot
/// be written.
pub fn report<'a>(
    args: &'a ReportArgs,
    progress: &'a (dyn Fn(&str) + Sync),
) -> LocalBoxFuture<'a, Result<Written, ReportError>> {
    // Boxed here, so a caller in another crate (the binary) does not compile
    // this whole async call tree again (Contributing, "Builds").
    Box::pin(write_report(args, progress))
}

async fn write_report(args: &ReportArgs, progress: &(dyn Fn(&str) + Sync)) -> Result<Written, ReportError> {
    let started = Instant::now();
    // History first: a bad file is refused before the crawl is read.
    let paths = args.history.clone();
    let nights = blocking(move || history::read(&paths)).await??;
    let store = open_crawl(&args.data).await?;
    let mut data = data::gather(&store, progress).await?;
    data.history = nights;
    let mut written = Written {
        out: args.out.display().to_string(),
        bytes: 0,
        data_bytes: 0,
        data: store.location().to_string(),
        layers: data.layers.len(),
        pages: data.totals.pages,
        link_rows: data.totals.link_rows,
        hosts: data.totals.hosts,
        graph_nodes: data.link_graph.nodes.len(),
        graph_edges: data.link_graph.edges.len(),
        entity_mentions: data.entities.as_ref().map_or(0, |e| e.mentions),
        nights: data.history.len(),
        seconds: 0.0,
    };
    let html = on_rayon(move || html::render(&data)).await??;
    (written.bytes, written.data_bytes) = (html.page.len() as u64, html.data_bytes as u64);
    progress(&format!("writing {}", written.out));
    let (out, shown) = (args.out.clone(), written.out.clone());
    blocking(move || {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&out, &html.page)
    })
    .await?
    .map_err(|source| ReportError::Write { path: shown, source })?;
    written.seconds = started.elapsed().as_secs_f64();
    Ok(written)
}

/// Opens the data location, refusing one where no crawl started (a local
/// folder that does not exist is not created, as `Store::open` would).
async fn open_crawl(data: &str) -> Result<Store, ReportError> {
    let local = if let Some(rest) = data.strip_prefix("file://") {
        Some(rest)
    } else {
        (!data.contains("://")).then_some(data)
    };
    if local.is_some_and(|dir| !std::path::Path::new(dir).is_dir()) {
        return Err(ReportError::NoCrawl { data: data.to_string() });
    }
    let store = Store::open(data)?;
    if !store.exists(layout::RUN).await? {
        return Err(ReportError::NoCrawl { data: data.to_string() });
    }
    Ok(store)
}

/// Runs `work` on the rayon pool and waits for it without holding an async
/// worker thread (ARCHITECTURE.md, "Invariants": CPU work off the async threads).
async fn on_rayon<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ReportError> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    rayon::spawn(move || {
        let _ = tx.send(work());
    });
    rx.await.map_err(|_| ReportError::Internal("an aggregation on the rayon pool panicked".into()))
}

/// Runs blocking file work (history files, the page's write) on tokio's
/// blocking pool.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ReportError> {
    tokio::task::spawn_blocking(work).await.map_err(|e| ReportError::Internal(format!("a file task failed: {e}")))
}
