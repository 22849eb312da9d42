//! The HTML writer shared by every page kind: a growing `String`, the
//! site chrome (head, header navigation, sidebar blocks, footer) and the
//! filler text. Every `<a href>` goes through [`Html::link`], which can
//! also record the link with its role; serving and ground truth therefore
//! see exactly the same links.

use std::fmt::Write as _;

use url::Url;

use super::rng::{self, tag, Rng};
use super::site::{HostId, Page, SiteInfo, TrapKind, Utility, World};
use super::truth::{LinkRole, TruthLink};

/// An HTML document being written, optionally recording its links.
pub struct Html {
    pub out: String,
    /// Scratch buffer for hrefs, reused across links.
    href: String,
    rec: Option<Recorder>,
}

struct Recorder {
    base: Url,
    links: Vec<TruthLink>,
}

impl Html {
    /// A writer sized for a page of about `cap` bytes; `record` is the URL
    /// the page is served under when its links should be recorded.
    #[must_use]
    pub fn new(cap: usize, record: Option<Url>) -> Self {
        Self {
            out: String::with_capacity(cap),
            href: String::with_capacity(128),
            rec: record.map(|base| Recorder { base, links: Vec::new() }),
        }
    }

    /// The recorded links (empty when not recording).
    #[must_use]
    pub fn into_links(self) -> Vec<TruthLink> {
        self.rec.map(|r| r.links).unwrap_or_default()
    }

    pub fn push(&mut self, s: &str) -> &mut Self {
        self.out.push_str(s);
        self
    }

    /// Writes `<a href=…>` whose href `build` writes; the caller writes the
    /// anchor text and then calls [`Html::close`].
    pub fn open(&mut self, role: LinkRole, nofollow: bool, build: impl FnOnce(&mut String)) {
        self.open_class(role, nofollow, None, build);
    }

    /// [`Html::open`] with a `class` attribute first (`<a class="name" href=…>`).
    pub fn open_class(&mut self, role: LinkRole, nofollow: bool, class: Option<&str>, build: impl FnOnce(&mut String)) {
        self.href.clear();
        build(&mut self.href);
        if let Some(c) = class {
            self.out.push_str("<a class=\"");
            escape_attr(c, &mut self.out);
            self.out.push_str("\" ");
        } else {
            self.out.push_str("<a ");
        }
        self.out.push_str("href=\"");
        escape_attr(&self.href, &mut self.out);
        self.out.push('"');
        if nofollow {
            self.out.push_str(" rel=\"nofollow\"");
        }
        self.out.push('>');
        if let Some(rec) = &mut self.rec {
            let url = rec.base.join(&self.href).map_or_else(|_| self.href.clone(), String::from);
            rec.links.push(TruthLink { href: self.href.clone(), url, role, nofollow });
        }
    }

    pub fn close(&mut self) {
        self.out.push_str("</a>");
    }

    /// A whole link with literal anchor text.
    pub fn link(&mut self, role: LinkRole, nofollow: bool, build: impl FnOnce(&mut String), text: &str) {
        self.open(role, nofollow, build);
        self.out.push_str(text);
        self.close();
    }

    /// `<base href>`: also changes what recorded relative links resolve against.
    pub fn base(&mut self, href: &str) {
        self.out.push_str("<base href=\"");
        escape_attr(href, &mut self.out);
        self.out.push_str("\">");
        if let Some(rec) = &mut self.rec {
            if let Ok(u) = rec.base.join(href) {
                rec.base = u;
            }
        }
    }
}

/// Escapes the characters that matter inside a double-quoted attribute.
pub fn escape_attr(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
}

/// One sentence of 8-18 filler words.
pub fn sentence(r: &mut Rng, out: &mut String) {
    let n = r.range(8, 18);
    for i in 0..n {
        let w = r.word();
        if i == 0 {
            rng::push_capitalised(out, w);
        } else {
            out.push(' ');
            out.push_str(w);
            if i + 2 < n && r.chance(6) {
                out.push(',');
            }
        }
    }
    out.push('.');
}

/// What a page needs to know about where it is.
pub struct Ctx<'a> {
    pub world: &'a World,
    pub host: HostId,
    pub site: SiteInfo,
    pub page: Page,
}

impl<'a> Ctx<'a> {
    #[must_use]
    pub fn new(world: &'a World, host: HostId, page: Page) -> Self {
        Self { world, host, site: world.site(host.site_number()), page }
    }

    pub fn push_origin(&self, out: &mut String) {
        self.world.push_origin(self.host, out);
    }

    /// Root-relative or absolute path of an article on this host.
    pub fn article_path(&self, id: u32, out: &mut String) {
        self.world.push_article_path(self.host, &self.site, id, out);
    }

    pub fn title(&self, id: u32, out: &mut String) {
        self.world.push_title(self.host, id, out);
    }

    /// A link to an article of this host with its title as anchor text.
    pub fn article_link(&self, h: &mut Html, role: LinkRole, id: u32) {
        h.open(role, false, |s| self.article_path(id, s));
        self.title(id, &mut h.out);
        h.close();
    }

    /// `?sid=…` value for this page: fixed per page, different per page,
    /// like a session id baked into a cached page.
    pub fn sid(&self, out: &mut String) {
        let k = match self.page {
            Page::Section { sec, page } => u64::from(sec) << 32 | u64::from(page),
            Page::Tag { tag, page } => 1 << 40 | u64::from(tag) << 32 | u64::from(page),
            _ => 2 << 40,
        };
        let _ = write!(out, "{:016x}", rng::mix(self.world.seed, &[tag::SID, u64::from(self.site.n), k]));
    }

    /// Eight "popular" articles of the site, the same on every page.
    #[must_use]
    pub fn popular(&self) -> [u32; 8] {
        let mut r = Rng::from_parts(self.world.seed, &[tag::LINKS, u64::from(self.site.n), u64::MAX]);
        let n = self.world.articles(self.host).max(1);
        let mut out = [0u32; 8];
        for o in &mut out {
            *o = r.below_u32(n);
        }
        out
    }
}

/// `<!DOCTYPE html>…<body>` with title, canonical link and resources.
pub fn head(h: &mut Html, ctx: &Ctx<'_>, title: impl FnOnce(&mut String), base: Option<&str>) {
    h.push("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    if let Some(b) = base {
        h.base(b);
    }
    h.push("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
    title(&mut h.out);
    h.push(" | ");
    ctx.site.push_name(&mut h.out);
    h.push("</title>");
    if let Some(c) = ctx.world.canonical_url(ctx.host, &ctx.page) {
        h.push("<link rel=\"canonical\" href=\"");
        h.push(&c);
        h.push("\">");
    }
    h.push("<link rel=\"stylesheet\" href=\"/static/site.css\"><link rel=\"alternate\" type=\"application/rss+xml\" href=\"/feed.xml\"></head>\n<body>");
}

/// The site header with its navigation bar (role Header).
pub fn header(h: &mut Html, ctx: &Ctx<'_>) {
    let role = LinkRole::Header;
    h.push("<header class=\"site-header\">");
    h.link(role, false, |s| s.push_str("#main"), "Skip to content");
    h.open(role, false, |s| s.push('/'));
    h.push("<span class=\"logo\">");
    ctx.site.push_name(&mut h.out);
    h.push("</span>");
    h.close();
    h.push("<nav class=\"main-nav\"><ul>");
    h.push("<li>");
    h.link(role, false, |s| s.push_str("javascript:void(0)"), "Menu");
    h.push("</li>");
    if let HostId::Blog(n) = ctx.host {
        h.push("<li>");
        h.link(role, false, |s| push_home(ctx.world, HostId::Site(n), s), "Main site");
        h.push("</li>");
    } else {
        h.push("<li>");
        h.link(role, false, |s| s.push('/'), "Home");
        h.push("</li>");
        for sec in 0..ctx.site.nsec {
            section_item(h, ctx, role, sec, "");
        }
        if ctx.site.has_blog {
            h.push("<li>");
            h.link(role, false, |s| push_home(ctx.world, HostId::Blog(ctx.site.n), s), "Blog");
            h.push("</li>");
        }
        if ctx.site.trap == Some(TrapKind::Facets) {
            h.push("<li>");
            h.link(role, false, |s| s.push_str("/search"), "Search");
            h.push("</li>");
        }
        h.push("<li>");
        h.link(role, true, |s| s.push_str("/cart"), "Cart");
        h.push("</li>");
    }
    h.push("<li>");
    h.link(role, true, |s| s.push_str("/login"), "Log in");
    h.push("</li></ul></nav></header>\n");
}

/// Home › Section › (current page), with the section link written without
/// its trailing slash: a duplicate variant of the header's link.
pub fn breadcrumb(h: &mut Html, ctx: &Ctx<'_>, sec: Option<u8>, current: impl FnOnce(&mut String)) {
    h.push("<nav class=\"breadcrumb\">");
    h.link(LinkRole::Breadcrumb, false, |s| s.push('/'), "Home");
    if let Some(sec) = sec {
        h.push(" &rsaquo; ");
        h.open(LinkRole::Breadcrumb, false, |s| {
            s.push('/');
            s.push_str(ctx.site.section_name(sec));
        });
        rng::push_capitalised(&mut h.out, ctx.site.section_name(sec));
        h.close();
    }
    h.push(" &rsaquo; <span>");
    current(&mut h.out);
    h.push("</span></nav>\n");
}

/// The sidebar's "Popular" block, plus the archive link on calendar sites.
pub fn sidebar_popular(h: &mut Html, ctx: &Ctx<'_>) {
    h.push("<section class=\"popular\"><h3>Popular</h3><ul>");
    for id in ctx.popular() {
        h.push("<li>");
        ctx.article_link(h, LinkRole::Sidebar, id);
        h.push("</li>");
    }
    h.push("</ul></section>");
    if ctx.site.trap == Some(TrapKind::Calendar) && !matches!(ctx.host, HostId::Blog(_)) {
        h.push("<section class=\"archive\"><h3>Archive</h3>");
        h.link(LinkRole::Sidebar, false, |s| s.push_str("/calendar/2024/06/"), "Browse by month");
        h.push("</section>");
    }
}

/// Links to the sites after this one ("Partner sites", cross-site, role Sidebar).
pub fn sidebar_partners(h: &mut Html, ctx: &Ctx<'_>) {
    let sites = ctx.world.sites;
    if sites < 2 {
        return;
    }
    h.push("<section class=\"partners\"><h3>Partner sites</h3><ul>");
    for k in 1..=sites.min(6) - 1 {
        let other = (ctx.site.n + k * 7) % sites;
        if other == ctx.site.n {
            continue;
        }
        h.push("<li>");
        h.open(LinkRole::Sidebar, false, |s| push_home(ctx.world, HostId::Site(other), s));
        ctx.world.site(other).push_name(&mut h.out);
        h.close();
        h.push("</li>");
    }
    h.push("</ul></section>");
}

/// The site footer (role Footer): utility pages, a sitemap of sections
/// written as `index.html` variants, the members area (robots-disallowed),
/// the feed and an off-farm "powered by" link.
pub fn footer(h: &mut Html, ctx: &Ctx<'_>) {
    let role = LinkRole::Footer;
    h.push("<footer class=\"site-footer\"><ul class=\"links\">");
    for u in [Utility::About, Utility::Contact, Utility::Privacy, Utility::Terms] {
        if matches!(ctx.host, HostId::Blog(_)) && u != Utility::About {
            continue;
        }
        h.push("<li>");
        h.link(role, false, |s| s.push_str(u.path()), u.label());
        h.push("</li>");
    }
    h.push("</ul>");
    if !matches!(ctx.host, HostId::Blog(_)) {
        h.push("<ul class=\"sitemap\">");
        for sec in 0..ctx.site.nsec {
            // The `index.html` spelling: a duplicate-URL variant of the section page.
            section_item(h, ctx, role, sec, "index.html");
        }
        h.push("</ul>");
        if ctx.site.trap == Some(TrapKind::DeepPath) {
            h.link(role, false, |s| s.push_str("/docs/"), "Documentation");
            h.push(" &middot; ");
        }
    }
    h.link(role, false, |s| s.push_str("/private/"), "Members area");
    h.push(" &middot; ");
    h.link(role, false, |s| s.push_str("/feed.xml"), "RSS");
    h.push(" &middot; ");
    h.link(role, false, |s| s.push_str("http://www.ext.test/"), "Powered by ExtCMS");
    h.push("<p class=\"copyright\">&copy; 2024 ");
    ctx.site.push_name(&mut h.out);
    h.push(". All rights reserved.</p></footer>\n<script src=\"/static/app.js\"></script></body></html>\n");
}

/// `http://host/`: the home URL of a farm host.
pub fn push_home(world: &World, host: HostId, out: &mut String) {
    world.push_origin(host, out);
    out.push('/');
}

/// `<li><a href="/SECTION/{suffix}">Section</a></li>`.
fn section_item(h: &mut Html, ctx: &Ctx<'_>, role: LinkRole, sec: u8, suffix: &str) {
    h.push("<li>");
    h.open(role, false, |s| {
        s.push('/');
        s.push_str(ctx.site.section_name(sec));
        s.push('/');
        s.push_str(suffix);
    });
    rng::push_capitalised(&mut h.out, ctx.site.section_name(sec));
    h.close();
    h.push("</li>");
}
