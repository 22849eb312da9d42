//! The element names the pass treats specially: those that open a block,
//! end an open `<p>`, only break a line of text, or have no end tag.

/// Elements that open a block: `td`, `p` and `div`, which the link-text-ratio
/// method names, plus the semantic containers its "etc." leaves open.
pub(super) const BLOCKS: &[&str] = &[
    "td", "th", "p", "div", "nav", "header", "footer", "aside", "ul", "ol", "dl", "section", "article", "main", "form",
    "table", "menu",
];
/// Start tags that end an open `<p>`.
pub(super) const CLOSE_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "dialog",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "ul",
];
/// Elements that only break a line of text.
pub(super) const BREAKS: &[&str] = &[
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "hr",
    "figcaption",
    "figure",
];
/// Elements without an end tag.
pub(super) const VOID: &[&str] =
    &["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr", "param"];
