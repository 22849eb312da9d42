//! The PostgreSQL side of an export: one connection, one transaction. Rows
//! are encoded in COPY's binary format (off the async threads) and loaded
//! with `COPY ... FROM STDIN` into a temporary staging table per table,
//! then moved with one `INSERT ... SELECT ... ON CONFLICT DO NOTHING`,
//! which skips and counts the rows whose key is there (COPY itself cannot
//! skip a row). docs/src/export.md.
//!
//! The connection is read with libpq's conventions (`conninfo.rs`: the
//! password from the string, `PGPASSWORD` or the password file,
//! `pgpass.rs`), and secured as `sslmode` says (`tls.rs`).

mod conninfo;
mod pgpass;
mod tls;

pub use conninfo::{is_key_value, parse, redact, Target};

use std::pin::pin;

use arrow_array::RecordBatch;
use bytes::{BufMut, Bytes, BytesMut};
use futures::SinkExt;
use tokio_postgres::Client;

use super::tables::{self, ident, Cells, Dialect, Table};
use super::{Chunk, ExportError, Loaded};

/// Staged COPY data is moved into the tables when it passes this size.
const FLUSH_BYTES: usize = 32 << 20;

/// One export per database at a time: the transaction takes this advisory
/// lock ("lcexport" in ASCII), so a second export waits for the first.
const LOCK: i64 = 0x6c63_6578_706f_7274;

/// The staging table of `table`, dropped at the commit.
fn stage(table: &Table) -> String {
    ident(&format!("layercrawl_stage_{}", table.name))
}

/// COPY data waiting for one table.
#[derive(Default)]
struct Staged {
    pieces: Vec<Bytes>,
    rows: u64,
}

/// A PostgreSQL database being written, in its open transaction.
pub struct Writer {
    client: Client,
    name: String,
    staged: Vec<Staged>,
    bytes: usize,
    loaded: Loaded,
}

impl Writer {
    /// Connects, starts the transaction, takes the export lock, creates the
    /// tables that are missing and the staging tables.
    ///
    /// # Errors
    /// When the server cannot be reached or refuses a statement.
    pub async fn open(target: &Target) -> Result<Self, ExportError> {
        let name = target.name.as_str();
        let unreachable = |reason: String| ExportError::Unreachable { destination: name.to_string(), reason };
        let tls = target.tls.connector().map_err(unreachable)?;
        let (client, connection) =
            target.config.connect(tls).await.map_err(|e| unreachable(connect_reason(&e, &target.tls)))?;
        let server = name.to_string();
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("connection to {server} ended: {}", reason(&e));
            }
        });
        let mut sql = format!("BEGIN; SELECT pg_advisory_xact_lock({LOCK});\n");
        for t in tables::ALL {
            sql.push_str(&t.create_sql(Dialect::Postgres));
            sql.push_str(";\n");
            sql.push_str(&format!("CREATE TEMP TABLE {} (LIKE {}) ON COMMIT DROP;\n", stage(t), ident(t.name)));
        }
        let w = Self {
            client,
            name: name.to_string(),
            staged: tables::ALL.iter().map(|_| Staged::default()).collect(),
            bytes: 0,
            loaded: Loaded::new(),
        };
        w.client.batch_execute(&sql).await.map_err(|e| w.err("creating the tables", &e))?;
        Ok(w)
    }

    fn err(&self, doing: &str, e: &tokio_postgres::Error) -> ExportError {
        ExportError::Database { destination: self.name.clone(), doing: doing.to_string(), reason: reason(e) }
    }

    /// Encodes `chunk` and stages it; moves the staged rows into the tables
    /// when enough are staged.
    ///
    /// # Errors
    /// When the server refuses the COPY or the insert.
    pub async fn write(&mut self, chunk: Chunk) -> Result<(), ExportError> {
        let at = tables::ALL.iter().position(|t| std::ptr::eq(*t, chunk.table)).expect("every chunk is for a table");
        let rows = chunk.rows.num_rows() as u64;
        let table = chunk.table;
        // Encoding is CPU work: off the async threads.
        let data =
            tokio::task::spawn_blocking(move || encode(table, &chunk.rows)).await.expect("the encoder does not panic");
        self.bytes += data.len();
        self.staged[at].pieces.push(data);
        self.staged[at].rows += rows;
        if self.bytes >= FLUSH_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    /// Moves every staged row into its table, referenced tables first.
    async fn flush(&mut self) -> Result<(), ExportError> {
        for (t, staged) in tables::ALL.iter().zip(self.staged.iter_mut()) {
            if staged.rows == 0 {
                continue;
            }
            let doing = format!("loading {}", t.name);
            let fail = |e: &tokio_postgres::Error| ExportError::Database {
                destination: self.name.clone(),
                doing: doing.clone(),
                reason: reason(e),
            };
            let copy = format!("COPY {} ({}) FROM STDIN (FORMAT binary)", stage(t), t.column_list());
            let mut sink = pin!(self.client.copy_in::<_, Bytes>(&copy).await.map_err(|e| fail(&e))?);
            sink.feed(Bytes::from_static(HEADER)).await.map_err(|e| fail(&e))?;
            for piece in staged.pieces.drain(..) {
                sink.feed(piece).await.map_err(|e| fail(&e))?;
            }
            sink.feed(Bytes::from_static(&TRAILER)).await.map_err(|e| fail(&e))?;
            let copied = sink.as_mut().finish().await.map_err(|e| fail(&e))?;
            let moved = format!(
                "WITH added AS (INSERT INTO {} SELECT * FROM {} ON CONFLICT DO NOTHING RETURNING 1) SELECT count(*) FROM added",
                ident(t.name),
                stage(t)
            );
            let added: i64 = self.client.query_one(&moved, &[]).await.map_err(|e| fail(&e))?.get(0);
            self.client.batch_execute(&format!("TRUNCATE {}", stage(t))).await.map_err(|e| fail(&e))?;
            let added = u64::try_from(added).unwrap_or(0);
            let entry = self.loaded.entry(t.name).or_default();
            entry.0 += added;
            entry.1 += copied.saturating_sub(added);
            staged.rows = 0;
        }
        self.bytes = 0;
        Ok(())
    }

    /// Loads what is staged, creates the indexes that are missing and commits.
    ///
    /// # Errors
    /// When a statement or the commit fails (nothing is then written).
    pub async fn finish(mut self) -> Result<Loaded, ExportError> {
        self.flush().await?;
        let mut sql = String::new();
        for t in tables::ALL {
            for index in t.index_sql() {
                sql.push_str(&index);
                sql.push_str(";\n");
            }
        }
        sql.push_str("COMMIT;");
        self.client.batch_execute(&sql).await.map_err(|e| self.err("indexing and committing", &e))?;
        Ok(self.loaded)
    }
}

/// Why a connection failed, with what to do where the cause is the
/// server's certificate or a missing password.
fn connect_reason(e: &tokio_postgres::Error, tls: &tls::Tls) -> String {
    let why = reason(e);
    if why.contains("invalid peer certificate") {
        let what = if why.contains("NotValidForName") {
            "was not issued for the host named in --to".to_string()
        } else {
            format!("was not signed by a CA in sslrootcert {}", tls.roots_name())
        };
        format!("{why}: the server's certificate {what} (sslmode={})", tls.mode.as_str())
    } else if why.contains("password missing") {
        format!(
            "{why}: the server asks for a password; give it in PGPASSWORD or a password file (PGPASSFILE, ~/.pgpass)"
        )
    } else {
        why
    }
}

/// The error and its causes: the server's message and detail, or why the
/// connection failed.
fn reason(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} ({})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            s.push_str(": ");
            s.push_str(detail);
        }
        return s;
    }
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        cause = c.source();
    }
    s
}

/// The binary COPY header: signature, flags, header extension length.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// The binary COPY trailer: a tuple of -1 fields.
const TRAILER: [u8; 2] = (-1i16).to_be_bytes();

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// `rows` of `table` as binary COPY tuples (without header and trailer).
fn encode(table: &Table, rows: &RecordBatch) -> Bytes {
    let fields = i16::try_from(table.columns.len()).expect("tables have few columns");
    let cells = tables::cells(table, rows);
    let mut out = BytesMut::with_capacity(rows.get_array_memory_size() + rows.num_rows() * 64);
    for i in 0..rows.num_rows() {
        out.put_i16(fields);
        for c in &cells {
            field(&mut out, *c, i);
        }
    }
    out.freeze()
}

/// One field: its length (-1 for null), then its value in PostgreSQL's
/// binary form.
fn field(out: &mut BytesMut, cells: Cells<'_>, i: usize) {
    if cells.is_null(i) {
        out.put_i32(-1);
        return;
    }
    match cells {
        Cells::Text(a) => text(out, a.value(i)),
        Cells::Int32(a) => {
            out.put_i32(4);
            out.put_i32(a.value(i));
        }
        Cells::Int64(a) => {
            out.put_i32(8);
            out.put_i64(a.value(i));
        }
        Cells::Float64(a) => {
            out.put_i32(8);
            out.put_f64(a.value(i));
        }
        Cells::Bool(a) => {
            out.put_i32(1);
            out.put_u8(u8::from(a.value(i)));
        }
        Cells::Timestamp(a) => {
            out.put_i32(8);
            out.put_i64(a.value(i).saturating_sub(PG_EPOCH_MICROS));
        }
        Cells::Bytes(a) => {
            let v = a.value(i);
            out.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
            out.put_slice(v);
        }
    }
}

/// A text value. PostgreSQL's text cannot hold U+0000: a NUL in a page's
/// text becomes U+FFFD, the replacement character.
fn text(out: &mut BytesMut, s: &str) {
    if memchr::memchr(0, s.as_bytes()).is_some() {
        let s = s.replace('\0', "\u{FFFD}");
        out.put_i32(i32::try_from(s.len()).unwrap_or(i32::MAX));
        out.put_slice(s.as_bytes());
    } else {
        out.put_i32(i32::try_from(s.len()).unwrap_or(i32::MAX));
        out.put_slice(s.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn tuples_are_encoded_in_copys_binary_form() {
        let schema = Arc::new(arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("content_hash", arrow_schema::DataType::Int64, true),
            arrow_schema::Field::new("text", arrow_schema::DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(arrow_array::Int64Array::from(vec![Some(258)])),
                Arc::new(arrow_array::StringArray::from(vec![Some("a\0b")])),
            ],
        )
        .expect("batch");
        let (rows, _) = tables::content_rows(&batch, "doc/layer=0/x.parquet", &mut Default::default()).expect("rows");
        let bytes = encode(&tables::CONTENT, &rows);
        let mut want = vec![0, 4];
        want.extend([0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 1, 2]);
        want.extend([0, 0, 0, 5, b'a', 0xef, 0xbf, 0xbd, b'b']);
        want.extend([0xff; 8]);
        assert_eq!(bytes.as_ref(), want.as_slice());
        assert_eq!(HEADER.len(), 19);
    }
}
