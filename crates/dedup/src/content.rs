//! The first URL of each page content: what `duplicate_of` names.
//!
//! A partition's map task knows, for every content hash met in this and
//! earlier layers, the URL of the first page that had it. Held as a
//! `HashMap<u64, Box<str>>` that was the largest thing growing with the
//! crawl (~70 MB at a million pages: a URL's bytes, its allocation and its
//! slot). Here the map keeps 16 bytes per hash, the hash and where its URL
//! sits in a [`SpillLog`] (an unnamed temporary file: the kernel's page
//! cache holds the URLs, not the process). A URL is read back only when a
//! page repeats a known content.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::store::scratch::{SpillLog, MAX_RECORD};

/// Content hashes are xxh3 values already: the map uses them as they are.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// What [`FirstUrls::claim`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// No page had this content before: the URL is now its first.
    New,
    /// The content's first URL is this very URL (a page fetched again).
    Same,
    /// Another URL had this content first.
    DuplicateOf(String),
}

/// Content hash -> first URL, with the URLs in a temporary file.
pub struct FirstUrls {
    /// The contents known at the last [`FirstUrls::mark`] (the earlier
    /// layers'), sorted by hash: 16 bytes each, where the hash map takes
    /// 19-39 (17 a bucket, 44-88 % of buckets used).
    earlier: Vec<(u64, u64)>,
    /// Hash -> the URL's place in the log: offset << 24 | length.
    slots: HashMap<u64, u64, BuildHasherDefault<Identity>>,
    /// Hashes claimed since [`FirstUrls::mark`], in order.
    fresh: Vec<u64>,
    log: SpillLog,
}

impl FirstUrls {
    /// An empty map whose log is an unnamed file in the temporary folder
    /// (`TMPDIR`, else `/tmp`), gone when the map is dropped or the process
    /// dies.
    ///
    /// # Errors
    /// When no temporary file can be created there.
    pub fn new() -> std::io::Result<Self> {
        Ok(Self { earlier: Vec::new(), slots: HashMap::default(), fresh: Vec::new(), log: SpillLog::new()? })
    }

    /// Number of contents known.
    #[must_use]
    pub fn len(&self) -> usize {
        self.earlier.len() + self.slots.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records `url` as the first of `hash` unless a URL already is.
    ///
    /// # Errors
    /// When the log cannot be written or read.
    pub fn claim(&mut self, hash: u64, url: &str) -> std::io::Result<Claim> {
        let known = match self.earlier.binary_search_by_key(&hash, |&(h, _)| h) {
            Ok(i) => Some(self.earlier[i].1),
            Err(_) => self.slots.get(&hash).copied(),
        };
        if let Some(slot) = known {
            let first = self.read(slot)?;
            return Ok(if first == url { Claim::Same } else { Claim::DuplicateOf(first) });
        }
        let slot = self.append(url)?;
        self.slots.insert(hash, slot);
        self.fresh.push(hash);
        Ok(Claim::New)
    }

    /// Forgets which hashes are fresh: those claimed from now on are the
    /// ones [`FirstUrls::fresh`] returns (a layer's own new contents, after
    /// the earlier layers' were loaded). The contents known so far move to
    /// the sorted list.
    pub fn mark(&mut self) {
        self.fresh = Vec::new();
        let mut earlier = std::mem::take(&mut self.earlier);
        earlier.reserve_exact(self.slots.len());
        earlier.extend(std::mem::take(&mut self.slots));
        earlier.sort_unstable_by_key(|&(h, _)| h);
        self.earlier = earlier;
    }

    /// Number of hashes claimed since the last [`FirstUrls::mark`].
    #[must_use]
    pub fn fresh_len(&self) -> usize {
        self.fresh.len()
    }

    /// The hashes claimed since the last [`FirstUrls::mark`], those in
    /// `range` of their order, with their URLs.
    ///
    /// # Errors
    /// When the log cannot be read.
    pub fn fresh_rows(&self, range: std::ops::Range<usize>) -> std::io::Result<Vec<(u64, String)>> {
        self.fresh[range].iter().map(|&h| Ok((h, self.read(self.slots[&h])?))).collect()
    }

    /// Logs `url`; one longer than a record may be (16 MiB, far past any
    /// URL the crawler keeps) is cut at a character boundary.
    fn append(&mut self, url: &str) -> std::io::Result<u64> {
        let mut len = url.len().min(MAX_RECORD);
        while !url.is_char_boundary(len) {
            len -= 1;
        }
        self.log.append(&[&url.as_bytes()[..len]])
    }

    fn read(&self, slot: u64) -> std::io::Result<String> {
        String::from_utf8(self.log.read(slot)?).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_url_wins_and_is_read_back_from_buffer_and_file() {
        let mut m = FirstUrls::new().expect("temp file");
        assert_eq!(m.claim(1, "http://a.test/1").expect("temp file"), Claim::New);
        assert_eq!(m.claim(1, "http://a.test/1").expect("temp file"), Claim::Same);
        assert_eq!(m.claim(1, "http://a.test/copy").expect("temp file"), Claim::DuplicateOf("http://a.test/1".into()));
        // Enough URLs to push the first ones out of the buffer into the file.
        let urls: Vec<String> = (0..5000).map(|i| format!("http://b.test/page/{i}/{}", "x".repeat(i % 40))).collect();
        for (i, u) in urls.iter().enumerate() {
            assert_eq!(m.claim(1000 + i as u64, u).expect("temp file"), Claim::New);
        }
        for (i, u) in urls.iter().enumerate() {
            assert_eq!(
                m.claim(1000 + i as u64, "http://other.test/").expect("temp file"),
                Claim::DuplicateOf(u.clone()),
                "{i}"
            );
        }
        assert_eq!(m.claim(1, "http://a.test/2").expect("temp file"), Claim::DuplicateOf("http://a.test/1".into()));
        assert_eq!(m.len(), 5001);
    }

    #[test]
    fn fresh_lists_only_the_claims_after_mark_in_order() {
        let mut m = FirstUrls::new().expect("temp file");
        m.claim(7, "http://a.test/earlier").expect("temp file");
        m.mark();
        m.claim(9, "http://a.test/x").expect("temp file");
        m.claim(7, "http://a.test/dup").expect("temp file");
        m.claim(3, "http://a.test/ü").expect("temp file");
        m.claim(5, "http://a.test/z").expect("temp file");
        assert_eq!(m.fresh_len(), 3);
        let mut got = m.fresh_rows(0..2).expect("temp file");
        got.extend(m.fresh_rows(2..3).expect("temp file"));
        let want: Vec<(u64, String)> =
            vec![(9, "http://a.test/x".into()), (3, "http://a.test/ü".into()), (5, "http://a.test/z".into())];
        assert_eq!(got, want);
    }

    #[test]
    fn contents_known_before_a_mark_are_found_after_it_and_after_another() {
        let mut m = FirstUrls::new().expect("temp file");
        for (h, u) in
            [(40, "http://a.test/40"), (u64::MAX, "http://a.test/max"), (2, "http://a.test/2"), (0, "http://a.test/0")]
        {
            assert_eq!(m.claim(h, u).expect("temp file"), Claim::New);
        }
        m.mark();
        assert_eq!((m.earlier.len(), m.slots.len()), (4, 0), "moved to the sorted list");
        assert_eq!(m.claim(40, "http://b.test/").expect("temp file"), Claim::DuplicateOf("http://a.test/40".into()));
        assert_eq!(m.claim(u64::MAX, "http://a.test/max").expect("temp file"), Claim::Same);
        assert_eq!(m.claim(0, "http://b.test/").expect("temp file"), Claim::DuplicateOf("http://a.test/0".into()));
        assert_eq!(m.claim(41, "http://a.test/41").expect("temp file"), Claim::New);
        assert_eq!((m.len(), m.fresh_len()), (5, 1));
        m.mark();
        assert_eq!(m.claim(41, "http://c.test/").expect("temp file"), Claim::DuplicateOf("http://a.test/41".into()));
        assert_eq!(m.claim(2, "http://c.test/").expect("temp file"), Claim::DuplicateOf("http://a.test/2".into()));
        assert_eq!((m.len(), m.fresh_len()), (5, 0));
    }
}
