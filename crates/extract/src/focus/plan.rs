//! The crawl plan file (`--plan FILE`, docs/src/focused-crawling.md): TOML
//! read with the position of every value, checked as a whole (every problem
//! with its line and column), and compiled into a [`Plan`].
//!
//! ```toml
//! name = "offshore wind"
//! threshold = 0.3            # relevance from which a page counts as relevant
//! match = "all"              # groups: all must score (AND) or any (OR)
//!
//! [weights]                  # page relevance: its fields
//! title = 0.3
//! main_text = 0.5
//! anchor = 0.2               # the anchor text of the link that led to it
//!
//! [link]                     # a link's score: what the crawl fetches first
//! anchor = 0.5               # its anchor text
//! parent = 0.3               # its page's relevance
//! url = 0.2                  # its URL's words
//!
//! [[group]]
//! name = "energy"
//! weight = 2
//! all = ["wind"]             # every one must occur in the page
//! any = ["turbine", "offshore", "rotor^2", "turbin*"]   # weight ^2, prefix *
//! not = ["windows"]          # one occurrence and the group counts nothing
//! query = true               # its words fill {keywords} of seed templates
//!
//! [[seeds]]                  # navigation seeds
//! template = "https://{site}/search?q={keywords}&page={page}"
//! site = ["example.org"]
//! page = "1..3"
//!
//! [[role]]                   # first match wins; pages no role matches: content
//! role = "nav"
//! urls = ["**/search?**", "**/tag/*"]
//! ```

use std::collections::HashSet;

use serde::Deserialize;
use toml::Spanned;

use crate::rules::file::{render_problems, syntax_problem, Check, Problem};
use crate::rules::{Pattern, Role};

/// Seeds a plan may make at most.
pub const MAX_SEEDS: usize = 10_000;

/// Why a plan file cannot be used: every problem found, in file order.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", render_problems(.file, .problems))]
pub struct PlanError {
    /// The file as the user named it.
    pub file: String,
    pub problems: Vec<Problem>,
}

/// How the groups' scores make the page's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Combine {
    /// Every group must score; then their weighted mean (AND).
    #[default]
    All,
    /// Their weighted mean (OR).
    Any,
}

/// The weights of a page's fields in its relevance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldWeights {
    pub title: f64,
    pub main_text: f64,
    pub anchor: f64,
}

impl Default for FieldWeights {
    fn default() -> Self {
        Self { title: 0.3, main_text: 0.5, anchor: 0.2 }
    }
}

/// The weights of a link's score: its anchor text, its page's relevance,
/// its URL's words.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkWeights {
    pub anchor: f64,
    pub parent: f64,
    pub url: f64,
}

impl Default for LinkWeights {
    fn default() -> Self {
        Self { anchor: 0.5, parent: 0.3, url: 0.2 }
    }
}

/// A word or phrase to look for.
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    /// As written, without its weight.
    pub text: String,
    /// Its words, lower-cased.
    pub words: Vec<String>,
    /// The last word is a prefix (`turbin*`).
    pub prefix: bool,
    pub weight: f64,
}

/// A keyword group.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    pub name: String,
    pub weight: f64,
    pub all: Vec<Term>,
    pub any: Vec<Term>,
    pub not: Vec<Term>,
    /// Its words fill `{keywords}` of seed templates.
    pub query: bool,
}

/// A crawl plan, checked.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: Option<String>,
    pub threshold: f64,
    pub combine: Combine,
    pub weights: FieldWeights,
    /// A link's score (`[link]`).
    pub link: LinkWeights,
    pub groups: Vec<Group>,
    /// The navigation seeds its templates make, in file order.
    pub seeds: Vec<String>,
    /// Page roles by URL, first match wins.
    pub roles: Vec<(Role, Vec<Pattern>)>,
}

impl Plan {
    /// The role of the page at `url`: the first `[[role]]` whose patterns
    /// match; content when none does.
    #[must_use]
    pub fn role(&self, url: &str) -> Role {
        self.roles.iter().find(|(_, ps)| ps.iter().any(|p| p.matches(url))).map_or(Role::Content, |(r, _)| *r)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    name: Option<String>,
    threshold: Option<Spanned<f64>>,
    #[serde(rename = "match")]
    combine: Option<Spanned<String>>,
    weights: Option<Spanned<RawWeights>>,
    link: Option<Spanned<RawLink>>,
    #[serde(default)]
    group: Vec<Spanned<RawGroup>>,
    #[serde(default)]
    seeds: Vec<Spanned<RawSeeds>>,
    #[serde(default)]
    role: Vec<Spanned<RawRole>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWeights {
    title: Option<Spanned<f64>>,
    main_text: Option<Spanned<f64>>,
    anchor: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    anchor: Option<Spanned<f64>>,
    parent: Option<Spanned<f64>>,
    url: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Option<Spanned<String>>,
    weight: Option<Spanned<f64>>,
    #[serde(default)]
    all: Vec<Spanned<String>>,
    #[serde(default)]
    any: Vec<Spanned<String>>,
    #[serde(default)]
    not: Vec<Spanned<String>>,
    #[serde(default)]
    query: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSeeds {
    template: Spanned<String>,
    #[serde(default)]
    site: Vec<Spanned<String>>,
    page: Option<Spanned<toml::Value>>,
    max: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRole {
    role: Spanned<String>,
    urls: Vec<Spanned<String>>,
}

/// The plan's own checks, beside the rules file's.
trait PlanChecks {
    fn weight(&mut self, w: Option<&Spanned<f64>>, what: &str, default: f64) -> f64;
    fn term(&mut self, raw: &Spanned<String>) -> Option<Term>;
    fn terms(&mut self, raw: &[Spanned<String>]) -> Vec<Term>;
}

impl PlanChecks for Check<'_> {
    fn weight(&mut self, w: Option<&Spanned<f64>>, what: &str, default: f64) -> f64 {
        match w {
            Some(v) if !v.get_ref().is_finite() || *v.get_ref() < 0.0 => {
                self.at(v.span(), format!("{what} {}: a weight is a number of 0 or more", v.get_ref()));
                default
            }
            Some(v) => *v.get_ref(),
            None => default,
        }
    }

    fn term(&mut self, raw: &Spanned<String>) -> Option<Term> {
        let text = raw.get_ref().trim();
        let (body, weight) = match text.rsplit_once('^') {
            Some((body, w)) => match w.trim().parse::<f64>() {
                Ok(w) if w.is_finite() && w > 0.0 => (body.trim(), w),
                _ => {
                    self.at(raw.span(), format!("{text:?}: the weight after ^ must be a number above 0"));
                    return None;
                }
            },
            None => (text, 1.0),
        };
        let (body, prefix) = match body.strip_suffix('*') {
            Some(b) => (b, true),
            None => (body, false),
        };
        let words = words(body);
        if words.is_empty() {
            self.at(raw.span(), format!("{text:?}: a term needs a word (letters or digits)"));
            return None;
        }
        if body.contains('*') {
            self.at(raw.span(), format!("{text:?}: `*` may only end a term"));
            return None;
        }
        Some(Term { text: body.to_string(), words, prefix, weight })
    }

    fn terms(&mut self, raw: &[Spanned<String>]) -> Vec<Term> {
        raw.iter().filter_map(|t| self.term(t)).collect()
    }
}

/// Reads and checks the plan in `text`, which came from `file`.
///
/// # Errors
/// Every problem in the file, each with its line and column: TOML syntax,
/// unknown keys, weights, empty groups, terms, templates, page ranges,
/// roles and URL patterns.
pub fn parse_plan(file: &str, text: &str) -> Result<Plan, PlanError> {
    let raw: RawPlan = toml::from_str(text)
        .map_err(|e| PlanError { file: file.to_string(), problems: vec![syntax_problem(text, &e)] })?;
    let mut check = Check::new(text);
    let threshold = match &raw.threshold {
        Some(t) if !(0.0..=1.0).contains(t.get_ref()) => {
            check.at(t.span(), format!("threshold {}: a relevance is from 0 to 1", t.get_ref()));
            0.3
        }
        Some(t) => *t.get_ref(),
        None => 0.3,
    };
    let combine = match &raw.combine {
        None => Combine::All,
        Some(c) => match c.get_ref().as_str() {
            "all" => Combine::All,
            "any" => Combine::Any,
            other => {
                check.at(c.span(), format!("match = {other:?}: allowed \"all\" (every group) or \"any\""));
                Combine::All
            }
        },
    };
    let defaults = FieldWeights::default();
    let weights = match &raw.weights {
        None => defaults,
        Some(w) => {
            let span = w.span();
            let w = w.get_ref();
            let weights = FieldWeights {
                title: check.weight(w.title.as_ref(), "title", defaults.title),
                main_text: check.weight(w.main_text.as_ref(), "main_text", defaults.main_text),
                anchor: check.weight(w.anchor.as_ref(), "anchor", defaults.anchor),
            };
            if weights.title + weights.main_text + weights.anchor <= 0.0 {
                check.at(span, "[weights]: at least one field must weigh more than 0");
            }
            weights
        }
    };
    let link_defaults = LinkWeights::default();
    let link = match &raw.link {
        None => link_defaults,
        Some(l) => {
            let span = l.span();
            let l = l.get_ref();
            let link = LinkWeights {
                anchor: check.weight(l.anchor.as_ref(), "anchor", link_defaults.anchor),
                parent: check.weight(l.parent.as_ref(), "parent", link_defaults.parent),
                url: check.weight(l.url.as_ref(), "url", link_defaults.url),
            };
            if link.anchor + link.parent + link.url <= 0.0 {
                check.at(span, "[link]: at least one part must weigh more than 0");
            }
            link
        }
    };
    if raw.group.is_empty() {
        check.at(0..0, "a plan needs at least one [[group]] of keywords");
    }
    let mut names = HashSet::new();
    let mut groups = Vec::new();
    for (i, g) in raw.group.iter().enumerate() {
        let span = g.span();
        let g = g.get_ref();
        let name = g.name.as_ref().map_or_else(|| format!("group {}", i + 1), |n| n.get_ref().clone());
        if let Some(n) = &g.name {
            if !names.insert(n.get_ref().clone()) {
                check.at(n.span(), format!("group {:?} is named twice", n.get_ref()));
            }
        }
        if g.all.is_empty() && g.any.is_empty() {
            check.at(span.clone(), format!("{name}: a group needs `all` or `any` terms"));
        }
        let weight = check.weight(g.weight.as_ref(), "weight", 1.0);
        let (all, any, not) = (check.terms(&g.all), check.terms(&g.any), check.terms(&g.not));
        groups.push(Group { name, weight, all, any, not, query: g.query });
    }
    let mut roles = Vec::new();
    for r in &raw.role {
        let r = r.get_ref();
        let role = match r.role.get_ref().as_str() {
            "nav" => Role::Nav,
            "content" => Role::Content,
            other => {
                check.at(r.role.span(), format!("role {other:?}: allowed \"nav\" or \"content\""));
                continue;
            }
        };
        let mut patterns = Vec::new();
        for u in &r.urls {
            match Pattern::new(u.get_ref()) {
                Ok(p) => patterns.push(p),
                Err(e) => check.at(u.span(), e),
            }
        }
        roles.push((role, patterns));
    }
    let mut seeds = Vec::new();
    for s in &raw.seeds {
        let made = seeds_of(&mut check, s.get_ref(), &groups);
        if seeds.len() + made.len() > MAX_SEEDS {
            check.at(s.span(), format!("the plan's templates make more than {MAX_SEEDS} seeds; set `max`"));
            break;
        }
        seeds.extend(made);
    }
    if !check.problems.is_empty() {
        return Err(PlanError { file: file.to_string(), problems: check.problems });
    }
    Ok(Plan { name: raw.name, threshold, combine, weights, link, groups, seeds, roles })
}

/// The keyword queries of seed templates: per `query` group, its `all`
/// terms and one of its `any` terms; every combination over the groups,
/// in file order.
fn queries(groups: &[Group]) -> Vec<String> {
    let mut out = vec![String::new()];
    for g in groups.iter().filter(|g| g.query) {
        let all: Vec<&str> = g.all.iter().map(|t| t.text.as_str()).collect();
        let choices: Vec<String> = if g.any.is_empty() {
            vec![all.join(" ")]
        } else {
            g.any.iter().map(|t| all.iter().copied().chain([t.text.as_str()]).collect::<Vec<_>>().join(" ")).collect()
        };
        out = out
            .iter()
            .flat_map(|q| choices.iter().map(move |c| if q.is_empty() { c.clone() } else { format!("{q} {c}") }))
            .take(MAX_SEEDS + 1)
            .collect();
    }
    out
}

fn seeds_of(check: &mut Check<'_>, s: &RawSeeds, groups: &[Group]) -> Vec<String> {
    let template = s.template.get_ref();
    let span = s.template.span();
    // Placeholders: each {name} must be known, and used ones need values.
    let mut rest = template.as_str();
    let mut used = HashSet::new();
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else {
            check.at(span.clone(), format!("{template:?}: a `{{` is not closed"));
            return Vec::new();
        };
        let name = &rest[open + 1..open + close];
        if !["site", "keywords", "page"].contains(&name) {
            check.at(
                span.clone(),
                format!("{template:?}: unknown placeholder {{{name}}}; allowed {{site}}, {{keywords}}, {{page}}"),
            );
            return Vec::new();
        }
        used.insert(name.to_string());
        rest = &rest[open + close + 1..];
    }
    let sites: Vec<String> = s.site.iter().map(|v| v.get_ref().clone()).collect();
    if used.contains("site") && sites.is_empty() {
        check.at(span.clone(), format!("{template:?} uses {{site}}: give `site = [\"host\", ...]`"));
        return Vec::new();
    }
    let pages: Vec<i64> = match &s.page {
        None => vec![1],
        Some(p) => match page_range(p.get_ref()) {
            Ok(v) => v,
            Err(e) => {
                check.at(p.span(), e);
                return Vec::new();
            }
        },
    };
    let keywords = if used.contains("keywords") {
        let q = queries(groups);
        if q.iter().all(String::is_empty) {
            check.at(span.clone(), format!("{template:?} uses {{keywords}}: mark a group `query = true`"));
            return Vec::new();
        }
        q
    } else {
        vec![String::new()]
    };
    let max = match &s.max {
        Some(m) if *m.get_ref() < 1 => {
            check.at(m.span(), "max: at least 1");
            return Vec::new();
        }
        Some(m) => usize::try_from(*m.get_ref()).unwrap_or(usize::MAX),
        None => MAX_SEEDS,
    };
    let sites = if used.contains("site") { sites } else { vec![String::new()] };
    let pages = if used.contains("page") { pages } else { vec![1] };
    let mut out = Vec::new();
    'all: for site in &sites {
        for k in &keywords {
            for page in &pages {
                if out.len() >= max {
                    break 'all;
                }
                let url = template
                    .replace("{site}", site)
                    .replace("{keywords}", &encode(k))
                    .replace("{page}", &page.to_string());
                match url::Url::parse(&url) {
                    Ok(u) if matches!(u.scheme(), "http" | "https") => out.push(u.to_string()),
                    Ok(u) => {
                        check.at(span.clone(), format!("{url}: a seed is http or https, not {}", u.scheme()));
                        return Vec::new();
                    }
                    Err(e) => {
                        check.at(span.clone(), format!("{url}: not a URL ({e})"));
                        return Vec::new();
                    }
                }
            }
        }
    }
    out
}

/// Keywords in a query string: spaces as `+`, the rest percent-encoded.
fn encode(q: &str) -> String {
    url::form_urlencoded::byte_serialize(q.as_bytes()).collect()
}

/// `page = 3`, `page = [1, 2, 5]` or `page = "1..3"` (both ends included).
fn page_range(v: &toml::Value) -> Result<Vec<i64>, String> {
    match v {
        toml::Value::Integer(n) => Ok(vec![*n]),
        toml::Value::Array(a) => {
            a.iter().map(|x| x.as_integer().ok_or_else(|| format!("page: {x} is not a whole number"))).collect()
        }
        toml::Value::String(s) => {
            let (a, b) = s.split_once("..").ok_or_else(|| format!("page = {s:?}: write \"FIRST..LAST\""))?;
            let (a, b): (i64, i64) = (
                a.trim().parse().map_err(|_| format!("page = {s:?}: {a:?} is not a whole number"))?,
                b.trim().parse().map_err(|_| format!("page = {s:?}: {b:?} is not a whole number"))?,
            );
            if a > b {
                return Err(format!("page = {s:?}: the first page is after the last"));
            }
            if b - a >= MAX_SEEDS as i64 {
                return Err(format!("page = {s:?}: more than {MAX_SEEDS} pages"));
            }
            Ok((a..=b).collect())
        }
        other => Err(format!("page: {other} is neither a number, a list nor \"FIRST..LAST\"")),
    }
}

/// The words of `text`: runs of letters and digits, lower-cased.
#[must_use]
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests;
