//! Where the learned order keeps its state (`state/focus/learned/`,
//! docs/src/focused-crawling.md), and how each file is read and
//! written. Every file is written through the task's attempt store, so
//! it commits with the task's other outputs; a file that would be empty
//! is removed instead.
//!
//! | file | written by | holds |
//! |---|---|---|
//! | `model/layer=L/part-K.safetensors` | optimise L | encoder, Q-network, target network, DQN steps so far |
//! | `replay/layer=L/part-K.safetensors` | optimise L | the replay buffer after layer L |
//! | `clusters/layer=L/part-K.parquet` | optimise L | pages and summed reward per URL cluster, layers 0 to L |
//! | `draws/layer=L/part-K.safetensors` | optimise L−1 | the draws that ordered layer L's input |
//! | `outcomes/layer=L/part-K.parquet` | map L | each page fetched and its reward |
//! | `transitions/layer=L/part-K.safetensors` | map L | the draws of layer L that were fetched, with their reward |
//! | `stats/layer=L/part-K.json` | optimise L | what the training did and cost (a log: its time is not deterministic) |
//!
//! The paths are built here rather than in `store/layout.rs` so that the
//! learned order stays one folder; they follow its conventions.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;

use super::nn::{self, Array};
use super::replay::Steps;
use crate::store::{read_if_exists, ShardWriter, Store, StoreError};

/// The path of one of the learned order's files.
#[must_use]
pub fn path(kind: &str, layer: u32, part: u32) -> String {
    let ext = match kind {
        "clusters" | "outcomes" => "parquet",
        "stats" => "json",
        _ => "safetensors",
    };
    format!("state/focus/learned/{kind}/layer={layer}/part-{part:05}.{ext}")
}

fn bad(path: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: reason.to_string() }
}

/// Writes `arrays` as safetensors to `path` (removed when `empty`).
///
/// # Errors
/// On storage failures.
pub async fn put_arrays(store: &Store, path: &str, arrays: &[(String, Array)], empty: bool) -> Result<(), StoreError> {
    if empty {
        return store.delete(path).await;
    }
    let bytes = nn::encode(arrays).map_err(|e| bad(path, e))?;
    store.put(path, Bytes::from(bytes)).await
}

/// The arrays of the safetensors file at `path`; none when it does not exist.
///
/// # Errors
/// On storage failures, or a file that is not safetensors.
pub async fn get_arrays(store: &Store, path: &str) -> Result<Option<HashMap<String, Array>>, StoreError> {
    match store.get(path).await? {
        Some(bytes) => Ok(Some(nn::decode(&bytes).map_err(|e| bad(path, e))?)),
        None => Ok(None),
    }
}

/// Writes `steps` (value column `value`) to `path`, removed when there are none.
///
/// # Errors
/// On storage failures.
pub async fn put_steps(store: &Store, path: &str, steps: &Steps, value: &str) -> Result<(), StoreError> {
    put_arrays(store, path, &steps.arrays(value), steps.is_empty()).await
}

/// The steps at `path` (value column `value`); none when it does not exist.
///
/// # Errors
/// On storage failures, or a file of another shape.
pub async fn get_steps(store: &Store, path: &str, value: &str) -> Result<Steps, StoreError> {
    match get_arrays(store, path).await? {
        Some(arrays) => Steps::from_arrays(&arrays, value).map_err(|e| bad(path, e)),
        None => Ok(Steps::default()),
    }
}

fn outcomes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("url", DataType::Utf8, false),
        Field::new("reward", DataType::Float64, false),
    ]))
}

/// Writes a map task's pages and their rewards to `path`.
///
/// # Errors
/// On storage failures.
pub async fn put_outcomes(store: &Store, path: &str, rows: &[(String, f32)]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return store.delete(path).await;
    }
    let mut w = ShardWriter::create(store, path, outcomes_schema(), 8 << 20)?;
    for chunk in rows.chunks(8192) {
        let u: StringArray = chunk.iter().map(|r| Some(r.0.as_str())).collect();
        let v: Float64Array = chunk.iter().map(|r| Some(f64::from(r.1))).collect();
        let b = RecordBatch::try_new(outcomes_schema(), vec![Arc::new(u), Arc::new(v)]).map_err(|e| bad(path, e))?;
        w.write(&b).await?;
    }
    w.finish().await?;
    Ok(())
}

/// The pages and rewards at `path`, in the file's order; none when it does
/// not exist.
///
/// # Errors
/// On storage failures, or a file of another shape.
pub async fn get_outcomes(store: &Store, path: &str) -> Result<Vec<(String, f32)>, StoreError> {
    let mut out = Vec::new();
    for b in read_if_exists(store, path).await? {
        let (Some(u), Some(v)) = (
            b.column_by_name("url").and_then(|c| c.as_string_opt::<i32>()),
            b.column_by_name("reward").and_then(|c| c.as_primitive_opt::<Float64Type>()),
        ) else {
            return Err(bad(path, "columns url (string) and reward (float64) expected"));
        };
        #[allow(clippy::cast_possible_truncation)]
        out.extend((0..b.num_rows()).map(|i| (u.value(i).to_string(), v.value(i) as f32)));
    }
    Ok(out)
}
