//! The three infinite URL families of regular sites: a calendar whose
//! months link their neighbours forever, a relative `a/` link that deepens
//! the path forever, and a faceted search whose filter links multiply.

use std::fmt::Write as _;

use super::render::{footer, head, header, sentence, Ctx, Html};
use super::rng::{self, tag, Rng};
use super::truth::LinkRole;

/// Month names, for archive titles and the shop's release dates.
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Calendar trap: every month links the months and years around it, forever.
pub fn calendar(h: &mut Html, ctx: &Ctx<'_>, year: u16, month: u8) {
    let title = format!("Archive: {} {year}", MONTHS[usize::from(month - 1)]);
    head(h, ctx, |s| s.push_str(&title), None);
    header(h, ctx);
    let _ = write!(h.out, "<div class=\"page\"><main id=\"main\"><h1>{title}</h1><table class=\"calendar\"><tr>");
    for d in 1..=28 {
        let _ = write!(h.out, "<td>{d}</td>");
        if d % 7 == 0 {
            h.push("</tr><tr>");
        }
    }
    h.push("</tr></table><nav class=\"pagination\">");
    let (py, pm) = if month == 1 { (year.saturating_sub(1), 12) } else { (year, month - 1) };
    let (ny, nm) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
    for (y, m, label) in [
        (py, pm, "&lsaquo; Previous month"),
        (ny, nm, "Next month &rsaquo;"),
        (year.saturating_sub(1), month, "Previous year"),
        (year + 1, month, "Next year"),
    ] {
        if (1000..=9999).contains(&y) {
            h.link(
                LinkRole::Pagination,
                false,
                |s| {
                    let _ = write!(s, "/calendar/{y:04}/{m:02}/");
                },
                label,
            );
            h.push(" ");
        }
    }
    h.push("</nav></main></div>\n");
    footer(h, ctx);
}

/// Deep-path trap: a relative `a/` link, so `/docs/a/` links `/docs/a/a/` and so on.
pub fn docs(h: &mut Html, ctx: &Ctx<'_>) {
    head(h, ctx, |s| s.push_str("Documentation"), None);
    header(h, ctx);
    h.push("<div class=\"page\"><main id=\"main\"><h1>Documentation</h1><p>");
    let mut r = Rng::from_parts(ctx.world.seed, &[tag::TRAP, u64::from(ctx.site.n)]);
    sentence(&mut r, &mut h.out);
    h.push("</p><ul class=\"toc\"><li>");
    h.link(LinkRole::Sidebar, false, |s| s.push_str("a/"), "Advanced topics");
    h.push("</li></ul></main></div>\n");
    footer(h, ctx);
}

const FACETS: [(&str, &[&str]); 4] = [
    ("color", &["red", "blue", "green", "black", "white", "yellow"]),
    ("size", &["xs", "s", "m", "l", "xl"]),
    ("brand", &["acme", "globex", "initech", "umbrella", "hooli", "vandelay"]),
    ("sort", &["price", "newest", "rating"]),
];

/// Faceted-search trap: every result page links each unset facet value
/// appended to its own query, so parameter orders and combinations multiply.
pub fn facets(h: &mut Html, ctx: &Ctx<'_>, query: &str) {
    let params: Vec<(&str, &str)> = query.split('&').filter_map(|kv| kv.split_once('=')).collect();
    let page = params.iter().rev().find(|(k, _)| *k == "page").and_then(|(_, v)| v.parse::<u32>().ok()).unwrap_or(1);
    head(h, ctx, |s| s.push_str("Search"), None);
    header(h, ctx);
    let _ = write!(
        h.out,
        "<div class=\"page\"><main id=\"main\"><h1>Search results</h1><p>Page {page}</p><ul class=\"products\">"
    );
    let mut r = Rng::from_parts(
        ctx.world.seed,
        &[tag::TRAP, u64::from(ctx.site.n), rng::mix(0, &[query.len() as u64, u64::from(page)])],
    );
    for _ in 0..10 {
        h.push("<li>");
        sentence(&mut r, &mut h.out);
        h.push("</li>");
    }
    h.push("</ul>");
    let with = |s: &mut String, add: &str| {
        s.push_str("/search?");
        let mut first = true;
        for (k, v) in params.iter().filter(|(k, _)| *k != "page") {
            if !first {
                s.push('&');
            }
            first = false;
            let _ = write!(s, "{k}={v}");
        }
        if !first && !add.is_empty() {
            s.push('&');
        }
        s.push_str(add);
    };
    h.link(LinkRole::Pagination, false, |s| with(s, &format!("page={}", page + 1)), "Next page");
    h.push("</main>\n<aside class=\"sidebar facets\">");
    for (name, values) in FACETS {
        let _ = write!(h.out, "<h3>{name}</h3><ul>");
        if params.iter().any(|(k, _)| *k == name) {
            h.push("<li>");
            h.link(
                LinkRole::Sidebar,
                false,
                |s| {
                    s.push_str("/search?");
                    let kept: Vec<String> = params
                        .iter()
                        .filter(|(k, _)| *k != name && *k != "page")
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    s.push_str(&kept.join("&"));
                },
                "Clear",
            );
            h.push("</li>");
        } else {
            for v in values {
                h.push("<li>");
                h.link(LinkRole::Sidebar, false, |s| with(s, &format!("{name}={v}")), v);
                h.push("</li>");
            }
        }
        h.push("</ul>");
    }
    h.push("</aside></div>\n");
    footer(h, ctx);
}
