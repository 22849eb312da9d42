//! The stage costs the cpu scenario's limit is made of, measured alone on
//! one core over the crawl's own pages, read back from its Parquet output.
//!
//! - parse + extract: what the limit counts (with the test web's
//!   serving cost, measured during the crawl);
//! - store + merge: writing the same rows through the crawler's shard
//!   writer and merging the shard as the last layer does. A crawler that
//!   keeps its pages pays this too; the suite reports the limit with and
//!   without it, so the table shows what the rest of the crawl costs.

use std::path::Path;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, RecordBatch, UInt32Array};
use layercrawl::map::{BATCH_BYTES, BATCH_ROWS, SHARD_ROW_GROUP_BYTES};
use layercrawl::parse::{parse_html, ParseConfig};
use layercrawl::store::concat_shards;
use layercrawl::store::{schema::doc_schema, ShardWriter, Store};
use url::Url;

use super::{median, DirBatches};

/// Seconds per page of `parse_html` on one core, over 4,000 of the crawl's
/// own HTML pages (bodies read back from its Parquet output, every n-th).
pub fn parse_cost(doc: &Path, pages_in_crawl: f64) -> f64 {
    let every = ((pages_in_crawl / 4000.0) as usize).max(1);
    let mut seen = 0usize;
    let mut pages: Vec<(Url, Option<String>, Vec<u8>)> = Vec::new();
    // Batch by batch: this process stays small, so the peak RSS of the
    // processes it starts later is theirs alone.
    for batch in DirBatches::new(doc, &["final_url", "status", "content_type", "body"]) {
        let url = batch.column(0).as_string::<i32>();
        let status = batch.column(1).as_primitive::<Int32Type>();
        let ct = batch.column(2).as_string::<i32>();
        let body = batch.column(3).as_binary::<i32>();
        for i in 0..batch.num_rows() {
            if status.value(i) == 200 && !body.is_null(i) && !ct.is_null(i) && ct.value(i).contains("html") {
                seen += 1;
                if !seen.is_multiple_of(every) {
                    continue;
                }
                if let Ok(u) = Url::parse(url.value(i)) {
                    pages.push((u, Some(ct.value(i).to_string()), body.value(i).to_vec()));
                }
            }
        }
    }
    assert!(!pages.is_empty(), "no HTML pages in {}", doc.display());
    let sample = pages;
    let cfg = ParseConfig::default();
    let mut per_page = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut links = 0usize;
        for (url, ct, body) in &sample {
            links += std::hint::black_box(parse_html(body, ct.as_deref(), url, &cfg)).links.len();
        }
        std::hint::black_box(links);
        per_page.push(t.elapsed().as_secs_f64() / sample.len() as f64);
    }
    median(per_page)
}

/// Seconds per row of the reduce stage alone, on one core: every n-th row
/// of the crawl's `doc` (all columns, about 8,000 rows) written through the
/// crawler's [`ShardWriter`] into a local folder in `tmp`, then, apart, the
/// merge of that shard into a layer file ([`concat_shards`]). Returns
/// (store, merge), medians of three.
pub fn store_cost(doc: &Path, rows_in_crawl: u64, tmp: &Path) -> (f64, f64) {
    let every = usize::try_from(rows_in_crawl / 8000).unwrap_or(1).max(1);
    let schema = doc_schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    let mut seen = 0usize;
    let mut sample: Vec<RecordBatch> = Vec::new();
    for batch in DirBatches::new(doc, &names) {
        let n = batch.num_rows();
        let picks: UInt32Array =
            (0..n).filter(|i| (seen + i + 1).is_multiple_of(every)).map(|i| u32::try_from(i).ok()).collect();
        seen += n;
        let columns =
            batch.columns().iter().map(|c| arrow_select::take::take(c, &picks, None).expect("take")).collect();
        sample.push(RecordBatch::try_new(schema.clone(), columns).expect("the crawl's doc schema"));
    }
    let rows = arrow_select::concat::concat_batches(&schema, &sample).expect("concat");
    assert!(rows.num_rows() > 0, "no rows in {}", doc.display());
    let batches = crawl_batches(&rows);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (mut store_s, mut merge_s) = (Vec::new(), Vec::new());
    for run in 0..3 {
        let dir = tmp.join(format!("store-cost-{run}"));
        let store = Store::open(dir.to_str().expect("utf-8 temp path")).expect("a local store");
        let (s, m) = rt.block_on(async {
            let t = Instant::now();
            let mut w = ShardWriter::create(&store, "shard.parquet", schema.clone(), SHARD_ROW_GROUP_BYTES)
                .expect("shard writer");
            for b in &batches {
                w.write(b).await.expect("write");
            }
            w.finish().await.expect("finish");
            let s = t.elapsed().as_secs_f64();
            let t = Instant::now();
            concat_shards(&store, &["shard.parquet".to_string()], "merged.parquet").await.expect("merge");
            (s, t.elapsed().as_secs_f64())
        });
        let n = rows.num_rows() as f64;
        store_s.push(s / n);
        merge_s.push(m / n);
        let _ = std::fs::remove_dir_all(&dir);
    }
    (median(store_s), median(merge_s))
}

/// `rows` cut as the crawl cuts its `doc` batches.
fn crawl_batches(rows: &RecordBatch) -> Vec<RecordBatch> {
    let size = |name: &str, i: usize| {
        rows.column_by_name(name).map_or(0, |c| match c.data_type() {
            arrow_schema::DataType::Binary => c.as_binary::<i32>().value_length(i),
            _ => c.as_string::<i32>().value_length(i),
        })
    };
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0usize, 0usize);
    for i in 0..rows.num_rows() {
        bytes += usize::try_from(size("body", i) + size("text", i)).unwrap_or(0);
        if i + 1 - start >= BATCH_ROWS || bytes >= BATCH_BYTES || i + 1 == rows.num_rows() {
            out.push(rows.slice(start, i + 1 - start));
            (start, bytes) = (i + 1, 0);
        }
    }
    out
}
