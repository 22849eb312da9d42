//! Sinks: where a crawl streams its pages as it goes, besides the data
//! store (docs/src/kafka.md). A sink is a *kind*, named by the scheme of
//! its `--sink` URL, as an output is a kind of map-task output: one kind
//! today, Kafka (`--sink kafka://BROKERS/TOPIC-PREFIX`, in `kafka/`, built
//! with the cargo feature `kafka`).
//!
//! A sink is part of the map task's commit, not a writer beside it: a
//! partition's pages are published from its staged `doc` shard before the
//! task's manifest is written (for Kafka, in one transaction that commits
//! first), and a resumed task that finds its partition published commits
//! the attempt that published it ([`Sink`]). So the sink and the data store
//! hold the same pages, each once, whenever the crawl is killed.
//!
//! The shape, from the flag to the commit:
//!
//! 1. [`SinkUrl::parse`] reads a `--sink` URL: its scheme picks the kind in
//!    [`KINDS`], which checks the rest. A scheme no kind owns is refused
//!    listing the schemes this build knows; a kind whose cargo feature this
//!    build lacks is still recognised, and refused naming the feature. The
//!    checked URL is what the run's settings keep (`state/settings.json`).
//! 2. Each map task opens its sink with [`SinkUrl::open`], for its
//!    partition of its layer, and commits through the [`Sink`] it gets:
//!    [`Sink::published_earlier`] before it fetches, [`Sink::publish`]
//!    before its manifest is written, [`Sink::accept`] when another
//!    attempt's manifest was there first (the binary's
//!    `map/output/sink.rs`, which names no kind).
//!
//! ```
//! use layercrawl_sink::{SinkUrl, UrlError};
//!
//! // A scheme no kind owns: refused, listing the ones this build knows.
//! let refused = SinkUrl::parse("http://k1:9092/crawl").expect_err("not a sink URL");
//! assert!(matches!(refused, UrlError::Unknown { .. }));
//! assert!(refused.to_string().contains("kafka://"));
//! ```
//!
//! # Adding a kind of sink
//!
//! A new kind touches these places, and no other (the binary's options,
//! settings and map-task output take every kind through [`SinkUrl`] and
//! [`Sink`]):
//!
//! 1. its module here, `src/NAME/`, as `kafka/` is: a `KIND` ([`Kind`]:
//!    its scheme, name, cargo feature, URL form, and the older form of its
//!    settings if it had one), and, behind its feature, the part that
//!    checks its URL into a [`SinkConfig`] (its `PARSE`), which opens its
//!    [`Sink`]; without the feature `absent.rs` stands in for that part;
//! 2. its `mod` line and one line in [`KINDS`], in this file;
//! 3. its cargo feature, in this crate's `Cargo.toml` and the binary's
//!    (added to `full`), with its row in the book's docs/src/features.md;
//! 4. its words for users: its book page (as docs/src/kafka.md), and the
//!    URL form in the help of `--sink` (`src/config/options/pages.rs`).

// The layers below, under the names this crate's files use.
pub(crate) use layercrawl_extract::rules;
pub(crate) use layercrawl_store as store;

mod error;
mod kafka;
mod kind;
mod task;
mod url;

pub use error::SinkError;
pub use kind::{Kind, Parse, SinkConfig};
pub use task::Sink;
pub use url::{SinkUrl, UrlError};

/// Every kind of sink, whether this build has it (its cargo feature) or
/// not, so that a URL of a kind left out is refused naming its feature
/// rather than as unknown: a `--sink` URL's scheme picks one. A new kind
/// is one line here (and its module above).
pub static KINDS: &[Kind] = &[kafka::KIND];
