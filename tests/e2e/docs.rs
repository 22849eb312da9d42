//! The book's options reference (`docs/src/options.md`) is what the command
//! line's own definition renders (`layercrawl docs options`): an option added,
//! renamed or re-explained in the code shows up here until the page is
//! regenerated. `UPDATE_DOCS=1 cargo test --test e2e docs::` rewrites the page.

use std::path::Path;
use std::process::Command;

#[test]
fn the_options_reference_is_generated_from_the_cli() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_layercrawl")).args(["docs", "options"]).output().expect("run layercrawl");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rendered = String::from_utf8(out.stdout).expect("UTF-8 Markdown");
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/options.md");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&page, &rendered).expect("write docs/src/options.md");
    }
    let checked_in = std::fs::read_to_string(&page).expect("docs/src/options.md");
    assert!(
        checked_in == rendered,
        "docs/src/options.md is not what the command line renders; regenerate it with\n  \
         cargo run -- docs options > docs/src/options.md\nor\n  UPDATE_DOCS=1 cargo test --test e2e docs::"
    );
}

/// The NetworkPolicy of the task pods (`jobs/k8s/networkpolicy.yaml`)
/// excepts exactly the ranges the crawler refuses: it is what `layercrawl
/// docs network-policy` prints from the one list in the code.
/// `UPDATE_DOCS=1 cargo test --test e2e docs::` rewrites it.
#[test]
fn the_network_policy_excepts_the_crawlers_blocked_ranges() {
    let out = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(["docs", "network-policy"])
        .output()
        .expect("run layercrawl");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rendered = String::from_utf8(out.stdout).expect("UTF-8 YAML");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs/k8s/networkpolicy.yaml");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&file, &rendered).expect("write jobs/k8s/networkpolicy.yaml");
    }
    let checked_in = std::fs::read_to_string(&file).expect("jobs/k8s/networkpolicy.yaml");
    assert!(
        checked_in == rendered,
        "jobs/k8s/networkpolicy.yaml does not except the ranges the crawler refuses; it should be\n\n{rendered}\n\
         regenerate it with\n  cargo run -- docs network-policy > jobs/k8s/networkpolicy.yaml\nor\n  \
         UPDATE_DOCS=1 cargo test --test e2e docs::"
    );
    // And the policy says what the crawler does: every excepted range is
    // refused by it, and nothing it refuses is left reachable.
    let excepted: Vec<ipnet::IpNet> = checked_in
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    let policy = layercrawl::fetch::resolve::AddressPolicy::default();
    for net in &excepted {
        for ip in [net.network(), net.broadcast()] {
            assert!(policy.check(ip).is_err(), "{net} is excepted, but the crawler reaches {ip}");
        }
    }
    for range in layercrawl::fetch::resolve::ranges::BLOCKED {
        assert!(excepted.iter().any(|e| e.contains(&range.net)), "{} is refused but not excepted", range.net);
    }
}

/// The README's table of the options of `run` names options that exist,
/// with their value and default as the options reference (generated from
/// the command line, above) gives them: the table is a short list, checked
/// rather than generated, so that it can pick and explain.
#[test]
fn the_readmes_option_table_agrees_with_the_options_reference() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = std::fs::read_to_string(root.join("docs/src/options.md")).expect("docs/src/options.md");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    // `| `--flag` | `VALUE` | `default` | meaning |` rows of `layercrawl run`'s section.
    let run = reference.split("\n## ").find(|s| s.starts_with("`layercrawl run`")).expect("the run section");
    let cells = |row: &str| -> Vec<String> {
        let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
        // A `\|` inside a cell is part of it.
        inner.replace("\\|", "\u{1}").split('|').map(|c| c.trim().replace('\u{1}', "|").replace('`', "")).collect()
    };
    let options: std::collections::BTreeMap<String, (String, String)> = run
        .lines()
        .filter(|l| l.starts_with("| `--"))
        .map(|l| {
            let c = cells(l);
            (c[0].clone(), (c[1].clone(), c[2].clone()))
        })
        .collect();
    let rows: Vec<Vec<String>> = readme.lines().filter(|l| l.starts_with("| `--")).map(cells).collect();
    assert!(rows.len() >= 10, "the README's option table: {} rows", rows.len());
    for row in rows {
        let (flag, value) = row[0].split_once(' ').unwrap_or((row[0].as_str(), ""));
        let (their_value, their_default) =
            options.get(flag).unwrap_or_else(|| panic!("README: {flag} is no option of `layercrawl run`"));
        assert_eq!(value, their_value, "README: {flag}'s value");
        let default = match row[1].as_str() {
            "(required)" | "none" => "",
            "off" => "false",
            d => d,
        };
        assert_eq!(default, their_default, "README: the default of {flag}");
    }
}

/// ARCHITECTURE.md is a one-page map: at most 80 lines, and every file or
/// folder it names in backticks (`crates/store/`, `layout.rs`,
/// `tests/e2e/...`) exists: from the repository's root, under `src/`, or
/// anywhere under `src/`, `crates/` or `tests/` for a bare file name.
#[test]
fn the_architecture_page_is_one_page_and_names_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let lines = page.lines().count();
    assert!(lines <= 80, "ARCHITECTURE.md has {lines} lines: a map is one page");
    let named: Vec<&str> = page
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| (t.ends_with(".rs") || t.ends_with('/') || t.ends_with(".py")) && !t.contains(' '))
        .collect();
    assert!(named.len() >= 20, "{named:?}");
    // A bare file name (`layout.rs`, `units.rs`) is found anywhere under
    // src/, crates/ or tests/.
    let mut everywhere = Vec::new();
    let mut folders = vec![root.join("src"), root.join("crates"), root.join("tests")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).expect("read a folder") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                folders.push(path.clone());
            }
            everywhere.push(path);
        }
    }
    for name in named {
        let bare = name.trim_end_matches('/');
        let found = root.join(bare).exists()
            || root.join("src").join(bare).exists()
            || everywhere.iter().any(|p| p.ends_with(bare));
        assert!(found, "ARCHITECTURE.md names `{name}`, which does not exist");
    }
}
