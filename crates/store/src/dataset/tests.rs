use std::path::{Path, PathBuf};

use super::*;

#[test]
fn names_are_distinct_folders_and_no_schema_has_a_layer_column() {
    for (i, d) in ALL.iter().enumerate() {
        assert!(!d.name.is_empty() && !d.name.contains('/') && !d.name.contains('='), "{}", d.name);
        assert!(ALL[..i].iter().all(|e| e.name != d.name), "{} twice", d.name);
        // The layer is the Hive folder's (store::schema's header says why).
        if let Some(schema) = d.schema {
            assert!(schema().field_with_name("layer").is_err(), "{} has a layer column", d.name);
        }
        assert_eq!(d.merge == Merge::No, d.count == Count::No, "{}: merged rows are counted", d.name);
    }
}

/// The book's page on the output lists every dataset's folder.
#[test]
fn the_output_page_lists_every_dataset() {
    let page = repo().join("docs/src/output.md");
    let page = std::fs::read_to_string(&page).expect("docs/src/output.md");
    for d in ALL {
        assert!(page.contains(&format!("\ndata/{}/", d.name)), "docs/src/output.md does not list data/{}/", d.name);
    }
}

/// The repository's root (this crate sits in `crates/store`).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A string literal of a Rust source: its line, its text as written
/// (escapes left as they are), and whether a `:` follows it (a key of a
/// `json!` object, not a value).
struct Literal {
    line: usize,
    text: String,
    key: bool,
}

/// The string literals of `src`, comments skipped: `//` and nested `/* */`,
/// `r#"…"#` raw strings, byte and C strings, and `'"'` (a char, not a
/// string's start) told from a lifetime.
fn literals(src: &str) -> Vec<Literal> {
    let b = src.as_bytes();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(b[i] == b'\n');
                        i += 1;
                    }
                }
                continue;
            }
            b'\'' => {
                // A char literal ('x', '\n', '"'), or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i += 3;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                } else if let Some(c) = src[i + 1..].chars().next() {
                    if src[i + 1 + c.len_utf8()..].starts_with('\'') {
                        i += 1 + c.len_utf8();
                    }
                }
            }
            b'"' | b'r' | b'b' | b'c' if i == 0 || !ident(b[i - 1]) => {
                let mut j = i;
                while j < b.len() && matches!(b[j], b'b' | b'c') && j < i + 1 {
                    j += 1;
                }
                let raw = b.get(j) == Some(&b'r');
                if raw {
                    j += 1;
                }
                let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
                if b.get(j + hashes) != Some(&b'"') || (!raw && hashes > 0) {
                    // An identifier (`r`, `b`, `return`, …).
                    while i < b.len() && ident(b[i]) {
                        i += 1;
                    }
                    continue;
                }
                let (start, first) = (j + hashes + 1, line);
                let mut k = start;
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                while k < b.len() && !b[k..].starts_with(&close) {
                    if !raw && b[k] == b'\\' {
                        k += 1;
                    }
                    line += usize::from(b.get(k) == Some(&b'\n'));
                    k += 1;
                }
                let text = src[start..k].to_string();
                i = k + close.len();
                let rest = src[i..].trim_start();
                let key = rest.starts_with(':') && !rest.starts_with("::");
                out.push(Literal { line: first, text, key });
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether `text` names the dataset `name`: it is the name, or holds it as
/// a path's folder (`name/…`, `…/name/…`).
fn names(text: &str, name: &str) -> bool {
    text == name
        || text.match_indices(&format!("{name}/")).any(|(at, _)| {
            text[..at].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.')))
        })
}

/// Every `.rs` file under `dir` but tests' files (`tests.rs`, `tests/`).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or_default();
        if path.is_dir() && file != "tests" {
            sources(&path, out);
        } else if file.ends_with(".rs") && file != "tests.rs" {
            out.push(path);
        }
    }
}

/// Where a line says a word is not a dataset's name, though it is spelled
/// as one (an option `--entities`, a CSS class `in`).
const NOT_A_DATASET: &str = "// not a dataset";

/// A dataset's name is written once in the sources (the binary's `src/`
/// and every crawler crate's under `crates/`), in its row of [`ALL`]: everything
/// else takes it from there, so a dataset is added or renamed in one place
/// (docs/src/contributing.md, "Adding a dataset"). Tests may spell paths
/// out; a `json!` key is no dataset; a word that only looks like one says
/// so on its line.
#[test]
fn a_datasets_name_is_written_only_in_its_row() {
    let root = repo();
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    for krate in std::fs::read_dir(root.join("crates")).expect("crates/") {
        let krate = krate.expect("an entry").path();
        let src = krate.join("src");
        // The test web is a test fixture, not the crawler: it may spell paths out.
        if src.is_dir() && !krate.ends_with("testweb") {
            sources(&src, &mut files);
        }
    }
    files.sort();
    assert!(files.len() > 100, "found {} files under {}", files.len(), root.display());
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
        if rel == "crates/store/src/dataset.rs" {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file");
        // A file's unit tests sit at its bottom (docs/src/contributing.md).
        let code = text.find("#[cfg(test)]\nmod tests").map_or(text.as_str(), |at| &text[..at]);
        let lines: Vec<&str> = code.lines().collect();
        for lit in literals(code) {
            let marked = lines.get(lit.line - 1).is_some_and(|l| l.contains(NOT_A_DATASET));
            if lit.key || marked {
                continue;
            }
            for d in ALL {
                if names(&lit.text, d.name) {
                    found.push(format!("{rel}:{}: {:?} names the dataset `{}`", lit.line, lit.text, d.name));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a dataset's name is written only in crates/store/src/dataset.rs; take it from there \
         (`store::dataset::DOC.name`, `layout::shard(…)`), or mark a word that is no \
         dataset with `{NOT_A_DATASET}: why` on its line:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_sees_literals_not_comments() {
    let src = "// \"doc\"\n/* \"doc\" /* \"doc\" */ */ let c = '\"'; let a = \"in\";\n\
               let r = r#\"x \"links/layer=0\" y\"#; f(b\"warc\"); json!({\"items\": 1}); x::<'a>(\"a\\\"b\")";
    let got: Vec<(usize, String, bool)> = literals(src).into_iter().map(|l| (l.line, l.text, l.key)).collect();
    assert_eq!(
        got,
        [
            (2, "in".to_string(), false),
            (3, "x \"links/layer=0\" y".to_string(), false),
            (3, "warc".to_string(), false),
            (3, "items".to_string(), true),
            (3, "a\\\"b".to_string(), false),
        ]
    );
    assert!(names("in", "in") && names("in/layer=1", "in") && names("'{}/doc/*/*.parquet'", "doc"));
    assert!(!names("main", "in") && !names("http://a.test/docs/", "doc") && !names("plugin/x", "in"));
}
