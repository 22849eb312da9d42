//! Concatenating Parquet shards without re-encoding them (what the final
//! merge does to each dataset's layer).
//!
//! Each shard's row groups are copied into the output byte for byte, column
//! chunk by column chunk (what parquet's own `parquet-concat` does), so the
//! merge costs I/O, not decompression and recompression: re-encoding took
//! a third of a whole crawl's time. One row group is in memory at a time,
//! fetched by byte range, so memory does not grow with the shard's size.
//! This path serves object storage; a local folder has a shorter one that
//! leaves the copying to the kernel ([`super::splice`]).

use std::io::Write;
use std::sync::Arc;

use object_store::buffered::BufWriter;
use object_store::path::Path;
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::writer::SerializedFileWriter;
use tokio::io::AsyncWriteExt;

use super::chunks::check_schemas;
use crate::chunks::{copy_column, drain, fetch_row_group, ran_out, read_metadata, RangeChunk};
use crate::fence::Fence;
use crate::{Access, SharedBuf, Store, StoreError};

/// Writes `output` as the concatenation of the row groups of `inputs`
/// (which must share one schema); returns the row count. The output
/// appears atomically when complete.
///
/// # Errors
/// When an input is missing or not Parquet, the schemas differ, or the
/// write fails.
pub async fn concat_shards(store: &Store, inputs: &[String], output: &str) -> Result<u64, StoreError> {
    concat_fenced(store, inputs, output, None).await
}

/// [`concat_shards`] under `fence`: the output appears only if the fence
/// still holds once it is written (the final merge's);
/// otherwise nothing appears and the error is [`StoreError::Fenced`].
///
/// # Errors
/// Those of [`concat_shards`], and the fence that ran out.
pub async fn concat_fenced(
    store: &Store,
    inputs: &[String],
    output: &str,
    fence: Option<Arc<Fence>>,
) -> Result<u64, StoreError> {
    let perr = |path: &str, source: ParquetError| StoreError::Parquet { path: path.to_string(), source };
    match store.access() {
        // Files in a folder: the kernel copies the row groups (splice.rs).
        Access::Folder(root) => {
            let (root, inputs, owned) = (root.to_path_buf(), inputs.to_vec(), output.to_string());
            tokio::task::spawn_blocking(move || super::splice::concat_local(&root, &inputs, &owned, fence.as_deref()))
                .await
                .map_err(|e| perr(output, ParquetError::General(format!("copy thread failed: {e}"))))?
        }
        // Objects: row groups fetched by range and uploaded.
        Access::Objects => concat_objects(store, inputs, output, fence.as_deref()).await,
    }
}

/// [`concat_shards`] on an object store.
async fn concat_objects(
    store: &Store,
    inputs: &[String],
    output: &str,
    fence: Option<&Fence>,
) -> Result<u64, StoreError> {
    let perr = |path: &str, source: ParquetError| StoreError::Parquet { path: path.to_string(), source };
    let mut metas: Vec<Arc<ParquetMetaData>> = Vec::with_capacity(inputs.len());
    for input in inputs {
        metas.push(Arc::new(read_metadata(&*store.backend(), input).await?));
    }
    let borrowed: Vec<&ParquetMetaData> = metas.iter().map(AsRef::as_ref).collect();
    check_schemas(inputs, &borrowed, output)?;
    let first = &metas[0];
    let schema = first.file_metadata().schema_descr().root_schema_ptr();
    // Keep the Arrow schema (time zones, unsigned types) that the shards
    // carry, and the format version their pages were written for.
    let version =
        if first.file_metadata().version() >= 2 { WriterVersion::PARQUET_2_0 } else { WriterVersion::PARQUET_1_0 };
    let props = WriterProperties::builder()
        .set_key_value_metadata(first.file_metadata().key_value_metadata().cloned())
        .set_writer_version(version)
        .build();
    let encoded = SharedBuf::default();
    let mut writer =
        Some(SerializedFileWriter::new(encoded.clone(), schema, Arc::new(props)).map_err(|e| perr(output, e))?);
    let mut sink = BufWriter::with_capacity(store.backend(), Path::from(output), 8 << 20);
    let mut rows = 0u64;
    for (input, meta) in inputs.iter().zip(metas) {
        for rg in 0..meta.num_row_groups() {
            let chunk = fetch_row_group(&*store.backend(), input, &meta, rg).await?;
            let mut w = writer.take().ok_or_else(|| perr(output, ParquetError::General("writer lost".into())))?;
            let meta = Arc::clone(&meta);
            let (w, result) = tokio::task::spawn_blocking(move || {
                let r = copy_row_group(&mut w, &chunk, &meta, rg);
                (w, r)
            })
            .await
            .map_err(|e| perr(output, ParquetError::General(format!("copy thread failed: {e}"))))?;
            writer = Some(w);
            rows += result.map_err(|e| perr(input, e))?;
            drain(&encoded, &mut sink, output).await?;
        }
    }
    let w = writer.ok_or_else(|| perr(output, ParquetError::General("writer lost".into())))?;
    tokio::task::spawn_blocking(move || w.close().map(|_| ()))
        .await
        .map_err(|e| perr(output, ParquetError::General(format!("copy thread failed: {e}"))))?
        .map_err(|e| perr(output, e))?;
    drain(&encoded, &mut sink, output).await?;
    // The upload completes (the object appears) only under the fence.
    if let Some(f) = fence.filter(|f| !f.holds()) {
        let _ = sink.abort().await;
        return Err(ran_out(output, f));
    }
    sink.shutdown().await.map_err(|e| perr(output, ParquetError::External(Box::new(e))))?;
    Ok(rows)
}

/// Copies row group `rg` of `meta` (its bytes in `chunk`) into `w`.
fn copy_row_group<W: Write + Send>(
    w: &mut SerializedFileWriter<W>,
    chunk: &RangeChunk,
    meta: &ParquetMetaData,
    rg: usize,
) -> Result<u64, ParquetError> {
    let group = meta.row_group(rg);
    let mut out = w.next_row_group()?;
    for col in 0..group.num_columns() {
        copy_column(&mut out, chunk, meta, rg, col)?;
    }
    out.close()?;
    Ok(u64::try_from(group.num_rows()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{input_batch, input_rows, input_schema, InRow};
    use crate::{read_batches, ShardWriter};

    #[tokio::test]
    async fn shards_concatenate_with_their_row_groups_and_rows_intact() {
        let store = Store::open("memory://").expect("store");
        let mut all = Vec::new();
        let mut shards = Vec::new();
        for s in 0..3 {
            let rows: Vec<InRow> = (0..500 * (s + 1))
                .map(|i| InRow {
                    url: format!("http://s{s}.test/{i}"),
                    depth: i % 3,
                    referrer: (i % 2 == 0).then(|| "r".into()),
                    priority: None,
                    anchor: None,
                    retries: 0,
                })
                .collect();
            let path = format!("in/layer=0/part-{s:05}.parquet");
            // Tiny row groups, so each shard has several.
            let mut w = ShardWriter::create(&store, &path, input_schema(), 4096).expect("writer");
            for chunk in rows.chunks(100) {
                w.write(&input_batch(chunk).expect("batch")).await.expect("write");
            }
            w.finish().await.expect("finish");
            all.extend(rows);
            shards.push(path);
        }
        let n = concat_shards(&store, &shards, "out/data.parquet").await.expect("concat");
        assert_eq!(n, all.len() as u64);
        let back: Vec<InRow> = read_batches(&store, "out/data.parquet", None)
            .await
            .expect("read")
            .iter()
            .flat_map(|b| input_rows(b, "t").expect("rows"))
            .collect();
        assert_eq!(back, all);
    }

    #[tokio::test]
    async fn different_schemas_are_refused() {
        let store = Store::open("memory://").expect("store");
        let mut w = ShardWriter::create(&store, "a.parquet", input_schema(), 1 << 20).expect("w");
        w.write(
            &input_batch(&[InRow {
                url: "u".into(),
                depth: 0,
                referrer: None,
                priority: None,
                anchor: None,
                retries: 0,
            }])
            .expect("b"),
        )
        .await
        .expect("w");
        w.finish().await.expect("f");
        let mut w = ShardWriter::create(&store, "b.parquet", crate::schema::content_schema(), 1 << 20).expect("w");
        w.write(&crate::schema::content_batch(&[(1, "u".into())]).expect("b")).await.expect("w");
        w.finish().await.expect("f");
        let e =
            concat_shards(&store, &["a.parquet".into(), "b.parquet".into()], "c.parquet").await.expect_err("schemas");
        assert!(e.to_string().contains("b.parquet"), "{e}");
    }
}
