//! The lock that makes a conditional replace atomic in a local folder.
//!
//! object_store's local backend has no conditional replace (`PutMode::Update`
//! is not implemented there), and a read followed by a write is not one:
//! two writers that read the same version would both write. So in a local
//! folder a conditional replace holds an exclusive lock (`flock(2)`, through
//! the standard library's `File::lock`) on a lock file beside the object,
//! `<object>.lock`, while it reads, compares and writes (the write itself a
//! staging file renamed into place). Every process and thread that replaces
//! the object conditionally takes the same lock, so of those that read the
//! same version exactly one writes. The lock file is never replaced or
//! removed (a lock on a file renamed over would lock nothing).
//!
//! The lock is held for a read and a rename, milliseconds; a process stopped
//! while holding it (SIGSTOP) would hold it on, so a waiter gives up after
//! [`WAIT`] with an error rather than hanging. A process that dies releases
//! it (the kernel closes its files).

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long a conditional replace waits for another to finish.
const WAIT: Duration = Duration::from_secs(10);
/// How often it looks again meanwhile.
const POLL: Duration = Duration::from_millis(5);

/// The lock file of `object` (a path relative to `root`).
pub(super) fn lock_path(root: &Path, object: &str) -> PathBuf {
    root.join(format!("{object}.lock"))
}

/// Takes the exclusive lock of `object` under `root`, waiting up to
/// [`WAIT`]; it is held until the returned file is dropped.
///
/// # Errors
/// When the lock file cannot be made or opened, or another process holds
/// the lock for longer than [`WAIT`].
pub(super) async fn exclusive(root: &Path, object: &str) -> io::Result<File> {
    let path = lock_path(root, object);
    tokio::task::spawn_blocking(move || {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path)?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(file),
                Err(TryLockError::WouldBlock) if started.elapsed() < WAIT => std::thread::sleep(POLL),
                Err(TryLockError::WouldBlock) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("{} is held by another process for more than {} s", path.display(), WAIT.as_secs()),
                    ))
                }
                Err(TryLockError::Error(e)) => return Err(e),
            }
        }
    })
    .await
    .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_lock_excludes_other_opens_until_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let held = exclusive(dir.path(), "state/lease.json").await.expect("lock");
        let other = File::open(lock_path(dir.path(), "state/lease.json")).expect("open");
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)), "held elsewhere");
        drop(held);
        other.try_lock().expect("free once dropped");
    }
}
