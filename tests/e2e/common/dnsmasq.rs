//! dnsmasq on a loopback port, for the DNS cache's tests and bench: a real
//! DNS server (Debian's `dnsmasq-base`, installed by `scripts/dnsmasq.sh`)
//! whose own query log says how often each name was asked.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};

/// dnsmasq on a loopback port: `*.test` is 127.0.0.1 with `ttl` seconds to
/// live, `missing.test` does not exist.
pub struct Dns {
    child: Child,
    pub port: u16,
}

impl Dns {
    pub fn start(ttl: u32) -> Self {
        let out = Command::new("bash")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/dnsmasq.sh"))
            .output()
            .expect("run scripts/dnsmasq.sh");
        assert!(out.status.success(), "scripts/dnsmasq.sh: {}", String::from_utf8_lossy(&out.stderr));
        let program = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let port = std::net::UdpSocket::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
        let child = Command::new(program)
            .args(["--keep-in-foreground", "--no-resolv", "--no-hosts", "--bind-interfaces"])
            .args(["--listen-address=127.0.0.1", "--pid-file", "--user=root", "--log-queries", "--log-facility=-"])
            .arg(format!("--port={port}"))
            .arg(format!("--local-ttl={ttl}"))
            .args(["--address=/missing.test/", "--address=/test/127.0.0.1"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dnsmasq");
        // Ready once it answers: a plain query on its port.
        let probe = std::net::UdpSocket::bind("127.0.0.1:0").expect("probe socket");
        probe.set_read_timeout(Some(std::time::Duration::from_millis(200))).expect("timeout");
        let query = [
            0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, b'p', b'i', b'n', b'g', 4, b't', b'e', b's', b't', 0, 0, 1, 0,
            1,
        ];
        for _ in 0..50 {
            let _ = probe.send_to(&query, ("127.0.0.1", port));
            let mut buf = [0u8; 512];
            if probe.recv(&mut buf).is_ok() {
                break;
            }
        }
        Self { child, port }
    }

    /// Stops the server; the A and AAAA queries it logged, per name.
    pub fn queries(mut self) -> BTreeMap<String, u32> {
        let _ = self.child.kill();
        let mut log = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut log);
        }
        let _ = self.child.wait();
        let mut out = BTreeMap::new();
        for line in log.lines() {
            // "dnsmasq: query[A] s000.test from 127.0.0.1"
            if let Some(rest) = line.split("query[A] ").nth(1) {
                let name = rest.split_whitespace().next().unwrap_or_default().to_string();
                *out.entry(name).or_insert(0) += 1;
            }
        }
        out
    }
}
