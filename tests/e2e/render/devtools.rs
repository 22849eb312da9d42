//! How the crawler drives Chromium (docs/src/security.md): over a pipe,
//! with no DevTools port that another local user could reach.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{chromium_processes, common, read_docs, web};

/// The TCP sockets in LISTEN state that process `pid` holds, as
/// `address:port` (hex, as /proc writes them). Its socket inodes are read
/// from /proc/PID/fd and looked up in the tables of its own network
/// namespace (/proc/PID/net/tcp and tcp6; state 0A is LISTEN).
fn listening(pid: u32) -> Vec<String> {
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    let inodes: BTreeSet<String> = std::fs::read_dir(proc.join("fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?.to_string_lossy().into_owned();
            Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let mut out = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(proc.join("net").join(table)).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.contains(f[9]) {
                out.push(f[1].to_string());
            }
        }
    }
    out
}

/// The start time of process `pid` (/proc/PID/stat's 22nd field), to tell
/// it from a later process given the same number.
fn started(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// During a `--render always` crawl, no process of the browser (every
/// process descended from the crawler) holds a listening TCP socket: the
/// DevTools protocol goes over a pipe, and the crawler's one-connection
/// bridge to it (`fetch/render/pipe.rs`) takes no connection once the
/// crawler's client is on it. After the crawl, no process of the browser
/// is left.
#[test]
fn chromium_listens_on_no_tcp_port_and_the_devtools_bridge_takes_one_connection() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let data = web.dir("devtools");
    let args = web.run_args(&data, 1, &["--delay", "0", "--render", "always", "--chromium", &browser]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&args)
        .env("RUST_LOG", "layercrawl_fetch::render=debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("crawl");
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let reading = {
        let (log, stderr) = (Arc::clone(&log), child.stderr.take().expect("stderr"));
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                log.lock().expect("log").push(line);
            }
        })
    };
    let crawler = child.id();
    let (mut family, mut seen) = (BTreeSet::new(), BTreeMap::<u32, (u64, String)>::new());
    let (mut listens, mut bridges) = (BTreeSet::new(), BTreeMap::<String, String>::new());
    while child.try_wait().expect("wait").is_none() {
        let browsers = chromium_processes(crawler, &mut family);
        for &pid in family.iter().filter(|p| **p != crawler) {
            let cmd = browsers.iter().find(|b| b.0 == pid).map(|b| b.1.clone()).unwrap_or_default();
            if let Some(start) = started(pid) {
                seen.entry(pid).or_insert((start, cmd.clone()));
            }
            for socket in listening(pid) {
                listens.insert(format!("process {pid} ({cmd}) listens on {socket}"));
            }
        }
        // Each bridge the log names, once: it must refuse a connection now.
        let named: Vec<String> = log
            .lock()
            .expect("log")
            .iter()
            .filter_map(|l| Some(l.split("bridged once on ").nth(1)?.split([' ', ')']).next()?.to_string()))
            .collect();
        for addr in named {
            bridges.entry(addr).or_insert_with_key(|addr| match std::net::TcpStream::connect(addr) {
                Ok(_) => "accepted a connection".to_string(),
                Err(e) => format!("{:?}", e.kind()),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("wait");
    reading.join().expect("log reader");
    let log = log.lock().expect("log").join("\n");
    assert!(status.success(), "the crawl failed:\n{log}");
    assert!(seen.values().any(|(_, cmd)| cmd.contains("--remote-debugging")), "no Chromium seen during the crawl");
    assert!(
        listens.is_empty(),
        "a process of the browser listens on TCP:\n{}",
        listens.into_iter().collect::<Vec<_>>().join("\n")
    );
    assert!(!bridges.is_empty(), "the log names no DevTools bridge:\n{log}");
    for (addr, answer) in &bridges {
        assert_eq!(answer, "ConnectionRefused", "the bridge on {addr}, once the crawler's client was on it");
    }
    assert!(read_docs(&data).iter().any(|d| d.rendered), "the crawl rendered its pages");
    // No orphan: every process of the browser ends with the crawl.
    let deadline = Instant::now() + Duration::from_secs(5);
    let left = loop {
        let left: Vec<String> = seen
            .iter()
            .filter(|(pid, (start, _))| started(**pid) == Some(*start))
            .map(|(pid, (_, cmd))| format!("{pid} {cmd}"))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            break left;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(left.is_empty(), "processes of the browser outlived the crawl by 5 s:\n{}", left.join("\n"));
}
