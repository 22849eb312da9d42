//! The object-store servers of the scale-out tests, on loopback: moto's S3
//! server and Azurite (Azure Blob Storage's emulator), installed by
//! `scripts/objstores.sh` (quick when they are there), each test starting
//! its own on a free port. `scripts/objstores.py` makes buckets and
//! containers, and copies a crawl's output into a folder so that the tests
//! read it with the same code as a local crawl.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which kind of server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    S3,
    Azure,
}

/// A running server; stopped when dropped.
pub struct Server {
    pub kind: Kind,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    child: Child,
    python: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts").join(name)
}

/// Installs the servers (if needed); returns (moto_server, azurite-blob).
fn install() -> (PathBuf, PathBuf) {
    let out = Command::new("bash").arg(script("objstores.sh")).output().expect("run scripts/objstores.sh");
    assert!(
        out.status.success(),
        "scripts/objstores.sh failed (it installs moto from PyPI and Azurite from npm): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(PathBuf::from)
            .unwrap_or_else(|| panic!("scripts/objstores.sh printed no {key}: {text}"))
    };
    (get("MOTO_SERVER="), get("AZURITE_BLOB="))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

impl Server {
    /// Starts a server of `kind` on loopback and waits until it answers.
    pub fn start(kind: Kind) -> Self {
        let (moto, azurite) = install();
        let port = free_port();
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cmd = match kind {
            Kind::S3 => {
                // moto's server with its writes one at a time, so that a
                // conditional write is atomic as on S3 (see objstores.py).
                let mut c = Command::new(moto.parent().expect("venv bin").join("python"));
                c.arg(script("objstores.py")).args(["serve-s3", "--port", &port.to_string()]);
                c
            }
            Kind::Azure => {
                let mut c = Command::new(&azurite);
                c.args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string(), "--location"])
                    .arg(dir.path())
                    .args(["--skipApiVersionCheck", "--silent", "--disableTelemetry", "--loose"]);
                c
            }
        };
        let child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start server");
        let python = moto.parent().expect("venv bin").join("python");
        let server = Self { kind, endpoint: format!("http://127.0.0.1:{port}"), child, python, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "{kind:?} server did not start on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    fn py(&self, args: &[&str]) {
        let out = Command::new(&self.python).arg(script("objstores.py")).args(args).output().expect("objstores.py");
        assert!(out.status.success(), "objstores.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }

    fn kind_arg(&self) -> &'static str {
        match self.kind {
            Kind::S3 => "s3",
            Kind::Azure => "az",
        }
    }

    /// Makes bucket (or container) `name`; returns the data location URL
    /// of `prefix` in it.
    pub fn bucket(&self, name: &str, prefix: &str) -> String {
        let cmd = if self.kind == Kind::S3 { "mkbucket" } else { "mkcontainer" };
        // Azurite may take a moment after its port opens.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = Command::new(&self.python)
                .arg(script("objstores.py"))
                .args([cmd, "--endpoint", &self.endpoint, name])
                .output()
                .expect("objstores.py");
            if out.status.success() {
                break;
            }
            assert!(Instant::now() < deadline, "{cmd} {name}: {}", String::from_utf8_lossy(&out.stderr));
            std::thread::sleep(Duration::from_millis(200));
        }
        format!("{}://{name}/{prefix}", self.kind_arg())
    }

    /// The environment that points layercrawl at this server.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        match self.kind {
            Kind::S3 => vec![
                ("AWS_ACCESS_KEY_ID", "testing".into()),
                ("AWS_SECRET_ACCESS_KEY", "testing".into()),
                ("AWS_REGION", "us-east-1".into()),
                ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ],
            Kind::Azure => {
                vec![("AZURE_STORAGE_USE_EMULATOR", "true".into()), ("AZURITE_BLOB_STORAGE_URL", self.endpoint.clone())]
            }
        }
    }

    /// The same store's settings as given to `Store::open_with`: S3's are
    /// its environment's; Azurite is addressed as any Azure-compatible
    /// endpoint is (its account, key and URL), not as the emulator.
    pub fn options(&self) -> Vec<(String, String)> {
        match self.kind {
            Kind::S3 => self.env().into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            Kind::Azure => [
                ("AZURE_STORAGE_ACCOUNT_NAME", "devstoreaccount1".to_string()),
                // Azurite's published development key.
                (
                    "AZURE_STORAGE_ACCOUNT_KEY",
                    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==".into(),
                ),
                ("AZURE_STORAGE_ENDPOINT", format!("{}/devstoreaccount1", self.endpoint)),
                ("AZURE_ALLOW_HTTP", "true".into()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        }
    }

    /// Copies every object under `bucket/prefix` into the folder `dest`.
    pub fn download(&self, bucket: &str, prefix: &str, dest: &Path) {
        self.py(&[
            "download",
            "--endpoint",
            &self.endpoint,
            self.kind_arg(),
            bucket,
            prefix,
            dest.to_str().expect("utf8"),
        ]);
    }

    /// Deletes the object `key` of `bucket`.
    pub fn rm(&self, bucket: &str, key: &str) {
        self.py(&["rm", "--endpoint", &self.endpoint, self.kind_arg(), bucket, key]);
    }

    /// A `layercrawl` command with this server's environment.
    pub fn command(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_layercrawl"));
        c.envs(self.env());
        c
    }
}
