//! The test web: a generated, deterministic multi-host web on loopback.
