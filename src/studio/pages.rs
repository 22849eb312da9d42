//! Where the editor's sample pages come from: a crawl's stored bodies,
//! or the web, fetched politely (robots.txt, a per-host delay).

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, AsArray};
use bytes::Bytes;
use url::Url;

use super::{token, Page, Studio};
use crate::fetch::robots::{origin_of, RobotsRules};

/// The crawl's stored body of `url`, if the crawl stored one: its one file
/// streamed a row group at a time, not the crawl read whole.
pub(super) async fn stored_page(s: &Studio, url: &Url) -> Result<Option<Page>, String> {
    let (Some(store), Some(path)) = (&s.data, s.stored_in.get(url.as_str())) else { return Ok(None) };
    let columns: &[&str] = &["final_url", "content_type", "body"];
    let mut stream = crate::store::stream_batches(store, path, Some(columns)).await.map_err(|e| e.to_string())?;
    while let Some(b) = futures::StreamExt::next(&mut stream).await {
        let b = b.map_err(|e| e.to_string())?;
        let (Some(u), Some(body)) = (b.column_by_name("final_url"), b.column_by_name("body")) else { continue };
        let (u, body) = (u.as_string::<i32>(), body.as_binary::<i32>());
        let ct = b.column_by_name("content_type").map(|c| c.as_string::<i32>().clone());
        for i in 0..b.num_rows() {
            if u.value(i) == url.as_str() && !body.is_null(i) {
                let content_type = ct.as_ref().filter(|c| !c.is_null(i)).map(|c| c.value(i).to_string());
                return Ok(Some(Page {
                    nonce: token().map_err(|e| e.to_string())?,
                    url: url.clone(),
                    content_type,
                    body: Bytes::copy_from_slice(body.value(i)),
                    source: "stored",
                }));
            }
        }
    }
    Ok(None)
}

/// Fetches `url` now, politely: robots.txt first (once per origin), one
/// request per host per delay (or the site's `Crawl-delay`), redirects
/// followed under the same rules.
pub(super) async fn live_page(s: &Studio, url: &Url) -> Result<Page, String> {
    let mut url = url.clone();
    for _ in 0..10 {
        let rules = robots(s, &url).await;
        if !rules.allows(&url) {
            return Err(format!("robots.txt of {} disallows {url}; the editor does not fetch it", origin_of(&url)));
        }
        wait_turn(s, &url, rules.crawl_delay()).await;
        let resp = s.fetcher.get_once(&url).await.map_err(|(kind, why)| format!("{url}: {} ({why})", kind.as_str()))?;
        if (300..400).contains(&resp.status) {
            if let Some(next) = resp.location.as_deref().and_then(|l| url.join(l).ok()) {
                url = next;
                continue;
            }
        }
        if !(200..300).contains(&resp.status) {
            return Err(format!("{url}: HTTP status {}", resp.status));
        }
        let nonce = token().map_err(|e| e.to_string())?;
        return Ok(Page { nonce, url, content_type: resp.content_type, body: resp.body, source: "live" });
    }
    Err(format!("{url}: more than 10 redirects"))
}

pub(super) async fn robots(s: &Studio, url: &Url) -> Arc<RobotsRules> {
    let origin = origin_of(url);
    if let Some(r) = s.robots.lock().await.get(&origin) {
        return Arc::clone(r);
    }
    let robots_url = Url::parse(&format!("{origin}/robots.txt"));
    let resp = match &robots_url {
        Ok(u) => {
            wait_turn(s, u, None).await;
            s.fetcher.get_once(u).await
        }
        Err(e) => Err((crate::fetch::ErrorKind::Connect, e.to_string())),
    };
    let rules = Arc::new(RobotsRules::from_exchange(resp.as_ref(), &s.agent));
    s.robots.lock().await.insert(origin, Arc::clone(&rules));
    rules
}

/// Waits until this host's next request may start, and books the one after.
pub(super) async fn wait_turn(s: &Studio, url: &Url, crawl_delay: Option<Duration>) {
    let host = url.host_str().unwrap_or_default().to_string();
    let gap = crawl_delay.map_or(s.delay, |d| d.max(s.delay));
    let at = {
        let mut next = s.next.lock().await;
        let now = tokio::time::Instant::now();
        let at = next.get(&host).copied().unwrap_or(now).max(now);
        next.insert(host, at + gap);
        at
    };
    tokio::time::sleep_until(at).await;
}

/// Final URLs of the crawl's 2xx HTML pages (whose bodies it stores by
/// default; a page without one is fetched live when opened), each with its
/// file; three small columns streamed, no body read.
pub(super) async fn stored_urls(
    store: &crate::store::Store,
) -> Result<Vec<(String, String)>, crate::store::StoreError> {
    let mut out = Vec::new();
    let columns: &[&str] = &["final_url", "status", "content_type"];
    for path in store.parquet_files("doc").await? {
        let mut stream = crate::store::stream_batches(store, &path, Some(columns)).await?;
        while let Some(b) = futures::StreamExt::next(&mut stream).await {
            let b = b?;
            let (Some(u), Some(status), Some(ct)) =
                (b.column_by_name("final_url"), b.column_by_name("status"), b.column_by_name("content_type"))
            else {
                continue;
            };
            let (u, status, ct) =
                (u.as_string::<i32>(), status.as_primitive::<arrow::datatypes::Int32Type>(), ct.as_string::<i32>());
            for i in 0..b.num_rows() {
                if (200..300).contains(&status.value(i)) && !ct.is_null(i) && ct.value(i).contains("html") {
                    out.push((u.value(i).to_string(), path.clone()));
                }
            }
        }
    }
    Ok(out)
}
