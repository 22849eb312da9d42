//! The crawl plan's columns of `doc` (`--plan`; the book, "Focused
//! crawling"): each page's `relevance` to the plan and its `role`, scored
//! by [`crate::focus::Scorer`]. Registered by the run's registry
//! ([`super::registry`]) when the run has a plan.

use std::sync::Arc;

use super::main_text::TextFormat;
use super::{Column, ColumnType, Extractor, PageInput, Value};
use crate::focus::{PageText, Plan, Scorer};
use crate::rules::Role;

/// The `relevance` and `role` columns of `doc`, for a run with a plan.
///
/// `role` is the plan's role of the page's URL (`nav` or `content`) for
/// every row with a response; `relevance` (0 to 1) is given to content
/// pages that were parsed, from their title, main text and the anchor text
/// of the best link to them (the input's `anchor`), and is null for nav
/// pages (they lead to content, their own text is not what the crawl is
/// after), errors and non-HTML.
pub struct PlanColumns {
    scorer: Arc<Scorer>,
    /// The run's `--text-format`, so the main text is computed once.
    format: TextFormat,
}

impl PlanColumns {
    #[must_use]
    pub fn new(plan: Plan, format: TextFormat) -> Self {
        Self { scorer: Arc::new(Scorer::new(plan)), format }
    }
}

impl Extractor for PlanColumns {
    fn name(&self) -> &str {
        "plan"
    }

    fn columns(&self) -> Vec<Column> {
        vec![Column::new("relevance", ColumnType::Float64), Column::new("role", ColumnType::Utf8)]
    }

    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        let role = self.scorer.plan().role(input.url.as_str());
        let relevance = match (role, input.parsed) {
            (Role::Content, Some(parsed)) => {
                let main = parsed.main_text(self.format);
                let title = parsed.page().title.as_deref();
                // The anchor text of the best link to the page counts as a
                // field of it (the plan's `weights.anchor`).
                self.scorer.relevance(&PageText { title, main_text: main.as_deref(), anchor: input.anchor })
            }
            _ => None,
        };
        out.push(relevance.map_or(Value::Null, Value::Float64));
        out.push(Value::Utf8(role.as_str().to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::ParsedPage;
    use crate::focus::parse_plan;
    use crate::parse::ParseConfig;

    /// The relevance `PlanColumns` gives a page about something else, reached
    /// by a link whose anchor names the plan's topic (or by none).
    fn relevance(weights: &str, anchor: Option<&str>) -> Option<f64> {
        let plan =
            parse_plan("plan.toml", &format!("{weights}\n[[group]]\nany = ['comet', 'asteroid']\n")).expect("plan");
        let columns = PlanColumns::new(plan, TextFormat::default());
        let url = url::Url::parse("http://s.test/garden/roses").expect("url");
        let words = "Roses want sun, water and a little patience through the summer. ".repeat(20);
        let body =
            format!("<html><head><title>Roses</title></head><body><article><p>{words}</p></article></body></html>");
        let parsed = ParsedPage::parse(body.as_bytes(), Some("text/html"), &url, &ParseConfig::default());
        let input = PageInput {
            url: &url,
            final_url: &url,
            status: 200,
            content_type: Some("text/html"),
            body: body.as_bytes(),
            parsed: Some(&parsed),
            anchor,
        };
        let mut out = Vec::new();
        columns.extract(&input, &mut out);
        match out.first() {
            Some(Value::Float64(r)) => Some(*r),
            _ => None,
        }
    }

    #[test]
    fn the_anchor_that_led_to_a_page_counts_in_its_relevance() {
        let anchor = Some("A comet seen from the garden");
        let with = relevance("", anchor).expect("scored");
        let without_weight = relevance("[weights]\nanchor = 0\n", anchor).expect("scored");
        let no_anchor = relevance("", None).expect("scored");
        assert_eq!(without_weight, 0.0, "the page's own text is about roses");
        assert_eq!(no_anchor, 0.0, "no anchor, nothing but its own text");
        // The default weights: title 0.3, main text 0.5, anchor 0.2; the
        // anchor's comet once scores ½.
        assert!((with - 0.2 * 0.5).abs() < 1e-9, "{with}");
    }
}
