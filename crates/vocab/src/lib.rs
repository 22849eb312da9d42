//! The vocabularies of the datasets: the values of the `error` column of
//! `doc` and of the `noise` column of `links`. They sit at the bottom, with
//! the settings, so that the store, which writes and reads them, depends
//! on no stage (ARCHITECTURE.md, "Invariants"). The value types of the
//! options (durations, sizes, lists: [`values`]) are here too, for the
//! settings of every stage to share.

pub mod fence;
pub mod partition;
pub mod scope;
pub mod seeds;
pub mod urlnorm;
pub mod values;

mod error_kind;
mod noise_label;

pub use error_kind::{ErrorKind, UnknownErrorKind};
pub use noise_label::NoiseLabel;
