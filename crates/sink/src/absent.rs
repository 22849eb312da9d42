//! What a build without a kind of sink's cargo feature has of the part
//! that feature builds: nothing that checks its URLs. Each kind's module
//! puts this file in that part's place (`#[path]`), so the kind is still
//! listed by its scheme: `--sink` with it is refused when the run starts,
//! naming the feature, and a task whose run's settings ask for it (written
//! by a build that has it) refuses to start, so that no page is left
//! unpublished unnoticed (`SinkUrl::open`).

/// This build cannot check the kind's URLs.
pub(crate) const PARSE: Option<crate::Parse> = None;
