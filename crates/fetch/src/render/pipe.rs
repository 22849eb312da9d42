//! Chromium driven over a pipe, with no DevTools port (docs/src/security.md).
//!
//! Started with `--remote-debugging-port`, Chromium listens on a loopback
//! TCP port, and the DevTools protocol has no authentication: any local
//! user could read `/json/version` there and take the browser over.
//! Started with `--remote-debugging-pipe`, it listens on nothing: it reads
//! the protocol's commands from its descriptor 3 and writes its answers
//! and events to its descriptor 4, each message JSON ended by a NUL byte.
//!
//! chromiumoxide speaks the protocol over a WebSocket only, so this module
//! bridges the two. The bridge is a WebSocket server on 127.0.0.1 (an
//! ephemeral port) that takes one connection: the first whose request path
//! is the secret made for this launch (`/devtools/browser/` and 32 random
//! bytes as hex, compared in constant time). Any other path gets 404 and
//! never reaches the browser. Once that connection is made the listener is
//! closed, so the port refuses anything after it. The bridge then carries
//! each WebSocket message to the pipe and each pipe message back, until
//! either side ends.
//!
//! The process is started here, through Chromium's launcher (`launch.rs`).
//! Between fork and exec, the two pipes are put on descriptors 3 and 4,
//! and every descriptor above 4 is marked close-on-exec. So nothing else
//! of the crawler's reaches the browser: not its store's connections, nor
//! the relay's listener. The launcher's `exec`s (sh, setpriv, env) keep 3
//! and 4 open, as none of them closes a descriptor it did not open. The
//! browser is killed and reaped when its [`Process`] is dropped.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd as _, OwnedFd, RawFd};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_tungstenite::tokio::TokioAdapter;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::http;
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::WebSocketStream;
use chromiumoxide::browser::Browser;
use chromiumoxide::handler::{Handler, HandlerConfig};
use futures::StreamExt as _;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::unix::pipe;
use tokio::net::{TcpListener, TcpStream};

/// How long a started browser has to answer its first command (as long as
/// chromiumoxide gave a launched one to print its port).
const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a connection to the bridge may take over its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Handshakes the bridge runs at once; connections beyond are dropped.
const MAX_HANDSHAKES: usize = 32;
/// The start of the browser's error output kept for a launch's error.
const STDERR_KEPT: usize = 16 << 10;
/// The call id of the command that checks the browser answers (Chromium
/// takes 32-bit ids only). It is answered before the bridge carries
/// anything, so it meets none of the client's ids.
const PROBE_ID: u64 = 0x7fff_fff0;

/// A browser process on a pipe: killed and reaped when dropped.
pub(super) struct Process {
    child: tokio::process::Child,
    /// The bridge's task, aborted when the browser goes.
    bridge: Option<tokio::task::JoinHandle<()>>,
}

/// The crawler's ends of the browser's pipes.
pub(super) struct Ends {
    /// What the browser reads on its descriptor 3.
    to: pipe::Sender,
    /// What the browser writes on its descriptor 4.
    from: BufReader<pipe::Receiver>,
}

/// The start of the browser's error output, read as it comes: the pipe is
/// read to its end so that the browser never blocks on it.
struct Stderr {
    kept: Arc<Mutex<Vec<u8>>>,
    task: tokio::task::JoinHandle<()>,
}

/// chromiumoxide's settings for its handler, as its own launch set them
/// from the browser's default settings.
pub(super) fn handler_config() -> HandlerConfig {
    HandlerConfig { viewport: Some(chromiumoxide::handler::viewport::Viewport::default()), ..HandlerConfig::default() }
}

/// Starts `program` (Chromium's launcher) with `args` and
/// `--remote-debugging-pipe`, waits until it answers, and connects
/// chromiumoxide to it through the bridge. Also returns the bridge's
/// address, already closed.
///
/// # Errors
/// When the process cannot be started, it ends or does not answer within
/// 20 s (the error then ends with the start of its error output), or the
/// bridge cannot be set up.
pub(super) async fn start(
    program: &Path,
    args: &[String],
    config: HandlerConfig,
) -> Result<(Browser, Handler, Process, SocketAddr), String> {
    let mut args = args.to_vec();
    args.push("--remote-debugging-pipe".into());
    let (mut process, mut ends, stderr) = spawn(program, &args)?;
    if let Err(e) = process.ready(&mut ends, READY_TIMEOUT).await {
        drop(process);
        return Err(format!("{e}{}", stderr.finish().await));
    }
    let (url, addr, connected, task) = bridge(ends).await?;
    process.bridge = Some(task);
    let (browser, handler) =
        Browser::connect_with_config(url, config).await.map_err(|e| format!("cannot connect to its bridge: {e}"))?;
    // Its listener is closed once the client is on.
    tokio::time::timeout(HANDSHAKE_TIMEOUT, connected)
        .await
        .map_err(|_| "its bridge did not close".to_string())?
        .map_err(|_| "its bridge ended".to_string())?;
    Ok((browser, handler, process, addr))
}

/// Spawns `program` with `args`, the pipes on its descriptors 3 and 4.
fn spawn(program: &Path, args: &[String]) -> Result<(Process, Ends, Stderr), String> {
    let io = |e: std::io::Error| format!("cannot make the browser's pipes: {e}");
    // (Both ends close-on-exec; the child's two are duplicated onto 3 and 4.)
    let (commands, to) = std::io::pipe().map_err(io)?;
    let (from, events) = std::io::pipe().map_err(io)?;
    let (commands, events) = (OwnedFd::from(commands), OwnedFd::from(events));
    let (r, w) = (commands.as_raw_fd(), events.as_raw_fd());
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
    // SAFETY: the closure runs in the child between fork and exec, and calls
    // only fcntl, dup2 and close_range, which are async-signal-safe, on
    // descriptors the child holds.
    unsafe {
        cmd.pre_exec(move || onto_3_and_4(r, w));
    }
    let mut child = cmd.spawn().map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    // The browser's ends are its own now: the pipes end when it does.
    drop((commands, events));
    let to = pipe::Sender::from_owned_fd(to.into()).map_err(io)?;
    let from = BufReader::new(pipe::Receiver::from_owned_fd(from.into()).map_err(io)?);
    let kept = Arc::new(Mutex::new(Vec::new()));
    let task = {
        let (kept, mut err) = (Arc::clone(&kept), child.stderr.take().ok_or("no error output")?);
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8 << 10];
            while let Ok(n @ 1..) = err.read(&mut buf).await {
                let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
                let room = STDERR_KEPT.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
            }
        })
    };
    Ok((Process { child, bridge: None }, Ends { to, from }, Stderr { kept, task }))
}

/// In the child: `r` onto 3, `w` onto 4, every descriptor above 4
/// close-on-exec.
fn onto_3_and_4(r: RawFd, w: RawFd) -> std::io::Result<()> {
    let check = |n: libc::c_int| if n < 0 { Err(std::io::Error::last_os_error()) } else { Ok(n) };
    // Copied above 4 first: either may be 3 or 4 already, and the first
    // dup2 would close the other.
    // SAFETY: fcntl and dup2 on descriptors this process holds.
    let (r, w) = unsafe {
        (check(libc::fcntl(r, libc::F_DUPFD_CLOEXEC, 10))?, check(libc::fcntl(w, libc::F_DUPFD_CLOEXEC, 10))?)
    };
    // SAFETY: as above; dup2's copy is left open across exec.
    unsafe {
        check(libc::dup2(r, 3))?;
        check(libc::dup2(w, 4))?;
    }
    // SAFETY: close_range only flags descriptors (Linux 5.11 and later).
    let flagged = unsafe { libc::syscall(libc::SYS_close_range, 5u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
    if flagged != 0 {
        // An older kernel: one at a time, up to the process's limit.
        // SAFETY: getrlimit fills the struct; fcntl on a descriptor not
        // open fails harmlessly.
        unsafe {
            let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut lim) == 0 { lim.rlim_cur } else { 1024 };
            for fd in 5..libc::c_int::try_from(top.min(1 << 16)).unwrap_or(1024) {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

impl Process {
    /// The process's id, while it runs.
    #[cfg(test)]
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits until the browser answers a first command.
    async fn ready(&mut self, ends: &mut Ends, timeout: Duration) -> Result<(), String> {
        let probe = format!(r#"{{"id":{PROBE_ID},"method":"Browser.getVersion"}}"#);
        let answered = async {
            write_frame(&mut ends.to, probe.as_bytes()).await.map_err(|e| match e.kind() {
                std::io::ErrorKind::BrokenPipe => "it ended before answering".to_string(),
                _ => format!("it took no command: {e}"),
            })?;
            let mut buf = Vec::new();
            loop {
                match read_frame(&mut ends.from, &mut buf).await {
                    Ok(true) => {}
                    Ok(false) => return Err("it ended before answering".to_string()),
                    Err(e) => return Err(format!("cannot read its pipe: {e}")),
                }
                let reply = serde_json::from_slice::<serde_json::Value>(&buf).unwrap_or_default();
                match reply.get("id").and_then(serde_json::Value::as_u64) {
                    Some(PROBE_ID) => return Ok(()),
                    // A command it could not read at all.
                    None if reply.get("error").is_some() => {
                        return Err(format!("it refused its first command: {reply}"))
                    }
                    _ => {}
                }
            }
        };
        tokio::select! {
            r = answered => r,
            status = self.child.wait() => Err(match status {
                Ok(s) => format!("it ended before answering ({s})"),
                Err(e) => format!("cannot wait for it: {e}"),
            }),
            () = tokio::time::sleep(timeout) => Err(format!("no answer within {timeout:?}")),
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(task) = self.bridge.take() {
            task.abort();
        }
        if !matches!(self.child.try_wait(), Ok(None)) {
            return;
        }
        let _ = self.child.start_kill();
        // Reaped here, not left to the runtime: the browser goes with its
        // engine. A killed process goes at once; this waits 2 s at most.
        let until = Instant::now() + Duration::from_secs(2);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Stderr {
    /// What the browser wrote, after it ended (waiting 1 s at most), as
    /// the end of an error message.
    async fn finish(self) -> String {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.task).await;
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let text = String::from_utf8_lossy(&kept);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(": {text}")
        }
    }
}

/// Writes one message and its NUL.
async fn write_frame(to: &mut pipe::Sender, message: &[u8]) -> std::io::Result<()> {
    let mut frame = Vec::with_capacity(message.len() + 1);
    frame.extend_from_slice(message);
    frame.push(0);
    to.write_all(&frame).await
}

/// Reads one message into `buf` (its NUL left off); false at the pipe's
/// end, a message cut short included.
async fn read_frame(from: &mut BufReader<pipe::Receiver>, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    from.read_until(0, buf).await?;
    if buf.pop() != Some(0) {
        return Ok(false);
    }
    Ok(true)
}

/// Binds the bridge to the pipes `ends`: its URL (the secret in its path),
/// its address, a signal sent once its one connection is made and its
/// listener closed, and its task.
///
/// # Errors
/// When no port can be bound or no secret made.
async fn bridge(
    ends: Ends,
) -> Result<(String, SocketAddr, tokio::sync::oneshot::Receiver<()>, tokio::task::JoinHandle<()>), String> {
    let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| format!("cannot bind its bridge: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("cannot bind its bridge: {e}"))?;
    let path = format!("/devtools/browser/{}", secret().map_err(|e| format!("no secret for its bridge: {e}"))?);
    let url = format!("ws://{addr}{path}");
    let (tx, rx) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let Some(ws) = accept_one(listener, path).await else { return };
        let _ = tx.send(());
        carry(ws, ends).await;
    });
    Ok((url, addr, rx, task))
}

/// 32 random bytes from the kernel, as hex.
fn secret() -> std::io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

type Socket = WebSocketStream<TokioAdapter<TcpStream>>;

fn ws_config() -> WebSocketConfig {
    // As chromiumoxide's client: a page's DOM comes whole in one message.
    WebSocketConfig::default().max_message_size(None).max_frame_size(None)
}

/// The first connection to `listener` whose request asks for `path`; the
/// listener is closed when it returns (dropped), and the handshakes still
/// running are dropped with it.
async fn accept_one(listener: TcpListener, path: String) -> Option<Socket> {
    let mut handshakes = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: try again shortly.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if handshakes.len() >= MAX_HANDSHAKES {
                    continue;
                }
                let path = path.clone();
                handshakes.spawn(async move {
                    // (The error's type is tungstenite's, for its callback.)
                    #[allow(clippy::result_large_err)]
                    let check = move |req: &Request, resp: Response| -> Result<Response, ErrorResponse> {
                        let asked = req.uri().path_and_query().map_or("", |p| p.as_str());
                        if same_secret(asked.as_bytes(), path.as_bytes()) {
                            Ok(resp)
                        } else {
                            let mut refused = ErrorResponse::new(None);
                            *refused.status_mut() = http::StatusCode::NOT_FOUND;
                            Err(refused)
                        }
                    };
                    let shake = async_tungstenite::tokio::accept_hdr_async_with_config(stream, check, Some(ws_config()));
                    tokio::time::timeout(HANDSHAKE_TIMEOUT, shake).await.ok()?.ok()
                });
            }
            Some(done) = handshakes.join_next() => {
                if let Ok(Some(ws)) = done {
                    return Some(ws);
                }
            }
        }
    }
}

/// Whether `given` is `want`, in a time that does not tell where they
/// differ.
fn same_secret(given: &[u8], want: &[u8]) -> bool {
    if given.len() != want.len() {
        return false;
    }
    let diff = given.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(diff) == 0
}

/// Carries messages both ways until the client or the browser ends.
async fn carry(ws: Socket, ends: Ends) {
    let (mut sink, mut stream) = ws.split();
    let Ends { mut to, mut from } = ends;
    let commands = async {
        while let Some(Ok(message)) = stream.next().await {
            let sent = match message {
                Message::Text(text) => write_frame(&mut to, text.as_bytes()).await,
                Message::Binary(bytes) => write_frame(&mut to, &bytes).await,
                Message::Close(_) => break,
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => Ok(()),
            };
            if sent.is_err() {
                break;
            }
        }
    };
    let events = async {
        let mut buf = Vec::new();
        while let Ok(true) = read_frame(&mut from, &mut buf).await {
            let Ok(text) = String::from_utf8(std::mem::take(&mut buf)) else { break };
            if sink.send(Message::text(text)).await.is_err() {
                return;
            }
        }
        // The browser ended: so does the client's connection.
        let _ = sink.close(None).await;
    };
    tokio::select! {
        () = commands => {}
        () = events => {}
    }
}

#[cfg(test)]
#[path = "pipe_tests.rs"]
mod tests;
