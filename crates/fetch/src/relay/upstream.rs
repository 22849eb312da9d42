//! Where the relay sends what it checked: straight to the address, or
//! through the operator's forward proxy, named by that address.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use url::Url;

use super::Io;

/// What comes after the relay.
pub enum Upstream {
    /// The relay connects to the checked address itself.
    Direct,
    /// It asks this proxy for the checked address.
    Proxy(ProxyHop),
}

/// One forward proxy (`http://` or `https://`), with the
/// `Proxy-Authorization` value to send it, if any.
pub struct ProxyHop {
    host: String,
    port: u16,
    tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
    authorization: Option<String>,
}

impl ProxyHop {
    /// A hop to the proxy at `url` (no userinfo), sending `authorization`
    /// (`Basic …`) with each request.
    ///
    /// # Errors
    /// A URL without host, or a TLS setup that fails for an `https` proxy.
    pub fn new(url: &Url, authorization: Option<String>) -> Result<Self, String> {
        let host = url.host_str().ok_or("a proxy URL without host")?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = url.port_or_known_default().unwrap_or(80);
        let tls = if url.scheme() == "https" {
            let name =
                rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| format!("proxy host {host}: {e}"))?;
            Some((connector()?, name))
        } else {
            None
        };
        Ok(Self { host, port, tls, authorization })
    }

    async fn connect(&self, timeout: Duration) -> Result<Box<dyn Io>, String> {
        let at = format!("proxy {}:{}", self.host, self.port);
        let tcp = tokio::time::timeout(timeout, TcpStream::connect((self.host.as_str(), self.port)))
            .await
            .map_err(|_| format!("{at}: connect timed out"))?
            .map_err(|e| format!("{at}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        match &self.tls {
            None => Ok(Box::new(tcp)),
            Some((tls, name)) => {
                let s = tls.connect(name.clone(), tcp).await.map_err(|e| format!("{at}: TLS: {e}"))?;
                Ok(Box::new(s))
            }
        }
    }
}

impl Upstream {
    /// The `Proxy-Authorization` value sent with requests, if any.
    pub(super) fn authorization(&self) -> Option<&str> {
        match self {
            Self::Direct => None,
            Self::Proxy(hop) => hop.authorization.as_deref(),
        }
    }

    /// A connection on which the client's tunnel to `addr` starts: the
    /// address itself, or a proxy that was just sent `CONNECT addr` (its
    /// answer still to read).
    pub(super) async fn tunnel(&self, addr: SocketAddr, timeout: Duration) -> Result<Box<dyn Io>, String> {
        match self {
            Self::Direct => direct(addr, timeout).await,
            Self::Proxy(hop) => {
                let mut s = hop.connect(timeout).await?;
                let mut head = format!("CONNECT {addr} HTTP/1.1\r\nHost: {addr}\r\n");
                if let Some(a) = &hop.authorization {
                    head.push_str(&format!("Proxy-Authorization: {a}\r\n"));
                }
                head.push_str("\r\n");
                s.write_all(head.as_bytes()).await.map_err(|e| e.to_string())?;
                Ok(s)
            }
        }
    }

    /// A connection to send one plain-http request for `addr` on.
    pub(super) async fn open(&self, addr: SocketAddr, timeout: Duration) -> Result<Box<dyn Io>, String> {
        match self {
            Self::Direct => direct(addr, timeout).await,
            Self::Proxy(hop) => hop.connect(timeout).await,
        }
    }
}

async fn direct(addr: SocketAddr, timeout: Duration) -> Result<Box<dyn Io>, String> {
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| format!("{addr}: connect timed out"))?
        .map_err(|e| format!("{addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    Ok(Box::new(tcp))
}

/// TLS to a proxy, its certificate checked as the HTTP client checks a
/// server's (the platform's verifier and roots).
fn connector() -> Result<tokio_rustls::TlsConnector, String> {
    let provider = layercrawl_store::tls::provider();
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider)).map_err(|e| e.to_string())?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}
