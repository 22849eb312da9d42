//! `--render auto`'s test: is this HTML a script shell, a page whose
//! content and links only exist once its scripts run? (docs/src/rendering.md.)
//!
//! A page is a shell when it has scripts and, outside `<script>`,
//! `<style>`, `<noscript>`, `<template>` and tags, almost nothing to read
//! or follow: under 200 characters of text and no link; or when
//! it has an application's empty mount point (`<div id="root">`, `app`,
//! `__next`, `__nuxt`, `svelte`, `ember-application`...) and under 1,000
//! characters of text. One pass over the bytes, no parse: it runs on every
//! HTML page of an `auto` crawl.

/// Text under this many characters (with scripts) makes a shell.
const SHELL_TEXT: usize = 200;
/// ... when there are fewer links than this. (At 3, 23 of the 7,781 pages
/// of the real-site corpus passed for shells: Doxygen pages of a heading,
/// a line and two links, whose scripts only build a side menu.)
const SHELL_LINKS: usize = 1;
/// An empty mount point makes a shell under this much text.
const MOUNT_TEXT: usize = 1000;

/// Ids and attributes of single-page applications' mount points.
const MOUNTS: [&str; 8] = [
    "id=\"root\"",
    "id=\"app\"",
    "id=\"__next\"",
    "id=\"__nuxt\"",
    "id=\"svelte\"",
    "ng-app",
    "data-reactroot",
    "ember-application",
];

/// What the scan found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShellSigns {
    pub scripts: usize,
    pub links: usize,
    /// Characters of visible text (whitespace runs count as one).
    pub text: usize,
    pub mount: bool,
}

impl ShellSigns {
    /// Whether the page is a script shell.
    #[must_use]
    pub fn is_shell(&self) -> bool {
        self.scripts > 0
            && ((self.text < SHELL_TEXT && self.links < SHELL_LINKS) || (self.mount && self.text < MOUNT_TEXT))
    }
}

/// Scans an HTML page for the signs of a script shell.
#[must_use]
pub fn scan(html: &[u8]) -> ShellSigns {
    let mut signs = ShellSigns::default();
    let lower = |b: &[u8], at: usize, word: &[u8]| {
        b.len() >= at + word.len() && b[at..at + word.len()].eq_ignore_ascii_case(word)
    };
    let (mut i, mut space) = (0, true);
    while i < html.len() {
        let c = html[i];
        if c != b'<' {
            if c.is_ascii_whitespace() {
                if !space {
                    signs.text += 1;
                    space = true;
                }
            } else {
                signs.text += 1;
                space = false;
            }
            i += 1;
            continue;
        }
        // A tag: find its end.
        let end = memchr::memchr(b'>', &html[i..]).map_or(html.len(), |e| i + e + 1);
        let tag = &html[i..end];
        if lower(html, i, b"<a ") && memchr::memmem::find(&tag.to_ascii_lowercase(), b"href").is_some() {
            signs.links += 1;
        }
        if !signs.mount {
            let t = tag.to_ascii_lowercase();
            signs.mount = MOUNTS.iter().any(|m| memchr::memmem::find(&t, m.as_bytes()).is_some())
                && (lower(html, i, b"<div")
                    || lower(html, i, b"<main")
                    || lower(html, i, b"<body")
                    || lower(html, i, b"<html"));
        }
        // Elements whose content is not text: skip to their end tag.
        let skip: Option<&[u8]> = [&b"script"[..], b"style", b"noscript", b"template"].into_iter().find(|name| {
            lower(html, i + 1, name) && html.get(i + 1 + name.len()).is_some_and(|b| !b.is_ascii_alphanumeric())
        });
        i = end;
        if let Some(name) = skip {
            if name == b"script" {
                signs.scripts += 1;
            }
            let close = [b"</", name].concat();
            i = find_ci(&html[i..], &close).map_or(html.len(), |p| i + p);
        }
    }
    signs
}

/// Case-insensitive search of an ASCII needle.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut from = 0;
    while let Some(p) = memchr::memchr2(first.to_ascii_lowercase(), first.to_ascii_uppercase(), &hay[from..]) {
        let at = from + p;
        if hay.len() >= at + needle.len() && hay[at..at + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_shells_are_told_from_pages() {
        let shells = [
            r#"<html><head><script src="/app.js"></script></head><body><div id="app"></div></body></html>"#,
            r#"<!doctype html><body><div id="root"></div><noscript>You need to enable JavaScript to run this app, which is a long sentence that people never read anyway.</noscript><script>boot()</script>"#,
            r#"<html><body><h1>Loading…</h1><script type="module" src="/main.js"></script></body></html>"#,
        ];
        for html in shells {
            assert!(scan(html.as_bytes()).is_shell(), "{html}: {:?}", scan(html.as_bytes()));
        }
        let article = format!(
            "<html><head><script>analytics()</script></head><body><div id=\"app\"><h1>Title</h1><p>{}</p><a href=\"/a\">a</a></div></body></html>",
            "Words that a reader reads. ".repeat(60)
        );
        let menu = r#"<html><body><script>x()</script><a href="/1">One</a> <a href="/2">Two</a> <a href="/3">Three</a></body></html>"#;
        let no_script = r#"<html><body><div id="root"></div></body></html>"#;
        for html in [article.as_str(), menu, no_script] {
            assert!(!scan(html.as_bytes()).is_shell(), "{html}: {:?}", scan(html.as_bytes()));
        }
        let s = scan(b"<p>a  b</p><SCRIPT>if (a<b) { document.write('<a href=x>no</a>') }</SCRIPT><style>p{}</style>c");
        assert_eq!((s.scripts, s.links, s.text), (1, 0, 4), "text 'a b' and 'c', script content skipped");
    }
}
