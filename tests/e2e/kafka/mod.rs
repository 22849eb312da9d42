//! The Kafka sink end to end (docs/src/kafka.md): the real binary crawls the
//! test web with `--sink` pointed at librdkafka's mock cluster, which this
//! test process starts on loopback ports (here, where a test needs what only
//! the mock does: errors injected into the protocol; `broker` runs the same
//! checks against a broker process that is killed and started again), and
//! an rdkafka consumer reads the topics back with
//! `read_committed`: one message per page with a response, keyed by URL,
//! its JSON fields, topics by rule and by role; killed between layers and
//! inside a partition's commit, the resumed crawl publishes every page
//! once; bad sink URLs and an unreachable broker stop the run, saying why.

mod broker;

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{crawl_ok, layercrawl, read_docs, Doc, Web};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use testweb::FarmConfig;

const CONTROL: &str = "__commits";

/// A mock Kafka cluster of three brokers, on loopback, for one test.
struct Kafka(MockCluster<'static, DefaultProducerContext>);

impl Kafka {
    fn start() -> Self {
        Self(MockCluster::new(3).expect("librdkafka's mock cluster"))
    }

    fn sink(&self, prefix: &str) -> String {
        format!("kafka://{}/{prefix}", self.0.bootstrap_servers())
    }

    /// Every record of the topics `PREFIX.*`, read as a `read_committed`
    /// consumer reads them: (topic, key, JSON value).
    fn read(&self, prefix: &str) -> Vec<(String, String, serde_json::Value)> {
        self.read_as(prefix, "read_committed")
    }

    fn read_as(&self, prefix: &str, isolation: &str) -> Vec<(String, String, serde_json::Value)> {
        read_topics(&self.0.bootstrap_servers(), prefix, isolation)
    }
}

/// Every record of the topics `PREFIX.*` on the brokers `bootstrap`, read
/// with `isolation` (`read_committed` or `read_uncommitted`): (topic, key,
/// JSON value).
fn read_topics(bootstrap: &str, prefix: &str, isolation: &str) -> Vec<(String, String, serde_json::Value)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "kafka-test")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", isolation)
        .create()
        .expect("consumer");
    let meta = c.fetch_metadata(None, Duration::from_secs(10)).expect("metadata");
    let mut tpl = TopicPartitionList::new();
    let mut pending = BTreeSet::new();
    for t in meta.topics().iter().filter(|t| t.name().starts_with(&format!("{prefix}."))) {
        for p in t.partitions() {
            let (lo, hi) = c.fetch_watermarks(t.name(), p.id(), Duration::from_secs(10)).expect("watermarks");
            if hi > lo {
                tpl.add_partition_offset(t.name(), p.id(), Offset::Beginning).expect("assign");
                pending.insert((t.name().to_string(), p.id()));
            }
        }
    }
    let mut out = Vec::new();
    if pending.is_empty() {
        return out;
    }
    c.assign(&tpl).expect("assign");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pending.is_empty() {
        assert!(Instant::now() < deadline, "topics not read to their end: {pending:?}");
        match c.poll(Duration::from_millis(500)) {
            None => {}
            Some(Err(KafkaError::PartitionEOF(p))) => {
                // The EOF names the partition, not the topic: a topic
                // is done when its partition's position is its end.
                let done: Vec<_> = pending
                    .iter()
                    .filter(|(t, q)| *q == p && c.position().ok().is_some_and(|pos| at_end(&c, &pos, t, *q)))
                    .cloned()
                    .collect();
                for d in done {
                    pending.remove(&d);
                }
            }
            Some(Err(e)) => panic!("consuming: {e}"),
            Some(Ok(m)) => {
                let key = String::from_utf8(m.key().expect("keyed").to_vec()).expect("UTF-8 key");
                let value = serde_json::from_slice(m.payload().expect("a payload")).expect("JSON value");
                out.push((m.topic().to_string(), key, value));
            }
        }
    }
    out
}

/// Whether the consumer's position in `topic` partition `p` is its end.
fn at_end(c: &BaseConsumer, pos: &TopicPartitionList, topic: &str, p: i32) -> bool {
    let Some(Offset::Offset(at)) = pos.find_partition(topic, p).map(|e| e.offset()) else { return false };
    c.fetch_watermarks(topic, p, Duration::from_secs(10)).is_ok_and(|(_, hi)| at >= hi)
}

/// The pages a crawl's messages must be: its `doc` rows with a response.
fn pages(docs: &[Doc]) -> BTreeMap<String, Doc> {
    let mut out = BTreeMap::new();
    for d in docs.iter().filter(|d| d.status > 0) {
        assert!(out.insert(d.url.clone(), d.clone()).is_none(), "{} has two doc rows", d.url);
    }
    out
}

/// Checks that the page messages are the crawl's pages, once each, with
/// the right fields; `topic` says which topic a page is on. Returns the
/// pages whose content was cut to fit a message.
fn check_messages(
    msgs: &[(String, String, serde_json::Value)],
    prefix: &str,
    want: &BTreeMap<String, Doc>,
    topic: impl Fn(&Doc) -> &'static str,
    window: (jiff::Timestamp, jiff::Timestamp),
) -> Vec<String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut cut = Vec::new();
    for (t, key, v) in msgs.iter().filter(|(t, _, _)| !t.ends_with(CONTROL)) {
        *seen.entry(key.as_str()).or_default() += 1;
        let d = want.get(key).unwrap_or_else(|| panic!("{key} on {t} is not a page of the crawl"));
        assert_eq!(v["url"], key.as_str(), "keyed by its URL");
        assert_eq!(v["id"], format!("{:016x}", xxhash_rust::xxh3::xxh3_64(key.as_bytes())));
        assert_eq!(v["resource"], layercrawl::urlnorm::registrable_domain(&d.host));
        let content =
            d.main_text.clone().filter(|t| !t.is_empty()).or_else(|| d.text.clone().filter(|t| !t.is_empty()));
        let fields = if v["truncated"] == true {
            // Cut to fit the message size limit: the start of the text.
            let (sent, whole) = (v["content"].as_str().expect("content"), content.as_deref().expect("a text"));
            assert!(whole.starts_with(sent) && sent.len() > 900_000 && sent.len() < whole.len(), "{key}");
            cut.push(key.clone());
            6
        } else {
            assert_eq!(v["content"].as_str(), content.as_deref(), "{key}");
            5
        };
        let time: jiff::Timestamp = v["time"].as_str().expect("time").parse().expect("RFC 3339");
        assert!(window.0 <= time && time <= window.1, "{key} fetched at {time}, not during the crawl");
        assert_eq!(
            v.as_object().map(serde_json::Map::len),
            Some(fields),
            "{key}: {:?}",
            v.as_object().map(|o| o.keys().collect::<Vec<_>>())
        );
        assert_eq!(t, &format!("{prefix}.{}", topic(d)), "{key} (final URL {})", d.final_url);
    }
    let twice: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "published more than once: {twice:?}");
    let missing: Vec<_> = want.keys().filter(|u| !seen.contains_key(u.as_str())).collect();
    assert!(missing.is_empty(), "never published: {missing:?}");
    cut
}

/// The committed attempt of each map task that had URLs to fetch (one
/// with none publishes nothing), by (layer, partition).
fn manifests(data: &Path) -> BTreeMap<(u64, u64), String> {
    let mut out = BTreeMap::new();
    for layer in std::fs::read_dir(data.join("state/manifest")).expect("manifests").flatten() {
        if !layer.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(layer.path()).expect("layer").flatten() {
            if !f.file_name().to_string_lossy().starts_with("map-") {
                continue;
            }
            let m: serde_json::Value = serde_json::from_slice(&std::fs::read(f.path()).expect("read")).expect("json");
            if m["input"].as_u64() == Some(0) {
                continue;
            }
            out.insert(
                (m["layer"].as_u64().expect("layer"), m["partition"].as_u64().expect("part")),
                m["attempt"].as_str().expect("attempt").to_string(),
            );
        }
    }
    out
}

/// The control topic's markers, by (layer, partition): (attempt, messages).
fn markers(msgs: &[(String, String, serde_json::Value)]) -> BTreeMap<(u64, u64), Vec<(String, u64)>> {
    let mut out: BTreeMap<_, Vec<_>> = BTreeMap::new();
    for (_, _, v) in msgs.iter().filter(|(t, _, _)| t.ends_with(CONTROL)) {
        let at = (v["layer"].as_u64().expect("layer"), v["partition"].as_u64().expect("partition"));
        out.entry(at)
            .or_default()
            .push((v["attempt"].as_str().expect("attempt").to_string(), v["messages"].as_u64().expect("n")));
    }
    out
}

#[test]
fn every_page_with_a_response_is_one_message_keyed_by_its_url_on_its_rules_topic() {
    let kafka = Kafka::start();
    let farm = testweb::Farm::start_background(FarmConfig { sites: 3, pages: 30, seed: 23, ..FarmConfig::default() })
        .expect("test web");
    // A seed nothing answers: a doc row without a response, not a page;
    // and an 11 MiB page, whose text does not fit in one message.
    let mut seeds = farm.start_urls();
    seeds.extend(["http://127.0.0.1:1/closed".into(), "http://faults.test/big".into()]);
    let web = Web::with_seeds(farm, &seeds);
    let rules = web.dir("rules.toml");
    std::fs::write(&rules, "[[rule]]\nname = \"first-site\"\nurls = [\"http://s000.test/**\"]\n\n[[rule.field]]\nname = \"title\"\ncss = \"h1\"\n").expect("rules");
    let data = web.dir("data");
    let (sink, rules_arg) = (kafka.sink("crawl"), rules.display().to_string());
    let start = jiff::Timestamp::now();
    web.crawl(
        &data,
        2,
        &["--delay", "0", "--per-host", "4", "--partitions", "3", "--rules", &rules_arg, "--sink", &sink],
    );
    let window = (start, jiff::Timestamp::now());

    let docs = read_docs(&data);
    assert!(
        docs.iter().any(|d| d.status == 0 && d.url.starts_with("http://127.0.0.1:1/")),
        "the closed seed has its row"
    );
    let want = pages(&docs);
    assert!(want.len() > 60, "{} pages", want.len());
    let msgs = kafka.read("crawl");
    // A rule matches the final URL, as the map stage applies it.
    let on_rule = |d: &Doc| if d.final_url.starts_with("http://s000.test/") { "first-site" } else { "pages" };
    let cut = check_messages(&msgs, "crawl", &want, on_rule, window);
    assert!(cut.contains(&"http://faults.test/big".to_string()), "the big page's content was cut to fit: {cut:?}");
    assert!(msgs.iter().any(|(t, _, _)| t == "crawl.first-site") && msgs.iter().any(|(t, _, _)| t == "crawl.pages"));

    // One marker per map task, naming the attempt that committed it, and
    // the task's record in the data location saying what it sent.
    let committed = manifests(&data);
    let marked = markers(&msgs);
    assert!(committed.len() >= 7, "3 layers x 3 partitions, most with URLs: {committed:?}");
    assert_eq!(marked.keys().collect::<Vec<_>>(), committed.keys().collect::<Vec<_>>());
    let mut total = 0;
    for (at, attempt) in &committed {
        assert_eq!(marked[at].len(), 1, "{at:?}: {:?}", marked[at]);
        let (published_by, n) = &marked[at][0];
        assert_eq!(published_by, attempt, "{at:?}");
        let record = data.join(format!("state/sink/layer={}/map-{:05}.json", at.0, at.1));
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).expect("record")).expect("json");
        assert_eq!((r["attempt"].as_str(), r["messages"].as_u64()), (Some(attempt.as_str()), Some(*n)), "{r}");
        total += n;
    }
    assert_eq!(total as usize, want.len());
}

/// Waits until `done` holds, checking every few milliseconds.
fn wait_for(what: &str, child: &mut std::process::Child, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(child.try_wait().expect("wait").is_none(), "the crawl ended before {what}");
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn killed_between_layers_and_inside_a_commit_the_resumed_crawl_publishes_every_page_once() {
    let kafka = Kafka::start();
    let web = Web::start(FarmConfig { sites: 3, pages: 40, seed: 29, latency_ms: (2, 6), ..FarmConfig::default() });
    // Every page has a role: s001.test's are `nav`, the others `content`.
    let plan = web.dir("plan.toml");
    std::fs::write(
        &plan,
        "name = \"roles\"\n[[group]]\nname = \"words\"\nany = [\"the\"]\n[[role]]\nrole = \"nav\"\nurls = [\"http://s001.test/**\"]\n",
    )
    .expect("plan");
    let data = web.dir("data");
    let (sink, plan_arg) = (kafka.sink("night"), plan.display().to_string());
    let args = web.run_args(
        &data,
        2,
        &["--delay", "0", "--per-host", "2", "--partitions", "2", "--plan", &plan_arg, "--sink", &sink],
    );
    let parts = 2;
    let manifest = |layer: u32, part: u32| data.join(format!("state/manifest/layer={layer}/map-{part:05}.json"));
    let start = jiff::Timestamp::now();

    // 1. Killed once layer 0 is committed: its pages are out, layer 1 is
    //    being fetched.
    let mut child = common::spawn_quiet(&args);
    wait_for("layer 0's commits", &mut child, || (0..parts).all(|p| manifest(0, p).exists()));
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    // 2. Resumed, and killed inside layer 1's commits: every partition has
    //    sent its pages and its marker, and waits for the coordinator to
    //    end the transaction (the mock cluster answers EndTxn "coordinator
    //    loading" until told otherwise); no layer-1 manifest is written.
    kafka
        .0
        .request_errors(RDKafkaApiKey::EndTxn, &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS; 500]);
    let mut child = common::spawn_quiet(&args);
    let layer1_marked = || {
        let m = markers(&kafka.read_as("night", "read_uncommitted"));
        (0..parts).all(|p| m.contains_key(&(1, u64::from(p))))
    };
    wait_for("layer 1's markers", &mut child, layer1_marked);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    kafka.0.clear_request_errors(RDKafkaApiKey::EndTxn);
    assert!((0..parts).all(|p| !manifest(1, p).exists()), "killed after a layer-1 commit: the kill missed its window");
    let killed_in_commit = markers(&kafka.read("night"));

    // 3. Resumed to the end.
    crawl_ok(&args);
    let window = (start, jiff::Timestamp::now());
    let docs = read_docs(&data);
    let want = pages(&docs);
    let msgs = kafka.read("night");
    // The plan's role is the requested URL's.
    let by_role = |d: &Doc| if d.url.starts_with("http://s001.test/") { "nav" } else { "content" };
    check_messages(&msgs, "night", &want, by_role, window);
    // Layer 1 was committed from the attempts that had published it.
    let committed = manifests(&data);
    for p in 0..parts {
        let at = (1, u64::from(p));
        assert_eq!(killed_in_commit[&at].len(), 1);
        assert_eq!(committed[&at], killed_in_commit[&at][0].0, "partition {p} of layer 1");
    }
    let marked = markers(&msgs);
    assert_eq!(marked.keys().collect::<Vec<_>>(), committed.keys().collect::<Vec<_>>());
    assert!(marked.values().all(|m| m.len() == 1), "{marked:?}");
}

#[test]
fn a_bad_sink_url_exits_2_and_an_unreachable_broker_stops_the_run_naming_it() {
    let web = Web::start(FarmConfig { sites: 1, pages: 5, ..FarmConfig::default() });
    let data = web.dir("data");
    for (sink, says) in [
        ("http://127.0.0.1:9092/crawl", "is not a sink URL"),
        ("kafka://127.0.0.1:9092", "no topic prefix"),
        ("kafka://127.0.0.1:99999/crawl", "broker \"127.0.0.1:99999\""),
    ] {
        let out = layercrawl(&web.run_args(&data, 1, &["--sink", sink]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{sink}: {err}");
        assert!(err.contains("sink") && err.contains(says), "{sink}: {err}");
    }
    // The job file's key is checked the same way.
    let job = web.dir("job.toml");
    std::fs::write(&job, "sink = \"kafka://k1/bad/prefix\"\n").expect("job");
    let out = layercrawl(&web.run_args(&data, 1, &["--job", &job.display().to_string()]));
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("topic prefix"));
    assert!(!data.exists(), "nothing started");

    // Nothing listens on port 1: the run stops, naming the broker, and
    // commits nothing (the pages would otherwise never reach Kafka).
    let t = Instant::now();
    let out = layercrawl(&web.run_args(&data, 1, &["--sink", "kafka://127.0.0.1:1/crawl"]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot reach the brokers 127.0.0.1:1"), "{err}");
    assert!(!data.join("state/manifest/layer=0/map-00000.json").exists(), "a partition committed unpublished");
    eprintln!("unreachable broker reported in {:.1} s", t.elapsed().as_secs_f64());
}
