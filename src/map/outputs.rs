//! A map task's outputs beside the fetch: the `doc` and `links` shards,
//! the noise filter's samples, the rules' items, the row extractors'
//! datasets (entities, relations) and the WARC archive, each buffered and
//! written in batches, all under the task's one commit.
//!
//! [`TaskOutputs`] is where a new per-page output plugs in
//! (ARCHITECTURE.md, "Where to plug in"): the CPU part of
//! the output runs in [`super::process`] on the rayon pool and rides on
//! [`Processed`]; its writer is one field here, fed by [`TaskOutputs::add`]
//! and closed by [`TaskOutputs::finish`], its path in `store/layout.rs`.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;

use crate::denoise::evidence::{self, Sample};
use crate::error::StageError;
use crate::extract::{Dataset, Extractors, Row};
use crate::rules::items::{self as rule_items, ItemRow};
use crate::rules::Rules;
use crate::store::manifest::MapManifest;
use crate::store::schema::{self, DocRow, LinkRow};
use crate::store::{layout, Store, StoreError};
use crate::warc::{TaskArchive, WarcFile};

use super::sink::Sink;
use super::{Processed, BATCH_BYTES, BATCH_ROWS};

/// While memory is near `--max-memory` (the fetcher's governor says so),
/// batches are this many times smaller: fewer rows wait in memory.
const TIGHT_BATCH_DIVISOR: usize = 8;
/// Samples buffered before they are written (~100 bytes each)...
const SAMPLE_BATCH: usize = 4096;
/// ...or bytes of them: a long page's sample holds a hash per paragraph
/// (16 bytes each; 512 KB pages make samples of ~10 KB).
const SAMPLE_BATCH_BYTES: usize = 1 << 20;

/// The writers of one map attempt and the rows waiting for them.
pub(super) struct TaskOutputs<'a> {
    doc_schema: SchemaRef,
    docs: Sink<'a>,
    doc_buf: Vec<DocRow>,
    doc_buf_bytes: usize,
    links: Sink<'a>,
    link_buf: Vec<LinkRow>,
    samples: Sink<'a>,
    sample_buf: Vec<Sample>,
    sample_buf_bytes: usize,
    /// One items dataset per rule of the run's rules file, in its order.
    rules: Option<Arc<Rules>>,
    items: Vec<(Sink<'a>, Vec<ItemRow>)>,
    /// One shard per dataset of the run's row extractors, in their order.
    extracted: Vec<(Sink<'a>, Vec<Row>)>,
    /// The WARC archive (`--warc`), whose records arrive compressed.
    warc: Option<WarcFile<'a>>,
}

impl<'a> TaskOutputs<'a> {
    /// The outputs of partition `part` of `layer`, written through
    /// `store` (the attempt's); no file is made before its first row.
    pub(super) fn new(
        store: &'a Store,
        layer: u32,
        part: u32,
        extract: &Extractors,
        rules: Option<Arc<Rules>>,
        warc: Option<Arc<TaskArchive>>,
    ) -> Self {
        let doc_schema = extract.doc_schema();
        let extracted = extract
            .datasets()
            .iter()
            .map(|d| (Sink::new(store, layout::extracted(&d.name, layer, part), d.schema()), Vec::new()))
            .collect();
        let items = rules
            .iter()
            .flat_map(|r| r.list.iter())
            .map(|rule| {
                (Sink::new(store, layout::items(&rule.name, layer, part), rule_items::schema(rule)), Vec::new())
            })
            .collect();
        Self {
            docs: Sink::new(store, layout::doc(layer, part), Arc::clone(&doc_schema)),
            doc_schema,
            doc_buf: Vec::with_capacity(BATCH_ROWS),
            doc_buf_bytes: 0,
            links: Sink::new(store, layout::links(layer, part), schema::links_schema()),
            link_buf: Vec::with_capacity(BATCH_ROWS * 8),
            samples: Sink::new(store, layout::samples(layer, part), evidence::samples_schema()),
            sample_buf: Vec::with_capacity(SAMPLE_BATCH),
            sample_buf_bytes: 0,
            rules,
            items,
            extracted,
            warc: warc.map(|a| WarcFile::new(store, a)),
        }
    }

    /// Takes one processed page's rows, writing whatever batch is full;
    /// `tight`: memory is near its cap, so batches are smaller.
    ///
    /// # Errors
    /// When a batch cannot be built or written.
    pub(super) async fn add(
        &mut self,
        page: Processed,
        manifest: &mut MapManifest,
        tight: bool,
    ) -> Result<(), StageError> {
        let Processed { doc, links, sample, rule, rows, warc } = page;
        let shrink = if tight { TIGHT_BATCH_DIVISOR } else { 1 };
        if let (Some(file), Some(records)) = (self.warc.as_mut(), warc) {
            file.add(records).await?;
        }
        for ((sink, buf), rows) in self.extracted.iter_mut().zip(rows.sets) {
            buf.extend(rows);
            if buf.len() >= BATCH_ROWS * 8 / shrink {
                *manifest.extracted.entry(dataset_name(&sink.path)).or_default() += buf.len() as u64;
                sink.write(&Dataset::batch(&sink.schema, buf)?).await?;
                buf.clear();
            }
        }
        if let Some(s) = &sample {
            self.sample_buf_bytes += s.url.len() + std::mem::size_of_val(s.paragraphs.as_slice());
        }
        self.sample_buf.extend(sample);
        if self.sample_buf.len() >= SAMPLE_BATCH || self.sample_buf_bytes >= SAMPLE_BATCH_BYTES / shrink {
            self.flush_samples().await?;
        }
        if let (Some((page_items, dropped)), Some(rules)) = (rule, self.rules.as_deref()) {
            let r = &rules.list[page_items.rule];
            let counts = manifest.rules.entry(r.name.clone()).or_default();
            counts.add_page(r, &page_items.items);
            counts.links_dropped += dropped;
            let (sink, buf) = &mut self.items[page_items.rule];
            for item in page_items.items {
                buf.push(ItemRow { url: doc.url.clone(), fetched_at_us: doc.fetched_at_us, item });
            }
            if buf.len() >= BATCH_ROWS {
                sink.write(&rule_items::batch(r, &sink.schema, buf)?).await?;
                buf.clear();
            }
        }
        self.doc_buf_bytes += doc.body.as_ref().map_or(0, |b| b.len()) + doc.text.as_ref().map_or(0, String::len);
        self.doc_buf.push(doc);
        self.link_buf.extend(links);
        if self.doc_buf.len() >= BATCH_ROWS / shrink || self.doc_buf_bytes >= BATCH_BYTES / shrink {
            self.flush_docs().await?;
        }
        if self.link_buf.len() >= BATCH_ROWS * 8 / shrink {
            self.flush_links(manifest).await?;
        }
        Ok(())
    }

    /// Bytes of body and text in the rows waiting for their batch, and of
    /// the samples waiting for theirs.
    pub(super) fn buffered_bytes(&self) -> usize {
        self.doc_buf_bytes + self.sample_buf_bytes
    }

    /// Writes the rows and samples waiting for their batch now (the memory
    /// cap wants their pages back).
    ///
    /// # Errors
    /// When a batch cannot be built or written.
    pub(super) async fn flush_pages(&mut self) -> Result<(), StageError> {
        self.flush_docs().await?;
        self.flush_samples().await
    }

    /// Links that no page of this task holds (the seeds' sitemaps).
    pub(super) fn add_links(&mut self, links: Vec<LinkRow>) {
        self.link_buf.extend(links);
    }

    /// Writes what is left and closes every file; `manifest.links` counts
    /// the links written.
    ///
    /// # Errors
    /// When a batch cannot be built or written, or a file not closed.
    pub(super) async fn finish(mut self, manifest: &mut MapManifest) -> Result<(), StageError> {
        self.flush_docs().await?;
        self.flush_links(manifest).await?;
        self.flush_samples().await?;
        self.docs.finish().await?;
        self.links.finish().await?;
        self.samples.finish().await?;
        for (mut sink, buf) in self.extracted {
            if !buf.is_empty() {
                *manifest.extracted.entry(dataset_name(&sink.path)).or_default() += buf.len() as u64;
                sink.write(&Dataset::batch(&sink.schema, &buf)?).await?;
            }
            sink.finish().await?;
        }
        for (i, (mut sink, buf)) in self.items.into_iter().enumerate() {
            if let (false, Some(rules)) = (buf.is_empty(), self.rules.as_deref()) {
                sink.write(&rule_items::batch(&rules.list[i], &sink.schema, &buf)?).await?;
            }
            sink.finish().await?;
        }
        if let Some(file) = self.warc {
            file.finish().await?;
        }
        Ok(())
    }

    async fn flush_docs(&mut self) -> Result<(), StageError> {
        if !self.doc_buf.is_empty() {
            self.docs.write(&schema::doc_batch_with(&self.doc_schema, &self.doc_buf)?).await?;
            self.doc_buf.clear();
            self.doc_buf_bytes = 0;
        }
        Ok(())
    }

    async fn flush_links(&mut self, manifest: &mut MapManifest) -> Result<(), StageError> {
        if !self.link_buf.is_empty() {
            manifest.links += self.link_buf.len() as u64;
            self.links.write(&schema::links_batch(&self.link_buf)?).await?;
            self.link_buf.clear();
        }
        Ok(())
    }

    async fn flush_samples(&mut self) -> Result<(), StageError> {
        if !self.sample_buf.is_empty() {
            let batch = evidence::samples_batch(&self.sample_buf)
                .map_err(|e| StoreError::Schema { path: self.samples.path.clone(), reason: e.to_string() })?;
            self.samples.write(&batch).await?;
            self.sample_buf.clear();
            self.sample_buf_bytes = 0;
        }
        Ok(())
    }
}

/// The dataset a shard path belongs to (`entities/layer=0/part-00000.parquet`: `entities`).
fn dataset_name(path: &str) -> String {
    path.split('/').next().unwrap_or(path).to_string()
}
