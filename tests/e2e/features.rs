//! A flag whose cargo feature this build lacks is refused before anything
//! runs, with one line naming the feature and the command that builds it,
//! and exit code 2 (docs/src/features.md). Each case runs only in a build
//! without its feature.

use crate::common;

use std::path::Path;

/// Runs `layercrawl run` on a one-URL seeds file with `flags` added.
#[allow(dead_code)]
fn run_with(dir: &Path, flags: &[&str]) -> std::process::Output {
    let seeds = dir.join("seeds.txt");
    std::fs::write(&seeds, "http://127.0.0.1:9/\n").expect("seeds");
    let data = dir.join("data");
    let mut args =
        vec!["run", "--seeds", seeds.to_str().expect("utf8"), "--depth", "1", "--data", data.to_str().expect("utf8")];
    args.extend_from_slice(flags);
    common::layercrawl(&args)
}

/// The command failed with exit code 2 and the one-line message for `what`
/// and `feature`.
#[allow(dead_code)]
fn assert_refused(out: &std::process::Output, what: &str, feature: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = format!(
        "error: {what} needs the \"{feature}\" feature: cargo build --release --features {feature} (or --features full)"
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end(), line, "one line naming the feature and the command");
}

#[cfg(not(feature = "render"))]
#[test]
fn render_is_refused_without_the_render_feature() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for value in ["always", "auto"] {
        let out = run_with(tmp.path(), &["--render", value]);
        assert_refused(&out, &format!("--render {value}"), "render");
    }
}

#[cfg(not(feature = "kubernetes"))]
#[test]
fn the_kubernetes_executor_is_refused_without_the_kubernetes_feature() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run_with(tmp.path(), &["--executor", "kubernetes", "--image", "layercrawl:1"]);
    assert_refused(&out, "--executor kubernetes", "kubernetes");
}

#[cfg(not(feature = "learned"))]
#[test]
fn the_learned_order_is_refused_without_the_learned_feature() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run_with(tmp.path(), &["--order", "learned"]);
    assert_refused(&out, "--order learned", "learned");
}

#[cfg(not(feature = "kafka"))]
#[test]
fn the_kafka_sink_is_refused_without_the_kafka_feature() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = run_with(tmp.path(), &["--sink", "kafka://127.0.0.1:9092/crawl"]);
    assert_refused(&out, "--sink", "kafka");
}

#[cfg(not(feature = "sql"))]
#[test]
fn an_sql_export_is_refused_without_the_sql_feature() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = tmp.path().join("crawl.db");
    for to in [format!("sqlite:{}", db.display()), "postgres://me@127.0.0.1:5432/crawl".to_string()] {
        let out = common::layercrawl(&["export", "--data", tmp.path().to_str().expect("utf8"), "--to", &to]);
        assert_refused(&out, "layercrawl export", "sql");
    }
    assert!(!db.exists(), "no database file is made");
}
