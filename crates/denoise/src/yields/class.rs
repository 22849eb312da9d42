//! A candidate URL's class, all that is known of it before it is fetched,
//! and the set of templates of the pages that link it.

#[cfg(doc)]
use super::record::class_key;
#[cfg(doc)]
use super::Judged;
use super::{coarse_of, link_template_from, resource_kind, MAX_VIA};

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
    pub(super) fn coarse_plain<'s>(&self, coarse_target: &'s str) -> std::borrow::Cow<'s, str> {
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
