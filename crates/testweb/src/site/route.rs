//! How a request on a regular site or blog maps to a page: the path's
//! segments, what its query string says, and which copy of an article it
//! names.

use super::{HostId, Page, Resource, Route, SiteInfo, TrapKind, Utility, Variant, World};

impl World {
    /// Maps a request on a regular site or blog to a page. `path` must
    /// already have its unreserved percent-escapes decoded.
    #[must_use]
    pub fn route(&self, host: HostId, path: &str, query: Option<&str>) -> Route {
        let q = Query::parse(query);
        let n = host.site_number();
        let site = self.site(n);
        let blog = matches!(host, HostId::Blog(_));
        let mut variant = q.variant;
        let page = |p: Page, v: Variant| Route::Page(p, v);
        if path == "/robots.txt" {
            return Route::Robots;
        }
        if variant == Variant::Share {
            return Route::Redirect(format!("http://share.ext.test/submit?from={}{path}", self.origin(host)));
        }
        if let Some(r) = resource(path) {
            return Route::Resource(r);
        }
        if path.starts_with("/private/") || path.starts_with("/cart") {
            return page(Page::Private, variant);
        }
        if path == "/" || path == "/index.html" {
            if path != "/" {
                variant = variant.or(Variant::IndexHtml);
            }
            return page(Page::Home, variant);
        }
        // The deep-path trap has no depth limit, so it is matched before the
        // fixed-size segment split below.
        if site.trap == Some(TrapKind::DeepPath) && !blog {
            if let Some(rest) = path.strip_prefix("/docs/") {
                let depth = rest.len() / 2;
                if rest.len() % 2 == 0 && rest.as_bytes().chunks(2).all(|c| c == b"a/") {
                    return page(
                        Page::DeepPath { depth: u32::try_from(depth).unwrap_or(u32::MAX) },
                        Variant::Canonical,
                    );
                }
                return Route::NotFound;
            }
        }
        let segs = Segments::new(path);
        if segs.overflow {
            return Route::NotFound;
        }
        if blog {
            return match segs.as_slice() {
                (["page", k], true) => match k.parse::<u32>() {
                    Ok(k) if k >= 2 && k <= self.blog_pages(host) => page(Page::BlogList { page: k }, variant),
                    _ => Route::NotFound,
                },
                (["post", leaf], slash) => {
                    self.article_route(host, &site, None, leaf, slash, variant, ArticleCopy::Article)
                }
                (["about"], false) => page(Page::Utility(Utility::About), variant),
                (["login"], false) => page(Page::Utility(Utility::Login), variant),
                _ => Route::NotFound,
            };
        }
        if let Some(u) = Utility::from_path(path) {
            return page(Page::Utility(u), variant);
        }
        match (segs.as_slice(), site.trap) {
            ((["calendar", y, m], true), Some(TrapKind::Calendar)) => {
                return match (y.parse::<u16>(), m.parse::<u8>()) {
                    (Ok(year), Ok(month)) if y.len() == 4 && m.len() == 2 && (1..=12).contains(&month) => {
                        page(Page::Calendar { year, month }, variant)
                    }
                    _ => Route::NotFound,
                };
            }
            ((["search"], false), Some(TrapKind::Facets)) => return page(Page::Facets, Variant::Canonical),
            _ => {}
        }
        match segs.as_slice() {
            (["tag", t, rest @ ..], _) => {
                let Some(tag) = site.tag_index(t) else { return Route::NotFound };
                match (rest, segs.trailing_slash) {
                    ([], true) => page(Page::Tag { tag, page: 1 }, variant),
                    ([], false) => page(Page::Tag { tag, page: 1 }, variant.or(Variant::NoSlash)),
                    (["page", k], true) => match k.parse::<u32>() {
                        Ok(k) if k >= 2 && k <= self.tag_pages(tag) => page(Page::Tag { tag, page: k }, variant),
                        _ => Route::NotFound,
                    },
                    _ => Route::NotFound,
                }
            }
            ([kind @ ("mirror" | "amp"), sec, leaf], false) => {
                let Some(sec) = site.section_index(sec) else { return Route::NotFound };
                let copy = if *kind == "amp" { ArticleCopy::Amp } else { ArticleCopy::Mirror };
                self.article_route(host, &site, Some(sec), leaf, false, variant, copy)
            }
            ([sec, rest @ ..], slash) => {
                let Some(sec) = site.section_index(sec) else { return Route::NotFound };
                match (rest, slash) {
                    ([], true) => page(Page::Section { sec, page: 1 }, variant),
                    ([], false) => page(Page::Section { sec, page: 1 }, variant.or(Variant::NoSlash)),
                    (["index.html"], false) => page(Page::Section { sec, page: 1 }, variant.or(Variant::IndexHtml)),
                    (["page", k], true) => match k.parse::<u32>() {
                        Ok(k) if k >= 2 && k <= self.section_pages(&site, sec) => {
                            page(Page::Section { sec, page: k }, variant)
                        }
                        _ => Route::NotFound,
                    },
                    ([leaf], slash) => {
                        self.article_route(host, &site, Some(sec), leaf, slash, variant, ArticleCopy::Article)
                    }
                    _ => Route::NotFound,
                }
            }
            _ => Route::NotFound,
        }
    }

    /// `leaf` is `ID-slug`; a wrong slug redirects to the canonical URL, as
    /// news sites do, and a trailing slash is a duplicate variant.
    #[allow(clippy::too_many_arguments)]
    fn article_route(
        &self,
        host: HostId,
        site: &SiteInfo,
        sec: Option<u8>,
        leaf: &str,
        slash: bool,
        variant: Variant,
        copy: ArticleCopy,
    ) -> Route {
        let Some((id, slug)) = leaf.split_once('-') else { return Route::NotFound };
        let Ok(id) = id.parse::<u32>() else { return Route::NotFound };
        if id >= self.articles(host) || sec.is_some_and(|s| s != site.section_of(id)) {
            return Route::NotFound;
        }
        let mut want = String::with_capacity(48);
        self.push_slug(host, id, &mut want);
        if slug != want {
            let mut loc = self.origin(host);
            loc.push_str(match copy {
                ArticleCopy::Article => "",
                ArticleCopy::Mirror => "/mirror",
                ArticleCopy::Amp => "/amp",
            });
            self.push_article_path(host, site, id, &mut loc);
            return Route::Redirect(loc);
        }
        let variant = if slash { variant.or(Variant::TrailingSlash) } else { variant };
        let page = match copy {
            ArticleCopy::Article => Page::Article { id },
            ArticleCopy::Mirror => Page::Mirror { id },
            ArticleCopy::Amp => Page::Amp { id },
        };
        Route::Page(page, variant)
    }
}

/// The path's segments without the empty ones at the ends.
struct Segments<'a> {
    segs: [&'a str; 8],
    len: usize,
    trailing_slash: bool,
    /// More segments than any farm page has.
    overflow: bool,
}

impl<'a> Segments<'a> {
    fn new(path: &'a str) -> Self {
        let trailing_slash = path.len() > 1 && path.ends_with('/');
        let mut segs = [""; 8];
        let mut len = 0;
        let mut overflow = false;
        for s in path.split('/').filter(|s| !s.is_empty()) {
            if len == segs.len() {
                overflow = true;
                break;
            }
            segs[len] = s;
            len += 1;
        }
        Self { segs, len, trailing_slash, overflow }
    }

    fn as_slice(&self) -> (&[&'a str], bool) {
        (&self.segs[..self.len], self.trailing_slash)
    }
}

/// What the query string says about the page.
struct Query {
    variant: Variant,
}

impl Query {
    fn parse(q: Option<&str>) -> Self {
        let mut variant = Variant::Canonical;
        let mut print = false;
        let mut share = false;
        for kv in q.unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let key = kv.split_once('=').map_or(kv, |(k, _)| k);
            let lower = |s: &str| key.eq_ignore_ascii_case(s);
            if key.len() > 4 && key[..4].eq_ignore_ascii_case("utm_") {
                variant = variant.or(Variant::Utm);
            } else if lower("sid") || lower("jsessionid") || lower("phpsessid") {
                variant = variant.or(Variant::Sid);
            } else if lower("print") && kv.ends_with("=1") {
                print = true;
            } else if lower("share") {
                share = true;
            } else if lower("replytocom") {
                variant = variant.or(Variant::Reply);
            } else {
                variant = variant.or(Variant::OtherQuery);
            }
        }
        // Share leaves the page and print changes its rendering, so they win
        // over any tracking parameter.
        let variant = if share {
            Variant::Share
        } else if print {
            Variant::Print
        } else {
            variant
        };
        Self { variant }
    }
}

/// Which copy of an article a path names.
#[derive(Clone, Copy)]
enum ArticleCopy {
    Article,
    Mirror,
    Amp,
}

fn resource(path: &str) -> Option<Resource> {
    let num = |p: &str, pre: &str, ext: &str| p.strip_prefix(pre)?.strip_suffix(ext)?.parse::<u32>().ok();
    match path {
        "/static/site.css" => Some(Resource::Css),
        "/static/app.js" => Some(Resource::Js),
        "/feed.xml" => Some(Resource::Feed),
        p => num(p, "/img/", ".jpg")
            .map(Resource::Jpeg)
            .or_else(|| num(p, "/img/", ".png").map(Resource::Png))
            .or_else(|| num(p, "/files/", ".pdf").map(Resource::Pdf)),
    }
}
