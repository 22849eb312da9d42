//! One pass of html5ever's tokenizer over a decoded page: title, text,
//! links with anchor text, the DOM blocks of the link-text-ratio prefilter,
//! and what extraction reads from the same pass: each block's
//! element, parent and class/id hint, each text run's kind (paragraph,
//! heading, list item, code, quote, cell), the page's meta tags and its
//! JSON-LD (docs/src/main-text.md).
//!
//! The tokenizer alone (no tree builder) is about twice as fast as building
//! a DOM, and every output here is a property of the token stream: blocks
//! are tracked with a stack of open block elements, closed by their end tag
//! (or by the end of the document, on malformed pages). Each run of text
//! belongs to its innermost open block; a block's link-text ratio is the
//! non-space characters inside `<a>` over all its non-space characters
//! (docs/src/noise-filter.md). Rendering-only content (`script`,
//! `style`, `noscript`, `template`, hidden subtrees) never reaches the text
//! or the links.

use std::cell::RefCell;

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};

mod dom;
mod elements;
mod structure;
mod words;

pub use dom::tokenize_with_dom;
use elements::{BLOCKS, BREAKS, CLOSE_P, VOID};
use structure::{hint, FIRM, KIND_ELEMENTS};
pub use structure::{Block, BlockTag, Meta, SegKind, Segment};
use words::{collapse_ascii, is_ascii_space, truncate_chars, Words};

/// Characters that are dropped from text: the soft hyphen and the
/// zero-width space.
const INVISIBLE: [char; 2] = ['\u{ad}', '\u{200b}'];

/// Longest anchor text and title kept, in characters.
const MAX_ANCHOR: usize = 512;
const MAX_TITLE: usize = 1024;

/// A link as found, before resolution against the base URL.
#[derive(Debug)]
pub struct RawLink {
    pub href: String,
    pub anchor: String,
    pub nofollow: bool,
    pub block: usize,
}

/// What one pass produced.
#[derive(Debug, Default)]
pub struct Tokenized {
    pub title: Option<String>,
    pub base: Option<String>,
    pub meta_nofollow: bool,
    pub links: Vec<RawLink>,
    pub blocks: Vec<Block>,
    /// Text runs into `text`.
    pub segments: Vec<Segment>,
    pub text: String,
    pub meta: Meta,
}

struct Anchor {
    href: Option<String>,
    nofollow: bool,
    text: String,
    block: usize,
}

struct State {
    out: Tokenized,
    max_links: usize,
    max_text: usize,
    /// Open blocks: (element name, block index). Index 0 is the document.
    stack: Vec<(String, usize)>,
    /// Inside a subtree that is not rendered: (element, nesting depth).
    skip: Option<(String, u32)>,
    /// Inside raw text (script, style...) that is not content.
    raw: bool,
    in_title: bool,
    title: String,
    anchor: Option<Anchor>,
    /// Whitespace seen and not yet written (collapsed to one space).
    pending_space: bool,
    /// A line break seen and not yet written.
    pending_break: bool,
    seg_block: usize,
    /// The kind of the next text run, and the open elements that set it.
    kind: SegKind,
    /// Each with the depth of the block stack it was opened at: a kind
    /// left open ends with its block (`<li>` without `</li>`).
    kinds: Vec<(&'static str, SegKind, usize)>,
    /// Inside a JSON-LD script: its text is kept.
    in_json_ld: bool,
    /// Reused buffer of [`State::push_ascii`].
    scratch: Vec<u8>,
}

/// JSON-LD kept per page at most, bytes.
const MAX_JSON_LD: usize = 256 << 10;
/// Meta tags kept per page at most.
const MAX_META: usize = 64;

impl State {
    fn cur_block(&self) -> usize {
        self.stack.last().map_or(0, |s| s.1)
    }

    fn open_block(&mut self, name: &str, tag: &Tag) {
        let idx = self.out.blocks.len();
        let parent = u32::try_from(self.cur_block()).unwrap_or(0);
        let named = hint(tag);
        let (hint, firm) = if named == FIRM { (-1, true) } else { (named, false) };
        self.out.blocks.push(Block { parent, tag: BlockTag::of(name), hint, firm, ..Block::default() });
        self.stack.push((name.to_string(), idx));
        self.pending_break = true;
    }

    /// A run-kind element opens (`h2`, `li`, `pre`...).
    fn open_kind(&mut self, name: &str) {
        let kind = match name {
            "h1" => SegKind::Heading(1),
            "h2" => SegKind::Heading(2),
            "h3" => SegKind::Heading(3),
            "h4" => SegKind::Heading(4),
            "h5" => SegKind::Heading(5),
            "h6" => SegKind::Heading(6),
            "li" | "dt" | "dd" => SegKind::Item,
            "pre" => SegKind::Pre,
            "blockquote" => SegKind::Quote,
            "td" | "th" => SegKind::Cell,
            "figcaption" | "figure" => SegKind::Caption,
            _ => return,
        };
        let name = KIND_ELEMENTS.iter().find(|k| **k == name).copied().unwrap_or("");
        // Unclosed list items and cells end at the next one.
        if matches!(kind, SegKind::Item | SegKind::Cell) {
            if let Some(pos) = self.kinds.iter().rposition(|k| k.1 == kind) {
                self.kinds.truncate(pos);
            }
        }
        if self.kinds.len() < 256 {
            self.kinds.push((name, kind, self.stack.len()));
        }
        self.kind = kind;
        self.pending_break = true;
    }

    fn close_kind(&mut self, name: &str) {
        // Any heading's end tag ends the open heading, as in a browser
        // (`<h2>...</h3>`): else the rest of the page would be a heading.
        let heading = matches!(name, "h1" | "h2" | "h3" | "h4" | "h5" | "h6");
        let found = if heading {
            self.kinds.iter().rposition(|k| matches!(k.1, SegKind::Heading(_)))
        } else {
            self.kinds.iter().rposition(|k| k.0 == name)
        };
        if let Some(pos) = found {
            self.kinds.truncate(pos);
            self.kind = self.kinds.last().map_or(SegKind::Text, |k| k.1);
            self.pending_break = true;
        }
    }

    fn close_block(&mut self, name: &str) {
        // Close up to the matching open element; a stray end tag closes nothing.
        if let Some(pos) = self.stack.iter().rposition(|(n, _)| n == name) {
            if pos > 0 {
                self.stack.truncate(pos);
                self.pending_break = true;
                // Kinds opened inside the closed blocks end with them.
                if self.kinds.last().is_some_and(|k| k.2 > pos) {
                    self.kinds.retain(|k| k.2 <= pos);
                    self.kind = self.kinds.last().map_or(SegKind::Text, |k| k.1);
                }
            }
        }
    }

    fn text(&mut self, s: &str) {
        if self.in_json_ld {
            if self.out.meta.json_ld.last().is_some_and(|j| j.len() + s.len() <= MAX_JSON_LD) {
                if let Some(j) = self.out.meta.json_ld.last_mut() {
                    j.push_str(s);
                }
            }
            return;
        }
        if self.in_title {
            if self.title.chars().count() < MAX_TITLE {
                self.title.push_str(s);
            }
            return;
        }
        if self.skip.is_some() || self.raw {
            return;
        }
        let block = self.cur_block();
        let chars = if s.is_ascii() { self.push_ascii(s, block) } else { self.push_words(s, block) };
        if let Some(last) = self.out.segments.last_mut() {
            last.end = self.out.text.len();
        }
        let b = &mut self.out.blocks[block];
        b.text_chars = b.text_chars.saturating_add(chars);
        if let Some(a) = self.anchor.as_mut() {
            b.anchor_chars = b.anchor_chars.saturating_add(chars);
            // Kept raw (collapsed when the anchor ends), bounded.
            if a.text.len() < MAX_ANCHOR * 4 {
                a.text.push_str(s);
            }
        }
    }

    /// Appends ASCII text with whitespace runs collapsed, eight bytes at a
    /// time where they are plain words and single spaces (text is most of a
    /// page); returns the count of non-whitespace chars.
    fn push_ascii(&mut self, s: &str, block: usize) -> u32 {
        let bytes = s.as_bytes();
        let Some(first) = bytes.iter().position(|&c| !is_ascii_space(c)) else {
            self.pending_space |= !bytes.is_empty();
            return 0;
        };
        let last = bytes.iter().rposition(|&c| !is_ascii_space(c)).unwrap_or(first);
        if first > 0 {
            self.pending_space = true;
        }
        let mut out = std::mem::take(&mut self.scratch);
        let chars = collapse_ascii(&bytes[first..=last], &mut out);
        let w = out.len();
        let room = self.max_text.saturating_sub(self.out.text.len());
        if room > 0 {
            if self.seg_block != block || self.out.segments.is_empty() || self.pending_break {
                self.start_segment(block);
            } else if self.pending_space {
                self.out.text.push(' ');
            }
            // ASCII: every byte boundary is a char boundary.
            self.out.text.push_str(std::str::from_utf8(&out[..w.min(room)]).unwrap_or_default());
        }
        self.pending_space = last + 1 < bytes.len();
        self.scratch = out;
        chars
    }

    /// Appends any text word by word, whitespace runs collapsed; returns
    /// the count of non-whitespace chars.
    fn push_words(&mut self, s: &str, block: usize) -> u32 {
        let mut chars = 0u32;
        // Word by word: whitespace runs collapse to one space.
        let mut words = Words { s, at: 0 };
        while let Some((space_before, word, n)) = words.next_word() {
            if space_before {
                self.pending_space = true;
            }
            // Soft hyphens and zero-width spaces are break hints, not text.
            let visible;
            let (word, n) = if word.contains(INVISIBLE) {
                visible = word.replace(INVISIBLE, "");
                (visible.as_str(), u32::try_from(visible.chars().count()).unwrap_or(n))
            } else {
                (word, n)
            };
            if word.is_empty() {
                continue;
            }
            chars = chars.saturating_add(n);
            let room = self.max_text.saturating_sub(self.out.text.len());
            if room == 0 {
                continue;
            }
            if self.seg_block != block || self.out.segments.is_empty() || self.pending_break {
                self.start_segment(block);
            } else if self.pending_space {
                self.out.text.push(' ');
            }
            self.pending_space = false;
            self.out.text.push_str(truncate_chars(word, room));
        }
        chars
    }

    fn start_segment(&mut self, block: usize) {
        if !self.out.text.is_empty() {
            self.out.text.push('\n');
        }
        let at = self.out.text.len();
        self.out.segments.push(Segment { block, start: at, end: at, kind: self.kind });
        self.seg_block = block;
        self.pending_break = false;
        self.pending_space = false;
    }

    fn end_anchor(&mut self) {
        let Some(a) = self.anchor.take() else { return };
        let Some(href) = a.href else { return };
        if self.out.links.len() >= self.max_links {
            return;
        }
        let anchor = collapse(&a.text, MAX_ANCHOR);
        self.out.links.push(RawLink { href, anchor, nofollow: a.nofollow, block: a.block });
    }

    fn start_tag(&mut self, tag: &Tag) -> TokenSinkResult<()> {
        let name = &*tag.name;
        if let Some((skip_name, depth)) = self.skip.as_mut() {
            if skip_name == name && !tag.self_closing {
                *depth += 1;
            }
            return raw_kind(name).map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        let void = VOID.contains(&name) || tag.self_closing;
        // Ruby annotations (`<rt>`, `<rp>`: a reading over the text, as
        // furigana) are not part of the sentence.
        if !void && (matches!(name, "template" | "rt" | "rp") || is_hidden(tag)) {
            self.skip = Some((name.to_string(), 1));
            return raw_kind(name).map_or(TokenSinkResult::Continue, TokenSinkResult::RawData);
        }
        match name {
            "a" | "area" => {
                self.end_anchor();
                let href = attr(tag, "href").map(str::to_string);
                let nofollow = attr(tag, "rel")
                    .is_some_and(|r| r.split_ascii_whitespace().any(|t| t.eq_ignore_ascii_case("nofollow")));
                let anchor = Anchor { href, nofollow, text: String::new(), block: self.cur_block() };
                if name == "area" {
                    let mut a = anchor;
                    a.text = attr(tag, "alt").unwrap_or_default().to_string();
                    self.anchor = Some(a);
                    self.end_anchor();
                } else {
                    self.anchor = Some(anchor);
                }
            }
            "img" => {
                // Alt text stands for the image in a link: a logo link is
                // anchor text, not an empty block.
                if let (Some(alt), true) = (attr(tag, "alt"), self.anchor.is_some()) {
                    let alt = alt.to_string();
                    self.text(&alt);
                }
            }
            "base" if self.out.base.is_none() => self.out.base = attr(tag, "href").map(str::to_string),
            "meta" => {
                let is_robots = attr(tag, "name").is_some_and(|n| n.eq_ignore_ascii_case("robots"));
                if is_robots {
                    let content = attr(tag, "content").unwrap_or_default().to_ascii_lowercase();
                    if content.split(',').any(|t| matches!(t.trim(), "nofollow" | "none")) {
                        self.out.meta_nofollow = true;
                    }
                }
                self.meta_tag(tag);
            }
            "html" if self.out.meta.lang.is_none() => {
                self.out.meta.lang = attr(tag, "lang").or_else(|| attr(tag, "xml:lang")).map(|l| l.trim().to_string());
            }
            "link" if self.out.meta.canonical.is_none() && is_canonical(tag) => {
                self.out.meta.canonical = attr(tag, "href").map(|h| h.trim().to_string());
            }
            "time" if self.out.meta.time.is_none() => {
                self.out.meta.time = attr(tag, "datetime").map(|d| d.trim().to_string());
            }
            "script" => {
                let ld = attr(tag, "type").is_some_and(|t| t.trim().eq_ignore_ascii_case("application/ld+json"));
                if ld && self.out.meta.json_ld.len() < 16 {
                    self.out.meta.json_ld.push(String::new());
                    self.in_json_ld = true;
                }
            }
            "title" if !void => {
                self.in_title = self.out.title.is_none();
                return TokenSinkResult::RawData(RawKind::Rcdata);
            }
            "plaintext" => return TokenSinkResult::Plaintext,
            _ => {}
        }
        if let Some(kind) = raw_kind(name) {
            self.raw = true;
            return TokenSinkResult::RawData(kind);
        }
        // A paragraph ends where a block starts, end tag or not (HTML's
        // implied end of `<p>`).
        if self.stack.last().is_some_and(|(n, _)| n == "p") && CLOSE_P.contains(&name) {
            self.close_block("p");
        }
        if !void && BLOCKS.contains(&name) {
            self.open_block(name, tag);
            if matches!(name, "td" | "th") {
                self.open_kind(name);
            }
        } else if BREAKS.contains(&name) {
            self.pending_break = true;
            if !void {
                self.open_kind(name);
            }
        }
        TokenSinkResult::Continue
    }

    /// Keeps a `<meta>`'s key (`name`, `property` or `itemprop`) and content.
    fn meta_tag(&mut self, tag: &Tag) {
        let Some(key) = attr(tag, "name").or_else(|| attr(tag, "property")).or_else(|| attr(tag, "itemprop")) else {
            return;
        };
        let Some(content) = attr(tag, "content") else { return };
        let tags = &mut self.out.meta.tags;
        let key = key.trim().to_ascii_lowercase();
        if tags.len() < MAX_META && !tags.iter().any(|(k, _)| *k == key) {
            tags.push((key, collapse(content, 4096)));
        }
    }

    fn end_tag(&mut self, tag: &Tag) {
        let name = &*tag.name;
        if let Some((skip_name, depth)) = self.skip.as_mut() {
            if skip_name == name {
                *depth -= 1;
                if *depth == 0 {
                    self.skip = None;
                }
            }
            return;
        }
        match name {
            "a" => self.end_anchor(),
            "title" if self.in_title => {
                self.in_title = false;
                self.out.title = Some(collapse(&self.title, MAX_TITLE)).filter(|t| !t.is_empty());
            }
            _ if raw_kind(name).is_some() => {
                self.raw = false;
                self.in_json_ld = false;
            }
            _ if BLOCKS.contains(&name) => {
                if matches!(name, "td" | "th") {
                    self.close_kind(name);
                }
                // An anchor left open across the end of its block ends with it.
                if let Some(p) = self.stack.iter().rposition(|(n, _)| n == name) {
                    if p > 0 && self.anchor.as_ref().is_some_and(|a| self.stack[p..].iter().any(|s| s.1 == a.block)) {
                        self.end_anchor();
                    }
                }
                self.close_block(name);
            }
            _ if BREAKS.contains(&name) => {
                self.pending_break = true;
                self.close_kind(name);
            }
            _ => {}
        }
    }
}

/// The raw-text mode the tokenizer must switch to after this start tag
/// (the tree builder's job, which we do not run).
fn raw_kind(name: &str) -> Option<RawKind> {
    match name {
        "script" => Some(RawKind::ScriptData),
        "style" | "noscript" | "xmp" | "iframe" | "noembed" | "noframes" => Some(RawKind::Rawtext),
        "textarea" => Some(RawKind::Rcdata),
        _ => None,
    }
}

pub(super) fn attr<'t>(tag: &'t Tag, name: &str) -> Option<&'t str> {
    tag.attrs.iter().find(|a| &*a.name.local == name).map(|a| &*a.value)
}

/// `<link rel=canonical>`.
fn is_canonical(tag: &Tag) -> bool {
    attr(tag, "rel").is_some_and(|r| r.split_ascii_whitespace().any(|t| t.eq_ignore_ascii_case("canonical")))
}

/// `hidden`, or an inline style that hides the element.
fn is_hidden(tag: &Tag) -> bool {
    if attr(tag, "hidden").is_some() {
        return true;
    }
    attr(tag, "style").is_some_and(|s| {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase();
        s.contains("display:none") || s.contains("visibility:hidden")
    })
}

/// Collapses whitespace runs to one space, trims, and caps at `max` chars.
fn collapse(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max * 4));
    for (i, w) in s.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.chars().count() > max {
        out = out.chars().take(max).collect();
    }
    out
}

impl State {
    fn new(max_links: usize, max_text: usize) -> Self {
        Self {
            out: Tokenized { blocks: vec![Block::default()], ..Tokenized::default() },
            max_links,
            max_text,
            stack: vec![(String::new(), 0)],
            skip: None,
            raw: false,
            in_title: false,
            title: String::new(),
            anchor: None,
            pending_space: false,
            pending_break: false,
            seg_block: 0,
            kind: SegKind::Text,
            kinds: Vec::new(),
            in_json_ld: false,
            scratch: Vec::new(),
        }
    }

    /// What the pass found, once the input is done.
    fn finish(mut self) -> Tokenized {
        self.end_anchor();
        if self.in_title {
            self.out.title = Some(collapse(&self.title, MAX_TITLE)).filter(|t| !t.is_empty());
        }
        self.out
    }
}

struct Collector(RefCell<State>);

impl Collector {
    /// The pass's share of one token; the tokenizer state it asks for.
    fn take(&self, token: &Token) -> TokenSinkResult<()> {
        let mut st = self.0.borrow_mut();
        match token {
            Token::CharacterTokens(t) => st.text(t),
            Token::TagToken(tag) => match tag.kind {
                TagKind::StartTag => return st.start_tag(tag),
                TagKind::EndTag => st.end_tag(tag),
            },
            _ => {}
        }
        TokenSinkResult::Continue
    }
}

impl TokenSink for Collector {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        self.take(&token)
    }
}

/// Tokenizes `html` once and collects everything [`super::Page`] needs.
#[must_use]
pub fn tokenize(html: &str, max_links: usize, max_text: usize) -> Tokenized {
    let tok = Tokenizer::new(Collector(RefCell::new(State::new(max_links, max_text))), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    let _ = tok.feed(&input);
    tok.end();
    tok.sink.0.into_inner().finish()
}
