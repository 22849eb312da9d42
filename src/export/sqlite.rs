//! The SQLite side of an export: one database file, written by one thread
//! of its own (SQLite calls block) in one transaction, each table's rows
//! inserted through one prepared statement, `ON CONFLICT DO NOTHING` so
//! rows whose key is there are skipped and counted (docs/src/export.md).

use std::path::PathBuf;

use arrow_array::RecordBatch;
use rusqlite::types::Null;
use rusqlite::{CachedStatement, Connection};
use tokio::sync::{mpsc, oneshot};

use super::tables::{self, ident, Cells, Dialect, Table};
use super::{Chunk, ExportError, Loaded};

/// A SQLite database being written; its rows go to the writing thread,
/// and then `None`, the word to commit. Without it (the export failed
/// elsewhere and dropped the writer) the transaction is rolled back.
pub struct Writer {
    rows: Option<mpsc::Sender<Option<Chunk>>>,
    done: oneshot::Receiver<Result<Loaded, ExportError>>,
}

impl Writer {
    /// Opens (or creates) the database at `path`, starts its transaction
    /// and creates the tables that are missing.
    ///
    /// # Errors
    /// When the file cannot be opened or is not a SQLite database.
    pub async fn open(path: PathBuf, name: String) -> Result<Self, ExportError> {
        let (ready_tx, ready) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        let (rows, mut incoming) = mpsc::channel::<Option<Chunk>>(4);
        let thread_err = {
            let name = name.clone();
            move |e: std::io::Error| ExportError::Unreachable {
                destination: name,
                reason: format!("cannot start a thread: {e}"),
            }
        };
        std::thread::Builder::new()
            .name("export-sqlite".into())
            .spawn(move || {
                let conn = match start(&path, &name) {
                    Ok(conn) => {
                        let _ = ready_tx.send(Ok(()));
                        conn
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let mut loaded = Loaded::new();
                let result = loop {
                    let Some(chunk) = incoming.blocking_recv() else {
                        break Err(gone());
                    };
                    let Some(chunk) = chunk else {
                        break commit(&conn, &name);
                    };
                    match insert(&conn, chunk.table, &chunk.rows, &name) {
                        Ok((added, present)) => {
                            let t = loaded.entry(chunk.table.name).or_default();
                            t.0 += added;
                            t.1 += present;
                        }
                        Err(e) => break Err(e),
                    }
                };
                // On an error, dropping the connection rolls the transaction back.
                let _ = done_tx.send(result.map(|()| loaded));
            })
            .map_err(thread_err)?;
        ready.await.map_err(|_| gone())??;
        Ok(Self { rows: Some(rows), done })
    }

    /// Hands rows to the writing thread.
    ///
    /// # Errors
    /// When the thread stopped on an error (that error).
    pub async fn write(&mut self, chunk: Chunk) -> Result<(), ExportError> {
        let sent = match &self.rows {
            Some(tx) => tx.send(Some(chunk)).await.is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        self.rows = None;
        match (&mut self.done).await {
            Ok(Err(e)) => Err(e),
            _ => Err(gone()),
        }
    }

    /// Creates the indexes that are missing and commits.
    ///
    /// # Errors
    /// When a statement or the commit fails.
    pub async fn finish(mut self) -> Result<Loaded, ExportError> {
        if let Some(tx) = self.rows.take() {
            // A failed send: the thread already stopped, with its error below.
            let _ = tx.send(None).await;
        }
        self.done.await.map_err(|_| gone())?
    }
}

fn gone() -> ExportError {
    ExportError::Database {
        destination: "sqlite".into(),
        doing: "writing".into(),
        reason: "the writing thread stopped".into(),
    }
}

fn db_err(name: &str, doing: &str, e: &rusqlite::Error) -> ExportError {
    ExportError::Database { destination: name.to_string(), doing: doing.to_string(), reason: e.to_string() }
}

/// Opens the file, takes the write lock and creates the tables.
fn start(path: &std::path::Path, name: &str) -> Result<Connection, ExportError> {
    let unreachable =
        |e: &rusqlite::Error| ExportError::Unreachable { destination: name.to_string(), reason: e.to_string() };
    let conn = Connection::open(path).map_err(|e| unreachable(&e))?;
    // Another writer holds the lock: wait for it rather than fail.
    conn.busy_timeout(std::time::Duration::from_secs(60)).map_err(|e| unreachable(&e))?;
    // The key checks of the foreign key hold in SQLite too; a larger page
    // cache (64 MiB) keeps the key indexes of a large load in memory.
    conn.execute_batch("PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536;").map_err(|e| unreachable(&e))?;
    // BEGIN IMMEDIATE: the write lock now, so a file that is not a
    // database, or is locked, is found before any row is read.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| unreachable(&e))?;
    for t in tables::ALL {
        conn.execute_batch(&t.create_sql(Dialect::Sqlite))
            .map_err(|e| db_err(name, &format!("creating table {}", t.name), &e))?;
    }
    conn.set_prepared_statement_cache_capacity(tables::ALL.len() * 2);
    Ok(conn)
}

/// Secondary indexes (built once over the loaded rows on a first export),
/// then the commit.
fn commit(conn: &Connection, name: &str) -> Result<(), ExportError> {
    for t in tables::ALL {
        for sql in t.index_sql() {
            conn.execute_batch(&sql).map_err(|e| db_err(name, &format!("indexing {}", t.name), &e))?;
        }
    }
    conn.execute_batch("COMMIT").map_err(|e| db_err(name, "committing", &e))
}

/// Inserts `rows` into `table`; returns the rows added and those whose
/// key was already there.
fn insert(conn: &Connection, table: &'static Table, rows: &RecordBatch, name: &str) -> Result<(u64, u64), ExportError> {
    let marks = vec!["?"; table.columns.len()].join(", ");
    let sql =
        format!("INSERT INTO {} ({}) VALUES ({marks}) ON CONFLICT DO NOTHING", ident(table.name), table.column_list());
    let doing = || format!("inserting into {}", table.name);
    let mut stmt = conn.prepare_cached(&sql).map_err(|e| db_err(name, &doing(), &e))?;
    let (mut added, mut present) = (0u64, 0u64);
    let cells = tables::cells(table, rows);
    for i in 0..rows.num_rows() {
        for (j, c) in cells.iter().enumerate() {
            bind(&mut stmt, j + 1, *c, i).map_err(|e| db_err(name, &doing(), &e))?;
        }
        if stmt.raw_execute().map_err(|e| db_err(name, &doing(), &e))? > 0 {
            added += 1;
        } else {
            present += 1;
        }
    }
    Ok((added, present))
}

/// Binds row `i` of `cells` to parameter `at`.
fn bind(stmt: &mut CachedStatement<'_>, at: usize, cells: Cells<'_>, i: usize) -> rusqlite::Result<()> {
    if cells.is_null(i) {
        return stmt.raw_bind_parameter(at, Null);
    }
    match cells {
        Cells::Text(a) => stmt.raw_bind_parameter(at, a.value(i)),
        Cells::Int32(a) => stmt.raw_bind_parameter(at, a.value(i)),
        Cells::Int64(a) => stmt.raw_bind_parameter(at, a.value(i)),
        Cells::Float64(a) => stmt.raw_bind_parameter(at, a.value(i)),
        Cells::Bool(a) => stmt.raw_bind_parameter(at, a.value(i)),
        Cells::Timestamp(a) => stmt.raw_bind_parameter(at, iso8601(a.value(i))),
        Cells::Bytes(a) => stmt.raw_bind_parameter(at, a.value(i)),
    }
}

/// Microseconds since the epoch as fixed-width ISO 8601 in UTC
/// (`2026-11-25T04:05:06.123456Z`), which sorts as text in time order and
/// which SQLite's date and time functions read.
fn iso8601(micros: i64) -> String {
    let (secs, frac) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
    match jiff::Timestamp::from_second(secs) {
        Ok(t) => format!("{}.{frac:06}Z", t.strftime("%Y-%m-%dT%H:%M:%S")),
        // Out of jiff's range (years past 9999): the number itself.
        Err(_) => micros.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_fixed_width_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso8601(1_764_043_506_000_001), "2025-11-25T04:05:06.000001Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59.999999Z");
    }
}
