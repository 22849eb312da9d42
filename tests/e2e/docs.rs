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
