//! Proxy credentials, kept in memory and never written.
//!
//! A run's settings go to the data store (`state/settings.json`) for its
//! units of work, so a proxy is named there by its URL without
//! `user:password@`. A `--proxy` URL may still carry them for convenience:
//! [`take_userinfo`] takes them off before the URL goes anywhere, and the
//! run keeps them in [`ProxyAuth`], which serde skips. A unit of work run on
//! its own in another process (`layercrawl task`) reads them from the
//! environment instead: `LAYERCRAWL_PROXY_CREDENTIALS=user:password`, or
//! the file named by `LAYERCRAWL_PROXY_CREDENTIALS_FILE` holding the same.

use std::ffi::OsString;
use std::path::PathBuf;

use url::Url;

/// The variable holding `user:password` for every proxy.
pub const ENV: &str = "LAYERCRAWL_PROXY_CREDENTIALS";
/// The variable naming a file that holds `user:password`.
pub const ENV_FILE: &str = "LAYERCRAWL_PROXY_CREDENTIALS_FILE";

/// A proxy's user and password (Basic authentication). Its `Debug` shows
/// neither, so a config printed with `{:?}` cannot leak them.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: String,
    password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(<redacted>)")
    }
}

/// Why the credentials in the environment could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsError {
    /// The text is not `user:password`; `from` names where it came from
    /// (the variable or the file), never the text itself.
    #[error("{from}: expected user:password (a user, a colon, then the password)")]
    Malformed { from: String },
    #[error("cannot read the proxy credentials file {path} (named by {ENV_FILE}): {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("{name} is not valid UTF-8")]
    NotUtf8 { name: String },
    #[error("both {ENV} and {ENV_FILE} are set; set one of them")]
    Both,
}

impl Credentials {
    #[must_use]
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self { user: user.into(), password: password.into() }
    }

    #[must_use]
    pub fn user(&self) -> &str {
        &self.user
    }

    #[must_use]
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The `Proxy-Authorization` value: `Basic` and `user:password` in base64.
    #[must_use]
    pub fn basic(&self) -> String {
        use base64::Engine as _;
        let pair = format!("{}:{}", self.user, self.password);
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
    }

    /// Parses `user:password` (split at the first colon, as Basic
    /// authentication does; a trailing line break, as files end, is
    /// dropped). `from` names the source in the error.
    ///
    /// # Errors
    /// No colon, or an empty user.
    pub fn parse(text: &str, from: &str) -> Result<Self, CredentialsError> {
        let text = text.trim_end_matches(['\r', '\n']);
        match text.split_once(':') {
            Some((user, password)) if !user.is_empty() => Ok(Self::new(user, password)),
            _ => Err(CredentialsError::Malformed { from: from.to_string() }),
        }
    }

    /// The credentials in the environment ([`ENV`] or [`ENV_FILE`]), if any.
    ///
    /// # Errors
    /// Both set, the file unreadable, or the text not `user:password`.
    pub fn from_env() -> Result<Option<Self>, CredentialsError> {
        Self::from_vars(std::env::var_os(ENV), std::env::var_os(ENV_FILE))
    }

    /// [`Self::from_env`] over given values of the two variables (tests
    /// call it: setting the process's environment would race other tests).
    ///
    /// # Errors
    /// As [`Self::from_env`].
    pub fn from_vars(value: Option<OsString>, file: Option<OsString>) -> Result<Option<Self>, CredentialsError> {
        match (value, file) {
            (None, None) => Ok(None),
            (Some(_), Some(_)) => Err(CredentialsError::Both),
            (Some(v), None) => {
                let v = v.into_string().map_err(|_| CredentialsError::NotUtf8 { name: ENV.into() })?;
                Self::parse(&v, ENV).map(Some)
            }
            (None, Some(path)) => {
                let path = PathBuf::from(path);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| CredentialsError::Read { path: path.clone(), reason: e.to_string() })?;
                Self::parse(&text, &format!("{} (named by {ENV_FILE})", path.display())).map(Some)
            }
        }
    }
}

/// Takes `user:password@` off `url`, returning them decoded (a URL's
/// userinfo is percent-encoded: `p%40ss` is `p@ss`). `None` when the URL
/// has no user.
#[must_use]
pub fn take_userinfo(url: &mut Url) -> Option<Credentials> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let creds = Credentials::new(percent_decode(url.username()), percent_decode(url.password().unwrap_or("")));
    // Both only fail for URLs that cannot have a host, which a proxy URL
    // always has (`parse_proxy` checked).
    let _ = url.set_username("");
    let _ = url.set_password(None);
    Some(creds)
}

/// `%XX` escapes decoded; a `%` not followed by two hex digits is kept as
/// is. Invalid UTF-8 after decoding is replaced, as the HTTP client does.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(hi), Some(lo)) => {
                // Two hex digits make at most 0xff.
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(u8::MAX));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The credentials of a run's proxies, in memory only (serde skips the
/// field that holds them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyAuth {
    /// From a proxy URL's userinfo, by the URL without it.
    pub by_proxy: Vec<(String, Credentials)>,
    /// From the environment: for every proxy without its own.
    pub shared: Option<Credentials>,
}

impl ProxyAuth {
    /// The credentials for the proxy `bare` (its URL without userinfo).
    #[must_use]
    pub fn for_proxy(&self, bare: &str) -> Option<&Credentials> {
        self.by_proxy.iter().find(|(p, _)| p == bare).map(|(_, c)| c).or(self.shared.as_ref())
    }

    /// Whether any proxy has credentials.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_proxy.is_empty() && self.shared.is_none()
    }
}

/// A proxy URL as text that may be shown: any `…@` before the host
/// replaced. For text that is not even a URL, everything up to the last
/// `@` counts as userinfo, so a password with a `/` in it is hidden too.
#[must_use]
pub fn redact(raw: &str) -> String {
    let Some(at) = raw.rfind('@') else { return raw.to_string() };
    let start = raw[..at].find("://").map_or(0, |i| i + 3);
    format!("{}***@{}", &raw[..start], &raw[at + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_taken_off_and_decoded() {
        let mut url = Url::parse("http://al%40ice:p%3Ass%2Fw@10.0.0.5:3128").expect("url");
        let creds = take_userinfo(&mut url).expect("credentials");
        assert_eq!((creds.user(), creds.password()), ("al@ice", "p:ss/w"));
        assert_eq!(url.as_str(), "http://10.0.0.5:3128/");
        assert!(take_userinfo(&mut url).is_none());
        assert_eq!(format!("{creds:?}"), "Credentials(<redacted>)");
        assert_eq!(percent_decode("100%zz%4"), "100%zz%4", "stray % kept");
    }

    #[test]
    fn the_environment_gives_user_colon_password_from_the_variable_or_a_file() {
        let v = |s: &str| Some(OsString::from(s));
        assert_eq!(Credentials::from_vars(None, None).expect("none"), None);
        let c = Credentials::from_vars(v("bob:se:cret"), None).expect("ok").expect("some");
        assert_eq!((c.user(), c.password()), ("bob", "se:cret"));
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("creds");
        std::fs::write(&file, "carol:hunter2\n").expect("write");
        let c = Credentials::from_vars(None, Some(file.clone().into_os_string())).expect("ok").expect("some");
        assert_eq!((c.user(), c.password()), ("carol", "hunter2"));
        assert!(matches!(Credentials::from_vars(v("a:b"), v("f")), Err(CredentialsError::Both)));
        let e = Credentials::from_vars(v("nocolon-secret"), None).expect_err("malformed").to_string();
        assert!(e.contains(ENV) && !e.contains("secret"), "{e}");
        let missing = dir.path().join("missing");
        let e = Credentials::from_vars(None, Some(missing.into_os_string())).expect_err("unreadable").to_string();
        assert!(e.contains("missing") && e.contains(ENV_FILE), "{e}");
    }

    #[test]
    fn shown_proxy_urls_hide_their_userinfo() {
        assert_eq!(redact("http://u:pw@h:1"), "http://***@h:1");
        assert_eq!(redact("http://u:p/w@h:1/x"), "http://***@h:1/x");
        assert_eq!(redact("u:pw@h:1"), "***@h:1");
        assert_eq!(redact("http://h:1"), "http://h:1");
    }
}
