//! What a kind of sink is to the rest of the crate: a [`Kind`] (the
//! scheme it owns and the cargo feature that builds it, known to every
//! build) and, where it is built, the [`SinkConfig`] its `--sink` URL is
//! checked into, which opens each map task's [`Sink`].
//!
//! A kind is plain data with a function, not a trait object of its own:
//! [`crate::KINDS`] is a `static` list, and what a build without the
//! kind's feature has of it is that data alone (`parse` is none).

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::rules::Rules;
use crate::store::Store;
use crate::{Sink, SinkError, UrlError, KINDS};

/// Checks a URL of a kind's scheme (the whole URL, scheme included) into
/// its [`SinkConfig`]; the error says what is wrong and the form expected.
pub type Parse = fn(&str) -> Result<Arc<dyn SinkConfig>, String>;

/// A kind of sink, listed in [`crate::KINDS`] whether this build has it or
/// not.
pub struct Kind {
    /// The URL scheme it owns, without `://` (`kafka`).
    pub scheme: &'static str,
    /// Its name in messages (`Kafka`).
    pub name: &'static str,
    /// The cargo feature that builds it (`kafka`).
    pub feature: &'static str,
    /// Its URL's form, for messages (`kafka://HOST:PORT…/TOPIC-PREFIX`).
    pub form: &'static str,
    /// The URL of a sink of this kind that the run's settings kept in an
    /// older form than its URL's text (none if there never was one), so
    /// that a run made by an older build still resumes.
    pub older: Option<fn(&serde_json::Value) -> Option<String>>,
    /// What checks its URLs: none in a build without its feature.
    pub parse: Option<Parse>,
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://", self.scheme)
    }
}

impl Kind {
    /// The kind that owns `url`'s scheme.
    ///
    /// # Errors
    /// [`UrlError::Unknown`] when none does, listing the ones there are.
    pub fn of(url: &str) -> Result<&'static Self, UrlError> {
        let scheme = url.split_once("://").map(|(s, _)| s);
        KINDS
            .iter()
            .find(|k| Some(k.scheme) == scheme)
            .ok_or_else(|| UrlError::Unknown { url: url.to_string(), known: Self::known() })
    }

    /// Every kind's scheme and URL form, for a message; a kind this build
    /// lacks says which feature builds it.
    pub(crate) fn known() -> String {
        let each: Vec<String> = KINDS
            .iter()
            .map(|k| match k.parse {
                Some(_) => format!("{}:// ({})", k.scheme, k.form),
                None => format!("{}:// ({}; not in this build: cargo feature \"{}\")", k.scheme, k.form, k.feature),
            })
            .collect();
        match each.as_slice() {
            [one] => format!("the one scheme this build knows is {one}"),
            _ => format!("the schemes this build knows are {}", each.join(", ")),
        }
    }
}

/// A `--sink` URL as its kind checked it: the sink's settings, which open
/// the sink of each map task (as a Vector component's config builds it).
pub trait SinkConfig: fmt::Debug + Send + Sync {
    /// The URL as the run's settings keep it: the kind's normal form of
    /// what was given (a broker's default port written out, say).
    fn url(&self) -> String;

    /// Refuses a rules file whose rules would clash with the sink's own
    /// names (Kafka's control topic).
    ///
    /// # Errors
    /// Naming the rule and what to do.
    fn check_rules(&self, _rules: &Rules) -> Result<(), String> {
        Ok(())
    }

    /// Opens the sink of the map task of partition `part` of `layer`,
    /// reaching whatever it publishes to; `store` is the data location.
    ///
    /// # Errors
    /// When the sink cannot be reached (its message names it), or storage
    /// fails.
    fn open<'a>(&'a self, store: &'a Store, layer: u32, part: u32) -> BoxFuture<'a, Result<Box<dyn Sink>, SinkError>>;
}
