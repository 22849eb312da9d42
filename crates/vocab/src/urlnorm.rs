//! URL normalisation, link resolution, fingerprints and registrable domains.
//!
//! Every URL the crawl stores, partitions or de-duplicates goes through
//! [`normalize`] first, so two spellings of one resource become one string:
//! scheme and host lower-cased (the `url` crate's parser does this, with
//! IDNA), default ports dropped, dot-segments resolved, fragments and
//! credentials removed, percent-escapes of unreserved characters decoded and
//! the others upper-cased (RFC 3986 §6.2.2), an empty query dropped, and
//! tracking / session parameters (`utm_*`, `gclid`, `jsessionid`, ...)
//! stripped. Only `http` and `https` survive.
//!
//! ```
//! use layercrawl_vocab::urlnorm::resolve_link;
//! let base = url::Url::parse("http://Example.COM:80/a/b.html").expect("an absolute URL");
//! let u = resolve_link(&base, "../c/%7euser/?utm_source=x#top").expect("an http link");
//! assert_eq!(u.as_str(), "http://example.com/c/~user/");
//! ```

use regex::Regex;
use url::Url;
use xxhash_rust::xxh3::xxh3_64;

/// Longest URL kept, in bytes; longer links are dropped (a common trap
/// shape, and more than any real server accepts).
pub const MAX_URL_LEN: usize = 2048;

/// Query parameters removed by normalisation: tracking tags and session
/// ids, which make one page look like many. A trailing `*` matches a prefix.
/// Compared case-insensitively.
pub const STRIPPED_PARAMS: &[&str] = &[
    "utm_*",
    "gclid",
    "dclid",
    "fbclid",
    "msclkid",
    "mc_cid",
    "mc_eid",
    "yclid",
    "_ga",
    "_hsenc",
    "_hsmi",
    "jsessionid",
    "phpsessid",
    "aspsessionid*",
    "sessionid",
    "session_id",
    "sid",
];

/// What normalisation strips, beyond the fixed rules: query parameters by
/// name (a trailing `*` matches a prefix; case-insensitive). The default is
/// [`STRIPPED_PARAMS`]; `--strip-params` replaces it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct UrlPolicy {
    strip: Vec<String>,
}

impl Default for UrlPolicy {
    fn default() -> Self {
        default_policy().clone()
    }
}

fn default_policy() -> &'static UrlPolicy {
    static P: std::sync::OnceLock<UrlPolicy> = std::sync::OnceLock::new();
    P.get_or_init(|| UrlPolicy::new(STRIPPED_PARAMS.iter().map(|p| (*p).to_string())))
}

impl UrlPolicy {
    /// A policy stripping exactly `params` (empty: strip none).
    #[must_use]
    pub fn new(params: impl IntoIterator<Item = String>) -> Self {
        Self { strip: params.into_iter().map(|p| p.trim().to_ascii_lowercase()).filter(|p| !p.is_empty()).collect() }
    }

    /// The parameter patterns stripped.
    #[must_use]
    pub fn stripped(&self) -> &[String] {
        &self.strip
    }

    /// [`normalize`] under this policy.
    #[must_use]
    pub fn normalize(&self, url: Url) -> Option<Url> {
        normalize_with(url, self)
    }

    /// [`resolve_link`] under this policy.
    #[must_use]
    pub fn resolve_link(&self, base: &Url, href: &str) -> Option<Url> {
        let href = href.trim_matches(|c: char| c.is_ascii_whitespace() || c == '\u{0}');
        if href.len() > MAX_URL_LEN * 2 {
            return None;
        }
        let url = normalize_with(base.join(href).ok()?, self)?;
        (url.as_str().len() <= MAX_URL_LEN).then_some(url)
    }

    /// [`parse_seed`] under this policy.
    ///
    /// # Errors
    /// When the line is not an absolute http(s) URL with a host.
    pub fn parse_seed(&self, line: &str) -> Result<Url, UrlError> {
        let url = Url::parse(line.trim()).map_err(|e| UrlError::Parse { reason: e.to_string() })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(UrlError::Scheme(url.scheme().to_string()));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(UrlError::NoHost);
        }
        let url = normalize_with(url, self).ok_or(UrlError::NoHost)?;
        if url.as_str().len() > MAX_URL_LEN {
            return Err(UrlError::TooLong(url.as_str().len()));
        }
        Ok(url)
    }
}

/// Why a seed line is not a usable URL.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    #[error("not an absolute URL ({reason}); write it like https://example.org/")]
    Parse { reason: String },
    #[error("unsupported scheme `{0}`: only http and https are crawled")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("the URL is {0} bytes long (limit {MAX_URL_LEN})")]
    TooLong(usize),
}

/// Parses and normalises one seed URL (default policy).
///
/// # Errors
/// When the line is not an absolute http(s) URL with a host.
pub fn parse_seed(line: &str) -> Result<Url, UrlError> {
    default_policy().parse_seed(line)
}

/// Resolves `href` (as written in a page or a `Location` header) against
/// `base` and normalises it. `None` for non-http(s) targets (`mailto:`,
/// `javascript:`, `data:`...), unparsable or over-long URLs.
#[must_use]
pub fn resolve_link(base: &Url, href: &str) -> Option<Url> {
    default_policy().resolve_link(base, href)
}

/// Normalises an absolute URL in place of the crawl (see the module doc).
/// `None` when it is not `http`/`https` or has no host.
#[must_use]
pub fn normalize(url: Url) -> Option<Url> {
    normalize_with(url, default_policy())
}

fn normalize_with(mut url: Url, policy: &UrlPolicy) -> Option<Url> {
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return None;
    }
    url.set_fragment(None);
    if !url.username().is_empty() || url.password().is_some() {
        // Credentials never reach output or logs.
        let _ = url.set_username("");
        let _ = url.set_password(None);
    }
    if let Some(host) = url.host_str() {
        if host.ends_with('.') && host.len() > 1 {
            let trimmed = host.trim_end_matches('.').to_string();
            if trimmed.is_empty() || url.set_host(Some(&trimmed)).is_err() {
                return None;
            }
        }
    }
    let path = url.path();
    if path.contains('%') {
        let p = normalize_escapes(path);
        url.set_path(&p);
    }
    // `;jsessionid=...` path parameters (Java servlet session ids).
    if let Some(at) = url.path().to_ascii_lowercase().find(";jsessionid=") {
        let p = url.path()[..at].to_string();
        url.set_path(&p);
    }
    if let Some(q) = url.query() {
        let q = normalize_query(q, &policy.strip);
        url.set_query(q.as_deref());
    }
    Some(url)
}

/// Removes stripped parameters and empty pairs, normalises escapes; `None`
/// when nothing is left.
fn normalize_query(q: &str, strip: &[String]) -> Option<String> {
    if q.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(q.len());
    for pair in q.split('&') {
        if pair.is_empty() {
            continue;
        }
        let name = pair.split('=').next().unwrap_or_default();
        if is_stripped(name, strip) {
            continue;
        }
        if !out.is_empty() {
            out.push('&');
        }
        if pair.contains('%') {
            out.push_str(&normalize_escapes(pair));
        } else {
            out.push_str(pair);
        }
    }
    (!out.is_empty()).then_some(out)
}

fn is_stripped(name: &str, strip: &[String]) -> bool {
    strip.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix),
        None => name.eq_ignore_ascii_case(p),
    })
}

/// RFC 3986 §6.2.2.1-2: upper-case the hex of every escape and decode the
/// escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`).
fn normalize_escapes(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if let (Some(h), Some(l)) = (b.get(i + 1).and_then(|c| hex(*c)), b.get(i + 2).and_then(|c| hex(*c))) {
                let v = h * 16 + l;
                if v.is_ascii_alphanumeric() || matches!(v, b'-' | b'.' | b'_' | b'~') {
                    out.push(char::from(v));
                } else {
                    out.push('%');
                    out.push(char::from(b[i + 1].to_ascii_uppercase()));
                    out.push(char::from(b[i + 2].to_ascii_uppercase()));
                }
                i += 3;
                continue;
            }
        }
        // Copy one whole UTF-8 character (the input is a valid &str).
        let ch_len = s[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&s[i..i + ch_len]);
        i += ch_len;
    }
    out
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The 64-bit fingerprint of a normalised URL: the key of the visited store
/// and of redirect-loop detection.
#[must_use]
pub fn fingerprint(url: &Url) -> u64 {
    fingerprint_str(url.as_str())
}

/// [`fingerprint`] of a URL already in normalised string form.
#[must_use]
pub fn fingerprint_str(url: &str) -> u64 {
    xxh3_64(url.as_bytes())
}

/// The host of a normalised absolute URL string, without parsing it again
/// (`http://a.test:8080/x` → `a.test`; `http://[::1]/` → `[::1]`).
#[must_use]
pub fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = if rest.starts_with('[') {
        rest.find(']').map_or(rest.len(), |e| e + 1)
    } else {
        rest.find([':', '/', '?', '#']).unwrap_or(rest.len())
    };
    &rest[..end]
}

/// The registrable domain ("eTLD+1") of a host by the public suffix list:
/// `blog.s017.test` → `s017.test`, `a.b.example.co.uk` → `example.co.uk`.
/// IP literals, single labels and bare public suffixes are their own domain.
#[must_use]
pub fn registrable_domain(host: &str) -> String {
    let host = host.trim_end_matches('.');
    if host.starts_with('[') || host.parse::<std::net::IpAddr>().is_ok() {
        return host.to_ascii_lowercase();
    }
    let lower;
    let host = if host.bytes().any(|c| c.is_ascii_uppercase()) {
        lower = host.to_ascii_lowercase();
        lower.as_str()
    } else {
        host
    };
    psl::domain_str(host).unwrap_or(host).to_string()
}

/// A URL pattern: a glob, where `*` is any run of characters but `/` and
/// `**` any run at all, everything else literal (`?` too: URLs have
/// queries); or, written `re:…`, a regular expression. Either must match
/// the whole URL.
#[derive(Clone, Debug)]
pub struct Pattern {
    pub text: String,
    re: Regex,
}

impl Pattern {
    /// Compiles `text`.
    ///
    /// # Errors
    /// A `re:` pattern that is not a valid regular expression, or an empty
    /// pattern.
    pub fn new(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an empty URL pattern: write a glob like `https://example.com/product/*`".into());
        }
        let source = if let Some(re) = text.strip_prefix("re:") {
            format!("^(?:{re})$")
        } else {
            let mut out = String::from("^");
            let mut rest = text;
            while !rest.is_empty() {
                if let Some(r) = rest.strip_prefix("**") {
                    out.push_str(".*");
                    rest = r;
                } else if let Some(r) = rest.strip_prefix('*') {
                    out.push_str("[^/]*");
                    rest = r;
                } else {
                    let end = rest.find('*').unwrap_or(rest.len());
                    out.push_str(&regex::escape(&rest[..end]));
                    rest = &rest[end..];
                }
            }
            out.push('$');
            out
        };
        let re = Regex::new(&source).map_err(|e| {
            format!(
                "URL pattern `{text}`: {}",
                e.to_string().lines().last().unwrap_or_default().trim().trim_start_matches("error: ")
            )
        })?;
        Ok(Self { text: text.to_string(), re })
    }

    /// Whether `url` matches as a whole.
    #[must_use]
    pub fn matches(&self, url: &str) -> bool {
        self.re.is_match(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(base: &str, href: &str) -> Option<String> {
        resolve_link(&Url::parse(base).expect("base"), href).map(|u| u.to_string())
    }

    #[test]
    fn spellings_of_one_resource_become_one() {
        let b = "http://s001.test/dir/page.html";
        let want = Some("http://s001.test/a/~b/C".to_string());
        for href in [
            "HTTP://S001.TEST:80/a/~b/C",
            "/a/%7Eb/C",
            "/a/%7eb/C#frag",
            "../a/./x/../~b/C",
            "http://user:pw@s001.test/a/~b/C",
            "  /a/~b/C\n",
            "/a/~b/C?",
            "/a/~b/C?utm_source=news&utm_medium=mail",
            "http://s001.test./a/~b/C",
        ] {
            assert_eq!(norm(b, href), want, "{href}");
        }
        assert_eq!(norm("https://x.test/", "https://x.test:443/"), Some("https://x.test/".into()));
        assert_eq!(norm("https://x.test/", "//x.test:8443/"), Some("https://x.test:8443/".into()));
    }

    #[test]
    fn escapes_of_reserved_characters_are_kept_upper_case() {
        assert_eq!(norm("http://a.test/", "/a%2fb%3F?q=%2a%41"), Some("http://a.test/a%2Fb%3F?q=%2AA".into()));
        // Non-ASCII is escaped by the parser, and stays so.
        assert_eq!(norm("http://a.test/", "/日本"), Some("http://a.test/%E6%97%A5%E6%9C%AC".into()));
        // A lone or broken escape is left alone.
        assert_eq!(norm("http://a.test/", "/100%/%zz"), Some("http://a.test/100%/%zz".into()));
    }

    #[test]
    fn tracking_and_session_parameters_are_stripped() {
        let b = "http://a.test/";
        assert_eq!(norm(b, "/p?id=3&UTM_Campaign=x&sid=9&fbclid=1&x="), Some("http://a.test/p?id=3&x=".into()));
        assert_eq!(norm(b, "/p;jsessionid=ABC123?id=1"), Some("http://a.test/p?id=1".into()));
        assert_eq!(norm(b, "/p?PHPSESSID=1"), Some("http://a.test/p".into()));
        assert_eq!(norm(b, "/p?side=1"), Some("http://a.test/p?side=1".into()), "only whole names");
    }

    #[test]
    fn the_stripped_list_is_configurable() {
        let b = Url::parse("http://a.test/").expect("base");
        let none = UrlPolicy::new(Vec::new());
        assert_eq!(
            none.resolve_link(&b, "/p?utm_source=x&sid=1").map(|u| u.to_string()),
            Some("http://a.test/p?utm_source=x&sid=1".into())
        );
        let mine = UrlPolicy::new(["REF".to_string(), "trk_*".to_string()]);
        assert_eq!(
            mine.resolve_link(&b, "/p?ref=1&trk_a=2&utm_source=x").map(|u| u.to_string()),
            Some("http://a.test/p?utm_source=x".into())
        );
        assert_eq!(mine.parse_seed("http://a.test/?Ref=9").map(|u| u.to_string()), Ok("http://a.test/".into()));
        assert_eq!(UrlPolicy::default().stripped().len(), STRIPPED_PARAMS.len());
    }

    #[test]
    fn only_http_and_https_are_followed() {
        let b = "http://a.test/";
        for href in ["mailto:x@a.test", "javascript:void(0)", "data:text/html,hi", "ftp://a.test/f", "tel:123"] {
            assert_eq!(norm(b, href), None, "{href}");
        }
        let long = format!("/{}", "a".repeat(MAX_URL_LEN));
        assert_eq!(norm(b, &long), None);
    }

    #[test]
    fn seeds_are_checked_with_a_reason() {
        assert_eq!(parse_seed(" http://A.test ").map(|u| u.to_string()), Ok("http://a.test/".into()));
        assert!(matches!(parse_seed("ftp://a.test/"), Err(UrlError::Scheme(s)) if s == "ftp"));
        assert!(matches!(parse_seed("www.example.org"), Err(UrlError::Parse { .. })));
        assert!(parse_seed("not a url").expect_err("bad").to_string().contains("https://example.org/"));
    }

    #[test]
    fn registrable_domains_follow_the_public_suffix_list() {
        assert_eq!(registrable_domain("blog.s017.test"), "s017.test");
        assert_eq!(registrable_domain("s017.test"), "s017.test");
        assert_eq!(registrable_domain("a.b.Example.CO.UK"), "example.co.uk");
        assert_eq!(registrable_domain("www.github.io"), "www.github.io", "github.io is a public suffix");
        assert_eq!(registrable_domain("127.0.0.1"), "127.0.0.1");
        assert_eq!(registrable_domain("[::1]"), "[::1]");
        assert_eq!(registrable_domain("localhost"), "localhost");
    }

    #[test]
    fn host_of_matches_the_parser() {
        for u in [
            "http://a.test/x",
            "https://blog.s001.test:8443/p?q#f",
            "http://[::1]:9/",
            "http://b.test",
            "http://c.test?x=1",
        ] {
            let parsed = Url::parse(u).expect("url");
            assert_eq!(host_of(u), parsed.host_str().expect("host"), "{u}");
        }
    }

    #[test]
    fn fingerprints_are_of_the_normalised_form() {
        let a = resolve_link(&Url::parse("http://a.test/").expect("u"), "/x#1").expect("a");
        let b = resolve_link(&Url::parse("http://A.test/").expect("u"), "/x#2").expect("b");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&resolve_link(&a, "/y").expect("y")));
    }
}
