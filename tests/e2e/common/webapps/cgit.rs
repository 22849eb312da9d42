//! cgit over the pinned history: its configuration, and its truth from git.
//!
//! Content items: a commit (`commit:SHA`, its message and its change, shown
//! whole by `commit/?id=SHA` and `patch/?id=SHA`), and a file's version
//! (`file:PATH@BLOB`, shown by `tree/PATH?id=C`, `plain/PATH?id=C` and
//! `blob/PATH?id=C` at any commit C whose tree holds that blob at PATH: the
//! same file at a commit that did not change it is a copy; and by
//! `blob/PATH?id=BLOB`). Everything else
//! is a view: the summary, refs, log pages and their offsets, stats, tree
//! listings of folders, diffs, and commit pages limited to a path.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use super::{decode, param, run};

/// cgit's configuration for the repository at `repo`: the views a public
/// cgit shows (summary, refs, log with offsets, tree, blob, plain, commit,
/// diff, patch, stats), no cache, no snapshots, no clone URLs.
pub fn config(repo: &Path) -> String {
    format!(
        "css=/cgit.css\nlogo=/cgit.png\nvirtual-root=/\ncache-size=0\nrobots=index, follow\n\
         root-title=layercrawl repositories\nroot-desc=A MapReduce-style layered batch web crawler\n\
         enable-index-links=1\nenable-commit-graph=1\nenable-log-filecount=1\nenable-log-linecount=1\n\
         enable-http-clone=0\nmax-stats=quarter\nmax-commit-count=50\nnoplainemail=1\nsnapshots=\n\
         repo.url=layercrawl\nrepo.path={}\nrepo.desc=A MapReduce-style layered batch web crawler\n\
         repo.owner=layercrawl\nrepo.defbranch=main\n",
        repo.display()
    )
}

/// An entry of a commit's tree: a blob (a file) or a tree (a folder).
struct Entry {
    blob: bool,
    sha: String,
}

/// The repository as git sees it.
pub struct Repo {
    tip: String,
    commits: BTreeSet<String>,
    /// Each commit's tree, every path in it (folders too).
    trees: HashMap<String, HashMap<String, Entry>>,
    pub items: BTreeSet<String>,
}

impl Repo {
    /// Reads the bare repository at `git_dir` (its `main`).
    pub fn load(git_dir: &Path) -> Repo {
        let g = git_dir.display().to_string();
        let tip = run("git", &["-C", &g, "rev-parse", "main"]).trim().to_string();
        let commits: BTreeSet<String> =
            run("git", &["-C", &g, "rev-list", "main"]).lines().map(str::to_string).collect();
        let mut trees = HashMap::new();
        let mut items: BTreeSet<String> = commits.iter().map(|c| format!("commit:{c}")).collect();
        for c in &commits {
            let mut tree = HashMap::new();
            for line in run("git", &["-C", &g, "ls-tree", "-r", "-t", "--full-tree", c]).lines() {
                // "MODE TYPE SHA\tPATH"
                let Some((meta, path)) = line.split_once('\t') else { continue };
                let f: Vec<&str> = meta.split(' ').collect();
                let blob = f.get(1) == Some(&"blob");
                let sha = f.get(2).copied().unwrap_or_default().to_string();
                if blob {
                    items.insert(format!("file:{path}@{sha}"));
                }
                tree.insert(path.to_string(), Entry { blob, sha });
            }
            trees.insert(c.clone(), tree);
        }
        Repo { tip, commits, trees, items }
    }

    /// The commit that a revision parameter names: none given is the tip,
    /// as is the branch; else a commit's hash or its unique prefix.
    fn commit(&self, rev: Option<&str>) -> Option<&str> {
        match rev {
            None | Some("") | Some("main") | Some("HEAD") | Some("refs/heads/main") => Some(&self.tip),
            Some(r) if r.len() >= 4 && r.bytes().all(|b| b.is_ascii_hexdigit()) => {
                let mut m = self.commits.range(r.to_string()..).take_while(|c| c.starts_with(r));
                let first = m.next()?;
                m.next().is_none().then_some(first.as_str())
            }
            Some(_) => None,
        }
    }

    pub fn item(&self, u: &url::Url) -> Option<String> {
        let segs: Vec<String> = u.path_segments()?.map(decode).collect();
        if segs.first().map(String::as_str) != Some("layercrawl") {
            return None;
        }
        let view = segs.get(1).map(String::as_str).unwrap_or("");
        let path =
            segs.get(2..).unwrap_or_default().iter().filter(|s| !s.is_empty()).cloned().collect::<Vec<_>>().join("/");
        let rev = param(u, "id").or_else(|| param(u, "h"));
        match view {
            "commit" | "patch" if path.is_empty() => Some(format!("commit:{}", self.commit(rev.as_deref())?)),
            // cgit's blob view also takes the blob's own hash as `id`.
            "blob" if rev.as_deref().is_some_and(|r| self.items.contains(&format!("file:{path}@{r}"))) => {
                Some(format!("file:{path}@{}", rev?))
            }
            "tree" | "plain" | "blob" if !path.is_empty() => {
                let e = self.trees.get(self.commit(rev.as_deref())?)?.get(&path)?;
                e.blob.then(|| format!("file:{path}@{}", e.sha))
            }
            _ => None,
        }
    }
}
