//! `--to` for PostgreSQL, read with libpq's conventions: a URL
//! (`postgres://USER@HOST:PORT/DB?sslmode=verify-full&sslrootcert=FILE`) or
//! a `key=value` string (`host=H port=P user=U dbname=DB sslmode=...`).
//! The password comes, as with `psql`, from the string itself, else
//! `PGPASSWORD`, else the password file ([`super::pgpass`]); `sslmode` and
//! `sslrootcert` from the string, else `PGSSLMODE` and `PGSSLROOTCERT`,
//! else `prefer` and `~/.postgresql/root.crt` when it exists.
//!
//! [`redact`] is the only form a connection string is ever shown in: any
//! password replaced by `***`, in a URL's user info, a `password=` query
//! parameter or a `password=` pair.

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

/// Whether `to` is a `key=value` connection string.
pub fn is_key_value(to: &str) -> bool {
    let t = to.trim_start();
    !t.contains("://") && t.split_once('=').is_some_and(|(k, _)| is_key(k.trim_end()))
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
    let (rest, ours) = if is_key_value(to) { split_pairs(to)? } else { split_query(to)? };
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
    // libpq: sslrootcert=system checks the name too.
    let mode = if roots == Roots::System && mode.verifies() { SslMode::VerifyFull } else { mode };
    if mode.verifies() && roots == Roots::None {
        return Err(format!(
            "sslmode={} needs the CA's certificate: add sslrootcert=FILE (or set PGSSLROOTCERT, or put it in ~/.postgresql/root.crt)",
            mode.as_str()
        ));
    }
    config.ssl_mode(mode.negotiation());
    Ok(Target { config, tls: Tls { mode, roots }, name: redact(to) })
}

/// A URL without our query parameters, and those parameters.
fn split_query(to: &str) -> Result<(String, Vec<(String, String)>), String> {
    let Some((base, query)) = to.split_once('?') else { return Ok((to.to_string(), Vec::new())) };
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
    Ok((rest, ours))
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
    let Some((scheme, rest)) = to.split_once("://") else { return to.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _))
                        if url::form_urlencoded::parse(k.as_bytes())
                            .next()
                            .is_some_and(|(k, _)| k.ends_with("password")) =>
                    {
                        format!("{k}=***")
                    }
                    _ => pair.to_string(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
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
