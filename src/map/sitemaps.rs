//! Sitemaps (`--sitemaps`): the URLs sites list for crawlers, put into
//! layer 1 beside the seeds' links (docs/src/sitemaps.md).
//!
//! In layer 0, once its seeds are fetched, a map task reads the sitemaps of
//! the seeds' hosts that it owns: the `Sitemap:` lines of each host's
//! robots.txt, else `/sitemap.xml`. They are fetched through the same
//! scheduler as pages (robots.txt obeyed, the host's delay kept), gzip
//! files unpacked, and sitemap indexes followed to their sitemaps, at most
//! [`MAX_ROUNDS`] levels down. Each URL listed becomes a `links` row from
//! its sitemap at depth 1 (so it goes through the same scope check, dedup
//! and noise filter as any link, into layer 1), and a `sitemaps` row with
//! its `lastmod`.
//!
//! Limits, per host: [`MAX_FILES`] sitemap files, `--sitemap-urls` URLs;
//! per file: 50,000 URLs and 50 MB unpacked, the protocol's own limits.
//! Files are not `doc` rows: what they gave is in the manifest and the
//! summary.

use std::collections::{BTreeMap, HashSet};
use std::io::Read;

use url::Url;

use crate::fetch::{ErrorKind, Fetcher};
use crate::scope::ScopeFilter;
use crate::store::schema::LinkRow;

/// Levels of sitemap indexes followed (robots.txt's sitemaps are level 1).
pub const MAX_ROUNDS: usize = 3;
/// Sitemap files read per host.
pub const MAX_FILES: usize = 100;
/// URLs one file may list (the protocol's limit).
pub const MAX_URLS_PER_FILE: usize = 50_000;
/// Bytes one file may unpack to (the protocol's limit).
pub const MAX_UNPACKED: u64 = 50 << 20;

/// What one sitemap file lists.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// `true` for a sitemap index (its entries are sitemaps).
    pub index: bool,
    /// `loc` and `lastmod` of each entry, as written.
    pub entries: Vec<(String, Option<String>)>,
    /// Why reading stopped early, if it did (the entries before are kept).
    pub problem: Option<String>,
}

/// Reads a sitemap or sitemap index (XML, gzip-compressed or not).
#[must_use]
pub fn read_listing(body: &[u8]) -> Listing {
    let mut out = Listing::default();
    let unpacked;
    let xml: &[u8] = if body.starts_with(&[0x1f, 0x8b]) {
        let mut buf = Vec::new();
        let mut gz = flate2::read::MultiGzDecoder::new(body).take(MAX_UNPACKED + 1);
        if let Err(e) = gz.read_to_end(&mut buf) {
            out.problem = Some(format!("bad gzip: {e}"));
        }
        if buf.len() as u64 > MAX_UNPACKED {
            buf.truncate(usize::try_from(MAX_UNPACKED).unwrap_or(usize::MAX));
            out.problem = Some("over 50 MB unpacked; read that far".to_string());
        }
        unpacked = buf;
        &unpacked
    } else {
        body
    };
    parse_xml(xml, &mut out);
    out
}

/// The XML walk: `<url>`/`<sitemap>` entries with their `<loc>` and
/// `<lastmod>`, by local name (namespaces vary).
fn parse_xml(xml: &[u8], out: &mut Listing) {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(xml);
    let mut buf = Vec::new();
    // Inside <loc> or <lastmod> of the current entry: its text so far.
    let (mut field, mut text) = (None::<&'static str>, String::new());
    let (mut loc, mut lastmod) = (None::<String>, None::<String>);
    let mut root_seen = false;
    // The element path: `loc` and `lastmod` count only as children of an
    // entry (an image sitemap's `<image:loc>` is inside `<image:image>`).
    let mut path: Vec<Vec<u8>> = Vec::new();
    loop {
        let event = match reader.read_event_into(&mut buf) {
            Ok(e) => e,
            Err(e) => {
                out.problem = Some(format!("not well-formed XML at byte {}: {e}", reader.buffer_position()));
                break;
            }
        };
        match event {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_vec();
                let in_entry = path.len() == 2 && matches!(path[1].as_slice(), b"url" | b"sitemap");
                match name.as_slice() {
                    b"sitemapindex" if path.is_empty() => (out.index, root_seen) = (true, true),
                    b"urlset" if path.is_empty() => root_seen = true,
                    b"url" | b"sitemap" if path.len() == 1 => (loc, lastmod) = (None, None),
                    b"loc" if in_entry => (field, text) = (Some("loc"), String::new()),
                    b"lastmod" if in_entry => (field, text) = (Some("lastmod"), String::new()),
                    _ => {}
                }
                path.push(name);
            }
            Event::Text(t) if field.is_some() => text.push_str(&t.decode().unwrap_or_default()),
            Event::CData(t) if field.is_some() => text.push_str(&String::from_utf8_lossy(&t)),
            Event::GeneralRef(r) if field.is_some() => {
                let name = r.decode().unwrap_or_default();
                let entity = format!("&{name};");
                text.push_str(&quick_xml::escape::unescape(&entity).unwrap_or_default());
            }
            Event::End(e) => match (path.pop(), e.local_name().as_ref()) {
                (_, b"loc" | b"lastmod") if field.is_some() && path.len() == 2 => {
                    let value = text.trim().to_string();
                    if field == Some("loc") {
                        loc = Some(value);
                    } else {
                        lastmod = Some(value).filter(|v| !v.is_empty());
                    }
                    field = None;
                }
                (_, b"url" | b"sitemap") if path.len() == 1 => {
                    if let Some(l) = loc.take().filter(|l| !l.is_empty()) {
                        if out.entries.len() >= MAX_URLS_PER_FILE {
                            out.problem = Some(format!("over {MAX_URLS_PER_FILE} entries; the rest skipped"));
                            break;
                        }
                        out.entries.push((l, lastmod.take()));
                    }
                }
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    if !root_seen && out.problem.is_none() {
        out.problem = Some("neither <urlset> nor <sitemapindex>".to_string());
    }
}

pub use crate::store::schema::SitemapRow;

/// What reading a partition's sitemaps gave.
#[derive(Debug, Default)]
pub struct Found {
    /// One followed link per URL listed (depth 1), from its sitemap.
    pub links: Vec<LinkRow>,
    pub rows: Vec<SitemapRow>,
    /// Sitemap files fetched, and the problems met (file: what).
    pub files: u64,
    pub problems: BTreeMap<String, String>,
}

/// Reads the sitemaps of `origins` (the hosts of this partition's seeds).
/// `owns`: whether a URL's host belongs to this partition (the others'
/// sitemaps are theirs to read).
pub async fn discover(
    fetcher: &Fetcher,
    urls: &crate::urlnorm::UrlPolicy,
    origins: &[String],
    scope: &ScopeFilter,
    owns: impl Fn(&Url) -> bool + Send + Sync + Clone + 'static,
    max_urls_per_host: usize,
    deadline: Option<std::time::Instant>,
) -> Found {
    let mut found = Found::default();
    let mut wanted: Vec<String> = Vec::new();
    for origin in origins {
        let listed: Vec<String> = fetcher
            .robots_rules(origin)
            .map(|r| r.sitemaps().iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        if listed.is_empty() {
            wanted.push(format!("{origin}/sitemap.xml"));
        } else {
            wanted.extend(listed);
        }
    }
    let mut seen: HashSet<String> = HashSet::new();
    let mut per_host_files: BTreeMap<String, usize> = BTreeMap::new();
    let mut per_host_urls: BTreeMap<String, usize> = BTreeMap::new();
    let mut listed: HashSet<String> = HashSet::new();
    for _round in 0..MAX_ROUNDS {
        let mut batch = Vec::new();
        for w in wanted.drain(..) {
            let Ok(u) = Url::parse(&w) else {
                found.problems.insert(w.clone(), "not a URL".to_string());
                continue;
            };
            let host = u.host_str().unwrap_or_default().to_string();
            let files = per_host_files.entry(host).or_default();
            if !owns(&u) {
                // Its host's partition would have to read it; it reads its
                // own seeds' sitemaps only.
                found.problems.insert(w.clone(), "on a host another partition owns; not read".to_string());
                continue;
            }
            if !seen.insert(u.to_string()) {
                continue;
            }
            if *files >= MAX_FILES {
                found.problems.insert(w.clone(), format!("over {MAX_FILES} sitemap files on this host; not read"));
                continue;
            }
            *files += 1;
            batch.push(u.to_string());
        }
        if batch.is_empty() {
            break;
        }
        for f in fetcher.fetch_list(batch, owns.clone(), deadline).await {
            let sitemap = f.url.to_string();
            found.files += 1;
            let resp = match (&f.error, &f.response) {
                (None, Some(r)) if (200..300).contains(&r.status) => r,
                // A file cut at the body limit or by a timeout: its entries
                // so far are read, and the cut is noted.
                (Some((kind @ (ErrorKind::TooLarge | ErrorKind::Timeout | ErrorKind::Reset), detail)), Some(r))
                    if (200..300).contains(&r.status) =>
                {
                    found.problems.insert(sitemap.clone(), format!("{kind}: {detail}; read as far as received"));
                    r
                }
                (Some((kind, detail)), _) => {
                    found.problems.insert(sitemap, format!("{kind}: {detail}"));
                    continue;
                }
                (None, r) => {
                    let status = r.as_ref().map_or(0, |r| r.status);
                    found.problems.insert(sitemap, format!("HTTP {status}"));
                    continue;
                }
            };
            let listing = read_listing(&resp.body);
            if let Some(p) = &listing.problem {
                found.problems.entry(sitemap.clone()).or_insert_with(|| p.clone());
            }
            let mut capped = false;
            for (loc, lastmod) in listing.entries {
                // Normalised as every link is (fragments, credentials,
                // tracking parameters, length).
                let Some(u) = urls.resolve_link(&f.final_url, loc.trim()) else { continue };
                if listing.index {
                    wanted.push(u.to_string());
                    continue;
                }
                let host = u.host_str().unwrap_or_default().to_string();
                let n = per_host_urls.entry(host).or_default();
                if *n >= max_urls_per_host {
                    capped = true;
                    continue;
                }
                if !listed.insert(u.to_string()) {
                    continue;
                }
                *n += 1;
                let in_scope = scope.allows(&u);
                found.rows.push(SitemapRow { sitemap: sitemap.clone(), url: u.to_string(), lastmod });
                found.links.push(LinkRow {
                    noise: (!in_scope).then_some(crate::denoise::NoiseLabel::Scope),
                    followed: in_scope,
                    ..LinkRow::followed(sitemap.clone(), u.to_string(), 1)
                });
            }
            if capped {
                found.problems.entry(sitemap).or_insert_with(|| {
                    format!("over --sitemap-urls {max_urls_per_host} URLs on a host; the rest skipped")
                });
            }
        }
    }
    for w in wanted {
        found.problems.insert(w, format!("an index nested over {MAX_ROUNDS} levels deep; not read"));
    }
    found
}

/// Reads the sitemaps of this partition's seeds (`--sitemaps`) and writes
/// what they list to `sitemaps/`; their links go into layer 1 with the
/// seeds' links.
pub(super) async fn read_partition(
    ctx: &super::MapCtx,
    store: &crate::store::Store,
    input: &crate::store::scratch::InputRows,
    part: u32,
    max_urls: usize,
) -> Result<Found, crate::error::StageError> {
    let mut origins = std::collections::BTreeSet::new();
    for id in 0..input.len() {
        if let Ok(Ok(u)) = input.url(id).map(|u| Url::parse(&u)) {
            origins.insert(crate::fetch::robots::origin_of(&u));
        }
    }
    let origins: Vec<String> = origins.into_iter().collect();
    let partitions = ctx.partitions;
    let owns = move |u: &Url| crate::partition::partition_of_host(u.host_str().unwrap_or_default(), partitions) == part;
    let urls = std::sync::Arc::clone(&ctx.pages.parse.urls);
    let found = discover(&ctx.fetcher, &urls, &origins, &ctx.scope, owns, max_urls, ctx.deadline).await;
    for (file, why) in &found.problems {
        tracing::warn!(sitemap = %file, "sitemap not read in full: {why}");
    }
    if !found.rows.is_empty() {
        let path = crate::store::layout::shard(crate::store::dataset::SITEMAPS.name, 0, part);
        let mut w = crate::store::ShardWriter::create(
            store,
            &path,
            crate::store::schema::sitemaps_schema(),
            super::SHARD_ROW_GROUP_BYTES,
        )?;
        w.write(&crate::store::schema::sitemaps_batch(&found.rows)?).await?;
        w.finish().await?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const URLSET: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>http://a.test/one</loc><lastmod>2026-11-01</lastmod></url>
  <url><loc> http://a.test/two?x=1&amp;y=2 </loc></url>
  <url><loc><![CDATA[http://a.test/three]]></loc><lastmod>2026-11-02T10:00:00+00:00</lastmod></url>
  <url><lastmod>2026-11-03</lastmod></url>
</urlset>"#;

    #[test]
    fn a_urlset_lists_its_urls_with_their_dates() {
        let l = read_listing(URLSET.as_bytes());
        assert!(!l.index);
        assert_eq!(l.problem, None);
        assert_eq!(
            l.entries,
            vec![
                ("http://a.test/one".to_string(), Some("2026-11-01".to_string())),
                ("http://a.test/two?x=1&y=2".to_string(), None),
                ("http://a.test/three".to_string(), Some("2026-11-02T10:00:00+00:00".to_string())),
            ],
            "entities and CDATA decoded, an entry without <loc> skipped"
        );
    }

    #[test]
    fn an_index_and_a_gzip_file_are_read_too() {
        let index = r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
            <sitemap><loc>http://a.test/s1.xml.gz</loc><lastmod>2026-10-01</lastmod></sitemap>
        </sitemapindex>"#;
        let l = read_listing(index.as_bytes());
        assert!(l.index);
        assert_eq!(l.entries, vec![("http://a.test/s1.xml.gz".to_string(), Some("2026-10-01".to_string()))]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, URLSET.as_bytes()).expect("gzip");
        let packed = gz.finish().expect("gzip");
        assert_eq!(read_listing(&packed).entries.len(), 3);
    }

    #[test]
    fn broken_files_keep_what_came_before_and_say_why() {
        let cut = &URLSET[..URLSET.find("<url><loc><![CDATA").expect("third")];
        let l = read_listing(format!("{cut}<url><loc>http://a.test/x</url>").as_bytes());
        assert_eq!(l.entries.len(), 2, "{l:?}");
        assert!(l.problem.is_some_and(|p| p.contains("XML")));
        let html = read_listing(b"<html><body>Not found</body></html>");
        assert!(html.entries.is_empty() && html.problem.is_some_and(|p| p.contains("urlset")));
        let bad_gzip = read_listing(&[0x1f, 0x8b, 1, 2, 3]);
        assert!(bad_gzip.problem.is_some_and(|p| p.contains("gzip")));
    }

    #[test]
    fn an_image_sitemaps_images_are_not_its_pages() {
        let xml = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
                xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">
            <url><loc>http://a.test/page</loc>
              <image:image><image:loc>http://a.test/pic.jpg</image:loc></image:image>
              <lastmod>2026-11-05</lastmod>
            </url></urlset>"#;
        assert_eq!(
            read_listing(xml.as_bytes()).entries,
            vec![("http://a.test/page".to_string(), Some("2026-11-05".to_string()))]
        );
    }

    #[test]
    fn a_file_lists_at_most_the_protocols_limit() {
        let mut xml = String::from("<urlset>");
        for i in 0..MAX_URLS_PER_FILE + 10 {
            xml.push_str(&format!("<url><loc>http://a.test/{i}</loc></url>"));
        }
        xml.push_str("</urlset>");
        let l = read_listing(xml.as_bytes());
        assert_eq!(l.entries.len(), MAX_URLS_PER_FILE);
        assert!(l.problem.is_some());
    }
}
