//! Reading the seeds file, layer 0's input: one URL a line, problems
//! reported by line.

use std::path::Path;

use url::Url;

use crate::urlnorm::UrlPolicy;

/// A seed line that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedProblem {
    /// 1-based line number.
    pub line: usize,
    pub reason: String,
}

/// The usable seeds of a file and the problems met.
#[derive(Clone, Debug, Default)]
pub struct Seeds {
    /// Normalised, de-duplicated, in file order.
    pub urls: Vec<Url>,
    pub problems: Vec<SeedProblem>,
    /// Lines that repeated an earlier seed (after normalisation).
    pub duplicates: usize,
}

/// Why the seeds file gave no seed at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeedsError {
    #[error("cannot read seeds file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("seeds file {path} has no valid seed ({problems} problem lines; first: {first})")]
    Empty { path: String, problems: usize, first: String },
}

const MAX_LINE: usize = 8 * 1024;

/// Parses seed text. Blank lines and `#` comments are skipped; a BOM and
/// CRLF endings are accepted; each bad line becomes a [`SeedProblem`].
#[must_use]
pub fn parse_seeds(text: &str, policy: &UrlPolicy) -> Seeds {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Seeds::default();
    let mut seen = std::collections::HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.len() > MAX_LINE {
            out.problems.push(SeedProblem {
                line: i + 1,
                reason: format!("line is {} bytes long (limit {MAX_LINE})", line.len()),
            });
            continue;
        }
        match policy.parse_seed(line) {
            Ok(url) => {
                if seen.insert(url.as_str().to_string()) {
                    out.urls.push(url);
                } else {
                    out.duplicates += 1;
                }
            }
            Err(e) => out.problems.push(SeedProblem { line: i + 1, reason: e.to_string() }),
        }
    }
    out
}

/// Reads and parses a seeds file.
///
/// # Errors
/// When the file cannot be read, or holds no valid seed.
pub fn read_seeds(path: &Path, policy: &UrlPolicy) -> Result<Seeds, SeedsError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| SeedsError::Read { path: shown.clone(), reason: e.to_string() })?;
    let seeds = parse_seeds(&String::from_utf8_lossy(&bytes), policy);
    if seeds.urls.is_empty() {
        let first = seeds
            .problems
            .first()
            .map_or_else(|| "the file has no URL lines".to_string(), |p| format!("line {}: {}", p.line, p.reason));
        return Err(SeedsError::Empty { path: shown, problems: seeds.problems.len(), first });
    }
    Ok(seeds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_lines_are_used_and_bad_ones_reported_by_line() {
        let long = format!("http://a.test/{}", "x".repeat(10_000));
        let text = format!(
            "\u{feff}# comment\r\nhttp://A.test/\r\n\r\nftp://b.test/\nnot a url\nhttp://a.test:80/#frag\n{long}\nhttps://b.test/x\n"
        );
        let s = parse_seeds(&text, &UrlPolicy::default());
        let urls: Vec<&str> = s.urls.iter().map(Url::as_str).collect();
        assert_eq!(urls, vec!["http://a.test/", "https://b.test/x"]);
        assert_eq!(s.duplicates, 1);
        let lines: Vec<usize> = s.problems.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![4, 5, 7]);
        assert!(s.problems[0].reason.contains("ftp"), "{:?}", s.problems[0]);
    }

    #[test]
    fn no_valid_seed_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("seeds.txt");
        std::fs::write(&p, "garbage\n").expect("write");
        let e = read_seeds(&p, &UrlPolicy::default()).expect_err("empty").to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
