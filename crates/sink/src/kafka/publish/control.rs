//! The control topic (`PREFIX.__commits`): one marker per published
//! partition, written in the same transaction as the partition's pages,
//! read back with `read_committed` (docs/src/kafka.md). A marker that can be
//! read is a transaction that committed, so whoever reads one knows the
//! pages are out and which attempt's outputs they came from.
//!
//! Blocking calls (librdkafka's): run on a blocking thread.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

use super::clients::{self, Ctx, CALL_TIMEOUT, CONNECT_TIMEOUT, TRANSACTION_TIMEOUT};
use super::error::KafkaSinkError;
use super::url::KafkaUrl;
use crate::SinkError;

/// What a partition's transaction records besides its pages.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Marker {
    /// The crawl (`state/sink/run.json`).
    pub(super) run: String,
    pub(super) layer: u32,
    pub(super) partition: u32,
    /// The map attempt whose staged `doc` shard the pages came from: the
    /// one attempt of the task that may commit.
    pub(super) attempt: String,
    /// Page messages in the transaction.
    pub(super) messages: u64,
    /// The data location, for whoever reads the topic.
    pub(super) data: String,
}

/// How far a read must see.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Reach {
    /// Whatever has committed and is readable now (other partitions' open
    /// transactions may hide later markers): enough to skip work.
    Now,
    /// Every transaction that committed before this call: first wait until
    /// no transaction open at the call holds the log back, then read to
    /// its end. Called after `init_transactions`, which finished or aborted
    /// every transaction of this partition's own transactional id.
    Settled,
}

/// The first marker with `key` in the control topic, if any.
///
/// # Errors
/// [`KafkaSinkError::Unreachable`] when no broker answers within the
/// connect timeout; [`KafkaSinkError::Transaction`] when the topic cannot
/// be read.
pub(super) fn find(
    spec: &KafkaUrl,
    key: &str,
    reach: Reach,
    (layer, part): (u32, u32),
) -> Result<Option<Marker>, SinkError> {
    let ctx = Ctx::default();
    let failed = |ctx: &Ctx, e: KafkaError| -> SinkError {
        KafkaSinkError::Transaction {
            brokers: spec.bootstrap(),
            layer,
            part,
            step: "reading the control topic",
            reason: ctx.0.explain(&e),
        }
        .into()
    };
    let committed = clients::consumer(spec, true, ctx.clone()).map_err(|e| failed(&ctx, e))?;
    let topic = spec.control_topic();
    // A refused connection fails a metadata request at once; the brokers
    // get the whole connect timeout to answer.
    let connect_by = Instant::now() + CONNECT_TIMEOUT;
    let meta = loop {
        match committed.fetch_metadata(Some(&topic), connect_by.saturating_duration_since(Instant::now())) {
            Ok(meta) => break meta,
            Err(e) if Instant::now() >= connect_by => {
                return Err(KafkaSinkError::Unreachable { brokers: spec.bootstrap(), reason: ctx.0.explain(&e) }.into())
            }
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    };
    let parts: Vec<i32> = match meta.topics().iter().find(|t| t.name() == topic) {
        // Not made yet: nothing was ever published with this prefix.
        None => return Ok(None),
        Some(t) if t.error().is_some() => return Ok(None),
        Some(t) => t.partitions().iter().map(rdkafka::metadata::MetadataPartition::id).collect(),
    };
    if reach == Reach::Settled {
        let uctx = Ctx::default();
        let everything = clients::consumer(spec, false, uctx.clone()).map_err(|e| failed(&uctx, e))?;
        // A transaction a killed run left open ends when its task starts
        // again, or when the broker aborts it: at most its timeout.
        let deadline = Instant::now() + TRANSACTION_TIMEOUT + CALL_TIMEOUT;
        for &p in &parts {
            let (_, end) = everything.fetch_watermarks(&topic, p, CALL_TIMEOUT).map_err(|e| failed(&uctx, e))?;
            settle(&committed, &topic, p, end, deadline).map_err(|e| failed(&ctx, e))?;
        }
    }
    let deadline = Instant::now() + CALL_TIMEOUT;
    let mut tpl = TopicPartitionList::new();
    let mut pending = BTreeSet::new();
    for &p in &parts {
        let (low, high) = committed.fetch_watermarks(&topic, p, CALL_TIMEOUT).map_err(|e| failed(&ctx, e))?;
        if high > low {
            tpl.add_partition_offset(&topic, p, Offset::Beginning).map_err(|e| failed(&ctx, e))?;
            pending.insert(p);
        }
    }
    if pending.is_empty() {
        return Ok(None);
    }
    committed.assign(&tpl).map_err(|e| failed(&ctx, e))?;
    let mut found: Option<Marker> = None;
    // Since when the brokers have been unreachable while reading, and how.
    let mut down: Option<(Instant, KafkaError)> = None;
    while !pending.is_empty() {
        // A connection lost while reading (a broker restarting): the
        // consumer reconnects by itself, and the brokers get the connect
        // timeout to answer again, as when the task started.
        if let Some((since, e)) = &down {
            if since.elapsed() >= CONNECT_TIMEOUT {
                return Err(KafkaSinkError::Unreachable { brokers: spec.bootstrap(), reason: ctx.0.explain(e) }.into());
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(failed(&ctx, KafkaError::MessageConsumption(RDKafkaErrorCode::OperationTimedOut)));
        }
        match committed.poll(left.min(Duration::from_millis(500))) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(p))) => {
                pending.remove(&p);
                down = None;
            }
            Some(Err(
                e @ KafkaError::MessageConsumption(
                    RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown,
                ),
            )) => {
                down.get_or_insert((Instant::now(), e));
            }
            Some(Err(e)) => return Err(failed(&ctx, e)),
            Some(Ok(m)) => {
                down = None;
                if m.key() != Some(key.as_bytes()) {
                    continue;
                }
                let Some(marker) = m.payload().and_then(|b| serde_json::from_slice::<Marker>(b).ok()) else {
                    tracing::warn!(topic, offset = m.offset(), "a control record with key {key} is not a marker");
                    continue;
                };
                // Of two (possible only where fencing is not enforced), the
                // first read is the first written: records of one key share
                // a partition, which is read in order.
                found.get_or_insert(marker);
            }
        }
    }
    Ok(found)
}

/// Waits until the last stable offset of partition `p` (what a
/// `read_committed` reader may read up to) reaches `end`, the log's end
/// when the wait began: every transaction open then has committed or
/// aborted, so reading to the end sees every marker committed before.
fn settle(c: &BaseConsumer<Ctx>, topic: &str, p: i32, end: i64, deadline: Instant) -> Result<(), KafkaError> {
    let (started, mut told) = (Instant::now(), false);
    loop {
        let (_, stable) = c.fetch_watermarks(topic, p, CALL_TIMEOUT)?;
        if stable >= end {
            return Ok(());
        }
        if !told && started.elapsed() > Duration::from_secs(5) {
            tracing::warn!(
                topic,
                partition = p,
                "waiting for a transaction left open in the control topic to end (a killed run's: its task \
                 aborts it when it starts again, the broker when it times out)"
            );
            told = true;
        }
        if Instant::now() >= deadline {
            return Err(KafkaError::MessageConsumption(RDKafkaErrorCode::OperationTimedOut));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
