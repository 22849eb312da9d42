//! The merge's part of the backend conformance suite
//! (`store::conformance`, run against every backend by its unit test and
//! `tests/backends.rs`): the concatenation copies row groups by ranged
//! reads, which every backend must serve alike.

use crate::store::conformance::rows;
use crate::store::dataset::IN;
use crate::store::schema::{input_batch, input_rows, input_schema, InRow};
use crate::store::{layout, read_batches, ShardWriter, Store};

/// Shards concatenate into one file with every row, in order.
///
/// # Panics
/// When a row is lost, added or out of order.
pub async fn check(store: &Store) {
    let (a, b) = (rows("a", 1200), rows("b", 10));
    let mut inputs = Vec::new();
    for (k, part) in [&a, &b].into_iter().enumerate() {
        let path = layout::shard(IN.name, 5, u32::try_from(k).expect("small"));
        let mut w = ShardWriter::create(store, &path, input_schema(), 8 << 10).expect("writer");
        w.write(&input_batch(part).expect("batch")).await.expect("write");
        w.finish().await.expect("finish");
        inputs.push(path);
    }
    let out = layout::merged(IN.name, 5);
    assert_eq!(super::concat_shards(store, &inputs, &out).await.expect("concat"), 1210);
    let mut got = Vec::new();
    for batch in read_batches(store, &out, None).await.expect("read") {
        got.extend(input_rows(&batch, &out).expect("rows"));
    }
    let want: Vec<InRow> = a.into_iter().chain(b).collect();
    assert_eq!(got, want);
}
