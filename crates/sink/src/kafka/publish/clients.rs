//! The librdkafka clients of the sink and how they are configured: the
//! transactional producer of one partition, and the consumers that read
//! the control topic. Their contexts keep librdkafka's last error, so a
//! failure names what the client saw (a refused connection, a timeout)
//! rather than only "timed out".

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::{ProducerContext, ThreadedProducer};

use super::url::KafkaUrl;

/// How long a partition's transaction may stay open (librdkafka's
/// `transaction.timeout.ms`; brokers allow up to 15 minutes by default):
/// long enough to publish a large partition's pages, and the longest a
/// killed attempt's open transaction holds back `read_committed` readers
/// when no attempt of its task runs again to abort it.
pub(super) const TRANSACTION_TIMEOUT: Duration = Duration::from_secs(600);
/// How long the sink waits for a broker's first answer before it stops
/// the task as unreachable.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a transactional call (init, commit, abort) may take.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// What librdkafka said last about its connections, and the first message
/// it could not deliver.
#[derive(Default)]
pub(super) struct Seen {
    last_error: Mutex<Option<String>>,
    failed: Mutex<Option<Failed>>,
}

/// A message that librdkafka could not deliver.
pub(super) struct Failed {
    pub(super) topic: String,
    pub(super) key: String,
    pub(super) reason: String,
}

impl Seen {
    /// librdkafka's last error, or `fallback` when it said none.
    pub(super) fn explain(&self, fallback: &KafkaError) -> String {
        match self.last_error.lock().ok().and_then(|e| e.clone()) {
            Some(e) => format!("{fallback} ({e})"),
            None => fallback.to_string(),
        }
    }

    /// The first message that was not delivered, taken.
    pub(super) fn take_failed(&self) -> Option<Failed> {
        self.failed.lock().ok().and_then(|mut f| f.take())
    }
}

/// The context of every client: keeps what librdkafka reports, logs it at
/// debug level (librdkafka retries connections by itself; a failure that
/// matters stops the task with its own message).
#[derive(Clone, Default)]
pub(super) struct Ctx(pub(super) Arc<Seen>);

impl ClientContext for Ctx {
    fn log(&self, level: rdkafka::config::RDKafkaLogLevel, fac: &str, log_message: &str) {
        tracing::debug!(?level, fac, "librdkafka: {log_message}");
        // Connection failures are logged (from librdkafka's own threads)
        // before any error reaches the application: keep the last.
        if level as i32 <= rdkafka::config::RDKafkaLogLevel::Warning as i32 {
            if let Ok(mut e) = self.0.last_error.lock() {
                *e = Some(log_message.to_string());
            }
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::debug!("librdkafka: {error}: {reason}");
        if let Ok(mut e) = self.0.last_error.lock() {
            *e = Some(reason.to_string());
        }
    }
}

impl ConsumerContext for Ctx {}

impl ProducerContext for Ctx {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((e, m)) = result {
            if let Ok(mut f) = self.0.failed.lock() {
                f.get_or_insert_with(|| Failed {
                    topic: m.topic().to_string(),
                    key: m.key().map(|k| String::from_utf8_lossy(k).into_owned()).unwrap_or_default(),
                    reason: e.to_string(),
                });
            }
        }
    }
}

fn base(spec: &KafkaUrl) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", spec.bootstrap())
        .set("client.id", concat!("layercrawl/", env!("CARGO_PKG_VERSION")))
        .set("socket.connection.setup.timeout.ms", "10000")
        // Warnings and errors reach the context (connection failures come
        // as logs first); rdkafka would take the `log` crate's level, off.
        .set_log_level(rdkafka::config::RDKafkaLogLevel::Warning);
    c
}

/// The idempotent, transactional producer of one partition's pages.
///
/// # Errors
/// When librdkafka refuses the configuration.
pub(super) fn producer(spec: &KafkaUrl, transactional_id: &str, ctx: Ctx) -> Result<ThreadedProducer<Ctx>, KafkaError> {
    base(spec)
        .set("enable.idempotence", "true")
        .set("transactional.id", transactional_id)
        .set("transaction.timeout.ms", TRANSACTION_TIMEOUT.as_millis().to_string())
        .set("message.timeout.ms", TRANSACTION_TIMEOUT.as_millis().to_string())
        // Pages are text: lz4 is built into librdkafka and cheap on CPU.
        .set("compression.type", "lz4")
        .set("linger.ms", "20")
        .set("message.max.bytes", super::message::MAX_MESSAGE_BYTES.to_string())
        .create_with_context(ctx)
}

/// A consumer of the control topic that reads committed transactions only
/// (`committed`) or everything written (to learn where the log ends).
///
/// # Errors
/// When librdkafka refuses the configuration.
pub(super) fn consumer(spec: &KafkaUrl, committed: bool, ctx: Ctx) -> Result<BaseConsumer<Ctx>, KafkaError> {
    base(spec)
        // Partitions are assigned, never subscribed to, and no offset is
        // committed: the group id only satisfies librdkafka.
        .set("group.id", "layercrawl-sink")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "50")
        .set("isolation.level", if committed { "read_committed" } else { "read_uncommitted" })
        .create_with_context(ctx)
}
