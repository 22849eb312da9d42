//! Measuring whole processes for the benchmarks: wall time, CPU time from
//! `wait4`, peak RSS from the process's own VmHWM; and the peer crawlers'
//! Python environment.
#![allow(dead_code)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

/// What one measured process did.
pub struct Measured {
    pub ok: bool,
    pub wall: f64,
    pub cpu: f64,
    pub rss_mb: f64,
    pub stdout: String,
    pub stderr: String,
}

impl Measured {
    pub fn stderr_tail(&self) -> &str {
        let mut at = self.stderr.len().saturating_sub(3000);
        while !self.stderr.is_char_boundary(at) {
            at += 1;
        }
        &self.stderr[at..]
    }
}

/// Runs `cmd` to the end; its own CPU time and peak RSS come from `wait4`.
#[allow(clippy::zombie_processes)] // reaped by wait4, which std cannot see
pub fn run_measured(cmd: &mut Command, out: &Path, err: &Path) -> Measured {
    let t = Instant::now();
    let child = cmd
        .stdout(File::create(out).expect("stdout file"))
        .stderr(File::create(err).expect("stderr file"))
        .spawn()
        .expect("start the process");
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // Peak RSS from the child's own VmHWM, polled until it exits: wait4's
    // ru_maxrss would carry over this process's high-water mark (Linux keeps
    // the parent's at exec), so it is only an upper bound.
    let hwm = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let poll = {
        let hwm = std::sync::Arc::clone(&hwm);
        std::thread::spawn(move || {
            while let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                let kb = status
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok());
                match kb {
                    Some(kb) => hwm.fetch_max(kb, std::sync::atomic::Ordering::Relaxed),
                    None => break, // a zombie: it has exited
                };
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let mut status = 0;
    // SAFETY: wait4 only writes into the two values we pass; the child is ours.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
    let wall = t.elapsed().as_secs_f64();
    let _ = poll.join();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Measured {
        ok: r == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        wall,
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        rss_mb: hwm.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1024.0,
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
    }
}

/// The Python of `target/peers-venv` (Scrapy), made by `benches/peers/setup.sh`.
pub fn peers_python() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/setup.sh");
    let out = Command::new("bash").arg(&script).output().expect("run benches/peers/setup.sh");
    assert!(out.status.success(), "benches/peers/setup.sh failed: {}", String::from_utf8_lossy(&out.stderr));
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// The last line of `s` that is JSON.
pub fn last_json_line(s: &str) -> Option<Value> {
    s.lines().rev().find_map(|l| serde_json::from_str(l).ok())
}
