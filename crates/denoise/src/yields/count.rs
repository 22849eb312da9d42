//! What fetched pages brought, counted: the level of evidence a count
//! holds, the counts of one class, and the outcomes of pages.

#[cfg(doc)]
use super::{resource_kind, view_kind, Yields};
use super::{MIN_EVIDENCE, MIN_YIELD};
use crate::evidence::Outcome;

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
    pub(super) fn of(n: u8) -> Self {
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

    pub(super) fn evident(&self) -> bool {
        self.fetched >= MIN_EVIDENCE
    }

    pub(super) fn yields(&self) -> bool {
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
    pub(super) fn broken(&self) -> bool {
        self.evident() && self.errors * 2 > self.fetched
    }

    /// Its counts, without its templates.
    pub(super) fn tally(&self) -> Tally {
        Tally { fetched: self.fetched, new: self.new, errors: self.errors }
    }

    pub(super) fn add(&mut self, t: Tally) {
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
