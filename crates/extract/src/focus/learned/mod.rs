//! The learned order of a layer's input (`--order learned`;
//! docs/src/focused-crawling.md): a DQN that chooses which URL cluster
//! the next URL is drawn from, over features that include a code of the
//! URL from a small character-level encoder, both trained online on the
//! crawl's own URLs and what their pages turned out to be worth.
//!
//! In a layered crawl a layer's order is fixed when its input is written
//! (the optimise task) and its rewards arrive when the next map task
//! fetches it. So:
//!
//! 1. The optimise task of layer L−1 **draws** partition K's share of layer
//!    L's input with the Q-network ([`draw`]) and keeps the draws (state,
//!    action, next state) as steps (`draws/layer=L`).
//! 2. The map task of layer L tallies each page's **reward** ([`reward`])
//!    in its [`Outcomes`] and, when it finishes ([`record`]), writes them
//!    (`outcomes/layer=L`) and the transitions: the draws it fetched with
//!    their reward (`transitions/layer=L`).
//! 3. The optimise task of layer L **trains** ([`advance`]): the replay
//!    buffer takes in the transitions, the encoder takes
//!    [`ENCODER_STEPS`] steps on the layer's pages, the DQN [`DQN_STEPS`]
//!    steps on the buffer; the model, buffer and the clusters' harvest are
//!    written under the task's commit; then it draws layer L+1 (step 1).
//!
//! Training is bounded by step counts, never by time; every random number
//! comes from a generator seeded by the run (its seeds), the layer and the
//! partition ([`rng`]); every input is a committed file read in a fixed
//! order. So a task run again writes the same files, and a resumed crawl
//! equals an uninterrupted one. The model runs on candle, on the CPU, in
//! the blocking pool (never on an async worker thread).
//!
//! Like the pheromone tables, the state is per partition: a URL cluster
//! starts with its host, whose pages and links are all in its site's
//! partition.

pub mod dqn;
pub mod draw;
pub mod embed;
pub mod nn;
pub mod replay;
pub mod rng;
pub mod state;

use std::sync::Arc;
use std::time::Instant;

use xxhash_rust::xxh3::xxh3_64;

use crate::error::StageError;
use crate::store::manifest::RunState;
use crate::store::schema::InRow;
use crate::store::{layout, Store, StoreError};
use dqn::Dqn;
use draw::Harvests;
use embed::Encoder;
use replay::Steps;
use rng::Rng;

/// This build has the learned order (the cargo feature `learned`).
pub const BUILT: bool = true;

/// Numbers in a feature row: eight about the offer and the URL's code.
pub const FEATURES: usize = 8 + embed::Z;
/// Encoder training steps per partition and layer.
pub const ENCODER_STEPS: usize = 100;
/// DQN training steps per partition and layer.
pub const DQN_STEPS: usize = 200;
/// Transitions the replay buffer keeps (the newest).
pub const REPLAY_CAPACITY: usize = 8192;

/// The value column of the draws file.
const Q: &str = "q";
/// The value column of the transitions and replay files.
const REWARD: &str = "reward";

/// Why the learned order could not be trained or drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LearnedError {
    /// A computation of the model failed (a bug: the shapes are fixed).
    #[error("learned order, layer {layer} partition {part}: {what}: {source}")]
    Model {
        layer: u32,
        part: u32,
        what: &'static str,
        #[source]
        source: candle_core::Error,
    },
    /// A model file that does not fit the model.
    #[error("learned order: {path}: {reason}; the file was written by another version, start the crawl in a new data folder")]
    ModelFile { path: String, reason: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<LearnedError> for StageError {
    fn from(e: LearnedError) -> Self {
        match e {
            LearnedError::Store(s) => Self::Store(s),
            other => Self::Internal(other.to_string()),
        }
    }
}

/// What a fetched page is worth to the learned order: its relevance; 0
/// for a page without one (a nav page, an error, a file). A nav page's
/// worth is the links it adds to the next layer, which a layer's draws
/// cannot see (docs/src/focused-crawling.md).
#[must_use]
pub fn reward(relevance: Option<f64>) -> f32 {
    #[allow(clippy::cast_possible_truncation)]
    let r = relevance.map_or(0.0, |r| r.clamp(0.0, 1.0) as f32);
    r
}

/// A map task's pages and their rewards.
#[derive(Debug, Default)]
pub struct Outcomes {
    pages: Vec<(String, f32)>,
}

impl Outcomes {
    /// Adds the page requested as `url`, worth `reward`.
    pub fn add(&mut self, url: &str, reward: f32) {
        self.pages.push((url.to_string(), reward));
    }
}

/// Writes partition `part`'s outcomes of `layer`, and its transitions: the
/// draws that ordered the layer's input (if it was drawn) whose page was
/// fetched, with the page's reward, in draw order (through the map task's
/// attempt `store`).
///
/// # Errors
/// On storage failures, or a draws file of another shape.
pub async fn record(store: &Store, layer: u32, part: u32, outcomes: Outcomes) -> Result<(), StoreError> {
    let mut pages = outcomes.pages;
    // Pages come back in the order they were fetched, which varies.
    pages.sort_by(|a, b| a.0.cmp(&b.0));
    state::put_outcomes(store, &state::path("outcomes", layer, part), &pages).await?;
    let draws = state::get_steps(store, &state::path("draws", layer, part), Q).await?;
    let rewards: std::collections::HashMap<u64, f32> =
        pages.iter().map(|(u, r)| (crate::urlnorm::fingerprint_str(u), *r)).collect();
    let (idx, values): (Vec<usize>, Vec<f32>) =
        (0..draws.len()).filter_map(|i| rewards.get(&draws.fingerprint(i)).map(|&r| (i, r))).unzip();
    state::put_steps(store, &state::path("transitions", layer, part), &draws.select(&idx, &values), REWARD).await
}

/// What one optimise task's training did (the `stats` file and the log).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TrainStats {
    pub layer: u32,
    pub partition: u32,
    /// Pages the layer fetched in the partition (the encoder's training set).
    pub pages: usize,
    /// Transitions the layer added to the replay buffer.
    pub transitions: usize,
    /// Transitions in the buffer after them.
    pub replay: usize,
    pub encoder_steps: usize,
    pub encoder_loss_before: embed::Loss,
    pub encoder_loss_after: embed::Loss,
    pub dqn_steps: usize,
    /// DQN steps over every layer so far.
    pub dqn_steps_total: u64,
    pub td_loss_first: f32,
    pub td_loss_last: f32,
    pub train_ms: u64,
    /// URLs ordered, and the time the draws took.
    pub drawn: usize,
    pub draw_ms: u64,
}

/// A partition's trained learned order, ready to draw the next layer's input.
#[derive(Debug)]
pub struct Scheduler {
    run: u64,
    encoder: Encoder,
    dqn: Dqn,
    harvests: Harvests,
    stats: TrainStats,
}

/// The identity of the run at `store`: a hash of its seeds, which seeds
/// every generator of the learned order.
async fn run_identity(store: &Store) -> Result<u64, StageError> {
    let state: RunState = store
        .get_json(layout::RUN)
        .await?
        .ok_or_else(|| StageError::NotStarted { data: store.location().to_string(), what: layout::RUN })?;
    Ok(xxh3_64(state.seeds.join("\n").as_bytes()))
}

/// The model variables of an encoder and a DQN, as named in the model file.
fn model_vars(encoder: &Encoder, dqn: &Dqn) -> Vec<(String, candle_core::Var)> {
    let mut v = encoder.vars();
    v.extend(dqn.vars());
    v
}

/// Trains partition `part`'s learned order on `layer`'s pages and
/// transitions, starting from its state after the layer before, writes
/// the new state (through `store`, the optimise task's attempt) and
/// returns the scheduler that draws the next layer. Run again, it writes
/// the same files (but for the `stats` file's times).
///
/// # Errors
/// On storage failures, a state file of another shape, or a model failure.
pub async fn advance(store: &Store, layer: u32, part: u32) -> Result<Scheduler, StageError> {
    let run = run_identity(store).await?;
    let before = layer.checked_sub(1);
    let model = match before {
        Some(b) => state::get_arrays(store, &state::path("model", b, part)).await?,
        None => None,
    };
    let mut replay = match before {
        Some(b) => state::get_steps(store, &state::path("replay", b, part), REWARD).await?,
        None => Steps::default(),
    };
    let harvests = match before {
        Some(b) => {
            Harvests::from_rows(crate::focus::ant::read(store, &state::path("clusters", b, part), REWARD).await?)
        }
        None => Harvests::default(),
    };
    let fresh = state::get_steps(store, &state::path("transitions", layer, part), REWARD).await?;
    let pages = state::get_outcomes(store, &state::path("outcomes", layer, part)).await?;
    let active = model.is_some() || !fresh.is_empty() || !pages.is_empty();
    let model_path = before.map(|b| state::path("model", b, part)).unwrap_or_default();

    let trained = tokio::task::spawn_blocking(move || -> Result<_, LearnedError> {
        let started = Instant::now();
        let fail = |what| move |source| LearnedError::Model { layer, part, what, source };
        let mut init = Rng::new(run, "init", 0, part);
        let mut encoder = Encoder::new(&mut init).map_err(fail("building the encoder"))?;
        let mut dqn = Dqn::new(&mut init).map_err(fail("building the Q-network"))?;
        if let Some(arrays) = &model {
            nn::assign(&model_vars(&encoder, &dqn), arrays)
                .map_err(|reason| LearnedError::ModelFile { path: model_path.clone(), reason })?;
            dqn.steps = arrays
                .get("dqn_steps")
                .and_then(|a| a.ints())
                .and_then(|v| v.first())
                .and_then(|&s| u64::try_from(s).ok())
                .ok_or_else(|| LearnedError::ModelFile { path: model_path.clone(), reason: "no dqn_steps".into() })?;
        }
        replay.append_keeping(&fresh, REPLAY_CAPACITY);
        let harvests = harvests.with(&pages);
        let urls: Vec<&str> = pages.iter().map(|p| p.0.as_str()).collect();
        let rewards: Vec<f32> = pages.iter().map(|p| p.1).collect();
        let encoder_steps = if urls.is_empty() { 0 } else { ENCODER_STEPS };
        let (enc_before, enc_after) = encoder
            .train(&urls, &rewards, encoder_steps, &mut Rng::new(run, "encoder", layer, part))
            .map_err(fail("training the encoder"))?;
        let dqn_steps = if replay.is_empty() { 0 } else { DQN_STEPS };
        let (td_first, td_last) =
            dqn.train(&replay, dqn_steps, &mut Rng::new(run, "dqn", layer, part)).map_err(fail("training the DQN"))?;
        let mut arrays = nn::arrays_of(&model_vars(&encoder, &dqn)).map_err(fail("reading the weights"))?;
        arrays.push(("dqn_steps".into(), nn::Array::i64(&[1], vec![i64::try_from(dqn.steps).unwrap_or(i64::MAX)])));
        let stats = TrainStats {
            layer,
            partition: part,
            pages: pages.len(),
            transitions: fresh.len(),
            replay: replay.len(),
            encoder_steps,
            encoder_loss_before: enc_before,
            encoder_loss_after: enc_after,
            dqn_steps,
            dqn_steps_total: dqn.steps,
            td_loss_first: td_first,
            td_loss_last: td_last,
            train_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            ..TrainStats::default()
        };
        Ok((Scheduler { run, encoder, dqn, harvests, stats }, arrays, replay))
    })
    .await
    .map_err(|e| StageError::Internal(format!("training the learned order failed: {e}")))?;
    let (scheduler, arrays, replay) = trained?;
    state::put_arrays(store, &state::path("model", layer, part), &arrays, !active).await?;
    state::put_steps(store, &state::path("replay", layer, part), &replay, REWARD).await?;
    crate::focus::ant::write(store, &state::path("clusters", layer, part), &scheduler.harvests.rows(), REWARD).await?;
    Ok(scheduler)
}

impl Scheduler {
    /// Orders partition `part`'s share of layer `target`'s input by drawing
    /// it with the Q-network, and writes the draws (through `store`, the
    /// optimise task's attempt) for the map task to learn from, and what
    /// the training and the draws did and cost.
    ///
    /// # Errors
    /// On storage failures or a model failure.
    pub async fn order(
        self: Arc<Self>,
        store: &Store,
        target: u32,
        part: u32,
        rows: Vec<InRow>,
    ) -> Result<Vec<InRow>, StageError> {
        let me = Arc::clone(&self);
        let drawn = tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let mut rng = Rng::new(me.run, "draw", target, part);
            let drawn = draw::draw(rows, &me.harvests, &me.encoder, &me.dqn, &mut rng)
                .map_err(|source| LearnedError::Model { layer: target, part, what: "drawing the order", source });
            (drawn, started.elapsed())
        })
        .await
        .map_err(|e| StageError::Internal(format!("drawing the learned order failed: {e}")))?;
        let (drawn, took) = (drawn.0?, drawn.1);
        state::put_steps(store, &state::path("draws", target, part), &drawn.steps, Q).await?;
        let stats = TrainStats {
            drawn: drawn.rows.len(),
            draw_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            ..self.stats.clone()
        };
        if stats.pages + stats.replay + stats.drawn > 0 {
            tracing::info!(
                layer = stats.layer,
                partition = part,
                train_ms = stats.train_ms,
                draw_ms = stats.draw_ms,
                pages = stats.pages,
                replay = stats.replay,
                drawn = stats.drawn,
                "learned order trained and drawn"
            );
            let path = state::path("stats", stats.layer, part);
            store
                .put(
                    &path,
                    bytes::Bytes::from(
                        serde_json::to_vec_pretty(&stats)
                            .map_err(|e| StoreError::Schema { path: path.clone(), reason: e.to_string() })?,
                    ),
                )
                .await?;
        }
        Ok(drawn.rows)
    }
}
