//! Where the editor's sample pages come from: a crawl's stored bodies,
//! or the web, fetched politely (robots.txt, a per-host delay).

use std::sync::Arc;
use std::time::Duration;

use arrow_array::Array;
use bytes::Bytes;
use url::Url;

use super::{token, Page, Studio};
use crate::fetch::robots::{origin_of, RobotsRules};
use crate::store::schema::{binary_col, int32_col, string_col};

/// The crawl's stored body of `url`, if the crawl stored one: its one file
/// streamed a row group at a time, not the crawl read whole.
pub(super) async fn stored_page(s: &Studio, url: &Url) -> Result<Option<Page>, String> {
    let (Some(store), Some(path)) = (&s.data, s.stored_in.get(url.as_str())) else { return Ok(None) };
    let columns: &[&str] = &["final_url", "content_type", "body"];
    let mut stream = crate::store::stream_batches(store, path, Some(columns)).await.map_err(|e| e.to_string())?;
    while let Some(b) = futures::StreamExt::next(&mut stream).await {
        let b = b.map_err(|e| e.to_string())?;
        if b.column_by_name("final_url").is_none() || b.column_by_name("body").is_none() {
            continue;
        }
        // Checked, not cast: the data may hold files another tool wrote.
        let shown = store.display_path(path);
        let (u, body) = (
            string_col(&b, "final_url", &shown).map_err(|e| e.to_string())?,
            binary_col(&b, "body", &shown).map_err(|e| e.to_string())?,
        );
        let ct = match b.column_by_name("content_type") {
            Some(_) => Some(string_col(&b, "content_type", &shown).map_err(|e| e.to_string())?),
            None => None,
        };
        for i in 0..b.num_rows() {
            if u.value(i) == url.as_str() && !body.is_null(i) {
                let content_type = ct.filter(|c| !c.is_null(i)).map(|c| c.value(i).to_string());
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
    for path in store.parquet_files(crate::store::dataset::DOC.name).await? {
        let mut stream = crate::store::stream_batches(store, &path, Some(columns)).await?;
        while let Some(b) = futures::StreamExt::next(&mut stream).await {
            let b = b?;
            if columns.iter().any(|c| b.column_by_name(c).is_none()) {
                continue;
            }
            // Checked, not cast: the data may hold files another tool wrote.
            let shown = store.display_path(&path);
            let (u, status, ct) = (
                string_col(&b, "final_url", &shown)?,
                int32_col(&b, "status", &shown)?,
                string_col(&b, "content_type", &shown)?,
            );
            for i in 0..b.num_rows() {
                if (200..300).contains(&status.value(i)) && !ct.is_null(i) && ct.value(i).contains("html") {
                    out.push((u.value(i).to_string(), path.clone()));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, BinaryArray, Int32Array, Int64Array, LargeStringArray, StringArray, StringViewArray};

    const FILE: &str = "doc/layer=0/part-00000.parquet";

    /// A store holding one `doc` file of the given columns.
    async fn store_with(cols: Vec<(&str, ArrayRef)>) -> crate::store::Store {
        let batch = arrow_array::RecordBatch::try_from_iter(cols).expect("batch");
        let mut buf = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None).expect("writer");
        w.write(&batch).expect("write");
        w.close().expect("close");
        let store = crate::store::Store::open("memory://").expect("store");
        store.put(FILE, Bytes::from(buf)).await.expect("put");
        store
    }

    fn doc(swap: Vec<(&'static str, ArrayRef)>) -> Vec<(&'static str, ArrayRef)> {
        let mut cols: Vec<(&str, ArrayRef)> = vec![
            ("final_url", Arc::new(StringArray::from(vec!["http://a.test/"]))),
            ("status", Arc::new(Int32Array::from(vec![200]))),
            ("content_type", Arc::new(StringArray::from(vec!["text/html"]))),
            ("body", Arc::new(BinaryArray::from(vec![b"<p>x".as_slice()]))),
        ];
        for (name, col) in swap {
            cols.iter_mut().find(|c| c.0 == name).expect("a known column").1 = col;
        }
        cols
    }

    fn studio(store: crate::store::Store) -> Studio {
        let cfg = crate::fetch::FetchConfig::single_pages(Vec::new(), false, crate::fetch::Politeness::unpaced());
        Studio {
            file: "rules.toml".into(),
            token: String::new(),
            host: String::new(),
            samples: 5,
            parse: crate::parse::ParseConfig::default(),
            data: Some(store),
            data_name: None,
            stored: vec!["http://a.test/".into()],
            stored_in: [("http://a.test/".to_string(), FILE.to_string())].into(),
            pages: std::sync::Mutex::default(),
            fetcher: crate::fetch::Fetcher::new(&cfg).expect("fetcher"),
            agent: "layercrawl".into(),
            delay: Duration::ZERO,
            robots: tokio::sync::Mutex::default(),
            next: tokio::sync::Mutex::default(),
        }
    }

    #[tokio::test]
    async fn a_foreign_column_type_is_an_error_naming_the_file_and_column() {
        let file = format!("memory://{FILE}");
        assert_eq!(stored_urls(&store_with(doc(Vec::new())).await).await.expect("ours").len(), 1);
        // The samples list: an Int64 status, a LargeUtf8 URL.
        for (column, array) in [
            ("status", Arc::new(Int64Array::from(vec![200])) as ArrayRef),
            ("final_url", Arc::new(LargeStringArray::from(vec!["http://a.test/"]))),
        ] {
            let err = stored_urls(&store_with(doc(vec![(column, array)])).await).await.expect_err(column).to_string();
            assert!(err.contains(&file) && err.contains(&format!("`{column}`")), "{column}: {err}");
        }
        // A page opened from the crawl: a Utf8View URL or content type.
        let url = Url::parse("http://a.test/").expect("url");
        let ok = studio(store_with(doc(Vec::new())).await);
        assert!(stored_page(&ok, &url).await.expect("ours").is_some());
        for column in ["final_url", "content_type"] {
            let view = Arc::new(StringViewArray::from(vec!["http://a.test/"])) as ArrayRef;
            let s = studio(store_with(doc(vec![(column, view)])).await);
            let err = stored_page(&s, &url).await.err().expect(column);
            assert!(err.contains(&file) && err.contains(&format!("`{column}`")), "{column}: {err}");
        }
    }
}
