//! layercrawl: a MapReduce-style layered batch web crawler.

pub mod parse;
pub mod testweb;
pub mod urlnorm;
