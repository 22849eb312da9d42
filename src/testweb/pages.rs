//! The page kinds of a regular site: home, section/tag/blog lists with
//! pagination, articles (full, print, AMP), utility pages, the members
//! area and the three traps. [`render`] is the single entry point.

use std::fmt::Write as _;

use url::Url;

use super::render::{breadcrumb, footer, head, header, sentence, sidebar_partners, sidebar_popular, Ctx, Html};
use super::rng::{self, tag, Rng};
use super::site::{self, HostId, Page, Utility, Variant, World, PER_LIST, TAGS};
use super::traps;
use super::truth::LinkRole;

/// Renders an HTML page of a regular site or blog. `query` is the raw query
/// string (the facet trap reads it); `record` turns on link recording with
/// the URL the page is served under.
#[must_use]
pub fn render(world: &World, host: HostId, page: Page, variant: Variant, query: Option<&str>, record: Option<Url>) -> Html {
    let cap = match page {
        Page::Article { .. } | Page::Mirror { .. } | Page::Amp { .. } => world.page_kb as usize * 1024 + 4096,
        _ => 12 * 1024,
    };
    let mut h = Html::new(cap, record);
    match page {
        // A mirror is the article byte for byte, canonical link included.
        Page::Article { id } | Page::Mirror { id } => {
            let ctx = Ctx::new(world, host, Page::Article { id });
            let mode = if variant == Variant::Print { Mode::Print } else { Mode::Full };
            article(&mut h, &ctx, id, mode);
        }
        Page::Amp { id } => article(&mut h, &Ctx::new(world, host, page), id, Mode::Amp),
        Page::Home if matches!(host, HostId::Blog(_)) => blog_list(&mut h, &Ctx::new(world, host, page), 1),
        Page::BlogList { page: k } => blog_list(&mut h, &Ctx::new(world, host, page), k),
        Page::Home => home(&mut h, &Ctx::new(world, host, page)),
        Page::Section { sec, page: k } => section(&mut h, &Ctx::new(world, host, page), sec, k),
        Page::Tag { tag, page: k } => tag_page(&mut h, &Ctx::new(world, host, page), tag, k),
        Page::Utility(u) => utility(&mut h, &Ctx::new(world, host, page), u),
        Page::Private => simple(&mut h, &Ctx::new(world, host, page), "Members only", 11),
        Page::Calendar { year, month } => traps::calendar(&mut h, &Ctx::new(world, host, page), year, month),
        Page::DeepPath { .. } => traps::docs(&mut h, &Ctx::new(world, host, page)),
        Page::Facets => traps::facets(&mut h, &Ctx::new(world, host, page), query.unwrap_or("")),
        Page::Mini(_) => simple(&mut h, &Ctx::new(world, host, page), "Page", 12),
    }
    h
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Full,
    Print,
    Amp,
}

/// How an in-text link writes its href (all name the same article).
#[derive(Clone, Copy)]
enum Form {
    Absolute,
    RootRelative,
    Relative,
    /// `HTTP://S001.TEST:80/…`: scheme/host case and the default port.
    CasePort,
    /// The slug's first letter as `%XX`.
    Percent,
    TrailingSlash,
    Fragment,
}

/// The links an article carries, drawn from its own PRNG stream.
struct Plan {
    related: [u32; 15],
    n_related: usize,
    /// In-text links: indexes into `related`, each with its href form.
    content: [(usize, Form); 5],
    n_content: usize,
    /// Another site's article (or, on a blog, the main site's).
    cross: Option<(HostId, u32)>,
    ext: bool,
    pdf: bool,
    png: bool,
}

fn plan(ctx: &Ctx<'_>, id: u32) -> Plan {
    let blog = u64::from(matches!(ctx.host, HostId::Blog(_)));
    let mut r = Rng::from_parts(ctx.world.seed, &[tag::LINKS, u64::from(ctx.site.n), blog, u64::from(id)]);
    let n = ctx.world.articles(ctx.host);
    let mut related = [0u32; 15];
    let mut n_related = 0;
    let want = r.range(8, 15) as usize;
    let step = u32::from(ctx.site.nsec);
    for attempt in 0..want * 3 {
        if n_related == want || n <= 1 {
            break;
        }
        // Half the related list are section neighbours, half anywhere.
        let cand = if attempt % 2 == 0 {
            let k = 1 + r.below_u32(6);
            if r.chance(50) { id.checked_sub(k * step) } else { id.checked_add(k * step).filter(|c| *c < n) }
        } else {
            Some(r.below_u32(n))
        };
        if let Some(c) = cand {
            if c != id && !related[..n_related].contains(&c) {
                related[n_related] = c;
                n_related += 1;
            }
        }
    }
    let mut content = [(0, Form::Absolute); 5];
    let n_content = (r.range(2, 5) as usize).min(n_related);
    for (i, c) in content.iter_mut().take(n_content).enumerate() {
        let form = match r.below(10) {
            0..=2 => Form::Absolute,
            3..=5 => Form::RootRelative,
            6 | 7 => Form::Relative,
            _ => [Form::CasePort, Form::Percent, Form::TrailingSlash, Form::Fragment][r.index(4)],
        };
        *c = (i, form);
    }
    let cross = match ctx.host {
        HostId::Blog(s) if ctx.world.pages > 0 => Some((HostId::Site(s), r.below_u32(ctx.world.pages))),
        HostId::Site(s) if ctx.world.sites > 1 && ctx.world.pages > 0 && r.chance(60) => {
            let other = (s + 1 + r.below_u32(ctx.world.sites - 1)) % ctx.world.sites;
            Some((HostId::Site(other), r.below_u32(ctx.world.pages)))
        }
        _ => None,
    };
    Plan { related, n_related, content, n_content, cross, ext: r.chance(30), pdf: r.chance(30), png: r.chance(20) }
}

/// Writes an href of form `form` to article `id` of this host.
fn article_href(ctx: &Ctx<'_>, id: u32, form: Form, s: &mut String) {
    match form {
        Form::Absolute => {
            ctx.push_origin(s);
            ctx.article_path(id, s);
        }
        Form::RootRelative => ctx.article_path(id, s),
        Form::Relative => {
            let here = match ctx.page {
                Page::Article { id: me } | Page::Amp { id: me } => Some(ctx.site.section_of(me)),
                _ => None,
            };
            let sec = ctx.site.section_of(id);
            if !matches!(ctx.host, HostId::Blog(_)) && here != Some(sec) {
                let _ = write!(s, "../{}/", ctx.site.section_name(sec));
            }
            let _ = write!(s, "{id}-");
            ctx.world.push_slug(ctx.host, id, s);
        }
        Form::CasePort => {
            ctx.push_origin(s);
            s.make_ascii_uppercase();
            s.push_str(":80");
            ctx.article_path(id, s);
        }
        Form::Percent => {
            ctx.article_path(id, s);
            let dash = s.rfind('/').and_then(|i| s[i..].find('-').map(|d| i + d + 1)).expect("article paths hold ID-slug");
            let c = s.as_bytes()[dash];
            s.replace_range(dash..=dash, &format!("%{c:02X}"));
        }
        Form::TrailingSlash => {
            ctx.article_path(id, s);
            s.push('/');
        }
        Form::Fragment => {
            ctx.article_path(id, s);
            s.push_str("#section-2");
        }
    }
}

const LEADS: [&str; 5] = ["See also", "Read more in", "As we reported in", "Background:", "Compare"];

fn article(h: &mut Html, ctx: &Ctx<'_>, id: u32, mode: Mode) {
    let site = &ctx.site;
    let blog = matches!(ctx.host, HostId::Blog(_));
    let p = plan(ctx, id);
    // Every 25th article is a syndicated near-copy of the one before it.
    let syndicated = !blog && id % 25 == 24;
    let body_id = if syndicated { id - 1 } else { id };
    let mut r = Rng::from_parts(ctx.world.seed, &[tag::BODY, u64::from(site.n), u64::from(blog), u64::from(body_id)]);
    let mut base = String::new();
    if mode == Mode::Full && site.base_href && !blog {
        ctx.push_origin(&mut base);
        let _ = write!(base, "/{}/", site.section_name(site.section_of(id)));
    }
    head(h, ctx, |s| ctx.title(id, s), (!base.is_empty()).then_some(base.as_str()));
    match mode {
        Mode::Full => {
            header(h, ctx);
            h.push("<div class=\"page\"><main id=\"main\"><article>");
            breadcrumb(h, ctx, (!blog).then(|| site.section_of(id)), |s| ctx.title(id, s));
        }
        Mode::Print => {
            h.push("<div class=\"print\"><article>");
        }
        Mode::Amp => {
            h.push("<header class=\"amp\">");
            h.link(LinkRole::Header, false, |s| s.push('/'), "Home");
            h.push("</header><article>");
        }
    }
    h.push("<h1>");
    ctx.title(id, &mut h.out);
    h.push("</h1><p class=\"byline\">By ");
    h.push(rng::FIRST_NAMES[id as usize % rng::FIRST_NAMES.len()]).push(" ").push(rng::LAST_NAMES[(id as usize / 3) % rng::LAST_NAMES.len()]);
    let _ = write!(h.out, ", {}-{:02}-{:02}", 2015 + id / 400 % 10, 1 + id % 12, 1 + id % 28);
    if mode == Mode::Full {
        h.push(" &middot; ");
        h.link(LinkRole::Share, false, |s| s.push_str("#comments"), "Comments");
    }
    h.push("</p>");
    if syndicated {
        h.push("<p class=\"note\">This article first appeared in our sister edition and is republished with permission.</p>");
    }
    if mode == Mode::Amp {
        h.push("<p class=\"amp-note\">You are reading the accelerated mobile version of this story.</p>");
    }
    let _ = write!(h.out, "<figure><img src=\"/img/{id}.jpg\" alt=\"\"><figcaption>");
    sentence(&mut r, &mut h.out);
    h.push("</figcaption></figure>\n");
    // Paragraphs until the page reaches about page_kb; at least three,
    // which hold the in-text links (one or two each).
    let target = (ctx.world.page_kb as usize * 1024).saturating_sub(3800).max(900);
    let start = h.out.len();
    let mut para = 0;
    while para < 3 || h.out.len() - start < target {
        h.push("<p>");
        let sentences = r.range(3, 7);
        for si in 0..sentences {
            if si > 0 {
                h.push(" ");
            }
            sentence(&mut r, &mut h.out);
            if si == 0 && para < 3 {
                for (li, (ri, form)) in p.content[..p.n_content].iter().enumerate() {
                    if li % 3 == para {
                        h.push(" ").push(LEADS[(li + id as usize) % LEADS.len()]).push(" ");
                        h.open(LinkRole::Content, false, |s| article_href(ctx, p.related[*ri], *form, s));
                        ctx.title(p.related[*ri], &mut h.out);
                        h.close();
                        h.push(".");
                    }
                }
                if para == 1 {
                    if let Some((other, oid)) = p.cross {
                        h.push(" Elsewhere: ");
                        h.open(LinkRole::Content, false, |s| {
                            ctx.world.push_origin(other, s);
                            ctx.world.push_article_path(other, &ctx.world.site(other.site_number()), oid, s);
                        });
                        ctx.world.push_title(other, oid, &mut h.out);
                        h.close();
                        h.push(".");
                    }
                }
                if para == 2 && p.ext {
                    h.push(" Source: ");
                    h.link(LinkRole::Content, false, |s| s.push_str("http://www.ext.test/story/"), "the original report");
                    h.push(".");
                }
            }
        }
        h.push("</p>\n");
        para += 1;
    }
    if p.pdf || p.png {
        h.push("<p class=\"downloads\">");
        if p.pdf {
            h.link(LinkRole::Resource, false, |s| { let _ = write!(s, "/files/{id}.pdf"); }, "Download the full report (PDF)");
            h.push(" ");
        }
        if p.png {
            h.link(LinkRole::Resource, false, |s| { let _ = write!(s, "/img/{id}.png"); }, "Chart (PNG)");
        }
        h.push("</p>");
    }
    if mode == Mode::Print {
        h.push("</article><p class=\"printed\">Printed from ");
        h.push(&ctx.world.canonical_url(ctx.host, &Page::Article { id }).unwrap_or_default());
        h.push("</p></div></body></html>\n");
        return;
    }
    if mode == Mode::Amp {
        h.push("</article><footer>");
        h.link(LinkRole::Footer, false, |s| s.push_str("/about"), "About");
        h.push("</footer></body></html>\n");
        return;
    }
    if !blog {
        h.push("<div class=\"tags\">Tags: ");
        for t in [id % TAGS, (id / TAGS + 3) % TAGS] {
            let t = u8::try_from(t).expect("tag < 16");
            h.open(LinkRole::TagCloud, false, |s| { let _ = write!(s, "/tag/{}/", site.tag_name(t)); });
            h.push(site.tag_name(t));
            h.close();
            h.push(" ");
        }
        h.push("</div>");
    }
    h.push("<div class=\"share\">Share: ");
    h.link(LinkRole::Share, false, |s| {
        ctx.article_path(id, s);
        s.push_str("?utm_source=newsletter&utm_medium=email&utm_campaign=weekly");
    }, "Email");
    h.push(" ");
    h.link(LinkRole::Share, true, |s| s.push_str("http://share.ext.test/submit"), "Social");
    h.push(" ");
    h.link(LinkRole::Share, false, |s| {
        ctx.article_path(id, s);
        s.push_str("?print=1");
    }, "Print");
    h.push("</div><nav class=\"prevnext\">");
    if id > 0 {
        h.push("Previous: ");
        ctx.article_link(h, LinkRole::Pagination, id - 1);
    }
    if id + 1 < ctx.world.articles(ctx.host) {
        h.push(" Next: ");
        ctx.article_link(h, LinkRole::Pagination, id + 1);
    }
    h.push("</nav><section id=\"comments\"><h2>Comments</h2><p>");
    sentence(&mut r, &mut h.out);
    h.push("</p></section></article></main>\n<aside class=\"sidebar\"><section class=\"related\"><h3>Related</h3><ul>");
    for rid in &p.related[..p.n_related] {
        h.push("<li>");
        ctx.article_link(h, LinkRole::Sidebar, *rid);
        h.push("</li>");
    }
    h.push("</ul></section>");
    sidebar_popular(h, ctx);
    h.push("</aside></div>\n<div class=\"article-tools\">");
    if !blog && id % 10 == 3 {
        h.link(LinkRole::Footer, false, |s| { s.push_str("/mirror"); ctx.article_path(id, s); }, "Mirror");
        h.push(" ");
    }
    if !blog && id % 10 == 6 {
        h.link(LinkRole::Footer, false, |s| { s.push_str("/amp"); ctx.article_path(id, s); }, "AMP version");
        h.push(" ");
    }
    h.link(LinkRole::Footer, false, |s| { let _ = write!(s, "/private/edit/{id}"); }, "Edit");
    h.push("</div>");
    footer(h, ctx);
}

/// One list entry: title link, teaser (the article's first sentence) and a
/// "Read more" link (with a session id on `sid_links` sites).
fn entry(h: &mut Html, ctx: &Ctx<'_>, id: u32) {
    h.push("<li class=\"entry\"><h2>");
    ctx.article_link(h, LinkRole::Content, id);
    h.push("</h2><p>");
    let blog = u64::from(matches!(ctx.host, HostId::Blog(_)));
    let body_id = if blog == 0 && id % 25 == 24 { id - 1 } else { id };
    let mut r = Rng::from_parts(ctx.world.seed, &[tag::BODY, u64::from(ctx.site.n), blog, u64::from(body_id)]);
    sentence(&mut r, &mut h.out);
    h.push(" ");
    h.link(LinkRole::Content, false, |s| {
        ctx.article_path(id, s);
        if ctx.site.sid_links {
            s.push_str("?sid=");
            ctx.sid(s);
        }
    }, "Read more");
    h.push("</p></li>\n");
}

/// Pagination over pages `1..=last` of a list rooted at `prefix` (page 1
/// is `prefix`, page k is `prefix` + `page/k/`); odd sites write relative hrefs.
fn pagination(h: &mut Html, ctx: &Ctx<'_>, prefix: &str, cur: u32, last: u32) {
    if last < 2 {
        return;
    }
    let rel = ctx.site.n % 2 == 1;
    let href = |k: u32, s: &mut String| match (rel, cur, k) {
        (false, _, 1) => s.push_str(prefix),
        (false, _, k) => {
            let _ = write!(s, "{prefix}page/{k}/");
        }
        (true, 1, 1) => s.push_str("./"),
        (true, 1, k) => {
            let _ = write!(s, "page/{k}/");
        }
        (true, _, 1) => s.push_str("../../"),
        (true, _, k) => {
            let _ = write!(s, "../{k}/");
        }
    };
    let role = LinkRole::Pagination;
    h.push("<nav class=\"pagination\">");
    if cur > 1 {
        h.link(role, false, |s| href(1, s), "&laquo; First");
        h.link(role, false, |s| href(cur - 1, s), "&lsaquo; Prev");
    }
    for k in cur.saturating_sub(2).max(1)..=(cur + 2).min(last) {
        if k == cur {
            let _ = write!(h.out, "<span class=\"current\">{k}</span>");
        } else {
            h.open(role, false, |s| href(k, s));
            let _ = write!(h.out, "{k}");
            h.close();
        }
    }
    if cur < last {
        h.link(role, false, |s| href(cur + 1, s), "Next &rsaquo;");
        h.link(role, false, |s| href(last, s), "Last &raquo;");
    }
    h.push("</nav>\n");
}

fn tag_cloud(h: &mut Html, ctx: &Ctx<'_>) {
    h.push("<section class=\"tags\"><h3>Topics</h3>");
    for t in 0..u8::try_from(TAGS).expect("16") {
        h.link(LinkRole::TagCloud, false, |s| { let _ = write!(s, "/tag/{}/", ctx.site.tag_name(t)); }, ctx.site.tag_name(t));
        h.push(" ");
    }
    h.push("</section>");
}

fn home(h: &mut Html, ctx: &Ctx<'_>) {
    let site = &ctx.site;
    head(h, ctx, |s| s.push_str("Home"), None);
    header(h, ctx);
    h.push("<div class=\"page\"><main id=\"main\"><h1>");
    site.push_name(&mut h.out);
    h.push("</h1><section class=\"latest\"><h2>Latest</h2><ul>");
    let n = ctx.world.pages;
    for id in (n.saturating_sub(10)..n).rev() {
        entry(h, ctx, id);
    }
    h.push("</ul></section>");
    for sec in 0..site.nsec {
        h.push("<section class=\"section-block\"><h2>");
        h.open(LinkRole::Nav, false, |s| { let _ = write!(s, "/{}/", site.section_name(sec)); });
        rng::push_capitalised(&mut h.out, site.section_name(sec));
        h.close();
        h.push("</h2><ul>");
        // The section's three newest articles.
        let len = site.section_len(n, sec);
        for k in 0..len.min(3) {
            let id = u32::from(sec) + (len - 1 - k) * u32::from(site.nsec);
            h.push("<li>");
            ctx.article_link(h, LinkRole::Content, id);
            h.push("</li>");
        }
        h.push("</ul></section>");
    }
    h.push("</main>\n<aside class=\"sidebar\">");
    sidebar_popular(h, ctx);
    sidebar_partners(h, ctx);
    tag_cloud(h, ctx);
    h.push("</aside></div>\n");
    footer(h, ctx);
}

fn list_page(h: &mut Html, ctx: &Ctx<'_>, heading: &str, prefix: &str, cur: u32, last: u32, ids: impl Iterator<Item = u32>) {
    header(h, ctx);
    h.push("<div class=\"page\"><main id=\"main\">");
    let sec = match ctx.page {
        Page::Section { sec, .. } => Some(sec),
        _ => None,
    };
    breadcrumb(h, ctx, if matches!(ctx.host, HostId::Blog(_)) { None } else { sec }, |s| s.push_str(heading));
    let _ = write!(h.out, "<h1>{heading}</h1>");
    if cur > 1 {
        let _ = write!(h.out, "<p class=\"pageno\">Page {cur} of {last}</p>");
    }
    h.push("<ul class=\"entries\">");
    for id in ids {
        entry(h, ctx, id);
    }
    h.push("</ul>");
    pagination(h, ctx, prefix, cur, last);
    h.push("</main>\n<aside class=\"sidebar\">");
    sidebar_popular(h, ctx);
    if !matches!(ctx.host, HostId::Blog(_)) {
        tag_cloud(h, ctx);
    }
    h.push("</aside></div>\n");
    footer(h, ctx);
}

/// Ids of a list page, newest first, from an arithmetic progression
/// `first, first+step, …` of `len` terms.
fn page_ids(first: u32, step: u32, len: u32, page: u32) -> impl Iterator<Item = u32> {
    let skip = (page - 1) * PER_LIST;
    (skip..(skip + PER_LIST).min(len)).map(move |k| first + (len - 1 - k) * step)
}

fn section(h: &mut Html, ctx: &Ctx<'_>, sec: u8, k: u32) {
    let name = ctx.site.section_name(sec);
    let mut heading = String::with_capacity(16);
    rng::push_capitalised(&mut heading, name);
    head(h, ctx, |s| s.push_str(&heading), None);
    let len = ctx.site.section_len(ctx.world.pages, sec);
    let last = ctx.world.section_pages(&ctx.site, sec);
    list_page(h, ctx, &heading, &format!("/{name}/"), k, last, page_ids(u32::from(sec), u32::from(ctx.site.nsec), len, k));
}

fn tag_page(h: &mut Html, ctx: &Ctx<'_>, t: u8, k: u32) {
    let name = ctx.site.tag_name(t);
    let heading = format!("Topic: {name}");
    head(h, ctx, |s| s.push_str(&heading), None);
    let len = site::tag_len(ctx.world.pages, t);
    let last = ctx.world.tag_pages(t);
    list_page(h, ctx, &heading, &format!("/tag/{name}/"), k, last, page_ids(u32::from(t), TAGS, len, k));
}

fn blog_list(h: &mut Html, ctx: &Ctx<'_>, k: u32) {
    head(h, ctx, |s| s.push_str("Blog"), None);
    let len = ctx.world.articles(ctx.host);
    let last = ctx.world.blog_pages(ctx.host);
    list_page(h, ctx, "Blog", "/", k, last, page_ids(0, 1, len, k));
}

fn utility(h: &mut Html, ctx: &Ctx<'_>, u: Utility) {
    head(h, ctx, |s| s.push_str(u.label()), None);
    header(h, ctx);
    h.push("<div class=\"page\"><main id=\"main\">");
    breadcrumb(h, ctx, None, |s| s.push_str(u.label()));
    let _ = write!(h.out, "<h1>{}</h1>", u.label());
    let mut r = Rng::from_parts(ctx.world.seed, &[tag::MINI, u64::from(ctx.site.n), u as u64]);
    for _ in 0..2 {
        h.push("<p>");
        sentence(&mut r, &mut h.out);
        h.push(" ");
        sentence(&mut r, &mut h.out);
        h.push("</p>");
    }
    match u {
        Utility::Contact => {
            h.push("<p>Write to ");
            h.open(LinkRole::Content, false, |s| {
                s.push_str("mailto:editor@");
                ctx.world.site_host(ctx.site.n, s);
            });
            h.push("the editors");
            h.close();
            h.push(".</p>");
        }
        Utility::Login => {
            h.push("<form method=\"post\" action=\"/login\"><input name=\"user\"><input type=\"password\" name=\"pw\"><button>Log in</button></form>");
        }
        _ => {}
    }
    h.push("</main></div>\n");
    footer(h, ctx);
}

/// A plain page with the site chrome and two paragraphs.
fn simple(h: &mut Html, ctx: &Ctx<'_>, title: &str, salt: u64) {
    head(h, ctx, |s| s.push_str(title), None);
    header(h, ctx);
    let _ = write!(h.out, "<div class=\"page\"><main id=\"main\"><h1>{title}</h1><p>");
    let mut r = Rng::from_parts(ctx.world.seed, &[tag::MINI, u64::from(ctx.site.n), salt]);
    sentence(&mut r, &mut h.out);
    h.push("</p></main></div>\n");
    footer(h, ctx);
}
