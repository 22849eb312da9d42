//! The 304 replay of a conditional recrawl (`--previous`;
//! docs/src/recrawl.md): answers the server did not send a body for
//! become last night's pages, read back from their rows
//! ([`Previous::pages`]).

use url::Url;

use super::previous::{self, Previous};
use super::MapCtx;
use crate::error::StageError;
use crate::fetch::Fetched;
use crate::partition::partition_of_host;
use crate::store::manifest::MapManifest;

/// Turns 304 answers into last night's pages: each response becomes the
/// stored one (status, type, body, size) with tonight's validators when
/// the server sent new ones, so the page is processed as it was fetched
/// then. Counts what the 304s saved.
pub(super) async fn carry_forward(
    ctx: &MapCtx,
    part: u32,
    previous: &Previous,
    replay: Vec<(Fetched, previous::Entry)>,
    m: &mut MapManifest,
    fresh: &mut Vec<Fetched>,
) -> Result<Vec<Fetched>, StageError> {
    let entries: Vec<&previous::Entry> = replay.iter().map(|(_, e)| e).collect();
    let pages = previous.pages(&entries).await?;
    let mut out = Vec::with_capacity(replay.len());
    let mut again = Vec::new();
    for ((mut f, entry), page) in replay.into_iter().zip(pages) {
        let Some(page) = page else {
            // Last night's row kept no body after all (the parse found the
            // "HTML" binary): fetched again, without validators.
            again.push(f);
            continue;
        };
        if let Some(resp) = f.response.as_mut() {
            resp.status = page.status;
            resp.content_type = page.content_type;
            resp.received = u64::try_from(entry.content_length).unwrap_or(0);
            resp.body = page.body;
            resp.truncated = false;
            resp.etag = resp.etag.take().or(entry.validators.etag);
            resp.last_modified = resp.last_modified.take().or(entry.validators.last_modified);
        }
        m.unchanged += 1;
        m.bytes_saved += u64::try_from(entry.content_length).unwrap_or(0);
        let now = i64::try_from(f.elapsed.as_millis()).unwrap_or(i64::MAX);
        m.ms_saved += u64::try_from(entry.fetch_ms.saturating_sub(now)).unwrap_or(0);
        out.push(f);
    }
    if !again.is_empty() {
        let urls: Vec<String> = again.iter().map(|f| f.url.to_string()).collect();
        let (partitions, part) = (ctx.partitions, part);
        let scope = ctx.scope.clone();
        let follows =
            move |u: &Url| scope.allows(u) && partition_of_host(u.host_str().unwrap_or_default(), partitions) == part;
        for mut f in ctx.fetcher.fetch_list(urls, follows, ctx.deadline).await {
            f.id = again[f.id].id;
            fresh.push(f);
        }
    }
    Ok(out)
}
