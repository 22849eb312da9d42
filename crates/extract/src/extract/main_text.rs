//! The main text of a page: its article, without menus, banners, teasers,
//! comment threads and footers (docs/src/main-text.md).
//!
//! It works on the block tree that the crawl's single tokenizer pass
//! already made ([`crate::parse::Structure`]): no second parse, no DOM.
//! The method is text density, as the field's extractors refine it:
//!
//! 1. **Paragraphs** are blocks with text of their own, little of it in
//!    links (link density below 1/2), and enough of it (25 characters).
//!    Each scores 1, plus one per 100 characters (at most 3), plus one per
//!    comma, and gives its score to the block that holds it and half of it
//!    to the one above: dense text makes its container dense.
//! 2. **Containers** are scored by what they received, times one minus
//!    their link density (text inside links over all text, the whole
//!    subtree), plus what their element and names say (never more than
//!    twice what the text earned): `<article>`, `<main>`,
//!    `itemprop=articleBody`, `class="post-body"` up; `<nav>`, `<aside>`,
//!    `<footer>`, a `<form>` without paragraphs, `class="comments"`,
//!    `cookie-banner`, `related` down. A block named as boilerplate keeps
//!    a quarter of its score, its content name's bonus included, and so
//!    does every block under it: a long comment thread must not win. A
//!    name is overruled by the text when the block holds most of the
//!    paragraphs ([`misnamed`]), never a comment thread's or a consent
//!    dialog's, nor any name under one of those.
//! 3. The **densest container** is the main content, widened to the
//!    ancestor that holds the whole article (through wrappers, up steps
//!    that add a quarter more clean text, and up a wrapper that adds a
//!    lead: a paragraph without links) and to its `<article>` or
//!    `<main>`, or replaced by the page's marked article (`<article>`,
//!    `itemprop=articleBody`) when that holds over twice its paragraph
//!    text; its siblings join it when they score at least a fifth of
//!    it, or are paragraphs of their own (a long one, or one without
//!    links), or hold nothing but paragraphs without links.
//! 4. Inside, boilerplate is dropped: navigation, asides, forms, footers,
//!    blocks named as comments, share bars, captions, link lists
//!    (mostly links, no paragraphs) and short paragraphs all of link; a
//!    heading whose section was all dropped goes with it, and so does a
//!    line that is only a date or a time, or the page's furniture
//!    ([`lines`]).
//! 5. Pages whose densest container holds little text fall back to the
//!    JSON-LD `articleBody` when there is one, else to the page's text
//!    without boilerplate and link-dense blocks.
//!
//! The result keeps the structure: one line per paragraph, heading, list
//! item, cell or code line; [`TextFormat::Markdown`] marks headings, list
//! items, quotes and code.

use super::{Column, ColumnType, Extractor, PageInput, Tuning, Value};
use crate::parse::tokens::{Block, BlockTag, SegKind, Segment};
use crate::parse::Structure;

mod options;
pub use options::{StoreText, TextFormat};

/// The `main_text` column (a built-in extractor).
pub struct MainText {
    pub format: TextFormat,
    /// Whether the column is filled (`--store-text`); when not, it stays in
    /// the schema, null, and the main text is computed only if another
    /// extractor asks for it.
    pub stored: bool,
}

impl Extractor for MainText {
    fn name(&self) -> &str {
        "main_text"
    }

    fn columns(&self) -> Vec<Column> {
        vec![Column::new("main_text", ColumnType::Utf8).tuned(Tuning::BULK)]
    }

    fn extract(&self, input: &PageInput<'_>, out: &mut Vec<Value>) {
        if !self.stored {
            out.push(Value::Null);
            return;
        }
        let text = input.parsed.and_then(|p| p.main_text(self.format));
        out.push(text.map_or(Value::Null, |t| Value::Utf8(t.into_owned())));
    }
}

/// Characters of own text below which a block is not a paragraph.
const MIN_PARAGRAPH: u32 = 25;
/// Characters below which the densest container is not an article.
const MIN_ARTICLE: u64 = 150;

/// What the scoring needs per block.
#[derive(Clone, Copy, Default)]
struct Stats {
    /// Non-space characters of the whole subtree, and of those in links.
    sub_text: u64,
    sub_anchor: u64,
    commas: u32,
    /// Score received from paragraphs.
    score: f64,
    /// Characters outside links of the paragraphs in the subtree.
    para: u64,
}

/// The main text of the page, or `None` when it has no text at all.
#[must_use]
pub fn main_text(s: &Structure, format: TextFormat) -> Option<String> {
    match select(s)? {
        Selected::Blocks(inside) => Some(render(s, &inside.inside, format)).filter(|t| !t.is_empty()),
        Selected::ArticleBody(body) => Some(body),
    }
}

/// Why each block is or is not main text, one line per block with text
/// (element, hint, own and link characters, score, in or out): for
/// finding out why a page's text came out as it did.
#[must_use]
pub fn explain(s: &Structure) -> String {
    let Some(Selected::Blocks(sel)) = select(s) else { return "no blocks, or the JSON-LD articleBody".into() };
    let mut out = String::new();
    let mut first_line = vec![None; s.blocks.len()];
    for seg in &s.segments {
        if first_line[seg.block].is_none() && seg.end > seg.start {
            let t = &s.text[seg.start..seg.end];
            first_line[seg.block] = Some(t.chars().take(60).collect::<String>());
        }
    }
    for (i, b) in s.blocks.iter().enumerate() {
        if sel.stats[i].sub_text == 0 {
            continue;
        }
        out.push_str(&format!(
            "{i:>5} <{:?}> parent {} hint {} own {} links {} sub {} para {} score {:.1} {}{} {}\n",
            b.tag,
            b.parent,
            b.hint,
            b.text_chars,
            b.anchor_chars,
            sel.stats[i].sub_text,
            sel.stats[i].para,
            sel.final_scores[i],
            if sel.top == i { "TOP " } else { "" },
            if sel.inside[i] { "in" } else { "out" }, // not a dataset: inside the main text
            first_line[i].as_deref().unwrap_or("")
        ));
    }
    out
}

/// What the main text is made of.
enum Selected {
    Blocks(Selection),
    ArticleBody(String),
}

struct Selection {
    inside: Vec<bool>,
    stats: Vec<Stats>,
    final_scores: Vec<f64>,
    top: usize,
}

fn select(s: &Structure) -> Option<Selected> {
    if s.blocks.is_empty() || s.text.is_empty() {
        return None;
    }
    let blocks = &s.blocks;
    let mut stats = vec![Stats::default(); blocks.len()];
    for seg in &s.segments {
        let st = &mut stats[seg.block];
        if st.commas < MAX_COMMAS && is_paragraph(&blocks[seg.block]) {
            st.commas += commas(&s.text.as_bytes()[seg.start..seg.end], MAX_COMMAS - st.commas);
        }
    }
    for (i, b) in blocks.iter().enumerate() {
        stats[i].sub_text += u64::from(b.text_chars);
        stats[i].sub_anchor += u64::from(b.anchor_chars);
        if is_paragraph(b) {
            stats[i].para += u64::from(b.text_chars - b.anchor_chars);
        }
    }
    // Children come after their parents: one backward pass sums subtrees.
    for i in (1..blocks.len()).rev() {
        let p = blocks[i].parent as usize;
        let (t, a, para) = (stats[i].sub_text, stats[i].sub_anchor, stats[i].para);
        stats[p].sub_text += t;
        stats[p].sub_anchor += a;
        stats[p].para += para;
    }
    for (i, b) in blocks.iter().enumerate() {
        if !is_paragraph(b) {
            continue;
        }
        let own = f64::from(b.text_chars - b.anchor_chars);
        let score = 1.0 + (own / 100.0).min(3.0) + f64::from(stats[i].commas);
        let parent = b.parent as usize;
        if matches!(b.tag, BlockTag::Paragraph | BlockTag::Cell) || i == 0 {
            stats[parent].score += score;
            if parent != 0 {
                stats[blocks[parent].parent as usize].score += score / 2.0;
            }
        } else {
            // A container with text of its own is its own paragraph's holder.
            stats[i].score += score;
            stats[parent].score += score / 2.0;
        }
    }
    // One pass over the blocks, parents before children, for what their
    // names and elements say and their final scores. Under a block named
    // as boilerplate (a consent dialog's sections, a comment thread's
    // posts) is boilerplate too, whatever its own name, unless the name is
    // overruled by the text (see [`misnamed`]).
    let n = blocks.len();
    let (mut boiler, mut overrulable, mut firm) = (vec![false; n], vec![false; n], vec![false; n]);
    let (mut named, mut final_scores) = (vec![false; n], vec![0.0; n]);
    for (i, (b, st)) in blocks.iter().zip(&stats).enumerate() {
        boiler[i] = is_boilerplate(b, st);
        let p = b.parent as usize;
        firm[i] = b.firm || (i > 0 && firm[p]);
        overrulable[i] = may_be_misnamed(b, st) && !firm[i];
        let inherited = i > 0 && named[p] && !(overrulable[p] && misnamed(&stats[p], stats[0].para));
        named[i] = b.hint < 0 || inherited;
        if st.score > 0.0 {
            // Boilerplate by name keeps a quarter of its score, the bonus of
            // its own content name included (a post's `entry-content` in a
            // forum's comments): a long comment thread must not outscore
            // the article. Names and elements count for as much as the
            // text inside at most: a teaser in an <article> of its own is
            // still a teaser.
            let named_down = if named[i] { 0.25 } else { 1.0 };
            let bias = bias(b, st);
            let bias = if named[i] && bias > 0.0 { bias * 0.25 } else { bias };
            final_scores[i] = st.score * (1.0 - link_density(st)) * named_down + bias.min(st.score * 2.0);
        }
    }
    let final_score = |i: usize| final_scores[i];
    let best = (0..blocks.len()).max_by(|&a, &b| final_score(a).total_cmp(&final_score(b)))?;
    let top_score = final_score(best);
    let mut top = semantic_container(blocks, &stats, &boiler, climb(blocks, &boiler, best));
    // A second opinion: the block marked as the article (`<article>`,
    // `itemprop=articleBody`, `role=main`) holding the most paragraph text
    // wins when it holds far more of it than the densest block.
    let marked = (1..blocks.len())
        .filter(|&i| matches!(blocks[i].tag, BlockTag::Article) || blocks[i].hint >= 2)
        .max_by_key(|&i| stats[i].para);
    if let Some(m) = marked {
        if stats[m].para > stats[top].para.saturating_mul(2) && stats[m].para >= 300 {
            top = climb(blocks, &boiler, m);
        }
    }
    // Inside the main content, the text overrules a name (see [`misnamed`]).
    let dropped: Vec<bool> =
        (0..n).map(|i| boiler[i] && !(overrulable[i] && misnamed(&stats[i], stats[top].para))).collect();
    let mut chosen = vec![false; blocks.len()];
    if top_score > 0.0 {
        chosen[top] = true;
        let parent = blocks[top].parent;
        let threshold = (top_score * 0.2).max(10.0);
        for (i, b) in blocks.iter().enumerate() {
            if i == top || i == 0 || b.parent != parent || top == 0 {
                continue;
            }
            let own = b.text_chars - b.anchor_chars;
            let joins = final_score(i) >= threshold
                || (is_paragraph(b) && b.hint >= 0 && (own >= 80 && link_density(&stats[i]) < 0.25))
                || (is_paragraph(b) && b.hint >= 0 && b.anchor_chars == 0 && own >= MIN_PARAGRAPH)
                || (b.hint >= 0 && wraps_clean_paragraphs(&stats[i]));
            chosen[i] = joins && !dropped[i];
        }
    }
    // Blocks in the main content: under a chosen block, not under boilerplate.
    let mut inside = vec![false; blocks.len()];
    for i in 0..blocks.len() {
        let up = if i == 0 { false } else { inside[blocks[i].parent as usize] };
        let start = chosen[i] || up;
        inside[i] = start && (chosen[i] || !dropped[i]);
    }
    let article_chars: u64 = (0..blocks.len())
        .filter(|&i| inside[i])
        .map(|i| u64::from(blocks[i].text_chars - blocks[i].anchor_chars))
        .sum();
    if article_chars < MIN_ARTICLE {
        if let Some(body) = json_ld_article_body(&s.meta.json_ld) {
            return Some(Selected::ArticleBody(body));
        }
        // No article: the page's text without boilerplate and link-dense blocks.
        let mut kept = vec![true; blocks.len()];
        for (i, b) in blocks.iter().enumerate() {
            let dropped = i != 0 && (boiler[i] || !kept[b.parent as usize]);
            kept[i] = !dropped;
            inside[i] = kept[i] && b.ratio() < 0.5;
        }
    }
    Some(Selected::Blocks(Selection { inside, stats, final_scores, top }))
}

/// Climbs from the densest container to the ancestor that holds the whole
/// article: a long article is often split into sections of which one is
/// densest. Each step up must add a quarter more clean text (boilerplate
/// children left out) and keep links under a third of it.
fn climb(blocks: &[Block], boiler: &[bool], from: usize) -> usize {
    // Text outside links, inside links, and in paragraphs, without
    // boilerplate subtrees.
    let mut clean = vec![(0u64, 0u64, 0u64); blocks.len()];
    for (i, b) in blocks.iter().enumerate() {
        let own = u64::from(b.text_chars - b.anchor_chars);
        clean[i] = (own, u64::from(b.anchor_chars), if is_paragraph(b) { own } else { 0 });
    }
    for i in (1..blocks.len()).rev() {
        if boiler[i] {
            continue;
        }
        let p = blocks[i].parent as usize;
        let (t, a, para) = clean[i];
        clean[p].0 += t;
        clean[p].1 += a;
        clean[p].2 += para;
    }
    let (mut cur, mut reached) = (from, from);
    while cur != 0 {
        let p = blocks[cur].parent as usize;
        if p == 0 || boiler[p] {
            break;
        }
        let (t, a, para) = clean[p];
        #[allow(clippy::cast_precision_loss)]
        let links = a as f64 / (t + a).max(1) as f64;
        if links >= 1.0 / 3.0 {
            break;
        }
        if t * 4 >= clean[cur].0 * 5 {
            (cur, reached) = (p, p);
        } else if t * 10 <= clean[reached].0 * 11 {
            // A wrapper, with next to no text besides: climbed through, but
            // only kept if a step above it adds text, or if what it adds is
            // a paragraph without links (the article's lead above its body)
            // and little else.
            // Saturating: a densest block that is boilerplate (a `<footer>`
            // of comma-dense text) is not counted in its parent's clean
            // text, which is then the smaller.
            let (added, added_para) = (t.saturating_sub(clean[reached].0), para.saturating_sub(clean[reached].2));
            if a == clean[reached].1 && added_para >= u64::from(MIN_PARAGRAPH) && added_para * 4 >= added * 3 {
                reached = p;
            }
            cur = p;
        } else {
            break;
        }
    }
    reached
}

/// The `<article>` or `<main>` (or a block named the article body) that
/// holds the chosen container, when there is one and it is not mostly
/// other text: its headline, lead and sections belong to the article too.
fn semantic_container(blocks: &[Block], stats: &[Stats], boiler: &[bool], from: usize) -> usize {
    let mut cur = from;
    let mut best = from;
    while cur != 0 {
        let b = &blocks[cur];
        if boiler[cur] {
            break;
        }
        let semantic = matches!(b.tag, BlockTag::Article | BlockTag::Main) || b.hint >= 2;
        if semantic && stats[cur].sub_text <= stats[from].sub_text.saturating_mul(3) && link_density(&stats[cur]) < 0.5
        {
            best = cur;
        }
        cur = b.parent as usize;
    }
    best
}

/// Commas a paragraph scores for, at most.
const MAX_COMMAS: u32 = 20;

/// Commas in `text` (`,` and the CJK and Arabic ones), counted up to
/// `max`, with SIMD byte search: the wide ones are looked for only where
/// their lead bytes occur.
fn commas(text: &[u8], max: u32) -> u32 {
    const WIDE: [&[u8]; 3] = ["，".as_bytes(), "、".as_bytes(), "،".as_bytes()];
    let max = max as usize;
    let mut n = memchr::memchr_iter(b',', text).take(max).count();
    if n < max {
        n += memchr::memchr3_iter(WIDE[0][0], WIDE[1][0], WIDE[2][0], text)
            .filter(|&i| WIDE.iter().any(|w| text[i..].starts_with(w)))
            .take(max - n)
            .count();
    }
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn link_density(st: &Stats) -> f64 {
    if st.sub_text == 0 {
        1.0
    } else {
        #[allow(clippy::cast_precision_loss)]
        let d = st.sub_anchor as f64 / st.sub_text as f64;
        d
    }
}

fn is_paragraph(b: &Block) -> bool {
    b.text_chars >= b.anchor_chars + MIN_PARAGRAPH && b.anchor_chars * 2 < b.text_chars
}

/// What the element and its names add to a container's score.
fn bias(b: &Block, st: &Stats) -> f64 {
    let tag = match b.tag {
        BlockTag::Article => 10.0,
        BlockTag::Main => 5.0,
        BlockTag::Nav | BlockTag::Aside | BlockTag::Footer => -25.0,
        BlockTag::Form if !wraps_text(st) => -25.0,
        BlockTag::Header => -10.0,
        _ => 0.0,
    };
    tag + f64::from(b.hint) * 15.0
}

/// A block that holds paragraphs and nothing else, without a link (a
/// lead or a section's text wrapped in a `<div>` of its own): a sibling
/// of the main content that joins it.
fn wraps_clean_paragraphs(st: &Stats) -> bool {
    st.sub_anchor == 0 && st.para >= u64::from(MIN_PARAGRAPH) && st.para * 10 >= st.sub_text * 8
}

/// A form that holds paragraphs of text: a page wrapped in one form (as
/// ASP.NET pages are) or a shop's product text inside its order form.
fn wraps_text(st: &Stats) -> bool {
    st.para >= 200
}

/// Blocks dropped inside the main content: named boilerplate, and link
/// lists (mostly links, and no paragraphs to speak of).
fn is_boilerplate(b: &Block, st: &Stats) -> bool {
    matches!(b.tag, BlockTag::Nav | BlockTag::Aside | BlockTag::Footer)
        || (b.tag == BlockTag::Form && !wraps_text(st))
        || b.hint < 0
        || (b.tag != BlockTag::Paragraph && st.sub_text > 0 && link_density(st) > 0.5 && st.para < MIN_ARTICLE)
        || (b.tag == BlockTag::Paragraph
            && b.text_chars > 0
            && b.anchor_chars * 10 >= b.text_chars * 9
            && b.text_chars < 100)
}

/// A block whose class or id names it boilerplate but which holds
/// paragraphs of text with few links: it is [`misnamed`] when that is most
/// of the main content's text. Only names are overruled, not elements or
/// roles, and never a comment thread's.
fn may_be_misnamed(b: &Block, st: &Stats) -> bool {
    b.hint == -1 && !b.firm && st.para >= 400 && link_density(st) < 0.2
}

/// A block that [`may_be_misnamed`] holding at least half of the main
/// content's paragraph text (of `top_para` characters): script hooks and
/// ad slots put on the article body itself (`js-dynamic-advertorial`,
/// `js-truncate-related`, `banners-contenido`) name the wrong thing.
fn misnamed(st: &Stats, top_para: u64) -> bool {
    st.para * 2 >= top_para
}

/// The text of the runs whose block is inside, one line each.
fn render(s: &Structure, inside: &[bool], format: TextFormat) -> String {
    // The page's text bounds the main text: one allocation, no growing.
    let mut out = String::with_capacity(s.text.len() + 1);
    let mut in_code = false;
    // Headings wait for text of their own: one whose section was all
    // boilerplate ("Related articles" over a dropped link list) is dropped.
    let mut pending: Vec<&Segment> = Vec::new();
    // A label ("Quellenangaben:", "Mehr Themen:") waits for what it
    // introduces: one followed by boilerplate, a heading or the end
    // introduces nothing of the article and is dropped too
    // (docs/src/main-text.md, step 4). `gap`: text was skipped since.
    let (mut label, mut gap): (Option<&Segment>, bool) = (None, false);
    for seg in &s.segments {
        if seg.end <= seg.start {
            continue;
        }
        // Datelines and the page's furniture ("Share", "Read more",
        // "Advertisement") are not the article's text.
        let line = &s.text[seg.start..seg.end];
        if !inside[seg.block]
            || seg.kind == SegKind::Caption
            || (seg.kind == SegKind::Text && lines::is_date_line(line))
            || (seg.kind != SegKind::Pre && lines::is_furniture(line))
        {
            gap |= label.is_some();
            continue;
        }
        if let SegKind::Heading(level) = seg.kind {
            label = None;
            let continues =
                pending.last().is_some_and(|p| p.kind == seg.kind && p.block == seg.block && p.end + 1 >= seg.start);
            if !continues {
                pending.retain(|p| matches!(p.kind, SegKind::Heading(l) if l < level));
            }
            pending.push(seg);
            continue;
        }
        if seg.kind == SegKind::Text && lines::is_label(line) {
            // A label after a label: the first introduced nothing.
            (label, gap) = (Some(seg), false);
            continue;
        }
        for heading in pending.drain(..) {
            emit(&mut out, s, heading, format, &mut in_code);
        }
        if let Some(l) = label.take() {
            if !gap {
                emit(&mut out, s, l, format, &mut in_code);
            }
        }
        gap = false;
        emit(&mut out, s, seg, format, &mut in_code);
    }
    if in_code {
        push_line(&mut out, "```");
    }
    // Rows wait in memory for their batch: room left over is given back
    // (a copy of a text much shorter than the page's).
    if out.capacity() > out.len() * 2 {
        out.shrink_to_fit();
    }
    out
}

/// One run of text as a line of the main text.
fn emit(out: &mut String, s: &Structure, seg: &Segment, format: TextFormat, in_code: &mut bool) {
    let line = &s.text[seg.start..seg.end];
    if format == TextFormat::Plain {
        push_line(out, line);
        return;
    }
    let code = seg.kind == SegKind::Pre;
    if code != *in_code {
        push_line(out, "```");
        *in_code = code;
    }
    match seg.kind {
        SegKind::Heading(level) => {
            push_line(out, &format!("{} {line}", "#".repeat(usize::from(level.clamp(1, 6)))));
        }
        SegKind::Item => push_line(out, &format!("- {line}")),
        SegKind::Quote => push_line(out, &format!("> {line}")),
        _ => push_line(out, line),
    }
}

fn push_line(out: &mut String, line: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(line);
}

/// The `articleBody` of the page's JSON-LD, when one is long enough to be
/// an article.
fn json_ld_article_body(scripts: &[String]) -> Option<String> {
    fn find(v: &serde_json::Value) -> Option<&str> {
        match v {
            serde_json::Value::Object(m) => {
                m.get("articleBody").and_then(serde_json::Value::as_str).or_else(|| m.values().find_map(find))
            }
            serde_json::Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    scripts.iter().find_map(|s| {
        let v: serde_json::Value = serde_json::from_str(s.trim()).ok()?;
        let body = find(&v)?.split_whitespace().collect::<Vec<_>>().join(" ");
        (body.len() as u64 >= MIN_ARTICLE).then_some(body)
    })
}

mod lines;
#[cfg(test)]
mod tests;
