//! layercrawl: a MapReduce-style layered batch web crawler.

pub mod config;
pub mod dedup;
pub mod denoise;
pub mod driver;
pub mod error;
pub mod fetch;
pub mod map;
pub mod merge;
pub mod optimise;
pub mod parse;
pub mod partition;
pub mod scope;
pub mod seeds;
pub mod store;
pub mod urlnorm;
