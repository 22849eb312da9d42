//! Extractors that write rows of datasets of their own beside `doc`
//! (ARCHITECTURE.md, "Where to plug in"): entities and
//! relations, so far.
//!
//! A [`RowExtractor`] declares its datasets (a name, the folder under the
//! data location, and columns) and pushes a page's rows of each; it runs
//! on the rayon pool in `map::process` in the crawler right after the `doc`
//! extractors, on the same [`super::ParsedPage`] (its main text computed
//! once for all). The rows ride on the page's `Processed` to the map
//! task's writers (`map/output/extracted.rs`: one shard per dataset and partition,
//! `NAME/layer=L/part-PPPPP.parquet`, under the task's one commit), and
//! the merge finds the datasets by listing. A dataset's name must be one
//! of [`crate::store::dataset::extracted`] (a row of the table whose
//! count is `Extracted`), so that the merge knows to look for it.

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use std::sync::Arc;

use super::{Column, PageInput, Value};
use crate::store::StoreError;

/// One row of a dataset: a value per column, in order.
pub type Row = Vec<Value>;

/// A dataset an extractor writes, beside `doc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dataset {
    /// Its folder under the data location (`entities`).
    pub name: String,
    pub columns: Vec<Column>,
}

impl Dataset {
    /// Its Arrow schema (each column's Parquet tuning on its field).
    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(self.columns.iter().map(Column::field).collect::<Vec<_>>()))
    }

    /// A batch of `rows` in `schema` (this dataset's). A row's missing or
    /// mistyped value is null, or the type's zero in a column that is not
    /// nullable.
    ///
    /// # Errors
    /// When a column's type is not an extractor column type.
    pub fn batch(schema: &SchemaRef, rows: &[Row]) -> Result<RecordBatch, StoreError> {
        let mut cols = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            cols.push(crate::store::column::build_column(field, rows.iter().map(|r| r.get(i)))?);
        }
        RecordBatch::try_new(Arc::clone(schema), cols)
            .map_err(|e| StoreError::Schema { path: "<batch>".into(), reason: e.to_string() })
    }
}

/// The rows one page gave each dataset of the run's row extractors, in
/// the registry's dataset order ([`super::Extractors::datasets`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageRows {
    pub sets: Vec<Vec<Row>>,
}

impl PageRows {
    /// No rows at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.sets.iter().all(Vec::is_empty)
    }
}

/// One capability that writes rows of its own datasets from a page.
/// Object-safe; one instance serves every parse worker (build automata and
/// patterns when it is made, not per page).
pub trait RowExtractor: Send + Sync {
    /// A short name, for logs and errors.
    fn name(&self) -> &str;

    /// Its datasets, in order. Called once, when the registry is built.
    fn datasets(&self) -> Vec<Dataset>;

    /// Pushes this page's rows onto `out`: one list per dataset, in the
    /// order of [`Self::datasets`].
    fn rows(&self, input: &PageInput<'_>, out: &mut [Vec<Row>]);

    /// Scores from 0 to 1 for the page's links, one per anchor text in
    /// order, from the page's rows (`rows`, as [`Self::rows`] made them)
    /// and the anchors: what orders the next layer's input, like a crawl
    /// plan's link score (docs/src/focused-crawling.md). `None` (the
    /// default): no opinion.
    fn link_scores(&self, _rows: &[Vec<Row>], _anchors: &[&str]) -> Option<Vec<f64>> {
        None
    }
}
