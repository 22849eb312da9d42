//! The Kafka sink against a real broker (docs/src/kafka.md, "Building and
//! testing"): Tansu, a Kafka-compatible broker that `scripts/tansu.sh`
//! builds once into target/tools, on a loopback port, its topics in a
//! SQLite file that outlives the process. Unlike the mock cluster it keeps
//! a transaction's records from `read_committed` readers until it commits,
//! fences an earlier producer of the same transactional id, and can be
//! killed and started again. The crawler publishes, a real consumer reads
//! every record back; the broker is killed in the middle of a crawl, once
//! for a few seconds (the crawl waits for it) and once for longer than the
//! sink waits (the crawl stops, naming the brokers, and the same command
//! resumes); every page is read back once.

use super::{check_messages, manifests, markers, pages, read_topics};
use crate::common;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{crawl_ok, read_docs, Doc, Web};
use testweb::FarmConfig;

/// One Tansu broker on loopback; killed when dropped.
struct Broker {
    bin: PathBuf,
    /// Its working folder, which holds its SQLite file.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    /// Installs Tansu if needed, then starts it.
    fn start() -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/tansu.sh");
        let out = Command::new("bash").arg(script).output().expect("run scripts/tansu.sh");
        assert!(
            out.status.success(),
            "scripts/tansu.sh failed (it builds Tansu from crates.io into target/tools):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let mut broker = Self { bin, dir: tempfile::tempdir().expect("tempdir"), port, child: None };
        broker.up();
        broker
    }

    /// Starts the broker process on its port and data, and waits until it
    /// answers.
    fn up(&mut self) {
        assert!(self.child.is_none(), "the broker already runs");
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("tansu.log"))
            .expect("broker log");
        let child = Command::new(&self.bin)
            .current_dir(self.dir.path())
            .args(["broker", "--listener-url", &url, "--advertised-listener-url", &url])
            // A path relative to the working folder.
            .args(["--storage-engine", "sqlite://tansu.db"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start tansu");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "tansu did not listen on port {}: {}", self.port, self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the broker (SIGKILL: no clean shutdown).
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn sink(&self, prefix: &str) -> String {
        format!("kafka://{}/{prefix}", self.bootstrap())
    }

    fn read(&self, prefix: &str) -> Vec<(String, String, serde_json::Value)> {
        read_topics(&self.bootstrap(), prefix, "read_committed")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("tansu.log")).unwrap_or_default()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A crawl of `web` into `data` publishing to `sink`, not yet started.
fn crawl(web: &Web, data: &Path, sink: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_layercrawl"));
    c.args(web.run_args(data, 2, &["--delay", "0", "--per-host", "2", "--partitions", "2", "--sink", sink]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Waits until every partition of layer 0 of `data` is committed.
fn layer_0_committed(child: &mut Child, data: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    let manifest = |p: u32| data.join(format!("state/manifest/layer=0/map-{p:05}.json"));
    while !(0..2).all(|p| manifest(p).exists()) {
        assert!(child.try_wait().expect("wait").is_none(), "the crawl ended before layer 0 was committed");
        assert!(Instant::now() < deadline, "layer 0 was not committed");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Checks that the topics `prefix.*` hold the pages of the crawl in
/// `data`, each once, and one marker per committed map task.
fn check(broker: &Broker, prefix: &str, data: &Path, window: (jiff::Timestamp, jiff::Timestamp)) -> usize {
    let want = pages(&read_docs(data));
    assert!(want.len() > 60, "{} pages", want.len());
    let msgs = broker.read(prefix);
    check_messages(&msgs, prefix, &want, |_: &Doc| "pages", window);
    let (committed, marked) = (manifests(data), markers(&msgs));
    assert_eq!(marked.keys().collect::<Vec<_>>(), committed.keys().collect::<Vec<_>>());
    for (at, attempt) in &committed {
        assert_eq!(marked[at].len(), 1, "{at:?}: {:?}", marked[at]);
        assert_eq!(&marked[at][0].0, attempt, "{at:?}: the marker names the committed attempt");
    }
    want.len()
}

#[test]
fn on_a_real_broker_killed_mid_crawl_every_page_is_read_back_once() {
    let mut broker = Broker::start();
    let web = Web::start(FarmConfig { sites: 3, pages: 40, seed: 31, latency_ms: (2, 6), ..FarmConfig::default() });

    // 1. Killed once layer 0 is committed, and started again 3 s later:
    //    the tasks of layer 1 wait for it, and the crawl ends.
    let data = web.dir("restart");
    let start = jiff::Timestamp::now();
    let mut child = crawl(&web, &data, &broker.sink("restart")).spawn().expect("spawn layercrawl");
    layer_0_committed(&mut child, &data);
    broker.kill();
    std::thread::sleep(Duration::from_secs(3));
    broker.up();
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "the crawl did not wait for the broker:\n{}", String::from_utf8_lossy(&out.stderr));
    let n = check(&broker, "restart", &data, (start, jiff::Timestamp::now()));
    eprintln!("restart: {n} pages read back once each");

    // 2. Killed once layer 0 is committed, and down until the crawl stops:
    //    it exits 1 naming the brokers, without committing a partition it
    //    could not publish; once the broker is back, the same command
    //    resumes and ends.
    let data = web.dir("outage");
    let start = jiff::Timestamp::now();
    let mut child = crawl(&web, &data, &broker.sink("outage")).spawn().expect("spawn layercrawl");
    layer_0_committed(&mut child, &data);
    broker.kill();
    let t = Instant::now();
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot reach the brokers {}", broker.bootstrap())), "{err}");
    eprintln!("outage: the crawl stopped {:.1} s after the broker went", t.elapsed().as_secs_f64());
    let layer1 = |p: u32| data.join(format!("state/manifest/layer=1/map-{p:05}.json"));
    assert!((0..2).all(|p| !layer1(p).exists()), "a partition of layer 1 committed without its broker");
    broker.up();
    crawl_ok(&web.run_args(
        &data,
        2,
        &["--delay", "0", "--per-host", "2", "--partitions", "2", "--sink", &broker.sink("outage")],
    ));
    let n = check(&broker, "outage", &data, (start, jiff::Timestamp::now()));
    eprintln!("outage: {n} pages read back once each after the resume");
}
