//! What goes wrong publishing to Kafka, in the words the run stops with
//! (a [`SinkError::Kind`] to the map task).

use crate::SinkError;

/// Why a map task could not publish its pages to Kafka, or commit after
/// publishing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KafkaSinkError {
    /// No broker answered.
    #[error("kafka sink: cannot reach the brokers {brokers}: {reason}. Check --sink and that a broker is up; run the same command again to resume, nothing is published twice")]
    Unreachable { brokers: String, reason: String },
    /// A step of a partition's transaction failed.
    #[error("kafka sink (brokers {brokers}): {step} for partition {part} of layer {layer} failed: {reason}. Run the same command again to resume, nothing is published twice")]
    Transaction { brokers: String, layer: u32, part: u32, step: &'static str, reason: String },
    /// A page's message was refused or not delivered.
    #[error("kafka sink (brokers {brokers}): the message of {url} to topic {topic} was not delivered: {reason}. Run the same command again to resume, nothing is published twice")]
    Delivery { brokers: String, topic: String, url: String, reason: String },
    /// The control topic names an attempt whose outputs are gone.
    #[error("kafka sink: partition {part} of layer {layer} was published by attempt {attempt}, but {path} is missing from the data location: the topics belong to another crawl than this one (was the data location emptied?)")]
    RecordGone { layer: u32, part: u32, attempt: String, path: String },
    /// The control topic and the data store disagree on the attempt.
    #[error("kafka sink: partition {part} of layer {layer} was published by attempt {published} but committed by attempt {committed} (was --sink added or changed in the middle of a crawl?)")]
    Diverged { layer: u32, part: u32, published: String, committed: String },
}

impl From<KafkaSinkError> for SinkError {
    fn from(e: KafkaSinkError) -> Self {
        Self::Kind(Box::new(e))
    }
}
