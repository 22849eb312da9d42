//! Temporary files: what the crawl keeps outside memory while a unit of
//! work runs, in the temporary folder (`TMPDIR`), gone with the process.
//!
//! - [`SpillLog`] (`log.rs`): an append-only log of records, read back by
//!   slot; the map input's rows and the first URLs of content hashes live in
//!   one, so memory holds a few bytes per row.
//! - [`InputRows`] (`input.rs`): one partition's input rows in a log.
//! - `pages.rs`: the open row group's finished Parquet pages of a shard,
//!   until the row group is written.
//!
//! A failure here names the file it was for and the temporary folder
//! (docs/src/politeness.md, "Failure and recovery").

mod input;
mod log;
mod pages;

pub use input::InputRows;
pub use log::{SpillLog, MAX_RECORD};
pub use pages::SpillFactory;
