//! The `skipped` dataset: each URL the noise filter did not follow
//! (docs/src/output.md); its rows are written by the optimise step, and
//! by the map task for the URLs it held back in their layer.

use std::sync::{Arc, OnceLock};

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::column::{Tuned, Tuning};

/// Schema of the `skipped` dataset: one row per URL the noise filter did
/// not follow on its link class's evidence (docs/src/output.md).
#[must_use]
pub fn skipped_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("url", DataType::Utf8, false).tuned(Tuning::DISTINCT),
            Field::new("depth", DataType::Int32, false).tuned(Tuning::SMALL),
            Field::new("referrer", DataType::Utf8, true),
            Field::new("reason", DataType::Utf8, false).tuned(Tuning::SMALL),
            Field::new("source_template", DataType::Utf8, false).tuned(Tuning::SMALL),
            Field::new("target_template", DataType::Utf8, false).tuned(Tuning::SMALL),
            Field::new("class_fetched", DataType::Int64, false),
            Field::new("class_new", DataType::Int64, false),
            Field::new("class_errors", DataType::Int64, false),
        ]))
    }))
}
