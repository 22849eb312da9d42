//! Applying a rule to one page: its items (typed values, with the reasons
//! of any that are missing or did not convert) and which of its links are
//! followed.

use std::cell::OnceCell;
use std::collections::HashSet;

use scraper::ElementRef;
use serde_json::Value as Json;
use url::Url;

use super::convert::{convert, convert_exact};
use super::xpath::{self, XDoc};
use super::{list_value, Field, Role, Rule, Source, TextSource};
use crate::extract::ParsedPage;
use crate::store::column::Value;
use crate::urlnorm::UrlPolicy;

/// The items one page gave under one rule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PageItems {
    /// The rule's index in the file.
    pub rule: usize,
    pub items: Vec<Item>,
}

/// One item: a value per field of the rule (null when missing), and why
/// any value is missing or null.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Item {
    /// Its position among the page's items (rules with `each`).
    pub index: Option<i32>,
    pub values: Vec<Value>,
    pub errors: Vec<String>,
}

/// What the page's shared parse gives a rule, each part built on first use.
struct PageView<'p, 'a> {
    page: &'p ParsedPage<'a>,
    final_url: &'p Url,
    xdoc: OnceCell<XDoc<'p>>,
    json_ld: OnceCell<Vec<Json>>,
}

impl<'p, 'a> PageView<'p, 'a> {
    fn xdoc(&self) -> &XDoc<'p> {
        self.xdoc.get_or_init(|| XDoc::new(self.page.dom()))
    }

    fn json_ld(&self) -> &[Json] {
        self.json_ld.get_or_init(|| {
            self.page.page().structure.meta.json_ld.iter().filter_map(|s| serde_json::from_str(s).ok()).collect()
        })
    }
}

impl Rule {
    /// The items of `page` (none for a `nav` rule).
    #[must_use]
    pub fn items(&self, index: usize, page: &ParsedPage<'_>, final_url: &Url) -> PageItems {
        let mut out = PageItems { rule: index, items: Vec::new() };
        if self.role == Role::Nav {
            return out;
        }
        let view = PageView { page, final_url, xdoc: OnceCell::new(), json_ld: OnceCell::new() };
        match &self.each {
            None => out.items.push(self.item(&view, None, None)),
            Some(each) => {
                for (i, el) in page.dom().select(each).enumerate() {
                    out.items.push(self.item(&view, Some(el), Some(i32::try_from(i).unwrap_or(i32::MAX))));
                }
            }
        }
        out
    }

    fn item(&self, view: &PageView<'_, '_>, within: Option<ElementRef<'_>>, index: Option<i32>) -> Item {
        let mut item = Item { index, values: Vec::with_capacity(self.fields.len()), errors: Vec::new() };
        for f in &self.fields {
            let (value, errors) = f.value(view, within);
            item.values.push(value);
            item.errors.extend(errors);
        }
        item
    }

    /// Which of `links` (the page's outlinks, absolute and normalised) this
    /// rule lets the crawl follow from a page at `depth`; `None` when the
    /// rule says nothing about links.
    #[must_use]
    pub fn link_decision(
        &self,
        page: Option<&ParsedPage<'_>>,
        final_url: &Url,
        depth: i32,
        policy: &UrlPolicy,
    ) -> Option<LinkDecision<'_>> {
        let l = self.links.as_ref()?;
        let too_deep = l.max_depth.is_some_and(|m| i64::from(depth) >= i64::from(m));
        let scoped = (!l.scopes.is_empty()).then(|| {
            let mut inside = HashSet::new();
            if let Some(page) = page {
                let dom = page.dom();
                let base = base_url(dom, final_url);
                let mut scopes = HashSet::new();
                for scope in &l.scopes {
                    scopes.extend(dom.select(scope).map(|el| el.id()));
                }
                // One walk of the tree, however the scopes nest: `open`
                // counts the scope elements the walk is inside.
                let mut open = 0usize;
                for edge in dom.tree.root().traverse() {
                    match edge {
                        ego_tree::iter::Edge::Open(node) => {
                            open += usize::from(scopes.contains(&node.id()));
                            let href = match node.value() {
                                scraper::Node::Element(e) if open > 0 && matches!(e.name(), "a" | "area") => {
                                    e.attr("href")
                                }
                                _ => None,
                            };
                            if let Some(u) = href.and_then(|h| policy.resolve_link(&base, h)) {
                                inside.insert(u.to_string());
                            }
                        }
                        ego_tree::iter::Edge::Close(node) => open -= usize::from(scopes.contains(&node.id())),
                    }
                }
            }
            inside
        });
        Some(LinkDecision { too_deep, scoped, rule: self })
    }
}

/// A rule's verdict on the links of one page.
pub struct LinkDecision<'r> {
    too_deep: bool,
    /// The links inside the rule's scopes, when it has scopes.
    scoped: Option<HashSet<String>>,
    rule: &'r Rule,
}

impl LinkDecision<'_> {
    /// Whether the link to `url` is followed.
    #[must_use]
    pub fn follows(&self, url: &str) -> bool {
        let Some(l) = &self.rule.links else { return true };
        !self.too_deep
            && !l.deny.iter().any(|p| p.matches(url))
            && (l.follow.is_empty() || l.follow.iter().any(|p| p.matches(url)))
            && self.scoped.as_ref().is_none_or(|inside| inside.contains(url))
    }
}

/// The page's `<base href>` resolved against its URL, else its URL.
fn base_url(dom: &scraper::Html, final_url: &Url) -> Url {
    static BASE: std::sync::LazyLock<Option<scraper::Selector>> =
        std::sync::LazyLock::new(|| scraper::Selector::parse("base[href]").ok());
    BASE.as_ref()
        .and_then(|sel| dom.select(sel).next())
        .and_then(|b| b.value().attr("href"))
        .and_then(|h| final_url.join(h.trim()).ok())
        // As the parse does: a `javascript:` or `data:` base is no base.
        .filter(|b| matches!(b.scheme(), "http" | "https"))
        .unwrap_or_else(|| final_url.clone())
}

impl Field {
    /// This field's value in one item, and the reasons it is missing or
    /// null, each prefixed by the field's name.
    fn value(&self, view: &PageView<'_, '_>, within: Option<ElementRef<'_>>) -> (Value, Vec<String>) {
        let mut errors = Vec::new();
        let raw = match self.raw(view, within) {
            Ok(raw) => raw,
            Err(e) => {
                errors.push(format!("{}: {e}", self.name));
                Vec::new()
            }
        };
        let want = if self.multiple { raw.len() } else { raw.len().min(1) };
        let mut values = Vec::with_capacity(want);
        for r in raw.iter().take(want) {
            // JSON-LD values are written by a machine: numbers as written.
            let converted = if matches!(self.source, Source::JsonLd(_)) { convert_exact } else { convert };
            match converted(r, self.kind, self.format.as_deref(), view.final_url) {
                Ok(v) => values.push(v),
                Err(e) => errors.push(format!("{}: {e}", self.name)),
            }
        }
        if raw.is_empty() && errors.is_empty() {
            if let Some(d) = &self.default {
                return (d.clone(), errors);
            }
            if self.required {
                errors.push(format!("{}: required, but nothing matched ({})", self.name, self.describe()));
            }
            return (Value::Null, errors);
        }
        let value = if self.multiple {
            if values.is_empty() {
                Value::Null
            } else {
                list_value(self.kind, values)
            }
        } else {
            values.pop().unwrap_or(Value::Null)
        };
        (value, errors)
    }

    /// What the source matched, as text, before conversion; filtered by the
    /// field's regex when it has a selector.
    fn raw(&self, view: &PageView<'_, '_>, within: Option<ElementRef<'_>>) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        match &self.source {
            Source::Css(sel) => {
                let pick = |el: ElementRef<'_>| match &self.attr {
                    Some(a) => el.value().attr(a).map(collapse),
                    None => Some(collapse(&el.text().collect::<String>())),
                };
                // Lazily: a single-valued field stops at its first value,
                // not at the end of the page.
                match within {
                    Some(el) => self.keep(el.select(sel).filter_map(pick), &mut out),
                    None => self.keep(view.page.dom().select(sel).filter_map(pick), &mut out),
                }
            }
            Source::XPath(x) => self.keep(xpath::eval_strings(view.xdoc(), x, within)?.into_iter(), &mut out),
            Source::JsonLd(path) => self.keep(json_ld_values(view.json_ld(), path).into_iter(), &mut out),
            Source::Regex(over) => {
                let text = match over {
                    TextSource::Text => view.page.page().text.as_str(),
                    TextSource::Html => view.page.html(),
                    TextSource::Url => view.final_url.as_str(),
                };
                return Ok(self.filter.as_ref().map(|re| matches(re, text, self.multiple)).unwrap_or_default());
            }
        }
        Ok(out)
    }

    /// Pushes the non-empty values of `found` onto `out`, through the
    /// field's regex when it has one: all of them, or the first.
    fn keep(&self, found: impl Iterator<Item = String>, out: &mut Vec<String>) {
        for s in found.filter(|s| !s.is_empty()) {
            match &self.filter {
                Some(re) => out.extend(matches(re, &s, false)),
                None => out.push(s),
            }
            if !self.multiple && !out.is_empty() {
                return;
            }
        }
    }

    fn describe(&self) -> String {
        match &self.source {
            Source::Css(_) => "its css selector".into(),
            Source::XPath(_) => "its xpath".into(),
            Source::JsonLd(path) => format!("JSON-LD `{}`", path.join(".")),
            Source::Regex(_) => "its regex".into(),
        }
    }
}

/// The matches of `re` in `text` (its first capture group when it has one),
/// every one or the first.
fn matches(re: &regex::Regex, text: &str, all: bool) -> Vec<String> {
    let mut out = Vec::new();
    for caps in re.captures_iter(text) {
        let m = caps.get(1).or_else(|| caps.get(0));
        if let Some(m) = m {
            let s = m.as_str().trim();
            if !s.is_empty() {
                out.push(s.to_string());
                if !all {
                    break;
                }
            }
        }
    }
    out
}

/// Whitespace runs collapsed to one space, trimmed.
fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// The values at `path` in the page's JSON-LD documents. The first key,
/// when some object has it as its `@type`, picks the objects of that type
/// (anywhere: top level, `@graph`, nested); otherwise the path starts at
/// the top-level objects. Arrays on the way are walked through. A value
/// that is an object gives its `name` (a `Brand`, a `Person`), else `@id`.
fn json_ld_values(docs: &[Json], path: &[String]) -> Vec<String> {
    let Some((first, rest)) = path.split_first() else { return Vec::new() };
    let mut typed = Vec::new();
    for d in docs {
        collect_typed(d, first, &mut typed);
    }
    let (starts, keys): (Vec<&Json>, &[String]) = if typed.is_empty() {
        let mut tops = Vec::new();
        for d in docs {
            match d {
                Json::Array(items) => tops.extend(items.iter()),
                Json::Object(o) => match o.get("@graph") {
                    Some(Json::Array(items)) => tops.extend(items.iter()),
                    _ => tops.push(d),
                },
                _ => {}
            }
        }
        (tops, path)
    } else {
        (typed, rest)
    };
    let mut current = starts;
    for key in keys {
        let mut next = Vec::new();
        for v in current {
            match v {
                Json::Object(o) => {
                    if let Some(x) = o.get(key) {
                        flatten(x, &mut next);
                    }
                }
                Json::Array(items) => {
                    for item in items {
                        if let Some(x) = item.as_object().and_then(|o| o.get(key)) {
                            flatten(x, &mut next);
                        }
                    }
                }
                _ => {}
            }
        }
        current = next;
    }
    let mut out = Vec::new();
    for v in current {
        match v {
            Json::String(s) => out.push(collapse(s)),
            Json::Number(n) => out.push(n.to_string()),
            Json::Bool(b) => out.push(b.to_string()),
            Json::Object(o) => {
                if let Some(s) = o.get("name").or_else(|| o.get("@id")).and_then(Json::as_str) {
                    out.push(collapse(s));
                }
            }
            _ => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

fn flatten<'j>(v: &'j Json, out: &mut Vec<&'j Json>) {
    match v {
        Json::Array(items) => out.extend(items.iter()),
        other => out.push(other),
    }
}

/// Every object under `v` whose `@type` is `ty` (or lists it).
fn collect_typed<'j>(v: &'j Json, ty: &str, out: &mut Vec<&'j Json>) {
    match v {
        Json::Object(o) => {
            let is = match o.get("@type") {
                Some(Json::String(t)) => t == ty,
                Some(Json::Array(ts)) => ts.iter().any(|t| t.as_str() == Some(ty)),
                _ => false,
            };
            if is {
                out.push(v);
                return;
            }
            for x in o.values() {
                collect_typed(x, ty, out);
            }
        }
        Json::Array(items) => {
            for x in items {
                collect_typed(x, ty, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
pub(super) fn json_ld_for_tests(docs: &[Json], path: &[&str]) -> Vec<String> {
    let path: Vec<String> = path.iter().map(|s| (*s).to_string()).collect();
    json_ld_values(docs, &path)
}
