//! Earlier nights for the report's trends: the summaries `layercrawl run
//! --json` printed (jobs/nightly.sh keeps one a night in `data/history/`).
//! A file may hold several summaries one after another (a cron log a
//! resumed night appended to); a night's last summary counts. Nights keep
//! the order they are given in; a folder gives its `.json` files by name.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ReportError;

/// Nights kept at most (the latest).
const MAX_NIGHTS: usize = 400;

/// One night's figures, from its summary.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Night {
    /// The night's name: its data location's last path segment.
    pub label: String,
    pub data: String,
    pub file: String,
    pub fetched: u64,
    pub ok: u64,
    pub errors: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub pages_per_second: f64,
    /// URLs the night's layers added to their next layer's input.
    pub new_urls: u64,
}

/// The fields of a run summary the trends use; anything else is ignored.
#[derive(Deserialize)]
struct Summary {
    data: String,
    fetched: u64,
    ok: u64,
    errors: u64,
    #[serde(default)]
    bytes: u64,
    seconds: f64,
    pages_per_second: f64,
    layers: Vec<SummaryLayer>,
}

#[derive(Deserialize)]
struct SummaryLayer {
    #[serde(default)]
    new_urls: u64,
}

/// Reads the summaries in `paths` (files, or folders of `.json` files).
///
/// # Errors
/// When a file cannot be read or is not a run summary (naming the file and
/// the line), or a folder holds none.
pub(super) fn read(paths: &[PathBuf]) -> Result<Vec<Night>, ReportError> {
    let mut nights: Vec<Night> = Vec::new();
    for p in paths {
        let read_err = |source| ReportError::HistoryRead { path: p.display().to_string(), source };
        if p.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(read_err)?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|f| f.is_file() && f.extension().is_some_and(|x| x == "json"))
                .collect();
            if files.is_empty() {
                return Err(ReportError::EmptyHistory { path: p.display().to_string() });
            }
            files.sort();
            for f in files {
                add(&mut nights, read_file(&f)?);
            }
        } else {
            add(&mut nights, read_file(p)?);
        }
    }
    let skip = nights.len().saturating_sub(MAX_NIGHTS);
    Ok(nights.split_off(skip))
}

/// Adds a file's nights; a night seen before is replaced in its place.
fn add(nights: &mut Vec<Night>, more: Vec<Night>) {
    for n in more {
        match nights.iter_mut().find(|x| x.data == n.data) {
            Some(old) => *old = n,
            None => nights.push(n),
        }
    }
}

fn read_file(path: &Path) -> Result<Vec<Night>, ReportError> {
    let shown = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|source| ReportError::HistoryRead { path: shown.clone(), source })?;
    let mut out = Vec::new();
    for s in serde_json::Deserializer::from_str(&text).into_iter::<Summary>() {
        let s = s.map_err(|e| ReportError::History {
            path: shown.clone(),
            line: e.line(),
            reason: match e.classify() {
                serde_json::error::Category::Data => format!("not a run summary ({e})"),
                _ => format!("not JSON ({e})"),
            },
        })?;
        let label = s.data.trim_end_matches('/').rsplit('/').next().unwrap_or(&s.data).to_string();
        out.push(Night {
            label,
            file: shown.clone(),
            fetched: s.fetched,
            ok: s.ok,
            errors: s.errors,
            bytes: s.bytes,
            seconds: s.seconds,
            pages_per_second: s.pages_per_second,
            new_urls: s.layers.iter().map(|l| l.new_urls).sum(),
            data: s.data,
        });
    }
    if out.is_empty() {
        return Err(ReportError::History { path: shown, line: 1, reason: "no summary in the file".into() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"{"data": "/d/nightly-2026-11-24", "fetched": 10, "ok": 9, "errors": 1, "bytes": 5,
        "seconds": 2.0, "pages_per_second": 5.0, "layers": [{"new_urls": 4}, {"new_urls": 3}, {}]}"#;

    #[test]
    fn a_file_of_appended_summaries_keeps_each_nights_last() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("log.json");
        let again = ONE.replace("\"fetched\": 10", "\"fetched\": 12");
        std::fs::write(&f, format!("{ONE}\n{again}\n")).expect("write");
        let nights = read(&[f]).expect("read");
        assert_eq!(nights.len(), 1);
        assert_eq!((nights[0].label.as_str(), nights[0].fetched, nights[0].new_urls), ("nightly-2026-11-24", 12, 7));
    }

    #[test]
    fn a_bad_file_is_named_with_its_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("bad.json");
        std::fs::write(&f, format!("{ONE}\n{{\"data\": \"x\",\n \"fetched\": \"many\"}}\n")).expect("write");
        let err = read(std::slice::from_ref(&f)).expect_err("refused").to_string();
        assert!(err.contains(&f.display().to_string()) && err.contains("line 4"), "{err}");
        std::fs::write(&f, "[1, 2]").expect("write");
        let err = read(&[f]).expect_err("refused").to_string();
        assert!(err.contains("line 1") && err.contains("not a run summary"), "{err}");
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).expect("mkdir");
        assert!(matches!(read(&[empty]), Err(ReportError::EmptyHistory { .. })));
    }
}
