//! libpq's password file (`PGPASSFILE`, `passfile`, default
//! `~/.pgpass`): lines of `host:port:database:user:password`, each of the
//! first four a value or `*`, `\:` and `\\` escaped, `#` starting a comment.
//! The first line that matches gives the password. As libpq does, a file
//! that others may read (any group or world permission bit: it should be
//! 0600 or less) is not used, with a warning, and a missing file is no
//! error.

use std::path::{Path, PathBuf};

/// What a connection looks a password up by.
pub struct Lookup<'a> {
    pub host: &'a str,
    pub port: u16,
    pub database: &'a str,
    pub user: &'a str,
}

/// The password file to read: `explicit` (the `passfile` setting), else
/// `PGPASSFILE`, else `~/.pgpass`.
pub fn path(explicit: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    explicit
        .map(PathBuf::from)
        .or_else(|| env("PGPASSFILE").filter(|p| !p.is_empty()).map(PathBuf::from))
        .or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".pgpass")))
}

/// The password of `want` in the file at `path`, if the file may be used
/// and has a line for it.
pub fn find(path: &Path, want: &Lookup<'_>) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() {
        tracing::warn!("password file {} is not a plain file; not used", path.display());
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "password file {} has group or world access; permissions should be u=rw (0600) or less; not used",
                path.display()
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| matches(line, want))
}

/// The password of `line` when it is for `want`.
fn matches(line: &str, want: &Lookup<'_>) -> Option<String> {
    if line.starts_with('#') {
        return None;
    }
    let fields = split(line);
    let [host, port, database, user, password] = fields.as_slice() else { return None };
    let port_s = want.port.to_string();
    let fits = |field: &str, value: &str| field == "*" || field == value;
    (fits(host, want.host) && fits(port, &port_s) && fits(database, want.database) && fits(user, want.user))
        .then(|| password.clone())
}

/// The fields of a line, unescaped; the password is the rest of the line.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().expect("one field at least").push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            _ => fields.last_mut().expect("one field at least").push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    const WANT: Lookup<'static> = Lookup { host: "127.0.0.1", port: 5433, database: "crawl", user: "me" };

    #[test]
    fn the_first_matching_line_gives_the_password() {
        assert_eq!(matches("127.0.0.1:5433:crawl:me:s3cr:et", &WANT).as_deref(), Some("s3cr:et"));
        assert_eq!(matches("*:*:*:me:pw\\:1", &WANT).as_deref(), Some("pw:1"));
        assert_eq!(matches("localhost:5433:crawl:me:pw", &WANT), None);
        assert_eq!(matches("127.0.0.1:5432:crawl:me:pw", &WANT), None);
        assert_eq!(matches("# 127.0.0.1:5433:crawl:me:pw", &WANT), None);
        assert_eq!(matches("127.0.0.1:5433:crawl", &WANT), None);
    }

    #[test]
    fn a_file_others_can_read_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "# mine\n*:*:other:*:no\n*:5433:*:me:yes\n").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert_eq!(find(&file, &WANT).as_deref(), Some("yes"));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        assert_eq!(find(&file, &WANT), None, "group-readable: not used");
        assert_eq!(find(&dir.path().join("none"), &WANT), None);
    }

    #[test]
    fn the_file_is_passfile_then_pgpassfile_then_home() {
        let env = |k: &str| match k {
            "PGPASSFILE" => Some("/p/file".to_string()),
            "HOME" => Some("/home/me".to_string()),
            _ => None,
        };
        assert_eq!(path(Some("/x"), &env), Some(PathBuf::from("/x")));
        assert_eq!(path(None, &env), Some(PathBuf::from("/p/file")));
        let home = |k: &str| (k == "HOME").then(|| "/home/me".to_string());
        assert_eq!(path(None, &home), Some(PathBuf::from("/home/me/.pgpass")));
    }
}
