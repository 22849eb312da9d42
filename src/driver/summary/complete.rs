//! The summary's completeness: the URLs within the depth that a limit (a
//! page budget, the layer timeout) left unrequested, and the table's last
//! line that says so (docs/src/politeness.md, "Retries and failing hosts").

use super::RunSummary;
use crate::store::dataset::IN;
use crate::store::layout;

impl RunSummary {
    /// The input of a catch-up layer that a page budget (`why`) left
    /// unfetched: `n` URLs within the depth (the last layer's carried ones
    /// among them), kept in `in/layer=L`.
    pub(crate) fn not_requested_in(&mut self, layer: u32, n: u64, why: &str) {
        let carried = self.not_requested;
        self.not_requested = n.max(carried);
        *self.not_requested_by.entry(why.to_string()).or_default() += self.not_requested - carried;
        self.not_requested_in = layout::layer_dir(IN.name, layer);
    }

    /// The table's last line: whether every URL found within the depth was
    /// requested, and if not, how many were not, why, and where they are.
    #[must_use]
    pub fn completeness(&self) -> String {
        if self.not_requested == 0 {
            return format!("complete: every URL found within depth {} was requested (0 not requested)", self.depth);
        }
        let why: Vec<String> = self.not_requested_by.iter().map(|(k, v)| format!("{v} by {}", limit_name(k))).collect();
        format!(
            "INCOMPLETE: {} URLs found within depth {} were not requested ({}); they are kept in {}/{}; raise the limit for the next run, or run with --depth {} to fetch them (docs/src/politeness.md, \"Retries and failing hosts\")",
            self.not_requested,
            self.depth,
            why.join(", "),
            self.data,
            self.not_requested_in,
            self.depth + 1
        )
    }
}

/// The option behind a `not_requested` reason.
fn limit_name(reason: &str) -> String {
    match reason {
        "layer-timeout" | "max-pages" | "max-pages-per-host" => format!("--{reason}"),
        "unreadable" => "an unreadable temporary file".into(),
        other => other.into(),
    }
}
