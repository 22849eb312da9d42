//! The end-to-end tests, one module per capability, in one test binary: it
//! links once (not thirty times), and the tests of every module share the
//! test threads. `cargo test --test e2e crawl::` runs one module's tests;
//! the modules that need a cargo feature are built with it
//! (`cargo test --features full`).

mod common;

mod backends;
mod crawl;
mod dedup;
mod denoise;
mod dns;
mod docs;
mod entities;
mod examples;
#[cfg(feature = "sql")]
mod export;
mod extract;
mod failures;
mod features;
mod focus;
mod governor;
mod help;
#[cfg(feature = "kubernetes")]
mod image;
mod interop;
#[cfg(feature = "kubernetes")]
mod k8s;
#[cfg(feature = "kafka")]
mod kafka;
#[cfg(feature = "learned")]
mod learned;
mod nothing_lost;
mod politeness;
mod proxies;
mod realsites;
mod recrawl;
#[cfg(feature = "render")]
mod render;
mod report;
mod rules;
mod scaleout;
mod sitemaps;
#[cfg(feature = "render")]
mod studio;
mod units;
mod warc;
mod webapps;
mod webfarm;
