//! The web-application corpus: real applications whose URL space is large
//! and generated (many views of the same content), served on loopback from
//! this repository's own history pinned at commit c0e8007, installed and
//! prepared by `scripts/webapps.sh`:
//!
//! - cgit (CGI under fcgiwrap) over the git history,
//! - DokuWiki (PHP under php-fpm) whose pages are the book, one revision per
//!   commit that changed a page,
//! - Fossil (CGI under fcgiwrap) over the same history imported.
//!
//! One nginx serves them all, each on its own loopback address and on the
//! shared `127.0.0.1:PORT` by host name, with a robots.txt that allows
//! everything. Each application's truth comes from its own data model
//! ([`Truth`]): which content item a URL shows (a commit, a file's version, a
//! wiki page or one of its revisions), or none for a view that is not
//! content in itself (a log page, a diff, an index); what is content and what
//! is a view is written down in docs/src/web-apps.md.
#![allow(dead_code)]

mod cgit;
mod fossil;
mod wiki;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One application of the corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum App {
    Cgit,
    Wiki,
    Fossil,
}

impl App {
    pub const ALL: [App; 3] = [App::Cgit, App::Wiki, App::Fossil];

    pub fn name(self) -> &'static str {
        match self {
            App::Cgit => "cgit",
            App::Wiki => "dokuwiki",
            App::Fossil => "fossil",
        }
    }

    /// The application's host name in URLs.
    pub fn host(self) -> String {
        format!("{}.test", self.name())
    }

    /// The page a crawl starts from.
    pub fn start(self) -> &'static str {
        match self {
            App::Cgit => "/layercrawl/",
            App::Wiki => "/doku.php",
            App::Fossil => "/timeline",
        }
    }

    /// What a crawl of the application's whole URL space is given besides
    /// its other flags: DokuWiki marks its generated views (old revisions,
    /// diffs, histories, the index) `rel="nofollow"` and serves them all at
    /// one path (`doku.php?do=…`), so such a crawl ignores nofollow and
    /// lifts the trap guard's cap on distinct queries per path and layer
    /// (100). cgit and Fossil mark nothing and spread their views over
    /// many paths.
    pub fn whole_space(self) -> &'static [&'static str] {
        match self {
            App::Wiki => &["--nofollow", "ignore", "--max-query-variants", "1000000000"],
            App::Cgit | App::Fossil => &[],
        }
    }
}

/// Where `scripts/webapps.sh` prepares the data: `LAYERCRAWL_WEBAPPS`, else
/// `target/webapps` of this checkout.
pub fn data_dir() -> PathBuf {
    std::env::var_os("LAYERCRAWL_WEBAPPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/webapps"))
}

/// Runs `scripts/webapps.sh`, which installs what is missing from Debian's
/// archive and prepares the data; quick when everything is there.
pub fn install() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/webapps.sh");
    let out = Command::new("bash").arg(&script).arg(data_dir()).output().expect("run scripts/webapps.sh");
    assert!(
        out.status.success(),
        "scripts/webapps.sh failed (it installs nginx, cgit, fcgiwrap, php-fpm, DokuWiki and Fossil with apt-get and prepares their data): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The corpus running: nginx, fcgiwrap and php-fpm, stopped when dropped.
pub struct Apps {
    pub apps: Vec<App>,
    pub small: bool,
    pub port: u16,
    pub data: PathBuf,
    pub dir: tempfile::TempDir,
    children: Vec<Child>,
}

/// The address of `app` (127.0.0.21 onwards, apart from the real-site
/// corpus' 127.0.0.2 onwards; 127.0.0.1 is the shared one).
fn app_ip(app: App) -> String {
    format!("127.0.0.{}", 21 + app as usize)
}

/// The FastCGI parameters of a request (nginx's own `fastcgi_params` sends
/// SCRIPT_NAME as the URI, which a CGI at the root must not get).
const FASTCGI: &str = "fastcgi_param QUERY_STRING $query_string; fastcgi_param REQUEST_METHOD $request_method; \
     fastcgi_param CONTENT_TYPE $content_type; fastcgi_param CONTENT_LENGTH $content_length; \
     fastcgi_param REQUEST_URI $request_uri; fastcgi_param DOCUMENT_URI $document_uri; \
     fastcgi_param SERVER_PROTOCOL $server_protocol; fastcgi_param GATEWAY_INTERFACE CGI/1.1; \
     fastcgi_param REMOTE_ADDR $remote_addr; fastcgi_param REMOTE_PORT $remote_port; \
     fastcgi_param SERVER_ADDR $server_addr; fastcgi_param SERVER_PORT $server_port; fastcgi_param SERVER_NAME $host;";

const ROBOTS: &str = "location = /robots.txt { default_type text/plain; return 200 \"User-agent: *\\nDisallow:\\n\"; }";

impl Apps {
    /// Starts `which` (`small`: cgit and Fossil over the history's first 60
    /// commits, for CI) and waits until each answers its start page.
    ///
    /// Panics, naming the script to run, when the data is not prepared.
    pub fn start(which: &[App], small: bool) -> Apps {
        let data = data_dir();
        assert!(data.join(".prepared").exists(), "{} is not prepared: run scripts/webapps.sh first", data.display());
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().display().to_string();
        let port = free_port();
        let variant = if small { "small" } else { "full" };
        let mut children = Vec::new();
        let mut conf = format!(
            "daemon off;\nmaster_process off;\nworker_rlimit_nofile 8192;\npid {d}/nginx.pid;\nerror_log {d}/error.log warn;\n\
             events {{ worker_connections 4096; }}\nhttp {{\n  include /etc/nginx/mime.types;\n  default_type application/octet-stream;\n  access_log off;\n  keepalive_requests 100000;\n  fastcgi_read_timeout 120s;\n\
             client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n"
        );
        let listen =
            |app: App| format!("listen {}:{port}; listen 127.0.0.1:{port}; server_name {};", app_ip(app), app.host());
        let cgi = which.iter().any(|a| matches!(a, App::Cgit | App::Fossil));
        for &app in which {
            match app {
                App::Cgit => {
                    let repo = data.join(format!("git/{variant}.git"));
                    std::fs::write(dir.path().join("cgitrc"), cgit::config(&repo)).expect("write cgitrc");
                    conf.push_str(&format!(
                        "  server {{ {listen}\n    {ROBOTS}\n    location = /cgit.css {{ alias /usr/share/cgit/cgit.css; }}\n    location = /cgit.png {{ alias /usr/share/cgit/cgit.png; }}\n    \
                         location / {{ {FASTCGI} fastcgi_param SCRIPT_FILENAME /usr/lib/cgit/cgit.cgi; fastcgi_param SCRIPT_NAME \"\"; fastcgi_param PATH_INFO $uri; fastcgi_param CGIT_CONFIG {d}/cgitrc; fastcgi_pass unix:{d}/fcgiwrap.sock; }}\n  }}\n",
                        listen = listen(app)
                    ));
                }
                App::Fossil => {
                    // Fossil writes beside its repository (journals): each start
                    // serves its own copy.
                    let repo = dir.path().join("repo.fossil");
                    std::fs::copy(data.join(format!("fossil/{variant}.fossil")), &repo)
                        .expect("copy the Fossil repository");
                    let script = dir.path().join("fossil.cgi");
                    std::fs::write(
                        &script,
                        format!("#!{}\nrepository: {}\n", which_fossil().display(), repo.display()),
                    )
                    .expect("write fossil.cgi");
                    make_executable(&script);
                    conf.push_str(&format!(
                        "  server {{ {listen}\n    {ROBOTS}\n    \
                         location / {{ {FASTCGI} fastcgi_param SCRIPT_FILENAME {d}/fossil.cgi; fastcgi_param SCRIPT_NAME \"\"; fastcgi_param PATH_INFO $uri; fastcgi_pass unix:{d}/fcgiwrap.sock; }}\n  }}\n",
                        listen = listen(app)
                    ));
                }
                App::Wiki => {
                    // DokuWiki writes its caches and locks: each start serves a
                    // copy of the prepared data (mtimes kept: they are the
                    // pages' current revisions).
                    let copy = dir.path().join("wiki-data");
                    let status = Command::new("cp")
                        .arg("-a")
                        .arg(data.join("dokuwiki/data"))
                        .arg(&copy)
                        .status()
                        .expect("run cp");
                    assert!(status.success(), "copying the wiki's data failed");
                    conf.push_str(&format!(
                        "  server {{ {listen}\n    root /usr/share/dokuwiki;\n    index doku.php;\n    {ROBOTS}\n    \
                         location ~ ^/(conf|bin|inc|vendor|data)/ {{ deny all; }}\n    location = /install.php {{ deny all; }}\n    \
                         location ~ \\.php$ {{ {FASTCGI} fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name; fastcgi_param SCRIPT_NAME $fastcgi_script_name; fastcgi_param DOKUWIKI_DATA {copy}; fastcgi_pass unix:{d}/php-fpm.sock; }}\n  }}\n",
                        listen = listen(app),
                        copy = copy.display()
                    ));
                    children.push(start_php_fpm(dir.path(), &data));
                }
            }
        }
        conf.push_str("}\n");
        if cgi {
            children.push(
                Command::new("/usr/sbin/fcgiwrap")
                    .args(["-c", "8", "-s", &format!("unix:{d}/fcgiwrap.sock")])
                    .process_group(0)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(dir.path().join("fcgiwrap.log")).expect("log file"))
                    .spawn()
                    .expect("start fcgiwrap (scripts/webapps.sh installs it)"),
            );
        }
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).expect("write nginx.conf");
        children.push(
            Command::new(which_nginx())
                .args(["-p", &d, "-c", &conf_path.display().to_string(), "-e", &format!("{d}/error.log")])
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start nginx"),
        );
        let apps = Apps { apps: which.to_vec(), small, port, data, dir, children };
        apps.wait_ready();
        apps
    }

    fn wait_ready(&self) {
        let t = Instant::now();
        for &app in &self.apps {
            let addr: SocketAddr = format!("{}:{}", app_ip(app), self.port).parse().expect("addr");
            loop {
                match get_status(addr, &app.host(), app.start()) {
                    Some(200) => break,
                    status => {
                        let logs: String = ["error.log", "fcgiwrap.log", "php-fpm.log"]
                            .iter()
                            .map(|f| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default())
                            .collect();
                        assert!(
                            t.elapsed() < Duration::from_secs(20),
                            "{} does not answer {} on {addr} (last status {status:?}): {logs}",
                            app.name(),
                            app.start()
                        );
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        }
    }

    /// One seed an application: its start page.
    pub fn seeds(&self) -> Vec<String> {
        self.apps.iter().map(|a| self.url(*a, a.start())).collect()
    }

    /// `path` (with its query) of `app` as an absolute URL.
    pub fn url(&self, app: App, path: &str) -> String {
        format!("http://{}:{}{path}", app.host(), self.port)
    }

    /// `--resolve` rules for layercrawl: each application to its own address.
    pub fn resolve_args(&self) -> Vec<String> {
        self.apps
            .iter()
            .flat_map(|a| ["--resolve".to_string(), format!("{}={}:{}", a.host(), app_ip(*a), self.port)])
            .collect()
    }

    /// `GET path` of `app`: its status and body.
    pub fn get(&self, app: App, path: &str) -> (u16, String) {
        let addr: SocketAddr = format!("{}:{}", app_ip(app), self.port).parse().expect("addr");
        get(addr, &app.host(), path).unwrap_or_else(|| panic!("{} does not answer {path}", app.name()))
    }

    /// The shared address, as an HTTP proxy URL for peers.
    pub fn proxy(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The application a URL belongs to, by its host.
    pub fn app_of(&self, url: &str) -> Option<App> {
        let host = url::Url::parse(url).ok()?.host_str()?.to_ascii_lowercase();
        self.apps.iter().copied().find(|a| a.host() == host)
    }

    /// The truth of `app`, read from the data it serves.
    pub fn truth(&self, app: App) -> Truth {
        let variant = if self.small { "small" } else { "full" };
        match app {
            App::Cgit => Truth::Cgit(cgit::Repo::load(&self.data.join(format!("git/{variant}.git")))),
            App::Wiki => Truth::Wiki(wiki::Wiki::load(&self.data.join("dokuwiki/data"))),
            App::Fossil => Truth::Fossil(fossil::Repo::load(&self.dir.path().join("repo.fossil"))),
        }
    }

    /// Every application's truth.
    pub fn truths(&self) -> BTreeMap<App, Truth> {
        self.apps.iter().map(|a| (*a, self.truth(*a))).collect()
    }

    /// What the crawl under `data` reached of each application: its rows,
    /// its pages (200 without error), their distinct main texts, and the
    /// distinct content items they show (by the final URL's truth).
    pub fn score(&self, data: &Path, truths: &BTreeMap<App, Truth>) -> BTreeMap<App, Score> {
        let mut texts: BTreeMap<App, BTreeSet<String>> = BTreeMap::new();
        let mut hashes: BTreeMap<App, BTreeSet<u64>> = BTreeMap::new();
        let mut items: BTreeMap<App, BTreeSet<String>> = BTreeMap::new();
        let mut out: BTreeMap<App, Score> = BTreeMap::new();
        for d in super::read_docs(data) {
            let Some(app) = self.app_of(&d.url) else { continue };
            let score = out.entry(app).or_default();
            score.rows += 1;
            if d.status != 200 || d.error.is_some() {
                continue;
            }
            score.pages += 1;
            if let Some(h) = d.content_hash {
                hashes.entry(app).or_default().insert(h);
            }
            if let Some(t) = d.main_text.filter(|t| !t.trim().is_empty()) {
                texts.entry(app).or_default().insert(t);
            }
            let url = if d.final_url.is_empty() { &d.url } else { &d.final_url };
            if let Some(item) = truths.get(&app).and_then(|t| t.item(url)) {
                items.entry(app).or_default().insert(item);
            }
        }
        for (app, score) in &mut out {
            score.texts = texts.get(app).map_or(0, BTreeSet::len);
            score.hashes = hashes.get(app).map_or(0, BTreeSet::len);
            score.items = items.get(app).map_or(0, BTreeSet::len);
            score.of_items = truths.get(app).map_or(0, |t| t.items().len());
            let kind = |i: &String| i.split(':').next().unwrap_or_default().to_string();
            for i in truths.get(app).map(Truth::items).into_iter().flatten() {
                score.kinds.entry(kind(i)).or_default().1 += 1;
            }
            for i in items.get(app).into_iter().flatten() {
                score.kinds.entry(kind(i)).or_default().0 += 1;
            }
        }
        out
    }

    /// The independent ground truth of reachability: HTML pages (status 200)
    /// reached within `depth` hops of `seeds`, by URL as layercrawl
    /// normalises it, with their smallest depth (`scripts/nofollow_walker.py`,
    /// `scripts/bfs_walker.py` obeying nofollow). `polite`: nofollow obeyed,
    /// as layercrawl does (DokuWiki marks its generated views nofollow), else
    /// every link followed.
    pub fn walk(&self, seeds: &[String], depth: u32, polite: bool) -> BTreeMap<String, u32> {
        let walker = "scripts/nofollow_walker.py";
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(walker);
        let mut cmd = Command::new("python3");
        cmd.arg(&script).args(["--depth", &depth.to_string()]);
        if !polite {
            cmd.arg("--ignore-nofollow");
        }
        for a in &self.apps {
            cmd.args(["--resolve", &format!("{}:{}={}:{}", a.host(), self.port, app_ip(*a), self.port)]);
        }
        let out = cmd.args(seeds).output().unwrap_or_else(|e| panic!("run {walker}: {e}"));
        assert!(out.status.success(), "{walker} failed: {}", String::from_utf8_lossy(&out.stderr));
        let all: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&out.stdout).expect("walker JSON");
        all.into_iter()
            .filter(|(_, v)| v["status"] == 200 && v["type"] == "text/html")
            .filter_map(|(u, v)| Some((super::realsites::normalised(&u)?, u32::try_from(v["depth"].as_u64()?).ok()?)))
            .collect()
    }
}

impl Drop for Apps {
    fn drop(&mut self) {
        // Each server runs in its own process group, and the whole group
        // gets SIGTERM: fcgiwrap's workers outlive their parent otherwise,
        // and php-fpm's master ends its own.
        for child in &mut self.children {
            if let Ok(pid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) on the process group of a child of ours
                // that has not been reaped (so its id is not reused).
                unsafe { libc::kill(-pid, libc::SIGTERM) };
            }
        }
        let t = Instant::now();
        for child in &mut self.children {
            while child.try_wait().ok().flatten().is_none() && t.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What a crawl reached of one application ([`Apps::score`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Score {
    /// `doc` rows of its host.
    pub rows: usize,
    /// Rows fetched with 200 and no error.
    pub pages: usize,
    /// Distinct non-empty main texts of those pages.
    pub texts: usize,
    /// Distinct content hashes (of the text; of the body for non-HTML).
    pub hashes: usize,
    /// Distinct content items those pages show.
    pub items: usize,
    /// Content items the application has.
    pub of_items: usize,
    /// Items reached by kind (`commit`, `file`, `page`, …): reached, of.
    pub kinds: BTreeMap<String, (usize, usize)>,
}

/// One application's truth, from its own data model.
pub enum Truth {
    Cgit(cgit::Repo),
    Wiki(wiki::Wiki),
    Fossil(fossil::Repo),
}

impl Truth {
    /// The content item that `url` shows (`commit:…`, `file:PATH@HASH`,
    /// `page:ID`, `rev:ID@TIME`, `checkin:…`), or None for a view that is not
    /// content in itself.
    pub fn item(&self, url: &str) -> Option<String> {
        let u = url::Url::parse(url).ok()?;
        match self {
            Truth::Cgit(r) => r.item(&u),
            Truth::Wiki(w) => w.item(&u),
            Truth::Fossil(r) => r.item(&u),
        }
    }

    /// Every content item the application has.
    pub fn items(&self) -> &BTreeSet<String> {
        match self {
            Truth::Cgit(r) => &r.items,
            Truth::Wiki(w) => &w.items,
            Truth::Fossil(r) => &r.items,
        }
    }
}

/// The query's value of `key` (the first), decoded.
fn param(u: &url::Url, key: &str) -> Option<String> {
    u.query_pairs().find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
}

/// A URL path's segment, percent-decoded.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(u8::try_from(h * 16 + l).expect("two hex digits make a byte"));
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `program args` and returns its standard output, panicking with its
/// standard error when it fails.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap_or_else(|e| panic!("run {program}: {e}"));
    assert!(out.status.success(), "{program} {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{program} {args:?}: output not UTF-8: {e}"))
}

/// The status of `GET path` on `addr` as `host`, or None when it does not answer.
fn get_status(addr: SocketAddr, host: &str, path: &str) -> Option<u16> {
    get(addr, host, path).map(|(status, _)| status)
}

/// `GET path` on `addr` as `host`: the status and the body (HTTP/1.0, so
/// the body ends with the connection), or None when it does not answer.
fn get(addr: SocketAddr, host: &str, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}:{}\r\n\r\n", addr.port()).ok()?;
    let mut all = Vec::new();
    s.read_to_end(&mut all).ok()?;
    let text = String::from_utf8_lossy(&all);
    let status = text.get(9..12)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Some((status, body))
}

fn start_php_fpm(dir: &Path, data: &Path) -> Child {
    let fpm = std::fs::read_dir("/usr/sbin")
        .expect("read /usr/sbin")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("php-fpm")))
        .expect("php-fpm is not installed: run scripts/webapps.sh");
    // SAFETY: geteuid(2) has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let d = dir.display();
    let user = if root { "user = root\ngroup = root\n" } else { "" };
    let conf = format!(
        "[global]\npid = {d}/php-fpm.pid\nerror_log = {d}/php-fpm.log\ndaemonize = no\n\
         [wiki]\n{user}listen = {d}/php-fpm.sock\npm = static\npm.max_children = 4\n\
         php_admin_value[auto_prepend_file] = {prepend}\nphp_admin_value[error_log] = {d}/php-errors.log\nphp_admin_flag[log_errors] = on\n",
        prepend = data.join("dokuwiki/prepend.php").display()
    );
    let path = dir.join("php-fpm.conf");
    std::fs::write(&path, conf).expect("write php-fpm.conf");
    let mut cmd = Command::new(fpm);
    cmd.args(["--nodaemonize", "--fpm-config", &path.display().to_string()]);
    if root {
        // php-fpm refuses to run as root unless told to (CI runs as root).
        cmd.arg("--allow-to-run-as-root");
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start php-fpm")
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn which_fossil() -> PathBuf {
    for p in ["/usr/bin/fossil", "/usr/local/bin/fossil"] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("fossil is not installed: run scripts/webapps.sh first");
}

fn which_nginx() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return p.into();
        }
    }
    panic!("nginx is not installed: run scripts/webapps.sh first");
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("addr").port()
}
