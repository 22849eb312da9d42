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

#[cfg(test)]
mod tests {
    use crate::store::Store;
    use crate::SinkUrl;

    #[cfg(not(feature = "kafka"))]
    #[test]
    fn without_the_feature_a_kafka_sink_is_refused_naming_the_feature() {
        use crate::store::error::NotBuilt;
        use crate::UrlError;

        let e = SinkUrl::parse("kafka://k1:9092/crawl").expect_err("not built");
        assert_eq!(e, UrlError::NotBuilt(NotBuilt::new("--sink", "kafka")));
        assert_eq!(
            e.to_string(),
            "--sink needs the \"kafka\" feature: cargo build --release --features kafka (or --features full)"
        );
        assert!(crate::kind::Kind::known().contains(
            "kafka:// (kafka://HOST:PORT[,HOST:PORT…]/TOPIC-PREFIX; not in this build: cargo feature \"kafka\")"
        ));
    }

    /// A run's settings written by a build with the Kafka sink, as its URL
    /// or in the form from before sinks had kinds, still load, in either
    /// build; a task of a build without it refuses to start, naming the
    /// feature.
    #[tokio::test]
    async fn a_runs_saved_sink_loads_in_either_form_and_a_build_without_it_refuses_its_tasks() {
        let older: SinkUrl =
            serde_json::from_str(r#"{"brokers":["k1:9093","k2:9092"],"prefix":"crawl.nightly"}"#).expect("older form");
        let url: SinkUrl = serde_json::from_str(r#""kafka://k1:9093,k2:9092/crawl.nightly""#).expect("URL");
        assert_eq!(older, url);
        assert_eq!(older.as_str(), "kafka://k1:9093,k2:9092/crawl.nightly");
        assert_eq!(serde_json::to_string(&older).expect("json"), r#""kafka://k1:9093,k2:9092/crawl.nightly""#);
        assert_eq!(older.kind().name, "Kafka");
        let e = serde_json::from_str::<SinkUrl>(r#"{"hosts":["k1"]}"#).expect_err("no kind's").to_string();
        assert!(e.contains("is of no kind of sink this build knows"), "{e}");
        if cfg!(feature = "kafka") {
            return;
        }
        let store = Store::open("memory://").expect("memory store");
        let e = url.open(&store, 1, 0).await.err().expect("not built");
        assert_eq!(
            e.to_string(),
            "the run publishes to Kafka (--sink), but this layercrawl was built without the Kafka sink \
             (cargo feature `kafka`): run it with a build that has it"
        );
    }
}
