//! The Kafka sink as a build with the cargo feature `kafka` has it
//! (docs/src/kafka.md): its URL checked (`url.rs`), and each map task
//! publishing its partition's pages in one Kafka transaction, tied to its
//! commit so that a crawl killed at any point and resumed leaves each page
//! in the topics exactly once (for `read_committed` readers).
//!
//! The order of one map attempt A of partition P of layer L:
//!
//! 1. When the task starts, A makes a producer with the transactional id of
//!    (crawl, L, P) and initialises its transactions: an earlier producer
//!    of the same task is fenced off and its open transaction aborted.
//! 2. Once its outputs are staged in its folder, A reads the control topic
//!    to its end (`read_committed`, once every transaction open at that
//!    moment has ended). A marker of (crawl, L, P) there names the attempt
//!    X whose pages are out: A commits X's staged outputs (X's manifest,
//!    from X's staged record) and drops its own.
//! 3. Otherwise A sends its pages from its staged `doc` shard, stages its
//!    record (what it sent and the manifest it will commit), sends the
//!    marker naming A, and commits the transaction.
//! 4. A commits its manifest, create-if-absent, and publishes its folder
//!    (the map task's commit, `map/output/` in the binary, which asks
//!    [`Sink::publish`] before 4 and [`Sink::accept`] when another
//!    manifest was there first).
//!
//! Killed before 3 commits, nothing is readable and the next attempt does
//! the work; killed after, the marker names A and the next attempt (or a
//! resumed run, which looks before it fetches: [`Sink::published_earlier`])
//! commits A's outputs without sending anything. A manifest is committed
//! only for the attempt a marker names, so the data store and the topics
//! hold the same pages.

mod clients;
mod control;
mod error;
mod message;
mod txn;
mod url;

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use futures::StreamExt;

use crate::rules::Rules;
use crate::store::attempt::{self, Attempt};
use crate::store::dataset::DOC;
use crate::store::manifest::MapManifest;
use crate::store::{layout, stream_batches, Created, Store};
use crate::{Parse, Sink, SinkError};

use control::{Marker, Reach};
use error::KafkaSinkError;
use message::Topics;
pub use txn::Sent;
use txn::Txn;
use url::KafkaUrl;

/// This build checks Kafka sink URLs (and so has the Kafka sink).
pub(crate) const PARSE: Option<Parse> = Some(url::parse);

/// Batches of the staged `doc` shard waiting for the publishing thread.
const BATCHES_AHEAD: usize = 2;

/// What a map attempt published, staged with its outputs before its
/// transaction commits (`state/sink/layer=L/map-P.json` once published):
/// a later attempt that finds the attempt's marker commits this manifest.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Published {
    /// The crawl's id in the topics (`state/sink/run.json`).
    pub run: String,
    pub attempt: String,
    /// The sink, `kafka://BROKERS/PREFIX`.
    pub sink: String,
    #[serde(flatten)]
    pub sent: Sent,
    /// From the transaction's start to the last page acknowledged.
    pub produce_ms: u64,
    /// The manifest the attempt commits.
    pub manifest: MapManifest,
}

/// The Kafka sink of one map task.
pub(crate) struct KafkaSink {
    spec: KafkaUrl,
    run: String,
    layer: u32,
    part: u32,
    task_dir: String,
    /// The task's producer, its transactions initialised when the task
    /// started: a transaction a killed attempt left open is aborted then,
    /// not when this attempt commits, so readers are held back no longer.
    txn: Txn,
    /// The marker found when the task started, if any.
    earlier: Option<Marker>,
}

/// The crawl's id in the topics: made once per data location.
#[derive(serde::Serialize, serde::Deserialize)]
struct RunId {
    run: String,
}

impl Sink for KafkaSink {
    /// The marker found when the task started names the attempt, whose
    /// outputs are committed.
    fn published_earlier<'a>(&'a self, store: &'a Store) -> BoxFuture<'a, Result<Option<MapManifest>, SinkError>> {
        Box::pin(async move {
            match &self.earlier {
                Some(m) => Ok(Some(self.adopt(store, &m.attempt, None).await?)),
                None => Ok(None),
            }
        })
    }

    /// Reads the control topic to its end first: a marker of another
    /// attempt means that attempt published; otherwise this one's pages and
    /// marker go out in one transaction (the module's steps 2 and 3).
    fn publish<'a>(
        &'a self,
        store: &'a Store,
        attempt: &'a Attempt,
        manifest: &'a MapManifest,
        rules: Option<Arc<Rules>>,
    ) -> BoxFuture<'a, Result<Option<MapManifest>, SinkError>> {
        Box::pin(async move {
            let (spec, key, (layer, part)) = (self.spec.clone(), self.key(), (self.layer, self.part));
            let marker = self.blocking(move || control::find(&spec, &key, Reach::Settled, (layer, part))).await?;
            match marker {
                Some(m) if m.attempt != attempt.id => Ok(Some(self.adopt(store, &m.attempt, Some(attempt)).await?)),
                // Its own marker: the transaction committed (a commit call that
                // failed after all); only the manifest is left to write.
                Some(_) => Ok(None),
                None => {
                    self.transact(store, attempt, manifest, rules).await?;
                    Ok(None)
                }
            }
        })
    }

    /// The topics hold `published`'s pages: [`KafkaSinkError::Diverged`]
    /// when `committed` names another attempt.
    fn accept(&self, published: &str, committed: &MapManifest) -> Result<(), SinkError> {
        self.same_attempt(published, committed)
    }
}

impl KafkaSink {
    /// The sink of the map task of partition `part` of `layer`: reaches
    /// the brokers and looks for the partition's marker.
    ///
    /// # Errors
    /// When no broker answers (the message names them), or storage fails.
    pub(crate) async fn open(spec: &KafkaUrl, store: &Store, layer: u32, part: u32) -> Result<Self, SinkError> {
        let run = run_id(store).await?;
        let (key, txn_id) = (marker_key(&run, layer, part), transactional_id(&run, layer, part));
        let owned = spec.clone();
        let found = tokio::task::spawn_blocking(move || {
            // The control topic first: no broker answering fails here, after
            // the connect timeout, naming the brokers.
            let earlier = control::find(&owned, &key, Reach::Now, (layer, part))?;
            Ok((earlier, Txn::init(&owned, &txn_id, layer, part)?))
        })
        .await;
        let (earlier, txn) = joined(found, spec, (layer, part))?;
        let task_dir = layout::task_attempts(layer, "map", part);
        Ok(Self { spec: spec.clone(), run, layer, part, task_dir, txn, earlier })
    }

    /// Sends the attempt's pages and marker in `txn` and commits it, the
    /// attempt's record staged before the commit.
    async fn transact(
        &self,
        store: &Store,
        attempt: &Attempt,
        manifest: &MapManifest,
        rules: Option<Arc<Rules>>,
    ) -> Result<(), SinkError> {
        let started = Instant::now();
        let txn = self.txn.clone();
        let sent = match self.send_pages(store, attempt, rules, &txn).await {
            Ok(sent) => sent,
            Err(e) => {
                self.blocking(move || {
                    txn.abort();
                    Ok(())
                })
                .await?;
                return Err(e);
            }
        };
        let record = Published {
            run: self.run.clone(),
            attempt: attempt.id.clone(),
            sink: format!("{:?}", self.spec),
            sent,
            produce_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            manifest: manifest.clone(),
        };
        attempt.store(store).put_json(&layout::sink_record(self.layer, self.part), &record).await?;
        let marker = Marker {
            run: self.run.clone(),
            layer: self.layer,
            partition: self.part,
            attempt: attempt.id.clone(),
            messages: record.sent.messages,
            data: store.location().to_string(),
        };
        let payload = serde_json::to_vec(&marker).expect("a marker is strings and numbers");
        let (topic, key) = (self.spec.control_topic(), self.key());
        tracing::debug!(layer = self.layer, partition = self.part, messages = record.sent.messages, "committing");
        self.blocking(move || {
            txn.send(&topic, &key, &payload)?;
            txn.flush()?;
            txn.commit()
        })
        .await
    }

    /// Streams the staged `doc` shard to a blocking thread that builds and
    /// sends the messages in the open transaction.
    async fn send_pages(
        &self,
        store: &Store,
        attempt: &Attempt,
        rules: Option<Arc<Rules>>,
        txn: &Txn,
    ) -> Result<Sent, SinkError> {
        let topics = Topics::new(&self.spec, rules);
        let txn = txn.clone();
        let started = txn.clone();
        self.blocking(move || started.begin()).await?;
        let doc = attempt.store(store).write_path(&layout::shard(DOC.name, self.layer, self.part));
        if !store.exists(&doc).await? {
            return Ok(Sent::default());
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<arrow_array::RecordBatch>(BATCHES_AHEAD);
        let sender = tokio::task::spawn_blocking(move || {
            let mut sent = Sent::default();
            while let Some(batch) = rx.blocking_recv() {
                txn.send_pages(&batch, &topics, &mut sent)?;
            }
            txn.flush()?;
            Ok(sent)
        });
        let mut read = Ok(());
        let mut batches = stream_batches(store, &doc, Some(&message::COLUMNS)).await?;
        while let Some(b) = batches.next().await {
            match b {
                // A closed channel: the sender stopped on an error, which it returns.
                Ok(b) => {
                    if tx.send(b).await.is_err() {
                        break;
                    }
                }
                Err(e) => {
                    read = Err(e);
                    break;
                }
            }
        }
        drop(tx);
        let sent = self.joined(sender.await);
        read?;
        sent
    }

    /// Commits attempt `theirs`, which published the partition: its
    /// manifest (from its staged record, unless committed already) and its
    /// outputs; `ours`, another attempt, is dropped.
    async fn adopt(&self, store: &Store, theirs: &str, ours: Option<&Attempt>) -> Result<MapManifest, SinkError> {
        let path = layout::map_manifest(self.layer, self.part);
        let manifest = match store.get_json::<MapManifest>(&path).await? {
            Some(m) => m,
            None => {
                let staged = Attempt {
                    id: theirs.to_string(),
                    task_dir: self.task_dir.clone(),
                    dir: format!("{}/{theirs}", self.task_dir),
                    fence: None,
                };
                let record_path = staged.store(store).write_path(&layout::sink_record(self.layer, self.part));
                let record: Published =
                    store.get_json(&record_path).await?.ok_or_else(|| self.gone(theirs, &record_path))?;
                match store.put_json_new(&path, &record.manifest).await? {
                    Created::New => record.manifest,
                    Created::Existed => store.get_json(&path).await?.ok_or_else(|| self.gone(theirs, &path))?,
                }
            }
        };
        self.same_attempt(theirs, &manifest)?;
        attempt::roll_forward(store, &self.task_dir, &manifest).await?;
        if let Some(ours) = ours.filter(|a| a.id != theirs) {
            attempt::discard(store, &ours.dir).await?;
        }
        tracing::info!(
            layer = self.layer,
            partition = self.part,
            attempt = theirs,
            "the partition's pages were published by an earlier attempt: committed its outputs"
        );
        Ok(manifest)
    }

    fn same_attempt(&self, published: &str, committed: &MapManifest) -> Result<(), SinkError> {
        if committed.attempt == published {
            return Ok(());
        }
        Err(KafkaSinkError::Diverged {
            layer: self.layer,
            part: self.part,
            published: published.to_string(),
            committed: committed.attempt.clone(),
        }
        .into())
    }

    fn gone(&self, attempt: &str, path: &str) -> SinkError {
        KafkaSinkError::RecordGone {
            layer: self.layer,
            part: self.part,
            attempt: attempt.to_string(),
            path: path.to_string(),
        }
        .into()
    }

    /// Runs a blocking librdkafka call off the async workers.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, SinkError> + Send + 'static,
    ) -> Result<T, SinkError> {
        self.joined(tokio::task::spawn_blocking(f).await)
    }

    fn joined<T>(&self, r: Result<Result<T, SinkError>, tokio::task::JoinError>) -> Result<T, SinkError> {
        joined(r, &self.spec, (self.layer, self.part))
    }

    fn key(&self) -> String {
        marker_key(&self.run, self.layer, self.part)
    }
}

/// The marker's key: crawl, layer, partition.
fn marker_key(run: &str, layer: u32, part: u32) -> String {
    format!("{run}/{layer}/{part}")
}

/// One transactional id per (crawl, layer, partition): every attempt of a
/// task fences the ones before it.
fn transactional_id(run: &str, layer: u32, part: u32) -> String {
    format!("layercrawl-{run}-{layer}-{part}")
}

/// The result of a blocking call; its panic is an error of the task.
fn joined<T>(
    r: Result<Result<T, SinkError>, tokio::task::JoinError>,
    spec: &KafkaUrl,
    (layer, part): (u32, u32),
) -> Result<T, SinkError> {
    r.unwrap_or_else(|e| {
        Err(KafkaSinkError::Transaction {
            brokers: spec.bootstrap(),
            layer,
            part,
            step: "the sink's thread",
            reason: format!("it panicked: {e}"),
        }
        .into())
    })
}

/// The crawl's id in the topics, made by the first task that asks
/// (create-if-absent, so every task of the crawl gets the same).
async fn run_id(store: &Store) -> Result<String, SinkError> {
    if let Some(r) = store.get_json::<RunId>(layout::SINK_RUN).await? {
        return Ok(r.run);
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let seed = format!("{}/{}/{nanos}", store.location(), std::process::id());
    let mine = RunId { run: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes())) };
    match store.put_json_new(layout::SINK_RUN, &mine).await? {
        Created::New => Ok(mine.run),
        Created::Existed => Ok(store.get_json::<RunId>(layout::SINK_RUN).await?.map_or(mine.run, |r| r.run)),
    }
}
