//! A partition's input as its map task holds it: the rows in a
//! [`SpillLog`], 8 bytes of memory a row.
//!
//! The input is the largest thing the crawl holds that grows with it: at
//! 605 k URLs over 8 partitions, 48 MB of URL, depth and referrer columns
//! (41 MB at the large scale crawl's peak, heap profile). Each row is read
//! back twice, when its request starts and when its page is stored, so it
//! can live in a temporary file: one `pread` of ~100 bytes a page.

use arrow_array::{Array, RecordBatch};

use super::log::SpillLog;
use crate::schema::{anchor_col, depth_col, priority_col, retries_at, retries_col, string_col, InRow};
use crate::StoreError;

/// Record header: flags (bit 0: a referrer follows the anchor; bit 1: the
/// row has a priority; bit 2: it has an anchor; bits 3 to 7: the URL's
/// retries so far, at most [`MAX_RETRIES`]), depth, URL length,
/// priority, anchor length. The URL, the anchor and the referrer follow.
const HEADER: usize = 1 + 4 + 4 + 4 + 4;
/// Retries a spilled row can say (five bits); `--retries` is far below.
const MAX_RETRIES: u32 = 31;

/// The rows of one partition's input, by row id (input order).
pub struct InputRows {
    log: SpillLog,
    slots: Vec<u64>,
    /// The smallest depth of a row (`i32::MAX` when empty).
    min_depth: i32,
}

impl InputRows {
    /// No rows yet; the log is a new temporary file.
    ///
    /// # Errors
    /// When no temporary file can be created.
    pub fn new() -> std::io::Result<Self> {
        Ok(Self { log: SpillLog::new()?, slots: Vec::new(), min_depth: i32::MAX })
    }

    /// Appends a batch of the input schema read from `path`.
    ///
    /// # Errors
    /// When a column is missing or of another type, or the temporary file
    /// cannot be written.
    pub fn push(&mut self, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        let url = string_col(b, "url", path)?;
        let referrer = string_col(b, "referrer", path)?;
        let depth = depth_col(b, path)?;
        let priority = priority_col(b);
        let anchor = anchor_col(b);
        let retries = retries_col(b);
        for i in 0..b.num_rows() {
            let (u, r) = (url.value(i), (!referrer.is_null(i)).then(|| referrer.value(i)));
            let p = priority.and_then(|p| (!p.is_null(i)).then(|| p.value(i)));
            let a = anchor.and_then(|a| (!a.is_null(i)).then(|| a.value(i)));
            let len = |s: &str| u32::try_from(s.len()).unwrap_or(u32::MAX);
            let mut header = [0u8; HEADER];
            let tries = u8::try_from(retries_at(retries, i).min(MAX_RETRIES)).unwrap_or(0);
            header[0] =
                u8::from(r.is_some()) | (u8::from(p.is_some()) << 1) | (u8::from(a.is_some()) << 2) | (tries << 3);
            header[1..5].copy_from_slice(&depth.value(i).to_le_bytes());
            self.min_depth = self.min_depth.min(depth.value(i));
            header[5..9].copy_from_slice(&len(u).to_le_bytes());
            header[9..13].copy_from_slice(&p.unwrap_or(0).to_le_bytes());
            header[13..].copy_from_slice(&len(a.unwrap_or_default()).to_le_bytes());
            let parts = [&header[..], u.as_bytes(), a.unwrap_or_default().as_bytes(), r.unwrap_or_default().as_bytes()];
            let slot = self.log.append(&parts);
            self.slots.push(slot.map_err(|e| StoreError::scratch(path, e))?);
        }
        Ok(())
    }

    /// Ends the loading: what is still buffered goes to the file.
    ///
    /// # Errors
    /// When the temporary file cannot be written.
    pub fn finish(&mut self, path: &str) -> Result<(), StoreError> {
        self.slots.shrink_to_fit();
        self.log.flush().map_err(|e| StoreError::scratch(path, e))
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The smallest depth of a row: whether the layer's pages can have
    /// links within the crawl's depth (`i32::MAX` when empty).
    #[must_use]
    pub fn min_depth(&self) -> i32 {
        self.min_depth
    }

    /// Row `id` (panics when `id >= len()`, like indexing).
    ///
    /// # Errors
    /// When the temporary file cannot be read.
    pub fn row(&self, id: usize) -> std::io::Result<InRow> {
        let record = self.log.read(self.slots[id])?;
        let r = split(&record)?;
        Ok(InRow {
            url: text(r.url)?,
            depth: r.depth,
            referrer: r.referrer.map(text).transpose()?,
            priority: r.priority,
            anchor: r.anchor.map(text).transpose()?,
            retries: r.retries,
        })
    }

    /// The URL of row `id` and the retries it spent in earlier layers
    /// (what a request needs), without decoding the rest.
    ///
    /// # Errors
    /// When the temporary file cannot be read.
    pub fn start(&self, id: usize) -> std::io::Result<(String, u32)> {
        let record = self.log.read(self.slots[id])?;
        let r = split(&record)?;
        Ok((text(r.url)?, r.retries))
    }

    /// The URL of row `id`, without decoding the rest (the scheduler reads
    /// it twice a URL: to queue it on its host, and when its request starts).
    ///
    /// # Errors
    /// When the temporary file cannot be read.
    pub fn url(&self, id: usize) -> std::io::Result<String> {
        let record = self.log.read(self.slots[id])?;
        text(split(&record)?.url)
    }
}

fn damaged() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, "a spilled input row is damaged")
}

/// A spilled record read in place: its depth, URL, and priority, anchor
/// and referrer when it has them.
struct Record<'a> {
    depth: i32,
    retries: u32,
    priority: Option<i32>,
    url: &'a [u8],
    anchor: Option<&'a [u8]>,
    referrer: Option<&'a [u8]>,
}

fn split(record: &[u8]) -> std::io::Result<Record<'_>> {
    let (header, rest) = record.split_at_checked(HEADER).ok_or_else(damaged)?;
    let field = |at: usize| header.get(at..at + 4).and_then(|b| <[u8; 4]>::try_from(b).ok()).ok_or_else(damaged);
    let depth = i32::from_le_bytes(field(1)?);
    let length = |at: usize| field(at).and_then(|b| usize::try_from(u32::from_le_bytes(b)).map_err(|_| damaged()));
    let (url, rest) = rest.split_at_checked(length(5)?).ok_or_else(damaged)?;
    let (anchor, referrer) = rest.split_at_checked(length(13)?).ok_or_else(damaged)?;
    let priority = (header[0] & 2 == 2).then(|| field(9).map(i32::from_le_bytes)).transpose()?;
    Ok(Record {
        depth,
        retries: u32::from(header[0] >> 3),
        priority,
        url,
        anchor: (header[0] & 4 == 4).then_some(anchor),
        referrer: (header[0] & 1 == 1).then_some(referrer),
    })
}

fn text(bytes: &[u8]) -> std::io::Result<String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| damaged())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::input_batch;

    #[test]
    fn rows_come_back_by_id_across_batches() {
        let long = format!("http://a.test/{}", "ü".repeat(1500));
        let row = |url: &str, depth, referrer: Option<&str>| InRow {
            url: url.into(),
            depth,
            referrer: referrer.map(Into::into),
            priority: None,
            anchor: None,
            retries: 0,
        };
        let rows = vec![
            row("http://a.test/", 0, None),
            InRow {
                priority: Some(1),
                anchor: Some("Wind".into()),
                ..row("http://a.test/x", 2, Some("http://a.test/"))
            },
            InRow { anchor: Some(long.clone()), retries: 2, ..row(&long, -1, Some("")) },
            InRow { priority: Some(0), anchor: Some(String::new()), ..row("http://a.test/z", 3, Some(&long)) },
            row("http://b.test/", i32::MAX, None),
        ];
        let b = input_batch(&rows).expect("batch");
        let mut held = InputRows::new().expect("temp file");
        for part in [b.slice(0, 2), b.slice(2, 0), b.slice(2, b.num_rows() - 2)] {
            held.push(&part, "t").expect("push");
        }
        held.finish("t").expect("finish");
        assert_eq!(held.len(), rows.len());
        let back: Vec<InRow> = (0..held.len()).map(|i| held.row(i).expect("row")).collect();
        assert_eq!(back, rows, "row ids run across batches; an empty referrer or anchor is not a missing one");
        assert_eq!(held.url(3).expect("url"), "http://a.test/z");
        assert_eq!(
            (held.start(2).expect("start").1, held.start(3).expect("start")),
            (2, ("http://a.test/z".into(), 0))
        );
        assert!(InputRows::new().expect("temp file").is_empty());
    }

    #[test]
    fn an_input_written_before_the_priority_and_anchor_columns_reads_without_them() {
        let b = RecordBatch::try_from_iter([
            ("url", std::sync::Arc::new(arrow_array::StringArray::from(vec!["http://a.test/"])) as _),
            ("depth", std::sync::Arc::new(arrow_array::Int32Array::from(vec![2])) as _),
            ("referrer", std::sync::Arc::new(arrow_array::StringArray::from(vec![None::<&str>])) as _),
        ])
        .expect("batch");
        let mut held = InputRows::new().expect("temp file");
        held.push(&b, "in/layer=2/part-00000.parquet").expect("an old input reads");
        held.finish("t").expect("finish");
        let want = InRow { url: "http://a.test/".into(), depth: 2, ..InRow::default() };
        assert_eq!(held.row(0).expect("row"), want);
    }

    #[test]
    fn a_batch_of_another_schema_names_the_file() {
        let b = RecordBatch::try_from_iter([(
            "url",
            std::sync::Arc::new(arrow_array::StringArray::from(vec!["http://a.test/"])) as _,
        )])
        .expect("batch");
        let err = InputRows::new()
            .expect("temp file")
            .push(&b, "in/layer=1/part-00003.parquet")
            .expect_err("no referrer column");
        assert!(err.to_string().contains("in/layer=1/part-00003.parquet"), "{err}");
    }
}
