//! Extraction: columns of `doc` computed from a fetched page, after
//! the parse (ARCHITECTURE.md, "Where to plug in").
//!
//! An [`Extractor`] is one capability (main text, page metadata, a user's
//! CSS-selector rules, entities, ...) that adds its own columns to the
//! `doc` dataset. The extractors of a run form its [`Extractors`] registry,
//! which the map stage holds (`map::MapCtx::extract` in the crawler; the run's
//! settings record its column names, so that a map task run on its own with
//! other extractors is refused); for every URL
//! with a response, `map::process` in the crawler builds the page's parsed form
//! once, a [`ParsedPage`], and each extractor fills its values of the row
//! from it. The `doc` schema is the core columns (docs/src/output.md), then
//! each registered extractor's columns in registration order. With no
//! extractor registered (the default) the schema, the rows and the files
//! are exactly the core ones.
//!
//! A [`ParsedPage`] holds what every extractor shares: the decoded HTML,
//! the streaming tokenizer pass's [`Page`] (title, main text, links with
//! their block ratios) and a DOM (`scraper`, for CSS selectors) built
//! lazily, the first time an extractor asks for it: a run whose extractors
//! never call [`ParsedPage::dom`] never pays for a tree (`cargo bench
//! --bench stages`, group `extract`, measures what it costs).
//!
//! An extractor may also write rows of datasets of its own beside `doc`
//! (one row per entity mention, say): a [`RowExtractor`] ([`rows`]),
//! registered with [`Extractors::with_rows`], run right after the `doc`
//! extractors on the same [`ParsedPage`]; [`entities`] is one.
//!
//! Extraction is CPU work and runs where `map::process` in the crawler runs: on
//! the rayon pool, never on an async thread. An extractor that panics on a
//! hostile page loses only its own values (null), never the row.
//!
//! # Adding an extractor
//!
//! 1. Write a type implementing [`Extractor`] in a new module under
//!    `extract/` (`Send + Sync`: one instance serves every parse worker;
//!    precompile selectors or patterns when it is built, not per page).
//! 2. [`Extractor::columns`]: its output columns, each a [`Column`] with a
//!    name (unique in `doc`; `layer` is the Hive folder's), a
//!    [`ColumnType`], whether it is nullable, and its Parquet [`Tuning`]
//!    (e.g. [`Tuning::DISTINCT`] for values that rarely repeat, such as a
//!    text: no dictionary). The tuning travels on the schema's field, so
//!    the shard writer needs no edit.
//! 3. [`Extractor::extract`]: push one [`Value`] per column, in order;
//!    values left out, or of another type than their column's, are null.
//!    Use [`ParsedPage::page`] when the streaming pass already has what is
//!    needed, [`ParsedPage::dom`] for selectors.
//! 4. Register it: a built-in one that the run's settings switch on is
//!    a line in [`Extractors::of_run`] ([`registry`]), which the run's
//!    config and a map task run on its own both call; a library caller's
//!    own goes in as `Extractors::new(vec![Arc::new(MyExtractor::new(..))])`
//!    into `config::CrawlConfig::extractors` in the crawler; the driver hands
//!    the list to the map stage.
//! 5. Document its columns in the book's output page (docs/src/output.md).
//!
//! ```
//! use std::sync::Arc;
//! use layercrawl_extract::extract::{Column, ColumnType, Extractor, Extractors, PageInput, Value};
//!
//! /// The number of outlinks the tokenizer pass found.
//! struct LinkCount;
//!
//! impl Extractor for LinkCount {
//!     fn name(&self) -> &str {
//!         "link_count"
//!     }
//!     fn columns(&self) -> Vec<Column> {
//!         vec![Column::new("link_count", ColumnType::Int64)]
//!     }
//!     fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
//!         if let Some(parsed) = input.parsed {
//!             out.push(Value::Int64(parsed.page().links.len() as i64));
//!         }
//!     }
//! }
//!
//! let run = Extractors::new(vec![Arc::new(LinkCount)]).expect("unique column names");
//! assert_eq!(run.doc_schema().fields().last().map(|f| f.name().as_str()), Some("link_count"));
//! ```

pub mod boilerplate;
pub mod entities;
pub mod main_text;
pub mod metadata;
pub mod plan;
pub mod registry;
pub mod rows;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashSet;
use std::sync::Arc;

use arrow_schema::{Field, SchemaRef};
use url::Url;

use crate::parse::{self, Page, ParseConfig};
use crate::store::column::Tuned;
use crate::store::schema;

pub use crate::store::column::{ColumnType, Tuning, Value};
pub use registry::RunExtractorsError;
pub use rows::{Dataset, PageRows, Row, RowExtractor};

/// One output column of an extractor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: ColumnType,
    /// Whether the column holds nulls (pages without a value, URLs without
    /// a response): most extractor columns do.
    pub nullable: bool,
    pub tuning: Tuning,
}

impl Column {
    /// A nullable column with the file's default tuning.
    #[must_use]
    pub fn new(name: impl Into<String>, kind: ColumnType) -> Self {
        Self { name: name.into(), kind, nullable: true, tuning: Tuning::DEFAULT }
    }

    /// The same column with `tuning`.
    #[must_use]
    pub fn tuned(self, tuning: Tuning) -> Self {
        Self { tuning, ..self }
    }

    /// The same column, never null (a missing value becomes the type's zero).
    #[must_use]
    pub fn not_null(self) -> Self {
        Self { nullable: false, ..self }
    }

    /// Its schema field, tuning in the field's metadata.
    #[must_use]
    pub fn field(&self) -> Field {
        Field::new(&self.name, self.kind.data_type(), self.nullable).tuned(self.tuning)
    }
}

/// The parsed form of one HTML page that every extractor shares, built once
/// per page.
pub struct ParsedPage<'a> {
    html: Cow<'a, str>,
    page: Page,
    dom: OnceCell<scraper::Html>,
    /// The main text, computed once for every extractor that reads it.
    main_text: OnceCell<(main_text::TextFormat, Option<String>)>,
}

impl<'a> ParsedPage<'a> {
    /// Decodes `body` and runs the streaming parse (one tokenizer pass); the
    /// DOM waits until [`Self::dom`] is called.
    #[must_use]
    pub fn parse(body: &'a [u8], content_type: Option<&str>, url: &Url, cfg: &ParseConfig) -> Self {
        let (html, page) = parse::parse_html_keeping_source(body, content_type, url, cfg);
        Self { html, page, dom: OnceCell::new(), main_text: OnceCell::new() }
    }

    /// [`Self::parse`] with the DOM built by the same tokenizer pass, for
    /// a page that will need it (a rule matched its URL): one tokenization
    /// instead of two.
    #[must_use]
    pub fn parse_with_dom(body: &'a [u8], content_type: Option<&str>, url: &Url, cfg: &ParseConfig) -> Self {
        let (html, page, tree) = parse::parse_source(body, content_type, url, cfg, true);
        let dom = OnceCell::new();
        if let Some(tree) = tree {
            let _ = dom.set(tree);
        }
        Self { html, page, dom, main_text: OnceCell::new() }
    }

    /// The page as UTF-8 text, decoded from its charset.
    #[must_use]
    pub fn html(&self) -> &str {
        &self.html
    }

    /// What the streaming pass found: title, main text, links.
    #[must_use]
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// The page's DOM, built by html5ever's tree builder on the first call
    /// and shared by every later caller.
    pub fn dom(&self) -> &scraper::Html {
        self.dom.get_or_init(|| scraper::Html::parse_document(&self.html))
    }

    /// The page's main text rendered as `format` ([`main_text::main_text`]),
    /// computed on the first call and shared by later ones (the `main_text`
    /// column and a crawl plan's relevance both read it).
    #[must_use]
    pub fn main_text(&self, format: main_text::TextFormat) -> Option<Cow<'_, str>> {
        let (f, text) = self.main_text.get_or_init(|| (format, main_text::main_text(&self.page.structure, format)));
        if *f == format {
            text.as_deref().map(Cow::Borrowed)
        } else {
            main_text::main_text(&self.page.structure, format).map(Cow::Owned)
        }
    }

    /// Whether an extractor has asked for the DOM.
    #[must_use]
    pub fn has_dom(&self) -> bool {
        self.dom.get().is_some()
    }

    /// The streaming pass's result, for the core columns and the links.
    #[must_use]
    pub fn into_page(self) -> Page {
        self.page
    }
}

/// What an extractor is given for one URL that got a response.
#[derive(Clone, Copy)]
pub struct PageInput<'a> {
    /// The URL as requested, normalised.
    pub url: &'a Url,
    /// After redirects.
    pub final_url: &'a Url,
    /// HTTP status of the last response.
    pub status: u16,
    pub content_type: Option<&'a str>,
    /// The body as received (decompressed; possibly cut at `--max-body`).
    pub body: &'a [u8],
    /// The parsed page: a 2xx HTML response whose body was parsed; `None`
    /// for anything else (errors, redirects out, PDFs, broken bodies).
    pub parsed: Option<&'a ParsedPage<'a>>,
    /// The anchor text of the best link that led to the page, when the run
    /// scores links (a crawl plan); none for seeds.
    pub anchor: Option<&'a str>,
}

/// One capability of extraction: columns of `doc` and how to fill
/// them from a page. Object-safe; one instance serves every parse worker.
pub trait Extractor: Send + Sync {
    /// A short name, for logs and errors.
    fn name(&self) -> &str;

    /// The columns it adds to `doc`, in order. Called once, when the
    /// registry is built.
    fn columns(&self) -> Vec<Column>;

    /// Pushes this page's values onto `out`: one per column, in the order
    /// of [`Self::columns`]. Fewer are padded with nulls, more are dropped.
    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>);
}

/// Why a set of extractors cannot make one `doc` schema.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtractError {
    #[error("extractor `{extractor}`: column `{column}` is already a column of `doc`")]
    DuplicateColumn { extractor: String, column: String },
    #[error("extractor `{extractor}`: column `{column}` is reserved ({reason})")]
    ReservedColumn { extractor: String, column: String, reason: &'static str },
    #[error("extractor `{extractor}`: dataset `{dataset}` is written by another extractor, or not one of {known:?} (the datasets the merge looks for; add its row to store::dataset)")]
    Dataset { extractor: String, dataset: String, known: Vec<&'static str> },
}

/// The extractors of a run, in order, and the `doc` schema they make.
/// Cheap to clone (shared).
#[derive(Clone)]
pub struct Extractors(Arc<Registry>);

struct Registry {
    list: Vec<Arc<dyn Extractor>>,
    /// Columns of each extractor, in the same order.
    widths: Vec<usize>,
    width: usize,
    schema: SchemaRef,
    /// The extractors that write datasets of their own, each with the
    /// range of `datasets` that is theirs.
    rows: Vec<(Arc<dyn RowExtractor>, std::ops::Range<usize>)>,
    datasets: Vec<Dataset>,
}

impl Extractors {
    /// No extractor: the core `doc` schema, as without extraction.
    #[must_use]
    pub fn none() -> Self {
        Self(Arc::new(Registry {
            list: Vec::new(),
            widths: Vec::new(),
            width: 0,
            schema: schema::doc_schema(),
            rows: Vec::new(),
            datasets: Vec::new(),
        }))
    }

    /// The built-in extractors, which every run has unless a library
    /// caller replaces them: the main text ([`main_text::MainText`],
    /// rendered as `format`) and the page's metadata
    /// ([`metadata::PageMetadata`]).
    #[must_use]
    pub fn builtin(format: main_text::TextFormat) -> Self {
        Self::new(Self::builtin_list(format)).unwrap_or_else(|_| Self::none())
    }

    /// The built-in extractors as a list, to put others after them.
    #[must_use]
    pub fn builtin_list(format: main_text::TextFormat) -> Vec<Arc<dyn Extractor>> {
        Self::builtin_storing(format, main_text::StoreText::Both)
    }

    /// [`Self::builtin_list`] with the `main_text` column filled or left
    /// null as `store` says (`--store-text`).
    #[must_use]
    pub fn builtin_storing(format: main_text::TextFormat, store: main_text::StoreText) -> Vec<Arc<dyn Extractor>> {
        vec![
            Arc::new(main_text::MainText { format, stored: store.main() }),
            Arc::new(metadata::PageMetadata::default()),
        ]
    }

    /// The registry of `list`, in this order.
    ///
    /// # Errors
    /// When a column name is empty, `layer`, a core column's, or another
    /// extractor's.
    pub fn new(list: Vec<Arc<dyn Extractor>>) -> Result<Self, ExtractError> {
        let core = schema::doc_schema();
        let mut names: HashSet<String> = core.fields().iter().map(|f| f.name().clone()).collect();
        let mut fields = Vec::new();
        let mut widths = Vec::with_capacity(list.len());
        for ex in &list {
            let columns = ex.columns();
            widths.push(columns.len());
            for c in columns {
                let reserved = |reason| ExtractError::ReservedColumn {
                    extractor: ex.name().to_string(),
                    column: c.name.clone(),
                    reason,
                };
                if c.name.is_empty() {
                    return Err(reserved("a column needs a name"));
                }
                // docs/src/output.md: the layer is the Hive folder, never a column in a file.
                if c.name == "layer" {
                    return Err(reserved("the layer is the Hive folder's `layer=L`"));
                }
                if !names.insert(c.name.clone()) {
                    return Err(ExtractError::DuplicateColumn { extractor: ex.name().to_string(), column: c.name });
                }
                fields.push(c.field());
            }
        }
        let width = fields.len();
        Ok(Self(Arc::new(Registry {
            list,
            widths,
            width,
            schema: schema::doc_schema_with(&fields),
            rows: Vec::new(),
            datasets: Vec::new(),
        })))
    }

    /// The same registry with `list` writing rows of their own datasets,
    /// after the `doc` extractors, in this order.
    ///
    /// # Errors
    /// When a dataset is another's, or not one of
    /// [`dataset::extracted`](crate::store::dataset::extracted).
    pub fn with_rows(self, list: Vec<Arc<dyn RowExtractor>>) -> Result<Self, ExtractError> {
        let mut datasets = self.0.datasets.clone();
        let mut rows = self.0.rows.clone();
        for ex in list {
            let start = datasets.len();
            for d in ex.datasets() {
                let known = crate::store::dataset::extracted().any(|k| k.name == d.name);
                if !known || datasets.iter().any(|o| o.name == d.name) {
                    return Err(ExtractError::Dataset {
                        extractor: ex.name().to_string(),
                        dataset: d.name,
                        known: crate::store::dataset::extracted().map(|k| k.name).collect(),
                    });
                }
                datasets.push(d);
            }
            let end = datasets.len();
            rows.push((ex, start..end));
        }
        let r = &self.0;
        Ok(Self(Arc::new(Registry {
            list: r.list.clone(),
            widths: r.widths.clone(),
            width: r.width,
            schema: Arc::clone(&r.schema),
            rows,
            datasets,
        })))
    }

    /// The datasets the row extractors write, in order.
    #[must_use]
    pub fn datasets(&self) -> &[Dataset] {
        &self.0.datasets
    }

    /// Every row extractor's rows for one page ([`PageRows`], one list per
    /// dataset). An extractor that panics loses only its own rows.
    #[must_use]
    pub fn rows(&self, input: &PageInput<'_>) -> PageRows {
        let mut sets = vec![Vec::new(); self.0.datasets.len()];
        for (ex, range) in &self.0.rows {
            let out = &mut sets[range.clone()];
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ex.rows(input, out)));
            if run.is_err() {
                tracing::error!(url = %input.url, extractor = ex.name(), "the extractor panicked; its rows are dropped");
                out.iter_mut().for_each(Vec::clear);
            }
        }
        PageRows { sets }
    }

    /// The row extractors' scores of a page's links (one per anchor), the
    /// best of those that have an opinion; `None` when none has.
    #[must_use]
    pub fn link_scores(&self, rows: &PageRows, anchors: &[&str]) -> Option<Vec<f64>> {
        let mut best: Option<Vec<f64>> = None;
        for (ex, range) in &self.0.rows {
            let Some(sets) = rows.sets.get(range.clone()) else { continue };
            let Some(scores) = ex.link_scores(sets, anchors).filter(|s| s.len() == anchors.len()) else { continue };
            best = Some(match best {
                Some(b) => b.into_iter().zip(scores).map(|(x, y)| x.max(y)).collect(),
                None => scores,
            });
        }
        best
    }

    /// Whether no extractor is registered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.list.is_empty()
    }

    /// The `doc` schema of the run: the core columns, then the extractors'.
    #[must_use]
    pub fn doc_schema(&self) -> SchemaRef {
        Arc::clone(&self.0.schema)
    }

    /// The names of the extractor columns, in order.
    #[must_use]
    pub fn column_names(&self) -> Vec<String> {
        let core = schema::doc_schema().fields().len();
        self.0.schema.fields().iter().skip(core).map(|f| f.name().clone()).collect()
    }

    /// The names of the registered extractors, in order (row extractors last).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.list.iter().map(|e| e.name()).chain(self.0.rows.iter().map(|(e, _)| e.name()))
    }

    /// Every extractor's values for one page, in schema order. An extractor
    /// that panics (a bug met on a hostile page) gets nulls; the row and
    /// the other extractors' values are kept.
    #[must_use]
    pub fn extract(&self, input: &PageInput<'_>) -> Vec<Value> {
        let mut out = Vec::with_capacity(self.0.width);
        for (ex, width) in self.0.list.iter().zip(&self.0.widths) {
            let start = out.len();
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ex.extract(input, &mut out)));
            if run.is_err() {
                tracing::error!(url = %input.url, extractor = ex.name(), "the extractor panicked; its columns are null");
                out.truncate(start);
            }
            out.resize(start + width, Value::Null);
        }
        out
    }
}

impl Default for Extractors {
    fn default() -> Self {
        Self::none()
    }
}

impl std::fmt::Debug for Extractors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

#[cfg(test)]
mod tests;
