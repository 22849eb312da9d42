//! Text edits of a rules file (a field appended to a rule, the file's own
//! formatting and comments kept) and the HTML the editor's frame shows.

use serde_json::Value as Json;
use url::Url;

/// `text` with `field` (`{"name", "css"|"xpath"|"jsonld"|"regex", "attr",
/// "type", "multiple", "required"}`) appended as a `[[rule.field]]` table
/// at the end of rule `rule`'s section. Everything else, comments too, is
/// kept as written.
///
/// # Errors
/// No rule of that name, or a field without a name or a selector.
pub fn add_field(text: &str, rule: &str, field: &Json) -> Result<String, String> {
    let name = field["name"].as_str().filter(|n| !n.is_empty()).ok_or("the field needs a name")?;
    let sources = ["css", "xpath", "jsonld", "regex"];
    let (key, selector) = sources
        .iter()
        .find_map(|k| field[*k].as_str().filter(|v| !v.trim().is_empty()).map(|v| (*k, v)))
        .ok_or("the field needs a css selector (click an element), an xpath, a jsonld path or a regex")?;
    let (start, end) = rule_section(text, rule).ok_or_else(|| format!("no rule named `{rule}` in the file"))?;
    let mut block = format!("\n[[rule.field]]\nname = {}\n{key} = {}\n", quote(name), quote(selector));
    if let Some(attr) = field["attr"].as_str().filter(|a| !a.trim().is_empty()) {
        block.push_str(&format!("attr = {}\n", quote(attr.trim())));
    }
    if let Some(ty) = field["type"].as_str().filter(|t| !t.is_empty() && *t != "string") {
        block.push_str(&format!("type = {}\n", quote(ty)));
    }
    for flag in ["multiple", "required"] {
        if field[flag].as_bool() == Some(true) {
            block.push_str(&format!("{flag} = true\n"));
        }
    }
    // After the section's last line that is not blank or a comment: the
    // comments just before the next `[[rule]]` describe that rule.
    let section = &text[start..end];
    let mut keep = 0;
    let mut at = 0;
    for line in section.split_inclusive('\n') {
        at += line.len();
        let t = line.trim();
        if !t.is_empty() && !t.starts_with('#') {
            keep = at - (line.len() - line.trim_end().len());
        }
    }
    let mut out = String::with_capacity(text.len() + block.len() + 2);
    out.push_str(&text[..start + keep]);
    out.push('\n');
    out.push_str(&block);
    let rest = &text[start + keep..];
    if rest.trim().is_empty() {
        // The file's end: one newline, as written above.
    } else {
        out.push('\n');
        out.push_str(rest.trim_start_matches(['\n', '\r', ' ', '\t']));
    }
    Ok(out)
}

/// Whether `line` is a `[[rule]]` header (`[[ rule ]]`, a comment after it).
fn is_rule_header(line: &str) -> bool {
    let t = line.trim_start();
    let Some(rest) = t.strip_prefix("[[") else { return false };
    let Some((name, after)) = rest.split_once("]]") else { return false };
    name.trim() == "rule" && after.trim().split('#').next().is_some_and(str::is_empty)
}

/// A TOML basic string.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// Byte range of rule `name`'s section: from its `[[rule]]` header to the
/// next `[[rule]]` header or the end.
fn rule_section(text: &str, name: &str) -> Option<(usize, usize)> {
    let mut headers = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if is_rule_header(line) {
            headers.push(at);
        }
        at += line.len();
    }
    for (i, &start) in headers.iter().enumerate() {
        let end = headers.get(i + 1).copied().unwrap_or(text.len());
        let section = &text[start..end];
        // The rule's own `name`: before the first sub-table header.
        let own = section.split_inclusive('\n').skip(1).take_while(|l| !l.trim_start().starts_with('['));
        let named = own
            .filter_map(|l| l.trim().strip_prefix("name"))
            .filter_map(|r| r.trim_start().strip_prefix('='))
            .any(|v| {
                toml::from_str::<toml::Table>(&format!("v = {}", v.trim()))
                    .ok()
                    .and_then(|t| t.get("v").and_then(|x| x.as_str().map(str::to_string)))
                    .as_deref()
                    == Some(name)
            });
        if named {
            return Some((start, end));
        }
    }
    None
}

/// The page's HTML for the editor's frame: a `<base>` so relative links and
/// images resolve against the page, and no meta refresh (a script-free way
/// to navigate the frame away).
#[must_use]
pub fn framed_html(html: &str, url: &Url) -> String {
    let href = url.as_str().replace('&', "&amp;").replace('"', "&quot;");
    let base = format!("<base href=\"{href}\">");
    let lower = html.to_ascii_lowercase();
    let mut out = String::with_capacity(html.len() + base.len());
    let insert_at = lower.find("<head").and_then(|h| lower[h..].find('>').map(|e| h + e + 1)).unwrap_or(0);
    let mut last = 0;
    let mut search = 0;
    let mut inserted = false;
    while let Some(pos) = lower[search..].find("<meta").map(|p| p + search) {
        let end = tag_end(&lower, pos);
        let tag = &lower[pos..end];
        if !inserted && insert_at <= pos {
            out.push_str(&html[last..insert_at]);
            out.push_str(&base);
            last = insert_at;
            inserted = true;
        }
        if tag.contains("http-equiv") && tag.contains("refresh") {
            out.push_str(&html[last..pos]);
            last = end;
        }
        search = end;
    }
    if !inserted {
        out.push_str(&html[last..insert_at.max(last)]);
        out.push_str(&base);
        last = insert_at.max(last);
    }
    out.push_str(&html[last..]);
    out
}

/// The byte after the `>` that ends the tag starting at `start`, quoted
/// attribute values skipped (`content="0;url=/a>b"` does not end it).
fn tag_end(html: &str, start: usize) -> usize {
    let mut quote = None;
    for (i, b) in html.bytes().enumerate().skip(start) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return i + 1,
            _ => {}
        }
    }
    html.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# my rules\n[[rule]]\nname = \"product\"\nurls = [\"**/product/*\"]\n\n[[rule.field]]\nname = \"title\"\ncss = \"h1\"\n\n[rule.links]\nscopes = [\".related\"]\n\n# Listings: the second rule.\n[[ rule ]]# the second\nname = \"listing\"\nurls = [\"**/products*\"]\nrole = \"nav\"\n";

    #[test]
    fn a_field_lands_at_the_end_of_its_rule_and_the_rest_is_kept() {
        let field = serde_json::json!({"name": "price", "css": ".buy-box .price", "type": "float", "multiple": false, "required": true});
        let out = add_field(FILE, "product", &field).expect("added");
        let rules = crate::rules::parse_rules("f", &out).expect("still valid");
        let product = &rules.list[0];
        assert_eq!(product.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["title", "price"]);
        assert!(product.fields[1].required && product.links.is_some());
        assert_eq!(rules.list[1].name, "listing");
        assert!(out.starts_with("# my rules\n") && out.contains("[[ rule ]]# the second\n"), "{out}");
        assert!(
            out.contains("required = true\n\n# Listings: the second rule.\n[[ rule ]]"),
            "the comment stays with its rule: {out}"
        );
        assert!(
            out.contains(
                "[[rule.field]]\nname = \"price\"\ncss = \".buy-box .price\"\ntype = \"float\"\nrequired = true\n"
            ),
            "{out}"
        );
        let last = add_field(FILE, "listing", &serde_json::json!({"name": "n", "css": "a \"q\""})).expect("added");
        assert!(last.ends_with("[[rule.field]]\nname = \"n\"\ncss = 'a \"q\"'\n"), "{last}");
        assert!(add_field(FILE, "nope", &field).is_err());
        assert!(add_field(FILE, "product", &serde_json::json!({"name": "x"})).is_err());
    }

    #[test]
    fn the_frame_gets_a_base_and_loses_meta_refresh() {
        let url = Url::parse("http://a.test/p?x=1&y=2").expect("url");
        let html = "<html><HEAD><meta charset=utf-8><meta http-equiv=\"Refresh\" content=\"0; url=/away\"><title>t</title></head><body>b</body></html>";
        let out = framed_html(html, &url);
        assert!(out.contains("<HEAD><base href=\"http://a.test/p?x=1&amp;y=2\"><meta charset=utf-8><title>"), "{out}");
        assert!(!out.to_ascii_lowercase().contains("refresh"), "{out}");
        assert!(framed_html("<p>bare</p>", &url).starts_with("<base href="));
        let quoted =
            "<head><meta content=\"0;url=https://away.test/?a>b\" http-equiv=\"refresh\"><title>t</title></head>";
        let out = framed_html(quoted, &url);
        assert!(!out.contains("refresh") && !out.contains("away.test") && out.contains("<title>t</title>"), "{out}");
    }
}
