//! The main text of documentation pages, before and after a change:
//! `EXTRACT_EVAL_DOCS=on cargo bench --bench extract_eval`.
//!
//! The evaluation set is news, blogs and company pages. A rule that leaves
//! out what looks like furniture there (what follows an article's body, a
//! short line that is mostly a link) can take a reference page's last
//! sections or its signatures, and neither the set nor the hand-labelled
//! sample of `benches/boilerplate/labels.toml` (first and last paragraphs)
//! sees much of that (docs/src/main-text.md, "Tuning and held-out pages").
//! So this compares whole pages: 60 pages of each site of the real-site
//! corpus (`scripts/realsites.tsv`, the sites `scripts/realsites.sh` has
//! installed; the same pages on every run, chosen by a hash of their path),
//! through the crawl's own pass and [`main_text`], written one file per
//! page under `target/extract-eval/docs/`. When
//! `target/extract-eval/docs-before/` holds a run of other code, it prints
//! per site the pages whose main text changed and the characters of lines
//! lost and gained, then examples of lines lost. To check a change: run it
//! on the code before, rename `docs` to `docs-before`, run it on the
//! change.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use layercrawl::extract::main_text::{main_text, TextFormat};
use layercrawl::parse::{parse_html, ParseConfig};

/// Pages taken from each site.
const PER_SITE: usize = 60;
/// Lines lost printed per site.
const EXAMPLES: usize = 6;

/// Every `.html` file under `dir`, by path.
fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            html_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html") {
            out.push(p);
        }
    }
}

/// Runs the comparison (see the module's comment).
pub fn compare(root: &Path, fnv1a: fn(&str) -> u64) {
    let sites = std::fs::read_to_string(root.join("scripts/realsites.tsv")).expect("scripts/realsites.tsv");
    let out_dir = root.join("target/extract-eval/docs");
    let before_dir = root.join("target/extract-eval/docs-before");
    let _ = std::fs::remove_dir_all(&out_dir);
    let url = url::Url::parse("http://docs.test/").expect("a URL");
    let config = ParseConfig::default();
    let comparing = before_dir.is_dir();
    if comparing {
        println!(
            "| site | pages | main text changed | characters lost | characters gained |\n|---|---:|---:|---:|---:|"
        );
    } else {
        println!("| site | pages | characters of main text |\n|---|---:|---:|");
    }
    let mut examples: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut installed = 0;
    for line in sites.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let (name, dir) = (f[0], Path::new(f[2]));
        let mut files = Vec::new();
        html_files(dir, &mut files);
        if files.is_empty() {
            continue;
        }
        installed += 1;
        let rel = |p: &Path| p.strip_prefix(dir).unwrap_or(p).display().to_string();
        files.sort_by_key(|p| (fnv1a(&rel(p)), rel(p)));
        let (mut changed, mut lost, mut gained, mut chars) = (0, 0, 0, 0);
        for path in files.iter().take(PER_SITE) {
            let bytes = std::fs::read(path).expect("a page");
            let page = parse_html(&bytes, Some("text/html"), &url, &config);
            let text = main_text(&page.structure, TextFormat::Plain).unwrap_or_default();
            let file = format!("{name}/{}.txt", rel(path).replace('/', "__"));
            let target = out_dir.join(&file);
            std::fs::create_dir_all(target.parent().expect("a directory")).expect("mkdir");
            std::fs::write(&target, &text).expect("write a main text");
            chars += text.chars().count();
            let Ok(before) = std::fs::read_to_string(before_dir.join(&file)) else { continue };
            if before == text {
                continue;
            }
            changed += 1;
            let now: HashSet<&str> = text.lines().collect();
            let was: HashSet<&str> = before.lines().collect();
            for l in before.lines().filter(|l| !now.contains(l)) {
                lost += l.chars().count();
                let ex = examples.entry(name.to_string()).or_default();
                if ex.len() < EXAMPLES {
                    ex.push(format!("{}: {}", rel(path), l.chars().take(100).collect::<String>()));
                }
            }
            gained += text.lines().filter(|l| !was.contains(l)).map(|l| l.chars().count()).sum::<usize>();
        }
        let pages = files.len().min(PER_SITE);
        if comparing {
            println!("| {name} | {pages} | {changed} | {lost} | {gained} |");
        } else {
            println!("| {name} | {pages} | {chars} |");
        }
    }
    if installed == 0 {
        println!("no site of scripts/realsites.tsv is installed: run scripts/realsites.sh first");
        return;
    }
    if !comparing {
        println!(
            "\nwrote {}; nothing to compare with: rename it to docs-before, change the code, run again",
            out_dir.display()
        );
        return;
    }
    for (site, lines) in examples {
        println!("\nlines lost on {site}:");
        for l in lines {
            println!("  {l}");
        }
    }
}
