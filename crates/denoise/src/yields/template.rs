//! Link templates: a URL's shape with the parts that name one thing folded
//! (`*`, or `@` for the linking page's own thing), and its coarse form.

use std::collections::BTreeSet;

use super::MAX_LITERAL_VALUE;
use crate::evidence::variable;

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
