//! The real-site corpus: documentation sites from Debian's archive
//! (`scripts/realsites.tsv`, installed by `scripts/realsites.sh`), each
//! served by its own nginx on its own loopback address, and the ground truth
//! of an independent breadth-first walker (`scripts/bfs_walker.py`).
//!
//! Every site also answers on a shared address (`127.0.0.1:PORT`) by host
//! name, which is how a peer crawler that takes one HTTP proxy reaches them
//! all; with [`Corpus::start`]'s `problems`, hosts of the test web (its
//! fault host: stalls, `Retry-After`, slow bodies) are passed through there
//! too, unbuffered.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One documentation site of the corpus.
#[derive(Clone, Debug)]
pub struct Site {
    pub name: String,
    pub package: String,
    pub root: PathBuf,
    pub start: String,
    pub generator: String,
    pub ci: bool,
}

impl Site {
    /// The site's host name in URLs.
    pub fn host(&self) -> String {
        format!("{}.docs.test", self.name)
    }
}

/// Runs `scripts/realsites.sh` (with `--ci`: only the sites marked for CI),
/// which installs what is missing from Debian's archive and is quick when
/// everything is there, as `scripts/pyenv.sh` is for the interop test.
pub fn install(ci_only: bool) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/realsites.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script);
    if ci_only {
        cmd.arg("--ci");
    }
    let out = cmd.output().expect("run scripts/realsites.sh");
    assert!(
        out.status.success(),
        "scripts/realsites.sh failed (it installs nginx and documentation packages with apt-get): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The sites listed in `scripts/realsites.tsv`; `ci_only` keeps those marked for CI.
pub fn sites(ci_only: bool) -> Vec<Site> {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/realsites.tsv");
    let text = std::fs::read_to_string(&list).unwrap_or_else(|e| panic!("{}: {e}", list.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "{}: a line needs 6 tab-separated fields: {l}", list.display());
            Site {
                name: f[0].into(),
                package: f[1].into(),
                root: f[2].into(),
                start: f[3].into(),
                generator: f[4].into(),
                ci: f[5] == "yes",
            }
        })
        .filter(|s| s.ci || !ci_only)
        .collect()
}

/// nginx serving the corpus; stopped when dropped.
pub struct Corpus {
    pub sites: Vec<Site>,
    pub port: u16,
    nginx: Child,
    pub dir: tempfile::TempDir,
}

/// The address of site `i` (127.0.0.2 onwards; 127.0.0.1 is the shared one).
fn site_ip(i: usize) -> String {
    format!("127.0.0.{}", 2 + i)
}

impl Corpus {
    /// Starts nginx for `sites`; `problems`, when given, is the address of a
    /// running test web whose hosts `*.test` other than the corpus' are
    /// passed through on the shared address.
    ///
    /// Panics, naming the script to run, when a site is not installed.
    pub fn start(sites: Vec<Site>, problems: Option<SocketAddr>) -> Corpus {
        for s in &sites {
            assert!(
                s.root.join(s.start.trim_start_matches('/')).exists(),
                "{} ({}, package {}) is not installed: run scripts/realsites.sh{} first",
                s.name,
                s.root.display(),
                s.package,
                if s.ci { " --ci" } else { "" }
            );
        }
        let nginx = which_nginx();
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let mut conf = String::new();
        conf.push_str(&format!(
            "daemon off;\nmaster_process off;\nworker_rlimit_nofile 8192;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 4096; }}\nhttp {{\n  include /etc/nginx/mime.types;\n  default_type application/octet-stream;\n  access_log off;\n  sendfile on;\n  keepalive_requests 100000;\n\
             client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n",
            d = dir.path().display()
        ));
        for (i, s) in sites.iter().enumerate() {
            // A realistic robots.txt: source views and search are off limits.
            conf.push_str(&format!(
                "  server {{ listen {ip}:{port}; listen 127.0.0.1:{port}; server_name {host};\n    root {root};\n    index index.html;\n    \
                 location = /robots.txt {{ default_type text/plain; return 200 \"User-agent: *\\nDisallow: /_sources/\\nDisallow: /search.html\\n\"; }}\n  }}\n",
                ip = site_ip(i),
                host = s.host(),
                root = s.root.display()
            ));
        }
        if let Some(addr) = problems {
            conf.push_str(&format!(
                "  server {{ listen 127.0.0.1:{port} default_server; server_name _;\n    location / {{ proxy_pass http://{addr}; proxy_set_header Host $http_host; proxy_buffering off; proxy_http_version 1.1; proxy_read_timeout 120s; }}\n  }}\n"
            ));
        }
        conf.push_str("}\n");
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        let child = Command::new(nginx)
            .args([
                "-p",
                &dir.path().display().to_string(),
                "-c",
                &conf_path.display().to_string(),
                "-e",
                &dir.path().join("error.log").display().to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start nginx");
        let corpus = Corpus { sites, port, nginx: child, dir };
        corpus.wait_ready();
        corpus
    }

    fn wait_ready(&self) {
        let t = Instant::now();
        for i in 0..self.sites.len() {
            let addr: SocketAddr = format!("{}:{}", site_ip(i), self.port).parse().expect("addr");
            while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
                let log = std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default();
                assert!(t.elapsed() < Duration::from_secs(10), "nginx does not answer on {addr}: {log}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// One seed a site: its start page.
    pub fn seeds(&self) -> Vec<String> {
        self.sites.iter().map(|s| format!("http://{}:{}{}", s.host(), self.port, s.start)).collect()
    }

    /// `--resolve` rules for layercrawl: each site to its own address.
    pub fn resolve_args(&self) -> Vec<String> {
        self.sites
            .iter()
            .enumerate()
            .flat_map(|(i, s)| ["--resolve".to_string(), format!("{}={}:{}", s.host(), site_ip(i), self.port)])
            .collect()
    }

    /// The shared address, as an HTTP proxy URL for peers.
    pub fn proxy(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The independent ground truth: HTML pages (status 200) reached within
    /// `depth` hops of `seeds`, by URL (as layercrawl normalises URLs, for
    /// comparing) with their smallest depth.
    pub fn walk(&self, seeds: &[String], depth: u32) -> BTreeMap<String, u32> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/bfs_walker.py");
        let mut cmd = Command::new("python3");
        cmd.arg(&script).args(["--depth", &depth.to_string()]);
        for (i, s) in self.sites.iter().enumerate() {
            cmd.args(["--resolve", &format!("{}:{}={}:{}", s.host(), self.port, site_ip(i), self.port)]);
        }
        let out = cmd.args(seeds).output().expect("run scripts/bfs_walker.py");
        assert!(out.status.success(), "bfs_walker.py failed: {}", String::from_utf8_lossy(&out.stderr));
        let all: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&out.stdout).expect("walker JSON");
        all.into_iter()
            .filter(|(_, v)| v["status"] == 200 && v["type"] == "text/html")
            .filter_map(|(u, v)| Some((normalised(&u)?, u32::try_from(v["depth"].as_u64()?).ok()?)))
            .collect()
    }
}

impl Drop for Corpus {
    fn drop(&mut self) {
        let _ = self.nginx.kill();
        let _ = self.nginx.wait();
    }
}

/// `u` as layercrawl writes URLs (WHATWG parsing, then its normalisation).
pub fn normalised(u: &str) -> Option<String> {
    layercrawl::urlnorm::normalize(url::Url::parse(u).ok()?).map(|u| u.to_string())
}

fn which_nginx() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("nginx is not installed: run scripts/realsites.sh --ci first");
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}
