//! URL de-duplication of document B (S400): the weighted visit/cache list
//! ([`cache`]) in front of the visited store (sorted fingerprint runs, see
//! [`crate::driver::next`]).

pub mod cache;
