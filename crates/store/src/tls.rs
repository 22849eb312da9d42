//! The one TLS provider of the process: ring's.
//!
//! Every HTTPS client of the crawler (the fetcher's, the cloud stores',
//! the relay's upstream) uses rustls with ring's cryptography. The HTTP
//! client and the cloud stores are built without a provider of their own,
//! so they take the process's default, which [`install_provider`] sets;
//! that keeps a second one (aws-lc-rs, a large C library) out of the build.

/// Makes ring's provider the process's default, once. Call it before a
/// client is built; a provider installed earlier by the program is kept.
pub fn install_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Err: a provider is installed already, which is all we need.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// ring's provider itself, for a TLS configuration built by hand.
#[must_use]
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    install_provider();
    rustls::crypto::CryptoProvider::get_default()
        .map_or_else(|| std::sync::Arc::new(rustls::crypto::ring::default_provider()), std::sync::Arc::clone)
}
