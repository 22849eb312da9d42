//! No code. This crate's dependencies turn on, in every test build, the
//! features that the opt-in capabilities turn on in dependencies the
//! default build shares, so that a `--features full` build reuses the
//! default build's compiled dependencies (see its `Cargo.toml`).
