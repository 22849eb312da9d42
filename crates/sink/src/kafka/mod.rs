//! The Kafka kind of sink (docs/src/kafka.md): `--sink
//! kafka://HOST:PORT[,HOST:PORT…]/TOPIC-PREFIX`. Each map task publishes
//! its partition's pages in one Kafka transaction tied to its commit.
//!
//! Here is what every build knows of the kind, its [`KIND`]: its scheme,
//! its cargo feature, and the form the run's settings kept it in before
//! sinks had kinds. The sink itself, from checking its URL to the
//! transactions, is `publish/`, built with the cargo feature `kafka`;
//! without it `absent.rs` stands in, and a `kafka://` URL is refused
//! naming the feature.

#[cfg(feature = "kafka")]
mod publish;
#[cfg(not(feature = "kafka"))]
#[path = "../absent.rs"]
mod publish;

use crate::Kind;

/// The form of a Kafka sink's URL.
const FORM: &str = "kafka://HOST:PORT[,HOST:PORT…]/TOPIC-PREFIX";

/// The Kafka kind, as [`crate::KINDS`] lists it.
pub(crate) const KIND: Kind =
    Kind { scheme: "kafka", name: "Kafka", feature: "kafka", form: FORM, older: Some(older), parse: publish::PARSE };

/// The URL of a Kafka sink that the run's settings kept as
/// `{"brokers": ["HOST:PORT", …], "prefix": "PREFIX"}` (each map task reads
/// them, so a crawl started by an older build resumes with this one).
fn older(saved: &serde_json::Value) -> Option<String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Older {
        brokers: Vec<String>,
        prefix: String,
    }
    let o = <Older as serde::Deserialize>::deserialize(saved).ok()?;
    Some(format!("kafka://{}/{}", o.brokers.join(","), o.prefix))
}
