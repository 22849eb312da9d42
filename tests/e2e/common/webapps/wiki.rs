//! DokuWiki's truth, from its data folder (pages, attic, changelogs).
//!
//! Content items: a page as it is now (`page:ID`, shown by `doku.php?id=ID`,
//! by `?rev=` its current revision, and by its source views `do=edit` and
//! `do=export_raw`/`do=export_xhtml`), and each older revision
//! (`rev:ID@TIME`, `doku.php?id=ID&rev=TIME` and its source views). Views:
//! revision lists, diffs, backlinks, the index, recent changes, the media
//! manager, search, and a page that does not exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::param;

struct Page {
    /// Times of the revisions that have a text (deletions have none).
    revs: BTreeSet<i64>,
    /// The current revision's time, when the page exists.
    current: Option<i64>,
}

pub struct Wiki {
    start: String,
    pages: BTreeMap<String, Page>,
    pub items: BTreeSet<String>,
}

/// DokuWiki's cleanID, as far as this wiki's ids need: lower case, no
/// leading or trailing separators, spaces to underscores.
fn clean_id(id: &str) -> String {
    id.trim().trim_matches(':').to_lowercase().replace(' ', "_")
}

impl Wiki {
    /// Reads the data folder `data` (the prepared one or a copy).
    pub fn load(data: &Path) -> Wiki {
        let mut pages = BTreeMap::new();
        let meta = data.join("meta");
        for e in std::fs::read_dir(&meta).unwrap_or_else(|e| panic!("{}: {e}", meta.display())) {
            let p = e.expect("a folder entry").path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
            let Some(id) = name.strip_suffix(".changes") else { continue };
            if id.starts_with('_') {
                continue; // _dokuwiki.changes: every page's lines again
            }
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let mut revs = BTreeSet::new();
            let mut last = None;
            for line in text.lines() {
                let f: Vec<&str> = line.split('\t').collect();
                let Some(t) = f.first().and_then(|t| t.parse::<i64>().ok()) else { continue };
                if f.get(2) != Some(&"D") {
                    revs.insert(t);
                }
                last = Some((t, f.get(2) != Some(&"D")));
            }
            let exists = data.join(format!("pages/{id}.txt")).exists();
            let current = last.filter(|(_, alive)| *alive && exists).map(|(t, _)| t);
            pages.insert(id.to_string(), Page { revs, current });
        }
        let mut items = BTreeSet::new();
        for (id, p) in &pages {
            if p.current.is_some() {
                items.insert(format!("page:{id}"));
            }
            for t in p.revs.iter().filter(|t| Some(**t) != p.current) {
                items.insert(format!("rev:{id}@{t}"));
            }
        }
        Wiki { start: "summary".into(), pages, items }
    }

    pub fn item(&self, u: &url::Url) -> Option<String> {
        if !matches!(u.path(), "/" | "/doku.php") {
            return None;
        }
        let id = param(u, "id").map(|i| clean_id(&i)).filter(|i| !i.is_empty()).unwrap_or_else(|| self.start.clone());
        let action = param(u, "do").unwrap_or_default();
        if !matches!(action.as_str(), "" | "show" | "edit" | "export_raw" | "export_xhtml") {
            return None;
        }
        let page = self.pages.get(&id)?;
        match param(u, "rev").and_then(|r| r.parse::<i64>().ok()).filter(|r| *r != 0) {
            Some(r) if Some(r) == page.current => Some(format!("page:{id}")),
            Some(r) => page.revs.contains(&r).then(|| format!("rev:{id}@{r}")),
            None => page.current.map(|_| format!("page:{id}")),
        }
    }
}
