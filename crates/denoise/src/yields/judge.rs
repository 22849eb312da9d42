//! Deciding a candidate from the counts: whether its class is followed,
//! probed or skipped, and why.

use std::collections::HashMap;

use super::record::class_key;
#[cfg(doc)]
use super::COLD_BATCH;
use super::{
    coarse_of, view_kind, ClassCount, Level, PageClass, Yields, DEFER_BELOW, MIN_HUB, PROBE_EVERY, PROBE_EVERY_MOST,
    RECENT_EVIDENCE, SITE_EVIDENCE,
};

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

impl Yields {
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
