//! What the tokenizer pass records for extraction besides text and
//! links: each block's element, parent and class/id hint, each text run's
//! kind, and the page's meta data (docs/src/main-text.md).

use html5ever::tokenizer::Tag;

use super::attr;

/// Per-block character counts, and where the block sits.
#[derive(Clone, Copy, Debug, Default)]
pub struct Block {
    /// Non-space characters of text directly in this block (not in a
    /// nested block), and of those, inside links.
    pub text_chars: u32,
    pub anchor_chars: u32,
    /// The enclosing block (0, the document, for top-level blocks and
    /// for the document itself).
    pub parent: u32,
    pub tag: BlockTag,
    /// What the block's class, id, role and itemprop say it is: above 0
    /// content (`article`, `post-body`, `itemprop=articleBody`), below 0
    /// boilerplate (`comments`, `sidebar`, `cookie-banner`); see [`hint`].
    pub hint: i8,
    /// Named as a comment thread (`comments`, `disqus_thread`) or a
    /// consent dialog (`cookie-consent`, `gdpr`): text that
    /// is not the article however much of it there is.
    pub firm: bool,
}

/// The element that opened a block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlockTag {
    #[default]
    Document,
    Paragraph,
    Div,
    Section,
    Article,
    Main,
    Nav,
    Header,
    Footer,
    Aside,
    Form,
    List,
    Table,
    Cell,
}

impl BlockTag {
    pub(super) fn of(name: &str) -> Self {
        match name {
            "p" => Self::Paragraph,
            "section" => Self::Section,
            "article" => Self::Article,
            "main" => Self::Main,
            "nav" | "menu" => Self::Nav,
            "header" => Self::Header,
            "footer" => Self::Footer,
            "aside" => Self::Aside,
            "form" => Self::Form,
            "ul" | "ol" | "dl" => Self::List,
            "table" => Self::Table,
            "td" | "th" => Self::Cell,
            _ => Self::Div,
        }
    }
}

/// What a run of text is, for the main text's structure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SegKind {
    #[default]
    Text,
    /// `h1`..`h6`.
    Heading(u8),
    /// `li`, `dt`, `dd`.
    Item,
    /// `pre`: code or preformatted text.
    Pre,
    Quote,
    /// A table cell (`td`, `th`).
    Cell,
    /// A picture's caption or credit (`figure`, `figcaption`): not main
    /// text.
    Caption,
}

/// A run of text of one block and kind: `text[start..end]`.
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub block: usize,
    pub start: usize,
    pub end: usize,
    pub kind: SegKind,
}

/// The page's meta data as found (raw; extraction interprets it).
#[derive(Clone, Debug, Default)]
pub struct Meta {
    /// `<html lang>`.
    pub lang: Option<String>,
    /// `<meta name|property|itemprop=K content=V>`, lower-case keys, the
    /// first value of each key.
    pub tags: Vec<(String, String)>,
    /// `<link rel=canonical href>`.
    pub canonical: Option<String>,
    /// The first `<time datetime>` of the page.
    pub time: Option<String>,
    /// The text of each `<script type="application/ld+json">`.
    pub json_ld: Vec<String>,
}

impl Block {
    /// Link-text ratio; a block with links but no text at all is all link.
    #[must_use]
    pub fn ratio(self) -> f32 {
        if self.text_chars == 0 {
            1.0
        } else {
            #[allow(clippy::cast_precision_loss)]
            let r = self.anchor_chars as f32 / self.text_chars as f32;
            r.min(1.0)
        }
    }
}

/// The elements that set a run's kind (their names, to close them by).
pub(super) const KIND_ELEMENTS: &[&str] =
    &["h1", "h2", "h3", "h4", "h5", "h6", "li", "dt", "dd", "pre", "blockquote", "td", "th", "figcaption", "figure"];

/// Words of class names and ids that mark content, and boilerplate
/// (matched as words of a name: `post-body`, `commentList`; see
/// [`name_hint`]).
const CONTENT_WORDS: &[&str] =
    &["article", "content", "entry", "post", "story", "text", "body", "prose", "blog", "hentry", "main", "page"];
const BOILERPLATE_WORDS: &[&str] = &[
    "footer",
    "footnote",
    "nav",
    "menu",
    "sidebar",
    "widget",
    "related",
    "share",
    "sharing",
    "social",
    "banner",
    "newsletter",
    "subscribe",
    "signup",
    "promo",
    "advert",
    "sponsor",
    "breadcrumb",
    "popup",
    "modal",
    "recommend",
    "outbrain",
    "taboola",
    "byline",
    "masthead",
    "pagination",
    "pager",
    "login",
    "toolbar",
    "rating",
    "meta",
    "author",
    "print",
    "caption",
    "credit",
    "copyright",
    "embed",
    "tags",
    // Disclosures, disclaimers and notices under an article, contact boxes,
    // link boxes, calls to action, and the post's metadata line of
    // WordPress's classic themes (docs/src/main-text.md, "Tuning and
    // held-out pages").
    "disclosure",
    "disclaimer",
    "affiliate",
    "notice",
    "contact",
    "linkbox",
    "cta",
    "postmetadata",
];
/// Boilerplate words that name a comment thread or a consent dialog,
/// which the text never overrules (see [`Block::firm`]).
const FIRM_WORDS: &[&str] = &["comment", "disqus", "cookie", "consent", "gdpr"];
/// Words that make a name with a comment's word a live ticker's entry
/// (`live-match-comment`): the match report itself, not a thread.
const LIVE_WORDS: &[&str] = &["live", "ticker", "liveticker", "liveblog"];
/// What [`hint`] returns for a name of [`FIRM_WORDS`]: boilerplate, and
/// firmly so.
pub(super) const FIRM: i8 = -3;
/// Prefixes of names skipped by [`name_hint`].
const SKIPPED_PREFIXES: &[&str] = &["category-", "tag-", "has-", "with-", "no-", "without-", "elementor-"];
/// Words that begin or end with a listed word but mean something else.
const NOT_HINTS: &[&str] = &["commentary", "domain", "context", "navigator", "shared", "operating", "poster"];

/// What an element's `class`, `id`, `role` and `itemprop` say: +2 for
/// `itemprop=articleBody` or `role=main|article`, +1 for a content word,
/// -1 for a boilerplate word, -2 for `role=navigation|banner|contentinfo|
/// complementary`, [`FIRM`] for a comment thread's or a consent dialog's
/// word. A name with both kinds of words (`comment-content`) counts as
/// boilerplate.
pub(super) fn hint(tag: &Tag) -> i8 {
    if attr(tag, "itemprop").is_some_and(|p| p.eq_ignore_ascii_case("articlebody")) {
        return 2;
    }
    if let Some(role) = attr(tag, "role") {
        match role.trim().to_ascii_lowercase().as_str() {
            "main" | "article" => return 2,
            "navigation" | "banner" | "contentinfo" | "complementary" | "menu" | "menubar" | "dialog" => return -2,
            _ => {}
        }
    }
    let mut content = false;
    for key in ["class", "id"] {
        let Some(v) = attr(tag, key) else { continue };
        match name_hint(v) {
            h @ (-1 | FIRM) => return h,
            1 => content = true,
            _ => {}
        }
    }
    i8::from(content)
}

/// What a `class` or `id` value says: -1 for a boilerplate word, +1 for a
/// content word, else 0. Each name is cut into words at anything not a
/// letter or digit and where lower case turns upper (`commentList`:
/// comment, list); a word matches a listed one that begins or ends it
/// (`comments`, `mainnav`). A boilerplate word anywhere in a name makes
/// it boilerplate, a comment's word firmly so ([`FIRM`]) unless a live
/// ticker's word is in the same name (`live-match-comment`: an entry of
/// the match report). Names that say what a post is about (WordPress'
/// `category-*`, `tag-*`), what a layout holds (`has-sidebar`,
/// `no-comments`) or which page builder made it (`elementor-widget`)
/// rather than what the block is are skipped.
fn name_hint(value: &str) -> i8 {
    let mut content = false;
    for name in value.split_ascii_whitespace() {
        let lower = name.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
        if lower && SKIPPED_PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let mut word = [0u8; 24];
        let mut len = 0;
        let mut prev_lower = false;
        let mut seen = Seen { content, ..Seen::default() };
        for &c in name.as_bytes() {
            let boundary = !c.is_ascii_alphanumeric() || (prev_lower && c.is_ascii_uppercase());
            if boundary && len > 0 {
                if seen.word(&word[..len]) {
                    return -1;
                }
                len = 0;
            }
            if c.is_ascii_alphanumeric() && len < word.len() {
                word[len] = c.to_ascii_lowercase();
                len += 1;
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        }
        if len > 0 && seen.word(&word[..len]) {
            return -1;
        }
        content = seen.content;
        if seen.firm && !seen.live {
            return FIRM;
        }
        if seen.boiler {
            return -1;
        }
    }
    i8::from(content)
}

/// What the words of one name said so far.
#[derive(Default)]
struct Seen {
    content: bool,
    firm: bool,
    boiler: bool,
    live: bool,
}

impl Seen {
    /// Takes the name's next word; true when the name is boilerplate
    /// whatever follows (a boilerplate word before any comment's word, as
    /// ever: the first word that says boilerplate decides).
    fn word(&mut self, w: &[u8]) -> bool {
        if matches!(w.first(), Some(b'l' | b't')) && LIVE_WORDS.iter().any(|l| l.as_bytes() == w) {
            self.live = true;
        }
        match word_hint(w) {
            -1 if !self.firm => return true,
            -1 => self.boiler = true,
            FIRM => self.firm = true,
            1 => self.content = true,
            _ => {}
        }
        false
    }
}

/// One lower-case word of a name against the lists.
fn word_hint(word: &[u8]) -> i8 {
    let (Some(&first), Some(&last)) = (word.first(), word.last()) else { return 0 };
    // First and last bytes before any comparison: most words match none.
    let has = |w: &&str| {
        let w = w.as_bytes();
        (w[0] == first && word.starts_with(w)) || (w[w.len() - 1] == last && word.ends_with(w))
    };
    let hint = if FIRM_WORDS.iter().any(has) {
        FIRM
    } else if BOILERPLATE_WORDS.iter().any(has) {
        -1
    } else {
        i8::from(CONTENT_WORDS.iter().any(has))
    };
    if hint != 0 && NOT_HINTS.iter().any(|w| w.as_bytes() == word) {
        0
    } else {
        hint
    }
}
