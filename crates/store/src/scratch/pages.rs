//! Where a shard's row group waits while it is encoded: a temporary file.
//!
//! Parquet wants each column chunk contiguous, so the encoder holds every
//! page of the open row group until the row group is cut. On the heap that
//! was the crawl's largest item: with a shard open per partition and
//! output, the 320-site scale crawl held 54 MB of finished pages (heap
//! profile at its peak), partly as spare capacity, since a compressed page
//! keeps a buffer sized for its uncompressed bytes. Here the pages of
//! variable-width columns (URLs, body, text: nearly all the bytes) go to one
//! unnamed temporary file per shard as they are finished and come back
//! page by page when the row group is written; the next row group
//! overwrites the file from its start. Fixed-width columns keep their few
//! small pages on the heap.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::page_store::{InMemoryPageStore, PageKey, PageStore, PageStoreArgs, PageStoreFactory};
use parquet::errors::{ParquetError, Result};

/// One shard's scratch file, shared by its column chunks (one writer
/// thread uses them at a time).
#[derive(Debug, Default)]
struct Scratch {
    file: Option<File>,
    /// End of the bytes written since the file was last emptied.
    end: u64,
    /// Pages written and not taken back yet.
    live: usize,
}

/// Gives each variable-width column chunk of a shard a [`SpilledPages`].
#[derive(Debug, Default)]
pub struct SpillFactory(Arc<Mutex<Scratch>>);

impl PageStoreFactory for SpillFactory {
    fn create(&self, args: &PageStoreArgs<'_>) -> Result<Box<dyn PageStore>> {
        Ok(match args.column_descriptor().physical_type() {
            PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY => {
                Box::new(SpilledPages { scratch: Arc::clone(&self.0), pages: Vec::new() })
            }
            _ => Box::new(InMemoryPageStore::default()),
        })
    }
}

/// One column chunk's pages, in the shard's scratch file.
struct SpilledPages {
    scratch: Arc<Mutex<Scratch>>,
    /// Offset and length of each page, by key.
    pages: Vec<(u64, usize)>,
}

impl SpilledPages {
    fn scratch(&self) -> Result<std::sync::MutexGuard<'_, Scratch>> {
        self.scratch.lock().map_err(|_| ParquetError::General("a page scratch file's lock was poisoned".into()))
    }
}

/// An I/O failure on the scratch file, saying where it is and what to do.
fn scratch_err(e: &std::io::Error) -> ParquetError {
    let dir = std::env::temp_dir();
    ParquetError::General(format!(
        "scratch file in {}: {e}. Point TMPDIR at a writable folder with free space",
        dir.display()
    ))
}

impl PageStore for SpilledPages {
    fn put(&mut self, value: Bytes) -> Result<PageKey> {
        let mut s = self.scratch()?;
        if s.file.is_none() {
            s.file = Some(tempfile::tempfile().map_err(|e| scratch_err(&e))?);
        }
        let at = s.end;
        if let Some(file) = &s.file {
            file.write_all_at(&value, at).map_err(|e| scratch_err(&e))?;
        }
        s.end += value.len() as u64;
        s.live += 1;
        drop(s);
        self.pages.push((at, value.len()));
        Ok(PageKey::new(self.pages.len() as u64 - 1))
    }

    fn take(&mut self, key: PageKey) -> Result<Bytes> {
        let &(at, len) = usize::try_from(key.get())
            .ok()
            .and_then(|k| self.pages.get(k))
            .ok_or_else(|| ParquetError::General(format!("no spilled page {}", key.get())))?;
        let mut s = self.scratch()?;
        let mut buf = vec![0; len];
        if let Some(file) = &s.file {
            file.read_exact_at(&mut buf, at).map_err(|e| scratch_err(&e))?;
        }
        s.live = s.live.saturating_sub(1);
        if s.live == 0 {
            // The row group is written: the next one overwrites it from the
            // start. The file keeps its length (about a row group) rather
            // than being truncated, so its pages stay in the page cache
            // instead of being freed and allocated again for every row group.
            s.end = 0;
        }
        Ok(Bytes::from(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::arrow::arrow_writer::ArrowWriterOptions;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    /// Writes `batch` 1,000 rows at a time; returns the file and the
    /// encoder's heap use just before the last row group is cut.
    fn encode(batch: &RecordBatch, factory: Option<Arc<SpillFactory>>) -> (Vec<u8>, usize) {
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(5_000))
            .set_data_page_size_limit(8 << 10)
            .set_dictionary_enabled(false)
            .build();
        let mut options = ArrowWriterOptions::new().with_properties(props);
        if let Some(f) = factory {
            options = options.with_page_store_factory(f);
        }
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new_with_options(&mut out, batch.schema(), options).expect("writer");
        let mut held = 0;
        for start in (0..batch.num_rows()).step_by(1_000) {
            held = w.memory_size();
            w.write(&batch.slice(start, 1_000)).expect("write");
        }
        w.close().expect("close");
        (out, held)
    }

    #[test]
    fn row_groups_written_through_the_scratch_file_read_back_whole() {
        let n = 20_000;
        let text: StringArray = (0..n).map(|i| Some(format!("page {i} {}", "body ".repeat(i % 37)))).collect();
        let num: Int64Array = (0..n as i64).collect();
        let batch =
            RecordBatch::try_from_iter([("text", Arc::new(text) as _), ("n", Arc::new(num) as _)]).expect("batch");
        let factory = Arc::new(SpillFactory::default());
        let (spilled, spilled_heap) = encode(&batch, Some(Arc::clone(&factory)));
        let (_, heap) = encode(&batch, None);
        // Four fifths of a row group are encoded at that point: ~300 KB of text pages.
        assert!(spilled_heap + 200_000 < heap, "text pages left the heap: {spilled_heap} vs {heap} bytes");
        let scratch = factory.0.lock().expect("lock");
        assert!(scratch.file.is_some(), "pages went through the file");
        assert_eq!((scratch.live, scratch.end), (0, 0), "emptied after the last row group");
        drop(scratch);
        let reader = ParquetRecordBatchReaderBuilder::try_new(Bytes::from(spilled)).expect("reader");
        assert_eq!(reader.metadata().num_row_groups(), 4);
        let back: Vec<RecordBatch> =
            reader.build().expect("build").collect::<std::result::Result<_, _>>().expect("read");
        let back = arrow_select::concat::concat_batches(&batch.schema(), &back).expect("concat");
        assert_eq!(back, batch);
    }
}
