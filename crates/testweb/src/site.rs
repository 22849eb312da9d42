//! The URL space of the generated web: which hosts exist, what each
//! site looks like (sections, tags, traps, robots.txt), and how a request's
//! host, path and query map to a page. Everything is computed from the
//! farm seed on demand; nothing is stored per page.
//!
//! Regular sites are `sNNN.test` (each its own registrable domain under
//! the `.test` TLD), some with a `blog.sNNN.test` sub-host. The fault and
//! charset hosts live in [`super::faults`], the shop host in [`super::shop`].

use std::fmt::Write as _;

use super::rng::{self, tag, Rng, SECTIONS, WORDS};
use super::shop;

pub use super::kinds::*;

mod route;

/// Entries on one list page (section, tag and blog lists).
pub const PER_LIST: u32 = 20;
/// Number of tags a site uses.
pub const TAGS: u32 = 16;
/// Posts on a blog sub-host: a tenth of the site's articles, at least this.
pub const MIN_BLOG_POSTS: u32 = 5;

/// The generated web's shape, fixed at start.
#[derive(Clone, Debug)]
pub struct World {
    pub seed: u64,
    pub sites: u32,
    pub pages: u32,
    pub faults: bool,
    pub page_kb: u32,
    /// Digits in a site number (`s007` has 3); wider only past 1,000 sites.
    pub width: usize,
    /// Products of the shop host when it is on (`None`: no `shop.test`).
    pub shop: Option<u32>,
}

impl World {
    #[must_use]
    pub fn new(seed: u64, sites: u32, pages: u32, faults: bool, page_kb: u32) -> Self {
        let width = sites.saturating_sub(1).to_string().len().max(3);
        Self { seed, sites, pages, faults, page_kb, width, shop: None }
    }

    /// The same world with the shop host on, selling `products` products.
    #[must_use]
    pub fn with_shop(self, products: u32) -> Self {
        Self { shop: Some(products), ..self }
    }

    /// `s007.test`.
    pub fn site_host(&self, n: u32, out: &mut String) {
        let _ = write!(out, "s{n:0w$}.test", w = self.width);
    }

    /// `http://s007.test` or `http://blog.s007.test` (no trailing slash).
    #[must_use]
    pub fn origin(&self, host: HostId) -> String {
        let mut s = String::with_capacity(32);
        self.push_origin(host, &mut s);
        s
    }

    pub fn push_origin(&self, host: HostId, out: &mut String) {
        out.push_str("http://");
        match host {
            HostId::Site(n) => self.site_host(n, out),
            HostId::Blog(n) => {
                out.push_str("blog.");
                self.site_host(n, out);
            }
            HostId::Special(s) => out.push_str(s.host()),
            HostId::Shop => out.push_str(shop::HOST),
        }
    }

    /// Parses a Host header value (any case, optional port) into a farm host.
    #[must_use]
    pub fn parse_host(&self, raw: &str) -> Option<HostId> {
        let host = strip_port(raw).trim_end_matches('.');
        let name = host.len().checked_sub(5).and_then(|i| {
            let (name, tld) = host.split_at_checked(i)?;
            tld.eq_ignore_ascii_case(".test").then_some(name)
        })?;
        if let Some(n) = self.parse_site(name) {
            return Some(HostId::Site(n));
        }
        if name.len() > 5 && name[..5].eq_ignore_ascii_case("blog.") {
            let n = self.parse_site(&name[5..])?;
            return self.site(n).has_blog.then_some(HostId::Blog(n));
        }
        if self.shop.is_some() && host.eq_ignore_ascii_case(shop::HOST) {
            return Some(HostId::Shop);
        }
        if self.faults {
            return Special::ALL
                .iter()
                .copied()
                .find(|s| s.host().len() == host.len() && s.host().eq_ignore_ascii_case(host))
                .map(HostId::Special);
        }
        None
    }

    fn parse_site(&self, name: &str) -> Option<u32> {
        let digits = name.strip_prefix(['s', 'S'])?;
        if digits.len() != self.width || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse::<u32>().ok().filter(|n| *n < self.sites)
    }

    /// A site's generated properties (cheap: a few PRNG draws).
    #[must_use]
    pub fn site(&self, n: u32) -> SiteInfo {
        let mut r = Rng::from_parts(self.seed, &[tag::SITE, u64::from(n)]);
        let nsec = r.range(3, 5);
        let mut sections = [0u8; 5];
        let mut order = [0u8; 12];
        for (i, o) in order.iter_mut().enumerate() {
            *o = u8::try_from(i).expect("12 sections");
        }
        for i in 0..nsec as usize {
            let j = i + r.index(order.len() - i);
            order.swap(i, j);
            sections[i] = order[i];
        }
        let mut tags = [0u16; TAGS as usize];
        let start = r.below(WORDS.len() as u64);
        let step = 7 + 2 * r.below(20); // odd step over a list whose length is not a multiple: distinct words
        for (i, t) in tags.iter_mut().enumerate() {
            *t = u16::try_from((start + step * i as u64) % WORDS.len() as u64).expect("word index");
        }
        let word = |r: &mut Rng| u16::try_from(r.index(WORDS.len())).expect("the word list is short");
        let name = [word(&mut r), word(&mut r)];
        SiteInfo {
            n,
            nsec: u8::try_from(nsec).expect("3..=5"),
            sections,
            tags,
            name,
            trap: match n % 4 {
                1 => Some(TrapKind::Calendar),
                2 => Some(TrapKind::DeepPath),
                3 => Some(TrapKind::Facets),
                _ => None,
            },
            has_blog: n % 3 == 0,
            base_href: n % 2 == 0,
            sid_links: n % 6 == 5,
        }
    }

    /// Whether the host's robots.txt forbids `path` (RFC 9309 prefix match;
    /// a 5xx robots.txt forbids everything). `/robots.txt` itself is never
    /// disallowed.
    #[must_use]
    pub fn disallows(&self, host: HostId, path: &str) -> bool {
        if path == "/robots.txt" {
            return false;
        }
        match host {
            HostId::Site(n) | HostId::Blog(n) => {
                has_robots(n) && (path.starts_with("/private/") || path.starts_with("/cart"))
            }
            HostId::Special(Special::Robots500) => true,
            HostId::Special(Special::CrawlDelay) => path.starts_with("/hidden/"),
            HostId::Special(_) => false,
            HostId::Shop => shop::disallows(path),
        }
    }

    /// Articles (posts) on a host.
    #[must_use]
    pub fn articles(&self, host: HostId) -> u32 {
        match host {
            HostId::Blog(_) => (self.pages / 10).max(MIN_BLOG_POSTS),
            HostId::Site(_) => self.pages,
            HostId::Special(_) | HostId::Shop => 0,
        }
    }

    /// The words of an article's title; its slug is them joined by `-`.
    #[must_use]
    pub fn title_words(&self, host: HostId, id: u32) -> TitleWords {
        let (blog, n) = match host {
            HostId::Blog(n) => (1, n),
            HostId::Site(n) => (0, n),
            HostId::Special(_) | HostId::Shop => (2, 0),
        };
        let mut r = Rng::from_parts(self.seed, &[tag::TITLE, u64::from(n), blog, u64::from(id)]);
        let len = r.range(3, 6) as usize;
        let mut words = [""; 6];
        for w in words.iter_mut().take(len) {
            // Skip the short glue words: titles and slugs read better without them.
            *w = loop {
                let w = r.word();
                if w.len() > 3 {
                    break w;
                }
            };
        }
        TitleWords { words, len }
    }

    pub fn push_slug(&self, host: HostId, id: u32, out: &mut String) {
        for (i, w) in self.title_words(host, id).iter().enumerate() {
            if i > 0 {
                out.push('-');
            }
            out.push_str(w);
        }
    }

    pub fn push_title(&self, host: HostId, id: u32, out: &mut String) {
        for (i, w) in self.title_words(host, id).iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            rng::push_capitalised(out, w);
        }
    }

    /// Path of an article: `/tech/12-some-slug` or, on a blog, `/post/12-some-slug`.
    pub fn push_article_path(&self, host: HostId, site: &SiteInfo, id: u32, out: &mut String) {
        out.push('/');
        match host {
            HostId::Blog(_) => out.push_str("post"),
            _ => out.push_str(site.section_name(site.section_of(id))),
        }
        let _ = write!(out, "/{id}-");
        self.push_slug(host, id, out);
    }

    /// The canonical absolute URL of a page, `None` for pages that have no
    /// canonical form of their own (traps, private pages).
    #[must_use]
    pub fn canonical_url(&self, host: HostId, page: &Page) -> Option<String> {
        if host == HostId::Shop {
            return match page {
                Page::Shop(p) => Some(p.url()),
                _ => None,
            };
        }
        let mut s = self.origin(host);
        if let HostId::Special(_) = host {
            match page {
                Page::Home => s.push('/'),
                Page::Mini(k) => {
                    let _ = write!(s, "/p/{k}");
                }
                _ => return None,
            }
            return Some(s);
        }
        let n = host.site_number();
        let site = self.site(n);
        match *page {
            Page::Home => s.push('/'),
            Page::Section { sec, page } => {
                let _ = write!(s, "/{}/", site.section_name(sec));
                if page > 1 {
                    let _ = write!(s, "page/{page}/");
                }
            }
            Page::Tag { tag, page } => {
                let _ = write!(s, "/tag/{}/", site.tag_name(tag));
                if page > 1 {
                    let _ = write!(s, "page/{page}/");
                }
            }
            Page::BlogList { page } => {
                let _ = write!(s, "/page/{page}/");
            }
            Page::Article { id } => self.push_article_path(host, &site, id, &mut s),
            Page::Mirror { id } | Page::Amp { id } => {
                s.push_str(if matches!(page, Page::Mirror { .. }) { "/mirror" } else { "/amp" });
                self.push_article_path(host, &site, id, &mut s);
            }
            Page::Utility(u) => s.push_str(u.path()),
            Page::Calendar { .. }
            | Page::DeepPath { .. }
            | Page::Facets
            | Page::Private
            | Page::Mini(_)
            | Page::Shop(_) => return None,
        }
        Some(s)
    }

    /// Number of list pages of a section (at least 1).
    #[must_use]
    pub fn section_pages(&self, site: &SiteInfo, sec: u8) -> u32 {
        site.section_len(self.pages, sec).div_ceil(PER_LIST).max(1)
    }

    #[must_use]
    pub fn tag_pages(&self, tag: u8) -> u32 {
        tag_len(self.pages, tag).div_ceil(PER_LIST).max(1)
    }

    #[must_use]
    pub fn blog_pages(&self, host: HostId) -> u32 {
        self.articles(host).div_ceil(PER_LIST).max(1)
    }
}

/// One site in five has no robots.txt (it answers 404: allow all).
#[must_use]
pub fn has_robots(n: u32) -> bool {
    n % 5 != 4
}

/// Articles carrying tag `t`: ids `t, t+TAGS, t+2·TAGS, …` (a primary tag
/// by id keeps tag lists enumerable without scanning every article).
#[must_use]
pub fn tag_len(pages: u32, tag: u8) -> u32 {
    pages.saturating_sub(u32::from(tag)).div_ceil(TAGS)
}

fn strip_port(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if host[i + 1..].bytes().all(|b| b.is_ascii_digit()) => &host[..i],
        _ => host,
    }
}

/// The generated properties of one regular site.
#[derive(Clone, Debug)]
pub struct SiteInfo {
    pub n: u32,
    pub nsec: u8,
    sections: [u8; 5],
    tags: [u16; TAGS as usize],
    name: [u16; 2],
    pub trap: Option<TrapKind>,
    pub has_blog: bool,
    /// Article pages carry `<base href="…/section/">`.
    pub base_href: bool,
    /// "Read more" links on list pages carry a session id.
    pub sid_links: bool,
}

impl SiteInfo {
    #[must_use]
    pub fn section_of(&self, id: u32) -> u8 {
        u8::try_from(id % u32::from(self.nsec)).expect("nsec ≤ 5")
    }

    #[must_use]
    pub fn section_name(&self, sec: u8) -> &'static str {
        SECTIONS[usize::from(self.sections[usize::from(sec)])]
    }

    fn section_index(&self, name: &str) -> Option<u8> {
        (0..self.nsec).find(|s| self.section_name(*s) == name)
    }

    /// Articles in a section: ids `sec, sec+nsec, …` below `pages`.
    #[must_use]
    pub fn section_len(&self, pages: u32, sec: u8) -> u32 {
        pages.saturating_sub(u32::from(sec)).div_ceil(u32::from(self.nsec))
    }

    #[must_use]
    pub fn tag_name(&self, t: u8) -> &'static str {
        WORDS[usize::from(self.tags[usize::from(t)])]
    }

    fn tag_index(&self, name: &str) -> Option<u8> {
        (0..u8::try_from(TAGS).expect("16")).find(|t| self.tag_name(*t) == name)
    }

    pub fn push_name(&self, out: &mut String) {
        rng::push_capitalised(out, WORDS[usize::from(self.name[0])]);
        out.push(' ');
        rng::push_capitalised(out, WORDS[usize::from(self.name[1])]);
        out.push_str(" Gazette");
    }
}

/// Up to six title words without allocating.
#[derive(Clone, Copy, Debug)]
pub struct TitleWords {
    words: [&'static str; 6],
    len: usize,
}

impl TitleWords {
    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.words[..self.len].iter().copied()
    }
}
