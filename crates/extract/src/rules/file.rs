//! The rules file: TOML read with the position of every value, checked as a
//! whole (every problem reported with its line and column, not only the
//! first), and compiled into [`Rules`] (docs/src/rules.md).

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use regex::Regex;
use serde::Deserialize;
use toml::Spanned;

use super::convert::{convert, convert_exact, FieldType};
use super::xpath;
use super::{Field, LinkRules, Pattern, Role, Rule, Rules, Source, TextSource};
use crate::store::column::Value;
use crate::store::layout;

/// Field names every item dataset has already (docs/src/rules.md).
/// `rule` and `layer` are the Hive folders' keys, which readers turn into
/// columns. Compared without regard to case: SQL readers do.
pub const RESERVED: [&str; 6] = ["url", "fetched_at", "layer", "item", "_errors", "rule"];

/// One problem in a rules file, where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Why a rules file cannot be used: every problem found, in file order.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", render_problems(.file, .problems))]
pub struct RulesError {
    /// The file as the user named it.
    pub file: String,
    pub problems: Vec<Problem>,
}

/// Problems one a line, `file:line:column: message` (the rules file's and
/// the crawl plan's errors).
#[must_use]
pub fn render_problems(file: &str, problems: &[Problem]) -> String {
    let lines: Vec<String> =
        problems.iter().map(|p| format!("{file}:{}:{}: {}", p.line, p.column, p.message)).collect();
    lines.join("\n")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Spanned<String>,
    #[serde(default)]
    urls: Vec<Spanned<String>>,
    role: Option<Spanned<String>>,
    each: Option<Spanned<String>>,
    #[serde(default)]
    field: Vec<Spanned<RawField>>,
    links: Option<Spanned<RawLinks>>,
    /// Render this rule's pages in headless Chromium (docs/src/rendering.md).
    #[serde(default)]
    render: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawField {
    name: Spanned<String>,
    css: Option<Spanned<String>>,
    xpath: Option<Spanned<String>>,
    jsonld: Option<Spanned<String>>,
    regex: Option<Spanned<String>>,
    attr: Option<Spanned<String>>,
    #[serde(rename = "in")] // not a dataset: the rules file's key
    within: Option<Spanned<String>>,
    #[serde(rename = "type")]
    kind: Option<Spanned<String>>,
    format: Option<Spanned<String>>,
    #[serde(default)]
    multiple: bool,
    #[serde(default)]
    required: bool,
    default: Option<Spanned<toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLinks {
    #[serde(default)]
    follow: Vec<Spanned<String>>,
    #[serde(default)]
    deny: Vec<Spanned<String>>,
    #[serde(default)]
    scopes: Vec<Spanned<String>>,
    max_depth: Option<Spanned<i64>>,
}

/// Collects problems with their positions while a TOML file is checked
/// (the rules file, the crawl plan).
pub struct Check<'a> {
    text: &'a str,
    pub problems: Vec<Problem>,
}

impl<'a> Check<'a> {
    /// No problem yet in `text`.
    #[must_use]
    pub fn new(text: &'a str) -> Self {
        Self { text, problems: Vec::new() }
    }

    /// A problem at the value that starts at `span`.
    pub fn at(&mut self, span: Range<usize>, message: impl Into<String>) {
        let (line, column) = line_column(self.text, span.start);
        self.problems.push(Problem { line, column, message: message.into() });
    }
}

/// The problem of a file that is not TOML (or not of the expected shape),
/// where the parser saw it.
#[must_use]
pub fn syntax_problem(text: &str, e: &toml::de::Error) -> Problem {
    let (line, column) = line_column(text, e.span().map_or(0, |s| s.start));
    Problem { line, column, message: e.message().trim().to_string() }
}

/// Problems as JSON (`rules check --json`, `plan check --json`).
#[must_use]
pub fn problems_json(problems: &[Problem]) -> Vec<serde_json::Value> {
    problems.iter().map(|p| serde_json::json!({"line": p.line, "column": p.column, "message": p.message})).collect()
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
#[must_use]
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Reads and compiles the rules in `text`, which came from `file`.
///
/// # Errors
/// Every problem in the file, each with its line and column: TOML syntax,
/// unknown keys, missing or conflicting keys, selectors, expressions and
/// patterns that do not compile, types and defaults that do not fit.
pub fn parse_rules(file: &str, text: &str) -> Result<Rules, RulesError> {
    let raw: RawFile = toml::from_str(text)
        .map_err(|e| RulesError { file: file.to_string(), problems: vec![syntax_problem(text, &e)] })?;
    let mut check = Check::new(text);
    if raw.rule.is_empty() {
        check.at(0..0, "no rule: add a `[[rule]]` table with a `name`, `urls` and fields");
    }
    let mut names = HashSet::new();
    let mut list = Vec::new();
    for r in raw.rule {
        let span = r.span();
        if let Some(rule) = compile_rule(&mut check, r.into_inner(), span, &mut names) {
            list.push(rule);
        }
    }
    if check.problems.is_empty() {
        Ok(Rules { list, file: file.to_string(), text: text.to_string() })
    } else {
        check.problems.sort_by_key(|p| (p.line, p.column));
        Err(RulesError { file: file.to_string(), problems: check.problems })
    }
}

fn compile_rule(check: &mut Check<'_>, r: RawRule, span: Range<usize>, names: &mut HashSet<String>) -> Option<Rule> {
    let before = check.problems.len();
    let name = r.name.get_ref().clone();
    if !valid_rule_name(&name) {
        check.at(
            r.name.span(),
            format!(
                "rule name `{name}`: use lower-case letters, digits, `_` and `-` (it names the folder `{}/`)",
                layout::items_dataset(&name)
            ),
        );
    } else if !names.insert(name.clone()) {
        check.at(r.name.span(), format!("a second rule named `{name}`: rule names must be unique"));
    }
    if r.urls.is_empty() {
        check.at(span.start..span.start, format!("rule `{name}` has no `urls`: list the URL patterns of its pages"));
    }
    let urls = patterns(check, &r.urls);
    let role = match r.role.as_ref().map(|s| s.get_ref().as_str()) {
        None | Some("content") => Role::Content,
        Some("nav") => Role::Nav,
        Some(other) => {
            let at = r.role.as_ref().map_or(span.clone(), Spanned::span);
            check.at(
                at,
                format!(
                    "role `{other}`: use `content` (pages that make items) or `nav` (pages that only lead to others)"
                ),
            );
            Role::Content
        }
    };
    match role {
        Role::Nav if !r.field.is_empty() => check.at(
            r.field[0].span(),
            format!("rule `{name}` is a `nav` rule: its pages make no items, so it takes no fields (make it `content`, or move the fields to a rule of its own)"),
        ),
        Role::Content if r.field.is_empty() => check.at(
            span.start..span.start,
            format!("rule `{name}` has no `[[rule.field]]`: a `content` rule makes items from fields (or say `role = \"nav\"`)"),
        ),
        _ => {}
    }
    if let (Role::Nav, Some(each)) = (role, &r.each) {
        check.at(each.span(), format!("rule `{name}` is a `nav` rule: `each` makes items, which nav pages do not; drop it or make the rule `content`"));
    }
    let each = r.each.as_ref().and_then(|s| css(check, s));
    let mut field_names = HashSet::new();
    let mut fields = Vec::new();
    for f in r.field {
        let fspan = f.span();
        if let Some(field) = compile_field(check, f.into_inner(), fspan, &mut field_names, each.is_some()) {
            fields.push(field);
        }
    }
    let links = r.links.map(|l| compile_links(check, l.into_inner()));
    let each_text = r.each.map(Spanned::into_inner);
    let render = r.render;
    (check.problems.len() == before).then(|| Rule { name, urls, role, each, each_text, fields, links, render })
}

fn valid_rule_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn valid_field_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= 64
}

fn compile_field(
    check: &mut Check<'_>,
    f: RawField,
    span: Range<usize>,
    names: &mut HashSet<String>,
    per_item: bool,
) -> Option<Field> {
    let before = check.problems.len();
    let name = f.name.get_ref().clone();
    if !valid_field_name(&name) {
        check.at(
            f.name.span(),
            format!("field name `{name}`: use letters, digits and `_`, starting with a letter (it is a column name)"),
        );
    } else if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
        check.at(
            f.name.span(),
            format!("field name `{name}` is a column every item has already ({}); pick another", RESERVED.join(", ")),
        );
    } else if !names.insert(name.to_ascii_lowercase()) {
        check.at(
            f.name.span(),
            format!(
                "a second field named `{name}` in this rule (names are compared without regard to case, as SQL does)"
            ),
        );
    }
    let kind = match &f.kind {
        None => FieldType::String,
        Some(k) => FieldType::parse(k.get_ref()).unwrap_or_else(|| {
            check.at(k.span(), format!("type `{}`: use string, int, float, bool, date, datetime or url", k.get_ref()));
            FieldType::String
        }),
    };
    let selectors = [f.css.is_some(), f.xpath.is_some(), f.jsonld.is_some()].iter().filter(|&&s| s).count();
    if selectors > 1 {
        check.at(span.clone(), format!("field `{name}`: give one of `css`, `xpath` or `jsonld`, not several"));
    }
    let filter = f.regex.as_ref().and_then(|r| regex(check, r));
    let source = if let Some(s) = &f.css {
        css(check, s).map(Source::Css)
    } else if let Some(s) = &f.xpath {
        match xpath::compile(s.get_ref()) {
            Ok(x) => Some(Source::XPath(Arc::new(x))),
            Err(e) => {
                check.at(s.span(), format!("XPath `{}`: {e}", s.get_ref()));
                None
            }
        }
    } else if let Some(s) = &f.jsonld {
        let path: Vec<String> = s.get_ref().split('.').map(str::to_string).collect();
        if path.iter().any(String::is_empty) {
            check.at(s.span(), format!("JSON-LD path `{}`: dotted keys, e.g. `Product.offers.price`", s.get_ref()));
            None
        } else {
            Some(Source::JsonLd(path))
        }
    } else if f.regex.is_some() {
        let within = match f.within.as_ref().map(|s| s.get_ref().as_str()) {
            None | Some("text") => TextSource::Text,
            Some("html") => TextSource::Html,
            Some("url") => TextSource::Url,
            Some(other) => {
                let at = f.within.as_ref().map_or(span.clone(), Spanned::span);
                check.at(at, format!("`in = \"{other}\"`: a regex runs over `text` (the page's visible text, the default), `html` or `url`"));
                TextSource::Text
            }
        };
        Some(Source::Regex(within))
    } else {
        check.at(span.clone(), format!("field `{name}` has no selector: give `css`, `xpath`, `jsonld` or a `regex`"));
        None
    };
    if let Some(w) = &f.within {
        if f.css.is_some() || f.xpath.is_some() || f.jsonld.is_some() {
            check.at(
                w.span(),
                "`in` says what a lone `regex` reads; with a selector, the regex reads the selected value",
            );
        }
    }
    if let Some(a) = &f.attr {
        if f.css.is_none() {
            check.at(a.span(), "`attr` goes with `css` (in XPath, select the attribute: `//a/@href`)");
        }
    }
    if let Some(fmt) = &f.format {
        if !matches!(kind, FieldType::Date | FieldType::DateTime) {
            check.at(fmt.span(), format!("`format` is for date and datetime fields; `{name}` is {}", kind.name()));
        }
    }
    if per_item && matches!(source, Some(Source::JsonLd(_) | Source::Regex(_))) {
        // Allowed: page-level values repeated on every item of the page.
    }
    if f.required && f.default.is_some() {
        let at = f.default.as_ref().map_or(span.clone(), Spanned::span);
        check.at(
            at,
            format!("field `{name}` is required and has a default: a default means it is never missing; drop one"),
        );
    }
    let default = f
        .default
        .as_ref()
        .and_then(|d| default_value(check, d, kind, f.format.as_ref().map(|s| s.get_ref().as_str()), f.multiple));
    let source = source?;
    let selector = [&f.css, &f.xpath, &f.jsonld, &f.regex]
        .into_iter()
        .find_map(|s| s.as_ref().map(|s| s.get_ref().clone()))
        .unwrap_or_default();
    (check.problems.len() == before).then(|| Field {
        name,
        source,
        selector,
        attr: f.attr.map(Spanned::into_inner),
        filter,
        kind,
        format: f.format.map(Spanned::into_inner),
        multiple: f.multiple,
        required: f.required,
        default,
    })
}

/// A default, converted to the field's type as the file is read, so that a
/// default that does not fit fails here and not on the first page.
fn default_value(
    check: &mut Check<'_>,
    d: &Spanned<toml::Value>,
    kind: FieldType,
    format: Option<&str>,
    multiple: bool,
) -> Option<Value> {
    let base = url::Url::parse("http://rules.invalid/").ok()?;
    let text = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Datetime(t) => t.to_string(),
        other => other.to_string(),
    };
    // A TOML number is a number as written; a string is read as a page's text.
    let one = |v: &toml::Value| match v {
        toml::Value::Integer(_) | toml::Value::Float(_) => convert_exact(&text(v), kind, format, &base),
        _ => convert(&text(v), kind, format, &base),
    };
    let value = if multiple {
        let toml::Value::Array(items) = d.get_ref() else {
            check.at(d.span(), "the default of a `multiple` field is an array, e.g. `default = []`");
            return None;
        };
        let mut values = Vec::new();
        for item in items {
            match one(item) {
                Ok(v) => values.push(v),
                Err(e) => {
                    check.at(d.span(), format!("default: {e}"));
                    return None;
                }
            }
        }
        super::list_value(kind, values)
    } else {
        match one(d.get_ref()) {
            Ok(v) => v,
            Err(e) => {
                check.at(d.span(), format!("default: {e}"));
                return None;
            }
        }
    };
    Some(value)
}

fn compile_links(check: &mut Check<'_>, l: RawLinks) -> LinkRules {
    let max_depth = l.max_depth.as_ref().and_then(|d| match u32::try_from(*d.get_ref()) {
        Ok(v) => Some(v),
        Err(_) => {
            check.at(d.span(), format!("max_depth {}: a layer number, 0 or more", d.get_ref()));
            None
        }
    });
    LinkRules {
        follow: patterns(check, &l.follow),
        deny: patterns(check, &l.deny),
        scopes: l.scopes.iter().filter_map(|s| css(check, s)).collect(),
        max_depth,
    }
}

fn patterns(check: &mut Check<'_>, raw: &[Spanned<String>]) -> Vec<Pattern> {
    raw.iter()
        .filter_map(|p| match Pattern::new(p.get_ref()) {
            Ok(pattern) => Some(pattern),
            Err(e) => {
                check.at(p.span(), e);
                None
            }
        })
        .collect()
}

fn css(check: &mut Check<'_>, s: &Spanned<String>) -> Option<Arc<scraper::Selector>> {
    match scraper::Selector::parse(s.get_ref()) {
        Ok(sel) => Some(Arc::new(sel)),
        Err(e) => {
            // scraper's message for some errors is a generic first line and
            // the kind's name on the second: keep the useful line.
            let text = e.to_string();
            let why = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("not a valid selector").trim();
            check.at(s.span(), format!("CSS selector `{}`: {why}", s.get_ref()));
            None
        }
    }
}

fn regex(check: &mut Check<'_>, s: &Spanned<String>) -> Option<Regex> {
    match Regex::new(s.get_ref()) {
        Ok(re) if re.captures_len() > 2 => {
            check.at(s.span(), format!("regex `{}` has {} groups: use one capture group for the value (or none for the whole match; `(?:…)` groups without capturing)", s.get_ref(), re.captures_len() - 1));
            None
        }
        Ok(re) => Some(re),
        Err(e) => {
            check.at(s.span(), format!("regex: {}", first_line_of_error(&e)));
            None
        }
    }
}

/// The regex crate's error spans several lines with a caret drawing; the
/// last line says what is wrong.
fn first_line_of_error(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or(&text).trim().trim_start_matches("error: ").to_string()
}
