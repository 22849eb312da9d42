//! URL de-duplication of document B (S400): the weighted visit/cache list
//! ([`cache`]) in front of the authoritative visited store of sorted
//! fingerprint runs ([`visited`]).

pub mod cache;
pub mod visited;
