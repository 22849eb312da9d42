//! The authoritative visited store: sorted runs of URL fingerprints.
//!
//! Per partition, each layer adds one run (`state/visited/part-K/layer=L.u64`,
//! little-endian `u64`s in ascending order) holding the fingerprints that
//! layer admitted. Checking a layer's candidates is the MapReduce way: sort
//! them, then stream every earlier run in fixed-size range reads and merge
//! in one pass. Memory is the candidates plus one chunk, whatever the
//! crawl's size, and the runs live wherever the data does (local disk or
//! object storage). Unlike a Bloom filter the store is exact and supports
//! deletion ([`VisitedStore::forget`]), so a URL can be crawled again.

use bytes::Bytes;
use object_store::path::Path;
use object_store::ObjectStoreExt;

use crate::store::{layout, Store, StoreError};

/// Bytes read from a run at a time (64 Ki fingerprints).
const CHUNK: u64 = 512 * 1024;

/// The visited store of one data location.
#[derive(Clone, Debug)]
pub struct VisitedStore {
    store: Store,
}

impl VisitedStore {
    #[must_use]
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// For ascending `fps`, whether each is in a run of `part` from a layer
    /// before `before`.
    ///
    /// # Errors
    /// When a run cannot be read.
    pub async fn contains_sorted(&self, part: u32, before: u32, fps: &[u64]) -> Result<Vec<bool>, StoreError> {
        debug_assert!(fps.windows(2).all(|w| w[0] <= w[1]), "candidates must be sorted");
        let mut seen = vec![false; fps.len()];
        if fps.is_empty() {
            return Ok(seen);
        }
        for layer in 0..before {
            let path = layout::visited(part, layer);
            let mut i = 0;
            let mut stream = RunReader::open(&self.store, &path).await?;
            while let Some(chunk) = stream.next_chunk().await? {
                // Both sides ascending: one merge pass per chunk.
                let mut j = 0;
                while i < fps.len() && j < chunk.len() {
                    match fps[i].cmp(&chunk[j]) {
                        std::cmp::Ordering::Less => i += 1,
                        std::cmp::Ordering::Greater => j += 1,
                        std::cmp::Ordering::Equal => {
                            seen[i] = true;
                            i += 1;
                        }
                    }
                }
                if i == fps.len() {
                    break;
                }
            }
        }
        Ok(seen)
    }

    /// Writes the run of `part` for `layer` (replacing an earlier attempt's).
    ///
    /// # Errors
    /// When the write fails.
    pub async fn put_run(&self, part: u32, layer: u32, sorted_fps: &[u64]) -> Result<(), StoreError> {
        self.store.put(&layout::visited(part, layer), encode(sorted_fps)).await
    }

    /// Removes ascending `fps` from every run of `part`; returns how many
    /// entries were removed. Each run is rewritten atomically.
    ///
    /// # Errors
    /// When a run cannot be read or written.
    pub async fn forget(&self, part: u32, fps: &[u64]) -> Result<u64, StoreError> {
        let mut removed = 0;
        let prefix = crate::store::layout::visited_dir(part);
        for (path, _) in self.store.list(&prefix).await? {
            let Some(bytes) = self.store.get(&path).await? else { continue };
            let run = decode(&bytes);
            let kept: Vec<u64> = run.iter().copied().filter(|fp| fps.binary_search(fp).is_err()).collect();
            if kept.len() != run.len() {
                removed += (run.len() - kept.len()) as u64;
                self.store.put(&path, encode(&kept)).await?;
            }
        }
        Ok(removed)
    }
}

/// Reads a run in chunks of [`CHUNK`] bytes.
struct RunReader<'a> {
    store: &'a Store,
    path: Path,
    size: u64,
    at: u64,
}

impl<'a> RunReader<'a> {
    /// A reader of `path`; a missing run reads as empty.
    async fn open(store: &'a Store, path: &str) -> Result<RunReader<'a>, StoreError> {
        let p = Path::from(path);
        let size = match store.backend().head(&p).await {
            Ok(meta) => meta.size,
            Err(object_store::Error::NotFound { .. }) => 0,
            Err(e) => return Err(StoreError::Object { path: path.to_string(), source: e }),
        };
        Ok(Self { store, path: p, size: size - size % 8, at: 0 })
    }

    async fn next_chunk(&mut self) -> Result<Option<Vec<u64>>, StoreError> {
        if self.at >= self.size {
            return Ok(None);
        }
        let end = (self.at + CHUNK).min(self.size);
        let bytes = self
            .store
            .backend()
            .get_range(&self.path, self.at..end)
            .await
            .map_err(|e| StoreError::Object { path: self.path.to_string(), source: e })?;
        self.at = end;
        Ok(Some(decode(&bytes)))
    }
}

fn encode(fps: &[u64]) -> Bytes {
    let mut v = Vec::with_capacity(fps.len() * 8);
    for fp in fps {
        v.extend_from_slice(&fp.to_le_bytes());
    }
    Bytes::from(v)
}

fn decode(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn merge_finds_exactly_the_earlier_layers_across_chunks() {
        let store = Store::open("memory://").expect("store");
        let v = VisitedStore::new(store);
        // A run bigger than one chunk: every third number below 300k.
        let big: Vec<u64> = (0..300_000u64).filter(|x| x % 3 == 0).collect();
        v.put_run(3, 0, &big).await.expect("put");
        v.put_run(3, 1, &[1, 5_000_001]).await.expect("put");
        v.put_run(3, 2, &[7]).await.expect("put");
        let probe = [1, 2, 3, 7, 299_997, 299_998, 5_000_001, u64::MAX];
        let seen = v.contains_sorted(3, 2, &probe).await.expect("merge");
        assert_eq!(seen, vec![true, false, true, false, true, false, true, false], "layer 2's run is not consulted");
        assert_eq!(v.contains_sorted(4, 2, &probe).await.expect("other partition"), vec![false; 8]);
    }

    #[tokio::test]
    async fn forgotten_fingerprints_become_new_again() {
        let v = VisitedStore::new(Store::open("memory://").expect("store"));
        v.put_run(0, 0, &[10, 20, 30]).await.expect("put");
        v.put_run(0, 1, &[15, 20, 40]).await.expect("put");
        assert_eq!(v.forget(0, &[20, 30, 99]).await.expect("forget"), 3, "20 twice, 30 once");
        assert_eq!(
            v.contains_sorted(0, 2, &[10, 15, 20, 30, 40]).await.expect("merge"),
            vec![true, true, false, false, true]
        );
    }

    #[test]
    fn runs_round_trip() {
        let fps = vec![0, 1, 42, u64::MAX];
        assert_eq!(decode(&encode(&fps)), fps);
    }
}
