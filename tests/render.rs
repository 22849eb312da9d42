//! Rendering in headless Chromium (README, "Rendering"): the test web's
//! script-built pages (`/app/`, links made by a script from a JSON answer)
//! crawled with `--render never`, `auto` and `always`, in a real Chromium
//! (Debian's, installed by scripts/chromium.sh).

mod common;

use common::{crawl_ok, read_docs, Web};
use testweb::{Farm, FarmConfig};

/// A two-site web with applications; the seeds are the applications.
fn web() -> Web {
    let cfg = FarmConfig {
        sites: 2,
        pages: 12,
        faults: false,
        apps: true,
        log_requests: true,
        seed: 31,
        ..FarmConfig::default()
    };
    let farm = Farm::start_background(cfg).expect("test web");
    let seeds: Vec<String> = ["s000", "s001"].iter().map(|s| format!("http://{s}.test/app/")).collect();
    Web::with_seeds(farm, &seeds)
}

/// Requests the web saw for `path` on the two sites.
fn asked(web: &Web, path: &str) -> usize {
    let stats = web.farm.stats();
    ["s000.test", "s001.test"]
        .iter()
        .filter_map(|h| stats.hosts.get(*h))
        .map(|h| h.log.iter().filter(|r| r.path == path).count())
        .sum()
}

#[test]
fn script_built_links_are_reached_with_auto_and_not_with_never() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let items = |docs: &[common::Doc]| docs.iter().filter(|d| d.url.contains("/app/item/")).count();

    let data = web.dir("never");
    let summary = crawl_ok(&web.run_args(&data, 1, &["--delay", "0", "--render", "never"]));
    let docs = read_docs(&data);
    assert_eq!(items(&docs), 0, "no links without scripts: {summary}");
    assert!(docs.iter().all(|d| !d.rendered));
    assert_eq!(asked(&web, "/app/app.js"), 0, "nothing but the page was asked");

    web.farm.reset_stats();
    let data = web.dir("auto");
    let args = ["--delay", "150", "--delay-factor", "0", "--render", "auto", "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    assert_eq!(items(&docs), 16, "the 8 items of each site, reached through the script's links: {summary}");
    let shells: Vec<_> = docs.iter().filter(|d| d.url.ends_with("/app/")).collect();
    assert_eq!(shells.len(), 2);
    for shell in &shells {
        assert!(shell.rendered, "{}: a script shell is rendered with auto", shell.url);
        let text = shell.text.as_deref().unwrap_or("");
        assert!(text.contains("Catalogue of site"), "the text of the DOM the script built: {text:?}");
    }
    assert!(docs.iter().filter(|d| d.url.contains("/app/item/")).all(|d| !d.rendered), "plain pages are not rendered");
    assert_eq!(summary["layers"][0]["rendered"].as_u64(), Some(2), "{summary}");
    // The script and its data came through the crawler, once per site;
    // the image and the style sheet were never asked for.
    assert_eq!((asked(&web, "/app/app.js"), asked(&web, "/app/items.json")), (2, 2));
    assert_eq!((asked(&web, "/app/logo.png"), asked(&web, "/app/app.css")), (0, 0));
    // Politeness covers the subresources: 150 ms between any two requests to a host.
    let stats = web.farm.stats();
    for h in ["s000.test", "s001.test"] {
        let gap = stats.hosts[h].min_gap_ms.expect("a gap");
        assert!(gap >= 140.0, "{h}: two requests {gap:.0} ms apart");
    }

    web.farm.reset_stats();
    let data = web.dir("always");
    let args = ["--delay", "0", "--render", "always", "--render-max", "5", "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    let rendered = docs.iter().filter(|d| d.rendered).count();
    assert_eq!(rendered, 5, "always renders every HTML page, up to the budget: {summary}");
    assert_eq!(items(&docs), 16);
}

#[test]
fn a_rule_with_render_renders_its_pages_only() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let rules = web.dir("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"catalogue\"\nurls = [\"http://s000.test/app/\"]\nrole = \"nav\"\nrender = true\n",
    )
    .expect("write the rules");
    let data = web.dir("data");
    let args = ["--delay", "0", "--rules", &rules.display().to_string(), "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    let reached =
        |site: &str| docs.iter().filter(|d| d.url.starts_with(&format!("http://{site}.test/app/item/"))).count();
    assert_eq!((reached("s000"), reached("s001")), (8, 0), "only the rule's page is rendered: {summary}");
    let rendered: Vec<&str> = docs.iter().filter(|d| d.rendered).map(|d| d.url.as_str()).collect();
    assert_eq!(rendered, ["http://s000.test/app/"]);
}

/// The processes of Chromium seen on this machine: pid, command line,
/// environment, real uid.
fn chromium_processes() -> Vec<(u32, String, String, u32)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let read = |f: &str| std::fs::read(e.path().join(f)).map(|b| String::from_utf8_lossy(&b).replace('\0', " "));
        let Ok(cmd) = read("cmdline") else { continue };
        if !cmd.contains("chromium") || !cmd.contains("remote-debugging") {
            continue;
        }
        let env = read("environ").unwrap_or_default();
        let uid = read("status")
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(u32::MAX);
        out.push((pid, cmd, env, uid));
    }
    out
}

/// The browser runs other people's scripts: it gets none of the crawler's
/// environment (where a worker keeps its store's credentials), and its
/// sandbox stays on (as root, it runs as an unprivileged user instead).
#[test]
fn chromium_gets_none_of_the_crawlers_environment_and_keeps_its_sandbox() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let data = web.dir("canary");
    let args =
        web.run_args(&data, 1, &["--delay", "0", "--render", "always", "--render-max", "4", "--chromium", &browser]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&args)
        .env("AWS_SECRET_ACCESS_KEY", "canary-4f1d2e-secret")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("crawl");
    let mut seen = std::collections::BTreeMap::new();
    while child.try_wait().expect("wait").is_none() {
        for (pid, cmd, env, uid) in chromium_processes() {
            seen.insert(pid, (cmd, env, uid));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().expect("wait").success());
    // Only this crawl's browser counts: the one started from this run's launcher.
    let ours: Vec<_> = seen.values().filter(|(cmd, _, _)| cmd.contains("--user-data-dir=/")).collect();
    assert!(!ours.is_empty(), "no Chromium process seen during the crawl");
    let canary = ours.iter().filter(|(_, env, _)| env.contains("canary-4f1d2e")).count();
    assert_eq!(canary, 0, "the crawler's secret reached Chromium's environment");
    let root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")));
    // (Chromium's child processes write their titles over their
    // environment; the browser process keeps the one it was given.)
    assert!(ours.iter().any(|(_, env, _)| env.contains("LANG=C.UTF-8") && env.contains("TMPDIR=")), "the launcher's");
    for (cmd, _, uid) in &ours {
        assert!(!cmd.contains("--no-sandbox"), "sandbox kept on: {cmd}");
        if root {
            assert_eq!(*uid, 65_534, "as root, Chromium runs as nobody: {cmd}");
        }
    }
}
