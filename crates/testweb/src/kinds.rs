//! The vocabulary of the URL space: hosts, page kinds, URL variants,
//! routing outcomes and traps. Pure data; [`super::site`] computes them.

use super::shop::ShopPage;

/// What kind of HTML page a URL shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Page {
    /// A site's home, a blog's first list page, or a special host's index.
    Home,
    Section {
        sec: u8,
        page: u32,
    },
    Tag {
        tag: u8,
        page: u32,
    },
    /// Blog list pages from 2 on.
    BlogList {
        page: u32,
    },
    /// An article (a post on a blog host).
    Article {
        id: u32,
    },
    /// Byte-identical copy of an article under `/mirror/…`.
    Mirror {
        id: u32,
    },
    /// Near-duplicate of an article under `/amp/…` (other chrome, one line more).
    Amp {
        id: u32,
    },
    Utility(Utility),
    Calendar {
        year: u16,
        month: u8,
    },
    DeepPath {
        depth: u32,
    },
    Facets,
    /// Anything under `/private/` or `/cart`: disallowed by robots.txt.
    Private,
    /// A page of a special host's small site (`/p/K`).
    Mini(u32),
    /// A page of the shop host (`shop.test`, see [`super::shop`]).
    Shop(ShopPage),
}

impl Page {
    /// Short name of the page kind (used in truth and tests).
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Home => "home",
            Self::Section { .. } | Self::BlogList { .. } => "list",
            Self::Tag { .. } => "tag",
            Self::Article { .. } => "article",
            Self::Mirror { .. } => "mirror",
            Self::Amp { .. } => "amp",
            Self::Utility(_) => "utility",
            Self::Calendar { .. } | Self::DeepPath { .. } | Self::Facets => "trap",
            Self::Private => "private",
            Self::Mini(_) => "mini",
            Self::Shop(p) => p.kind(),
        }
    }
}

/// Small fixed pages every regular site has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Utility {
    About,
    Contact,
    Privacy,
    Terms,
    Login,
}

impl Utility {
    pub const ALL: [Utility; 5] = [Self::About, Self::Contact, Self::Privacy, Self::Terms, Self::Login];

    #[must_use]
    pub fn path(self) -> &'static str {
        match self {
            Self::About => "/about",
            Self::Contact => "/contact",
            Self::Privacy => "/privacy",
            Self::Terms => "/terms",
            Self::Login => "/login",
        }
    }

    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::About => "About us",
            Self::Contact => "Contact",
            Self::Privacy => "Privacy",
            Self::Terms => "Terms of use",
            Self::Login => "Log in",
        }
    }

    pub(super) fn from_path(p: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|u| u.path() == p)
    }
}

/// How the requested URL differs from the page's canonical URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Canonical,
    TrailingSlash,
    NoSlash,
    IndexHtml,
    /// `utm_*` tracking parameters.
    Utm,
    /// A session id (`sid`, `jsessionid`, `phpsessid`).
    Sid,
    /// Unreserved characters written as `%XX`.
    PercentEncoded,
    /// `?print=1`: the same article without the site's chrome.
    Print,
    /// `?replytocom=N`: the same article again (a comment-reply link, as
    /// blog engines write them: a classic crawl sink).
    Reply,
    /// `?share=NETWORK`: a redirect to a social network's share form.
    Share,
    /// Other query parameters the page ignores.
    OtherQuery,
}

impl Variant {
    /// Keeps an existing non-canonical marker (the first one found wins).
    #[must_use]
    pub fn or(self, other: Variant) -> Variant {
        if self == Variant::Canonical {
            other
        } else {
            self
        }
    }
}

/// The outcome of routing a request on a regular site or blog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Page(Page, Variant),
    Robots,
    Resource(Resource),
    /// 301 to this absolute URL.
    Redirect(String),
    NotFound,
}

/// Non-HTML files the pages link to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Css,
    Js,
    Jpeg(u32),
    Png(u32),
    Pdf(u32),
    Feed,
}

impl Resource {
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Css => "text/css; charset=utf-8",
            Self::Js => "application/javascript; charset=utf-8",
            Self::Jpeg(_) => "image/jpeg",
            Self::Png(_) => "image/png",
            Self::Pdf(_) => "application/pdf",
            Self::Feed => "application/rss+xml; charset=utf-8",
        }
    }
}

/// A host of the farm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostId {
    Site(u32),
    Blog(u32),
    Special(Special),
    /// `shop.test`, with the shop on.
    Shop,
}

impl HostId {
    /// The regular site this host belongs to (0 for special hosts and the shop).
    #[must_use]
    pub fn site_number(self) -> u32 {
        match self {
            Self::Site(n) | Self::Blog(n) => n,
            Self::Special(_) | Self::Shop => 0,
        }
    }

    /// Dense index for per-host statistics.
    #[must_use]
    pub fn index(self, sites: u32) -> usize {
        match self {
            Self::Site(n) => n as usize,
            Self::Blog(n) => (sites + n) as usize,
            Self::Special(s) => 2 * sites as usize + s as usize,
            // After every special host, whether faults are on or not.
            Self::Shop => 2 * sites as usize + Special::ALL.len(),
        }
    }
}

/// The hosts that exist only when faults are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Special {
    /// Every HTTP-level fault, one path each.
    Faults,
    /// Pages in windows-1252, GBK and Shift_JIS.
    Charset,
    /// robots.txt answers 500 (RFC 9309: disallow everything).
    Robots500,
    /// robots.txt with `Crawl-delay: 1`.
    CrawlDelay,
    /// 429 + `Retry-After: 1` to requests arriving < 100 ms apart.
    RateLimit,
    /// No robots.txt at all (404: allow everything).
    NoRobots,
}

impl Special {
    pub const ALL: [Special; 6] =
        [Self::Faults, Self::Charset, Self::Robots500, Self::CrawlDelay, Self::RateLimit, Self::NoRobots];

    #[must_use]
    pub fn host(self) -> &'static str {
        match self {
            Self::Faults => "faults.test",
            Self::Charset => "charset.test",
            Self::Robots500 => "robots500.test",
            Self::CrawlDelay => "crawldelay.test",
            Self::RateLimit => "ratelimit.test",
            Self::NoRobots => "norobots.test",
        }
    }
}

/// Families of infinite URL spaces; each regular site has at most one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapKind {
    Calendar,
    DeepPath,
    Facets,
}

impl TrapKind {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Calendar => "calendar",
            Self::DeepPath => "deep_path",
            Self::Facets => "facets",
        }
    }

    /// Path prefix that identifies the family on its host.
    #[must_use]
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Calendar => "/calendar/",
            Self::DeepPath => "/docs/",
            Self::Facets => "/search",
        }
    }
}

/// Decodes `%XX` escapes of unreserved characters (RFC 3986 §2.3), which
/// name the same resource; other escapes stay. `None` when nothing changed.
#[must_use]
pub fn decode_unreserved(path: &str) -> Option<String> {
    if !path.contains('%') {
        return None;
    }
    let b = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    let mut changed = false;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                let c = u8::try_from(h * 16 + l).expect("two hex digits fit a byte");
                if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                    out.push(c as char);
                    i += 3;
                    changed = true;
                    continue;
                }
            }
        }
        let ch_len = path[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&path[i..i + ch_len]);
        i += ch_len;
    }
    changed.then_some(out)
}
