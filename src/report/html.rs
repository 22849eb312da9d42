//! The page: `report.html` with its script (`report.js`) and the figures
//! (JSON) put inside it, so the one file opens anywhere, offline.

use super::data::ReportData;
use super::ReportError;

/// The page's markup and style; `{{SCRIPT}}`, `{{DATA}}` and `{{TITLE}}` are filled in.
const PAGE: &str = include_str!("report.html");
/// The page's code: charts, tables and graph views, no library.
const SCRIPT: &str = include_str!("report.js");

/// A rendered page.
pub(super) struct Page {
    pub page: String,
    /// Bytes of the embedded figures.
    pub data_bytes: usize,
}

/// The figures as JSON that is safe inside a `<script>` element: `<`, `>`
/// and `&` only occur inside JSON strings, where their `\u` escapes mean
/// the same, so no `</script>` or comment opener can appear.
fn embeddable_json(data: &ReportData) -> Result<String, ReportError> {
    let json = serde_json::to_string(data).map_err(|e| ReportError::Internal(format!("encoding the figures: {e}")))?;
    let mut out = String::with_capacity(json.len() + json.len() / 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    Ok(out)
}

fn escape_text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The page of `data`.
///
/// # Errors
/// When the figures cannot be encoded (a bug).
pub(super) fn render(data: &ReportData) -> Result<Page, ReportError> {
    let json = embeddable_json(data)?;
    let data_bytes = json.len();
    let title = escape_text(&format!("layercrawl report: {}", data.data));
    let page = fill(PAGE, &[("TITLE", &title), ("DATA", &json), ("SCRIPT", SCRIPT)]);
    Ok(Page { page, data_bytes })
}

/// `template` with each `{{NAME}}` replaced by its value, in one pass: a
/// value is never searched for placeholders itself.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match after.find("}}").and_then(|end| values.iter().find(|(k, _)| *k == &after[..end]).map(|(_, v)| (end, v))) {
            Some((end, v)) => {
                out.push_str(v);
                rest = &after[end + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_cannot_close_their_script_element() {
        let data = ReportData { data: "</script><!-- & >".into(), ..ReportData::default() };
        let page = render(&data).expect("render");
        let json =
            page.page.split("id=\"report-data\">").nth(1).and_then(|s| s.split("</script>").next()).expect("data");
        let back: serde_json::Value = serde_json::from_str(json).expect("the embedded figures are JSON");
        assert_eq!(back["data"], "</script><!-- & >");
        assert!(!page.page.contains("{{DATA}}") && !page.page.contains("{{SCRIPT}}"));
        assert_eq!(fill("a{{X}}b{{Y}}{{", &[("X", "{{Y}}"), ("Y", "2")]), "a{{Y}}b2{{");
        assert!(!page.page.contains("src=\"http") && !page.page.contains("href=\"http"), "nothing from the network");
    }
}
