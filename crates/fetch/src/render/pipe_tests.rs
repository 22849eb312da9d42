//! The pipe and its bridge, with a real process on the other end: a
//! Python program, started through Chromium's launcher (`launch.rs`), that
//! sends back each NUL-framed message it reads on descriptor 3, on 4.

use super::*;

/// Echoes every message it reads on 3 to 4, as it came; ends at 3's end.
const ECHO: &str = r"
import os
buf = b''
while True:
    got = os.read(3, 65536)
    if not got:
        break
    buf += got
    while b'\0' in buf:
        message, buf = buf.split(b'\0', 1)
        out = message + b'\0'
        while out:
            out = out[os.write(4, out):]
";

/// The descriptors process `pid` holds.
fn descriptors(pid: u32) -> Vec<u32> {
    let mut fds: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("its descriptors")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    fds.sort_unstable();
    fds
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_takes_one_connection_on_its_secret_path_and_carries_nul_framed_messages() {
    // A descriptor of the crawler's left open across exec (a duplicate
    // clears close-on-exec): it must not reach the browser. Taken at 10 or
    // above: the lowest free descriptor, which `dup` would give, is 3 when
    // the test process has nothing else open, where the pipe goes anyway.
    // SAFETY: a duplicate of this process's standard error.
    let stray = unsafe { libc::fcntl(2, libc::F_DUPFD, 10) };
    assert!(stray >= 10, "a descriptor above the pipes': {stray}");
    let (bin, profile) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    // As the browser is started: through its launcher, sandboxed (as root,
    // that is through setpriv to user 65534).
    let launcher = super::super::launch::prepare(bin.path(), profile.path(), Path::new("/usr/bin/python3"), true)
        .expect("launcher");
    let (mut process, mut ends, stderr) =
        spawn(&launcher.path, &["-c".to_string(), ECHO.to_string()]).expect("spawn the echo");
    if let Err(e) = process.ready(&mut ends, Duration::from_secs(10)).await {
        panic!("the echo did not answer: {e}{}", stderr.finish().await);
    }
    let pid = process.id().expect("running");
    assert_eq!(descriptors(pid), [0, 1, 2, 3, 4], "the pipes on 3 and 4 through the launcher, nothing else");
    // SAFETY: closes the descriptor dup'ed above.
    unsafe { libc::close(stray) };

    let (url, addr, connected, task) = bridge(ends).await.expect("bridge");
    process.bridge = Some(task);
    assert!(url.starts_with(&format!("ws://{addr}/devtools/browser/")) && url.len() > 64, "{url}");

    // Another path (the secret's last digit changed, none, the port's
    // own listing): 404, and nothing reaches the browser.
    let last = url.chars().last().expect("url");
    let near = format!("{}{}", &url[..url.len() - 1], if last == '0' { '1' } else { '0' });
    for wrong in [near, format!("ws://{addr}/"), format!("ws://{addr}/json/version")] {
        match async_tungstenite::tokio::connect_async(wrong.as_str()).await {
            Err(async_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 404, "{wrong}"),
            other => panic!("{wrong}: {other:?}"),
        }
    }
    let mut plain = TcpStream::connect(addr).await.expect("the bridge listens until its client is on");
    plain.write_all(b"GET /json/version HTTP/1.1\r\nHost: localhost\r\n\r\n").await.expect("ask");
    let mut answer = String::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), plain.read_to_string(&mut answer)).await;
    assert!(!answer.contains("webSocketDebuggerUrl") && !answer.contains(" 200 "), "{answer}");

    let (mut ws, _) = async_tungstenite::tokio::connect_async(url.as_str()).await.expect("the secret path");
    tokio::time::timeout(Duration::from_secs(2), connected).await.expect("closed in time").expect("closed");
    // A second connection, even on the secret path: the port is closed.
    let again = TcpStream::connect(addr).await.map(drop).map_err(|e| e.kind());
    assert_eq!(again, Err(std::io::ErrorKind::ConnectionRefused), "a second connection");
    assert!(async_tungstenite::tokio::connect_async(url.as_str()).await.is_err(), "a second client");

    // Messages both ways, in order, whole: several sent at once, a large
    // one (past the pipe's buffer), characters of several bytes.
    let large = format!(r#"{{"id":2,"result":"{}"}}"#, "x".repeat(3 << 20));
    let sent = [r#"{"id":1,"method":"Browser.getVersion"}"#.to_string(), large, r#"{"text":"été ☃"}"#.to_string()];
    for m in &sent {
        ws.send(Message::text(m.clone())).await.expect("send");
    }
    for m in &sent {
        let got = tokio::time::timeout(Duration::from_secs(10), ws.next()).await.expect("in time");
        match got {
            Some(Ok(Message::Text(t))) => assert!(t.as_str() == m, "got {} bytes for {}", t.len(), m.len()),
            other => panic!("{other:?}"),
        }
    }

    // The client gone, the browser's pipe ends, and the browser with it.
    ws.close(None).await.expect("close");
    let until = Instant::now() + Duration::from_secs(5);
    while matches!(process.child.try_wait(), Ok(None)) && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(matches!(process.child.try_wait(), Ok(Some(_))), "the echo outlived its client");
    drop(process);
}

/// A dropped [`Process`] is killed and reaped: its number is gone, no
/// zombie left.
#[tokio::test]
async fn a_dropped_process_is_killed_and_reaped() {
    let (process, _ends, _stderr) = spawn(Path::new("/bin/sleep"), &["600".to_string()]).expect("spawn");
    let pid = process.id().expect("running");
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(process);
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "process {pid} is still there (or a zombie)");
}

/// A program that ends before answering fails the start, with what it
/// wrote on its error output.
#[tokio::test]
async fn a_browser_that_ends_before_answering_fails_with_its_error_output() {
    let args = ["-c".to_string(), "echo 'No usable sandbox!' >&2; exit 3".to_string()];
    let err = start(Path::new("/bin/sh"), &args, handler_config()).await.err().expect("it never answers");
    assert!(err.contains("ended before answering") && err.contains("No usable sandbox"), "{err}");
}
