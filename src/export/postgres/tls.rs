//! TLS to the server, with libpq's `sslmode` and `sslrootcert`, through
//! rustls (the TLS stack the crawler's HTTP client uses too) and
//! tokio-postgres-rustls (which adds SCRAM's channel binding).
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | |
//! | `prefer` (default) | when the server offers it | not checked |
//! | `require` | always | not checked (with `sslrootcert`: its chain, as `verify-ca`) |
//! | `verify-ca` | always | signed by a CA of `sslrootcert` |
//! | `verify-full` | always | signed by it and issued for the host connected to |
//!
//! `prefer` is libpq's default, kept so that a destination that works with
//! `psql` works here: it encrypts when the server can, but cannot tell the
//! server from an impostor. Over any network not your own, use
//! `verify-full`.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub const ACCEPTED: &str = "disable, prefer, require, verify-ca, verify-full";

    /// Parses a value of `sslmode` (or `PGSSLMODE`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// Whether the server's certificate is checked against a CA.
    pub fn verifies(self) -> bool {
        matches!(self, Self::VerifyCa | Self::VerifyFull)
    }

    /// What tokio-postgres is told: whether TLS is tried, required or not.
    pub fn negotiation(self) -> tokio_postgres::config::SslMode {
        match self {
            Self::Disable => tokio_postgres::config::SslMode::Disable,
            Self::Prefer => tokio_postgres::config::SslMode::Prefer,
            _ => tokio_postgres::config::SslMode::Require,
        }
    }
}

/// Where the trusted CAs come from (`sslrootcert`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    /// None given (and no `~/.postgresql/root.crt`).
    None,
    /// A PEM file of CA certificates.
    File(PathBuf),
    /// `sslrootcert=system`: the operating system's trusted CAs.
    System,
}

/// The TLS settings of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    pub roots: Roots,
}

impl Tls {
    /// The roots, for messages.
    pub fn roots_name(&self) -> String {
        match &self.roots {
            Roots::None => "none".into(),
            Roots::File(p) => p.display().to_string(),
            Roots::System => "system".into(),
        }
    }

    /// The rustls connector for these settings.
    ///
    /// # Errors
    /// When the root certificates cannot be read.
    pub fn connector(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let algorithms = provider.signature_verification_algorithms;
        let roots = self.root_store()?;
        let verifier: Arc<dyn ServerCertVerifier> = match (self.mode, roots) {
            (SslMode::VerifyFull, Some(roots)) => build(roots, &provider)?,
            (SslMode::VerifyCa | SslMode::Require, Some(roots)) => {
                Arc::new(AnyName { inner: build(roots, &provider)? })
            }
            (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
                return Err(format!("sslmode={} needs the CA's certificate: give sslrootcert=FILE", self.mode.as_str()))
            }
            (_, _) => Arc::new(Unchecked(algorithms)),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }

    fn root_store(&self) -> Result<Option<RootCertStore>, String> {
        let mut store = RootCertStore::empty();
        match &self.roots {
            Roots::None => return Ok(None),
            Roots::File(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(Iterator::collect::<Result<Vec<_>, _>>)
                    .map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
                let (added, _) = store.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(format!("sslrootcert {} holds no CA certificate", path.display()));
                }
            }
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                store.add_parsable_certificates(found.certs);
                if store.is_empty() {
                    return Err("sslrootcert=system: this system has no trusted CA certificates".into());
                }
            }
        }
        Ok(Some(store))
    }
}

fn build(roots: RootCertStore, provider: &Arc<CryptoProvider>) -> Result<Arc<dyn ServerCertVerifier>, String> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .build()
        .map(|v| v as Arc<dyn ServerCertVerifier>)
        .map_err(|e| e.to_string())
}

/// `verify-ca`: the chain is checked, the name is not (libpq's meaning).
#[derive(Debug)]
struct AnyName {
    inner: Arc<dyn ServerCertVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.inner.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            // The name is checked after the chain: this error means the chain passed.
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a CA: encrypted, the certificate taken
/// as it is (libpq's meaning). The handshake's signatures are still
/// checked, so the session is with the holder of the certificate's key.
#[derive(Debug)]
struct Unchecked(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifying_modes_need_a_ca() {
        for mode in [SslMode::VerifyCa, SslMode::VerifyFull] {
            let err = Tls { mode, roots: Roots::None }.connector().err().expect("refused");
            assert!(err.contains("sslrootcert"), "{err}");
        }
        for mode in [SslMode::Disable, SslMode::Prefer, SslMode::Require] {
            assert!(Tls { mode, roots: Roots::None }.connector().is_ok());
        }
        let missing = Tls { mode: SslMode::VerifyFull, roots: Roots::File("/nonexistent/ca.pem".into()) };
        assert!(missing.connector().err().expect("refused").contains("/nonexistent/ca.pem"));
    }
}
