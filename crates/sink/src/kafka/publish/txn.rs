//! One partition's Kafka transaction: the idempotent, transactional
//! producer of its pages and its marker (docs/src/kafka.md).
//!
//! Every call blocks (librdkafka's transactional calls wait for the
//! coordinator): run on a blocking thread.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};

use super::clients::{self, Ctx, CALL_TIMEOUT};
use super::error::KafkaSinkError;
use super::message::{self, Topics};
use super::url::KafkaUrl;
use crate::SinkError;

/// What a partition's transaction sent.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Sent {
    /// Page messages.
    pub messages: u64,
    /// Their payload bytes (JSON, before compression).
    pub bytes: u64,
    /// Pages whose content was cut to fit the message size limit.
    pub truncated: u64,
    /// Messages per topic.
    pub topics: BTreeMap<String, u64>,
}

/// A transactional producer whose transactions are initialised: any
/// earlier producer with the same transactional id is fenced off and its
/// open transaction aborted.
#[derive(Clone)]
pub(super) struct Txn {
    producer: Arc<ThreadedProducer<Ctx>>,
    ctx: Ctx,
    spec: KafkaUrl,
    layer: u32,
    part: u32,
}

impl Txn {
    /// Makes the producer and initialises its transactions.
    ///
    /// # Errors
    /// When no broker answers, or the coordinator refuses.
    pub(super) fn init(spec: &KafkaUrl, transactional_id: &str, layer: u32, part: u32) -> Result<Self, SinkError> {
        let ctx = Ctx::default();
        let producer =
            clients::producer(spec, transactional_id, ctx.clone()).map_err(|e| KafkaSinkError::Transaction {
                brokers: spec.bootstrap(),
                layer,
                part,
                step: "making the producer",
                reason: e.to_string(),
            })?;
        let txn = Self { producer: Arc::new(producer), ctx, spec: spec.clone(), layer, part };
        txn.producer.init_transactions(CALL_TIMEOUT).map_err(|e| txn.failed("initialising transactions", &e))?;
        Ok(txn)
    }

    fn failed(&self, step: &'static str, e: &KafkaError) -> SinkError {
        KafkaSinkError::Transaction {
            brokers: self.spec.bootstrap(),
            layer: self.layer,
            part: self.part,
            step,
            reason: self.ctx.0.explain(e),
        }
        .into()
    }

    /// Starts the transaction.
    ///
    /// # Errors
    /// When the producer is in no state to (fenced, fatal error).
    pub(super) fn begin(&self) -> Result<(), SinkError> {
        self.producer.begin_transaction().map_err(|e| self.failed("beginning the transaction", &e))
    }

    /// Sends one record, waiting while librdkafka's queue is full.
    ///
    /// # Errors
    /// When librdkafka refuses the record.
    pub(super) fn send(&self, topic: &str, key: &str, payload: &[u8]) -> Result<(), SinkError> {
        let mut record = BaseRecord::to(topic).key(key).payload(payload);
        loop {
            match self.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => {
                    return Err(KafkaSinkError::Delivery {
                        brokers: self.spec.bootstrap(),
                        topic: topic.to_string(),
                        url: key.to_string(),
                        reason: self.ctx.0.explain(&e),
                    }
                    .into())
                }
            }
        }
    }

    /// Sends the messages of a `doc` batch, adding to `sent`.
    ///
    /// # Errors
    /// When a message cannot be built or is refused.
    pub(super) fn send_pages(
        &self,
        batch: &arrow_array::RecordBatch,
        topics: &Topics,
        sent: &mut Sent,
    ) -> Result<(), SinkError> {
        let messages = message::messages(batch, topics).map_err(|reason| KafkaSinkError::Transaction {
            brokers: self.spec.bootstrap(),
            layer: self.layer,
            part: self.part,
            step: "building the messages",
            reason,
        })?;
        let mut per_topic = vec![0u64; topics.len()];
        for m in messages {
            self.send(topics.name(m.topic), &m.key, &m.payload)?;
            per_topic[m.topic] += 1;
            sent.messages += 1;
            sent.bytes += m.payload.len() as u64;
            sent.truncated += u64::from(m.truncated);
        }
        for (i, n) in per_topic.into_iter().enumerate().filter(|&(_, n)| n > 0) {
            *sent.topics.entry(topics.name(i).to_string()).or_default() += n;
        }
        Ok(())
    }

    /// Waits until every message sent is acknowledged.
    ///
    /// # Errors
    /// When one was not delivered (named by its URL), or time ran out.
    pub(super) fn flush(&self) -> Result<(), SinkError> {
        let flushed = self.producer.flush(clients::TRANSACTION_TIMEOUT);
        if let Some(f) = self.ctx.0.take_failed() {
            return Err(KafkaSinkError::Delivery {
                brokers: self.spec.bootstrap(),
                topic: f.topic,
                url: f.key,
                reason: f.reason,
            }
            .into());
        }
        flushed.map_err(|e| self.failed("delivering the messages", &e))
    }

    /// Commits the transaction: its pages and marker become readable.
    ///
    /// # Errors
    /// When the coordinator refuses or does not answer (the transaction may
    /// still have committed; the next attempt reads the marker to know).
    pub(super) fn commit(&self) -> Result<(), SinkError> {
        self.producer.commit_transaction(CALL_TIMEOUT).map_err(|e| self.failed("committing the transaction", &e))
    }

    /// Aborts the transaction, so that readers skip what it sent at once
    /// rather than when it times out; a failure is only logged (the next
    /// attempt's `init` aborts it too).
    pub(super) fn abort(&self) {
        if let Err(e) = self.producer.abort_transaction(CALL_TIMEOUT) {
            tracing::warn!(layer = self.layer, partition = self.part, "aborting the Kafka transaction: {e}");
        }
    }
}
