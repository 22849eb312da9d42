//! layercrawl: a MapReduce-style layered batch web crawler.
//!
//! A crawl is a loop over layers. Layer 0 is the seeds; layer L is every
//! URL first found L hops away. Each layer is one round over files in a
//! data store (a local folder or an object store), so every step can be
//! re-run and a killed crawl resumes where it stopped:
//!
//! ```text
//! seeds ─► in/layer=0 ─► map (fetch, parse, rows) ─► doc/layer=0, links/layer=0
//!                                                          │
//!          in/layer=1 ◄─ optimise (shuffle, denoise, dedup)◄┘   … until --depth
//!          after the last layer: merge ─► doc/, links/ (one file per layer)
//! ```
//!
//! The modules follow the pipeline (ARCHITECTURE.md has the picture):
//!
//! | stage | module | unit of work |
//! |---|---|---|
//! | input | [`seeds`], [`urlnorm`], [`scope`], [`partition`] | which URLs, which partition owns a site |
//! | map | [`map`] over [`fetch`] and [`parse`] | [`map::map_task`]: one partition of one layer |
//! | optimise | [`optimise`] over [`denoise`] and [`dedup`] | [`optimise::optimise_task`]: one target partition's share of the next layer's input |
//! | merge | [`merge`] | [`merge::merge_layers`]: one file per dataset and layer |
//! | sink | [`sink`] | each map task's pages to the run's sink, a kind by its URL's scheme (Kafka: one transaction tied to its commit) |
//! | storage | [`store`] | the data store, object paths ([`store::layout`]), schemas, shards, manifests |
//! | sequencing | [`driver`] | [`driver::run`]: layers in order, each stage's units of work |
//! | executors | [`exec`] | where units of work run: this process, child processes, Kubernetes Jobs |
//! | reporting | [`report`] | `layercrawl report`: a crawl's health as one HTML file, from its manifests and Parquet |
//! | after a crawl | [`export`] | [`export::export`]: the crawl's Parquet into SQLite or PostgreSQL tables |
//!
//! Each stage takes a narrow context ([`map::MapCtx`],
//! [`optimise::OptimiseCtx`], a [`store::Store`] for the merge) that
//! holds only what it needs, and fails with a [`error::StageError`]; a
//! failed URL is never an error but a row. [`config`] turns flags and a job
//! file into one validated [`config::CrawlConfig`].
//!
//! ```no_run
//! # async fn crawl() -> Result<(), Box<dyn std::error::Error>> {
//! use layercrawl::config::RunOptions;
//! let mut options = RunOptions { seeds: Some("seeds.txt".into()), depth: Some(2), ..RunOptions::default() };
//! options.politeness.per_host = 4;
//! let cfg = layercrawl::config::CrawlConfig::from_options(&options)?;
//! let summary = layercrawl::driver::run(cfg).await?;
//! println!("{} pages in {:.1} s", summary.fetched, summary.seconds);
//! # Ok(()) }
//! ```

pub mod config;
pub mod driver;
pub mod exec;
pub mod export;
pub mod map;
pub mod merge;
pub mod optimise;
pub mod report;
pub mod shuffle;
pub mod studio;

// The layers below the stages, each its own crate (ARCHITECTURE.md, "Layers
// point one way"): the compiler refuses an import from them up into a stage.
pub use layercrawl_dedup as dedup;
pub use layercrawl_denoise as denoise;
pub use layercrawl_extract::{extract, focus, rules};
pub use layercrawl_fetch as fetch;
pub use layercrawl_parse as parse;
pub use layercrawl_sink as sink;
pub use layercrawl_store::{self as store, error};
pub use layercrawl_vocab::{self as vocab, fence, partition, scope, seeds, urlnorm};
pub use layercrawl_warc as warc;
