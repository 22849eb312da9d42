//! The crawl's datasets, each described once: the Hive folders under the
//! data location that a crawl publishes (docs/src/output.md).
//!
//! A dataset's name is written here and nowhere else in the crate: its
//! paths are [`layout`](super::layout)'s functions of the name, the merge
//! iterates [`ALL`] and counts rows by [`Dataset::count`], and the export,
//! the report, the summary and the rule editor name a dataset by its
//! constant. Adding a dataset is its writer and one row here
//! (docs/src/contributing.md, "Adding a dataset"); a unit test fails when
//! a name appears as a string literal anywhere else in `src/` outside
//! tests, or docs/src/output.md does not list its folder.

use arrow_schema::SchemaRef;

use super::schema;

/// What the merge does with a dataset's layers (docs/src/how-it-works.md,
/// step 4): concatenate each layer's `part-*.parquet` shards into one
/// `data-00000.parquet`, or leave them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merge {
    /// Left as written: the layers' input, or files that are not Parquet.
    No,
    /// Merged in every crawl.
    Always,
    /// Merged when the crawl wrote any file of it.
    IfWritten,
    /// One dataset per rule, `NAME/rule=RULE`, each merged when written.
    PerRule,
}

/// Where the merge manifest (`state/manifest/merge.json`) counts a
/// dataset's merged rows: one of its fields, each kept as it is so that
/// manifests and summaries read the same as before the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Not counted (not merged).
    No,
    /// `doc_rows`.
    Doc,
    /// `link_rows`.
    Links,
    /// `sitemap_rows`.
    Sitemaps,
    /// `extracted_rows`, by dataset name. These are the datasets a row
    /// extractor may write (`extract::RowExtractor`).
    Extracted,
    /// `item_rows`, by dataset name (`items/rule=NAME`, …).
    Items,
}

/// One dataset: its folder's name and what the crate does with it.
#[derive(Debug)]
pub struct Dataset {
    /// The folder under the data location, and the dataset's name
    /// everywhere (the export's table, the summary, the report).
    pub name: &'static str,
    /// The schema every file has, or `None` when the run's settings make
    /// it (each rule's items, an extractor's columns) or it is not Parquet.
    /// `doc`'s is its core: the run's extractors add columns after it.
    pub schema: Option<fn() -> SchemaRef>,
    pub merge: Merge,
    pub count: Count,
}

/// `in/layer=L/`: the URLs layer `L` fetches.
pub const IN: Dataset = Dataset { name: "in", schema: Some(schema::input_schema), merge: Merge::No, count: Count::No };

/// `doc/layer=L/`: one row per requested URL.
pub const DOC: Dataset =
    Dataset { name: "doc", schema: Some(schema::doc_schema), merge: Merge::Always, count: Count::Doc };

/// `links/layer=L/`: one row per outlink of a fetched page.
pub const LINKS: Dataset =
    Dataset { name: "links", schema: Some(schema::links_schema), merge: Merge::Always, count: Count::Links };

/// `items/rule=NAME/layer=L/`: the items rule `NAME` made (`--rules`).
pub const ITEMS: Dataset = Dataset { name: "items", schema: None, merge: Merge::PerRule, count: Count::Items };

/// `sitemaps/layer=0/`: the URLs the seeds' sitemaps listed (`--sitemaps`).
pub const SITEMAPS: Dataset = Dataset {
    name: "sitemaps",
    schema: Some(schema::sitemaps_schema),
    merge: Merge::IfWritten,
    count: Count::Sitemaps,
};

/// `skipped/layer=L/`: the URLs the noise filter did not follow into `L`.
pub const SKIPPED: Dataset = Dataset {
    name: "skipped",
    schema: Some(schema::skipped::skipped_schema),
    merge: Merge::IfWritten,
    // Counted by name among the items, as the merge always has: the
    // manifest has no field of its own for it.
    count: Count::Items,
};

/// `entities/layer=L/`: mentions of the knowledge base's entities (`--entities`).
pub const ENTITIES: Dataset =
    Dataset { name: "entities", schema: None, merge: Merge::IfWritten, count: Count::Extracted };

/// `relations/layer=L/`: relations between the entities of one sentence (`--entities`).
pub const RELATIONS: Dataset =
    Dataset { name: "relations", schema: None, merge: Merge::IfWritten, count: Count::Extracted };

/// `warc/layer=L/`: each partition's exchanges as WARC records and their
/// CDXJ index (`--warc`; docs/src/warc.md).
pub const WARC: Dataset = Dataset { name: "warc", schema: None, merge: Merge::No, count: Count::No };

/// Every dataset (the merge takes those it merges by name).
pub const ALL: [&Dataset; 9] = [&IN, &DOC, &LINKS, &ITEMS, &SITEMAPS, &SKIPPED, &ENTITIES, &RELATIONS, &WARC];

/// The datasets a row extractor may write: the merge looks for these.
pub fn extracted() -> impl Iterator<Item = &'static Dataset> {
    ALL.into_iter().filter(|d| d.count == Count::Extracted)
}

#[cfg(test)]
mod tests;
