//! Sinks: where a crawl streams its pages as it goes, besides the data
//! store (docs/src/kafka.md). One kind today, Kafka (`--sink
//! kafka://BROKERS/TOPIC-PREFIX`), in [`kafka`], behind the cargo feature
//! `kafka`; without it the module is an empty stand-in whose tasks refuse
//! to start, and `--sink` is refused at once.
//!
//! A sink is part of the map task's commit, not a writer beside it: a
//! partition's pages are published from its staged `doc` shard in one Kafka
//! transaction, which commits before the task's manifest does, and a
//! resumed task that finds its partition published commits the attempt
//! that published it ([`TaskSink`]). So the topics and the data store hold
//! the same pages, each once, whenever the crawl is killed.

// The layers below, under the names this crate's files use.
pub(crate) use layercrawl_extract::rules;
pub(crate) use layercrawl_store::{self as store, error};

use std::fmt;

use crate::store::StoreError;

#[cfg(feature = "kafka")]
mod kafka;
#[cfg(not(feature = "kafka"))]
#[path = "absent.rs"]
mod kafka;

pub use kafka::TaskSink;

/// Whether this build has the Kafka sink (the cargo feature `kafka`).
pub const BUILT: bool = kafka::BUILT;

/// The default port of a broker given without one.
const DEFAULT_PORT: u16 = 9092;
/// Topic names are at most 249 bytes; a topic is PREFIX.NAME with a rule
/// name of up to 64, so the prefix is at most 249 - 1 - 64.
const MAX_PREFIX: usize = 184;

/// A checked `--sink` URL: `kafka://HOST:PORT[,HOST:PORT…]/PREFIX`.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SinkSpec {
    /// The bootstrap brokers, `host:port` each.
    pub brokers: Vec<String>,
    /// Every topic is this, a dot and the page's rule, role or `pages`.
    pub prefix: String,
}

impl fmt::Debug for SinkSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kafka://{}/{}", self.brokers.join(","), self.prefix)
    }
}

impl SinkSpec {
    /// Parses and checks a `--sink` URL.
    ///
    /// # Errors
    /// A message naming what is wrong and the form expected, also when this
    /// build has no Kafka sink.
    pub fn parse(url: &str) -> Result<Self, String> {
        const FORM: &str = "kafka://HOST:PORT[,HOST:PORT…]/TOPIC-PREFIX";
        let url = url.trim();
        let Some(rest) = url.strip_prefix("kafka://") else {
            return Err(format!("{url:?} is not a sink URL; the form is {FORM}"));
        };
        if !BUILT {
            return Err(crate::error::NotBuilt::new("--sink", "kafka").to_string());
        }
        if rest.contains(['?', '#']) {
            return Err(format!("{url:?}: the sink URL takes no options (? or #); the form is {FORM}"));
        }
        let Some((hosts, prefix)) = rest.split_once('/') else {
            return Err(format!("{url:?} has no topic prefix after the brokers; the form is {FORM}"));
        };
        let brokers = hosts.split(',').map(broker).collect::<Result<Vec<_>, _>>()?;
        check_prefix(prefix)?;
        Ok(Self { brokers, prefix: prefix.to_string() })
    }

    /// The brokers as librdkafka's `bootstrap.servers` takes them.
    #[must_use]
    pub fn bootstrap(&self) -> String {
        self.brokers.join(",")
    }

    /// The topic of a page: the prefix, a dot and `name` (a rule, a role,
    /// or `pages`).
    #[must_use]
    pub fn topic(&self, name: &str) -> String {
        format!("{}.{name}", self.prefix)
    }

    /// Refuses a rules file with a rule named like the control topic.
    ///
    /// # Errors
    /// Naming the rule.
    pub fn check_rules(&self, rules: &crate::rules::Rules) -> Result<(), String> {
        match rules.list.iter().find(|r| r.name == CONTROL) {
            Some(r) => Err(format!(
                "rule {:?}: with --sink, its topic would be the sink's control topic {}; rename the rule",
                r.name,
                self.control_topic()
            )),
            None => Ok(()),
        }
    }

    /// The control topic, where each partition's publication is recorded in
    /// the transaction of its pages.
    #[must_use]
    pub fn control_topic(&self) -> String {
        self.topic(CONTROL)
    }
}

/// The name of the control topic after the prefix; a rules file's rule may
/// not have it.
pub const CONTROL: &str = "__commits";

/// `host:port`, `host` (the default port), `[v6]:port`.
fn broker(b: &str) -> Result<String, String> {
    let bad = || format!("broker {b:?} is not HOST:PORT (e.g. kafka1:9092 or 127.0.0.1:9092)");
    let b = b.trim();
    let (host, port) = if let Some(v6) = b.strip_prefix('[') {
        let (addr, after) = v6.split_once(']').ok_or_else(bad)?;
        addr.parse::<std::net::Ipv6Addr>().map_err(|_| bad())?;
        (&b[..addr.len() + 2], after.strip_prefix(':'))
    } else {
        match b.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (b, None),
        }
    };
    let host_ok = !host.is_empty()
        && (host.starts_with('[') || host.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'.' || c == b'-'));
    if !host_ok {
        return Err(bad());
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(p) => p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(bad)?,
    };
    Ok(format!("{host}:{port}"))
}

fn check_prefix(prefix: &str) -> Result<(), String> {
    let legal = |c: u8| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-';
    if prefix.is_empty() || prefix.len() > MAX_PREFIX || !prefix.bytes().all(legal) || prefix.starts_with('.') {
        return Err(format!(
            "topic prefix {prefix:?}: 1 to {MAX_PREFIX} letters, digits, '.', '_' or '-', not starting with '.' \
             (topics are PREFIX.RULE, PREFIX.ROLE, PREFIX.pages and PREFIX.{CONTROL})"
        ));
    }
    Ok(())
}

/// Why a map task could not publish its pages, or commit after publishing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The data location's settings ask for a sink this build lacks.
    #[error("the run publishes to Kafka (--sink), but this layercrawl was built without the Kafka sink (cargo feature `kafka`): run it with a build that has it")]
    NotBuilt,
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
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SinkError> for crate::error::StageError {
    fn from(e: SinkError) -> Self {
        Self::stage(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "kafka")]
    #[test]
    fn brokers_and_prefix_are_read_and_checked() {
        let s = SinkSpec::parse("kafka://k1:9093,127.0.0.1:1,[::1]:7,k4/crawl.nightly").expect("good URL");
        assert_eq!(s.brokers, ["k1:9093", "127.0.0.1:1", "[::1]:7", "k4:9092"]);
        assert_eq!(
            (s.prefix.as_str(), s.bootstrap().as_str()),
            ("crawl.nightly", "k1:9093,127.0.0.1:1,[::1]:7,k4:9092")
        );
        assert_eq!(
            (s.topic("pages"), s.control_topic()),
            ("crawl.nightly.pages".into(), "crawl.nightly.__commits".into())
        );
        assert_eq!(format!("{s:?}"), "kafka://k1:9093,127.0.0.1:1,[::1]:7,k4:9092/crawl.nightly");
    }

    #[cfg(feature = "kafka")]
    #[test]
    fn bad_urls_are_refused_saying_why() {
        for (url, says) in [
            ("http://k1:9092/crawl", "not a sink URL"),
            ("kafka://k1:9092", "no topic prefix"),
            ("kafka://k1:9092/", "topic prefix"),
            ("kafka://k1:9092/a/b", "topic prefix"),
            ("kafka://k1:99999/crawl", "broker \"k1:99999\""),
            ("kafka://k1:0/crawl", "broker \"k1:0\""),
            ("kafka://,k2/crawl", "broker \"\""),
            ("kafka://user@k1/crawl", "broker \"user@k1\""),
            ("kafka://[zz]:1/crawl", "broker"),
            ("kafka://k1/crawl?acks=1", "no options"),
            ("kafka://k1/.hidden", "topic prefix"),
        ] {
            let e = SinkSpec::parse(url).expect_err(url);
            assert!(e.contains(says), "{url}: {e}");
        }
        let long = format!("kafka://k1/{}", "p".repeat(MAX_PREFIX + 1));
        assert!(SinkSpec::parse(&long).is_err());
    }

    #[cfg(not(feature = "kafka"))]
    #[test]
    fn without_the_feature_a_kafka_sink_is_refused_saying_so() {
        let e = SinkSpec::parse("kafka://k1:9092/crawl").expect_err("not built");
        assert!(e.contains("needs the \"kafka\" feature: cargo build --release --features kafka"), "{e}");
    }
}
