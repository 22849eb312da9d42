//! Storage stage: every byte the crawl keeps goes through here.
//!
//! A [`Store`] wraps one `object_store` backend (a local folder by default;
//! `s3://`, `gs://` and `az://` object storage; `memory://` in tests) and
//! offers the few operations the pipeline needs: atomic puts, conditional
//! (create-if-absent) puts, gets, listings and streaming Parquet shard
//! writers. Atomicity is the backend's: a local put writes a staging file
//! and renames it, an object-store put is atomic by contract. The commit
//! protocol built on top (attempts and manifests) lives in [`attempt`] and
//! [`manifest`]; the one-run-per-location lease in [`lease`].

pub mod attempt;
pub mod chunks;
mod cloud;
pub mod column;
pub mod concat;
pub mod conformance;
pub mod dataset;
pub mod error;
pub mod fencing;
pub mod layout;
pub mod lease;
mod lock;
pub mod manifest;
mod parquet_io;
mod rewrite;
mod rows;
pub mod schema;
pub mod scratch;
mod splice;
pub mod tls;

// The vocabulary below the store, under the names the store's files use.
pub(crate) use layercrawl_vocab::{self as vocab, fence, scope};

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

pub use concat::concat_shards;
pub use parquet_io::{read_batches, read_if_exists, shard_properties, stream_batches, ShardWriter};
pub use parquet_io::{staging_path, SharedBuf};
pub use rewrite::rewrite_columns;
pub use rows::{stream_row_groups, RowsFile};

/// Errors of the storage stage; each names the location at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The `--data` location could not be opened.
    #[error("cannot open data location {location:?}: {reason}")]
    Open { location: String, reason: String },
    /// An object could not be read, written, listed or deleted.
    #[error("storage error at {path}: {source}")]
    Object {
        path: String,
        #[source]
        source: object_store::Error,
    },
    /// A Parquet file could not be encoded or decoded.
    #[error("parquet error in {path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// An Arrow batch did not match the expected schema.
    #[error("unexpected data in {path}: {reason}")]
    Schema { path: String, reason: String },
    /// A JSON state file could not be encoded or decoded.
    #[error("bad state file {path}: {source}")]
    Json {
        path: String,
        #[source]
        source: serde_json::Error,
    },
    /// The lock of a conditional replace in a local folder could not be
    /// taken (see `lock.rs`).
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A task attempt's commit refused by its fence (`fencing.rs`): the
    /// lease it ran under ran out, or a newer generation fenced the task.
    #[error("{path}: this attempt ran under lease generation {ours} and commits nothing: {why}. Another run holds the data location (docs/src/cluster.md, \"One run per data location\")")]
    Fenced { path: String, ours: u64, why: String },
    /// A backend that cannot replace an object conditionally.
    #[error("storage error at {path}: this backend cannot replace an object conditionally")]
    NoConditionalReplace { path: String },
    /// A scratch copy of the file in the temporary folder failed.
    #[error("scratch copy of {path} in {dir}: {source}. Point TMPDIR at a writable folder with free space.")]
    Scratch {
        path: String,
        dir: String,
        #[source]
        source: std::io::Error,
    },
}

impl StoreError {
    pub fn object(path: &Path, source: object_store::Error) -> Self {
        Self::Object { path: path.to_string(), source }
    }

    pub fn scratch(path: &str, source: std::io::Error) -> Self {
        Self::Scratch { path: path.to_string(), dir: std::env::temp_dir().display().to_string(), source }
    }
}

/// How a backend's objects can be reached: the capability that the fast
/// paths of a local folder dispatch on, in one place.
#[derive(Clone, Copy, Debug)]
pub enum Access<'a> {
    /// Objects are files under this folder: a shard writer encodes straight
    /// into a staging file beside its target and renames it; the merge
    /// copies row groups file to file in the kernel.
    Folder(&'a std::path::Path),
    /// Objects only (memory, cloud stores): shards are uploaded in parts;
    /// the merge reads row groups by range.
    Objects,
}

/// Whether a create-if-absent write made the object or found one there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Created {
    /// This write made the object.
    New,
    /// The object was already there (another attempt committed first);
    /// it was left as it was.
    Existed,
}

/// The version of an object as read ([`Store::get_versioned`]): the
/// backend's ETag or version, and a hash of the bytes read (a local
/// folder's ETag is its file's inode, time and size, which a quick pair of
/// replacements could repeat; its content differs).
#[derive(Clone, Debug)]
pub struct Version {
    update: object_store::UpdateVersion,
    content: u64,
}

impl Version {
    fn same(&self, other: &Self) -> bool {
        self.update.e_tag == other.update.e_tag
            && self.update.version == other.update.version
            && self.content == other.content
    }
}

/// A handle to the crawl's data location (cheap to clone).
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<dyn ObjectStore>,
    location: String,
    /// The folder, when the store is a local one: shards are then written
    /// straight to staging files in it (no upload buffers).
    local_root: Option<Arc<std::path::PathBuf>>,
    compression: Compression,
    /// The folder of a task attempt that this handle writes into (see
    /// [`attempt`]): every write and delete goes under it, reads do not.
    staged: Option<Arc<str>>,
}

/// How the Parquet files a run writes are compressed (`--compression`).
///
/// zstd level 1 is the default: on the crawl benchmark it costs 13 % less
/// CPU than level 3 for files 8 % larger; `zstd:N` trades the other way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// zstd at a level in 1..=22.
    Zstd(i32),
    /// Uncompressed (fast disks, or data compressed again downstream).
    None,
}

impl Default for Compression {
    fn default() -> Self {
        Self::Zstd(1)
    }
}

impl Compression {
    pub fn codec(self) -> parquet::basic::Compression {
        match self {
            // The level is checked when parsed; 1 is the fallback for a value built by hand.
            Self::Zstd(level) => {
                parquet::basic::Compression::ZSTD(parquet::basic::ZstdLevel::try_new(level).unwrap_or_default())
            }
            Self::None => parquet::basic::Compression::UNCOMPRESSED,
        }
    }
}

impl std::str::FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let level = match s {
            "none" => return Ok(Self::None),
            "zstd" => Some(1),
            _ => s.strip_prefix("zstd:").and_then(|l| l.parse::<i32>().ok()).filter(|l| (1..=22).contains(l)),
        };
        level.map(Self::Zstd).ok_or_else(|| {
            format!("{s:?} is not a compression; allowed: zstd (level 1), zstd:N with N in 1..=22, none")
        })
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Zstd(level) => write!(f, "zstd:{level}"),
            Self::None => f.write_str("none"),
        }
    }
}

impl Store {
    /// Opens `location`: a local folder (created if missing), a `file://`
    /// URL, `s3://bucket/prefix`, `gs://bucket/prefix`,
    /// `az://container/prefix` (configured from the environment as each
    /// cloud's own tools are; docs/src/cluster.md), or
    /// `memory://` (a fresh in-process store, for tests).
    ///
    /// # Errors
    /// When the folder cannot be created, the cloud store's settings are
    /// incomplete, or the URL scheme is unknown.
    pub fn open(location: &str) -> Result<Self, StoreError> {
        Self::open_with(location, &[])
    }

    /// Opens `location` as [`Store::open`] does, with a cloud store's
    /// settings given here rather than only in the environment (a
    /// notebook's or an embedding program's own credentials): each is
    /// named as its environment variable is (`AWS_ENDPOINT_URL`,
    /// `AZURE_STORAGE_ACCOUNT_KEY`, in any case) and wins over it. A local
    /// folder takes none.
    ///
    /// # Errors
    /// As [`Store::open`], and when a setting is unknown to the location's
    /// kind of store (named in the error).
    pub fn open_with(location: &str, options: &[(String, String)]) -> Result<Self, StoreError> {
        let open_err = |reason: String| StoreError::Open { location: location.to_string(), reason };
        if location == "memory://" || location.starts_with("memory://") {
            return Ok(Self::from_object_store(Arc::new(object_store::memory::InMemory::new()), location));
        }
        let dir = if let Some(rest) = location.strip_prefix("file://") {
            std::path::PathBuf::from(rest)
        } else if location.contains("://") {
            return cloud::open(location, options).map(|inner| Self::from_object_store(inner, location));
        } else {
            std::path::PathBuf::from(location)
        };
        std::fs::create_dir_all(&dir).map_err(|e| open_err(format!("cannot create folder: {e}")))?;
        let dir = dir.canonicalize().map_err(|e| open_err(e.to_string()))?;
        let fs = object_store::local::LocalFileSystem::new_with_prefix(&dir).map_err(|e| open_err(e.to_string()))?;
        Ok(Self {
            inner: Arc::new(fs),
            location: dir.display().to_string(),
            local_root: Some(Arc::new(dir)),
            compression: Compression::default(),
            staged: None,
        })
    }

    /// Wraps an existing backend (used by tests and by cloud builds).
    #[must_use]
    pub fn from_object_store(inner: Arc<dyn ObjectStore>, location: impl Into<String>) -> Self {
        Self { inner, location: location.into(), local_root: None, compression: Compression::default(), staged: None }
    }

    /// A handle that writes into the attempt folder `dir`: what the store
    /// is for the unit of work of one attempt ([`attempt::Attempt`]).
    #[must_use]
    pub fn staged_in(&self, dir: &str) -> Self {
        Self { staged: Some(Arc::from(dir)), ..self.clone() }
    }

    /// Where a write of `path` through this handle lands: `path` itself,
    /// or its place in the attempt folder.
    #[must_use]
    pub fn write_path(&self, path: &str) -> String {
        match &self.staged {
            Some(dir) => format!("{dir}/{path}"),
            None => path.to_string(),
        }
    }

    /// Moves every object under `dir` to its path with `dir/` removed: a
    /// rename in a local folder, a copy and a delete on object storage.
    /// Each move is whole, and a move interrupted half-way is done again
    /// by the next call (the object is still under `dir`). Returns the
    /// objects moved.
    ///
    /// # Errors
    /// When a listing, copy or delete fails.
    pub async fn publish(&self, dir: &str) -> Result<u64, StoreError> {
        let mut moved = 0;
        let prefix = format!("{dir}/");
        for (from, _) in self.list(dir).await? {
            let Some(to) = from.strip_prefix(&prefix) else { continue };
            let (from, to) = (Path::from(from.as_str()), Path::from(to));
            match self.inner.rename(&from, &to).await {
                Ok(()) => moved += 1,
                // Another process finishing the same publish moved it first
                // (a copy and then a delete on object storage: it is in place).
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(StoreError::object(&to, e)),
            }
        }
        Ok(moved)
    }

    /// The same store, writing its Parquet files with `compression`.
    #[must_use]
    pub fn with_compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// How this store's Parquet files are compressed.
    #[must_use]
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// What this backend offers beyond objects: see [`Access`].
    #[must_use]
    pub fn access(&self) -> Access<'_> {
        match self.local_root.as_deref() {
            Some(root) => Access::Folder(root),
            None => Access::Objects,
        }
    }

    /// Where the data lives, for messages.
    #[must_use]
    pub fn location(&self) -> &str {
        &self.location
    }

    /// `path` in this store, for messages that must name a file among
    /// several stores' (`data/doc/…`, `memory://doc/…`).
    #[must_use]
    pub fn display_path(&self, path: &str) -> String {
        if self.location.ends_with('/') {
            format!("{}{path}", self.location)
        } else {
            format!("{}/{path}", self.location)
        }
    }

    pub fn backend(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.inner)
    }

    /// Writes `bytes` at `path` atomically: readers see the old object or the
    /// new one, never a part.
    ///
    /// # Errors
    /// When the backend refuses the write (e.g. a full disk or no permission).
    pub async fn put(&self, path: &str, bytes: Bytes) -> Result<(), StoreError> {
        let p = Path::from(self.write_path(path));
        self.inner.put(&p, PutPayload::from_bytes(bytes)).await.map(|_| ()).map_err(|e| StoreError::object(&p, e))
    }

    /// Writes `bytes` at `path` only if no object is there: of two attempts
    /// of the same step, exactly one commits (a manifest, `run.json`).
    ///
    /// # Errors
    /// When the backend refuses the write.
    pub async fn put_new(&self, path: &str, bytes: Bytes) -> Result<Created, StoreError> {
        let p = Path::from(self.write_path(path));
        let opts = object_store::PutOptions { mode: object_store::PutMode::Create, ..Default::default() };
        match self.inner.put_opts(&p, PutPayload::from_bytes(bytes), opts).await {
            Ok(_) => Ok(Created::New),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(Created::Existed),
            Err(e) => Err(StoreError::object(&p, e)),
        }
    }

    /// Reads the object at `path` with its version, for
    /// [`Store::put_if_unchanged`]; `None` when there is none.
    ///
    /// # Errors
    /// On any failure other than "not found".
    pub async fn get_versioned(&self, path: &str) -> Result<Option<(Bytes, Version)>, StoreError> {
        let p = Path::from(path);
        match self.inner.get(&p).await {
            Ok(r) => {
                let update =
                    object_store::UpdateVersion { e_tag: r.meta.e_tag.clone(), version: r.meta.version.clone() };
                let bytes = r.bytes().await.map_err(|e| StoreError::object(&p, e))?;
                let content = xxhash_rust::xxh3::xxh3_64(&bytes);
                Ok(Some((bytes, Version { update, content })))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(StoreError::object(&p, e)),
        }
    }

    /// Replaces the object at `path` only if it is still the `version`
    /// read: `false` when someone changed it since. Of several writers that
    /// read the same version, exactly one replaces it, on every backend: on
    /// object storage the write is a conditional request (`If-Match` on
    /// the ETag, or the object's generation); in a local folder, which has
    /// none, the read, the comparison and the write (a staging file renamed
    /// into place) are done under an exclusive lock (`lock.rs`).
    ///
    /// # Errors
    /// When the backend refuses the write, the local lock cannot be taken,
    /// or the backend has no conditional replace (never silently replaced).
    pub async fn put_if_unchanged(&self, path: &str, bytes: Bytes, version: Version) -> Result<bool, StoreError> {
        let target = self.write_path(path);
        let p = Path::from(target.as_str());
        if let Some(root) = self.local_root.as_deref() {
            let _held = lock::exclusive(root, &target)
                .await
                .map_err(|source| StoreError::Lock { path: target.clone(), source })?;
            match self.get_versioned(&target).await? {
                Some((_, now)) if now.same(&version) => {}
                _ => return Ok(false),
            }
            return self.put(path, bytes).await.map(|()| true);
        }
        let opts =
            object_store::PutOptions { mode: object_store::PutMode::Update(version.update), ..Default::default() };
        match self.inner.put_opts(&p, PutPayload::from_bytes(bytes), opts).await {
            Ok(_) => Ok(true),
            // Changed since (If-Match failed), or gone.
            Err(object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. }) => Ok(false),
            Err(object_store::Error::NotImplemented { .. }) => Err(StoreError::NoConditionalReplace { path: target }),
            Err(e) => Err(StoreError::object(&p, e)),
        }
    }

    /// Reads the object at `path`, or `None` when there is none.
    ///
    /// # Errors
    /// On any failure other than "not found".
    pub async fn get(&self, path: &str) -> Result<Option<Bytes>, StoreError> {
        let p = Path::from(path);
        match self.inner.get(&p).await {
            Ok(r) => r.bytes().await.map(Some).map_err(|e| StoreError::object(&p, e)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(StoreError::object(&p, e)),
        }
    }

    /// Whether an object exists at `path`.
    ///
    /// # Errors
    /// On any failure other than "not found".
    pub async fn exists(&self, path: &str) -> Result<bool, StoreError> {
        let p = Path::from(path);
        match self.inner.head(&p).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(StoreError::object(&p, e)),
        }
    }

    /// Lists the objects under `prefix` (recursively), sorted by path.
    ///
    /// # Errors
    /// When the listing fails.
    pub async fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let p = Path::from(prefix);
        let mut out: Vec<(String, u64)> = self
            .inner
            .list(Some(&p))
            .map_ok(|m| (m.location.to_string(), m.size))
            .try_collect()
            .await
            .map_err(|e| StoreError::object(&p, e))?;
        out.sort();
        Ok(out)
    }

    /// The Parquet files under `prefix`, sorted. Anything else a user keeps
    /// there (a `.gitkeep`, notes) is not data and is skipped.
    ///
    /// # Errors
    /// When the listing fails.
    pub async fn parquet_files(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        Ok(self.list(prefix).await?.into_iter().map(|(p, _)| p).filter(|p| p.ends_with(".parquet")).collect())
    }

    /// Deletes the object at `path`; a missing object is not an error.
    ///
    /// # Errors
    /// When the backend refuses the deletion.
    pub async fn delete(&self, path: &str) -> Result<(), StoreError> {
        let p = Path::from(self.write_path(path));
        match self.inner.delete(&p).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(StoreError::object(&p, e)),
        }
    }

    /// Reads and decodes a JSON state file, or `None` when absent.
    ///
    /// # Errors
    /// When the file cannot be read or is not the expected JSON.
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>, StoreError> {
        match self.get(path).await? {
            None => Ok(None),
            Some(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|source| StoreError::Json { path: path.to_string(), source }),
        }
    }

    /// Encodes `value` as pretty JSON and writes it only if `path` is free
    /// ([`Store::put_new`]): how a step commits.
    ///
    /// # Errors
    /// When encoding or the write fails.
    pub async fn put_json_new<T: serde::Serialize>(&self, path: &str, value: &T) -> Result<Created, StoreError> {
        let bytes =
            serde_json::to_vec_pretty(value).map_err(|source| StoreError::Json { path: path.to_string(), source })?;
        self.put_new(path, Bytes::from(bytes)).await
    }

    /// Encodes `value` as pretty JSON and puts it atomically.
    ///
    /// # Errors
    /// When encoding or the write fails.
    pub async fn put_json<T: serde::Serialize>(&self, path: &str, value: &T) -> Result<(), StoreError> {
        let bytes =
            serde_json::to_vec_pretty(value).map_err(|source| StoreError::Json { path: path.to_string(), source })?;
        self.put(path, Bytes::from(bytes)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_scheme_is_a_clear_error() {
        let err = Store::open("ftp://x/y").expect_err("must refuse");
        assert!(err.to_string().contains("ftp://"), "{err}");
    }

    /// A replace conditional on the version read fails once someone else
    /// replaced the object (how a stalled lease holder learns it lost).
    #[tokio::test]
    async fn a_conditional_replace_fails_after_another_write() {
        let store = Store::open("memory://").expect("open");
        store.put("lease", Bytes::from_static(b"a")).await.expect("put");
        let (_, v1) = store.get_versioned("lease").await.expect("get").expect("there");
        let (_, v2) = store.get_versioned("lease").await.expect("get").expect("there");
        assert!(store.put_if_unchanged("lease", Bytes::from_static(b"b"), v1).await.expect("put"));
        assert!(!store.put_if_unchanged("lease", Bytes::from_static(b"c"), v2).await.expect("put"), "changed since");
        assert_eq!(store.get("lease").await.expect("get").as_deref(), Some(&b"b"[..]));
    }

    #[tokio::test]
    async fn staged_writes_land_in_the_attempt_folder_until_published() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().display().to_string()).expect("open");
        let staged = store.staged_in("state/attempts/t/a1");
        staged.put("doc/x.json", Bytes::from_static(b"{}")).await.expect("put");
        assert!(!store.exists("doc/x.json").await.expect("exists"), "not visible before publishing");
        assert!(store.exists("state/attempts/t/a1/doc/x.json").await.expect("exists"));
        assert_eq!(store.publish("state/attempts/t/a1").await.expect("publish"), 1);
        assert_eq!(store.get("doc/x.json").await.expect("get").as_deref(), Some(&b"{}"[..]));
        assert_eq!(store.publish("state/attempts/t/a1").await.expect("publish again"), 0, "nothing left to move");
    }
}
