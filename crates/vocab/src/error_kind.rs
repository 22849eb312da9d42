//! Why a URL has no usable response: the `doc` table's `error` column
//! (docs/src/output.md). The fetcher sets it; the store writes and
//! reads it.

/// Why a URL has no usable response; the `error` column's vocabulary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    Timeout,
    Dns,
    Connect,
    /// The address is outside the address policy (SSRF guard).
    Blocked,
    /// The connection broke while the body was read.
    Reset,
    /// The body could not be decompressed.
    Decode,
    /// The body exceeded the size cap (it is truncated and kept).
    TooLarge,
    /// robots.txt disallows the URL: no request was sent.
    Robots,
    RedirectLoop,
    TooManyRedirects,
    /// A redirect without a usable Location.
    BadRedirect,
    /// The crawler itself failed on this URL (a bug; the row keeps the URL).
    Internal,
    /// Processing the page panicked (a parser bug met on a hostile page;
    /// the row keeps the URL).
    ParsePanic,
    /// The body arrived slower than `--speed-limit` over `--speed-time`
    /// (what arrived is kept, truncated).
    TooSlow,
    /// The URL's host was down (failing for `--host-down-after` and its
    /// probe failed): no request was sent for it.
    HostDown,
}

impl ErrorKind {
    /// Every kind, in declaration order.
    pub const ALL: [Self; 15] = [
        Self::Timeout,
        Self::Dns,
        Self::Connect,
        Self::Blocked,
        Self::Reset,
        Self::Decode,
        Self::TooLarge,
        Self::Robots,
        Self::RedirectLoop,
        Self::TooManyRedirects,
        Self::BadRedirect,
        Self::Internal,
        Self::ParsePanic,
        Self::TooSlow,
        Self::HostDown,
    ];

    /// The stable name written to the `error` column.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Timeout => "timeout",
            Self::Dns => "dns",
            Self::Connect => "connect",
            Self::Blocked => "blocked",
            Self::Reset => "reset",
            Self::Decode => "decode",
            Self::TooLarge => "too_large",
            Self::Robots => "robots",
            Self::RedirectLoop => "redirect_loop",
            Self::TooManyRedirects => "too_many_redirects",
            Self::BadRedirect => "bad_redirect",
            Self::Internal => "internal",
            Self::ParsePanic => "parse_panic",
            Self::TooSlow => "too_slow",
            Self::HostDown => "host_down",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `error` value that names no kind (a damaged or foreign file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown error kind `{0}`")]
pub struct UnknownErrorKind(pub String);

impl std::str::FromStr for ErrorKind {
    type Err = UnknownErrorKind;

    /// The kind named by an `error` value read back from a file.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "timeout" => Self::Timeout,
            "dns" => Self::Dns,
            "connect" => Self::Connect,
            "blocked" => Self::Blocked,
            "reset" => Self::Reset,
            "decode" => Self::Decode,
            "too_large" => Self::TooLarge,
            "robots" => Self::Robots,
            "redirect_loop" => Self::RedirectLoop,
            "too_many_redirects" => Self::TooManyRedirects,
            "bad_redirect" => Self::BadRedirect,
            "internal" => Self::Internal,
            "parse_panic" => Self::ParsePanic,
            "too_slow" => Self::TooSlow,
            "host_down" => Self::HostDown,
            _ => return Err(UnknownErrorKind(s.to_string())),
        })
    }
}
