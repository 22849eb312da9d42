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
