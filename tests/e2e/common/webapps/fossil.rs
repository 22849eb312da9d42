//! Fossil's truth, from its repository (check-ins and the files of each).
//!
//! Content items: a check-in (`checkin:HASH`, its comment and its change,
//! shown by `/info/H`, `/ci/H` and `/vinfo/H` with any of their display
//! options), and a file's version (`file:PATH@HASH`, shown by
//! `/file?name=PATH&ci=C`, `/file/PATH?ci=C`, `/raw?name=PATH&ci=C`,
//! `/doc/C/PATH`, at any check-in C that holds it, and by `/artifact/H`,
//! `/info/H` and `/raw/H` of its artifact). Views: the timeline in all its
//! forms, file and folder listings, file histories (`/finfo`), annotations
//! and blame, diffs and patches between check-ins, hex dumps, tags, branches,
//! statistics, search.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use super::{decode, param};

pub struct Repo {
    tip: String,
    checkins: BTreeSet<String>,
    /// Each check-in's files: path -> artifact hash.
    trees: HashMap<String, HashMap<String, String>>,
    /// Each file artifact's paths.
    artifacts: BTreeMap<String, BTreeSet<String>>,
    pub items: BTreeSet<String>,
}

/// `query`'s rows, tab-separated, from `fossil sql` over `repo`.
fn sql(repo: &Path, query: &str) -> Vec<Vec<String>> {
    use std::io::Write;
    let mut child = std::process::Command::new("fossil")
        .args(["sql", "--readonly", "-R"])
        .arg(repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run fossil sql (scripts/webapps.sh installs Fossil)");
    let mut stdin = child.stdin.take().expect("piped stdin");
    write!(stdin, ".mode tabs\n{query};\n").expect("write to fossil sql");
    drop(stdin);
    let out = child.wait_with_output().expect("fossil sql");
    assert!(out.status.success(), "fossil sql {query}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

impl Repo {
    /// Reads the repository file `repo`.
    pub fn load(repo: &Path) -> Repo {
        let cis = "FROM event e JOIN blob b ON b.rid = e.objid WHERE e.type = 'ci'";
        let ordered = sql(repo, &format!("SELECT b.uuid {cis} ORDER BY e.mtime"));
        let checkins: BTreeSet<String> = ordered.iter().filter_map(|r| r.first().cloned()).collect();
        let tip = ordered.last().and_then(|r| r.first().cloned()).expect("the repository has check-ins");
        let mut trees: HashMap<String, HashMap<String, String>> = HashMap::new();
        let mut artifacts: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut items: BTreeSet<String> = checkins.iter().map(|c| format!("checkin:{c}")).collect();
        let files = "SELECT b.uuid, f.filename, f.uuid FROM event e JOIN blob b ON b.rid = e.objid, \
                     files_of_checkin(b.uuid) f WHERE e.type = 'ci'";
        for row in sql(repo, files) {
            let [ci, path, hash] = <[String; 3]>::try_from(row).expect("three columns");
            items.insert(format!("file:{path}@{hash}"));
            artifacts.entry(hash.clone()).or_default().insert(path.clone());
            trees.entry(ci).or_default().insert(path, hash);
        }
        Repo { tip, checkins, trees, artifacts, items }
    }

    /// The check-in or file artifact a name gives: a hash or its unique
    /// prefix (Fossil's links use 10 to 16 digits); `tip`, `trunk`, `main`
    /// and `current` are the tip.
    fn resolve(&self, name: &str) -> Option<Named> {
        if matches!(name, "tip" | "trunk" | "main" | "current") {
            return Some(Named::Checkin(self.tip.clone()));
        }
        let name = name.to_ascii_lowercase();
        if name.len() < 4 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let c: Vec<&String> =
            self.checkins.range(name.clone()..).take_while(|c| c.starts_with(&name)).take(2).collect();
        let a: Vec<&String> =
            self.artifacts.range(name.clone()..).map(|(a, _)| a).take_while(|a| a.starts_with(&name)).take(2).collect();
        match (c.as_slice(), a.as_slice()) {
            ([one], []) => Some(Named::Checkin((*one).clone())),
            ([], [one]) => Some(Named::File((*one).clone())),
            _ => None,
        }
    }

    fn checkin(&self, name: Option<&str>) -> Option<String> {
        match self.resolve(name.unwrap_or("tip"))? {
            Named::Checkin(c) => Some(c),
            Named::File(_) => None,
        }
    }

    /// The item of file `path` at check-in `ci`.
    fn file_at(&self, path: &str, ci: Option<&str>) -> Option<String> {
        let hash = self.trees.get(&self.checkin(ci)?)?.get(path)?;
        Some(format!("file:{path}@{hash}"))
    }

    /// The item of a file artifact, named by the first of its paths.
    fn artifact(&self, hash: &str) -> Option<String> {
        let path = self.artifacts.get(hash)?.first()?;
        Some(format!("file:{path}@{hash}"))
    }

    pub fn item(&self, u: &url::Url) -> Option<String> {
        let segs: Vec<String> = u.path_segments()?.map(decode).filter(|s| !s.is_empty()).collect();
        let page = segs.first()?.as_str();
        let rest = segs.get(1..).unwrap_or_default().join("/");
        let name = if rest.is_empty() { param(u, "name") } else { Some(rest.clone()) };
        match page {
            "info" | "ci" | "vinfo" | "artifact" | "raw" => match self.resolve(name.as_deref()?) {
                Some(Named::Checkin(c)) if matches!(page, "info" | "ci" | "vinfo") => Some(format!("checkin:{c}")),
                Some(Named::File(h)) => self.artifact(&h),
                // /raw?name=PATH&ci=C and /artifact?name=PATH&ci=C: a path.
                None if matches!(page, "raw" | "artifact") && rest.is_empty() => {
                    self.file_at(&name?, param(u, "ci").as_deref())
                }
                _ => None,
            },
            "file" => self.file_at(&name?, param(u, "ci").as_deref()),
            "doc" => {
                let (ci, path) = rest.split_once('/')?;
                self.file_at(path, Some(ci))
            }
            _ => None,
        }
    }
}

enum Named {
    Checkin(String),
    File(String),
}
