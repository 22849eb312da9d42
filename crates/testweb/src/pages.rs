//! The page kinds of a regular site: home, section/tag/blog lists with
//! pagination, articles (full, print, AMP), utility pages, the members
//! area and the three traps. [`render`] is the single entry point (it
//! also hands the shop's pages to [`super::shop`]).

use std::fmt::Write as _;

use url::Url;

use super::article::{self, Mode};
use super::render::{breadcrumb, footer, head, header, sentence, sidebar_partners, sidebar_popular, Ctx, Html};
use super::rng::{self, tag, Rng};
use super::shop;
use super::site::{self, HostId, Page, Utility, Variant, World, PER_LIST, TAGS};
use super::traps;
use super::truth::LinkRole;

/// Renders an HTML page of a regular site or blog. `query` is the raw query
/// string (the facet trap reads it); `record` turns on link recording with
/// the URL the page is served under.
#[must_use]
pub fn render(
    world: &World,
    host: HostId,
    page: Page,
    variant: Variant,
    query: Option<&str>,
    record: Option<Url>,
) -> Html {
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
            article::article(&mut h, &ctx, id, mode);
        }
        Page::Amp { id } => article::article(&mut h, &Ctx::new(world, host, page), id, Mode::Amp),
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
        Page::Shop(p) => shop::render(&mut h, world, p),
    }
    h
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
    h.link(
        LinkRole::Content,
        false,
        |s| {
            ctx.article_path(id, s);
            if ctx.site.sid_links {
                s.push_str("?sid=");
                ctx.sid(s);
            }
        },
        "Read more",
    );
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
        h.link(
            LinkRole::TagCloud,
            false,
            |s| {
                let _ = write!(s, "/tag/{}/", ctx.site.tag_name(t));
            },
            ctx.site.tag_name(t),
        );
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
        h.open(LinkRole::Nav, false, |s| {
            let _ = write!(s, "/{}/", site.section_name(sec));
        });
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

fn list_page(
    h: &mut Html,
    ctx: &Ctx<'_>,
    heading: &str,
    prefix: &str,
    cur: u32,
    last: u32,
    ids: impl Iterator<Item = u32>,
) {
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
    list_page(
        h,
        ctx,
        &heading,
        &format!("/{name}/"),
        k,
        last,
        page_ids(u32::from(sec), u32::from(ctx.site.nsec), len, k),
    );
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
