//! The truth a focused crawl is measured against (`--truth FILE`): the
//! URLs known to be relevant, one a line. Each layer's summary then says
//! how many of them the layer fetched, and the target recall so far (truth
//! URLs fetched in this layer and the ones before, over all of them).
//!
//! The driver counts them from the layer's `doc` rows (their `url`
//! column only), so the map tasks need not know the truth: it is for
//! measuring a crawl, not for steering it.

use std::collections::HashSet;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use url::Url;

use crate::store::{layout, read_batches, Store, StoreError};
use crate::urlnorm;

/// The relevant URLs, by fingerprint of their normalised form.
#[derive(Clone, Debug, Default)]
pub struct Truth {
    file: String,
    urls: HashSet<u64>,
}

impl Truth {
    /// Reads the truth file at `path`: one absolute http(s) URL a line;
    /// blank lines and lines starting with `#` are skipped; a URL listed
    /// twice counts once.
    ///
    /// # Errors
    /// A file that cannot be read, or every line that is not a URL, with
    /// its line number.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// [`Truth::read`] of text already read from `file`.
    ///
    /// # Errors
    /// Every line that is not a URL, with its line number.
    pub fn parse(file: &str, text: &str) -> Result<Self, String> {
        let mut urls = HashSet::new();
        let mut problems = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match Url::parse(line).ok().filter(|u| matches!(u.scheme(), "http" | "https")).and_then(urlnorm::normalize)
            {
                Some(u) => {
                    urls.insert(urlnorm::fingerprint(&u));
                }
                None => problems.push(format!("{file}:{}: {line:?} is not an absolute http(s) URL", i + 1)),
            }
        }
        if !problems.is_empty() {
            return Err(problems.join("\n"));
        }
        if urls.is_empty() {
            return Err(format!("{file}: no URLs (one relevant URL a line)"));
        }
        Ok(Self { file: file.to_string(), urls })
    }

    /// How many relevant URLs there are.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.urls.len() as u64
    }

    /// True when there are none (never, for a truth that was read).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    /// Whether `url` (normalised, as the `doc` rows hold it) is relevant.
    #[must_use]
    pub fn contains(&self, url: &str) -> bool {
        self.urls.contains(&urlnorm::fingerprint_str(url))
    }

    /// The relevant URLs among the pages `layer` fetched (its `doc` rows,
    /// the `url` column of each shard).
    ///
    /// # Errors
    /// On storage failures.
    pub async fn found(&self, store: &Store, layer: u32) -> Result<u64, StoreError> {
        let mut found = 0;
        for (path, _) in store.list(&layout::layer_dir(crate::store::dataset::DOC.name, layer)).await? {
            if !layout::is_shard(&path) {
                continue;
            }
            for batch in read_batches(store, &path, Some(&["url"])).await? {
                let Some(urls) = batch.column(0).as_string_opt::<i32>() else { continue };
                found += (0..urls.len()).filter(|&i| urls.is_valid(i) && self.contains(urls.value(i))).count() as u64;
            }
        }
        Ok(found)
    }

    /// The file it was read from.
    #[must_use]
    pub fn file(&self) -> &str {
        &self.file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_normalised_and_bad_lines_named() {
        let t = Truth::parse("truth.txt", "# relevant\nhttp://A.test/x\n\nhttp://a.test/x\nhttps://b.test/y?\n")
            .expect("a truth");
        assert_eq!(t.len(), 2, "the same URL twice counts once");
        assert!(t.contains("http://a.test/x"));
        assert!(!t.contains("http://a.test/z"));
        let e = Truth::parse("truth.txt", "http://a.test/\nnot a url\nftp://c.test/\n").expect_err("bad lines");
        assert!(e.contains("truth.txt:2:") && e.contains("truth.txt:3:"), "{e}");
        assert!(Truth::parse("truth.txt", "# nothing\n").expect_err("empty").contains("no URLs"));
    }
}
