//! layercrawl's extraction: the extractors of a page's columns, the user's rules and their items, and the focus (the crawl's order)

// The layers below, under the names this crate's files use.
pub(crate) use layercrawl_denoise as denoise;
pub(crate) use layercrawl_parse as parse;
pub(crate) use layercrawl_store::{self as store, error};
pub(crate) use layercrawl_vocab::urlnorm;

pub mod extract;
pub mod focus;
pub mod rules;
