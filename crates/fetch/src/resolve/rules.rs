//! What a run says about resolution: its `--resolve` rules and which
//! special-purpose addresses `--allow-private` opens, as they are parsed
//! from a flag or a job file and written to the run's settings.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// One `--resolve` rule; written to the run's settings as its own text.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ResolveRule {
    /// Exact host, or a suffix when the rule was written `*.SUFFIX`.
    pattern: String,
    wildcard: bool,
    pub(super) addr: SocketAddr,
}

impl ResolveRule {
    /// Parses `HOST=IP:PORT` or `*.SUFFIX=IP:PORT` (IPv6 as `[::1]:PORT`).
    ///
    /// # Errors
    /// A message saying which part is wrong and the expected form.
    pub fn parse(s: &str) -> Result<Self, String> {
        let form = "expected HOST=IP:PORT or *.SUFFIX=IP:PORT, e.g. '*.test=127.0.0.1:8080'";
        let (host, addr) = s.split_once('=').ok_or_else(|| format!("resolve rule {s:?}: no '='; {form}"))?;
        let addr: SocketAddr =
            addr.trim().parse().map_err(|_| format!("resolve rule {s:?}: {addr:?} is not IP:PORT; {form}"))?;
        let host = host.trim().to_ascii_lowercase();
        let (pattern, wildcard) = match host.strip_prefix("*.") {
            Some(suffix) => (suffix.to_string(), true),
            None => (host, false),
        };
        if pattern.is_empty() || pattern.contains(['*', '/', ':', ' ']) {
            return Err(format!("resolve rule {s:?}: bad host pattern; {form}"));
        }
        Ok(Self { pattern, wildcard, addr })
    }

    /// Whether the rule applies to `host` (lower-case). A wildcard rule
    /// `*.test` matches `a.test` and `b.a.test` but not `test` itself.
    #[must_use]
    pub fn matches(&self, host: &str) -> bool {
        if self.wildcard {
            host.len() > self.pattern.len() + 1
                && host.ends_with(&self.pattern)
                && host.as_bytes()[host.len() - self.pattern.len() - 1] == b'.'
        } else {
            host == self.pattern
        }
    }
}

impl std::fmt::Display for ResolveRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let star = if self.wildcard { "*." } else { "" };
        write!(f, "{star}{}={}", self.pattern, self.addr)
    }
}

impl std::str::FromStr for ResolveRule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

impl TryFrom<String> for ResolveRule {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Self::parse(&s)
    }
}

impl From<ResolveRule> for String {
    fn from(r: ResolveRule) -> Self {
        r.to_string()
    }
}

/// Which special-purpose addresses `--allow-private` opens: none (the
/// default), all of them, or only the listed addresses and CIDR ranges.
/// Metadata endpoints stay closed whatever it says. In the settings it is
/// `false`, `true` or the list as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "PrivateRepr", into = "PrivateRepr")]
pub enum AllowPrivate {
    #[default]
    None,
    All,
    /// Only these (each an address or a CIDR range).
    Only(Arc<[ipnet::IpNet]>),
}

/// How the settings write [`AllowPrivate`].
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum PrivateRepr {
    Flag(bool),
    Only(Vec<String>),
    /// A job file's `allow-private = "10.1.2.3,127.0.0.17"`.
    Text(String),
}

impl AllowPrivate {
    /// Parses `--allow-private`'s list: addresses or CIDR ranges,
    /// comma-separated (`10.1.2.3,127.0.0.17,fd00::/8`).
    ///
    /// # Errors
    /// The item that is neither an address nor a CIDR range.
    pub fn parse_list(s: &str) -> Result<Self, String> {
        let nets = s
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(|t| {
                t.parse::<ipnet::IpNet>().or_else(|_| t.parse::<IpAddr>().map(ipnet::IpNet::from)).map_err(|_| {
                    format!("{t:?} is neither an IP address nor a CIDR range (e.g. 10.1.2.3 or 10.0.0.0/8)")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if nets.is_empty() {
            return Err("the list of allowed private addresses is empty".into());
        }
        Ok(Self::Only(nets.into()))
    }
}

impl From<bool> for AllowPrivate {
    fn from(all: bool) -> Self {
        if all {
            Self::All
        } else {
            Self::None
        }
    }
}

impl TryFrom<PrivateRepr> for AllowPrivate {
    type Error = String;
    fn try_from(r: PrivateRepr) -> Result<Self, String> {
        match r {
            PrivateRepr::Flag(all) => Ok(all.into()),
            PrivateRepr::Only(list) => Self::parse_list(&list.join(",")),
            PrivateRepr::Text(text) => Self::parse_list(&text),
        }
    }
}

/// `--allow-private`'s text: `all` (the bare flag), `none`, or the list.
impl std::str::FromStr for AllowPrivate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "all" | "true" => Ok(Self::All),
            "none" | "false" => Ok(Self::None),
            list => Self::parse_list(list),
        }
    }
}

impl std::fmt::Display for AllowPrivate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("none"),
            Self::All => f.write_str("all"),
            Self::Only(nets) => f.write_str(&nets.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")),
        }
    }
}

impl From<AllowPrivate> for PrivateRepr {
    fn from(a: AllowPrivate) -> Self {
        match a {
            AllowPrivate::None => Self::Flag(false),
            AllowPrivate::All => Self::Flag(true),
            AllowPrivate::Only(nets) => Self::Only(nets.iter().map(ToString::to_string).collect()),
        }
    }
}
