//! The report's figures from the rows of `doc` and `links`: one pass over
//! each file, only the columns below, folded into mergeable tallies (one
//! per file, so files are read side by side and merged after).
//!
//! A `doc` row's outcome is counted as the map stage counts it for its
//! manifest (robots.txt refusal, error kind, HTTP error class, ok), so the
//! report's statuses add up to the run summary's.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
use serde::Serialize;

use crate::fetch::ErrorKind;
use crate::store::schema::string_col;
use crate::store::StoreError;

/// The `doc` columns the report reads.
pub(super) const DOC_COLUMNS: &[&str] =
    &["host", "status", "error", "fetch_ms", "content_length", "duplicate_of", "unchanged"];
/// The `links` columns the report reads.
pub(super) const LINK_COLUMNS: &[&str] = &["src_url", "dst_url", "noise", "followed"];

/// What one layer's `doc` rows say.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LayerRows {
    pub rows: u64,
    /// By HTTP status class: `2xx` ... `5xx`, `none` (no response).
    pub statuses: BTreeMap<String, u64>,
    /// By outcome, as the manifests count them: `ok`, `robots`, an error
    /// kind, `http_4xx`/`http_5xx`, `other` (a 1xx/3xx answer kept as it is).
    pub outcomes: BTreeMap<String, u64>,
    /// Rows whose content repeats an earlier page's (`duplicate_of`).
    pub duplicates: u64,
    /// Rows carried forward after a 304 (`--previous`).
    pub unchanged: u64,
}

/// One host's tally.
#[derive(Clone, Debug, Default)]
pub(super) struct HostTally {
    pub pages: u64,
    pub ok: u64,
    pub errors: u64,
    pub robots: u64,
    pub bytes: u64,
    /// `fetch_ms` of its rows that made a request.
    pub ms: Vec<u32>,
}

/// What the `doc` files say.
#[derive(Clone, Debug, Default)]
pub(super) struct DocTally {
    pub layers: BTreeMap<u32, LayerRows>,
    pub hosts: HashMap<String, HostTally>,
    /// `content_length` of the rows with a response.
    pub sizes: Vec<u32>,
    /// How many rows name each URL in `duplicate_of`.
    pub dup_targets: HashMap<String, u64>,
}

fn missing(path: &str, name: &str) -> StoreError {
    StoreError::Schema { path: path.to_string(), reason: format!("column `{name}` missing or of another type") }
}

/// A row's outcome, as the map stage counts it in its manifest.
fn outcome(status: i32, error: Option<&str>) -> Cow<'_, str> {
    match error {
        Some(kind) => Cow::Borrowed(kind),
        None if status >= 400 => match status / 100 {
            4 => Cow::Borrowed("http_4xx"),
            5 => Cow::Borrowed("http_5xx"),
            c => Cow::Owned(format!("http_{c}xx")),
        },
        None if (200..300).contains(&status) => Cow::Borrowed("ok"),
        None => Cow::Borrowed("other"),
    }
}

fn status_class(status: i32) -> String {
    if status <= 0 {
        "none".to_string()
    } else {
        format!("{}xx", status / 100)
    }
}

impl DocTally {
    /// Adds a batch of `layer`'s `doc` rows read from `path`.
    ///
    /// # Errors
    /// When a column the report reads is missing or of another type.
    pub fn add(&mut self, layer: u32, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        let host = string_col(b, "host", path)?;
        let status = b
            .column_by_name("status")
            .and_then(|c| c.as_primitive_opt::<Int32Type>())
            .ok_or_else(|| missing(path, "status"))?;
        let error = string_col(b, "error", path)?;
        let ms = b
            .column_by_name("fetch_ms")
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| missing(path, "fetch_ms"))?;
        let len = b
            .column_by_name("content_length")
            .and_then(|c| c.as_primitive_opt::<Int64Type>())
            .ok_or_else(|| missing(path, "content_length"))?;
        let dup: Option<&StringArray> = b.column_by_name("duplicate_of").and_then(|c| c.as_string_opt::<i32>());
        // Files of a version before conditional recrawls have no `unchanged`.
        let unchanged: Option<&BooleanArray> = b.column_by_name("unchanged").and_then(|c| c.as_boolean_opt());
        let lr = self.layers.entry(layer).or_default();
        let robots = ErrorKind::Robots.as_str();
        for i in 0..b.num_rows() {
            let (st, err) = (status.value(i), (!error.is_null(i)).then(|| error.value(i)));
            let kept = unchanged.is_some_and(|u| u.is_valid(i) && u.value(i));
            lr.rows += 1;
            *lr.statuses.entry(status_class(st)).or_default() += 1;
            let what = outcome(st, err);
            let what = what.as_ref();
            match lr.outcomes.get_mut(what) {
                Some(n) => *n += 1,
                None => {
                    lr.outcomes.insert(what.to_string(), 1);
                }
            }
            lr.unchanged += u64::from(kept);
            if let Some(d) = dup.filter(|d| !d.is_null(i)) {
                lr.duplicates += 1;
                let target = d.value(i);
                match self.dup_targets.get_mut(target) {
                    Some(n) => *n += 1,
                    None => {
                        self.dup_targets.insert(target.to_string(), 1);
                    }
                }
            }
            let h = host.value(i);
            if !self.hosts.contains_key(h) {
                self.hosts.insert(h.to_string(), HostTally::default());
            }
            let t = self.hosts.get_mut(h).expect("inserted above");
            t.pages += 1;
            match what {
                "ok" => t.ok += 1,
                "other" => {}
                w if w == robots => t.robots += 1,
                _ => t.errors += 1,
            }
            if what == robots {
                continue; // no request was sent
            }
            t.ms.push(u32::try_from(ms.value(i).max(0)).unwrap_or(u32::MAX));
            if !kept {
                t.bytes += u64::try_from(len.value(i)).unwrap_or(0);
            }
            if st > 0 {
                self.sizes.push(u32::try_from(len.value(i).max(0)).unwrap_or(u32::MAX));
            }
        }
        Ok(())
    }

    /// Adds another file's tally.
    pub fn merge(&mut self, other: Self) {
        for (layer, o) in other.layers {
            let l = self.layers.entry(layer).or_default();
            l.rows += o.rows;
            l.duplicates += o.duplicates;
            l.unchanged += o.unchanged;
            for (k, v) in o.statuses {
                *l.statuses.entry(k).or_default() += v;
            }
            for (k, v) in o.outcomes {
                *l.outcomes.entry(k).or_default() += v;
            }
        }
        for (host, o) in other.hosts {
            let t = self.hosts.entry(host).or_default();
            t.pages += o.pages;
            t.ok += o.ok;
            t.errors += o.errors;
            t.robots += o.robots;
            t.bytes += o.bytes;
            t.ms.extend(o.ms);
        }
        self.sizes.extend(other.sizes);
        for (url, n) in other.dup_targets {
            *self.dup_targets.entry(url).or_default() += n;
        }
    }
}

/// Links of one layer with one noise label (`none`: no label).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LabelCount {
    pub links: u64,
    /// Of them, links the crawl follows.
    pub followed: u64,
}

/// What one layer's `links` rows say.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LayerLinks {
    pub rows: u64,
    pub noise: BTreeMap<String, LabelCount>,
}

/// What the `links` files say: noise labels per layer, and the host graph
/// (links between hosts, counted).
#[derive(Clone, Debug, Default)]
pub(super) struct LinkTally {
    pub layers: BTreeMap<u32, LayerLinks>,
    pub hosts: Vec<String>,
    index: HashMap<String, u32>,
    /// Links from host to host (ids into `hosts`), self-links included.
    pub edges: HashMap<(u32, u32), u64>,
}

impl LinkTally {
    fn host_id(&mut self, host: &str) -> u32 {
        if let Some(&id) = self.index.get(host) {
            return id;
        }
        let id = u32::try_from(self.hosts.len()).unwrap_or(u32::MAX);
        self.hosts.push(host.to_string());
        self.index.insert(host.to_string(), id);
        id
    }

    /// Adds a batch of `layer`'s `links` rows read from `path`.
    ///
    /// # Errors
    /// When a column the report reads is missing or of another type.
    pub fn add(&mut self, layer: u32, b: &RecordBatch, path: &str) -> Result<(), StoreError> {
        let (src, dst, noise) =
            (string_col(b, "src_url", path)?, string_col(b, "dst_url", path)?, string_col(b, "noise", path)?);
        let followed =
            b.column_by_name("followed").and_then(|c| c.as_boolean_opt()).ok_or_else(|| missing(path, "followed"))?;
        let mut labels: BTreeMap<&str, LabelCount> = BTreeMap::new();
        // Consecutive rows mostly share their source page: its host is looked up once.
        let mut last_src: (&str, u32) = ("", 0);
        for i in 0..b.num_rows() {
            let label = if noise.is_null(i) { "none" } else { noise.value(i) };
            let c = labels.entry(label).or_default();
            c.links += 1;
            c.followed += u64::from(followed.value(i));
            let s_host = crate::urlnorm::host_of(src.value(i));
            let s = if s_host == last_src.0 && i > 0 {
                last_src.1
            } else {
                let id = self.host_id(s_host);
                last_src = (s_host, id);
                id
            };
            let d = self.host_id(crate::urlnorm::host_of(dst.value(i)));
            *self.edges.entry((s, d)).or_default() += 1;
        }
        let l = self.layers.entry(layer).or_default();
        l.rows += b.num_rows() as u64;
        for (k, v) in labels {
            let c = l.noise.entry(k.to_string()).or_default();
            c.links += v.links;
            c.followed += v.followed;
        }
        Ok(())
    }

    /// Adds another file's tally.
    pub fn merge(&mut self, other: Self) {
        for (layer, o) in other.layers {
            let l = self.layers.entry(layer).or_default();
            l.rows += o.rows;
            for (k, v) in o.noise {
                let c = l.noise.entry(k).or_default();
                c.links += v.links;
                c.followed += v.followed;
            }
        }
        let ids: Vec<u32> = other.hosts.iter().map(|h| self.host_id(h)).collect();
        for ((s, d), n) in other.edges {
            *self.edges.entry((ids[s as usize], ids[d as usize])).or_default() += n;
        }
    }
}

/// A distribution in powers of two: bucket 0 holds 0, bucket `k` the values
/// in `[2^(k-1), 2^k)`; with exact quantiles.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Histogram {
    /// The lower bound of each bucket shown (empty ones at both ends left out).
    pub lows: Vec<u64>,
    pub counts: Vec<u64>,
    pub n: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl Histogram {
    /// The histogram of `values` (sorted here).
    #[must_use]
    pub fn of(mut values: Vec<u32>) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_unstable();
        // Bucket k > 0 holds the values of bit length k.
        let mut counts = [0u64; 33];
        for &v in &values {
            counts[32 - v.leading_zeros() as usize] += 1;
        }
        let q = |p: f64| -> u64 {
            if values.is_empty() {
                return 0;
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let i = ((values.len() - 1) as f64 * p).round() as usize;
            u64::from(values[i.min(values.len() - 1)])
        };
        let first = counts.iter().position(|&c| c > 0).unwrap_or(0);
        let last = counts.iter().rposition(|&c| c > 0).unwrap_or(0);
        let lows = (first..=last).map(|k| if k == 0 { 0 } else { 1u64 << (k - 1) }).collect();
        Self {
            lows,
            counts: if values.is_empty() { Vec::new() } else { counts[first..=last].to_vec() },
            n: values.len() as u64,
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            max: values.last().map_or(0, |&v| u64::from(v)),
        }
    }
}

/// The median of `values` (the lower middle for an even count), 0 for none.
#[must_use]
pub(super) fn median(values: &mut [u32]) -> u32 {
    if values.is_empty() {
        return 0;
    }
    let mid = (values.len() - 1) / 2;
    *values.select_nth_unstable(mid).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_powers_of_two_with_exact_quantiles() {
        let h = Histogram::of(vec![0, 1, 2, 3, 4, 7, 8, 1000]);
        assert_eq!(h.lows, vec![0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512]);
        assert_eq!(h.counts, vec![1, 1, 2, 2, 1, 0, 0, 0, 0, 0, 1]);
        assert_eq!((h.n, h.p50, h.max), (8, 4, 1000));
        assert_eq!(Histogram::of(Vec::new()), Histogram::default());
    }

    #[test]
    fn outcomes_are_counted_as_the_manifests_count_them() {
        assert_eq!(outcome(200, None), "ok");
        assert_eq!(outcome(404, None), "http_4xx");
        assert_eq!(outcome(503, None), "http_5xx");
        assert_eq!(outcome(301, None), "other");
        assert_eq!(outcome(0, Some("timeout")), "timeout");
        assert_eq!(outcome(200, Some("too_large")), "too_large");
        assert_eq!(median(&mut [5, 1, 3, 2]), 2);
        assert_eq!(median(&mut []), 0);
    }
}
