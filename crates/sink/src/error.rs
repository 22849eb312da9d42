//! Why a map task could not open its sink, publish its pages, or commit
//! after publishing.

use crate::store::error::StageError;
use crate::store::StoreError;

/// Why a map task could not open its sink, publish its pages, or commit
/// after publishing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The run's settings ask for a kind of sink this build lacks (they
    /// were written by a build that has it).
    #[error("the run publishes to {name} (--sink), but this layercrawl was built without the {name} sink (cargo feature `{feature}`): run it with a build that has it")]
    NotBuilt { name: &'static str, feature: &'static str },
    /// What the kind of sink says went wrong (Kafka: a broker unreachable,
    /// a transaction refused, a partition's record gone), in its words.
    #[error(transparent)]
    Kind(Box<dyn std::error::Error + Send + Sync + 'static>),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SinkError> for StageError {
    fn from(e: SinkError) -> Self {
        Self::stage(e)
    }
}
