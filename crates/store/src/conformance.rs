//! The guarantees every backend must keep, as one suite run against each
//! (a local folder, `file://`, `memory://` in this crate's unit tests; an
//! S3 API server and Azure's storage emulator in `tests/e2e/backends.rs`), as
//! object_store tests its own stores: whatever the backend, a crawl's
//! guarantees are the same (ARCHITECTURE.md,
//! "Invariants"). [`check`] panics at the first guarantee a store breaks.

use bytes::Bytes;
use futures::StreamExt;

use super::dataset::{DOC, IN};
use super::schema::{input_batch, input_rows, input_schema, InRow};
use super::{layout, read_batches, stream_batches, Created, ShardWriter, Store};

/// Runs every check against `store`, which must be empty. `at_once`:
/// the writers that replace one version race at once; else they go one
/// after the other, all from the version they read (still exactly one may
/// win). The second is for a test server that does not serialise
/// conditional replaces, as moto's S3 server does not (two `If-Match` puts
/// of one version both landed under load); S3 itself does.
///
/// # Panics
/// At the first guarantee the store breaks, naming it.
pub async fn check(store: &Store, at_once: bool) {
    objects(store).await;
    create_if_absent(store).await;
    racing_commits(store).await;
    shards(store).await;
    attempts(store).await;
    conditional_replace(store, at_once).await;
    lease(store, at_once).await;
    concatenation(store).await;
}

/// Runs `tries` at once, or one after the other.
async fn run_all<F: std::future::Future>(tries: impl Iterator<Item = F>, at_once: bool) -> Vec<F::Output> {
    if at_once {
        return futures::future::join_all(tries).await;
    }
    let mut out = Vec::new();
    for t in tries {
        out.push(t.await);
    }
    out
}

/// `n` input rows on the site `prefix`.test, in URL order: test data for
/// this suite and the stages' tests.
#[must_use]
pub fn rows(prefix: &str, n: usize) -> Vec<InRow> {
    (0..n)
        .map(|i| InRow {
            url: format!("http://{prefix}.test/{i:04}"),
            depth: i32::try_from(i % 4).expect("small"),
            referrer: (i % 3 == 0).then(|| format!("http://{prefix}.test/")),
            priority: None,
            anchor: None,
            retries: 0,
        })
        .collect()
}

async fn objects(store: &Store) {
    assert_eq!(store.get("a/b.json").await.expect("get"), None);
    store.put_json("a/b.json", &vec![1, 2, 3]).await.expect("put");
    store.put("a/c.bin", Bytes::from_static(b"xyz")).await.expect("put");
    let v: Option<Vec<i32>> = store.get_json("a/b.json").await.expect("get");
    assert_eq!(v, Some(vec![1, 2, 3]));
    let names: Vec<String> = store.list("a").await.expect("list").into_iter().map(|x| x.0).collect();
    assert_eq!(names, vec!["a/b.json".to_string(), "a/c.bin".to_string()]);
    assert!(store.exists("a/c.bin").await.expect("head"));
    store.delete("a/c.bin").await.expect("delete");
    store.delete("a/c.bin").await.expect("delete twice is fine");
    assert!(!store.exists("a/c.bin").await.expect("head"));
}

/// A manifest commits once: the second attempt finds the first's.
async fn create_if_absent(store: &Store) {
    let path = layout::map_manifest(3, 7);
    assert_eq!(store.put_json_new(&path, &"first").await.expect("put"), Created::New);
    assert_eq!(store.put_json_new(&path, &"second").await.expect("put"), Created::Existed);
    let kept: Option<String> = store.get_json(&path).await.expect("get");
    assert_eq!(kept.as_deref(), Some("first"), "the first commit stands");
}

/// Of many attempts writing one manifest at once, exactly one commits.
async fn racing_commits(store: &Store) {
    let path = layout::map_manifest(4, 2);
    let tries = (0..8).map(|i| {
        let (store, path) = (store.clone(), path.clone());
        async move { store.put_json_new(&path, &i).await.expect("put") }
    });
    let results = futures::future::join_all(tries).await;
    assert_eq!(results.iter().filter(|c| **c == Created::New).count(), 1, "{results:?}");
}

/// An attempt's files are invisible until it commits; then they move into
/// place, and the losing attempt's never appear.
async fn attempts(store: &Store) {
    use super::attempt::{commit, Attempt, Committed};
    #[derive(serde::Serialize, serde::Deserialize)]
    struct M {
        attempt: String,
    }
    impl Committed for M {
        fn attempt(&self) -> &str {
            &self.attempt
        }
    }
    let (a, b) = (Attempt::start("state/attempts/t"), Attempt::start("state/attempts/t"));
    for (attempt, n) in [(&a, 5), (&b, 9)] {
        let staged = attempt.store(store);
        let mut w =
            ShardWriter::create(&staged, &layout::shard(DOC.name, 1, 1), input_schema(), 8 << 10).expect("writer");
        w.write(&input_batch(&rows("x", n)).expect("batch")).await.expect("write");
        w.finish().await.expect("finish");
    }
    assert!(!store.exists(&layout::shard(DOC.name, 1, 1)).await.expect("head"), "nothing is visible before a commit");
    let manifest = layout::map_manifest(1, 1);
    let (_, won) = commit(store, &manifest, &b, M { attempt: b.id.clone() }).await.expect("commit");
    let (m, lost) = commit(store, &manifest, &a, M { attempt: a.id.clone() }).await.expect("commit");
    assert_eq!((won, lost, m.attempt.as_str()), (Created::New, Created::Existed, b.id.as_str()));
    let rows: usize = read_batches(store, &layout::shard(DOC.name, 1, 1), None)
        .await
        .expect("read")
        .iter()
        .map(|x| x.num_rows())
        .sum();
    assert_eq!(rows, 9, "the winner's file is in place");
    assert!(store.list("state/attempts").await.expect("list").is_empty(), "no attempt folder is left");
}

/// A replace conditional on the version read: a writer that read an old
/// version (a lease holder that stalled) cannot overwrite a newer one, and
/// of many writers that read the same version, exactly one replaces it,
/// round after round.
async fn conditional_replace(store: &Store, at_once: bool) {
    let path = "state/replace.json";
    store.put(path, Bytes::from_static(b"first")).await.expect("put");
    let (_, old) = store.get_versioned(path).await.expect("get").expect("there");
    assert!(store.put_if_unchanged(path, Bytes::from_static(b"second"), old.clone()).await.expect("replace"));
    assert!(
        !store.put_if_unchanged(path, Bytes::from_static(b"stale"), old).await.expect("replace"),
        "a write of an old version must not land"
    );
    assert_eq!(store.get(path).await.expect("get").as_deref(), Some(&b"second"[..]));
    for round in 0..20 {
        let (_, read) = store.get_versioned(path).await.expect("get").expect("there");
        let tries = (0..6).map(|i| {
            let (store, read) = (store.clone(), read.clone());
            async move {
                let body = Bytes::from(format!("round {round} writer {i}"));
                store.put_if_unchanged(path, body, read).await.expect("replace")
            }
        });
        let won = run_all(tries, at_once).await;
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "round {round}: {won:?}");
        let kept = store.get(path).await.expect("get").expect("there");
        let winner = won.iter().position(|w| *w).expect("one winner");
        assert_eq!(kept, Bytes::from(format!("round {round} writer {winner}")), "the winner's write stands");
    }
}

/// The lease: taken once, refused to a second driver, given back; a holder
/// that stalled cannot overwrite the lease of the driver that took over;
/// of several drivers taking over the same stale lease, one wins.
async fn lease(store: &Store, at_once: bool) {
    use super::lease::{current, replace, Holder, Lease, LeaseError};
    let held = Lease::acquire(store, false).await.expect("free");
    assert!(matches!(Lease::acquire(store, false).await, Err(LeaseError::Held { .. })), "held");
    held.release().await.expect("release");
    assert!(current(store).await.expect("read").expect("there").holder.released, "released");
    let held = Lease::acquire(store, false).await.expect("free again");
    // The holder reads its lease to renew it, and stalls; a successor
    // takes over from the same version; the holder's write comes late.
    let read = current(store).await.expect("read").expect("there");
    let successor = Holder { token: "successor".into(), ..read.holder.clone() };
    assert!(replace(store, &read, &successor).await.expect("take over"));
    let renewed = Holder { heartbeat: read.holder.heartbeat + 10, ..read.holder.clone() };
    assert!(!replace(store, &read, &renewed).await.expect("renew"), "the stalled renewal must not land");
    assert_eq!(current(store).await.expect("read").expect("there").holder.token, "successor");
    held.release().await.expect("release");
    assert!(!current(store).await.expect("read").expect("there").holder.released, "the loser releases nothing");
    for round in 0..10 {
        let read = current(store).await.expect("read").expect("there");
        let takers = (0..4).map(|i| {
            let (store, read) = (store.clone(), read.clone());
            let me = Holder { token: format!("taker-{round}-{i}"), ..read.holder.clone() };
            async move { replace(&store, &read, &me).await.expect("take over") }
        });
        let won = run_all(takers, at_once).await;
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "round {round}: {won:?}");
    }
    // Drivers that find the lease of a dead process of this host take it
    // over at once: one of them.
    for round in 0..5 {
        let dead = Holder { token: format!("dead-{round}"), pid: u32::MAX, ..Holder::me(crate::lease::EXPIRY) };
        store.put_json(layout::LEASE, &dead).await.expect("put");
        let drivers = (0..4).map(|_| Lease::acquire(store, false));
        let got = run_all(drivers, at_once).await;
        assert_eq!(got.iter().filter(|g| g.is_ok()).count(), 1, "round {round}");
        for lease in got.into_iter().flatten() {
            lease.release().await.expect("release");
        }
    }
}

/// A shard is invisible until finished, then reads back whole, streamed
/// or at once, with column projection.
async fn shards(store: &Store) {
    let path = layout::shard(IN.name, 0, 1);
    let want = rows("s", 3000);
    let mut w = ShardWriter::create(store, &path, input_schema(), 16 << 10).expect("writer");
    for chunk in want.chunks(700) {
        w.write(&input_batch(chunk).expect("batch")).await.expect("write");
    }
    assert!(!store.exists(&path).await.expect("head"), "a shard being written is not visible");
    assert!(
        store.parquet_files(IN.name).await.expect("list").is_empty(),
        "no staging file passes for data: {:?}",
        store.list(IN.name).await.expect("list")
    );
    assert_eq!(w.finish().await.expect("finish"), 3000);
    let mut got = Vec::new();
    let mut stream = stream_batches(store, &path, None).await.expect("stream");
    let mut batches = 0;
    while let Some(b) = stream.next().await {
        got.extend(input_rows(&b.expect("batch"), &path).expect("rows"));
        batches += 1;
    }
    assert_eq!(got, want);
    assert!(batches > 1, "small row groups stream as several batches");
    let urls = read_batches(store, &path, Some(&["url"])).await.expect("read");
    assert!(urls.iter().all(|b| b.num_columns() == 1));
    assert_eq!(urls.iter().map(|b| b.num_rows()).sum::<usize>(), 3000);
}

/// Shards concatenate into one file with every row, in order.
///
/// # Panics
/// When a row is lost, added or out of order.
async fn concatenation(store: &Store) {
    let (a, b) = (rows("a", 1200), rows("b", 10));
    let mut inputs = Vec::new();
    for (k, part) in [&a, &b].into_iter().enumerate() {
        let path = layout::shard(IN.name, 5, u32::try_from(k).expect("small"));
        let mut w = ShardWriter::create(store, &path, input_schema(), 8 << 10).expect("writer");
        w.write(&input_batch(part).expect("batch")).await.expect("write");
        w.finish().await.expect("finish");
        inputs.push(path);
    }
    let out = layout::merged(IN.name, 5);
    assert_eq!(super::concat_shards(store, &inputs, &out).await.expect("concat"), 1210);
    let mut got = Vec::new();
    for batch in read_batches(store, &out, None).await.expect("read") {
        got.extend(input_rows(&batch, &out).expect("rows"));
    }
    let want: Vec<InRow> = a.into_iter().chain(b).collect();
    assert_eq!(got, want);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_local_backend_keeps_the_same_guarantees() {
        let dir = tempfile::tempdir().expect("tempdir");
        let local = Store::open(dir.path().join("folder").to_str().expect("utf8 temp path")).expect("open a folder");
        let file_url = Store::open(&format!("file://{}", dir.path().join("as-url").display())).expect("open file://");
        let memory = Store::open("memory://").expect("open memory://");
        for store in [local, file_url, memory] {
            check(&store, true).await;
            eprintln!("backend {}: ok", store.location());
        }
    }
}
