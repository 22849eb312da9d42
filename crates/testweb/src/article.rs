//! Article pages: the full page with its chrome, the print version and
//! the AMP near-duplicate. An article's links (related list, in-text links
//! in varied href forms, cross-site and off-farm links, files) come from
//! its own PRNG stream, so they are the same on every request.

use std::fmt::Write as _;

use super::render::{breadcrumb, footer, head, header, sentence, sidebar_popular, Ctx, Html};
use super::rng::{self, tag, Rng};
use super::site::{HostId, Page, TAGS};
use super::truth::LinkRole;

/// Which rendering of an article.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
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
            if r.chance(50) {
                id.checked_sub(k * step)
            } else {
                id.checked_add(k * step).filter(|c| *c < n)
            }
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
            let dash =
                s.rfind('/').and_then(|i| s[i..].find('-').map(|d| i + d + 1)).expect("article paths hold ID-slug");
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

pub fn article(h: &mut Html, ctx: &Ctx<'_>, id: u32, mode: Mode) {
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
    h.push(rng::FIRST_NAMES[id as usize % rng::FIRST_NAMES.len()])
        .push(" ")
        .push(rng::LAST_NAMES[(id as usize / 3) % rng::LAST_NAMES.len()]);
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
                    h.link(
                        LinkRole::Content,
                        false,
                        |s| s.push_str("http://www.ext.test/story/"),
                        "the original report",
                    );
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
            h.link(
                LinkRole::Resource,
                false,
                |s| {
                    let _ = write!(s, "/files/{id}.pdf");
                },
                "Download the full report (PDF)",
            );
            h.push(" ");
        }
        if p.png {
            h.link(
                LinkRole::Resource,
                false,
                |s| {
                    let _ = write!(s, "/img/{id}.png");
                },
                "Chart (PNG)",
            );
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
            h.open(LinkRole::TagCloud, false, |s| {
                let _ = write!(s, "/tag/{}/", site.tag_name(t));
            });
            h.push(site.tag_name(t));
            h.close();
            h.push(" ");
        }
        h.push("</div>");
    }
    h.push("<div class=\"share\">Share: ");
    h.link(
        LinkRole::Share,
        false,
        |s| {
            ctx.article_path(id, s);
            s.push_str("?utm_source=newsletter&utm_medium=email&utm_campaign=weekly");
        },
        "Email",
    );
    h.push(" ");
    h.link(LinkRole::Share, true, |s| s.push_str("http://share.ext.test/submit"), "Social");
    h.push(" ");
    h.link(
        LinkRole::Share,
        false,
        |s| {
            ctx.article_path(id, s);
            s.push_str("?print=1");
        },
        "Print",
    );
    for network in ["twitter", "facebook"] {
        h.push(" ");
        h.link(
            LinkRole::Share,
            false,
            |s| {
                ctx.article_path(id, s);
                s.push_str("?share=");
                s.push_str(network);
            },
            network,
        );
    }
    h.push("</div><nav class=\"prevnext\">");
    if id > 0 {
        h.push("Previous: ");
        ctx.article_link(h, LinkRole::Pagination, id - 1);
    }
    if id + 1 < ctx.world.articles(ctx.host) {
        h.push(" Next: ");
        ctx.article_link(h, LinkRole::Pagination, id + 1);
    }
    h.push("</nav><section id=\"comments\"><h2>Comments</h2>");
    // Two comments, each with the reply link blog engines write
    // (`?replytocom=ID`: the same article again).
    for k in 0..2 {
        h.push("<div class=\"comment\"><p>");
        sentence(&mut r, &mut h.out);
        h.push("</p>");
        h.link(
            LinkRole::Share,
            false,
            |s| {
                ctx.article_path(id, s);
                let _ = write!(s, "?replytocom={}", id * 10 + k);
            },
            "Reply",
        );
        h.push("</div>");
    }
    h.push("</section></article></main>\n<aside class=\"sidebar\"><section class=\"related\"><h3>Related</h3><ul>");
    for rid in &p.related[..p.n_related] {
        h.push("<li>");
        ctx.article_link(h, LinkRole::Sidebar, *rid);
        h.push("</li>");
    }
    h.push("</ul></section>");
    sidebar_popular(h, ctx);
    h.push("</aside></div>\n<div class=\"article-tools\">");
    if !blog && id % 10 == 3 {
        h.link(
            LinkRole::Footer,
            false,
            |s| {
                s.push_str("/mirror");
                ctx.article_path(id, s);
            },
            "Mirror",
        );
        h.push(" ");
    }
    if !blog && id % 10 == 6 {
        h.link(
            LinkRole::Footer,
            false,
            |s| {
                s.push_str("/amp");
                ctx.article_path(id, s);
            },
            "AMP version",
        );
        h.push(" ");
    }
    h.link(
        LinkRole::Footer,
        false,
        |s| {
            let _ = write!(s, "/private/edit/{id}");
        },
        "Edit",
    );
    h.push("</div>");
    footer(h, ctx);
}
