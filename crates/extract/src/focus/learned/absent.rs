//! The learned order's place in a build without the cargo feature
//! `learned`: `--order learned` is refused when the run starts ([`BUILT`]
//! is false), and an optimise task whose run's settings ask for it
//! (written by another build) fails saying so.

use std::sync::Arc;

use crate::error::{NotBuilt, StageError};
use crate::store::schema::InRow;
use crate::store::{Store, StoreError};

/// This build has no learned order.
pub const BUILT: bool = false;

/// What a fetched page is worth to the learned order: nothing is learned
/// in this build.
#[must_use]
pub fn reward(_: Option<f64>) -> f32 {
    0.0
}

/// A map task's pages and their rewards: not kept in this build.
#[derive(Debug, Default)]
pub struct Outcomes;

impl Outcomes {
    pub fn add(&mut self, _: &str, _: f32) {}
}

/// # Errors
/// None: nothing is written in this build (the optimise task that would
/// read it fails).
pub async fn record(_: &Store, _: u32, _: u32, _: Outcomes) -> Result<(), StoreError> {
    Ok(())
}

/// A trained learned order: none can be made in this build.
#[derive(Debug)]
pub enum Scheduler {}

/// # Errors
/// Always: this build has no learned order.
pub async fn advance(_: &Store, _: u32, _: u32) -> Result<Scheduler, StageError> {
    Err(NotBuilt::new("--order learned", "learned").into())
}

impl Scheduler {
    /// # Errors
    /// None: no `Scheduler` exists in this build.
    pub async fn order(self: Arc<Self>, _: &Store, _: u32, _: u32, _: Vec<InRow>) -> Result<Vec<InRow>, StageError> {
        match *self {}
    }
}
