//! A `--sink` URL, checked by the kind its scheme names, as the run's
//! options and settings carry it: they name no kind.

use std::fmt;
use std::sync::Arc;

use crate::kind::{Kind, SinkConfig};
use crate::rules::Rules;
use crate::store::error::NotBuilt;
use crate::store::Store;
use crate::{Sink, SinkError};

/// A `--sink` URL and the kind that owns it (its scheme).
///
/// A struct holding its kind, rather than an enum with a variant per kind:
/// a new kind is then its module and a line in [`crate::KINDS`], with no
/// variant and no `match` arm to add here, and the run's settings keep one
/// readable string whatever the kind (`"sink": "kafka://k1:9092/crawl"`).
#[derive(Clone)]
pub struct SinkUrl {
    kind: &'static Kind,
    /// The URL as its kind wrote it back (its normal form), or as the run's
    /// settings had it when this build lacks the kind.
    text: String,
    /// The kind's checked URL; none in a build without the kind, whose
    /// tasks refuse to start ([`SinkError::NotBuilt`]).
    config: Option<Arc<dyn SinkConfig>>,
}

/// Why a `--sink` URL is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// No kind of sink owns its scheme.
    #[error("{url:?} is not a sink URL: {known}")]
    Unknown { url: String, known: String },
    /// Its kind is not in this build (naming the cargo feature).
    #[error(transparent)]
    NotBuilt(#[from] NotBuilt),
    /// Its kind refused it, saying why and the form expected.
    #[error("{0}")]
    Refused(String),
}

impl SinkUrl {
    /// Parses and checks a `--sink` URL by the kind its scheme names.
    ///
    /// # Errors
    /// [`UrlError::Unknown`] listing the schemes there are,
    /// [`UrlError::NotBuilt`] naming the feature of a kind this build
    /// lacks, or [`UrlError::Refused`] saying what is wrong and the form.
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let url = url.trim();
        let kind = Kind::of(url)?;
        let parse = kind.parse.ok_or_else(|| NotBuilt::new("--sink", kind.feature))?;
        let config = parse(url).map_err(UrlError::Refused)?;
        Ok(Self { kind, text: config.url(), config: Some(config) })
    }

    /// The URL as the run's settings had it: checked again by its kind when
    /// this build has it, kept as it is when not (the run's tasks refuse to
    /// start, naming the feature).
    fn saved(url: &str) -> Result<Self, String> {
        let kind = Kind::of(url).map_err(|e| format!("the run's sink: {e}"))?;
        match kind.parse {
            Some(_) => Self::parse(url).map_err(|e| format!("the run's sink: {e}")),
            None => Ok(Self { kind, text: url.to_string(), config: None }),
        }
    }

    /// The kind that owns it.
    #[must_use]
    pub fn kind(&self) -> &'static Kind {
        self.kind
    }

    /// The URL, in its kind's normal form.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Refuses a rules file whose rules would clash with the sink's own
    /// names (Kafka: a rule named like its control topic).
    ///
    /// # Errors
    /// Naming the rule and what to do.
    pub fn check_rules(&self, rules: &Rules) -> Result<(), String> {
        self.config.as_ref().map_or(Ok(()), |c| c.check_rules(rules))
    }

    /// Opens the sink of the map task of partition `part` of `layer`
    /// (`store`: the data location).
    ///
    /// # Errors
    /// [`SinkError::NotBuilt`] when this build lacks the kind; when the
    /// sink cannot be reached (naming it), or storage fails.
    pub async fn open(&self, store: &Store, layer: u32, part: u32) -> Result<Box<dyn Sink>, SinkError> {
        match &self.config {
            Some(c) => c.open(store, layer, part).await,
            None => Err(SinkError::NotBuilt { name: self.kind.name, feature: self.kind.feature }),
        }
    }
}

impl PartialEq for SinkUrl {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for SinkUrl {}

impl fmt::Debug for SinkUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Display for SinkUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl serde::Serialize for SinkUrl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// The forms a sink has in the run's settings: its URL, or an older form
/// of one kind's (Kafka's `{"brokers": […], "prefix": …}`, before sinks had
/// kinds), which that kind turns into its URL.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Saved {
    Url(String),
    Older(serde_json::Value),
}

impl<'de> serde::Deserialize<'de> for SinkUrl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let url = match Saved::deserialize(d)? {
            Saved::Url(url) => url,
            Saved::Older(v) => {
                crate::KINDS.iter().find_map(|k| k.older.and_then(|older| older(&v))).ok_or_else(|| {
                    serde::de::Error::custom(format!("the run's sink {v} is of no kind of sink this build knows"))
                })?
            }
        };
        Self::saved(&url).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheme_no_kind_owns_is_refused_listing_the_schemes() {
        for url in ["http://k1:9092/crawl", "k1:9092/crawl", "KAFKA://k1/crawl", ""] {
            let e = SinkUrl::parse(url).expect_err(url);
            let UrlError::Unknown { known, .. } = &e else { panic!("{url}: {e:?}") };
            let said = e.to_string();
            assert!(said.starts_with(&format!("{url:?} is not a sink URL: the ")), "{said}");
            for kind in crate::KINDS {
                let listed = match kind.parse {
                    Some(_) => format!("{}:// ({})", kind.scheme, kind.form),
                    None => {
                        format!(
                            "{}:// ({}; not in this build: cargo feature \"{}\")",
                            kind.scheme, kind.form, kind.feature
                        )
                    }
                };
                assert!(known.contains(&listed), "{listed}: {said}");
            }
        }
        let saved = serde_json::from_str::<SinkUrl>(r#""ftp://k1/crawl""#).expect_err("unknown").to_string();
        assert!(saved.contains("the run's sink: \"ftp://k1/crawl\" is not a sink URL"), "{saved}");
    }
}
