//! Cross-page boilerplate: the lines of a host's main texts that its
//! template puts on many of its pages (a footer such as "Part of the git(1)
//! suite", an index bar, a licence note), learned per host from the crawl's
//! own pages and trimmed off the edges of each page's main text
//! (docs/src/main-text.md, "Cross-page boilerplate").
//!
//! - **Learned per host and layer, in one pass.** Each map task counts, per
//!   host, on how many pages each line of the main text appears, and on how
//!   many of them it sits at an edge (among the first or last
//!   [`EDGE_LINES`] lines). It writes these counts as its partition's table
//!   of the layer. The bodies are read once, by the page's one parse; the
//!   table holds hashes and counts.
//! - **Applied in later layers, deterministically.** A map task of layer L
//!   sums the tables of its partition in layers before L. Since a partition
//!   owns its hosts for the whole run, that is every earlier page of these
//!   hosts. The result does not depend on the order in which this layer's
//!   pages arrive, so a resumed or retried task writes the same rows.
//! - **A line is boilerplate** when it appears on at least [`MIN_PAGES`]
//!   pages and [`MIN_SHARE`] of the host's pages, at an edge on
//!   [`EDGE_SHARE`] of them. A line of content that repeats, such as "New in
//!   version 3.7." or "IOException - if an I/O error occurs.", sits anywhere
//!   in its pages, so it is not boilerplate. A line shorter than
//!   [`MIN_WORDS`] words must do more, appear on [`SHORT_SHARE`] of the
//!   pages and at an edge on [`SHORT_EDGE_SHARE`] of them: such lines are
//!   mostly headings ("Description", "Since:") or values ("1.8") of content.
//! - **Only the edges are trimmed**: the leading and trailing runs of
//!   boilerplate lines. A page whose main text would be all boilerplate keeps
//!   it, since the page is then a copy of another one, not a template.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

/// Fewest words of a line held to [`MIN_SHARE`] and [`EDGE_SHARE`];
/// shorter lines are held to [`SHORT_SHARE`] and [`SHORT_EDGE_SHARE`].
pub const MIN_WORDS: usize = 3;
/// Fewest pages of the host a boilerplate line appears on.
pub const MIN_PAGES: u32 = 3;
/// Least share of the host's pages a boilerplate line appears on.
pub const MIN_SHARE: f64 = 0.1;
/// Lines at each end of a main text that count as its edge.
pub const EDGE_LINES: usize = 3;
/// Least share of a line's pages on which it sits at an edge.
pub const EDGE_SHARE: f64 = 0.8;
/// The same two shares for a line shorter than [`MIN_WORDS`] words.
pub const SHORT_SHARE: f64 = 0.5;
pub const SHORT_EDGE_SHARE: f64 = 0.9;

/// The key of one line of main text: a hash of its text without the
/// Markdown marks of `--text-format markdown` (the main text's lines have
/// their whitespace collapsed already), whose lowest bit says whether the
/// line is short (fewer than [`MIN_WORDS`] words); `None` for a line
/// without words.
#[must_use]
pub fn line_key(line: &str) -> Option<u64> {
    let t = line.trim();
    let t = t.trim_start_matches('#').trim_start_matches(['-', '*', '>']).trim_start();
    if t.is_empty() {
        return None;
    }
    let short = t.split_ascii_whitespace().take(MIN_WORDS).count() < MIN_WORDS;
    Some((xxhash_rust::xxh3::xxh3_64(t.as_bytes()) & !1) | u64::from(short))
}

/// What one page adds to its host's counts: its distinct line keys, and
/// those at an edge.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageLines {
    pub lines: Vec<u64>,
    pub edge: Vec<u64>,
}

impl PageLines {
    /// The line keys of a page's main text.
    #[must_use]
    pub fn of(main_text: &str) -> Self {
        let keys: Vec<Option<u64>> = main_text.lines().filter(|l| !l.trim().is_empty()).map(line_key).collect();
        let n = keys.len();
        let mut lines: Vec<u64> = keys.iter().flatten().copied().collect();
        let mut edge: Vec<u64> = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| *i < EDGE_LINES || *i + EDGE_LINES >= n)
            .filter_map(|(_, k)| *k)
            .collect();
        for v in [&mut lines, &mut edge] {
            v.sort_unstable();
            v.dedup();
        }
        Self { lines, edge }
    }
}

/// One host's counts: its pages, and per line key on how many of them the
/// line appears and sits at an edge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLines {
    pub pages: u32,
    /// Line key, pages, pages with the line at an edge; sorted by key.
    pub lines: Vec<(u64, u32, u32)>,
}

/// A map task's counts of one layer, per host: what it writes for the
/// tasks of later layers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    pub hosts: BTreeMap<String, HostLines>,
}

/// Line keys are hashes already: a map of them needs no hashing again.
#[derive(Clone, Copy, Debug, Default)]
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Keyed<V> = HashMap<u64, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// A host's pages, and per line key its pages and pages at an edge.
type Counts = (u32, Keyed<(u32, u32)>);

/// Counts the pages of a map task as they come.
#[derive(Debug, Default)]
pub struct Learner {
    hosts: HashMap<String, Counts>,
}

impl Learner {
    /// Counts one page of `host`.
    pub fn add(&mut self, host: &str, page: &PageLines) {
        let (pages, lines) = self.hosts.entry(host.to_string()).or_default();
        *pages += 1;
        for k in &page.lines {
            lines.entry(*k).or_default().0 += 1;
        }
        for k in &page.edge {
            lines.entry(*k).or_default().1 += 1;
        }
    }

    /// Whether no page was counted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// The table to write. Lines seen on one page only are left out: it
    /// keeps the table small, and a line that a host's template repeats is
    /// on many of the pages of any layer that fetched a few of them.
    #[must_use]
    pub fn table(&self) -> Table {
        let hosts = self
            .hosts
            .iter()
            .map(|(host, (pages, lines))| {
                let mut kept: Vec<(u64, u32, u32)> =
                    lines.iter().filter(|(_, (n, _))| *n >= 2).map(|(k, (n, e))| (*k, *n, *e)).collect();
                kept.sort_unstable();
                (host.clone(), HostLines { pages: *pages, lines: kept })
            })
            .collect();
        Table { hosts }
    }
}

/// The boilerplate lines of each host, from the tables of earlier layers.
#[derive(Clone, Debug, Default)]
pub struct SiteBoilerplate {
    hosts: HashMap<String, KeySet>,
}

type KeySet = HashSet<u64, std::hash::BuildHasherDefault<KeyHasher>>;

impl SiteBoilerplate {
    /// Sums the tables (one per earlier layer of a partition) and keeps, per
    /// host, the lines that are boilerplate.
    #[must_use]
    pub fn from_tables<'a>(tables: impl IntoIterator<Item = &'a Table>) -> Self {
        let mut sums: HashMap<&str, Counts> = HashMap::new();
        for table in tables {
            for (host, h) in &table.hosts {
                let (pages, lines) = sums.entry(host.as_str()).or_default();
                *pages += h.pages;
                for (k, n, e) in &h.lines {
                    let c = lines.entry(*k).or_default();
                    (c.0, c.1) = (c.0 + n, c.1 + e);
                }
            }
        }
        let hosts = sums
            .into_iter()
            .filter_map(|(host, (pages, lines))| {
                let set: KeySet = lines
                    .into_iter()
                    .filter(|(k, (n, e))| {
                        let (share, edge) =
                            if k & 1 == 1 { (SHORT_SHARE, SHORT_EDGE_SHARE) } else { (MIN_SHARE, EDGE_SHARE) };
                        *n >= MIN_PAGES
                            && f64::from(*n) >= share * f64::from(pages)
                            && f64::from(*e) >= edge * f64::from(*n)
                    })
                    .map(|(k, _)| k)
                    .collect();
                (!set.is_empty()).then(|| (host.to_string(), set))
            })
            .collect();
        Self { hosts }
    }

    /// Whether no host has boilerplate lines.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    /// `main_text` without its leading and trailing boilerplate lines of
    /// `host`, or `None` when there are none (or when nothing else would
    /// be left).
    #[must_use]
    pub fn trim(&self, host: &str, main_text: &str) -> Option<String> {
        let set = self.hosts.get(host)?;
        let lines: Vec<&str> = main_text.lines().collect();
        let boiler = |l: &&str| line_key(l).is_none_or(|k| set.contains(&k));
        let start = lines.iter().position(|l| !boiler(l))?;
        let end = lines.len() - lines.iter().rev().position(|l| !boiler(l)).unwrap_or(0);
        let dropped = lines[..start].iter().chain(&lines[end..]).any(|l| !l.trim().is_empty());
        dropped.then(|| lines[start..end].join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(i: usize, footer: &str) -> String {
        format!(
            "Index A B C D E\nTitle {i}\nIntro words for page {i}\nMore intro words {i}\n\
             IOException - if an I/O error occurs.\nDescription\nParagraph {i} says something.\n\
             Closing words of page {i}\n{footer}"
        )
    }

    /// Learned from the pages of earlier layers: the footer that ends most
    /// pages is trimmed; a line of content that repeats inside pages, and a
    /// short heading, are not.
    #[test]
    fn a_template_footer_is_trimmed_and_repeated_content_is_kept() {
        let mut learner = Learner::default();
        for i in 0..10 {
            let text = page(i, "GIT\nPart of the git(1) suite");
            learner.add("git.test", &PageLines::of(&text));
        }
        learner.add("other.test", &PageLines::of("Part of the git(1) suite\nHello there world"));
        let table = learner.table();
        let json = serde_json::to_string(&table).expect("json");
        let back: Table = serde_json::from_str(&json).expect("back");
        assert_eq!(back, table, "the table round-trips");
        let site = SiteBoilerplate::from_tables([&table]);
        let text = "Index A B C D E\nNew page\nIOException - if an I/O error occurs.\nDescription\nThe end of it all.\nGIT\nPart of the git(1) suite\n";
        assert_eq!(
            site.trim("git.test", text).as_deref(),
            Some("New page\nIOException - if an I/O error occurs.\nDescription\nThe end of it all."),
            "the index line and the footer (its short heading too) go; the repeated throws clause and heading stay"
        );
        assert_eq!(site.trim("other.test", text), None, "another host learned nothing");
        assert_eq!(site.trim("git.test", "Description\nA new page of three words"), None, "nothing to trim");
        assert_eq!(site.trim("git.test", "Part of the git(1) suite"), None, "a page of boilerplate only keeps it");
    }

    #[test]
    fn few_pages_or_a_small_share_teach_nothing() {
        let mut learner = Learner::default();
        for _ in 0..2 {
            learner.add("a.test", &PageLines::of("Body text of page\nShared footer line here"));
        }
        assert!(SiteBoilerplate::from_tables([&learner.table()]).is_empty(), "2 pages are too few");
        let mut big = Learner::default();
        for i in 0..100 {
            let footer = if i < 5 { "Shared footer line here" } else { "Unique footer number " };
            big.add("b.test", &PageLines::of(&format!("Body text of page {i}\n{footer}{i}")));
        }
        assert!(SiteBoilerplate::from_tables([&big.table()]).is_empty(), "5 of 100 pages is below the share");
        // The same counts split over two layers' tables sum to the same verdict.
        let (mut l1, mut l2) = (Learner::default(), Learner::default());
        for i in 0..6 {
            let l = if i % 2 == 0 { &mut l1 } else { &mut l2 };
            l.add("c.test", &PageLines::of(&format!("Body {i} text here\nShared footer line here")));
        }
        let site = SiteBoilerplate::from_tables([&l1.table(), &l2.table()]);
        assert_eq!(
            site.trim("c.test", "New body text here\nShared footer line here").as_deref(),
            Some("New body text here")
        );
    }

    #[test]
    fn markdown_marks_do_not_change_a_lines_key() {
        assert_eq!(line_key("## Part of the suite"), line_key("Part of the suite"));
        assert_eq!(line_key("- Part of the suite"), line_key("Part of the suite "));
        assert_eq!(line_key("Two words").map(|k| k & 1), Some(1), "short");
        assert_eq!(line_key("Three words here").map(|k| k & 1), Some(0));
        assert_eq!(line_key("  - "), None);
    }
}
