//! The command line explains itself: `layercrawl run --help` states the
//! default of every option that has one (declared once, in clap's
//! attributes), and no help text cites a document the reader does not
//! have.

use std::collections::BTreeMap;
use std::process::Command;

/// Options of `run` that have no default value: required, unlimited when
/// left out, repeatable, or plain switches.
const WITHOUT_DEFAULT: &[&str] = &[
    "seeds",
    "depth",
    "job",
    "max-pages",
    "max-memory",
    "cpu-target",
    "max-pages-per-host",
    "layer-timeout",
    "resolve",
    "dns",
    "proxy",
    "proxies",
    "render-max",
    "chromium",
    // A switch: off unless given.
    "render-no-sandbox",
    "noise-patterns",
    "rules",
    "plan",
    "truth",
    "entities",
    "relations",
    "prefer-entities",
    "previous",
    "sitemaps",
    "warc",
    "sink",
    "json",
    "quiet",
    "help",
    // Scale-out: the cores of the machine, or nothing to default to.
    "workers",
    "image",
    "namespace",
    "worker-secret",
    "worker-seccomp-profile",
    "dry-run",
    "wait",
];

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_layercrawl")).args(args).output().expect("run layercrawl");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// Each option's help entry, by long flag: its line and the lines after
/// it up to the next option.
fn options(help: &str) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in help.lines() {
        let t = line.trim_start();
        let flag = t.strip_prefix("-h, ").unwrap_or(t).strip_prefix("--").filter(|_| line.starts_with(' '));
        if let Some(flag) = flag {
            entries.extend(current.take());
            let name = flag.split([' ', '=', '<']).next().unwrap_or_default().to_string();
            current = Some((name, line.to_string()));
        } else if let Some((_, text)) = current.as_mut() {
            text.push('\n');
            text.push_str(line);
        }
    }
    entries.extend(current);
    entries
}

#[test]
fn run_help_states_every_default() {
    let text = help(&["run", "--help"]);
    let entries = options(&text);
    assert!(entries.len() > 25, "too few options found in:\n{text}");
    for (flag, entry) in &entries {
        let has_default = entry.contains("[default: ");
        let expected = !WITHOUT_DEFAULT.contains(&flag.as_str());
        assert_eq!(has_default, expected, "--{flag}: default shown {has_default}, expected {expected}:\n{entry}");
    }
    for name in WITHOUT_DEFAULT {
        assert!(entries.contains_key(*name), "--{name} is not an option of run any more");
    }
    assert!(text.contains(&format!("[default: layercrawl/{}]", env!("CARGO_PKG_VERSION"))), "{text}");
}

#[test]
fn help_texts_cite_no_unknown_documents() {
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["forget", "--help"],
        &["demo", "--help"],
        &["webfarm", "--help"],
        &["export", "--help"],
    ] {
        let text = help(args);
        for cited in ["document ", "S300", "S400", "DESIGN.md", "SEEDS.md", "patent"] {
            assert!(!text.contains(cited), "{args:?} cites {cited:?}:\n{text}");
        }
    }
}
