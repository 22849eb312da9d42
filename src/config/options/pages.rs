//! The options of what becomes of fetched pages: the columns and files
//! written, the noise filter, and what steers the crawl (rules, plan,
//! entities, sitemaps, last night's crawl).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::values::{text, List, Switch};
use crate::config::{BodyPolicy, Denoise};
use crate::extract::main_text::{StoreText, TextFormat};
use crate::focus::Order;

/// What is written: columns, compression, WARC, the Kafka sink
/// (docs/src/output.md).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Output")]
pub struct Output {
    /// Which bodies go into the `body` column: html, all or none.
    #[arg(long, value_name = "html|all|none", value_enum, default_value_t = BodyPolicy::Html)]
    pub store_body: BodyPolicy,
    /// Compression of the Parquet files written: zstd (level 1), zstd:N
    /// (N in 1..=22; higher is smaller and slower) or none.
    #[arg(long, value_name = "zstd|zstd:N|none", default_value = "zstd")]
    #[serde(with = "text")]
    pub compression: crate::store::Compression,
    /// How the `main_text` column is rendered: plain (one line per
    /// paragraph, heading, list item) or markdown (headings, lists, quotes
    /// and code marked).
    #[arg(long, value_name = "plain|markdown", value_enum, default_value_t = TextFormat::Plain)]
    pub text_format: TextFormat,
    /// Which text columns are filled: both (`text`, all visible text, and
    /// `main_text`, the article), main, visible or none; a column left out
    /// is null.
    #[arg(long, value_name = "both|main|visible|none", value_enum, default_value_t = StoreText::Both)]
    pub store_text: StoreText,
    /// Trim the lines that a host's template repeats on many of its pages
    /// (a footer, an index bar) off the edges of `main_text`, learned from
    /// the host's pages in earlier layers (docs/src/main-text.md,
    /// "Cross-page boilerplate").
    #[arg(long, value_name = "on|off", value_enum, default_value_t = Switch::On)]
    pub site_boilerplate: Switch,
    /// Also write every request and response as WARC/1.1 records, with a
    /// CDXJ index, under `warc/layer=L/` (for web archives).
    #[arg(long)]
    pub warc: bool,
    /// Publish every fetched page to Kafka (docs/src/kafka.md): one JSON
    /// message per page, keyed by URL, on topic PREFIX.RULE, PREFIX.ROLE or
    /// PREFIX.pages; each partition's pages in one transaction tied to its
    /// commit, so a resumed crawl publishes nothing twice.
    #[arg(long, value_name = "kafka://BROKERS/PREFIX")]
    pub sink: Option<String>,
}

/// The URL optimiser between layers: noise filter, URL normalisation and
/// dedup (docs/src/noise-filter.md, docs/src/dedup.md).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Noise filter and dedup")]
pub struct Noise {
    /// Noise filter: drop (do not follow link targets on evidence of what
    /// fetched pages like them were), strict (also drop every link in a
    /// navigation block), mark (label as drop would, follow all) or off.
    #[arg(long, value_name = "off|mark|drop|strict", value_enum, default_value_t = Denoise::Drop)]
    pub denoise: Denoise,
    /// Link-text ratio above which a DOM block is navigation.
    #[arg(long, value_name = "R", default_value_t = crate::parse::DEFAULT_NOISE_RATIO)]
    pub noise_ratio: f32,
    /// LCS similarity for a URL to join a cluster (single-pass clustering).
    #[arg(long, value_name = "S", default_value_t = crate::denoise::cluster::DEFAULT_SIM)]
    pub cluster_sim: f32,
    /// File of known noise URLs, one a line: clusters resembling them are noise.
    #[arg(long, value_name = "FILE")]
    pub noise_patterns: Option<PathBuf>,
    /// Distinct query strings followed per host and path in one layer
    /// (faceted-search traps); the rest are labelled `trap`.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_query_variants: usize,
    /// Query parameters removed from every URL, comma-separated (`*` ends a
    /// prefix); replaces the default list of tracking and session ids. An
    /// empty value strips none.
    #[arg(long, value_name = "LIST", default_value_t = List::of(crate::urlnorm::STRIPPED_PARAMS))]
    pub strip_params: List,
    /// Entries of the dedup cache lists, over all partitions (about 40
    /// bytes each): with one layer's candidates, what dedup keeps in memory.
    #[arg(long, value_name = "N", default_value_t = 1 << 18)]
    pub cache_entries: usize,
}

/// What steers the crawl: its order, rules, plan, entities, sitemaps and
/// last night's crawl (docs/src/focused-crawling.md).
#[derive(Clone, Debug, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(default, rename_all = "kebab-case")]
#[command(next_help_heading = "Focus, rules and entities")]
pub struct Focus {
    /// The order of a layer's input, which each host's URLs are fetched in
    /// and a page budget cuts: best-first (with --plan, the best link score
    /// first; URL order without a plan), bfs (URL order), ant (with
    /// --plan: the link score times the pheromone of the target's URL
    /// cluster, learned from the relevance of its pages fetched so far) or
    /// learned (with --plan: drawn cluster by cluster by a DQN over the
    /// link score, the cluster's harvest and a learned code of the URL,
    /// trained on the crawl's own pages).
    #[arg(long, value_name = "best-first|bfs|ant|learned", value_enum, default_value_t = Order::BestFirst)]
    pub order: Order,
    /// Rules file (TOML): typed fields per URL pattern into
    /// `items/rule=NAME/`, and which links matched pages follow.
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Crawl plan (TOML): keyword groups scoring each page's `relevance`,
    /// page roles (`role`), and seed templates whose URLs join the seeds.
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// The URLs known to be relevant, one a line: each layer's summary
    /// then gives the truth URLs fetched and the target recall so far.
    #[arg(long, value_name = "FILE")]
    pub truth: Option<PathBuf>,
    /// Knowledge base (CSV or JSON Lines: id, name, aliases, type, prior,
    /// context): its entities' mentions in each page's main text go to
    /// `entities/`, the relations between them to `relations/`.
    #[arg(long, value_name = "FILE")]
    pub entities: Option<PathBuf>,
    /// Relation patterns, one a line (`predicate: template`), used with
    /// the built-in ones (with --entities).
    #[arg(long, value_name = "FILE")]
    pub relations: Option<PathBuf>,
    /// Entity ids or types, comma-separated: the links of pages that
    /// mention them are fetched first (with --entities).
    #[arg(long, value_name = "LIST")]
    pub prefer_entities: Option<List>,
    /// Entity links scoring below this (0 to 1) are dropped (with
    /// --entities).
    #[arg(long, value_name = "S", default_value_t = crate::extract::entities::DEFAULT_THRESHOLD)]
    pub entity_threshold: f64,
    /// Last night's crawl (a finished data location): requests carry its
    /// ETag and Last-Modified, and a page the server says is unchanged
    /// (304) is carried forward from it with `unchanged = true`.
    #[arg(long, value_name = "DATA")]
    pub previous: Option<String>,
    /// Read the seeds' sitemaps (robots.txt `Sitemap:` lines, else
    /// /sitemap.xml; indexes and gzip followed) and put their URLs into
    /// layer 1.
    #[arg(long)]
    pub sitemaps: bool,
    /// URLs taken from one host's sitemaps at most.
    #[arg(long, value_name = "N", default_value_t = 50_000)]
    pub sitemap_urls: usize,
}
