//! Noise-link removal of document B (S300): the DOM link-text-ratio
//! prefilter runs at parse time (see [`crate::parse`]); this stage holds the
//! bit-parallel LCS similarity ([`lcs`]) and the single-pass clustering of a
//! domain block ([`cluster`]) applied between layers.

pub mod cluster;
pub mod lcs;
