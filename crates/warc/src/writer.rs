//! A map task's WARC file and its CDXJ index: the records of each page
//! appended as they come (already compressed on the rayon pool, so this
//! only moves bytes), the index lines kept (in sorted runs on a temporary
//! file past 1 MiB, `index.rs`) and merged into the index when the file is
//! complete.
//!
//! Like a Parquet shard (`store::ShardWriter`), the file appears whole or
//! not at all: in a local folder the bytes go to a hidden staging file
//! beside the target (`.NAME.staged`) renamed into place at the end; on
//! object storage to a multipart upload completed at the end. Both sit in
//! the task attempt's folder until the attempt commits.

use std::path::PathBuf;
use std::sync::Arc;

use object_store::path::Path;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::index::IndexLines;
use super::{PageRecords, TaskArchive, WarcError};
use crate::store::{layout, staging_path, Access, Store, StoreError};

/// The size of each part of an upload (S3's smallest): what an open
/// archive holds in memory on object storage.
const CHUNK: usize = 5 << 20;
/// Buffer of a local file: its writes are calls on a blocking thread.
const LOCAL_BUFFER: usize = 1 << 20;

/// The open file.
enum Out {
    Local { file: tokio::io::BufWriter<tokio::fs::File>, staged: PathBuf, target: PathBuf },
    Upload(object_store::buffered::BufWriter),
}

/// One map task's `warc/layer=L/part-PPPPP.warc.gz` and `.cdxj`, made on
/// the first page that has records, so a task that fetched nothing writes
/// no archive.
pub struct WarcFile<'a> {
    store: &'a Store,
    archive: Arc<TaskArchive>,
    out: Option<Out>,
    /// Bytes written so far: where the next record starts.
    offset: u64,
    /// Index lines, sorted at the end.
    index: IndexLines,
}

impl<'a> WarcFile<'a> {
    /// The archive of `archive`'s task, written through `store` (the
    /// attempt's).
    #[must_use]
    pub fn new(store: &'a Store, archive: Arc<TaskArchive>) -> Self {
        Self { store, archive, out: None, offset: 0, index: IndexLines::default() }
    }

    /// Appends one page's records and keeps their index lines.
    ///
    /// # Errors
    /// When the file cannot be created or written.
    pub async fn add(&mut self, page: PageRecords) -> Result<(), WarcError> {
        if self.out.is_none() {
            self.out = Some(create(self.store, self.archive.filename()).await?);
            let head = self.archive.warcinfo();
            self.write(&head).await?;
        }
        let filename = self.archive.filename();
        for e in &page.index {
            let line = e.line(self.offset, filename);
            self.index
                .push(line)
                .map_err(|e| StoreError::scratch(&layout::warc_index(self.archive.layer, self.archive.part), e))?;
        }
        self.write(&page.bytes).await
    }

    /// Completes the file and writes its index, sorted; nothing when no
    /// page had records.
    ///
    /// # Errors
    /// When the file cannot be completed or the index written.
    pub async fn finish(mut self) -> Result<(), WarcError> {
        let path = self.archive.filename().to_string();
        let io = |source| WarcError::Write { path: path.clone(), source };
        match self.out.take() {
            None => return Ok(()),
            Some(Out::Local { mut file, staged, target }) => {
                file.flush().await.map_err(io)?;
                drop(file);
                if let Err(e) = tokio::fs::rename(&staged, &target).await {
                    let _ = std::fs::remove_file(&staged);
                    return Err(io(e));
                }
            }
            Some(Out::Upload(mut w)) => w.shutdown().await.map_err(io)?,
        }
        let index = std::mem::take(&mut self.index);
        write_index(self.store, &layout::warc_index(self.archive.layer, self.archive.part), index).await
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), WarcError> {
        let w: &mut (dyn AsyncWrite + Unpin + Send) = match self.out.as_mut().expect("created before the first write") {
            Out::Local { file, .. } => file,
            Out::Upload(w) => w,
        };
        w.write_all(bytes)
            .await
            .map_err(|source| WarcError::Write { path: self.archive.filename().to_string(), source })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }
}

/// Opens `filename` for writing through `store`: a staging file in a
/// local folder, an upload on object storage. (A function of its own: the
/// writer, which holds an upload, is not `Sync`, so no future may hold a
/// reference to it across a wait.)
async fn create(store: &Store, filename: &str) -> Result<Out, WarcError> {
    let path = store.write_path(filename);
    let io = |source| WarcError::Write { path: path.clone(), source };
    Ok(match store.access() {
        Access::Folder(root) => {
            let target = root.join(&path);
            let staged = staging_path(&target);
            if let Some(dir) = target.parent() {
                tokio::fs::create_dir_all(dir).await.map_err(io)?;
            }
            let file = tokio::fs::File::create(&staged).await.map_err(io)?;
            Out::Local { file: tokio::io::BufWriter::with_capacity(LOCAL_BUFFER, file), staged, target }
        }
        Access::Objects => Out::Upload(object_store::buffered::BufWriter::with_capacity(
            store.backend(),
            Path::from(path.as_str()),
            CHUNK,
        )),
    })
}

/// Writes `lines`, sorted, to `path` through `store`, whole or not at
/// all: in a local folder merged straight into a staging file renamed into
/// place, on object storage into a temporary file then uploaded.
async fn write_index(store: &Store, path: &str, lines: IndexLines) -> Result<(), WarcError> {
    let at = store.write_path(path);
    let failed = |what: &str, e: tokio::task::JoinError| WarcError::Write {
        path: at.clone(),
        source: std::io::Error::other(format!("{what}: {e}")),
    };
    match store.access() {
        Access::Folder(root) => {
            let target = root.join(&at);
            let staged = staging_path(&target);
            let (io_path, staged_c, target_c) = (at.clone(), staged.clone(), target);
            tokio::task::spawn_blocking(move || {
                let write = || -> std::io::Result<()> {
                    if let Some(dir) = target_c.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    let mut f = std::fs::File::create(&staged_c)?;
                    lines.write_sorted(&mut f)?;
                    drop(f);
                    std::fs::rename(&staged_c, &target_c)
                };
                write().map_err(|source| {
                    let _ = std::fs::remove_file(&staged_c);
                    WarcError::Write { path: io_path, source }
                })
            })
            .await
            .map_err(|e| failed("index writer thread failed", e))?
        }
        Access::Objects => {
            let scratch = |e| WarcError::Store(StoreError::scratch(path, e));
            let sorted = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
                let mut f = tempfile::tempfile()?;
                lines.write_sorted(&mut f)?;
                std::io::Seek::rewind(&mut f)?;
                Ok(f)
            })
            .await
            .map_err(|e| failed("index writer thread failed", e))?
            .map_err(scratch)?;
            let mut upload =
                object_store::buffered::BufWriter::with_capacity(store.backend(), Path::from(at.as_str()), CHUNK);
            let io = |source| WarcError::Write { path: at.clone(), source };
            tokio::io::copy(&mut tokio::fs::File::from_std(sorted), &mut upload).await.map_err(io)?;
            upload.shutdown().await.map_err(io)
        }
    }
}

impl Drop for WarcFile<'_> {
    /// A file given up (an error, a cancelled task) takes its local
    /// staging file with it; an unfinished upload is never completed, so
    /// it stays invisible.
    fn drop(&mut self) {
        if let Some(Out::Local { staged, .. }) = &self.out {
            let _ = std::fs::remove_file(staged);
        }
    }
}
