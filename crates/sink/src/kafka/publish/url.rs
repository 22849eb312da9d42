//! A Kafka sink's URL, checked: `kafka://HOST:PORT[,HOST:PORT…]/PREFIX`,
//! the bootstrap brokers and the prefix of every topic; and the topics'
//! names made from it.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::KafkaSink;
use crate::kafka::FORM;
use crate::rules::Rules;
use crate::store::Store;
use crate::{Sink, SinkConfig, SinkError};

/// The default port of a broker given without one.
const DEFAULT_PORT: u16 = 9092;
/// Topic names are at most 249 bytes; a topic is PREFIX.NAME with a rule
/// name of up to 64, so the prefix is at most 249 - 1 - 64.
const MAX_PREFIX: usize = 184;

/// The name of the control topic after the prefix; a rules file's rule may
/// not have it.
pub(crate) const CONTROL: &str = "__commits";

/// A checked Kafka sink URL.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct KafkaUrl {
    /// The bootstrap brokers, `host:port` each.
    pub(crate) brokers: Vec<String>,
    /// Every topic is this, a dot and the page's rule, role or `pages`.
    pub(crate) prefix: String,
}

impl fmt::Debug for KafkaUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "kafka://{}/{}", self.brokers.join(","), self.prefix)
    }
}

impl KafkaUrl {
    /// Parses and checks a `kafka://` URL.
    ///
    /// # Errors
    /// A message naming what is wrong and the form expected.
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        let url = url.trim();
        let Some(rest) = url.strip_prefix("kafka://") else {
            return Err(format!("{url:?} is not a sink URL; the form is {FORM}"));
        };
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
    pub(crate) fn bootstrap(&self) -> String {
        self.brokers.join(",")
    }

    /// The topic of a page: the prefix, a dot and `name` (a rule, a role,
    /// or `pages`).
    #[must_use]
    pub(crate) fn topic(&self, name: &str) -> String {
        format!("{}.{name}", self.prefix)
    }

    /// The control topic, where each partition's publication is recorded in
    /// the transaction of its pages.
    #[must_use]
    pub(crate) fn control_topic(&self) -> String {
        self.topic(CONTROL)
    }
}

impl SinkConfig for KafkaUrl {
    fn url(&self) -> String {
        format!("{self:?}")
    }

    /// Refuses a rules file with a rule named like the control topic.
    fn check_rules(&self, rules: &Rules) -> Result<(), String> {
        match rules.list.iter().find(|r| r.name == CONTROL) {
            Some(r) => Err(format!(
                "rule {:?}: with --sink, its topic would be the sink's control topic {}; rename the rule",
                r.name,
                self.control_topic()
            )),
            None => Ok(()),
        }
    }

    fn open<'a>(&'a self, store: &'a Store, layer: u32, part: u32) -> BoxFuture<'a, Result<Box<dyn Sink>, SinkError>> {
        Box::pin(async move {
            let sink: Box<dyn Sink> = Box::new(KafkaSink::open(self, store, layer, part).await?);
            Ok(sink)
        })
    }
}

/// Checks a `kafka://` URL for [`crate::KINDS`].
///
/// # Errors
/// As [`KafkaUrl::parse`].
pub(super) fn parse(url: &str) -> Result<Arc<dyn SinkConfig>, String> {
    Ok(Arc::new(KafkaUrl::parse(url)?))
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SinkUrl, UrlError};

    #[test]
    fn brokers_and_prefix_are_read_and_checked() {
        let s = KafkaUrl::parse("kafka://k1:9093,127.0.0.1:1,[::1]:7,k4/crawl.nightly").expect("good URL");
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
        // Through the kinds: the URL the settings keep is the normal form.
        let url = SinkUrl::parse(" kafka://k1:9093,127.0.0.1:1,[::1]:7,k4/crawl.nightly ").expect("good URL");
        assert_eq!(url.as_str(), "kafka://k1:9093,127.0.0.1:1,[::1]:7,k4:9092/crawl.nightly");
    }

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
            let e = SinkUrl::parse(url).expect_err(url).to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
        let long = format!("kafka://k1/{}", "p".repeat(MAX_PREFIX + 1));
        assert!(matches!(SinkUrl::parse(&long), Err(UrlError::Refused(_))));
    }

    #[test]
    fn a_rule_named_like_the_control_topic_is_refused() {
        let rules = crate::rules::parse_rules(
            "r.toml",
            "[[rule]]\nname = \"__commits\"\nurls = [\"http://shop.test/**\"]\n[[rule.field]]\nname = \"t\"\ncss = \"h1\"\n",
        )
        .expect("rules");
        let url = SinkUrl::parse("kafka://k1/crawl").expect("good URL");
        let e = url.check_rules(&rules).expect_err("the control topic's name");
        assert!(e.contains("rule \"__commits\"") && e.contains("crawl.__commits"), "{e}");
    }
}
