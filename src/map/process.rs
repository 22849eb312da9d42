//! Turning one fetched URL into its `doc` row and `links` rows (CPU work,
//! run on the rayon pool, never on an async worker thread).

use std::sync::Arc;

use url::Url;
use xxhash_rust::xxh3::xxh3_64;

use crate::config::{BodyPolicy, Denoise};
use crate::denoise::evidence::Sample;
use crate::denoise::NoiseLabel;
use crate::extract::boilerplate::{PageLines, SiteBoilerplate};
use crate::extract::{Extractors, PageInput, PageRows, ParsedPage, Value};
use crate::fetch::{ErrorKind, Fetched};
use crate::parse::{self, ParseConfig};
use crate::rules::{PageItems, Rules};
use crate::store::schema::{DocRow, LinkRow};
use crate::urlnorm;

use crate::scope::ScopeFilter;

/// Fixed inputs of the processing of one partition's pages.
#[derive(Clone, Debug)]
pub struct ProcessCtx {
    pub partition: i32,
    pub parse: ParseConfig,
    /// Which of `text` and `main_text` are stored (`--store-text`).
    pub store_text: crate::extract::main_text::StoreText,
    pub store_body: BodyPolicy,
    pub scope: ScopeFilter,
    /// Links marked nofollow: obeyed or ignored (`--nofollow`).
    pub nofollow: crate::config::values::Nofollow,
    pub denoise: Denoise,
    /// The run's extractors (none by default).
    pub extract: Extractors,
    /// The run's rules (`--rules`), if any.
    pub rules: Option<Arc<Rules>>,
    /// With a crawl plan (`--plan`): what scores the page's links.
    pub plan: Option<Arc<crate::focus::LinkScoring>>,
    /// With `--warc`: the task's archive, which the page's records are
    /// built for.
    pub warc: Option<Arc<crate::warc::TaskArchive>>,
    /// With `--site-boilerplate on` and a `main_text` column: the column's
    /// place in `DocRow::extra`, and the boilerplate lines that this
    /// partition's hosts showed in earlier layers (none in layer 0).
    pub site: Option<(usize, Option<Arc<SiteBoilerplate>>)>,
    /// The `main_text` column's place in `DocRow::extra`, if the run
    /// extracts it: the noise filter compares pages by it.
    pub main_text: Option<usize>,
}

/// The rows of one fetched URL.
#[derive(Debug)]
pub struct Processed {
    pub doc: DocRow,
    pub links: Vec<LinkRow>,
    /// What the noise filter learns from this page (none with `--denoise off`).
    pub sample: Option<Sample>,
    /// The rule that matched the page, with its items (none for `nav`
    /// rules) and the count of links it did not follow.
    pub rule: Option<(PageItems, u64)>,
    /// The rows the run's row extractors made of the page (entities,
    /// relations), one list per dataset; none without row extractors.
    pub rows: PageRows,
    /// The page's WARC records, compressed (`--warc`; none when nothing
    /// was exchanged).
    pub warc: Option<crate::warc::PageRecords>,
    /// The host and the lines of its main text, as extracted, for the
    /// cross-page boilerplate of later layers (`--site-boilerplate`).
    pub lines: Option<(String, PageLines)>,
}

/// Runs [`process`], turning a panic (a parser bug met on a hostile page)
/// into an error row instead of aborting the run: rayon aborts the process
/// on a panicking job, so it must not escape.
pub(super) fn process_guarded(
    pctx: &ProcessCtx,
    f: Fetched,
    depth: i32,
    referrer: Option<String>,
    anchor: Option<&str>,
) -> Processed {
    let url = f.url.to_string();
    let host = f.url.host_str().unwrap_or_default().to_string();
    let status = f.response.as_ref().map_or(0, |r| i32::from(r.status));
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| process(pctx, f, depth, referrer.clone(), anchor))) {
        Ok(p) => p,
        Err(_) => {
            tracing::error!(%url, "processing the page panicked; recorded as error `parse_panic`");
            Processed {
                doc: DocRow {
                    final_url: url.clone(),
                    url,
                    domain: urlnorm::registrable_domain(&host),
                    host,
                    depth,
                    partition: pctx.partition,
                    status,
                    error: Some(ErrorKind::ParsePanic),
                    error_detail: Some("the page made the parser panic; it was skipped".into()),
                    referrer,
                    ..DocRow::default()
                },
                links: Vec::new(),
                sample: None,
                rule: None,
                rows: crate::extract::PageRows::default(),
                warc: None,
                lines: None,
            }
        }
    }
}

/// Builds the rows of `f`, fetched at `depth` with `referrer`, reached by
/// a link whose anchor text was `anchor` (the input's, with a plan).
#[must_use]
pub fn process(ctx: &ProcessCtx, f: Fetched, depth: i32, referrer: Option<String>, anchor: Option<&str>) -> Processed {
    // Built first: the body may not be kept in the row (`--store-body`).
    let warc = ctx.warc.as_deref().and_then(|a| a.page(&f));
    let host = f.url.host_str().unwrap_or_default().to_string();
    let mut doc = DocRow {
        url: f.url.to_string(),
        final_url: f.final_url.to_string(),
        domain: urlnorm::registrable_domain(&host),
        host,
        depth,
        partition: ctx.partition,
        error: f.error.as_ref().map(|e| e.0),
        error_detail: f.error.as_ref().map(|e| e.1.clone()),
        fetched_at_us: micros(f.started_at),
        fetch_ms: i64::try_from(f.elapsed.as_millis()).unwrap_or(i64::MAX),
        redirects: i32::try_from(f.redirects).unwrap_or(i32::MAX),
        referrer,
        ..DocRow::default()
    };
    let mut links = Vec::new();
    let mut rule_out = None;
    let mut rows = PageRows::default();
    let mut lines = None;
    let mut sample =
        (ctx.denoise != Denoise::Off).then(|| Sample { redirect_out: f.redirect_out.is_some(), ..Sample::default() });
    if let Some(target) = &f.redirect_out {
        links.push(link(ctx, &doc.url, target, String::new(), depth, false, 0.0));
    }
    if let Some(resp) = f.response {
        doc.status = i32::from(resp.status);
        doc.content_type.clone_from(&resp.content_type);
        doc.etag.clone_from(&resp.etag);
        doc.rendered = resp.rendered;
        doc.last_modified.clone_from(&resp.last_modified);
        doc.content_length = i64::try_from(resp.received).unwrap_or(i64::MAX);
        doc.truncated = resp.truncated;
        let ok = (200..300).contains(&resp.status);
        let html = ok && parse::is_html(resp.content_type.as_deref(), &resp.body);
        // A body cut by a reset is kept but not parsed for links: half a
        // page's links are real, but its text and hash would mislead.
        let parse_it = html && !matches!(f.error, Some((ErrorKind::Reset | ErrorKind::Decode | ErrorKind::Timeout, _)));
        // A page a rule matches and reads through its DOM gets the DOM from
        // the same tokenizer pass (docs/src/rules.md).
        let matched = ctx.rules.as_deref().and_then(|r| r.matching(f.final_url.as_str()));
        let with_dom = matched.is_some_and(|(_, r)| r.needs_dom());
        let parsed = parse_it.then(|| {
            let (body, ct) = (&resp.body, resp.content_type.as_deref());
            if with_dom {
                ParsedPage::parse_with_dom(body, ct, &f.final_url, &ctx.parse)
            } else {
                ParsedPage::parse(body, ct, &f.final_url, &ctx.parse)
            }
        });
        // Extraction: every registered extractor reads the one
        // parsed form of the page (ARCHITECTURE.md, "Where to plug in"); then
        // the row extractors, on the same parse and main text.
        let input = PageInput {
            url: &f.url,
            final_url: &f.final_url,
            status: resp.status,
            content_type: resp.content_type.as_deref(),
            body: &resp.body,
            parsed: parsed.as_ref(),
            anchor,
        };
        if !ctx.extract.is_empty() {
            doc.extra = ctx.extract.extract(&input);
        }
        // Cross-page boilerplate (docs/src/main-text.md): the main text's
        // lines are counted for later layers as extracted, then its edges
        // are trimmed with what earlier layers learned.
        if let Some((column, site)) = &ctx.site {
            if let Some(Value::Utf8(text)) = doc.extra.get_mut(*column) {
                lines = Some((doc.host.clone(), PageLines::of(text)));
                if let Some(trimmed) = site.as_ref().and_then(|s| s.trim(&doc.host, text)) {
                    *text = trimmed;
                }
            }
        }
        if !ctx.extract.datasets().is_empty() {
            rows = ctx.extract.rows(&input);
        }
        // Rules run on the same parse (docs/src/rules.md): the first rule
        // matching the page's final URL makes its items and may hold some
        // of its links back.
        let mut decision = None;
        if let (Some((index, rule)), Some(p)) = (matched, parsed.as_ref()) {
            rule_out = Some((rule.items(index, p, &f.final_url), 0));
            decision = rule.link_decision(Some(p), &f.final_url, depth, &ctx.parse.urls);
        }
        if let Some(page) = parsed.map(ParsedPage::into_page) {
            doc.charset = Some(page.encoding.name().to_ascii_lowercase());
            doc.title = page.title;
            if !page.text.is_empty() {
                doc.content_hash = Some(xxh3_64(page.text.as_bytes()));
            }
            if let Some(s) = sample.as_mut() {
                // What the page brings, as the crawl stores it: its main
                // text (after the site's boilerplate was trimmed), or its
                // whole text when the run extracts no main text.
                let text = match ctx.main_text {
                    Some(i) => match doc.extra.get(i) {
                        Some(Value::Utf8(t)) => t.as_str(),
                        // A page without main text keeps none.
                        _ => "",
                    },
                    None => &page.text,
                };
                s.html = true;
                s.text_chars = u32::try_from(text.chars().count()).unwrap_or(u32::MAX);
                s.text_hash = crate::denoise::evidence::text_hash(text);
            }
            doc.text = ctx.store_text.visible().then_some(page.text);
            let obeyed = ctx.nofollow.obeyed();
            let nofollow_page = page.meta_nofollow && obeyed;
            links.reserve(page.links.len());
            let parent = ctx.plan.as_ref().and_then(|p| p.relevance(&doc.extra));
            // A row extractor's opinion of the links (`--prefer-entities`),
            // averaged with the plan's link score when there is a plan.
            let preferred = if ctx.extract.datasets().is_empty() {
                None
            } else {
                let anchors: Vec<&str> = page.links.iter().map(|l| l.anchor.as_str()).collect();
                ctx.extract.link_scores(&rows, &anchors)
            };
            for (i, l) in page.links.into_iter().enumerate() {
                let planned = ctx.plan.as_ref().map(|p| p.scorer.link_score(&l.anchor, parent, &l.url));
                #[allow(clippy::cast_possible_truncation)]
                let score = match (planned, preferred.as_ref().and_then(|p| p.get(i).copied())) {
                    (Some(a), Some(b)) => Some(((a + b) / 2.0) as f32),
                    (Some(a), None) | (None, Some(a)) => Some(a as f32),
                    (None, None) => None,
                };
                let mut row = link(
                    ctx,
                    &doc.url,
                    &l.url,
                    l.anchor,
                    depth,
                    nofollow_page || (l.nofollow && obeyed),
                    l.block_ratio,
                );
                row.score = score;
                if let Some(d) = &decision {
                    if row.noise.is_none_or(|n| n == NoiseLabel::DomRatio) && !d.follows(&row.dst_url) {
                        row.noise = Some(NoiseLabel::Rule);
                        row.followed = false;
                        if let Some((_, dropped)) = rule_out.as_mut() {
                            *dropped += 1;
                        }
                    }
                }
                links.push(row);
            }
        } else if ok && !resp.body.is_empty() {
            doc.content_hash = Some(xxh3_64(&resp.body));
            // A file that is not HTML brings its body when the run keeps it.
            if let Some(s) = sample.as_mut().filter(|_| ctx.store_body == BodyPolicy::All) {
                s.text_hash = doc.content_hash;
            }
            doc.charset = charset_param(resp.content_type.as_deref());
        }
        let keep_body = match ctx.store_body {
            BodyPolicy::All => true,
            BodyPolicy::Html => html,
            BodyPolicy::None => false,
        };
        if keep_body {
            doc.body = Some(resp.body);
        }
    }
    doc.outlinks = count(links.iter().filter(|l| l.followed));
    doc.noise_links = count(links.iter().filter(|l| l.noise.is_some()));
    if let Some(s) = sample.as_mut() {
        s.url.clone_from(&doc.url);
        // An answer cut short (a reset, a timeout) is no evidence.
        s.status = if doc.error.is_some() { 0 } else { doc.status };
    }
    Processed { doc, links, sample, rule: rule_out, rows, warc, lines }
}

/// A link row with its noise label: hard reasons (`nofollow`, `scope`)
/// first, then the link-text-ratio prefilter when `--denoise` is on.
fn link(
    ctx: &ProcessCtx,
    src: &str,
    dst: &Url,
    anchor: String,
    depth: i32,
    nofollow: bool,
    block_ratio: f32,
) -> LinkRow {
    let (noise, followed) = if nofollow {
        (Some(NoiseLabel::Nofollow), false)
    } else if !ctx.scope.allows(dst) {
        (Some(NoiseLabel::Scope), false)
    } else if ctx.denoise != Denoise::Off && block_ratio > ctx.parse.noise_ratio {
        // A suspect: followed unless the mode drops links by where they sit.
        (Some(NoiseLabel::DomRatio), ctx.denoise.follows_suspects())
    } else {
        (None, true)
    };
    LinkRow {
        src_url: src.to_string(),
        dst_url: dst.to_string(),
        anchor,
        depth: depth + 1,
        noise,
        followed,
        block_ratio,
        score: None,
    }
}

fn count<'a>(it: impl Iterator<Item = &'a LinkRow>) -> i32 {
    i32::try_from(it.count()).unwrap_or(i32::MAX)
}

fn micros(t: std::time::SystemTime) -> i64 {
    t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn charset_param(content_type: Option<&str>) -> Option<String> {
    let ct = content_type?.to_ascii_lowercase();
    let at = ct.find("charset=")?;
    let v = ct[at + 8..].split(';').next()?.trim().trim_matches('"');
    (!v.is_empty()).then(|| v.to_string())
}

#[cfg(test)]
mod fuzz;
