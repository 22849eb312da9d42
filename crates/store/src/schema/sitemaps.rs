//! The `sitemaps` dataset: each URL a sitemap listed (layer 0).

use std::sync::{Arc, OnceLock};

use arrow_array::builder::StringBuilder;
use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{batch, DISTINCT};
use crate::column::Tuned;
use crate::StoreError;

/// Schema of `sitemaps/layer=0/*.parquet`: each URL a sitemap listed.
pub fn sitemaps_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("sitemap", DataType::Utf8, false),
            Field::new("url", DataType::Utf8, false).tuned(DISTINCT),
            Field::new("lastmod", DataType::Utf8, true),
        ]))
    }))
}

/// A URL a sitemap listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SitemapRow {
    pub sitemap: String,
    pub url: String,
    pub lastmod: Option<String>,
}

/// Encodes sitemap rows as one batch.
///
/// # Errors
/// Never in practice (the columns match the schema by construction).
pub fn sitemaps_batch(rows: &[SitemapRow]) -> Result<RecordBatch, StoreError> {
    let (mut sitemap, mut url, mut lastmod) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    for r in rows {
        sitemap.append_value(&r.sitemap);
        url.append_value(&r.url);
        lastmod.append_option(r.lastmod.as_deref());
    }
    batch(sitemaps_schema(), vec![Arc::new(sitemap.finish()), Arc::new(url.finish()), Arc::new(lastmod.finish())])
}
