//! XPath 1.0 over the `scraper` DOM that CSS selectors use, so a rule may
//! pick its fields either way from the one parse of a page.
//!
//! `xpath-eval` evaluates; this module adapts the tree to its data model.
//! [`XDoc`] lays the page's nodes out once, in document order: html5ever's
//! tree builder moves nodes after creating them (foster parenting out of
//! tables, the adoption agency for misnested formatting tags), so the
//! tree's node ids are not document order, while XPath sorts every
//! node-set by it. With the nodes in preorder, a node's position is its
//! document order, its subtree is the range up to its `end`, and its text
//! content is the text nodes in that range: no lookups, no recursion.
//!
//! Names follow lxml's HTML parser, which the XPath of most scraping
//! recipes was written against: elements and attributes have no
//! namespace, so `//svg`, `//a/@href` and `@lang` match by local name
//! (html5ever puts SVG and MathML elements in their namespaces, and
//! `xlink:href` is the attribute `href` here). A prefixed name test could
//! never match and is refused by [`compile`].

use std::cell::OnceCell;
use std::cmp::Ordering;
use std::fmt;

use scraper::{ElementRef, Html};
use xpath_eval::{EvaluationContext, ExpandedName, Expr, Node, NodeKind, Value};

mod check;

use check::check_expr;

/// A compiled XPath expression, checked against what evaluation supports
/// (functions, their arities, names) so that a mistake in a rules file is
/// reported when the file is read, not on every page.
#[derive(Clone)]
pub struct XPath {
    source: String,
    expr: Expr,
}

impl XPath {
    /// The expression as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl fmt::Debug for XPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("XPath").field(&self.source).finish()
    }
}

impl fmt::Display for XPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// Parses and checks `expr`.
///
/// # Errors
/// What is wrong with it, for the author of the rules file: a syntax error
/// with the character it was found at, an unknown function, a wrong number
/// of arguments, a variable, or a namespace prefix.
pub fn compile(expr: &str) -> Result<XPath, String> {
    if expr.trim().is_empty() {
        return Err("empty expression".into());
    }
    let parsed = xpath_eval::parse(expr).map_err(|e| {
        let at = expr.get(..e.position).map_or(e.position, |s| s.chars().count()) + 1;
        match expr.get(e.position..).filter(|rest| !rest.is_empty()) {
            Some(rest) => format!("{} at character {at} (`{}`)", e.message, clip(rest, 20)),
            None => format!("{}, at the end", e.message),
        }
    })?;
    check_expr(&parsed)?;
    Ok(XPath { source: expr.to_string(), expr: parsed })
}

/// At most `max` characters of `s`, with an ellipsis when cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A page's nodes in document order (preorder), for XPath. Built once per
/// page, in one walk of the tree; every evaluation against the page shares
/// it.
pub struct XDoc<'a> {
    nodes: Vec<Entry<'a>>,
    /// Element addresses, sorted, to their position: finds the node of a
    /// context element. Built on the first evaluation that has one.
    by_address: OnceCell<Vec<(usize, usize)>>,
}

/// One node of the page; its attributes are not entries, they are
/// addressed through their element.
struct Entry<'a> {
    data: Data<'a>,
    /// `NONE` for the root.
    parent: usize,
    /// One past the last node of its subtree.
    end: usize,
}

/// What XPath sees of a node: its kind, and where its name and text are.
enum Data<'a> {
    Root,
    Element(ElementRef<'a>),
    Text(&'a str),
    Comment(&'a str),
    Pi(&'a scraper::node::ProcessingInstruction),
}

/// The root's parent.
const NONE: usize = usize::MAX;
/// [`XNode::attr`] of a node of the tree, not of an attribute.
const NO_ATTR: u32 = u32::MAX;

impl<'a> XDoc<'a> {
    /// Lays out `html`'s nodes. The doctype is left out: XPath has no such
    /// node (lxml does not show it either).
    #[must_use]
    pub fn new(html: &'a Html) -> Self {
        let root = html.tree.root();
        let mut nodes: Vec<Entry<'a>> = Vec::new();
        // The ancestors of the node being visited, innermost last, with
        // their positions: preorder meets a node right after its parent's
        // earlier subtrees, so its parent is on this stack and whatever is
        // above the parent has been left for good.
        let mut open = vec![(root, 0usize)];
        for node in root.descendants() {
            let data = if let Some(el) = ElementRef::wrap(node) {
                Data::Element(el)
            } else {
                match node.value() {
                    scraper::Node::Text(t) => Data::Text(&t.text),
                    scraper::Node::Comment(c) => Data::Comment(&c.comment),
                    scraper::Node::ProcessingInstruction(p) => Data::Pi(p),
                    scraper::Node::Doctype(_) => continue,
                    scraper::Node::Document | scraper::Node::Fragment | scraper::Node::Element(_) => Data::Root,
                }
            };
            let idx = nodes.len();
            let parent = if idx == 0 {
                NONE
            } else {
                while open.len() > 1 && Some(open[open.len() - 1].0) != node.parent() {
                    if let Some((_, closed)) = open.pop() {
                        nodes[closed].end = idx;
                    }
                }
                open[open.len() - 1].1
            };
            nodes.push(Entry { data, parent, end: idx + 1 });
            if idx > 0 {
                open.push((node, idx));
            }
        }
        let len = nodes.len();
        for (_, closed) in open {
            if let Some(e) = nodes.get_mut(closed) {
                e.end = len;
            }
        }
        Self { nodes, by_address: OnceCell::new() }
    }

    /// The position of `el`'s node, if it belongs to this page.
    fn position_of(&self, el: ElementRef<'_>) -> Option<usize> {
        let table = self.by_address.get_or_init(|| {
            let mut t: Vec<(usize, usize)> = (self.nodes.iter().enumerate())
                .filter_map(|(i, e)| match e.data {
                    Data::Element(el) => Some((address(el), i)),
                    _ => None,
                })
                .collect();
            // Nearly sorted already: html5ever allocates most nodes in
            // document order.
            t.sort_unstable();
            t
        });
        let at = table.binary_search_by_key(&address(el), |&(a, _)| a).ok()?;
        let idx = table[at].1;
        // The address found it; equality proves it is this page's node.
        matches!(self.nodes[idx].data, Data::Element(mine) if mine == el).then_some(idx)
    }

    fn node(&self, idx: usize) -> XNode<'_> {
        XNode { doc: self, idx, attr: NO_ATTR }
    }
}

/// Where the element's data lives in its tree: stable for the tree's
/// lifetime, and the one identity of a node that `scraper` lets out
/// without naming `ego_tree`'s types.
fn address(el: ElementRef<'_>) -> usize {
    std::ptr::from_ref(el.value()).addr()
}

impl fmt::Debug for XDoc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("XDoc").field("nodes", &self.nodes.len()).finish_non_exhaustive()
    }
}

/// A node for `xpath-eval`: a node of the page, or an attribute of an
/// element (its index among the element's attributes).
#[derive(Clone, Copy)]
struct XNode<'x> {
    doc: &'x XDoc<'x>,
    idx: usize,
    attr: u32,
}

impl PartialEq for XNode<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.doc, other.doc) && self.idx == other.idx && self.attr == other.attr
    }
}

impl Eq for XNode<'_> {}

impl<'x> XNode<'x> {
    fn entry(self) -> &'x Entry<'x> {
        &self.doc.nodes[self.idx]
    }

    fn element(self) -> Option<ElementRef<'x>> {
        match self.entry().data {
            Data::Element(el) => Some(el),
            _ => None,
        }
    }

    /// Name and value of the attribute this node is.
    fn attribute(self) -> Option<(&'x str, &'x str)> {
        if self.attr == NO_ATTR {
            return None;
        }
        self.element()?.value().attrs().nth(self.attr as usize)
    }

    /// The text nodes of this node's subtree, in document order.
    fn texts(self) -> impl Iterator<Item = &'x str> {
        let end = if self.attr == NO_ATTR { self.entry().end } else { self.idx };
        self.doc.nodes[self.idx..end].iter().filter_map(|e| match e.data {
            Data::Text(t) => Some(t),
            _ => None,
        })
    }

    /// The node's own text, for the kinds that have one (not elements or
    /// the root, whose text is their subtree's).
    fn own_text(self) -> Option<&'x str> {
        if self.attr != NO_ATTR {
            return self.attribute().map(|(_, v)| v);
        }
        match self.entry().data {
            Data::Text(t) | Data::Comment(t) => Some(t),
            Data::Pi(p) => Some(&*p.data),
            Data::Root | Data::Element(_) => None,
        }
    }
}

/// The children of a node: the next one is past the subtree of the last.
struct Children<'x> {
    doc: &'x XDoc<'x>,
    next: usize,
    end: usize,
}

impl<'x> Iterator for Children<'x> {
    type Item = XNode<'x>;

    fn next(&mut self) -> Option<XNode<'x>> {
        if self.next >= self.end {
            return None;
        }
        let idx = self.next;
        self.next = self.doc.nodes[idx].end;
        Some(XNode { doc: self.doc, idx, attr: NO_ATTR })
    }
}

impl<'x> Node<'x> for XNode<'x> {
    fn kind(self) -> NodeKind {
        if self.attr != NO_ATTR {
            return NodeKind::Attribute;
        }
        match self.entry().data {
            Data::Root => NodeKind::Root,
            Data::Element(_) => NodeKind::Element,
            Data::Text(_) => NodeKind::Text,
            Data::Comment(_) => NodeKind::Comment,
            Data::Pi(_) => NodeKind::ProcessingInstruction,
        }
    }

    fn parent(self) -> Option<Self> {
        if self.attr != NO_ATTR {
            return Some(XNode { attr: NO_ATTR, ..self });
        }
        let parent = self.entry().parent;
        (parent != NONE).then_some(XNode { idx: parent, ..self })
    }

    fn children(self) -> impl Iterator<Item = Self> + 'x {
        let (next, end) = if self.attr == NO_ATTR { (self.idx + 1, self.entry().end) } else { (0, 0) };
        Children { doc: self.doc, next, end }
    }

    fn attributes(self) -> impl Iterator<Item = Self> + 'x {
        let n = match self.element() {
            Some(el) if self.attr == NO_ATTR => u32::try_from(el.value().attrs.len()).unwrap_or(0),
            _ => 0,
        };
        (0..n).map(move |attr| XNode { attr, ..self })
    }

    fn namespaces(self) -> impl Iterator<Item = Self> + 'x {
        std::iter::empty()
    }

    fn expanded_name(self) -> Option<ExpandedName> {
        let local = if self.attr != NO_ATTR {
            self.attribute()?.0
        } else {
            match self.entry().data {
                Data::Element(el) => el.value().name(),
                Data::Pi(p) => &*p.target,
                Data::Root | Data::Text(_) | Data::Comment(_) => return None,
            }
        };
        Some(ExpandedName { namespace_uri: None, local_name: local.to_string() })
    }

    /// Without building the name: every name test runs this.
    fn has_expanded_name(self, namespace_uri: Option<&str>, local_name: &str) -> bool {
        if namespace_uri.is_some() {
            return false;
        }
        if self.attr != NO_ATTR {
            return self.attribute().is_some_and(|(name, _)| name == local_name);
        }
        match self.entry().data {
            Data::Element(el) => el.value().name() == local_name,
            Data::Pi(p) => &*p.target == local_name,
            Data::Root | Data::Text(_) | Data::Comment(_) => false,
        }
    }

    fn string_value(self) -> String {
        match self.own_text() {
            Some(t) => t.to_string(),
            None => self.texts().collect(),
        }
    }

    /// Lends the text instead of copying it where the node has it in one
    /// piece: attributes, text, and elements with a single text node
    /// (`[.='In stock']`, `contains(., 'x')` on most elements).
    fn with_string_value<R>(self, f: impl FnOnce(&str) -> R) -> R {
        if let Some(t) = self.own_text() {
            return f(t);
        }
        let mut texts = self.texts();
        match (texts.next(), texts.next()) {
            (None, _) => f(""),
            (Some(t), None) => f(t),
            (Some(a), Some(b)) => {
                let mut s = String::with_capacity(a.len() + b.len());
                s.push_str(a);
                s.push_str(b);
                texts.for_each(|t| s.push_str(t));
                f(&s)
            }
        }
    }

    /// An element, then its attributes, then its children: attribute `i`
    /// sorts as `(element, i + 1)`, the element itself as `(element, 0)`,
    /// and the children come at later positions.
    fn document_order(self, other: Self) -> Ordering {
        (self.idx, self.attr.wrapping_add(1)).cmp(&(other.idx, other.attr.wrapping_add(1)))
    }

    /// HTML's `id` attributes, so that `id('main')` finds `<div id="main">`.
    fn is_id_attribute(self) -> bool {
        self.attribute().is_some_and(|(name, _)| name == "id")
    }
}

/// Evaluates `xpath` at the page's root, or at `context` (one of the page's
/// elements), so relative paths such as `.//span` start there.
fn evaluate<'x>(doc: &'x XDoc<'_>, xpath: &XPath, context: Option<ElementRef<'_>>) -> Result<Value<XNode<'x>>, String> {
    let idx = match context {
        None => 0,
        Some(el) => doc.position_of(el).ok_or("the context element is not on this page")?,
    };
    let node = doc.node(idx);
    xpath_eval::evaluate(&xpath.expr, &EvaluationContext::new(node)).map_err(|e| e.to_string())
}

/// The texts `xpath` selects: for a node-set, one per node in document
/// order (an element's or the root's text content, an attribute's value,
/// a text node's or comment's text); for a string, number or boolean, that
/// one value (a whole number without `.0`, booleans as `true`/`false`).
/// Whitespace is collapsed and trimmed, as the CSS selectors' texts are,
/// and empty texts are dropped: a field sees the same text whichever way
/// it selects it.
///
/// # Errors
/// When evaluation fails (a function given a value of the wrong type, such
/// as `count('a')`), or `context` is not an element of `doc`'s page.
pub fn eval_strings(doc: &XDoc<'_>, xpath: &XPath, context: Option<ElementRef<'_>>) -> Result<Vec<String>, String> {
    let out = match evaluate(doc, xpath, context)? {
        Value::NodeSet(mut nodes) => {
            // Location paths come back sorted; a filter expression over
            // one may not.
            nodes.sort_by(|a, b| a.document_order(*b));
            let mut out = Vec::with_capacity(nodes.len());
            for n in nodes {
                let mut text = Collapsed::default();
                match n.own_text() {
                    Some(t) => text.push(t),
                    None => n.texts().for_each(|t| text.push(t)),
                }
                if !text.0.is_empty() {
                    out.push(text.0);
                }
            }
            out
        }
        v @ (Value::Number(_) | Value::Boolean(_) | Value::String(_)) => {
            let mut text = Collapsed::default();
            text.push(&v.to_xpath_string());
            if text.0.is_empty() {
                Vec::new()
            } else {
                vec![text.0]
            }
        }
    };
    Ok(out)
}

/// The elements `xpath` selects, in document order (its text and attribute
/// nodes are left out): the items of a rule with `each`.
///
/// # Errors
/// When evaluation fails, the result is a string, number or boolean rather
/// than nodes, or `context` is not an element of `doc`'s page.
pub fn eval_elements<'a>(
    doc: &XDoc<'a>,
    xpath: &XPath,
    context: Option<ElementRef<'_>>,
) -> Result<Vec<ElementRef<'a>>, String> {
    let mut nodes = match evaluate(doc, xpath, context)? {
        Value::NodeSet(nodes) => nodes,
        Value::Number(_) => return Err("gives a number, not elements".into()),
        Value::Boolean(_) => return Err("gives a boolean, not elements".into()),
        Value::String(_) => return Err("gives a string, not elements".into()),
    };
    nodes.sort_by(|a, b| a.document_order(*b));
    Ok(nodes
        .into_iter()
        .filter(|n| n.attr == NO_ATTR)
        .filter_map(|n| match doc.nodes[n.idx].data {
            Data::Element(el) => Some(el),
            _ => None,
        })
        .collect())
}

/// Text with its whitespace runs collapsed to one space and trimmed, fed in
/// pieces: a word split across text nodes (`foo<b>bar</b>`) stays one word.
#[derive(Default)]
struct Collapsed(String, bool);

impl Collapsed {
    fn push(&mut self, piece: &str) {
        for c in piece.chars() {
            if c.is_whitespace() {
                self.1 = !self.0.is_empty();
            } else {
                if self.1 {
                    self.0.push(' ');
                    self.1 = false;
                }
                self.0.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests;
