//! `layercrawl export`: a crawl's Parquet loaded into relational tables of
//! SQLite or PostgreSQL (docs/src/export.md). A separate command
//! over the crawl's published files, never its internal state: it reads
//! `doc`, `links` and, when the crawl has them, `entities` and `relations`
//! through the crawl's [`Store`] (a folder or an object store).
//!
//! The tables and their keys are in [`tables`]; [`read`] lists and streams
//! the files; [`sqlite`] and [`postgres`] write. Page content is stored
//! once per content hash (`content`), and every row has a key, so loading
//! the same rows again adds nothing: an export of a deeper, resumed or
//! repeated crawl into the same database adds only the rows it lacks.
//! Each export is one transaction: it lands whole or not at all.
//!
//! The writers need the cargo feature `sql` (SQLite's C sources, the
//! PostgreSQL client and its TLS); without it the command is refused with
//! a message saying so ([`BUILT`] is false).

#[cfg(not(feature = "sql"))]
mod absent;
#[cfg(feature = "sql")]
mod postgres;
mod read;
#[cfg(feature = "sql")]
mod sqlite;
pub mod tables;

#[cfg(not(feature = "sql"))]
use absent::{postgres, sqlite};

/// Whether this build has the SQL writers (the cargo feature `sql`).
pub const BUILT: bool = cfg!(feature = "sql");

use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

use futures::future::LocalBoxFuture;
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::store::{Store, StoreError};
use tables::{Dataset, Ordinals, Table};

/// `layercrawl export` as typed on the command line.
#[derive(clap::Args, Clone)]
pub struct ExportArgs {
    /// The crawl's data location (a folder or an object-store URL).
    #[arg(long, value_name = "DIR|URL", default_value = "data")]
    pub data: String,
    /// Where to: sqlite:FILE (created if missing), or PostgreSQL as libpq
    /// takes it: postgres://USER@HOST:PORT/DB[?sslmode=verify-full&sslrootcert=FILE]
    /// (also postgresql://) or 'host=H port=P user=U dbname=DB ...'. The
    /// password from PGPASSWORD or a password file (PGPASSFILE, ~/.pgpass).
    #[arg(long, value_name = "DEST")]
    pub to: String,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `--to` may hold a password: shown redacted, as everywhere.
impl std::fmt::Debug for ExportArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportArgs")
            .field("data", &self.data)
            .field("to", &postgres::redact(&self.to))
            .field("json", &self.json)
            .finish()
    }
}

/// A validated export: the data location and the database.
#[derive(Debug, Clone)]
pub struct ExportConfig {
    pub data: String,
    pub to: Destination,
    pub json: bool,
}

impl ExportConfig {
    /// Checks the flags.
    ///
    /// # Errors
    /// When `--to` is not an accepted destination.
    pub fn from_args(args: &ExportArgs) -> Result<Self, ExportError> {
        Ok(Self { data: args.data.clone(), to: Destination::parse(&args.to)?, json: args.json })
    }
}

/// The database an export writes to.
#[derive(Debug, Clone)]
pub enum Destination {
    /// A SQLite database file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL server: its settings and its name without a password.
    Postgres(Box<postgres::Target>),
}

const ACCEPTED: &str =
    "accepted are sqlite:FILE, postgres://USER@HOST:PORT/DB (or postgresql://) and 'host=H user=U dbname=DB ...'";

impl Destination {
    /// Parses `--to`.
    ///
    /// # Errors
    /// When the scheme is not one of the accepted ones or the URL is incomplete.
    pub fn parse(to: &str) -> Result<Self, ExportError> {
        Self::parse_with_env(to, &|key| std::env::var(key).ok())
    }

    /// [`Self::parse`] with the environment given (`PGPASSWORD`,
    /// `PGPASSFILE`, `PGSSLMODE`, `PGSSLROOTCERT`, `HOME`).
    ///
    /// # Errors
    /// As [`Self::parse`].
    pub fn parse_with_env(to: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ExportError> {
        if !BUILT {
            return Err(crate::error::NotBuilt::new("layercrawl export", "sql").into());
        }
        // The string as given is never shown: it may hold a password.
        let bad =
            |reason: &str| ExportError::BadDestination { given: postgres::redact(to), reason: reason.to_string() };
        if let Some(file) = to.strip_prefix("sqlite:") {
            let file = file.strip_prefix("//").unwrap_or(file);
            if file.is_empty() {
                return Err(bad("no file after sqlite:"));
            }
            return Ok(Self::Sqlite(file.into()));
        }
        if to.starts_with("postgres://") || to.starts_with("postgresql://") || postgres::is_key_value(to) {
            return postgres::parse(to, env).map(|t| Self::Postgres(Box::new(t))).map_err(|e| bad(&e));
        }
        let scheme = to.split_once(':').map_or(to, |(s, _)| s);
        Err(bad(&format!("unknown destination {:?}", postgres::redact(scheme))))
    }

    /// The destination for messages (a PostgreSQL password hidden).
    #[must_use]
    pub fn name(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite:{}", path.display()),
            Self::Postgres(target) => target.name.clone(),
        }
    }
}

/// What can stop an export; each names what is at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// `--to` is not an accepted destination.
    #[error("bad --to {given:?}: {reason}; {ACCEPTED}")]
    BadDestination { given: String, reason: String },
    /// The data location holds no crawl.
    #[error(
        "no crawl in {location}: it has no {doc}/layer=L/*.parquet files; run `layercrawl run --data {location}` first",
        doc = crate::store::dataset::DOC.name
    )]
    NoCrawl { location: String },
    /// Reading the crawl failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A column of a file cannot be read as its table's column.
    #[error("cannot export column {column:?} of {path}: {reason}")]
    Column { path: String, column: String, reason: String },
    /// The database could not be opened or connected to.
    #[error("cannot reach the database {destination}: {reason}")]
    Unreachable { destination: String, reason: String },
    /// The database refused a statement.
    #[error("database {destination}: {doing}: {reason}")]
    Database { destination: String, doing: String, reason: String },
    /// This build has no SQL writers.
    #[error(transparent)]
    NotBuilt(#[from] crate::error::NotBuilt),
}

impl ExportError {
    /// The exit code: 2 for bad flags or input, 1 otherwise.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::BadDestination { .. } | Self::NoCrawl { .. } | Self::Column { .. } | Self::NotBuilt(_) => 2,
            _ => 1,
        }
    }
}

/// Rows of one table: read from the crawl, added to the database, and
/// already there (their key was present).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableRows {
    pub read: u64,
    pub added: u64,
    pub already_there: u64,
}

/// What an export did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExportSummary {
    pub data: String,
    pub to: String,
    /// Per table, in load order; `entities` and `relations` only when the
    /// crawl has them.
    pub tables: BTreeMap<String, TableRows>,
    /// Rows added over all tables (0: the database had everything).
    pub rows_added: u64,
    /// Rows read from the crawl's files.
    pub rows_read: u64,
    pub seconds: f64,
    pub rows_per_second: f64,
}

impl ExportSummary {
    /// The summary as a small text table.
    #[must_use]
    pub fn table(&self) -> String {
        let mut s = format!(
            "exported {} to {} in {:.1} s ({:.0} rows/s)\n{:<10} {:>12} {:>12} {:>14}\n",
            self.data, self.to, self.seconds, self.rows_per_second, "table", "read", "added", "already there"
        );
        for t in tables::ALL {
            if let Some(r) = self.tables.get(t.name) {
                s.push_str(&format!("{:<10} {:>12} {:>12} {:>14}\n", t.name, r.read, r.added, r.already_there));
            }
        }
        if self.rows_added == 0 {
            s.push_str("nothing new: every row was already in the database\n");
        }
        s
    }
}

/// Rows bound for one table.
// Without the writers (no `sql` feature) nothing reads a chunk.
#[cfg_attr(not(feature = "sql"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Chunk {
    pub table: &'static Table,
    pub rows: arrow_array::RecordBatch,
}

/// Added and already-there rows per table, as a writer counts them.
pub(crate) type Loaded = BTreeMap<&'static str, (u64, u64)>;

/// A database being written, in its one transaction.
enum DatabaseWriter {
    Sqlite(sqlite::Writer),
    Postgres(Box<postgres::Writer>),
}

impl DatabaseWriter {
    async fn open(to: &Destination) -> Result<Self, ExportError> {
        Ok(match to {
            Destination::Sqlite(path) => Self::Sqlite(sqlite::Writer::open(path.clone(), to.name()).await?),
            Destination::Postgres(target) => Self::Postgres(Box::new(postgres::Writer::open(target).await?)),
        })
    }

    async fn write(&mut self, chunk: Chunk) -> Result<(), ExportError> {
        match self {
            Self::Sqlite(w) => w.write(chunk).await,
            Self::Postgres(w) => w.write(chunk).await,
        }
    }

    async fn finish(self) -> Result<Loaded, ExportError> {
        match self {
            Self::Sqlite(w) => w.finish().await,
            Self::Postgres(w) => w.finish().await,
        }
    }
}

/// What the reading side carries from batch to batch: each page's row
/// numbers in the current layer, and the content hashes already sent.
#[derive(Default)]
struct ReadState {
    ords: Ordinals,
    at: Option<(Dataset, i32)>,
    seen: HashSet<i64>,
}

/// Exports the crawl at `cfg.data` to `cfg.to`, with a progress bar on
/// stderr when `progress` (hidden when stderr is not a terminal).
///
/// # Errors
/// When the data location holds no crawl or cannot be read, the database
/// cannot be reached, or it refuses a statement; nothing is then written.
pub fn export(cfg: &ExportConfig, progress: bool) -> LocalBoxFuture<'_, Result<ExportSummary, ExportError>> {
    // Boxed here, so a caller in another crate (the binary) does not compile
    // this whole async call tree again (Contributing, "Builds").
    Box::pin(export_crawl(cfg, progress))
}

async fn export_crawl(cfg: &ExportConfig, progress: bool) -> Result<ExportSummary, ExportError> {
    let started = Instant::now();
    let local = !cfg.data.contains("://") || cfg.data.starts_with("file://");
    let folder = cfg.data.strip_prefix("file://").unwrap_or(&cfg.data);
    if local && !std::path::Path::new(folder).is_dir() {
        // Opening a folder creates it: a mistyped --data would look like an empty crawl.
        return Err(ExportError::NoCrawl { location: cfg.data.clone() });
    }
    let store = Store::open(&cfg.data)?;
    let mut sources = read::sources(&store).await?;
    let mut rows = BTreeMap::<&'static str, TableRows>::new();
    let with_content = sources.iter().any(|s| s.dataset == Dataset::Doc);
    for s in &sources {
        rows.entry(tables::table_of(s.dataset).name).or_default();
    }
    if with_content {
        rows.entry(tables::CONTENT.name).or_default();
    }
    let total: u64 = sources.iter().map(|s| s.rows).sum();
    let bar = progress_bar(progress, total);

    let mut writer = DatabaseWriter::open(&cfg.to).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(4);
    let produce = async {
        let mut state = ReadState::default();
        let mut again = 0u64;
        let mut read = BTreeMap::<&'static str, u64>::new();
        for source in &mut sources {
            bar.set_message(format!("{} layer {}", source.dataset.folder(), source.layer));
            let mut batches = source.batches();
            while let Some(batch) = batches.next().await {
                let batch = batch?;
                let n = batch.num_rows() as u64;
                let (dataset, layer, path) = (source.dataset, source.layer, source.path.clone());
                // Turning columns into rows is CPU work: off the async threads.
                let (out, back) = tokio::task::spawn_blocking(move || {
                    let mut state = state;
                    let out = convert(&mut state, dataset, layer, &batch, &path);
                    (out, state)
                })
                .await
                .expect("the conversion does not panic");
                state = back;
                let (content, doc, seen_again) = out?;
                again += seen_again;
                if let Some(content) = content {
                    *read.entry(tables::CONTENT.name).or_default() += content.num_rows() as u64 + seen_again;
                    if content.num_rows() > 0
                        && tx.send(Chunk { table: &tables::CONTENT, rows: content }).await.is_err()
                    {
                        return Ok((read, again));
                    }
                }
                *read.entry(tables::table_of(dataset).name).or_default() += n;
                if tx.send(Chunk { table: tables::table_of(dataset), rows: doc }).await.is_err() {
                    return Ok((read, again));
                }
                bar.inc(n);
            }
        }
        drop(tx);
        Ok::<_, ExportError>((read, again))
    };
    let consume = async {
        while let Some(chunk) = rx.recv().await {
            writer.write(chunk).await?;
        }
        Ok::<_, ExportError>(())
    };
    let ((read, again), ()) = tokio::try_join!(produce, consume)?;
    let loaded = writer.finish().await?;
    bar.finish_and_clear();

    for (table, r) in &mut rows {
        r.read = read.get(table).copied().unwrap_or(0);
        let (added, present) = loaded.get(table).copied().unwrap_or((0, 0));
        r.added = added;
        r.already_there = present + if *table == tables::CONTENT.name { again } else { 0 };
    }
    let seconds = started.elapsed().as_secs_f64();
    let rows_read: u64 = rows.values().map(|r| r.read).sum();
    Ok(ExportSummary {
        data: store.location().to_string(),
        to: cfg.to.name(),
        rows_added: rows.values().map(|r| r.added).sum(),
        rows_read,
        tables: rows.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        seconds,
        #[allow(clippy::cast_precision_loss)]
        rows_per_second: if seconds > 0.0 { rows_read as f64 / seconds } else { 0.0 },
    })
}

type Converted = (Option<arrow_array::RecordBatch>, arrow_array::RecordBatch, u64);

/// One Parquet batch as its table's rows (and, for `doc`, the content rows
/// not sent before, with the count of pages whose content was).
fn convert(
    state: &mut ReadState,
    dataset: Dataset,
    layer: i32,
    batch: &arrow_array::RecordBatch,
    path: &str,
) -> Result<Converted, ExportError> {
    if state.at != Some((dataset, layer)) {
        state.ords = Ordinals::default();
        state.at = Some((dataset, layer));
    }
    let rows = tables::normalise(dataset, batch, path, layer, &mut state.ords)?;
    if dataset == Dataset::Doc {
        let (content, again) = tables::content_rows(batch, path, &mut state.seen)?;
        return Ok((Some(content), rows, again));
    }
    Ok((None, rows, 0))
}

fn progress_bar(enabled: bool, total: u64) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("export [{bar:30}] {pos}/{len} rows {per_sec:>12} {msg} [{elapsed_precise}]")
            .expect("template is valid")
            .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(not(feature = "sql"))]
    #[test]
    fn without_the_feature_an_export_is_refused_saying_so() {
        let e = Destination::parse("sqlite:crawl.db").expect_err("not built");
        assert!(e.to_string().contains("needs the \"sql\" feature: cargo build --release --features sql"), "{e}");
        assert_eq!(e.exit_code(), 2);
    }

    #[cfg(feature = "sql")]
    #[test]
    fn destinations_are_parsed_and_bad_ones_list_the_accepted_schemes() {
        assert!(
            matches!(Destination::parse("sqlite:crawl.db"), Ok(Destination::Sqlite(p)) if p.as_os_str() == "crawl.db")
        );
        let pg = Destination::parse("postgres://me:secret@127.0.0.1:5433/crawl").expect("postgres");
        assert_eq!(pg.name(), "postgres://me:***@127.0.0.1:5433/crawl");
        assert!(Destination::parse("postgresql://me@db.example/crawl").is_ok());
        for bad in ["mysql://me@h/db", "crawl.db", "sqlite:", "postgres://127.0.0.1/crawl"] {
            let e = Destination::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("sqlite:FILE") && e.to_string().contains("postgres://"), "{e}");
            assert_eq!(e.exit_code(), 2);
        }
        for bad in
            ["mysql://me:s3cret@h/db", "postgres://me:s3cret@h/db?sslmode=verify-ca", "host=h password=s3cret port=x"]
        {
            let e = Destination::parse_with_env(bad, &|_| None).expect_err(bad);
            assert!(!e.to_string().contains("s3cret") && e.to_string().contains("***"), "{e}");
        }
    }
}
