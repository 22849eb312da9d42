//! The counts of every class in one partition: recording pages' outcomes,
//! merging counts, and taking the previous crawl's counts as a prior.

use std::collections::{BTreeSet, HashMap};

#[cfg(doc)]
use super::RECENT_EVIDENCE;
use super::{coarse_of, view_kind, ClassCount, Level, PageClass, Tally};
use crate::evidence::Outcome;

/// Every class's counts in one partition, keyed by a hash of the class
/// ([`class_key`]): a lookup allocates nothing, where a key of owned
/// strings cost two allocations per lookup, about 15 per page judged and
/// 2 per candidate decided (most of the filter's time on a large site).
/// Two classes of one partition sharing a 64-bit hash would be counted as
/// one: with tens of thousands of classes, a chance under one in 10^10.
#[derive(Clone, Debug, Default)]
pub struct Yields {
    pub(super) classes: HashMap<u64, ClassCount>,
    /// The link classes' counts of the last layer alone ([`Self::add_layer`]).
    pub(super) recent: HashMap<u64, ClassCount>,
    /// What the previous crawl of the same sites learned
    /// ([`Self::set_prior`]): the evidence of a class this crawl has none of.
    pub(super) prior: HashMap<u64, ClassCount>,
}

/// The key of the class (`level`, `source`, `target`).
pub(super) fn class_key(level: Level, source: &str, target: &str) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&[level as u8]);
    h.update(source.as_bytes());
    // No template holds a NUL: source and target cannot run into each other.
    h.update(&[0]);
    h.update(target.as_bytes());
    h.digest()
}

impl Yields {
    /// The counts as they were stored.
    #[must_use]
    pub fn from_counts(rows: Vec<ClassCount>) -> Self {
        let classes = rows.into_iter().map(|c| (class_key(Level::of(c.level), &c.source, &c.target), c)).collect();
        Self { classes, recent: HashMap::new(), prior: HashMap::new() }
    }

    /// Takes what the previous crawl of the same sites (`--previous`)
    /// learned as the evidence of the classes this crawl has no evidence
    /// of yet, so a nightly crawl does not pay again for learning a class
    /// the night before already judged. For the link classes (fine,
    /// coarse, views, a site's, a kind of file's): what that crawl's pages
    /// of the next layer brought, its counts after that layer (`after`)
    /// less those before it (`before`), since what a class brings depends
    /// on how far the crawl has covered its site (a class of file views
    /// brings new versions at its first layer and copies at the next). For
    /// the templates as hubs: its counts after its last layer (`last`),
    /// where every page's links had led by then. This crawl's evidence,
    /// once a class has enough, always decides instead.
    pub fn set_prior(&mut self, before: Vec<ClassCount>, after: Vec<ClassCount>, last: Vec<ClassCount>) {
        let before = Self::from_counts(before).classes;
        let mut prior = HashMap::new();
        for mut c in after {
            let level = Level::of(c.level);
            if matches!(level, Level::HubFine | Level::HubCoarse) {
                continue;
            }
            let key = class_key(level, &c.source, &c.target);
            if let Some(b) = before.get(&key) {
                c.fetched = c.fetched.saturating_sub(b.fetched);
                c.new = c.new.saturating_sub(b.new);
                c.errors = c.errors.saturating_sub(b.errors);
            }
            if c.fetched > 0 {
                c.previous = true;
                prior.insert(key, c);
            }
        }
        for mut c in last {
            let level = Level::of(c.level);
            if matches!(level, Level::HubFine | Level::HubCoarse) {
                c.previous = true;
                prior.insert(class_key(level, &c.source, &c.target), c);
            }
        }
        self.prior = prior;
    }

    /// The counts to store, in the order of their keys (the same file on
    /// every run).
    #[must_use]
    pub fn counts(&self) -> Vec<ClassCount> {
        self.sorted().into_iter().cloned().collect()
    }

    /// [`Self::counts`] without copying them. By key, not by templates:
    /// the order only has to be the same on every run, and a partition's
    /// tens of thousands of classes (templates of one host, sharing long
    /// prefixes) compare faster by their keys.
    #[must_use]
    pub fn sorted(&self) -> Vec<&ClassCount> {
        let mut v: Vec<(&u64, &ClassCount)> = self.classes.iter().collect();
        v.sort_unstable_by_key(|(k, _)| **k);
        v.into_iter().map(|(_, c)| c).collect()
    }

    /// Adds the counts of a layer's pages (`layer`) to those of the layers
    /// before, and keeps its link classes' counts apart as the most recent
    /// evidence ([`RECENT_EVIDENCE`]).
    pub fn add_layer(&mut self, layer: Self) {
        self.recent = layer
            .classes
            .iter()
            .filter(|(_, c)| matches!(Level::of(c.level), Level::Fine | Level::Coarse | Level::View))
            .map(|(k, c)| (*k, c.clone()))
            .collect();
        self.merge(layer);
    }

    /// Adds `other`'s counts to these: the counts of pages recorded apart
    /// (on several cores) are those of the pages recorded together.
    pub fn merge(&mut self, other: Self) {
        if self.classes.is_empty() {
            self.classes = other.classes;
            return;
        }
        for (key, c) in other.classes {
            match self.classes.entry(key) {
                std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().add(c.tally()),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(c);
                }
            }
        }
    }

    /// Counts the outcome of a page fetched at `url`, reached from pages of
    /// the templates `via` (none: a seed, or a URL carried over), by a
    /// referrer that names none of its things.
    pub fn record(&mut self, url: &str, via: &[String], outcome: Outcome) {
        self.record_class(&PageClass::of(url, None, via), Tally::of(outcome));
    }

    /// Counts `tally`, the outcomes of pages of one class (`class`): what
    /// [`Self::record`] counts for each of them, added at once. Pages of a
    /// class count for the same keys, so a layer's pages are counted per
    /// class, not per page.
    pub fn record_class(&mut self, class: &PageClass<'_>, tally: Tally) {
        if tally.fetched == 0 {
            return;
        }
        let (target, plain) = (class.target.as_str(), class.plain());
        let coarse_target = coarse_of(target);
        let empty = [String::new()];
        let via = if class.via.is_empty() { &empty[..] } else { class.via };
        // Each class once per page, however many of the page's sources share it.
        let mut counted: Vec<u64> = Vec::with_capacity(3 * via.len());
        let mut count = |y: &mut Self, level: Level, source: &str, target: &str| {
            let key = class_key(level, source, target);
            if !counted.contains(&key) {
                counted.push(key);
                y.entry(key, level, source, target).add(tally);
            }
        };
        for s in via {
            count(self, Level::Fine, s, target);
            count(self, Level::Coarse, &coarse_of(s), &coarse_target);
            if let Some(kind) = view_kind(s, plain) {
                count(self, Level::View, "", &kind);
            }
        }
        count(self, Level::Site, "", target.split('/').next().unwrap_or_default());
        if let Some(kind) = &class.kind {
            count(self, Level::Resource, "", kind);
        }
        // As a hub: pages of its template (as their own links name it), and
        // new texts for the templates whose links led here.
        let coarse_plain = class.coarse_plain(&coarse_target);
        self.entry(class_key(Level::HubFine, "", plain), Level::HubFine, "", plain).fetched += tally.fetched;
        self.entry(class_key(Level::HubCoarse, "", &coarse_plain), Level::HubCoarse, "", &coarse_plain).fetched +=
            tally.fetched;
        if tally.new > 0 {
            let sources: BTreeSet<(Level, String)> = via
                .iter()
                .filter(|s| !s.is_empty())
                .flat_map(|s| [(Level::HubFine, s.clone()), (Level::HubCoarse, coarse_of(s))])
                .collect();
            for (level, s) in sources {
                self.entry(class_key(level, "", &s), level, "", &s).new += tally.new;
            }
        }
    }

    fn entry(&mut self, key: u64, level: Level, source: &str, target: &str) -> &mut ClassCount {
        self.classes.entry(key).or_insert_with(|| ClassCount {
            level: level as u8,
            source: source.to_string(),
            target: target.to_string(),
            ..ClassCount::default()
        })
    }

    pub(super) fn get(&self, level: Level, source: &str, target: &str) -> Option<&ClassCount> {
        self.classes.get(&class_key(level, source, target))
    }
}
