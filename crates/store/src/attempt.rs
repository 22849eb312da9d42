//! Task attempts: how a unit of work commits exactly once
//! (docs/src/cluster.md, "Tasks").
//!
//! A unit of work (map partition I of layer L, the optimise step of target
//! partition I) may run more than once at the same time: a retried worker
//! whose first attempt is not dead yet, a pod that the cluster restarted
//! while the old one still ran. So each attempt writes its outputs into a
//! folder of its own, `state/attempts/layer=L/<task>/<attempt id>/`, under
//! the paths they will have; nothing there is read as data. It then commits
//! by writing the task's manifest create-if-absent, naming its attempt.
//! Exactly one attempt's write succeeds (a conditional write on object
//! storage). The winner publishes its folder: each file is moved to its
//! place. A loser deletes its folder and takes the winner's manifest. A
//! publish cut short (the process killed half-way) is finished by whoever
//! reads the manifest next ([`roll_forward`]): the manifest names the
//! attempt, and its folder still holds what is left to move.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{fencing, Created, Store, StoreError};
use crate::fence::Fence;

/// One attempt of one unit of work.
#[derive(Clone, Debug)]
pub struct Attempt {
    /// Unique among every attempt of every process (host, process, time).
    pub id: String,
    /// The task's folder of attempts (`state/attempts/layer=L/map-00003`).
    pub task_dir: String,
    /// This attempt's own folder, under `task_dir`.
    pub dir: String,
    /// The fence it runs under and its task's claim (`fencing.rs`): none
    /// outside a run (a unit of work called by a program of its own).
    pub fence: Option<(String, Arc<Fence>)>,
}

/// This machine's name (a pod's name on Kubernetes).
#[must_use]
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

impl Attempt {
    /// A new attempt of the task whose attempts live under `task_dir`.
    #[must_use]
    pub fn start(task_dir: &str) -> Self {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let seed = format!("{}/{}/{nanos}/{}", host_name(), std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
        let id = format!("{:016x}", xxhash_rust::xxh3::xxh3_64(seed.as_bytes()));
        Self { dir: format!("{task_dir}/{id}"), task_dir: task_dir.to_string(), id, fence: None }
    }

    /// This attempt commits only while `fence` holds and its generation
    /// passes the task's claim at `claim` (`layout::task_fence`).
    #[must_use]
    pub fn fenced_by(mut self, claim: String, fence: Option<Arc<Fence>>) -> Self {
        self.fence = fence.map(|f| (claim, f));
        self
    }

    /// The last step before a commit: the attempt's fence still holds and
    /// its generation passes the task's claim (a conditional write).
    ///
    /// # Errors
    /// [`StoreError::Fenced`] when this attempt must not commit; a storage
    /// failure.
    pub async fn pass_fence(&self, base: &Store) -> Result<(), StoreError> {
        self.fence_holds()?;
        match &self.fence {
            Some((claim, fence)) if fence.generation() > 0 => {
                fencing::pass(base, claim, fence.generation(), &self.id).await
            }
            _ => Ok(()),
        }
    }

    /// Whether this attempt's fence still holds, read in memory only: the
    /// check before each of many small steps (the merge's deletions) that
    /// follow one [`Self::pass_fence`].
    ///
    /// # Errors
    /// [`StoreError::Fenced`] once it ran out or was revoked.
    pub fn fence_holds(&self) -> Result<(), StoreError> {
        match &self.fence {
            Some((claim, fence)) if !fence.holds() => Err(StoreError::Fenced {
                path: claim.clone(),
                ours: fence.generation(),
                why: "its lease was not renewed in time, or was taken over".into(),
            }),
            _ => Ok(()),
        }
    }

    /// The data store as this attempt writes to it: into its folder.
    #[must_use]
    pub fn store(&self, base: &Store) -> Store {
        base.staged_in(&self.dir)
    }
}

/// A manifest that names the attempt which committed it.
pub trait Committed: Serialize + DeserializeOwned {
    /// The committing attempt's id (empty for manifests written before
    /// attempts existed, whose outputs are in place already).
    fn attempt(&self) -> &str;
}

/// Commits `attempt` by writing `manifest` at `path` create-if-absent, then
/// publishes its outputs. When another attempt committed first, this one's
/// folder is deleted and the committed manifest is returned (its outputs
/// published, should that attempt have been cut short), with
/// [`Created::Existed`].
///
/// # Errors
/// When the store fails.
pub async fn commit<M: Committed>(
    base: &Store,
    path: &str,
    attempt: &Attempt,
    manifest: M,
) -> Result<(M, Created), StoreError> {
    attempt.pass_fence(base).await?;
    match base.put_json_new(path, &manifest).await? {
        Created::New => {
            base.publish(&attempt.dir).await?;
            Ok((manifest, Created::New))
        }
        Created::Existed => {
            discard(base, &attempt.dir).await?;
            let theirs: M = base.get_json(path).await?.ok_or_else(|| StoreError::Schema {
                path: path.to_string(),
                reason: "the manifest vanished while it was read".into(),
            })?;
            roll_forward(base, &attempt.task_dir, &theirs).await?;
            Ok((theirs, Created::Existed))
        }
    }
}

/// Finishes publishing the outputs of the attempt that committed `manifest`
/// (nothing to do once they are all in place).
///
/// # Errors
/// When the store fails.
pub async fn roll_forward<M: Committed>(base: &Store, task_dir: &str, manifest: &M) -> Result<(), StoreError> {
    if !manifest.attempt().is_empty() {
        base.publish(&format!("{task_dir}/{}", manifest.attempt())).await?;
    }
    Ok(())
}

/// Deletes everything under `dir` (an attempt that lost, or the attempts
/// of a finished layer).
///
/// # Errors
/// When a listing or a delete fails.
pub async fn discard(base: &Store, dir: &str) -> Result<(), StoreError> {
    for (path, _) in base.list(dir).await? {
        base.delete(&path).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[derive(serde::Serialize, serde::Deserialize)]
    struct M {
        attempt: String,
        rows: u32,
    }
    impl Committed for M {
        fn attempt(&self) -> &str {
            &self.attempt
        }
    }

    /// Two attempts write different outputs; the first to commit wins, and
    /// the loser's files never become visible.
    #[tokio::test]
    async fn of_two_attempts_exactly_one_commits_and_publishes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = Store::open(&dir.path().display().to_string()).expect("open");
        let (a, b) = (Attempt::start("state/attempts/t"), Attempt::start("state/attempts/t"));
        assert_ne!(a.id, b.id);
        a.store(&base).put("doc/part.bin", Bytes::from_static(b"A")).await.expect("put");
        b.store(&base).put("doc/part.bin", Bytes::from_static(b"B")).await.expect("put");
        let (m, created) =
            commit(&base, "state/m.json", &b, M { attempt: b.id.clone(), rows: 2 }).await.expect("commit");
        assert_eq!((created, m.rows), (Created::New, 2));
        let (m, created) =
            commit(&base, "state/m.json", &a, M { attempt: a.id.clone(), rows: 1 }).await.expect("commit");
        assert_eq!((created, m.rows), (Created::Existed, 2), "the loser gets the winner's manifest");
        assert_eq!(base.get("doc/part.bin").await.expect("get").as_deref(), Some(&b"B"[..]));
        assert!(base.list("state/attempts/t").await.expect("list").is_empty(), "both folders are gone");
    }
}
