//! Fencing tokens: a task commits only under the newest lease generation
//! (docs/src/cluster.md, "One run per data location").
//!
//! Tasks run by the `processes` and `kubernetes` executors do not hold the
//! lease; they act under the generation of the driver that started them
//! (`state/lease.json`'s `generation`, one more at each change of holder).
//! A driver stopped past its lease's expiry and resumed, or cut off from
//! the store, may still have tasks running: they must not commit after a
//! successor took the lease over. So every task has a claim,
//! `state/fence/layer=L/<task>.json`, holding the newest generation that
//! fenced it:
//!
//! - the driver raises the claims of a phase's tasks to its generation
//!   before it starts them ([`raise`]): from then on an attempt of an older
//!   generation cannot commit;
//! - an attempt, right before it writes its manifest, passes the claim
//!   ([`pass`]): a conditional write (create-if-absent, or a replace of the
//!   version read) that names its generation and its attempt, refused when
//!   the claim holds a newer generation, and lost (read again) when anyone
//!   changed it meanwhile. A raise by a successor and an old attempt's pass
//!   are thus ordered by the store itself, on every backend
//!   ([`Store::put_if_unchanged`]).
//!
//! The merge (after the last layer) has one claim for every depth,
//! `state/fence/merge.json` (`layout::MERGE_FENCE`): a merge of a shallower
//! run must not land after a deeper one took over. A driver raises it as
//! soon as it holds the lease, and a merge passes it before each of its
//! writes: each merged file, its manifest, and the deletion of the shards
//! (`merge/mod.rs`). One merge passes it many times; a pass that finds the
//! claim already naming its generation and attempt writes nothing: what it
//! read orders it before any later raise as a write would.
//!
//! What the claim cannot order is a commit whose pass came before the
//! successor's raise: the attempt then commits the work it finished under
//! its own, still valid, generation. Its own fence (`crate::fence`) makes
//! that window empty in practice: an attempt checks it right before the
//! pass, and it runs out 20 s before any successor may take the lease over.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{Created, Store, StoreError, Version};

/// A task's claim, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// The newest lease generation that fenced the task.
    pub generation: u64,
    /// The attempt that last passed the claim to commit, if any.
    #[serde(default)]
    pub attempt: Option<String>,
}

/// How often a claim write that lost a race is tried again (each loss
/// means another writer changed the claim: attempts of one task, a raise).
const TRIES: usize = 50;

/// Raises the claim at `path` to `generation` (nothing to do when it is
/// there already).
///
/// # Errors
/// [`StoreError::Fenced`] when a newer generation fenced the task (this
/// driver lost its lease); a storage failure.
pub async fn raise(store: &Store, path: &str, generation: u64) -> Result<(), StoreError> {
    write(store, path, generation, None).await
}

/// Passes the claim at `path` for `attempt` of `generation`, right before
/// its commit.
///
/// # Errors
/// [`StoreError::Fenced`] when a newer generation fenced the task: the
/// attempt must not commit; a storage failure.
pub async fn pass(store: &Store, path: &str, generation: u64, attempt: &str) -> Result<(), StoreError> {
    write(store, path, generation, Some(attempt)).await
}

async fn write(store: &Store, path: &str, generation: u64, attempt: Option<&str>) -> Result<(), StoreError> {
    let next = Claim { generation, attempt: attempt.map(str::to_string) };
    for _ in 0..TRIES {
        match read(store, path).await? {
            None => {
                if store.put_json_new(path, &next).await? == Created::New {
                    return Ok(());
                }
            }
            Some((c, _)) if c.generation > generation => {
                return Err(StoreError::Fenced {
                    path: path.to_string(),
                    ours: generation,
                    why: format!("lease generation {} fenced this task", c.generation),
                });
            }
            Some((c, _)) if c.generation == generation && (attempt.is_none() || c.attempt.as_deref() == attempt) => {
                return Ok(());
            }
            Some((_, version)) => {
                if replace(store, path, &next, version).await? {
                    return Ok(());
                }
            }
        }
    }
    Err(StoreError::Schema { path: path.to_string(), reason: format!("changed by others {TRIES} times in a row") })
}

/// The claim at `path` and its version.
///
/// # Errors
/// When the store fails or the claim is not one.
pub async fn read(store: &Store, path: &str) -> Result<Option<(Claim, Version)>, StoreError> {
    let Some((bytes, version)) = store.get_versioned(path).await? else { return Ok(None) };
    let claim = serde_json::from_slice(&bytes).map_err(|source| StoreError::Json { path: path.to_string(), source })?;
    Ok(Some((claim, version)))
}

async fn replace(store: &Store, path: &str, next: &Claim, version: Version) -> Result<bool, StoreError> {
    let body = serde_json::to_vec_pretty(next).map_err(|source| StoreError::Json { path: path.to_string(), source })?;
    store.put_if_unchanged(path, Bytes::from(body), version).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order the store gives: a raise by generation 2 fences every
    /// later pass of generation 1, and a pass of 2 goes on.
    #[tokio::test]
    async fn a_newer_generation_fences_older_attempts_on_every_backend() {
        let dir = tempfile::tempdir().expect("tempdir");
        for store in
            [Store::open("memory://").expect("memory"), Store::open(&dir.path().display().to_string()).expect("folder")]
        {
            let path = "state/fence/layer=0/map-00001.json";
            pass(&store, path, 1, "a").await.expect("generation 1 passes a fresh claim");
            raise(&store, path, 1).await.expect("raising to the same generation is nothing");
            assert_eq!(read(&store, path).await.expect("read").map(|(c, _)| c.attempt), Some(Some("a".into())));
            raise(&store, path, 2).await.expect("the successor raises it");
            let err = pass(&store, path, 1, "b").await.expect_err("an old attempt is fenced");
            assert!(matches!(&err, StoreError::Fenced { ours: 1, why, .. } if why.contains("generation 2")), "{err}");
            assert!(raise(&store, path, 1).await.is_err(), "an old driver cannot lower it");
            pass(&store, path, 2, "c").await.expect("generation 2 passes");
            pass(&store, path, 3, "d").await.expect("a newer one passes too");
            assert_eq!(read(&store, path).await.expect("read").map(|(c, _)| c.generation), Some(3));
        }
    }
}
