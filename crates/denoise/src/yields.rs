//! The yield filter: fetches are spent on the kinds of links that bring
//! new text, and stop being spent on the kinds that bring copies.
//!
//! A **link class** is a pair of URL templates: the template of the page a
//! link sits on and the template of its target (`repo/commit/?id` →
//! `repo/tree/src/lib.rs?id`). Its **yield** is what its fetched targets
//! brought: new texts per fetch ([`super::evidence`]). A web application's
//! views of one thing are distinct classes: on a git viewer, the links from
//! a commit to the files it changed bring a new version of each file, while
//! the links from a directory listing to every file at every commit bring
//! the same file again and again; on a wiki, the links from a page's
//! history to its old revisions bring texts, the links to each sort order
//! of a listing do not. A template alone cannot tell these apart (both
//! links lead to `tree/…?id`); the page a link sits on can.
//!
//! The decision for a candidate URL, reached by links from one or more
//! source templates (at most [`MAX_VIA`] kept, the smallest):
//!
//! 0. before the crawl's depth, a target whose template's pages led to new
//!    texts is followed for where it leads ([`MIN_HUB`]), unless it is a
//!    view of a page that links it ([`view_kind`]), which leads where that
//!    page does;
//! 1. a class with fewer than [`MIN_EVIDENCE`] judged fetches is
//!    *explored*: its targets are followed. Evidence is read at two levels,
//!    the fine class first and, while it has too few fetches, the coarse
//!    class (both templates cut to their first two path segments), so a
//!    new file of a known kind is judged by its kind;
//! 2. a class whose yield is at least [`MIN_YIELD`] is followed;
//! 3. a URL whose every class yields less is skipped, except one in
//!    [`PROBE_EVERY`] (by a hash of the URL, the same on every run), which
//!    is fetched as a probe: its outcome keeps the class's yield current, so
//!    a class whose later pages turn fruitful is followed again. The rate
//!    falls as the evidence grows ([`probe_every`]): a class judged on `n`
//!    fetches is probed once in `n` (from 32 to 64), the decaying
//!    exploration of an ε-greedy choice with ε ∝ 1/n, which keeps probing
//!    a class forever but spends less on one whose yield is well known;
//! 4. a URL none of whose classes has evidence, in a section of its site
//!    whose files of its kind were mostly answered with errors
//!    ([`resource_kind`]), is judged by those fetches as in 3, and is not
//!    followed as a hub in 0: a site's broken links are most often broken
//!    the same way (relative links to files it does not serve).
//!
//! A nightly crawl starts from the previous night's counts
//! ([`Yields::set_prior`]): a class of no evidence yet is judged by what it
//! brought then, followed if it yielded and probed as a class never
//! fetched if not, never skipped on them alone; a template's share as a
//! hub is the larger of the two nights'.
//!
//! The DOM prefilter and the LCS clusters are inputs, not the decision: a
//! link in a navigation block is a suspect that this evidence confirms or
//! clears, and the user's known noise URLs mark their cluster
//! ([`super::noise_by_cluster`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Int32Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::evidence::{variable, Outcome};

/// Judged fetches a class needs before its yield decides.
pub const MIN_EVIDENCE: u64 = 4;
/// Judged fetches of a class in the last layer from which they decide
/// alone, not the counts of every layer. What a class brings changes as
/// the crawl covers the site: the first links from check-ins to the files
/// they changed brought the files' first versions (385 new of 396), the
/// next ones their views already fetched (0 of 434); counted over every
/// layer the class still yielded, and fetched 1,695 copies more.
pub const RECENT_EVIDENCE: u64 = 16;
/// New texts found among a page's targets, per page of its template, from
/// which the template is followed for where it leads (a listing, a log).
pub const MIN_HUB: f32 = 0.5;
/// URLs of a class never seen fetched at once as its first probes; the
/// rest wait one layer for their evidence...
pub const COLD_BATCH: usize = 16;
/// ...and of a kind of view never fetched on a host ([`view_kind`]), on
/// every host: views are cheap to judge and most often copies.
pub const VIEW_BATCH: usize = 2 * MIN_EVIDENCE as usize;
/// ...on a host where fewer than this share of the judged pages were new.
/// Waiting costs a layer; it pays where a good share of fetches bring
/// copies (a web application's views), not on a site where nearly every
/// page fetched so far was new (documentation), whose cold classes are
/// fetched at once.
pub const DEFER_BELOW: f32 = 0.75;
/// Judged pages a host needs before its share decides whether to wait.
const SITE_EVIDENCE: u64 = 20;
/// New texts per fetch under which a class is not followed: one in about
/// seven. A class that yields less spends more than six fetches a text;
/// at 0.1 a git viewer's and a Fossil's crawls fetched 1.3 % and 1.4 %
/// more pages for 0.1 % more of their texts.
pub const MIN_YIELD: f32 = 0.15;
/// A URL of a class that yields little is still fetched once in this many
/// while the class has at most this many judged fetches (a probe in 16
/// spent 1 % more of a git viewer's pages, and found no text more)...
pub const PROBE_EVERY: u64 = 32;
/// ...then once in as many as its judged fetches, up to this many: the
/// more evidence a class of copies has, the less a probe can change it.
pub const PROBE_EVERY_MOST: u64 = 64;
/// Source templates kept per candidate URL.
pub const MAX_VIA: usize = 4;
/// A file extension is at most this long ([`resource_kind`]).
const MAX_EXTENSION: usize = 8;
/// Query values up to this long, without digits or separators, name a kind
/// of view (`do=diff`, `s=name`) and stay in a link template.
const MAX_LITERAL_VALUE: usize = 12;

/// A URL's link template: the host, each path segment or `*` for one that
/// names a single thing (an id, a date, a slug: [`variable`]), and the
/// sorted query keys, each with its value when the value is a short word
/// (`s.test/wiki/doku.php?do=diff&id&rev`).
#[must_use]
pub fn link_template(url: &str) -> String {
    template_of(url, &[]).0
}

/// The link template of `url` as linked from `referrer`: as
/// [`link_template`], but a path segment or query value that names the
/// same thing as one in the referrer's URL is `@` (`=@` for a value),
/// not `*`: the link leads to another view of the linking page's own
/// thing (a check-in's manifest from the check-in, `f.test/artifact/@`
/// from `f.test/info/*`), not to another thing it lists
/// (`f.test/artifact/*`, a file the check-in changed). Web applications
/// show one thing under many templates; which of these links bring new
/// text and which copies is learned per class like the rest. The
/// template without the marks, when it has any, comes second.
#[must_use]
pub fn link_template_from(url: &str, referrer: Option<&str>) -> (String, Option<String>) {
    let own = referrer.map(named_things).unwrap_or_default();
    let (marked, any) = template_of(url, &own);
    let plain = any.then(|| template_of(url, &[]).0);
    (marked, plain)
}

/// The segments and query values of a URL that name a single thing.
fn named_things(url: &str) -> Vec<&str> {
    let (_, path, query) = split_url(url);
    let segs = path.split('/').filter(|s| !s.is_empty() && variable(s));
    let values = query.split('&').filter_map(|kv| kv.split_once('=')).map(|(_, v)| v);
    segs.chain(values.filter(|v| !v.is_empty() && !literal(v))).collect()
}

/// A URL's host, path and query, without scheme and fragment.
fn split_url(url: &str) -> (&str, &str, &str) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split_once('#').map_or(rest, |(r, _)| r);
    let (host, path_query) = rest.find('/').map_or((rest, ""), |at| rest.split_at(at));
    let (path, query) = path_query.split_once('?').map_or((path_query, ""), |(p, q)| (p, q));
    (host, path, query)
}

/// [`link_template`], with the things in `own` marked `@`; and whether any was.
fn template_of(url: &str, own: &[&str]) -> (String, bool) {
    let (host, path, query) = split_url(url);
    let mut marked = false;
    let mut mark = |v: &str| {
        let m = own.contains(&v);
        marked |= m;
        m
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(host);
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        out.push_str(match variable(seg) {
            true if mark(seg) => "@",
            true => "*",
            false => seg,
        });
    }
    if path.ends_with('/') {
        out.push('/');
    }
    if !query.is_empty() {
        let mut keys: BTreeSet<std::borrow::Cow<'_, str>> = BTreeSet::new();
        for kv in query.split('&').filter(|kv| !kv.is_empty()) {
            keys.insert(match kv.split_once('=') {
                Some((_, v)) if literal(v) => kv.into(),
                Some((k, v)) if !v.is_empty() && mark(v) => format!("{k}=@").into(),
                Some((k, _)) => k.into(),
                None => kv.into(),
            });
        }
        out.push('?');
        out.push_str(&keys.into_iter().collect::<Vec<_>>().join("&"));
    }
    (out, marked)
}

fn literal(v: &str) -> bool {
    !v.is_empty() && v.len() <= MAX_LITERAL_VALUE && v.bytes().all(|b| b.is_ascii_alphabetic())
}

/// The coarse form of a link template: its first two path segments (the
/// application and the kind of view, on most sites), then `/…` if it had
/// more, and its query keys without their values.
#[must_use]
pub fn coarse_of(template: &str) -> String {
    let (path, query) = template.split_once('?').map_or((template, None), |(p, q)| (p, Some(q)));
    // Host and two segments: cut at the third '/' after the host.
    let cut = path.match_indices('/').nth(2).map(|(i, _)| i);
    let mut out = match cut {
        Some(i) if i + 1 < path.len() => format!("{}/…", &path[..i]),
        _ => path.to_string(),
    };
    if let Some(q) = query {
        let keys: BTreeSet<&str> = q.split('&').map(|kv| kv.split_once('=').map_or(kv, |(k, _)| k)).collect();
        out.push('?');
        out.push_str(&keys.into_iter().collect::<Vec<_>>().join("&"));
    }
    out
}

/// Which evidence a count holds: a link class's, fine or coarse, or a
/// template's as a hub (where its pages' links led), fine or coarse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    Fine = 0,
    Coarse = 1,
    HubFine = 2,
    HubCoarse = 3,
    /// All the judged pages of one host.
    Site = 4,
    /// The views of pages on one host that add the same query keys
    /// ([`view_kind`]): every print view, every reply form.
    View = 5,
    /// The pages of one section of a host whose file has one extension
    /// ([`resource_kind`]): every `.hpp` under `/boost/`.
    Resource = 6,
}

impl Level {
    fn of(n: u8) -> Self {
        match n {
            0 => Self::Fine,
            1 => Self::Coarse,
            2 => Self::HubFine,
            3 => Self::HubCoarse,
            5 => Self::View,
            6 => Self::Resource,
            _ => Self::Site,
        }
    }
}

/// What the fetched targets of one link class brought, counted over the
/// layers so far in one partition.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClassCount {
    pub level: u8,
    /// The template of the pages the links sit on ("" for seeds and URLs
    /// carried over, which no link brought).
    pub source: String,
    pub target: String,
    /// Fetches judged (neutral outcomes are no evidence and not counted).
    pub fetched: u64,
    /// Of those, the pages whose text was new.
    pub new: u64,
    /// Of those, client errors and redirects off the site.
    pub errors: u64,
    /// The counts are the previous crawl's ([`Yields::set_prior`]), not
    /// this one's (never stored): they make a class be probed, never skip
    /// it.
    pub previous: bool,
}

impl ClassCount {
    /// New texts per judged fetch.
    #[must_use]
    pub fn share(&self) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let s = self.new as f32 / self.fetched.max(1) as f32;
        s
    }

    fn evident(&self) -> bool {
        self.fetched >= MIN_EVIDENCE
    }

    fn yields(&self) -> bool {
        self.share() >= MIN_YIELD
    }

    /// New texts per judged fetch that brought a page: errors left out.
    #[must_use]
    pub fn text_share(&self) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let s = self.new as f32 / self.fetched.saturating_sub(self.errors).max(1) as f32;
        s
    }

    /// Most of its judged fetches were errors.
    fn broken(&self) -> bool {
        self.evident() && self.errors * 2 > self.fetched
    }

    /// Its counts, without its templates.
    fn tally(&self) -> Tally {
        Tally { fetched: self.fetched, new: self.new, errors: self.errors }
    }

    fn add(&mut self, t: Tally) {
        let mut sum = self.tally();
        sum.add(t);
        (self.fetched, self.new, self.errors) = (sum.fetched, sum.new, sum.errors);
    }
}

/// Outcomes of fetched pages, as a class counts them: judged fetches
/// (neutral outcomes are none), new texts, errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub fetched: u64,
    pub new: u64,
    pub errors: u64,
}

impl Tally {
    /// One page's outcome.
    #[must_use]
    pub fn of(outcome: Outcome) -> Self {
        let judged = u64::from(outcome != Outcome::Neutral);
        Self { fetched: judged, new: u64::from(outcome == Outcome::New), errors: u64::from(outcome == Outcome::Error) }
    }

    pub fn add(&mut self, other: Self) {
        self.fetched += other.fetched;
        self.new += other.new;
        self.errors += other.errors;
    }
}

/// What the filter knows of a URL before fetching it, and all its
/// evidence is keyed by: its link template, its kind of file
/// ([`resource_kind`]) and the templates of the pages that link it. URLs of
/// one class count for the same classes once fetched, and are decided
/// alike but for their probes ([`Judged::verdict`]): a layer's pages and
/// candidates are counted and decided per class (on the documentation
/// corpus, two to three URLs a class).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageClass<'a> {
    /// Its link template as linked from its referrer
    /// ([`link_template_from`])...
    pub target: String,
    /// ...and without the referrer's things marked, when it has any.
    pub plain: Option<String>,
    pub kind: Option<String>,
    pub via: &'a [String],
}

impl<'a> PageClass<'a> {
    #[must_use]
    pub fn of(url: &str, referrer: Option<&str>, via: &'a [String]) -> Self {
        let (target, plain) = link_template_from(url, referrer);
        Self { target, plain, kind: resource_kind(url), via }
    }

    /// Its link template as its own pages' links name it, once fetched:
    /// the template its hub evidence and views are counted by.
    #[must_use]
    pub fn plain(&self) -> &str {
        self.plain.as_deref().unwrap_or(&self.target)
    }

    /// The coarse form of [`Self::plain`], given that of its target
    /// (`coarse_target`): the same string unless the target has marks.
    fn coarse_plain<'s>(&self, coarse_target: &'s str) -> std::borrow::Cow<'s, str> {
        self.plain.as_deref().map_or(coarse_target.into(), |p| coarse_of(p).into())
    }

    /// A 64-bit key of the class (as [`class_key`], a collision among a
    /// partition's classes is a chance under one in 10^10).
    #[must_use]
    pub fn key(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(self.target.as_bytes());
        // No template or kind holds a NUL: the parts cannot run into each other.
        h.update(&[0]);
        h.update(self.kind.as_deref().unwrap_or_default().as_bytes());
        for s in self.via {
            h.update(&[0]);
            h.update(s.as_bytes());
        }
        h.digest()
    }
}

/// Why a candidate is followed or skipped.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Nothing to judge it by (a seed, a URL carried over, a template
    /// whose pages' links were never followed yet).
    Explore,
    /// No class of the URL has been fetched enough to judge it: it is
    /// fetched as one of its class's first probes, or waits one layer for
    /// their evidence ([`COLD_BATCH`]).
    Cold,
    /// Its template's pages lead to new texts (a listing, a log).
    Hub,
    /// Some class of the URL yields new text.
    Yields,
    /// Every class yields little; fetched as that classes' probe.
    Probe,
    /// Every class yields little: skipped, with the best class's evidence.
    Skip(ClassCount),
}

impl Verdict {
    #[must_use]
    pub fn follows(&self) -> bool {
        !matches!(self, Self::Skip(_))
    }
}

/// Every class's counts in one partition, keyed by a hash of the class
/// ([`class_key`]): a lookup allocates nothing, where a key of owned
/// strings cost two allocations per lookup, about 15 per page judged and
/// 2 per candidate decided (most of the filter's time on a large site).
/// Two classes of one partition sharing a 64-bit hash would be counted as
/// one: with tens of thousands of classes, a chance under one in 10^10.
#[derive(Clone, Debug, Default)]
pub struct Yields {
    classes: HashMap<u64, ClassCount>,
    /// The link classes' counts of the last layer alone ([`Self::add_layer`]).
    recent: HashMap<u64, ClassCount>,
    /// What the previous crawl of the same sites learned
    /// ([`Self::set_prior`]): the evidence of a class this crawl has none of.
    prior: HashMap<u64, ClassCount>,
}

/// The key of the class (`level`, `source`, `target`).
fn class_key(level: Level, source: &str, target: &str) -> u64 {
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

    fn get(&self, level: Level, source: &str, target: &str) -> Option<&ClassCount> {
        self.classes.get(&class_key(level, source, target))
    }

    /// New texts found through links of pages of `target`, per page of it:
    /// the fine template's when it has enough pages, else the coarse one's.
    /// With the previous crawl's counts ([`Self::set_prior`]), the larger
    /// of its share and this crawl's: a template's pages count as a hub's
    /// the layer after they are fetched (when their links' targets are),
    /// so this crawl's share of a template it has just met falls short of
    /// where its pages lead, which the previous crawl saw to its end.
    fn hub(&self, target: &str, coarse_target: &str) -> Option<f32> {
        fn of(counts: &HashMap<u64, ClassCount>, target: &str, coarse_target: &str) -> Option<f32> {
            let get = |level, t: &str| counts.get(&class_key(level, "", t)).filter(|c| c.evident());
            get(Level::HubFine, target).or_else(|| get(Level::HubCoarse, coarse_target)).map(ClassCount::share)
        }
        let now = of(&self.classes, target, coarse_target);
        if self.prior.is_empty() {
            return now;
        }
        match (now, of(&self.prior, target, coarse_target)) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The evidence for links from pages of template `source` to `target`
    /// (`plain` without its marks, [`PageClass::plain`]): the fine class if
    /// it has enough fetches, else the coarse one, else, for a view of the
    /// source ([`view_kind`]), the host's views of that kind.
    /// At each level the last layer's counts are the evidence when there
    /// are enough of them ([`RECENT_EVIDENCE`]), the counts of all layers
    /// otherwise. With none at any level, the previous crawl's, in the
    /// same order ([`Self::set_prior`]).
    fn evidence<'a>(&'a self, source: &str, target: &str, coarse_target: &str, plain: &str) -> Option<&'a ClassCount> {
        let at = |level, source: &str, target: &str| {
            let key = class_key(level, source, target);
            let recent = self.recent.get(&key).filter(|c| c.fetched >= RECENT_EVIDENCE);
            recent.or_else(|| self.classes.get(&key).filter(|c| c.evident()))
        };
        let levels = |get: &dyn Fn(Level, &str, &str) -> Option<&'a ClassCount>| {
            get(Level::Fine, source, target)
                .or_else(|| get(Level::Coarse, &coarse_of(source), coarse_target))
                .or_else(|| get(Level::View, "", &view_kind(source, plain)?))
        };
        if let Some(c) = levels(&at) {
            return Some(c);
        }
        if self.prior.is_empty() {
            return None;
        }
        levels(&|level, source, target| self.prior.get(&class_key(level, source, target)).filter(|c| c.evident()))
    }

    /// Whether the cold classes of a host wait for their probes, for a URL
    /// of link template `target`: the pages the host served were mostly not
    /// new ([`DEFER_BELOW`]). Its errors are left out: a site's broken links
    /// say nothing of whether its views are copies.
    #[must_use]
    pub fn defers_cold(&self, target: &str) -> bool {
        let host = target.split('/').next().unwrap_or_default();
        self.get(Level::Site, "", host)
            .is_some_and(|c| c.fetched.saturating_sub(c.errors) >= SITE_EVIDENCE && c.text_share() < DEFER_BELOW)
    }

    /// Whether to fetch `url`, reached from pages of the templates `via`
    /// (by a referrer that names none of its things); `last`: its links
    /// will not be followed (it is at the crawl's depth), so only its own
    /// text counts.
    #[must_use]
    pub fn decide(&self, url: &str, via: &[String], last: bool) -> Verdict {
        self.judge(&PageClass::of(url, None, via), last).verdict(url)
    }

    /// How the URLs of `class` are decided (`last`: at the crawl's depth).
    #[must_use]
    pub fn judge(&self, class: &PageClass<'_>, last: bool) -> Judged<'_> {
        let (target, via) = (class.target.as_str(), class.via);
        if via.is_empty() || (self.classes.is_empty() && self.prior.is_empty()) {
            return Judged::Decided(Verdict::Explore);
        }
        let coarse_target = coarse_of(target);
        // A kind of file its section of the site mostly answers with
        // errors (a site's broken links to its header files) leads nowhere:
        // only the URL's own classes' evidence can clear it.
        let broken = class.kind.as_deref().and_then(|k| self.get(Level::Resource, "", k)).filter(|c| c.broken());
        // A view of a page leads where the page does: it is judged by what
        // views of its kind brought, never followed as a hub.
        let plain = class.plain();
        let view = via.iter().any(|s| view_kind(s, plain).is_some());
        if !last && !view && broken.is_none() {
            match self.hub(plain, &class.coarse_plain(&coarse_target)) {
                None => return Judged::Decided(Verdict::Explore),
                Some(h) if h >= MIN_HUB => return Judged::Decided(Verdict::Hub),
                Some(_) => {}
            }
        }
        // The best class of each crawl's evidence: this crawl's outweighs
        // the previous crawl's ([`Self::set_prior`]), its errors of the
        // URL's kind included.
        let (mut now, mut before): (Option<&ClassCount>, Option<&ClassCount>) = (None, None);
        for s in via {
            match self.evidence(s, target, &coarse_target, plain) {
                // A source of no evidence yet does not outweigh the others'.
                None => {}
                Some(c) if c.yields() && !c.previous => return Judged::Decided(Verdict::Yields),
                Some(c) => {
                    let best = if c.previous { &mut before } else { &mut now };
                    if best.is_none_or(|b| c.share() > b.share()) {
                        *best = Some(c);
                    }
                }
            }
        }
        match (now.or(broken), before) {
            (Some(best), _) => Judged::Low(best),
            (None, Some(best)) if best.yields() => Judged::Decided(Verdict::Yields),
            // The previous crawl's evidence alone never skips a URL: the
            // class is probed, as one never fetched is, and this crawl's
            // own probes judge it.
            (None, Some(_)) | (None, None) => Judged::Decided(Verdict::Cold),
        }
    }
}

/// How the URLs of one [`PageClass`] are decided.
#[derive(Clone, Debug, PartialEq)]
pub enum Judged<'a> {
    /// Every URL of the class alike.
    Decided(Verdict),
    /// The class yields little, by this evidence: its URLs are skipped but
    /// for its probes.
    Low(&'a ClassCount),
}

impl Judged<'_> {
    /// The verdict for `url`, of the class judged.
    #[must_use]
    pub fn verdict(&self, url: &str) -> Verdict {
        match self {
            Self::Decided(v) => v.clone(),
            Self::Low(best) if xxhash_rust::xxh3::xxh3_64(url.as_bytes()).is_multiple_of(probe_every(best)) => {
                Verdict::Probe
            }
            Self::Low(best) => Verdict::Skip((*best).clone()),
        }
    }
}

/// One URL in how many of a class that yields little is fetched as its
/// probe: [`PROBE_EVERY`], or as many as the class's judged fetches once it
/// has more, at most [`PROBE_EVERY_MOST`].
#[must_use]
pub fn probe_every(class: &ClassCount) -> u64 {
    class.fetched.clamp(PROBE_EVERY, PROBE_EVERY_MOST)
}

/// The kind of view a link template `target` is of pages of template
/// `source`, when it is one: the same host and path with query keys the
/// source does not have (a print view, a reply form, a share link, a sort
/// order, a page's history), named by its host and those keys
/// (`s.test?print`). A view of a page most often shows that page again, so
/// views of one kind are judged together on their host, whatever section
/// their pages are in, and wait for their probes on every host
/// ([`VIEW_BATCH`]).
#[must_use]
pub fn view_kind(source: &str, target: &str) -> Option<String> {
    fn split(t: &str) -> (&str, &str) {
        t.split_once('?').unwrap_or((t, ""))
    }
    let ((sp, sq), (tp, tq)) = (split(source), split(target));
    if sp.trim_end_matches('/') != tp.trim_end_matches('/') {
        return None;
    }
    let key = |kv: &str| kv.split_once('=').map_or(kv, |(k, _)| k).to_string();
    let had: BTreeSet<String> = sq.split('&').filter(|kv| !kv.is_empty()).map(key).collect();
    let added: Vec<&str> = tq.split('&').filter(|kv| !kv.is_empty() && !had.contains(&key(kv))).collect();
    if added.is_empty() {
        return None;
    }
    let host = tp.split('/').next().unwrap_or_default();
    Some(format!("{host}?{}", added.join("&")))
}

/// The kind of file `url` names, in its site's section: its host, its
/// first path segment (`*` when it names a single thing, as in
/// [`link_template`]; none for a file at the root) and its last segment's
/// extension (`s.test:8080/boost .hpp`), when it has one: up to
/// [`MAX_EXTENSION`] letters or digits after a dot, in any case. A
/// section's files of one kind are most often linked the same way, and so
/// found, or broken, together; another section's files of the same kind
/// are their own (a wiki's `docs/*.md` links broken, its `doc/*.md` pages
/// served).
#[must_use]
pub fn resource_kind(url: &str) -> Option<String> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let (host, path) = rest.split_once('/')?;
    let (section, last) = match path.split_once('/') {
        Some((first, _)) => (if variable(first) { "*" } else { first }, path.rsplit('/').next()?),
        None => ("", path),
    };
    let (stem, ext) = last.rsplit_once('.')?;
    let plain =
        !stem.is_empty() && (1..=MAX_EXTENSION).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric());
    let slash = if section.is_empty() { "" } else { "/" };
    plain.then(|| format!("{host}{slash}{section} .{}", ext.to_ascii_lowercase()))
}

/// Adds `template` to a candidate's sorted set of source templates, which
/// keeps the [`MAX_VIA`] smallest: a union that does not depend on the
/// order links are merged in.
pub fn add_via(via: &mut Vec<String>, template: &str) {
    match via.binary_search_by(|v| v.as_str().cmp(template)) {
        Ok(_) => {}
        Err(at) if at < MAX_VIA => {
            via.insert(at, template.to_string());
            via.truncate(MAX_VIA);
        }
        Err(_) => {}
    }
}

/// Schema of the class counts (`state/denoise/yields/`).
#[must_use]
pub fn counts_schema() -> SchemaRef {
    static S: OnceLock<SchemaRef> = OnceLock::new();
    Arc::clone(S.get_or_init(|| {
        Arc::new(Schema::new(vec![
            Field::new("level", DataType::Int32, false),
            Field::new("source", DataType::Utf8, false),
            Field::new("target", DataType::Utf8, false),
            Field::new("fetched", DataType::Int64, false),
            Field::new("new", DataType::Int64, false),
            Field::new("errors", DataType::Int64, false),
        ]))
    }))
}

/// Encodes class counts.
///
/// # Errors
/// Never in practice.
pub fn counts_batch(rows: &[&ClassCount]) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let cols: Vec<arrow_array::ArrayRef> = vec![
        Arc::new(rows.iter().map(|r| Some(i32::from(r.level))).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| Some(r.source.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| Some(r.target.as_str())).collect::<StringArray>()),
        Arc::new(rows.iter().map(|r| Some(n(r.fetched))).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| Some(n(r.new))).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| Some(n(r.errors))).collect::<Int64Array>()),
    ];
    RecordBatch::try_new(counts_schema(), cols)
}

/// Decodes class counts; `None` when a column is missing.
#[must_use]
pub fn counts_rows(b: &RecordBatch) -> Option<Vec<ClassCount>> {
    let level = b.column_by_name("level")?.as_primitive_opt::<Int32Type>()?;
    let source = b.column_by_name("source")?.as_string_opt::<i32>()?;
    let target = b.column_by_name("target")?.as_string_opt::<i32>()?;
    let fetched = b.column_by_name("fetched")?.as_primitive_opt::<Int64Type>()?;
    let new = b.column_by_name("new")?.as_primitive_opt::<Int64Type>()?;
    let errors = b.column_by_name("errors")?.as_primitive_opt::<Int64Type>()?;
    let u = |v: i64| u64::try_from(v).unwrap_or(0);
    Some(
        (0..b.num_rows())
            .map(|i| ClassCount {
                level: u8::try_from(level.value(i)).unwrap_or(1),
                source: source.value(i).to_string(),
                target: target.value(i).to_string(),
                fetched: u(fetched.value(i)),
                new: u(new.value(i)),
                errors: u(errors.value(i)),
                previous: false,
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
