//! `--to` for PostgreSQL, read with libpq's conventions: a URL
//! (`postgres://USER@HOST:PORT/DB?sslmode=verify-full&sslrootcert=FILE`) or
//! a `key=value` string (`host=H port=P user=U dbname=DB sslmode=...`).
//! The password comes, as with `psql`, from the string itself, else
//! `PGPASSWORD`, else the password file ([`super::pgpass`]); `sslmode` and
//! `sslrootcert` from the string, else `PGSSLMODE` and `PGSSLROOTCERT`,
//! else `prefer` and `~/.postgresql/root.crt` when it exists.
//!
//! A URL's user info ends, as libpq has it, at an `@` before the host; but
//! where libpq stops at the first `@` or `/`, a password here may hold `@`,
//! `/`, `?`, `#` and `:` as they are, or percent-encoded: its user info
//! ends at the last `@` before the path that follows its first `@`
//! ([`userinfo_end`]), and an `@` after that (in a query's value) is not
//! one. With `sslmode=require` and a CA certificate at hand (`sslrootcert`
//! or `~/.postgresql/root.crt`), the server's certificate is checked
//! against it, as libpq does (`verify-ca`).
//!
//! [`redact`] is the only form a connection string is ever shown in: any
//! password replaced by `***`, in a URL's user info (read as widely as
//! any reading of it could: from its first `:` to the last `@`), a
//! `password=` query parameter or a `password=` pair.

use std::path::Path;

use tokio_postgres::config::Host;

use super::pgpass;
use super::tls::{Roots, SslMode, Tls};

/// A PostgreSQL destination, ready to connect.
#[derive(Clone, Debug)]
pub struct Target {
    pub config: tokio_postgres::Config,
    pub tls: Tls,
    /// The destination for messages, without any password.
    pub name: String,
}

/// The settings read here rather than by tokio-postgres.
const OURS: [&str; 3] = ["sslmode", "sslrootcert", "passfile"];

/// Whether `to` is a `key=value` connection string: it starts with a
/// key and `=` (a URL's scheme and `:` come before any `=`).
pub fn is_key_value(to: &str) -> bool {
    to.trim_start().split_once('=').is_some_and(|(k, _)| is_key(k.trim_end()))
}

fn is_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Reads `to` (a `postgres://` or `postgresql://` URL, or `key=value`
/// pairs), with `env` for the `PG*` variables and `HOME`.
///
/// # Errors
/// A message saying what is wrong (never with the password).
pub fn parse(to: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Target, String> {
    let (rest, ours) = if is_key_value(to) { split_pairs(to)? } else { split_url(to) };
    let get = |key: &str| ours.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e: tokio_postgres::Error| e.to_string())?;
    let user = config.get_user().map(str::to_string).ok_or("no user: write postgres://USER@HOST:PORT/DB")?;
    let Some(host) = config.get_hosts().first().cloned() else {
        return Err("no host: write postgres://USER@HOST:PORT/DB".into());
    };
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(10));
    }
    if config.get_password().is_none() {
        if let Some(password) = env("PGPASSWORD").filter(|p| !p.is_empty()) {
            config.password(password);
        } else if let Some(file) = pgpass::path(get("passfile").as_deref(), env) {
            let host = match &host {
                Host::Tcp(h) => h.clone(),
                // libpq looks a socket up as localhost.
                Host::Unix(_) => "localhost".into(),
            };
            let port = config.get_ports().first().copied().unwrap_or(5432);
            let database = config.get_dbname().unwrap_or(&user).to_string();
            let want = pgpass::Lookup { host: &host, port, database: &database, user: &user };
            if let Some(password) = pgpass::find(&file, &want) {
                config.password(password);
            }
        }
    }
    let mode = match get("sslmode").or_else(|| env("PGSSLMODE").filter(|m| !m.is_empty())) {
        None => SslMode::Prefer,
        Some(m) => SslMode::parse(&m)
            .ok_or_else(|| format!("sslmode {m:?} is not one of libpq's modes: {}", SslMode::ACCEPTED))?,
    };
    let roots = match get("sslrootcert").or_else(|| env("PGSSLROOTCERT").filter(|r| !r.is_empty())) {
        Some(r) if r == "system" => Roots::System,
        Some(r) => Roots::File(r.into()),
        None => env("HOME")
            .map(|h| Path::new(&h).join(".postgresql/root.crt"))
            .filter(|p| p.is_file())
            .map_or(Roots::None, Roots::File),
    };
    let mode = match (mode, &roots) {
        // libpq: sslrootcert=system checks the name too.
        (m, Roots::System) if m.verifies() => SslMode::VerifyFull,
        // libpq: `require` with a root certificate file verifies the CA.
        (SslMode::Require, Roots::File(_)) => SslMode::VerifyCa,
        (m, _) => m,
    };
    if mode.verifies() && roots == Roots::None {
        return Err(format!(
            "sslmode={} needs the CA's certificate: add sslrootcert=FILE (or set PGSSLROOTCERT, or put it in ~/.postgresql/root.crt)",
            mode.as_str()
        ));
    }
    config.ssl_mode(mode.negotiation());
    Ok(Target { config, tls: Tls { mode, roots }, name: redact(to) })
}

/// The end of the user info of `s`, a URL after its `scheme://`: the
/// index of the `@` that ends it, or none when it has none. As libpq, a
/// host list ended by `/`, `?` or `#` before any `@` has none (the `@` is
/// in the path or a query); else the user info runs to the last `@`
/// before the first `/`, `?` or `#` after its first `@`, so that a
/// password may hold those characters unencoded.
fn userinfo_end(s: &str) -> Option<usize> {
    let first_at = s.find('@')?;
    let host_end = s.find(['/', '?', '#']).unwrap_or(s.len());
    if host_end < first_at && is_host_list(&s[..host_end]) {
        return None;
    }
    let end = s[first_at..].find(['/', '?', '#']).map_or(s.len(), |i| first_at + i);
    s[..end].rfind('@')
}

/// Whether `s` is libpq's `host[:port][,host[:port]...]`.
fn is_host_list(s: &str) -> bool {
    let host_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '%');
    s.split(',').all(|one| {
        let (host, port) = match one.strip_prefix('[') {
            Some(v6) => match v6.split_once(']') {
                Some((addr, after)) if addr.chars().all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.' | '%')) => {
                    ("", after.strip_prefix(':').or(Some(after).filter(|a| a.is_empty())))
                }
                _ => return false,
            },
            None => match one.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (one, None),
            },
        };
        host.chars().all(host_char) && port.is_none_or(|p| p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// A URL as tokio-postgres reads it, without our query parameters, and
/// those parameters. tokio-postgres ends the user info at the first `@`
/// and a password at nothing: the user info found by [`userinfo_end`] is
/// given with its `@ / ? #` percent-encoded, and an `@` after it as `%40`.
fn split_url(to: &str) -> (String, Vec<(String, String)>) {
    let Some((scheme, s)) = to.split_once("://") else { return (to.to_string(), Vec::new()) };
    let (userinfo, rest) = match userinfo_end(s) {
        Some(at) => (Some(&s[..at]), &s[at + 1..]),
        None => (None, s),
    };
    let (rest, ours) = split_query(rest);
    let mut out = format!("{scheme}://");
    if let Some(u) = userinfo {
        for c in u.chars() {
            match c {
                '@' => out.push_str("%40"),
                '/' => out.push_str("%2F"),
                '?' => out.push_str("%3F"),
                '#' => out.push_str("%23"),
                c => out.push(c),
            }
        }
        out.push('@');
    }
    out.push_str(&rest.replace('@', "%40"));
    (out, ours)
}

/// A URL's host, path and query without our query parameters, and those
/// parameters.
fn split_query(to: &str) -> (String, Vec<(String, String)>) {
    let Some((base, query)) = to.split_once('?') else { return (to.to_string(), Vec::new()) };
    let (mut kept, mut ours) = (Vec::new(), Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = url::form_urlencoded::parse(pair.as_bytes()).next().unwrap_or_default();
        if OURS.contains(&k.as_ref()) {
            ours.push((k.into_owned(), v.into_owned()));
        } else {
            kept.push(pair);
        }
    }
    let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    (rest, ours)
}

/// `key=value` pairs without ours (re-quoted), and ours.
fn split_pairs(to: &str) -> Result<(String, Vec<(String, String)>), String> {
    let (mut kept, mut ours) = (Vec::new(), Vec::new());
    for (k, v, _) in pairs(to)? {
        if OURS.contains(&k.as_str()) {
            ours.push((k, v));
        } else {
            kept.push(format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")));
        }
    }
    Ok((kept.join(" "), ours))
}

/// The pairs of a `key=value` string: key, unquoted value, and the byte
/// range of the value as written.
fn pairs(s: &str) -> Result<Vec<(String, String, std::ops::Range<usize>)>, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_space = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_space(i);
        if i == bytes.len() {
            return Ok(out);
        }
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &s[key_start..i];
        i = skip_space(i);
        if i == bytes.len() || bytes[i] != b'=' || !is_key(key) {
            return Err(format!("expected key=value at {:?}", &s[key_start..i]));
        }
        i = skip_space(i + 1);
        let (start, mut value) = (i, String::new());
        let quoted = bytes.get(i) == Some(&b'\'');
        if quoted {
            i += 1;
        }
        loop {
            let Some(c) = s[i..].chars().next() else {
                if quoted {
                    return Err(format!("unterminated quoted value of {key}"));
                }
                break;
            };
            match c {
                '\\' => {
                    i += 1;
                    if let Some(n) = s[i..].chars().next() {
                        value.push(n);
                        i += n.len_utf8();
                    }
                }
                '\'' if quoted => {
                    i += 1;
                    break;
                }
                c if c.is_ascii_whitespace() && !quoted => break,
                c => {
                    value.push(c);
                    i += c.len_utf8();
                }
            }
        }
        out.push((key.to_string(), value, start..i));
    }
}

/// `to` with every password replaced by `***`: in a URL's user info
/// (`scheme://user:***@host`), a `password=` query parameter, or a
/// `password=` pair of a `key=value` string. A `key=value` string that
/// cannot be read is not shown at all.
///
/// A URL's user info is hidden as widely as any reader could take it:
/// from its first `:` to the last `@` of the string, whichever `@` libpq,
/// tokio-postgres or [`userinfo_end`] would end it at. An `@` in a query
/// hides more than the password then, never less.
#[must_use]
pub fn redact(to: &str) -> String {
    if is_key_value(to) {
        return match pairs(to) {
            Ok(found) => {
                let mut out = to.to_string();
                for (_, _, range) in found.iter().rev().filter(|(k, _, _)| k.ends_with("password")) {
                    out.replace_range(range.clone(), "***");
                }
                out
            }
            Err(_) => "(a connection string that cannot be read; not shown, as it may hold a password)".into(),
        };
    }
    let Some((scheme, s)) = to.split_once("://") else { return to.to_string() };
    let mut hidden = query_passwords(s);
    if let Some(last) = s.rfind('@') {
        if let Some(colon) = s[..last].find(':') {
            hidden.push(colon + 1..last);
        }
    }
    // The union of the spans, each run of them shown as one `***`.
    hidden.sort_by_key(|r| r.start);
    let mut out = format!("{scheme}://");
    let mut shown = 0;
    for span in hidden {
        // Every span starts after a `:` or `=`, past byte 0.
        if span.start > shown {
            out.push_str(&s[shown..span.start]);
            out.push_str("***");
        }
        shown = shown.max(span.end);
    }
    out.push_str(&s[shown..]);
    out
}

/// The byte ranges of the values of every `…password=` parameter of `s`
/// (a key after a `?` or `&`, percent-decoded, that ends with `password`),
/// wherever a `?` or `&` may start one. A value runs to the next `&` that
/// starts another `key=`, so that an unencoded `&` in a password hides more
/// rather than shows the rest.
fn query_passwords(s: &str) -> Vec<std::ops::Range<usize>> {
    // Where the value of a parameter starting at `at` starts, and whether
    // it is a password.
    let param = |at: usize| -> Option<(usize, bool)> {
        let rest = &s[at..];
        let key = &rest[..rest.find('=')?];
        if key.is_empty() || key.contains(['&', '?', '/', '@', '#']) {
            return None;
        }
        let decoded = url::form_urlencoded::parse(key.as_bytes()).next().map(|(k, _)| k.into_owned());
        Some((at + key.len() + 1, decoded.is_some_and(|k| k.ends_with("password"))))
    };
    let mut spans = Vec::new();
    for (i, _) in s.match_indices(['?', '&']) {
        let Some((value, true)) = param(i + 1) else { continue };
        let mut end = s.len();
        let mut from = value;
        while let Some(amp) = s[from..].find('&').map(|j| from + j) {
            if param(amp + 1).is_some() {
                end = amp;
                break;
            }
            from = amp + 1;
        }
        spans.push(value..end);
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn passwords_are_redacted_in_every_form() {
        for (given, shown) in [
            ("postgres://me:s3cret@127.0.0.1:5433/crawl", "postgres://me:***@127.0.0.1:5433/crawl"),
            ("postgres://me@h/db?password=s3cret&sslmode=require", "postgres://me@h/db?password=***&sslmode=require"),
            ("postgresql://me:a%40b@h/db?x=1&password=s3cret", "postgresql://me:***@h/db?x=1&password=***"),
            ("mysql://me:s3cret@h/db", "mysql://me:***@h/db"),
            ("host=h user=me password=s3cret dbname=db", "host=h user=me password=*** dbname=db"),
            ("host=h password = 's3 cr\\'et' user=me", "host=h password = *** user=me"),
            ("postgres://me@h/db", "postgres://me@h/db"),
        ] {
            assert_eq!(redact(given), shown);
        }
        assert!(!redact("host=h password='s3cret").contains("s3cret"), "unreadable: not shown");
    }

    /// Passwords with `/ ? # @ :` as they are, percent-encoded, or quoted in
    /// a `key=value` string: the server gets the password, the output none
    /// of it.
    #[test]
    fn passwords_with_url_delimiters_are_read_whole_and_never_shown() {
        let password = |to: &str| {
            let t = parse(to, &no_env).unwrap_or_else(|e| panic!("{to}: {e}"));
            (t.config.get_password().map(|p| String::from_utf8_lossy(p).into_owned()), t)
        };
        for (to, want, shown) in [
            ("postgres://me:pa/ss@127.0.0.1:1/db", "pa/ss", "postgres://me:***@127.0.0.1:1/db"),
            (
                "postgres://me:p?a#s/s@127.0.0.1:1/db?sslmode=disable",
                "p?a#s/s",
                "postgres://me:***@127.0.0.1:1/db?sslmode=disable",
            ),
            ("postgres://me:a@b@127.0.0.1:1/db", "a@b", "postgres://me:***@127.0.0.1:1/db"),
            ("postgres://me:a:b:c@127.0.0.1:1/db", "a:b:c", "postgres://me:***@127.0.0.1:1/db"),
            (
                "postgres://me:a/b@c@127.0.0.1:1/db?application_name=x-y",
                "a/b@c",
                "postgres://me:***@127.0.0.1:1/db?application_name=x-y",
            ),
            ("postgres://me:pa%2Fss%40%3F%23%3A@127.0.0.1:1/db", "pa/ss@?#:", "postgres://me:***@127.0.0.1:1/db"),
            ("postgresql://me:%E2%82%AC@[::1]:1/db", "€", "postgresql://me:***@[::1]:1/db"),
        ] {
            let (got, t) = password(to);
            assert_eq!(got.as_deref(), Some(want), "{to}");
            assert_eq!(t.config.get_user(), Some("me"), "{to}");
            assert_eq!(t.config.get_dbname(), Some("db"), "{to}");
            assert_eq!(t.config.get_ports(), [1], "{to}");
            assert_eq!(t.name, shown, "{to}");
            assert_eq!(redact(to), shown, "{to}");
        }
        // An `@` after the user info, in a query's value: it does not end
        // the user info, and is hidden with it when shown (more, never less).
        let (got, t) = password("postgres://me:a/b@127.0.0.1:1/db?application_name=x@y");
        assert_eq!((got.as_deref(), t.config.get_application_name()), (Some("a/b"), Some("x@y")));
        assert_eq!(t.name, "postgres://me:***@y");
        // An `@` in a query's value, with no user info: the host is not lost.
        let (got, t) = password("postgres://127.0.0.1:1/db?application_name=a@b&user=me");
        assert_eq!((got, t.config.get_application_name()), (None, Some("a@b")));
        assert_eq!(t.config.get_user(), Some("me"));
        // A password in a query, an `@` in it or after it.
        for to in [
            "postgres://me@h:1/db?password=x@y1z",
            "postgres://h:1/db?password=x@y1z",
            "postgres://h/db?a=1:2@3&password=x@y1z",
            "postgres://h/db?sslpassword=y1z&sslmode=require",
            "postgres://h/db?pass%77ord=y1z",
            "postgres://h/db?password=x&y1z&sslmode=require",
            "postgres://me:p?password=y1z@h/db",
        ] {
            assert!(!redact(to).contains("y1z"), "{to}: {}", redact(to));
        }
        // key=value with a quoted password holding a space, a quote, `@`
        // and `/`; and one that cannot be read.
        let kv = r"host=127.0.0.1 port=1 user=me dbname=db password='a b\'c@/d'";
        let (got, t) = password(kv);
        assert_eq!(got.as_deref(), Some("a b'c@/d"));
        assert_eq!(t.name, "host=127.0.0.1 port=1 user=me dbname=db password=***");
        assert!(!redact("host=h password=x://y1z").contains("y1z"), "a `://` in a value is not a URL");
        assert!(!redact("host=h password='a b").contains("a b"), "unterminated: not shown at all");
    }

    /// libpq verifies the server's CA with `sslmode=require` when a root
    /// certificate is at hand; so does the export.
    #[test]
    fn require_with_a_root_certificate_checks_the_ca() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().display().to_string();
        let env = |k: &str| (k == "HOME").then(|| home.clone());
        let t = parse("postgres://me@h/db?sslmode=require", &env).expect("parse");
        assert_eq!(t.tls, Tls { mode: SslMode::Require, roots: Roots::None }, "no CA: encrypted, not checked");
        let t = parse("postgres://me@h/db?sslmode=require&sslrootcert=/ca.pem", &env).expect("parse");
        assert_eq!(t.tls, Tls { mode: SslMode::VerifyCa, roots: Roots::File("/ca.pem".into()) });
        std::fs::create_dir_all(dir.path().join(".postgresql")).expect("mkdir");
        let root = dir.path().join(".postgresql/root.crt");
        std::fs::write(&root, "").expect("write");
        let t = parse("postgres://me@h/db?sslmode=require", &env).expect("parse");
        assert_eq!(t.tls, Tls { mode: SslMode::VerifyCa, roots: Roots::File(root) });
    }

    #[test]
    fn our_settings_are_read_and_the_rest_goes_to_tokio_postgres() {
        let t = parse(
            "postgres://me:pw@127.0.0.1:5433/crawl?sslmode=verify-full&sslrootcert=/ca.pem&application_name=x",
            &no_env,
        )
        .expect("parse");
        assert_eq!(t.tls, Tls { mode: SslMode::VerifyFull, roots: Roots::File("/ca.pem".into()) });
        assert_eq!(t.config.get_password(), Some(&b"pw"[..]));
        assert_eq!(t.config.get_application_name(), Some("x"));
        assert_eq!(
            t.name,
            "postgres://me:***@127.0.0.1:5433/crawl?sslmode=verify-full&sslrootcert=/ca.pem&application_name=x"
        );
        let kv = parse("host=127.0.0.1 port=5433 user=me dbname=crawl sslmode='require'", &no_env).expect("parse");
        assert_eq!(kv.tls.mode, SslMode::Require);
        assert_eq!(kv.config.get_dbname(), Some("crawl"));
        assert_eq!(parse("postgres://me@h/db", &no_env).expect("parse").tls.mode, SslMode::Prefer, "libpq's default");
        let err = parse("postgres://me@h/db?sslmode=allow", &no_env).expect_err("not ours");
        assert!(err.contains("verify-full"), "{err}");
        let err = parse("postgres://me@h/db?sslmode=verify-ca", &no_env).expect_err("no CA");
        assert!(err.contains("sslrootcert"), "{err}");
    }

    #[test]
    fn the_password_comes_from_the_string_then_pgpassword_then_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "127.0.0.1:5433:crawl:me:from-file\n").expect("write");
        let private = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o600);
        std::fs::set_permissions(&file, private).expect("chmod");
        let path = file.display().to_string();
        let env = |k: &str| match k {
            "PGPASSWORD" => Some("from-env".to_string()),
            "PGPASSFILE" => Some(path.clone()),
            _ => None,
        };
        let file_only = |k: &str| (k == "PGPASSFILE").then(|| path.clone());
        let pw = |to: &str, env: &dyn Fn(&str) -> Option<String>| {
            parse(to, env).expect("parse").config.get_password().map(|p| String::from_utf8_lossy(p).into_owned())
        };
        assert_eq!(pw("postgres://me:given@127.0.0.1:5433/crawl", &env).as_deref(), Some("given"));
        assert_eq!(pw("postgres://me@127.0.0.1:5433/crawl", &env).as_deref(), Some("from-env"));
        assert_eq!(pw("postgres://me@127.0.0.1:5433/crawl", &file_only).as_deref(), Some("from-file"));
        assert_eq!(pw("postgres://me@127.0.0.1:5433/other", &file_only), None);
    }
}
