//! The Kafka sink against a broker in a process of its own
//! (docs/src/kafka.md, "Building and testing"): noida-db's Kafka service,
//! which `scripts/kafka-broker.sh` installs once from PyPI into
//! target/tools, on a loopback port, its topics in a folder that outlives
//! the process. Unlike the mock cluster it keeps a transaction's records
//! from `read_committed` readers until it commits, aborts an open
//! transaction when a producer of the same transactional id starts, and
//! can be killed and started again. The crawler publishes, an rdkafka
//! consumer reads every record back and compares it with the crawl's `doc`
//! rows. The crawler is killed inside a transaction, whose pages are then
//! never read with `read_committed` (and are read twice without it); the
//! broker is killed in the middle of a crawl, once for a few seconds (the
//! crawl waits for it) and once for longer than the sink waits (the crawl
//! stops, naming the brokers, and the same command resumes); every page is
//! read back once.

use super::{check_messages, manifests, markers, pages, read_topics, CONTROL};
use crate::common;

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{crawl_ok, read_docs, Doc, Web};
use testweb::FarmConfig;

/// A record read back: (topic, key, JSON value).
type Record = (String, String, serde_json::Value);

/// One broker on loopback; killed when dropped.
struct Broker {
    bin: PathBuf,
    /// Its data folder and its log.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    /// Installs the broker if needed, then starts it.
    fn start() -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kafka-broker.sh");
        let out = Command::new("bash").arg(script).output().expect("run scripts/kafka-broker.sh");
        assert!(
            out.status.success(),
            "scripts/kafka-broker.sh failed (it installs noida-db from PyPI into target/tools):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
        let mut broker = Self { bin, dir: tempfile::tempdir().expect("tempdir"), port, child: None };
        broker.up();
        broker
    }

    /// Starts the broker process on its port and data, and waits until it
    /// accepts connections.
    fn up(&mut self) {
        assert!(self.child.is_none(), "the broker already runs");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("broker.log"))
            .expect("broker log");
        let started = Instant::now();
        let child = Command::new(&self.bin)
            .arg("start")
            .arg("--data-dir")
            .arg(self.dir.path().join("data"))
            .args(["--host", "127.0.0.1", "--only", "kafka", "--kafka-port", &self.port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the broker");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "the broker did not listen on port {}: {}", self.port, self.log());
            std::thread::sleep(Duration::from_millis(5));
        }
        eprintln!("broker: listening {} ms after its start", started.elapsed().as_millis());
    }

    /// Stops the broker with SIGTERM, as a Kafka broker's controlled
    /// shutdown: noida-db writes its topics to its folder a moment after
    /// they change (within 2 s), and on SIGTERM at once, so a SIGKILL
    /// would lose records it had acknowledged, which no client can guard
    /// against (a Kafka broker's log is in the page cache when it
    /// acknowledges, and outlives its process).
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let t = Instant::now();
            let pid = libc::pid_t::try_from(c.id()).expect("pid");
            assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
            let deadline = Instant::now() + Duration::from_secs(10);
            while c.try_wait().expect("wait").is_none() {
                if Instant::now() > deadline {
                    let _ = c.kill();
                    panic!("the broker did not stop within 10 s of SIGTERM: {}", self.log());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            eprintln!("broker: stopped {} ms after SIGTERM", t.elapsed().as_millis());
        }
    }

    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn sink(&self, prefix: &str) -> String {
        format!("kafka://{}/{prefix}", self.bootstrap())
    }

    fn read(&self, prefix: &str) -> Vec<Record> {
        read_topics(&self.bootstrap(), prefix, "read_committed")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("broker.log")).unwrap_or_default()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The crawl's arguments: depth 2 over `web` into `data`, two partitions,
/// publishing to `sink`.
fn args(web: &Web, data: &Path, sink: &str) -> Vec<String> {
    web.run_args(data, 2, &["--delay", "0", "--per-host", "2", "--partitions", "2", "--sink", sink])
}

/// Starts a crawl, its output kept for `wait_with_output`.
fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn layercrawl")
}

fn manifest(data: &Path, layer: u32, part: u32) -> PathBuf {
    data.join(format!("state/manifest/layer={layer}/map-{part:05}.json"))
}

/// Waits (checking every millisecond) until `done` gives a value.
fn wait_for<T>(what: &str, child: &mut Child, done: impl Fn() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(v) = done() {
            return v;
        }
        assert!(child.try_wait().expect("wait").is_none(), "the crawl ended before {what}");
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Waits until every partition of layer 0 of `data` is committed.
fn layer_0_committed(child: &mut Child, data: &Path) {
    wait_for("layer 0's commits", child, || (0..2).all(|p| manifest(data, 0, p).exists()).then_some(()));
}

/// The partition of `layer` whose attempt has staged its sink record: its
/// pages are sent and acknowledged, its marker and commit are next
/// (docs/src/kafka.md, "Exactly once, and why", step 3).
fn staged_sink_record(data: &Path, layer: u32) -> Option<u32> {
    (0..2).find(|&p| {
        let attempts = data.join(format!("state/attempts/layer={layer}/map-{p:05}"));
        std::fs::read_dir(attempts)
            .into_iter()
            .flatten()
            .flatten()
            .any(|a| a.path().join(format!("state/sink/layer={layer}/map-{p:05}.json")).exists())
    })
}

/// Checks that the topics `prefix.*` hold the pages of the crawl in
/// `data`, each once, equal to its `doc` rows, and one marker per
/// committed map task, naming the attempt that committed. Returns the
/// number of pages.
fn check(msgs: &[Record], prefix: &str, data: &Path, window: (jiff::Timestamp, jiff::Timestamp)) -> usize {
    let want = pages(&read_docs(data));
    assert!(want.len() > 60, "{} pages", want.len());
    check_messages(msgs, prefix, &want, |_: &Doc| "pages", window);
    let (committed, marked) = (manifests(data), markers(msgs));
    assert_eq!(marked.keys().collect::<Vec<_>>(), committed.keys().collect::<Vec<_>>());
    for (at, attempt) in &committed {
        assert_eq!(marked[at].len(), 1, "{at:?}: {:?}", marked[at]);
        assert_eq!(&marked[at][0].0, attempt, "{at:?}: the marker names the committed attempt");
    }
    want.len()
}

/// How many times each page's URL is among the page records.
fn times_read(msgs: &[Record]) -> BTreeMap<&str, usize> {
    let mut seen = BTreeMap::new();
    for (_, key, _) in msgs.iter().filter(|(t, _, _)| !t.ends_with(CONTROL)) {
        *seen.entry(key.as_str()).or_default() += 1;
    }
    seen
}

#[test]
fn on_a_broker_a_crawl_killed_inside_a_transaction_is_read_back_once_with_read_committed() {
    let broker = Broker::start();
    let web = Web::start(FarmConfig { sites: 3, pages: 40, seed: 37, latency_ms: (2, 6), ..FarmConfig::default() });
    let data = web.dir("data");
    let args = args(&web, &data, &broker.sink("night"));
    let start = jiff::Timestamp::now();

    // 1. Killed inside a layer-1 partition's transaction: its pages are
    //    sent and acknowledged and its record staged, the transaction not
    //    committed. SIGSTOP first, at once, then SIGKILL.
    let mut child = spawn(&args);
    let part = wait_for("a layer-1 transaction", &mut child, || staged_sink_record(&data, 1));
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert!(!manifest(&data, 1, part).exists(), "partition {part} of layer 1 committed: the kill missed its window");
    let committed_markers = markers(&broker.read("night"));
    assert!(
        !committed_markers.contains_key(&(1, u64::from(part))),
        "partition {part} of layer 1 committed its transaction before the kill: {committed_markers:?}"
    );
    // Its pages are on the broker, in the open transaction: a reader that
    // does not skip open transactions sees them.
    let open = read_topics(&broker.bootstrap(), "night", "read_uncommitted");
    assert!(open.len() > broker.read("night").len(), "the open transaction's pages are not on the broker");

    // 2. Resumed to the end: the partition's next attempt aborts the open
    //    transaction and publishes its pages again, in one that commits.
    crawl_ok(&args);
    let window = (start, jiff::Timestamp::now());
    let n = check(&broker.read("night"), "night", &data, window);
    eprintln!("killed inside a transaction: {n} pages read back once each with read_committed");

    // Read without `read_committed`, the aborted transaction's pages are
    // there a second time: what the isolation level keeps out.
    let all = read_topics(&broker.bootstrap(), "night", "read_uncommitted");
    let twice: Vec<_> = times_read(&all).into_iter().filter(|&(_, k)| k > 1).collect();
    assert!(!twice.is_empty(), "read_uncommitted read no page twice: the aborted transaction is gone");
    assert!(twice.iter().all(|&(_, k)| k == 2), "{twice:?}");
    eprintln!("read_uncommitted: {} pages twice (the aborted transaction's)", twice.len());
}

#[test]
fn on_a_broker_restarted_mid_crawl_the_crawl_waits_and_every_page_is_read_back_once() {
    let mut broker = Broker::start();
    let web = Web::start(FarmConfig { sites: 3, pages: 40, seed: 31, latency_ms: (2, 6), ..FarmConfig::default() });
    // Killed once layer 0 is committed, and started again 3 s later: the
    // tasks of layer 1 wait for it (up to 10 s for a first answer), and
    // the crawl ends.
    let data = web.dir("data");
    let start = jiff::Timestamp::now();
    let mut child = spawn(&args(&web, &data, &broker.sink("restart")));
    layer_0_committed(&mut child, &data);
    broker.stop();
    std::thread::sleep(Duration::from_secs(3));
    broker.up();
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "the crawl did not wait for the broker:\n{}", String::from_utf8_lossy(&out.stderr));
    let n = check(&broker.read("restart"), "restart", &data, (start, jiff::Timestamp::now()));
    eprintln!("restart: {n} pages read back once each");
}

#[test]
fn on_a_broker_gone_mid_crawl_the_run_stops_naming_it_and_the_resume_publishes_the_rest_once() {
    let mut broker = Broker::start();
    let web = Web::start(FarmConfig { sites: 3, pages: 40, seed: 41, latency_ms: (2, 6), ..FarmConfig::default() });
    // Killed once layer 0 is committed, and down until the crawl stops: it
    // exits 1 naming the brokers, without committing a partition it could
    // not publish; once the broker is back, the same command resumes and
    // ends.
    let data = web.dir("data");
    let args = args(&web, &data, &broker.sink("outage"));
    let start = jiff::Timestamp::now();
    let mut child = spawn(&args);
    layer_0_committed(&mut child, &data);
    broker.stop();
    let t = Instant::now();
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot reach the brokers {}", broker.bootstrap())), "{err}");
    eprintln!("outage: the crawl stopped {:.1} s after the broker went: {}", t.elapsed().as_secs_f64(), err.trim());
    assert!((0..2).all(|p| !manifest(&data, 1, p).exists()), "a partition of layer 1 committed without its broker");
    broker.up();
    crawl_ok(&args);
    let n = check(&broker.read("outage"), "outage", &data, (start, jiff::Timestamp::now()));
    eprintln!("outage: {n} pages read back once each after the resume");
}
