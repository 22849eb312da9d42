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
//!
//! The code is in modules, one concept each: link templates (`template`),
//! kinds of views and files (`kind`), counts (`count`), a candidate's
//! class (`class`), recording the counts (`record`), judging by them
//! (`judge`) and storing them (`columns`).

mod class;
mod columns;
mod count;
mod judge;
mod kind;
mod record;
mod template;

pub use class::{add_via, PageClass};
pub use columns::{counts_batch, counts_rows, counts_schema};
pub use count::{ClassCount, Level, Tally};
pub use judge::{probe_every, Judged, Verdict};
pub use kind::{resource_kind, view_kind};
pub use record::Yields;
pub use template::{coarse_of, link_template, link_template_from};

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

#[cfg(test)]
mod tests;
