//! URL normalisation and registrable domains.
