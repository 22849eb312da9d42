//! Ground truth about the generated web: what a correct crawler reaches
//! from given seeds within a depth, which links are boilerplate, which URLs
//! duplicate each other, where the traps are and what robots.txt forbids.
//!
//! The BFS runs over the same renderer that serves the pages (links are
//! recorded while the HTML is written), so truth and served HTML cannot
//! drift apart.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde::{Deserialize, Serialize};
use url::Url;

use super::faults;
use super::pages;
use super::shop;
use super::site::{HostId, Page, Route, TrapKind, Variant, World};

/// What a link is for, by where it sits on the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LinkRole {
    /// The site header and its main navigation bar.
    Header,
    /// Other navigation blocks (section headings on the home page, "Home" on small pages).
    Nav,
    Footer,
    /// Related / popular / partner / archive / facet blocks.
    Sidebar,
    Breadcrumb,
    /// List pagination, previous/next article, calendar months.
    Pagination,
    /// Tag cloud and an article's tag links.
    TagCloud,
    /// Share, print and comment links.
    Share,
    /// In-text links of an article, list-page entries, links of small sites.
    Content,
    /// Links to non-HTML files inside an article's text (PDF, image).
    Resource,
}

impl LinkRole {
    /// True for navigation and boilerplate, false for content links (and
    /// the resource links that sit in an article's text).
    #[must_use]
    pub fn is_noise(&self) -> bool {
        !matches!(self, Self::Content | Self::Resource)
    }
}

/// One `<a href>` of a page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruthLink {
    /// The attribute value as a parser sees it (entities decoded).
    pub href: String,
    /// Resolved against the page URL or its `<base href>` with WHATWG rules
    /// (`Url::join`); fragments are kept.
    pub url: String,
    pub role: LinkRole,
    pub nofollow: bool,
}

/// An infinite URL family on one host.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TrapFamily {
    pub host: String,
    /// `calendar`, `deep_path` or `facets`.
    pub kind: String,
    /// Path prefix of every URL of the family on that host.
    pub prefix: String,
}

/// See the module docs and the book's test web page (docs/src/test-web.md).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    pub depth: u32,
    /// Canonical URL of each article (or blog post, or shop product) reached → its min depth.
    pub content_pages: BTreeMap<String, u32>,
    /// Every HTML page reached (home, list, tag, article, utility, …) → min depth.
    pub pages: BTreeMap<String, u32>,
    /// Exact duplicates: canonical URL first, then the variant URLs linked
    /// within reach (trailing slash, `index.html`, `utm_*`, session id,
    /// `%`-encoding, `?print=1` (same article text without the chrome), mirrors).
    pub duplicate_groups: Vec<Vec<String>>,
    /// Near-duplicates: an article with its AMP copy, or with its
    /// syndicated near-copy (another canonical article, one line different).
    #[serde(default)]
    pub near_duplicates: Vec<Vec<String>>,
    pub trap_families: Vec<TrapFamily>,
    /// Links within reach (in scope, followed) that robots.txt disallows.
    pub disallowed: Vec<String>,
}

/// What a URL is, for the truth BFS.
#[derive(Debug)]
pub enum Target {
    /// An HTML page; `canonical` is its canonical URL when it has one.
    Page {
        host: HostId,
        page: Page,
        variant: Variant,
        canonical: Option<String>,
    },
    Trap(HostId, TrapKind),
    /// robots.txt of its host disallows it.
    Disallowed,
    /// A fault-host or charset-host URL.
    Fault,
    /// Anything else: files, robots.txt, redirects, 404s, other hosts.
    Other,
}

/// Classifies an absolute URL of the farm.
#[must_use]
pub fn classify(world: &World, url: &Url) -> Target {
    let Some(host) = url.host_str().and_then(|h| world.parse_host(h)) else { return Target::Other };
    let raw = url.path();
    let decoded = super::site::decode_unreserved(raw);
    let path = decoded.as_deref().unwrap_or(raw);
    if path != "/robots.txt" && world.disallows(host, path) {
        return Target::Disallowed;
    }
    match host {
        HostId::Special(s) => match faults::special_page(s, path) {
            Some(page) => {
                Target::Page { host, page, variant: Variant::Canonical, canonical: world.canonical_url(host, &page) }
            }
            None if path == "/robots.txt" => Target::Other,
            None => Target::Fault,
        },
        HostId::Shop => match shop::route(world.shop.unwrap_or(0), path, url.query()) {
            Some(p) => {
                let page = Page::Shop(p);
                let variant = if decoded.is_some() { Variant::PercentEncoded } else { Variant::Canonical };
                Target::Page { host, page, variant, canonical: world.canonical_url(host, &page) }
            }
            None => Target::Other,
        },
        _ => match world.route(host, path, url.query()) {
            Route::Page(page @ (Page::Calendar { .. } | Page::DeepPath { .. } | Page::Facets), _) => {
                let kind = world.site(host.site_number()).trap.expect("trap pages exist only on trap sites");
                let _ = page;
                Target::Trap(host, kind)
            }
            Route::Page(page, variant) => {
                let variant = if decoded.is_some() { variant.or(Variant::PercentEncoded) } else { variant };
                Target::Page { host, page, variant, canonical: world.canonical_url(host, &page) }
            }
            _ => Target::Other,
        },
    }
}

/// The links of the page at `url` (`None` when it is not an HTML page of
/// the farm, or is a fault page).
#[must_use]
pub fn page_links(world: &World, url: &str) -> Option<Vec<TruthLink>> {
    let mut u = Url::parse(url).ok()?;
    u.set_fragment(None);
    match classify(world, &u) {
        Target::Page { host: HostId::Special(s), page, .. } => {
            Some(faults::special_html(world, s, page, Some(u)).into_links())
        }
        Target::Page { host, page, variant, .. } => {
            Some(pages::render(world, host, page, variant, u.query(), Some(u.clone())).into_links())
        }
        Target::Trap(host, _) => {
            let Route::Page(page, variant) = world.route(host, u.path(), u.query()) else { return None };
            Some(pages::render(world, host, page, variant, u.query(), Some(u.clone())).into_links())
        }
        _ => None,
    }
}

/// `sNNN.test` for `blog.sNNN.test`: the last two labels (`.test` is not
/// in the public suffix list, so the label before it is the registrable one).
#[must_use]
pub fn registrable(host: &str) -> &str {
    let mut dots = host.rmatch_indices('.');
    let _ = dots.next();
    match dots.next() {
        Some((i, _)) => &host[i + 1..],
        None => host,
    }
}

/// Breadth-first search from `seeds` to `depth` hops (see [`Truth`]).
#[must_use]
pub fn compute(world: &World, seeds: &[String], depth: u32) -> Truth {
    let mut truth = Truth { depth, ..Truth::default() };
    let scope: BTreeSet<String> = seeds
        .iter()
        .filter_map(|s| Url::parse(s).ok())
        .filter_map(|u| u.host_str().map(|h| registrable(h).to_string()))
        .collect();
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut queue: VecDeque<(Url, HostId, Page, u32)> = VecDeque::new();
    let mut dups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut near: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut traps: BTreeSet<TrapFamily> = BTreeSet::new();
    let mut disallowed: BTreeSet<String> = BTreeSet::new();
    for s in seeds {
        let Ok(mut u) = Url::parse(s) else { continue };
        u.set_fragment(None);
        match classify(world, &u) {
            Target::Page { host, page, canonical: Some(c), .. } => {
                if let Ok(cu) = Url::parse(&c) {
                    if seen.insert(c, 0).is_none() {
                        queue.push_back((cu, host, page, 0));
                    }
                }
            }
            Target::Disallowed => {
                disallowed.insert(u.to_string());
            }
            _ => {}
        }
    }
    while let Some((url, host, page, d)) = queue.pop_front() {
        truth.pages.insert(url.to_string(), d);
        if matches!(page.kind(), "article" | "product") {
            truth.content_pages.insert(url.to_string(), d);
            if let (HostId::Site(_), Page::Article { id }) = (host, page) {
                if id % 25 == 24 {
                    if let Some(orig) = world.canonical_url(host, &Page::Article { id: id - 1 }) {
                        near.entry(orig).or_default().insert(url.to_string());
                    }
                }
            }
        }
        if d >= depth {
            continue;
        }
        let links = match host {
            HostId::Special(s) => faults::special_html(world, s, page, Some(url.clone())).into_links(),
            _ => pages::render(world, host, page, Variant::Canonical, url.query(), Some(url.clone())).into_links(),
        };
        for l in links {
            if l.nofollow {
                continue;
            }
            let Ok(mut u) = Url::parse(&l.url) else { continue };
            if u.scheme() != "http" || !u.host_str().is_some_and(|h| scope.contains(registrable(h))) {
                continue;
            }
            u.set_fragment(None);
            match classify(world, &u) {
                Target::Disallowed => {
                    disallowed.insert(u.to_string());
                }
                Target::Trap(h, kind) => {
                    traps.insert(TrapFamily {
                        host: host_name(world, h),
                        kind: kind.name().into(),
                        prefix: kind.prefix().into(),
                    });
                }
                Target::Page { host: h, page: p, canonical: Some(c), .. } => match p {
                    Page::Mirror { id } | Page::Amp { id } => {
                        let orig = world.canonical_url(h, &Page::Article { id }).expect("articles have canonical URLs");
                        let map = if matches!(p, Page::Mirror { .. }) { &mut dups } else { &mut near };
                        map.entry(orig).or_default().insert(u.to_string());
                    }
                    _ if c == u.as_str() => {
                        if let std::collections::hash_map::Entry::Vacant(e) = seen.entry(c) {
                            e.insert(d + 1);
                            queue.push_back((u, h, p, d + 1));
                        }
                    }
                    _ => {
                        dups.entry(c).or_default().insert(u.to_string());
                    }
                },
                _ => {}
            }
        }
    }
    let groups = |m: BTreeMap<String, BTreeSet<String>>| -> Vec<Vec<String>> {
        m.into_iter().map(|(c, v)| std::iter::once(c).chain(v).collect()).collect()
    };
    truth.duplicate_groups = groups(dups);
    truth.near_duplicates = groups(near);
    truth.trap_families = traps.into_iter().collect();
    truth.disallowed = disallowed.into_iter().collect();
    truth
}

fn host_name(world: &World, h: HostId) -> String {
    let mut s = world.origin(h);
    s.replace_range(..7, "");
    s
}
