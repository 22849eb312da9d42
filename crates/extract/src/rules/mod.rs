//! Rules: typed fields by CSS selector, XPath, regex or JSON-LD path per URL
//! pattern, and outlink rules (docs/src/rules.md).
//!
//! A rules file ([`file`]) lists rules; the first rule whose URL patterns
//! match a page's final URL applies to it. A `content` rule makes items
//! from the page (one per page, or one per element its `each` selector
//! matches), which the map stage writes to the rule's own dataset
//! `items/rule=NAME/layer=L/` ([`items`]); a `nav` rule makes none, its
//! pages only lead to others. Either may say which of the page's links are
//! followed ([`LinkRules`]).
//!
//! Rules run in extraction, on the page's one parse: the selectors
//! read the DOM that extractors share (built once per page, and only for
//! pages a rule matches), the regexes the pass's text, the JSON-LD paths
//! the pass's JSON-LD.

mod apply;
pub mod convert;
pub mod file;
pub mod items;
pub mod show;
pub mod xpath;

use std::sync::Arc;

use regex::Regex;

pub use apply::{LinkDecision, PageItems};
pub use convert::FieldType;
pub use file::{parse_rules, RulesError};

use crate::store::column::Value;
pub use crate::urlnorm::Pattern;

/// A compiled rules file. Cheap to share (`Arc`), used by every parse worker.
#[derive(Debug)]
pub struct Rules {
    pub list: Vec<Rule>,
    /// The file as the user named it, and its text (what the run's settings
    /// carry to units of work run elsewhere).
    pub file: String,
    pub text: String,
}

impl Rules {
    /// The index and rule of the first rule matching `url`.
    #[must_use]
    pub fn matching(&self, url: &str) -> Option<(usize, &Rule)> {
        self.list.iter().enumerate().find(|(_, r)| r.urls.iter().any(|p| p.matches(url)))
    }
}

impl Rule {
    /// Whether applying it reads the page's DOM (CSS, XPath, `each`, link
    /// scopes), so the parse should build one.
    #[must_use]
    pub fn needs_dom(&self) -> bool {
        self.each.is_some()
            || self.links.as_ref().is_some_and(|l| !l.scopes.is_empty())
            || self.fields.iter().any(|f| matches!(f.source, Source::Css(_) | Source::XPath(_)))
    }
}

/// What a rule made of one page, for `layercrawl rules test` and the
/// rule editor: the same work the map stage does for a crawled page.
#[derive(Debug)]
pub struct Applied<'r> {
    pub rule: &'r Rule,
    pub items: PageItems,
    /// The page's links (absolute, normalised), each with whether the rule
    /// lets the crawl follow it.
    pub links: Vec<(String, bool)>,
}

impl Rules {
    /// Applies the first rule matching `final_url` to a page body, as a
    /// crawl at `depth` would; `None` when no rule matches or the body is
    /// not HTML.
    #[must_use]
    pub fn apply(
        &self,
        final_url: &url::Url,
        content_type: Option<&str>,
        body: &[u8],
        depth: i32,
        cfg: &crate::parse::ParseConfig,
    ) -> Option<Applied<'_>> {
        let (index, rule) = self.matching(final_url.as_str())?;
        if !crate::parse::is_html(content_type, body) {
            return None;
        }
        let page = if rule.needs_dom() {
            crate::extract::ParsedPage::parse_with_dom(body, content_type, final_url, cfg)
        } else {
            crate::extract::ParsedPage::parse(body, content_type, final_url, cfg)
        };
        let items = rule.items(index, &page, final_url);
        let decision = rule.link_decision(Some(&page), final_url, depth, &cfg.urls);
        let links = page
            .page()
            .links
            .iter()
            .map(|l| {
                let url = l.url.to_string();
                let follows = decision.as_ref().is_none_or(|d| d.follows(&url));
                (url, follows)
            })
            .collect();
        Some(Applied { rule, items, links })
    }
}

/// What a matched page is for (the producer/consumer split of a crawl plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Its pages make items.
    Content,
    /// Its pages only lead to others (lists, searches, pagination).
    Nav,
}

impl Role {
    /// The name the rules file uses.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Content => "content",
            Self::Nav => "nav",
        }
    }
}

/// One rule of the file.
#[derive(Debug)]
pub struct Rule {
    pub name: String,
    pub urls: Vec<Pattern>,
    pub role: Role,
    /// One item per element this selects; none: one item per page.
    pub each: Option<Arc<scraper::Selector>>,
    /// `each` as written.
    pub each_text: Option<String>,
    pub fields: Vec<Field>,
    pub links: Option<LinkRules>,
    /// `render = true`: the rule's pages are rendered in headless Chromium
    /// whatever `--render` says.
    pub render: bool,
}

/// One field of a rule: where its value comes from and its type.
#[derive(Debug)]
pub struct Field {
    pub name: String,
    pub source: Source,
    /// The selector, XPath, JSON-LD path or regex as written.
    pub selector: String,
    /// With `css`: the attribute to read instead of the element's text.
    pub attr: Option<String>,
    /// With a selector: keeps what it matches of each value (its one
    /// capture group, or the whole match); alone: the value's source.
    pub filter: Option<Regex>,
    pub kind: FieldType,
    /// A `strptime` format for date and datetime fields.
    pub format: Option<String>,
    pub multiple: bool,
    pub required: bool,
    /// Already of the field's type (checked when the file is read).
    pub default: Option<Value>,
}

/// Where a field's raw values come from.
#[derive(Debug)]
pub enum Source {
    Css(Arc<scraper::Selector>),
    XPath(Arc<xpath::XPath>),
    /// Dotted keys into the page's JSON-LD; a first key that is an `@type`
    /// picks the objects of that type (`Product.offers.price`).
    JsonLd(Vec<String>),
    /// The field's `regex` over the page's text, HTML or URL.
    Regex(TextSource),
}

/// What a lone regex reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextSource {
    /// The page's visible text (the `text` column).
    Text,
    /// The decoded HTML source.
    Html,
    /// The page's final URL.
    Url,
}

/// Which links of a matched page are followed: all of them unless these
/// say otherwise.
#[derive(Debug, Default)]
pub struct LinkRules {
    /// Followed only when one matches (none: any).
    pub follow: Vec<Pattern>,
    /// Never followed when one matches.
    pub deny: Vec<Pattern>,
    /// Followed only when the link sits inside an element these select.
    pub scopes: Vec<Arc<scraper::Selector>>,
    /// Links of pages at this depth or deeper are not followed.
    pub max_depth: Option<u32>,
}

/// The list value of a `multiple` field of `kind` holding `values`.
#[must_use]
pub fn list_value(kind: FieldType, values: Vec<Value>) -> Value {
    macro_rules! collect {
        ($variant:ident, $list:ident) => {
            Value::$list(
                values.into_iter().filter_map(|v| if let Value::$variant(x) = v { Some(x) } else { None }).collect(),
            )
        };
    }
    match kind {
        FieldType::String | FieldType::Url => collect!(Utf8, Utf8List),
        FieldType::Int => collect!(Int64, Int64List),
        FieldType::Float => collect!(Float64, Float64List),
        FieldType::Bool => collect!(Bool, BoolList),
        FieldType::Date => collect!(Date32, Date32List),
        FieldType::DateTime => collect!(TimestampMicros, TimestampMicrosList),
    }
}

#[cfg(test)]
mod tests;
