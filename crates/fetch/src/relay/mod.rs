//! A guarding forward proxy on loopback: whatever reaches it, it sends on
//! only to an address the address policy allows, and it names that
//! address, never the host name, to whatever comes after it.
//!
//! It speaks the two forms a client uses with an HTTP proxy: `CONNECT
//! host:port` (a tunnel, for https and WebSockets) and an absolute-form
//! request (`GET http://host/path`, for plain http). For each it resolves
//! the host itself, through the crawl's [`PolicyResolver`] (`--resolve`
//! rules, the DNS cache, the blocked ranges), and refuses with 403 what
//! the policy refuses. Then, by its [`Upstream`]:
//! - **direct**: it connects to the checked address itself. The renderer
//!   sends all of Chromium's traffic through one (`render/`), so nothing a
//!   page does (a WebSocket, a worker's fetch, a preconnect) reaches an
//!   address the crawl may not reach.
//! - **through a proxy**: it asks that proxy for the checked address:
//!   `CONNECT 203.0.113.7:443`, or `GET http://203.0.113.7:80/path` with
//!   the `Host` header of the name. TLS inside a tunnel is the client's
//!   own, so SNI and certificate checks are still for the name. The
//!   proxied exchange (`proxy/`) sends each request through one, so a
//!   proxy is never handed a name it would resolve again: a DNS answer
//!   that changed since the check (rebinding) cannot move the request.
//!
//! An absolute-form request is sent with `Connection: close`, and its
//! answer goes back with it: the next request comes on a new connection,
//! checked again.
//!
//! It serves its own client only (docs/src/security.md): every request
//! must carry `Proxy-Authorization` with the relay's secret, made afresh
//! for each relay (user [`USER`], password [`Relay::password`]); anything
//! else gets `407` and goes nowhere, so no other process on the machine can
//! use it as an open proxy, nor have it add an upstream proxy's
//! credentials to its requests. The crawler's HTTP client sends the secret
//! with each request; Chromium is handed it when a tab's request is
//! challenged, through the DevTools protocol (`render/`). What Chromium
//! sends from outside its tabs' sessions (pop-ups, shared workers,
//! WebSockets) it does not authenticate: refused (docs/src/security.md).

mod upstream;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use url::Url;

use super::resolve::{PolicyResolver, ResolveError};
pub use upstream::{ProxyHop, Upstream};

/// The user name a relay's clients authenticate as.
pub const USER: &str = "layercrawl";

/// A fresh secret: 32 random bytes from the kernel, as hex.
fn secret() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The longest request or response head read.
const MAX_HEAD: usize = 64 << 10;

/// A stream either way: a TCP connection, or TLS over one.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A relay bound to `127.0.0.1:ephemeral`; it serves from the first
/// [`Relay::serve`] until it is dropped.
pub struct Relay {
    addr: SocketAddr,
    /// The secret its clients authenticate with.
    password: String,
    listener: Mutex<Option<std::net::TcpListener>>,
    task: OnceLock<tokio::task::AbortHandle>,
    ctx: Arc<Ctx>,
}

struct Ctx {
    /// `Basic base64(USER:secret)`: the one `Proxy-Authorization` served.
    expected: String,
    resolver: PolicyResolver,
    upstream: Upstream,
    connect_timeout: Duration,
    /// The run's fence: once it runs out the relay takes no connection and
    /// drops those it carries (docs/src/cluster.md).
    fence: OnceLock<Arc<crate::fence::Fence>>,
}

impl Relay {
    /// Binds the relay (no runtime needed yet).
    ///
    /// # Errors
    /// When no loopback port can be bound.
    pub fn bind(resolver: PolicyResolver, upstream: Upstream, connect_timeout: Duration) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let password = secret()?;
        let expected = {
            use base64::Engine as _;
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{password}")))
        };
        Ok(Self {
            addr: listener.local_addr()?,
            password,
            listener: Mutex::new(Some(listener)),
            task: OnceLock::new(),
            ctx: Arc::new(Ctx { expected, resolver, upstream, connect_timeout, fence: OnceLock::new() }),
        })
    }

    /// The password its clients send (as user [`USER`]): this relay's own,
    /// never written anywhere.
    #[must_use]
    pub fn password(&self) -> &str {
        &self.password
    }

    /// Where clients reach it.
    #[must_use]
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give a client as its proxy.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Carries nothing once `fence` has run out (the first fence given
    /// counts).
    pub fn set_fence(&self, fence: &Arc<crate::fence::Fence>) {
        let _ = self.ctx.fence.set(Arc::clone(fence));
    }

    /// Starts serving on the current tokio runtime, the first time it is
    /// called; later calls do nothing.
    ///
    /// # Errors
    /// Outside a runtime, or when the listener cannot be registered.
    pub fn serve(&self) -> Result<(), String> {
        if self.task.get().is_some() {
            return Ok(());
        }
        let Some(std) = self.listener.lock().unwrap_or_else(PoisonError::into_inner).take() else {
            return Ok(());
        };
        let listener = tokio::net::TcpListener::from_std(std).map_err(|e| format!("relay {}: {e}", self.addr))?;
        let ctx = Arc::clone(&self.ctx);
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let ctx = Arc::clone(&ctx);
                tokio::spawn(async move {
                    let fence = ctx.fence.get().cloned();
                    let result = match fence {
                        Some(f) if !f.holds() => Err("the run's lease ran out: connection refused".to_string()),
                        Some(f) => tokio::select! {
                            r = ctx.handle(conn) => r,
                            () = f.ran_out() => Err("the run's lease ran out: connection dropped".to_string()),
                        },
                        None => ctx.handle(conn).await,
                    };
                    if let Err(e) = result {
                        tracing::debug!("relay: {e}");
                    }
                });
            }
        });
        // Only one caller took the listener, so only one task sets this.
        let _ = self.task.set(task.abort_handle());
        Ok(())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(task) = self.task.get() {
            task.abort();
        }
    }
}

/// A request head as read: its request line's parts and its header lines.
struct Head {
    method: String,
    target: String,
    version: String,
    headers: Vec<(String, String)>,
}

impl Head {
    fn parse(raw: &[u8]) -> Result<Self, String> {
        let text = std::str::from_utf8(raw).map_err(|_| "a request head that is not UTF-8".to_string())?;
        let mut lines = text.split("\r\n").filter(|l| !l.is_empty());
        let line = lines.next().ok_or("an empty request")?;
        let mut parts = line.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("a bad request line {line:?}"));
        };
        let headers = lines
            .map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string())))
            .collect::<Option<Vec<_>>>()
            .ok_or("a bad header line")?;
        Ok(Self { method: method.into(), target: target.into(), version: version.into(), headers })
    }
}

impl Ctx {
    async fn handle(&self, mut client: TcpStream) -> Result<(), String> {
        let (raw, rest) = read_head(&mut client).await?;
        let head = Head::parse(&raw)?;
        if !self.authorized(&head) {
            // Before anything is resolved, connected to or sent on.
            return refuse(&mut client, 407, "this relay serves its crawl's own clients only").await;
        }
        if head.method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = split_authority(&head.target).ok_or_else(|| format!("CONNECT {}", head.target))?;
            let Some(addr) = self.checked(&mut client, host, port, 443).await? else { return Ok(()) };
            let mut server = match self.upstream.tunnel(addr, self.connect_timeout).await {
                Ok(s) => s,
                Err(e) => return refuse(&mut client, 502, &e).await,
            };
            if matches!(self.upstream, Upstream::Direct) {
                client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.map_err(|e| e.to_string())?;
            }
            // Through a proxy, its own answer to the CONNECT goes back as it is.
            server.write_all(&rest).await.map_err(|e| e.to_string())?;
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            return Ok(());
        }
        let url = match Url::parse(&head.target) {
            Ok(u) if u.scheme() == "http" && u.host_str().is_some() => u,
            _ => return refuse(&mut client, 400, "only CONNECT and absolute-form http:// requests").await,
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let host = url.host_str().unwrap_or_default();
        let Some(addr) = self.checked(&mut client, host, port, 80).await? else { return Ok(()) };
        let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let mut server = match self.upstream.open(addr, self.connect_timeout).await {
            Ok(s) => s,
            Err(e) => return refuse(&mut client, 502, &e).await,
        };
        let out = request_head(&head, &url, addr, path, &self.upstream);
        server.write_all(out.as_bytes()).await.map_err(|e| e.to_string())?;
        server.write_all(&rest).await.map_err(|e| e.to_string())?;
        exchange(client, server).await
    }

    /// Whether `head` carries this relay's secret (compared in constant
    /// time).
    fn authorized(&self, head: &Head) -> bool {
        let given = head.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("proxy-authorization")).map(|(_, v)| v);
        given.is_some_and(|v| {
            let (a, b) = (v.trim().as_bytes(), self.expected.as_bytes());
            a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
        })
    }

    /// The address to send `host:port` to, or `None` after refusing it to
    /// the client.
    async fn checked(
        &self,
        client: &mut TcpStream,
        host: &str,
        port: u16,
        default: u16,
    ) -> Result<Option<SocketAddr>, String> {
        match self.resolver.target(host, port, default).await {
            Ok(addrs) => match addrs.first() {
                Some(a) => Ok(Some(*a)),
                None => refuse(client, 502, &format!("{host}: no address")).await.map(|()| None),
            },
            Err(e @ ResolveError::Blocked { .. }) => {
                tracing::debug!("relay refused {host}:{port}: {e}");
                refuse(client, 403, &e.to_string()).await.map(|()| None)
            }
            Err(e) => refuse(client, 502, &e.to_string()).await.map(|()| None),
        }
    }
}

/// The head sent on for an absolute-form request: to the checked address
/// (origin-form when direct, absolute-form with the address through a
/// proxy), its own headers but the hop-by-hop ones, `Connection: close`.
fn request_head(head: &Head, url: &Url, addr: SocketAddr, path: &str, upstream: &Upstream) -> String {
    let target = match upstream {
        Upstream::Direct => path.to_string(),
        Upstream::Proxy(_) => format!("http://{addr}{path}"),
    };
    let mut out = format!("{} {target} {}\r\n", head.method, head.version);
    let hop = ["connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "upgrade"];
    let mut host = false;
    for (k, v) in &head.headers {
        if hop.iter().any(|h| k.eq_ignore_ascii_case(h)) {
            continue;
        }
        host |= k.eq_ignore_ascii_case("host");
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    if !host {
        let name = url.host_str().unwrap_or_default();
        match url.port() {
            Some(p) => out.push_str(&format!("Host: {name}:{p}\r\n")),
            None => out.push_str(&format!("Host: {name}\r\n")),
        }
    }
    if let Some(a) = upstream.authorization() {
        out.push_str(&format!("Proxy-Authorization: {a}\r\n"));
    }
    out.push_str("Connection: close\r\n\r\n");
    out
}

/// Carries one request's body up and its answer down, the answer's head
/// saying `Connection: close`; ends when the answer does.
async fn exchange(client: TcpStream, server: Box<dyn Io>) -> Result<(), String> {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = tokio::io::split(server);
    // Aborted when this future ends or is dropped (the fence ran out).
    let up = AbortOnDrop(tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    }));
    let down = async {
        let (raw, rest) = read_head(&mut server_read).await?;
        client_write.write_all(&closing(&raw)).await.map_err(|e| e.to_string())?;
        client_write.write_all(&rest).await.map_err(|e| e.to_string())?;
        tokio::io::copy(&mut server_read, &mut client_write).await.map_err(|e| e.to_string())?;
        client_write.shutdown().await.map_err(|e| e.to_string())
    };
    let result = down.await;
    drop(up);
    result
}

/// A task aborted when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A response head with its hop-by-hop connection headers replaced by
/// `Connection: close`.
fn closing(raw: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    let mut out = String::with_capacity(text.len() + 20);
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or_default().trim();
        if ["connection", "keep-alive", "proxy-connection"].iter().any(|h| name.eq_ignore_ascii_case(h)) {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    out.into_bytes()
}

/// Reads up to the end of a head (`\r\n\r\n`): the head, and whatever
/// came after it in the same reads.
async fn read_head<R: AsyncRead + Unpin>(r: &mut R) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(format!("a head longer than {MAX_HEAD} bytes"));
        }
        let n = r.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before a whole head".into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Answers `status` with `why`, and ends the connection.
async fn refuse(client: &mut TcpStream, status: u16, why: &str) -> Result<(), String> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        407 => "Proxy Authentication Required",
        _ => "Bad Gateway",
    };
    let challenge = if status == 407 { "Proxy-Authenticate: Basic realm=\"layercrawl\"\r\n" } else { "" };
    let body = format!("{why}\n");
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\n{challenge}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes()).await.map_err(|e| e.to_string())?;
    let _ = client.shutdown().await;
    Ok(())
}

/// `host:port` or `[v6]:port`, as a CONNECT names its target.
fn split_authority(target: &str) -> Option<(&str, u16)> {
    let (host, port) = target.rsplit_once(':')?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    (!host.is_empty() && !host.contains(['/', '@'])).then_some(())?;
    Some((host, port.parse().ok()?))
}

#[cfg(test)]
pub(crate) mod tests;
