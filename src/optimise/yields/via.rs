//! The noise filter's link classes of the URLs a partition follows into a
//! layer (`state/denoise/via/`): what each one's page will be counted by
//! once fetched ([`super::count`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::denoise::yields::PageClass;
use crate::store::column::{Tuned, Tuning};
use crate::store::{layout, read_if_exists, ShardWriter, Store, StoreError};
use crate::urlnorm;

use super::super::missing;

fn via_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("fingerprint", DataType::Int64, false).tuned(Tuning::DISTINCT),
            // The source templates, one a line.
            Field::new("via", DataType::Utf8, false),
            Field::new("referrer", DataType::Utf8, true),
            Field::new("class", DataType::Int64, false).tuned(Tuning::DISTINCT),
        ]))
    }))
}

/// What a followed URL's page will be counted by: the URL's fingerprint,
/// the templates of the pages that link it (one a line), its referrer
/// (whose things its link template marks, [`PageClass::of`]) and the key
/// of the class these make ([`PageClass::key`]), as the step deciding it
/// made it.
pub(in crate::optimise) struct Via {
    pub fingerprint: u64,
    pub via: String,
    pub referrer: Option<String>,
    pub class: u64,
}

/// Keeps the link classes of the URLs partition `k` follows into `layer`,
/// for judging their pages after it.
pub(in crate::optimise) async fn write_via(store: &Store, layer: u32, k: u32, rows: &[Via]) -> Result<(), StoreError> {
    let path = layout::via(layer, k);
    if rows.is_empty() {
        return store.delete(&path).await;
    }
    let mut w = ShardWriter::create(store, &path, via_schema(), 8 << 20)?;
    for chunk in rows.chunks(8192) {
        let fp: Int64Array = chunk.iter().map(|r| Some(i64::from_ne_bytes(r.fingerprint.to_ne_bytes()))).collect();
        let via: StringArray = chunk.iter().map(|r| Some(r.via.as_str())).collect();
        let referrer: StringArray = chunk.iter().map(|r| r.referrer.as_deref()).collect();
        let class: Int64Array = chunk.iter().map(|r| Some(i64::from_ne_bytes(r.class.to_ne_bytes()))).collect();
        let b =
            RecordBatch::try_new(via_schema(), vec![Arc::new(fp), Arc::new(via), Arc::new(referrer), Arc::new(class)])
                .map_err(|e| StoreError::Schema { path: path.clone(), reason: e.to_string() })?;
        w.write(&b).await?;
    }
    w.finish().await?;
    Ok(())
}

/// The link classes of the URLs a partition followed into a layer
/// ([`write_via`]), as read: each URL's row found by its fingerprint, its
/// strings read only for the pages a class is made from.
#[derive(Default)]
pub(super) struct ViaRows {
    batches: Vec<ViaBatch>,
    by_fingerprint: HashMap<u64, (u32, u32)>,
}

struct ViaBatch {
    via: StringArray,
    referrer: Option<StringArray>,
    class: Option<Int64Array>,
}

impl ViaRows {
    fn row(&self, url: &str) -> Option<(&ViaBatch, usize)> {
        let &(b, i) = self.by_fingerprint.get(&urlnorm::fingerprint_str(url))?;
        Some((&self.batches[b as usize], i as usize))
    }

    /// The templates of the pages that linked `url` and its referrer (none
    /// for a seed or a URL carried over, which no link brought).
    pub(super) fn get(&self, url: &str) -> (Vec<String>, Option<&str>) {
        let Some((b, i)) = self.row(url) else {
            return (Vec::new(), None);
        };
        let via = b.via.value(i).split('\n').filter(|t| !t.is_empty()).map(String::from).collect();
        (via, b.referrer.as_ref().filter(|r| !r.is_null(i)).map(|r| r.value(i)))
    }

    /// The key of the page class of `url` ([`PageClass::key`]): as stored
    /// when it was followed, or made again from its row (a seed, a URL
    /// carried over, a row written before keys were kept).
    pub(super) fn class_key(&self, url: &str) -> u64 {
        if let Some((b, i)) = self.row(url) {
            if let Some(class) = b.class.as_ref().filter(|c| !c.is_null(i)) {
                return u64::from_ne_bytes(class.value(i).to_ne_bytes());
            }
        }
        let (via, referrer) = self.get(url);
        PageClass::of(url, referrer, &via).key()
    }
}

pub(super) async fn read_via(store: &Store, layer: u32, k: u32) -> Result<ViaRows, StoreError> {
    let path = layout::via(layer, k);
    let mut out = ViaRows::default();
    for b in read_if_exists(store, &path).await? {
        let fp = b
            .column_by_name("fingerprint")
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| missing(&path, "fingerprint"))?;
        let at = u32::try_from(out.batches.len()).unwrap_or(u32::MAX);
        for i in 0..b.num_rows() {
            out.by_fingerprint
                .insert(u64::from_ne_bytes(fp.value(i).to_ne_bytes()), (at, u32::try_from(i).unwrap_or(0)));
        }
        out.batches.push(ViaBatch {
            via: super::super::str_col(&b, "via", &path)?.clone(),
            // Written before referrers or class keys were kept (a crawl
            // resumed by a newer version): its pages are counted as linked
            // by no referrer, their classes made again.
            referrer: b.column_by_name("referrer").and_then(|c| c.as_string_opt::<i32>()).cloned(),
            class: b.column_by_name("class").and_then(|c| c.as_primitive_opt::<Int64Type>()).cloned(),
        });
    }
    Ok(out)
}
