#![allow(dead_code)]
//! A PostgreSQL server of its own for a test or a bench: Debian's
//! `postgresql` programs (installed by `scripts/postgres.sh`), a cluster
//! made by `initdb` in a temporary folder, `postgres` listening on a free
//! loopback port with its socket in that folder. PostgreSQL refuses to run
//! as root: as root, both run as the `postgres` user (`setpriv`), in a
//! folder that user owns. Dropping the server stops it (a fast shutdown),
//! a failed test included.
//!
//! The server offers TLS with the test certificate `scripts/postgres.sh`
//! makes (signed by its test CA, for 127.0.0.1 and localhost), and asks
//! [`PW_USER`] (only) for its password; [`USER`] is trusted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The user the cluster is made for (trusted on loopback).
pub const USER: &str = "layercrawl";
/// A user that must give its password ([`PASSWORD`], SCRAM).
pub const PW_USER: &str = "layercrawl_pw";
pub const PASSWORD: &str = "Pw-7q2Xz-not-in-any-output";

pub struct Postgres {
    child: Child,
    bin: PathBuf,
    pub port: u16,
    /// The folder of the test certificates: `ca.crt` (which signed the
    /// server's) and `other-ca.crt` (which did not).
    pub tls: PathBuf,
    dir: tempfile::TempDir,
}

/// The folders of the server's programs and of the test certificates,
/// installing and making them if needed.
fn install() -> (PathBuf, PathBuf) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/postgres.sh");
    let out = Command::new("bash").arg(script).output().expect("run scripts/postgres.sh");
    assert!(
        out.status.success(),
        "scripts/postgres.sh failed (it installs Debian's postgresql):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("scripts/postgres.sh printed no {key}: {text}"))
    };
    (get("BIN="), get("TLS="))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `program` as the `postgres` user when this process is root.
fn command(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=postgres", "--regid=postgres", "--init-groups", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port").local_addr().expect("address").port()
}

impl Postgres {
    /// Starts a server. `durable = false` turns fsync off, as test servers do.
    pub fn start(durable: bool) -> Self {
        let (bin, tls) = install();
        let dir = tempfile::Builder::new().prefix("layercrawl-pg-").tempdir().expect("tempdir");
        // The server's key, private to the user the server runs as (it
        // refuses a key others can read).
        let (cert, key) = (dir.path().join("server.crt"), dir.path().join("server.key"));
        std::fs::copy(tls.join("server.crt"), &cert).expect("copy the server certificate");
        std::fs::copy(tls.join("server.key"), &key).expect("copy the server key");
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod the key");
        if is_root() {
            let id = |flag: &str| -> u32 {
                let out = Command::new("id").args([flag, "postgres"]).output().expect("id postgres");
                assert!(out.status.success(), "no postgres user: {}", String::from_utf8_lossy(&out.stderr));
                String::from_utf8_lossy(&out.stdout).trim().parse().expect("a number")
            };
            for path in [dir.path(), &cert, &key] {
                std::os::unix::fs::chown(path, Some(id("-u")), Some(id("-g"))).expect("chown to the server's user");
            }
        }
        let data = dir.path().join("pgdata");
        let out = command(&bin.join("initdb"))
            .current_dir(dir.path())
            .args(["-U", USER, "--auth=trust", "--no-sync", "--encoding=UTF8", "--locale=C", "-D"])
            .arg(&data)
            .output()
            .expect("run initdb");
        assert!(out.status.success(), "initdb failed:\n{}", String::from_utf8_lossy(&out.stderr));
        // The first matching line decides: PW_USER gives its password.
        let hba = data.join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).expect("pg_hba.conf");
        std::fs::write(&hba, format!("host all {PW_USER} 127.0.0.1/32 scram-sha-256\n{rules}")).expect("pg_hba.conf");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("server.log")).expect("server log");
        let mut cmd = command(&bin.join("postgres"));
        cmd.current_dir(dir.path()).arg("-D").arg(&data).arg("-k").arg(dir.path()).args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ]);
        cmd.args(["-c", "ssl=on", "-c"]).arg(format!("ssl_cert_file={}", cert.display()));
        cmd.arg("-c").arg(format!("ssl_key_file={}", key.display()));
        // A connection's log line says whether it was encrypted.
        cmd.args(["-c", "log_connections=on"]);
        if !durable {
            cmd.args(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]);
        }
        let child =
            cmd.stdin(Stdio::null()).stdout(log.try_clone().expect("log")).stderr(log).spawn().expect("start postgres");
        let server = Self { child, bin, port, tls, dir };
        server.wait_ready();
        server.query("postgres", &format!("CREATE ROLE {PW_USER} LOGIN PASSWORD '{PASSWORD}'"));
        server
    }

    /// Creates database `db` owned by [`PW_USER`].
    pub fn create_db_of_pw_user(&self, db: &str) {
        self.query("postgres", &format!("CREATE DATABASE {db} OWNER {PW_USER}"));
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn wait_ready(&self) {
        let t = Instant::now();
        loop {
            let out = self.psql_raw("postgres", "SELECT 1");
            if out.status.success() {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "postgres did not start in 60 s:\n{}",
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The URL `layercrawl export --to` takes for database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    fn psql_raw(&self, db: &str, sql: &str) -> std::process::Output {
        Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", USER])
            .args(["-p", &self.port.to_string(), "-d", db, "-c", sql])
            .output()
            .expect("run psql")
    }

    /// The rows of `sql` in database `db`, each a tab-separated line.
    pub fn query(&self, db: &str, sql: &str) -> Vec<Vec<String>> {
        let out = self.psql_raw(db, sql);
        assert!(out.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.split('\t').map(str::to_string).collect())
            .collect()
    }

    /// Creates database `db`.
    pub fn create_db(&self, db: &str) {
        self.query("postgres", &format!("CREATE DATABASE {db}"));
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGINT: the fast shutdown (sessions ended, a clean stop).
        let pid = i32::try_from(self.child.id()).expect("a pid");
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
