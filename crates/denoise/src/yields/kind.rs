//! Kinds of URL judged together on their host: the views of a page (the
//! query keys a link adds to it) and a site section's files of one
//! extension.

use std::collections::BTreeSet;

use super::MAX_EXTENSION;
#[cfg(doc)]
use super::{link_template, VIEW_BATCH};
use crate::evidence::variable;

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
