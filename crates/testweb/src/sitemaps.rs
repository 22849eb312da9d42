//! Sitemaps, when the web is started with them (`--sitemaps on`): every
//! article of a site or blog is listed, most of them deep in the site
//! where links from the home page do not reach in one hop.
//!
//! - A **site**'s robots.txt names `/sitemap_index.xml`, a sitemap index of
//!   two sitemaps: `/sitemap-1.xml` (the first half of the articles) and
//!   `/sitemap-2.xml.gz` (the second half, a gzip file).
//! - A **blog** names none: its `/sitemap.xml` lists every post, where a
//!   crawler looks when robots.txt says nothing.
//!
//! Each entry has a `lastmod` (`2026-11-DD`, from the article's number).

use std::fmt::Write;
use std::io::Write as _;

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::body::FarmBody;
use crate::server;
use crate::site::{HostId, World};

/// The robots.txt line naming a site's sitemap index (none for blogs).
#[must_use]
pub fn robots_line(world: &World, host: HostId) -> Option<String> {
    matches!(host, HostId::Site(_)).then(|| format!("\nSitemap: {}/sitemap_index.xml\n", world.origin(host)))
}

/// Every article URL of `host`, in order, with its `lastmod`.
#[must_use]
pub fn listed(world: &World, host: HostId) -> Vec<(String, String)> {
    let site = world.site(host.site_number());
    (0..world.articles(host))
        .map(|id| {
            let mut url = world.origin(host);
            world.push_article_path(host, &site, id, &mut url);
            (url, format!("2026-11-{:02}", 1 + id % 28))
        })
        .collect()
}

fn urlset(entries: &[(String, String)]) -> String {
    let mut x = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for (loc, lastmod) in entries {
        let _ = writeln!(x, "  <url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>");
    }
    x.push_str("</urlset>\n");
    x
}

/// The sitemap files of a site or blog; `None` for other paths.
#[must_use]
pub fn respond(world: &World, host: HostId, path: &str) -> Option<Response<FarmBody>> {
    let all = listed(world, host);
    let half = all.len() / 2;
    let xml = |body: String| server::typed(StatusCode::OK, "application/xml", Bytes::from(body));
    match (host, path) {
        (HostId::Site(_), "/sitemap_index.xml") => {
            let origin = world.origin(host);
            Some(xml(format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n  <sitemap><loc>{origin}/sitemap-1.xml</loc></sitemap>\n  <sitemap><loc>{origin}/sitemap-2.xml.gz</loc><lastmod>2026-11-20</lastmod></sitemap>\n</sitemapindex>\n"
            )))
        }
        (HostId::Site(_), "/sitemap-1.xml") => Some(xml(urlset(&all[..half]))),
        (HostId::Site(_), "/sitemap-2.xml.gz") => {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(urlset(&all[half..]).as_bytes()).ok()?;
            Some(server::typed(StatusCode::OK, "application/gzip", Bytes::from(gz.finish().ok()?)))
        }
        (HostId::Blog(_), "/sitemap.xml") => Some(xml(urlset(&all))),
        _ => None,
    }
}
