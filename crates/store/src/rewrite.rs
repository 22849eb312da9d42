//! A shard rewritten in place with new values in some of its columns, its
//! other column chunks copied byte for byte ([`super::chunks`]).
//!
//! The noise labels of a layer change two small columns of its links
//! (`noise` and `followed`) in shards whose URLs and anchors are nearly all
//! of their bytes: decoding and re-encoding those cost as much CPU as the
//! layer's whole optimise step (on a documentation corpus, three labels
//! made one site's shard of 1.4 million links be rewritten). Here only the
//! columns the change reads are decoded, a row group without a change is
//! copied whole, and in one with a change only the changed columns are
//! encoded again.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use arrow_select::concat::concat_batches;
use futures::TryStreamExt;
use object_store::buffered::BufWriter;
use object_store::path::Path;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterVersion;
use parquet::file::writer::SerializedFileWriter;
use tokio::io::AsyncWriteExt;

use super::chunks::{copy_column, drain, fetch_row_group, read_metadata};
use super::parquet_io::StoreReader;
use super::{shard_properties, SharedBuf, Store, StoreError};

/// Rewrites the Parquet file at `path` with new values in its columns named
/// in `write`. `change` gets each batch of the file's columns named in
/// `read` (which includes `write`), a few thousand rows at a time (the
/// string columns named in `dictionary` as dictionary arrays with `Int32`
/// keys: a change that looks each distinct value up once then decodes a
/// dictionary-encoded column's values once per column chunk, not once per
/// row; their dictionary is the same array in every batch of a chunk), and
/// returns either nothing (those rows keep their values) or a batch of the
/// `write` columns for the same rows. A row group without a change is
/// copied as it is; in one with a change, only the `write` columns are
/// encoded again, the others copied as they are. The file is replaced
/// atomically, and only when some row group changed; returns whether it
/// was. Memory holds one batch of the `read` columns, the `write` columns
/// of a row group, and one row group's bytes. `change` runs off the async
/// threads.
///
/// # Errors
/// When the file cannot be read, a change fails or does not fit the file's
/// schema (a nested schema is refused), or the write fails.
pub async fn rewrite_columns<F>(
    store: &Store,
    path: &str,
    read: &[&str],
    dictionary: &[&str],
    write: &[&str],
    change: F,
) -> Result<bool, StoreError>
where
    F: FnMut(&RecordBatch) -> Result<Option<RecordBatch>, StoreError> + Send + 'static,
{
    let perr = |source: ParquetError| StoreError::Parquet { path: path.to_string(), source };
    let bad = |reason: String| StoreError::Schema { path: path.to_string(), reason };
    let backend = store.backend();
    let meta = Arc::new(read_metadata(&*backend, path).await?);
    let reader_meta = ArrowReaderMetadata::try_new(Arc::clone(&meta), ArrowReaderOptions::new()).map_err(perr)?;
    let arrow_schema = Arc::clone(reader_meta.schema());
    let descr = meta.file_metadata().schema_descr();
    if descr.num_columns() != arrow_schema.fields().len() {
        return Err(bad("a nested schema cannot be rewritten by column".into()));
    }
    if let Some(w) = write.iter().find(|w| !read.contains(w) || arrow_schema.field_with_name(w).is_err()) {
        return Err(bad(format!("column `{w}` cannot be rewritten: it is not read, or not in the file")));
    }
    if let Some(w) = write.iter().find(|w| dictionary.contains(w)) {
        return Err(bad(format!("column `{w}` cannot be rewritten: it is read as a dictionary")));
    }
    let out_schema = Arc::new(
        arrow_schema
            .project(&write.iter().filter_map(|w| arrow_schema.index_of(w).ok()).collect::<Vec<_>>())
            .map_err(|e| bad(e.to_string()))?,
    );
    // What changes, row group by row group: only the columns read are
    // fetched, and decoded a batch at a time.
    let as_read = Arc::new(Schema::new_with_metadata(
        arrow_schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Utf8 if dictionary.contains(&f.name().as_str()) => Arc::new(
                    f.as_ref()
                        .clone()
                        .with_data_type(DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))),
                ),
                _ => Arc::clone(f),
            })
            .collect::<Vec<_>>(),
        arrow_schema.metadata().clone(),
    ));
    let read_meta = ArrowReaderMetadata::try_new(Arc::clone(&meta), ArrowReaderOptions::new().with_schema(as_read))
        .map_err(perr)?;
    let mut change = change;
    let mut changes: Vec<Option<RecordBatch>> = Vec::with_capacity(meta.num_row_groups());
    for rg in 0..meta.num_row_groups() {
        let reader = StoreReader { store: Arc::clone(&backend), path: Path::from(path) };
        let mask = ProjectionMask::columns(descr, read.iter().copied());
        let mut batches = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, read_meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![rg])
            .with_batch_size(8192)
            .build()
            .map_err(perr)?;
        let (mut parts, mut changed) = (Vec::new(), false);
        while let Some(b) = batches.try_next().await.map_err(perr)? {
            let (owned, out_schema) = (path.to_string(), Arc::clone(&out_schema));
            let (back, part) = tokio::task::spawn_blocking(move || {
                let part = change(&b).and_then(|new| {
                    let rows = new.as_ref().map_or(b.num_rows(), RecordBatch::num_rows);
                    if rows != b.num_rows() {
                        return Err(StoreError::Schema {
                            path: owned,
                            reason: format!("a change of {rows} rows for a batch of {}", b.num_rows()),
                        });
                    }
                    columns_of(new.as_ref().unwrap_or(&b), &out_schema)
                        .map(|n| (n, new.is_some()))
                        .map_err(|e| StoreError::Schema { path: owned, reason: e.to_string() })
                });
                (change, part)
            })
            .await
            .map_err(|e| perr(ParquetError::General(format!("rewrite thread failed: {e}"))))?;
            change = back;
            let (part, new) = part?;
            changed |= new;
            parts.push(part);
        }
        let rows = usize::try_from(meta.row_group(rg).num_rows()).unwrap_or(usize::MAX);
        changes.push(match concat_batches(&out_schema, &parts).map_err(|e| bad(e.to_string()))? {
            _ if !changed => None,
            new if new.num_rows() == rows => Some(new),
            new => return Err(bad(format!("row group {rg} read as {} rows of {rows}", new.num_rows()))),
        });
    }
    if changes.iter().all(Option::is_none) {
        return Ok(false);
    }
    // The new file: the old one's schema, Arrow schema and format version,
    // and for the columns encoded again, the shard settings with its codec.
    let file = meta.file_metadata();
    let codec = meta.row_groups().first().map(|g| g.column(0).compression()).unwrap_or(store.compression().codec());
    let version = if file.version() >= 2 { WriterVersion::PARQUET_2_0 } else { WriterVersion::PARQUET_1_0 };
    let props = shard_properties(codec, &arrow_schema, 32 << 20)
        .into_builder()
        .set_key_value_metadata(file.key_value_metadata().cloned())
        .set_writer_version(version)
        .build();
    let encoded = SharedBuf::default();
    let writer = SerializedFileWriter::new(encoded.clone(), descr.root_schema_ptr(), Arc::new(props)).map_err(perr)?;
    let factory = Arc::new(ArrowRowGroupWriterFactory::new(&writer, Arc::clone(&arrow_schema)));
    let mut writer = Some(writer);
    let mut sink = BufWriter::with_capacity(Arc::clone(&backend), Path::from(path), 8 << 20);
    for (rg, new) in changes.into_iter().enumerate() {
        let chunk = fetch_row_group(&*backend, path, &meta, rg).await?;
        let mut w = writer.take().ok_or_else(|| perr(ParquetError::General("writer lost".into())))?;
        let (meta, factory, fields) = (Arc::clone(&meta), Arc::clone(&factory), Arc::clone(&arrow_schema));
        let (w, done) = tokio::task::spawn_blocking(move || {
            let done = (|| -> Result<(), ParquetError> {
                let mut out = w.next_row_group()?;
                let Some(new) = new else {
                    for col in 0..meta.row_group(rg).num_columns() {
                        copy_column(&mut out, &chunk, &meta, rg, col)?;
                    }
                    return out.close().map(|_| ());
                };
                let writers = factory.create_column_writers(rg)?;
                for (col, (field, mut cw)) in fields.fields().iter().zip(writers).enumerate() {
                    match new.column_by_name(field.name()) {
                        None => copy_column(&mut out, &chunk, &meta, rg, col)?,
                        Some(array) => {
                            for leaf in compute_leaves(field, array)? {
                                cw.write(&leaf)?;
                            }
                            cw.close()?.append_to_row_group(&mut out)?;
                        }
                    }
                }
                out.close().map(|_| ())
            })();
            (w, done)
        })
        .await
        .map_err(|e| perr(ParquetError::General(format!("rewrite thread failed: {e}"))))?;
        done.map_err(perr)?;
        writer = Some(w);
        drain(&encoded, &mut sink, path).await?;
    }
    let w = writer.ok_or_else(|| perr(ParquetError::General("writer lost".into())))?;
    tokio::task::spawn_blocking(move || w.close().map(|_| ()))
        .await
        .map_err(|e| perr(ParquetError::General(format!("rewrite thread failed: {e}"))))?
        .map_err(perr)?;
    drain(&encoded, &mut sink, path).await?;
    sink.shutdown().await.map_err(|e| perr(ParquetError::External(Box::new(e))))?;
    Ok(true)
}

/// The columns of `from` named in `schema`, in its order.
fn columns_of(from: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            from.column_by_name(f.name())
                .cloned()
                .ok_or_else(|| ArrowError::SchemaError(format!("the change has no column `{}`", f.name())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    use arrow_array::{Array, ArrayRef, Int32Array};

    use super::*;
    use crate::schema::{input_batch, input_rows, input_schema, InRow};
    use crate::{read_batches, ShardWriter};

    fn rows() -> Vec<InRow> {
        (0..3000)
            .map(|i| InRow {
                url: format!("http://s.test/{i}"),
                depth: i % 3,
                referrer: (i % 2 == 0).then(|| format!("http://s.test/from/{}", i / 7)),
                priority: None,
                anchor: None,
                retries: 0,
            })
            .collect()
    }

    /// A change of `depth` to `to` for the row of URL `url`, in the batch
    /// that has it.
    fn set_depth(url: &'static str, to: i32) -> impl FnMut(&RecordBatch) -> Result<Option<RecordBatch>, StoreError> {
        move |b: &RecordBatch| {
            let urls = b.column_by_name("url").expect("url").as_string::<i32>();
            let depth = b.column_by_name("depth").expect("depth").as_primitive::<Int32Type>();
            if !urls.iter().flatten().any(|u| u == url) {
                return Ok(None);
            }
            let new: Int32Array =
                (0..b.num_rows()).map(|i| Some(if urls.value(i) == url { to } else { depth.value(i) })).collect();
            let new: ArrayRef = Arc::new(new);
            Ok(Some(RecordBatch::try_from_iter([("depth", new)]).expect("batch")))
        }
    }

    async fn read_rows(store: &Store, path: &str) -> Vec<InRow> {
        read_batches(store, path, None)
            .await
            .expect("read")
            .iter()
            .flat_map(|b| input_rows(b, path).expect("rows"))
            .collect()
    }

    #[tokio::test]
    async fn a_changed_column_is_rewritten_and_everything_else_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        for store in [
            Store::open("memory://").expect("memory"),
            Store::open(dir.path().to_str().expect("utf-8")).expect("folder"),
        ] {
            let path = "links/layer=0/part-00000.parquet";
            // Small row groups: the file has several, one of them changed.
            let mut w = ShardWriter::create(&store, path, input_schema(), 8 << 10).expect("writer");
            for chunk in rows().chunks(100) {
                w.write(&input_batch(chunk).expect("batch")).await.expect("write");
            }
            w.finish().await.expect("finish");
            let before = read_metadata(&*store.backend(), path).await.expect("meta");
            assert!(before.num_row_groups() > 3, "{} row groups", before.num_row_groups());

            assert!(rewrite_columns(
                &store,
                path,
                &["url", "depth"],
                &[],
                &["depth"],
                set_depth("http://s.test/1234", 9)
            )
            .await
            .expect("rewrite"));
            let back = read_rows(&store, path).await;
            let mut want = rows();
            want[1234].depth = 9;
            assert_eq!(back, want);
            // The same row groups; in all but one, the same bytes.
            let after = read_metadata(&*store.backend(), path).await.expect("meta");
            assert_eq!(after.num_row_groups(), before.num_row_groups());
            let sizes = |m: &parquet::file::metadata::ParquetMetaData| -> Vec<Vec<i64>> {
                m.row_groups().iter().map(|g| g.columns().iter().map(|c| c.compressed_size()).collect()).collect()
            };
            let (b, a) = (sizes(&before), sizes(&after));
            let differ: Vec<usize> = (0..b.len()).filter(|&g| b[g] != a[g]).collect();
            assert!(differ.len() <= 1, "row groups re-encoded: {differ:?}");
            // Nothing to change: the file is not written.
            let again = |b: &RecordBatch| -> Result<Option<RecordBatch>, StoreError> {
                let _ = b;
                Ok(None)
            };
            assert!(!rewrite_columns(&store, path, &["url", "depth"], &[], &["depth"], again).await.expect("nothing"));
            // A change of another length is refused, and the file kept.
            let short = |_: &RecordBatch| -> Result<Option<RecordBatch>, StoreError> {
                let one: ArrayRef = Arc::new(Int32Array::from(vec![1]));
                Ok(Some(RecordBatch::try_from_iter([("depth", one)]).expect("batch")))
            };
            let e = rewrite_columns(&store, path, &["url", "depth"], &[], &["depth"], short)
                .await
                .expect_err("wrong length");
            assert!(e.to_string().contains("rows for a batch"), "{e}");
            assert_eq!(
                read_batches(&store, path, None).await.expect("read").iter().map(RecordBatch::num_rows).sum::<usize>(),
                3000
            );
        }
    }

    /// A row group of many batches: the change of one batch keeps the
    /// others' values, and a column not written keeps its bytes.
    #[tokio::test]
    async fn a_row_group_of_many_batches_changes_where_its_batch_says() {
        let store = Store::open("memory://").expect("memory");
        let path = "in/layer=0/part-00000.parquet";
        let rows: Vec<InRow> = (0..20_000)
            .map(|i| InRow {
                url: format!("http://s.test/{i}"),
                depth: i % 3,
                referrer: None,
                priority: None,
                anchor: None,
                retries: 0,
            })
            .collect();
        let mut w = ShardWriter::create(&store, path, input_schema(), 64 << 20).expect("writer");
        w.write(&input_batch(&rows).expect("batch")).await.expect("write");
        w.finish().await.expect("finish");
        assert_eq!(read_metadata(&*store.backend(), path).await.expect("meta").num_row_groups(), 1);
        let seventeen = set_depth("http://s.test/17000", 17);
        assert!(rewrite_columns(&store, path, &["url", "depth"], &[], &["depth"], seventeen).await.expect("rewrite"));
        let back = read_rows(&store, path).await;
        let mut want = rows;
        want[17_000].depth = 17;
        assert_eq!(back, want);
    }

    /// Link targets kept in a large dictionary, and read as one: a change
    /// looks each distinct target up once per column chunk.
    #[tokio::test]
    async fn a_repeated_column_is_read_as_its_dictionary() {
        use crate::schema::{links_batch, LinkRow};
        let store = Store::open("memory://").expect("memory");
        let path = "links/layer=0/part-00000.parquet";
        // 200,000 links to 30,000 targets (a few MiB of distinct URLs, more
        // than the default dictionary holds), the navigation of a site.
        let target = |i: usize| format!("http://docs.test/reference/section-{:05}/page.html", (i * 7919) % 30_000);
        let links: Vec<LinkRow> =
            (0..200_000).map(|i| LinkRow::followed(format!("http://docs.test/p{}", i / 100), target(i), 1)).collect();
        let mut w = ShardWriter::create(&store, path, crate::schema::links_schema(), 64 << 20).expect("writer");
        for chunk in links.chunks(8192) {
            w.write(&links_batch(chunk).expect("batch")).await.expect("write");
        }
        w.finish().await.expect("finish");
        let meta = read_metadata(&*store.backend(), path).await.expect("meta");
        let dst = meta.row_group(0).column(1);
        assert_eq!(dst.column_path().string(), "dst_url");
        // Every data page dictionary-encoded: none fell back to plain values.
        let data_pages = dst.page_encoding_stats_mask().expect("data pages' encodings");
        assert!(
            dst.dictionary_page_offset().is_some() && data_pages.is_only(parquet::basic::Encoding::RLE_DICTIONARY),
            "{data_pages:?}"
        );
        let dropped = target(5);
        let mut dictionaries = Vec::<ArrayRef>::new();
        let change = move |b: &RecordBatch| -> Result<Option<RecordBatch>, StoreError> {
            let dst = b.column_by_name("dst_url").expect("dst_url").as_dictionary::<Int32Type>();
            if !dictionaries.iter().any(|d| Arc::ptr_eq(d, dst.values())) {
                dictionaries.push(Arc::clone(dst.values()));
            }
            assert!(dictionaries.len() <= meta.num_row_groups(), "one dictionary per column chunk");
            let values = dst.values().as_string::<i32>();
            let drop: Vec<bool> = (0..values.len()).map(|v| values.value(v) == dropped).collect();
            let followed: arrow_array::BooleanArray =
                dst.keys().iter().map(|k| Some(!drop[usize::try_from(k.expect("key")).expect("key")])).collect();
            let followed: ArrayRef = Arc::new(followed);
            Ok(Some(RecordBatch::try_from_iter([("followed", followed)]).expect("batch")))
        };
        assert!(rewrite_columns(&store, path, &["dst_url", "followed"], &["dst_url"], &["followed"], change)
            .await
            .expect("rewrite"));
        let back = read_batches(&store, path, None).await.expect("read");
        let (mut n, mut off) = (0, 0);
        for b in &back {
            let (dst, followed) = (
                b.column_by_name("dst_url").expect("dst").as_string::<i32>(),
                b.column_by_name("followed").expect("followed").as_boolean(),
            );
            for i in 0..b.num_rows() {
                assert_eq!(followed.value(i), dst.value(i) != target(5), "{}", dst.value(i));
                off += usize::from(!followed.value(i));
                n += 1;
            }
        }
        assert_eq!((n, off), (200_000, (0..200_000).filter(|&i| target(i) == target(5)).count()));
        let e = rewrite_columns(&store, path, &["dst_url"], &["dst_url"], &["dst_url"], |_: &RecordBatch| Ok(None))
            .await
            .expect_err("a dictionary column is not written");
        assert!(e.to_string().contains("read as a dictionary"), "{e}");
    }
}
