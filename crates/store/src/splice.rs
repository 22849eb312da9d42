//! The final merge on local disk: row groups copied file to file by the
//! kernel, then a new footer that points at their new places.
//!
//! The object-storage path ([`super::concat`]) moves every byte through
//! user space five times (the ranged read, parquet's copy loop, the
//! encoder's buffer, the upload buffer, the write), which made the merge
//! 7 % of a whole crawl's CPU. Here each row group is one
//! `copy_file_range` (what `std::io::copy` does between two files on
//! Linux), so a byte is copied once, inside the kernel. The footer is what
//! parquet's own writer would write for the same row groups: the column
//! chunks' and pages' offsets moved by the row group's shift, and the page
//! indexes carried over.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use parquet::errors::ParquetError;
use parquet::file::metadata::page_index::PageIndexProvider;
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataBuilder, ParquetMetaDataReader,
    ParquetMetaDataWriter, RowGroupMetaData,
};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::page_index::offset_index::OffsetIndexMetaData;
use parquet::file::writer::TrackedWrite;

use super::chunks::{check_schemas, chunk_range};
use crate::fence::Fence;
use crate::{staging_path, StoreError};

/// Writes `output` (under `root`) as the concatenation of the row groups of
/// `inputs`; returns the row count. Blocking: call it off the async threads.
/// The output is written to a hidden staging file renamed into place, so
/// it appears whole or not at all; under `fence`, only if the fence still
/// holds when it is written.
///
/// # Errors
/// When an input is missing or not Parquet, the schemas differ, or a read
/// or write fails (e.g. a full disk); the error names the file. The
/// fence that ran out ([`StoreError::Fenced`]).
pub fn concat_local(root: &Path, inputs: &[String], output: &str, fence: Option<&Fence>) -> Result<u64, StoreError> {
    let mut files = Vec::with_capacity(inputs.len());
    for input in inputs {
        let file = File::open(root.join(input)).map_err(|e| ioerr(input, e))?;
        let meta = ParquetMetaDataReader::new()
            .with_page_index_policy(PageIndexPolicy::Optional)
            .parse_and_finish(&file)
            .map_err(|e| perr(input, e))?;
        files.push((file, meta));
    }
    let metas: Vec<&ParquetMetaData> = files.iter().map(|(_, m)| m).collect();
    check_schemas(inputs, &metas, output)?;
    let target = root.join(output);
    let staged = staging_path(&target);
    let written = target
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| File::create(&staged))
        .map_err(|e| ioerr(output, e))
        .and_then(|mut out| splice_all(&mut out, inputs, &mut files, output));
    // Renamed into place only while the fence holds (the merge's).
    let written = written.and_then(|rows| match fence {
        Some(f) if !f.holds() => Err(super::chunks::ran_out(output, f)),
        _ => Ok(rows),
    });
    let rows = match written {
        Ok(rows) => rows,
        Err(e) => {
            let _ = std::fs::remove_file(&staged);
            return Err(e);
        }
    };
    std::fs::rename(&staged, &target).map_err(|e| ioerr(output, e))?;
    Ok(rows)
}

/// Writes the whole output file into `out`.
/// `files` is not empty ([`check_schemas`] refuses an empty list).
fn splice_all(
    out: &mut File,
    inputs: &[String],
    files: &mut [(File, ParquetMetaData)],
    output: &str,
) -> Result<u64, StoreError> {
    out.write_all(MAGIC).map_err(|e| ioerr(output, e))?;
    let mut pos = MAGIC.len() as u64;
    let (mut groups, mut index) = (Vec::new(), Copied::default());
    for (input, (file, meta)) in inputs.iter().zip(files.iter_mut()) {
        for rg in 0..meta.num_row_groups() {
            let (start, end) = chunk_range(meta.row_group(rg));
            file.seek(SeekFrom::Start(start)).map_err(|e| ioerr(input, e))?;
            let len = end - start;
            // Between two files std::io::copy is copy_file_range on Linux
            // (and read + write elsewhere, or across file systems).
            let copied = std::io::copy(&mut Read::by_ref(file).take(len), out).map_err(|e| ioerr(output, e))?;
            if copied != len {
                return Err(perr(
                    input,
                    ParquetError::General(format!(
                        "row group {rg}: {copied} of {len} bytes read; the file is shorter than its footer says"
                    )),
                ));
            }
            let shift = i64::try_from(pos).unwrap_or(i64::MAX) - i64::try_from(start).unwrap_or(0);
            let ordinal = i32::try_from(groups.len()).unwrap_or(i32::MAX);
            groups.push(moved_group(meta, rg, shift, ordinal, pos).map_err(|e| perr(input, e))?);
            index.push(meta, rg, shift);
            pos += len;
        }
    }
    let first = files.first().map(|(_, m)| m.file_metadata()).expect("check_schemas refuses an empty list");
    let rows: i64 = groups.iter().map(RowGroupMetaData::num_rows).sum();
    let file_meta = FileMetaData::new(
        first.version(),
        rows,
        first.created_by().map(str::to_string),
        first.key_value_metadata().cloned(),
        first.schema_descr_ptr(),
        first.column_orders().cloned(),
    );
    let merged =
        ParquetMetaDataBuilder::new(file_meta).set_row_groups(groups).set_page_index(Some(Arc::new(index))).build();
    out.write_all(&footer(&merged, pos).map_err(|e| perr(output, e))?).map_err(|e| ioerr(output, e))?;
    Ok(u64::try_from(rows).unwrap_or(0))
}

const MAGIC: &[u8; 4] = b"PAR1";

fn perr(path: &str, source: ParquetError) -> StoreError {
    StoreError::Parquet { path: path.to_string(), source }
}

fn ioerr(path: &str, e: std::io::Error) -> StoreError {
    perr(path, ParquetError::External(Box::new(e)))
}

/// Row group `rg` of `meta`, its bytes moved by `shift`: the metadata
/// parquet's writer gives a column chunk it splices in
/// (`SerializedRowGroupWriter::append_column`).
fn moved_group(
    meta: &ParquetMetaData,
    rg: usize,
    shift: i64,
    ordinal: i32,
    at: u64,
) -> Result<RowGroupMetaData, ParquetError> {
    let group = meta.row_group(rg);
    let mut columns = Vec::with_capacity(group.num_columns());
    for c in group.columns() {
        let mut b = ColumnChunkMetaData::builder(c.column_descr_ptr())
            .set_compression_codec(c.compression_codec())
            .set_encodings_mask(*c.encodings_mask())
            .set_total_compressed_size(c.compressed_size())
            .set_total_uncompressed_size(c.uncompressed_size())
            .set_num_values(c.num_values())
            .set_data_page_offset(c.data_page_offset() + shift)
            .set_dictionary_page_offset(c.dictionary_page_offset().map(|o| o + shift))
            .set_unencoded_byte_array_data_bytes(c.unencoded_byte_array_data_bytes());
        if let Some(h) = c.repetition_level_histogram() {
            b = b.set_repetition_level_histogram(Some(h.clone()));
        }
        if let Some(h) = c.definition_level_histogram() {
            b = b.set_definition_level_histogram(Some(h.clone()));
        }
        if let Some(s) = c.statistics() {
            b = b.set_statistics(s.clone());
        }
        if let Some(s) = c.page_encoding_stats() {
            b = b.set_page_encoding_stats(s.clone());
        }
        columns.push(b.build()?);
    }
    let uncompressed = group.columns().iter().map(ColumnChunkMetaData::uncompressed_size).sum();
    RowGroupMetaData::builder(group.schema_descr_ptr())
        .set_column_metadata(columns)
        .set_total_byte_size(uncompressed)
        .set_num_rows(group.num_rows())
        .set_ordinal(ordinal)
        .set_file_offset(i64::try_from(at).unwrap_or(i64::MAX))
        .build()
}

/// The footer of a file whose row groups end at `data_end`: page indexes,
/// file metadata, its length and the magic. Parquet's metadata writer
/// takes offsets from the bytes it has seen, so it is first told of the
/// `data_end` bytes already in the file (counted, not written).
fn footer(meta: &ParquetMetaData, data_end: u64) -> Result<Vec<u8>, ParquetError> {
    static ZEROS: [u8; 1 << 20] = [0; 1 << 20];
    let mut tail = Tail { skip: data_end, bytes: Vec::new() };
    let mut tracked = TrackedWrite::new(&mut tail);
    let mut left = data_end;
    while left > 0 {
        let n = usize::try_from(left).unwrap_or(usize::MAX).min(ZEROS.len());
        // A write this large bypasses the writer's buffer: Tail only counts it.
        tracked.write_all(&ZEROS[..n])?;
        left -= n as u64;
    }
    ParquetMetaDataWriter::new_with_tracked(tracked, meta).with_preserve_page_index_locations(false).finish()?;
    Ok(tail.bytes)
}

/// Drops the first `skip` bytes written to it and keeps the rest.
struct Tail {
    skip: u64,
    bytes: Vec<u8>,
}

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let dropped = usize::try_from(self.skip).unwrap_or(usize::MAX).min(buf.len());
        self.skip -= dropped as u64;
        self.bytes.extend_from_slice(&buf[dropped..]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The page indexes of the copied row groups, page offsets moved with
/// their row group.
#[derive(Debug, Default)]
struct Copied {
    column: Vec<Vec<Option<ColumnIndexMetaData>>>,
    offset: Vec<Vec<Option<OffsetIndexMetaData>>>,
}

impl Copied {
    fn push(&mut self, meta: &ParquetMetaData, rg: usize, shift: i64) {
        let n = meta.row_group(rg).num_columns();
        let index = meta.page_index();
        self.column.push((0..n).map(|c| index.and_then(|i| i.column_index(rg, c)).cloned()).collect());
        self.offset.push(
            (0..n)
                .map(|c| {
                    let mut o = index.and_then(|i| i.offset_index(rg, c)).cloned()?;
                    for page in &mut o.page_locations {
                        page.offset += shift;
                    }
                    Some(o)
                })
                .collect(),
        );
    }
}

impl PageIndexProvider for Copied {
    fn has_offset_indexes(&self) -> bool {
        self.offset.iter().flatten().any(Option::is_some)
    }

    fn has_column_indexes(&self) -> bool {
        self.column.iter().flatten().any(Option::is_some)
    }

    fn column_index(&self, rg: usize, column: usize) -> Option<&ColumnIndexMetaData> {
        self.column.get(rg)?.get(column)?.as_ref()
    }

    fn offset_index(&self, rg: usize, column: usize) -> Option<&OffsetIndexMetaData> {
        self.offset.get(rg)?.get(column)?.as_ref()
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use crate::concat_shards;
    use crate::schema::{input_batch, input_rows, input_schema, InRow};
    use crate::{read_batches, ShardWriter, Store};

    /// The same shards in a local folder and in memory: the kernel-copy path
    /// must write the very bytes parquet's own writer writes on the other.
    #[tokio::test]
    async fn local_merge_writes_the_bytes_of_the_generic_merge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = Store::open(dir.path().to_str().expect("utf-8")).expect("local store");
        let memory = Store::open("memory://").expect("memory store");
        let mut all = Vec::new();
        let mut shards = Vec::new();
        for s in 0..3 {
            let rows: Vec<InRow> = (0..700 * (s + 1))
                .map(|i: i32| InRow {
                    url: format!("http://s{s}.test/page/{:016x}", xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())),
                    depth: i % 3,
                    referrer: (i % 2 == 0).then(|| format!("http://s{s}.test/r{}", i % 5)),
                    priority: None,
                    anchor: None,
                    retries: 0,
                })
                .collect();
            let path = format!("doc/layer=1/part-{s:05}.parquet");
            for store in [&local, &memory] {
                // Small row groups, so each shard has several.
                let mut w = ShardWriter::create(store, &path, input_schema(), 8 << 10).expect("writer");
                for chunk in rows.chunks(150) {
                    w.write(&input_batch(chunk).expect("batch")).await.expect("write");
                }
                w.finish().await.expect("finish");
            }
            all.extend(rows);
            shards.push(path);
        }
        let out = "doc/layer=1/data-00000.parquet";
        assert_eq!(concat_shards(&local, &shards, out).await.expect("local merge"), all.len() as u64);
        assert_eq!(concat_shards(&memory, &shards, out).await.expect("generic merge"), all.len() as u64);
        let spliced = std::fs::read(dir.path().join(out)).expect("merged file");
        let generic = memory.get(out).await.expect("get").expect("merged object");
        assert!(spliced.len() > 20_000, "{} bytes", spliced.len());
        assert_eq!(spliced, generic.to_vec(), "same bytes as parquet's writer gives");
        let names: Vec<String> = std::fs::read_dir(dir.path().join("doc/layer=1"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".staged")), "no staging file left: {names:?}");
        let back: Vec<InRow> = read_batches(&local, out, None)
            .await
            .expect("read")
            .iter()
            .flat_map(|b| input_rows(b, "t").expect("rows"))
            .collect();
        assert_eq!(back, all);
    }

    /// A shard cut short (a disk that filled up under another tool, a
    /// copy stopped half-way) is refused by name, and no output or
    /// staging file is left behind.
    #[tokio::test]
    async fn a_truncated_shard_is_named_and_nothing_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().to_str().expect("utf-8")).expect("store");
        let rows: Vec<InRow> = (0..2000)
            .map(|i| InRow {
                url: format!("http://s.test/{i}"),
                depth: 1,
                referrer: None,
                priority: None,
                anchor: None,
                retries: 0,
            })
            .collect();
        let shards = ["doc/layer=0/part-00000.parquet".to_string(), "doc/layer=0/part-00001.parquet".to_string()];
        for path in &shards {
            let mut w = ShardWriter::create(&store, path, input_schema(), 1 << 20).expect("writer");
            w.write(&input_batch(&rows).expect("batch")).await.expect("write");
            w.finish().await.expect("finish");
        }
        let cut = std::fs::OpenOptions::new().write(true).open(dir.path().join(&shards[1])).expect("open");
        let len = cut.metadata().expect("len").len();
        cut.set_len(len / 2).expect("cut");
        let e = concat_shards(&store, &shards, "doc/layer=0/data-00000.parquet").await.expect_err("a cut shard");
        assert!(e.to_string().contains("part-00001.parquet"), "{e}");
        let left: Vec<String> = std::fs::read_dir(dir.path().join("doc/layer=0"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.iter().all(|n| n.starts_with("part-")), "only the shards are left: {left:?}");
    }

    /// The page index is carried with its pages moved: a reader that skips
    /// pages by the offset index finds the rows it asked for.
    #[tokio::test]
    async fn page_index_points_at_the_moved_pages() {
        use arrow_array::cast::AsArray;
        use parquet::arrow::arrow_reader::{
            ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
        };
        const N: usize = 40_000;
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().to_str().expect("utf-8")).expect("store");
        let mut shards = Vec::new();
        for s in 0..2 {
            // Enough URLs for several data pages in one row group.
            let rows: Vec<InRow> = (0..N)
                .map(|i| InRow {
                    url: format!("http://s{s}.test/a/long/path/to/page/{i:06}"),
                    depth: 1,
                    referrer: None,
                    priority: None,
                    anchor: None,
                    retries: 0,
                })
                .collect();
            let path = format!("in/part-{s}.parquet");
            let mut w = ShardWriter::create(&store, &path, input_schema(), 64 << 20).expect("writer");
            w.write(&input_batch(&rows).expect("batch")).await.expect("write");
            w.finish().await.expect("finish");
            shards.push(path);
        }
        concat_shards(&store, &shards, "merged.parquet").await.expect("merge");
        let file = std::fs::File::open(dir.path().join("merged.parquet")).expect("open");
        let b = ParquetRecordBatchReaderBuilder::try_new_with_options(
            file,
            ArrowReaderOptions::new().with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required),
        )
        .expect("reader");
        let meta = b.metadata().clone();
        assert_eq!(meta.num_row_groups(), 2);
        let index = meta.page_index().expect("page index carried");
        let pages = index.page_locations(1, 0).expect("offset index of the second file's url column");
        assert!(pages.len() > 1 && pages[0].offset >= meta.row_group(1).file_offset().expect("offset"), "{pages:?}");
        // Skip the first row group and all but the last page of the second.
        let selection = RowSelection::from(vec![RowSelector::skip(N + N - 10), RowSelector::select(3)]);
        let batches: Vec<_> =
            b.with_row_selection(selection).build().expect("build").collect::<Result<_, _>>().expect("read");
        let urls: Vec<String> = batches
            .iter()
            .flat_map(|b| {
                b.column(0).as_string::<i32>().iter().map(|u| u.expect("url").to_string()).collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(
            urls,
            [
                "http://s1.test/a/long/path/to/page/039990",
                "http://s1.test/a/long/path/to/page/039991",
                "http://s1.test/a/long/path/to/page/039992"
            ]
        );
    }
}
