//! `layercrawl forget`: makes URLs eligible for crawling again by deleting
//! their fingerprints from the visited store (a crawl must be able to forget
//! a URL, which a Bloom filter cannot do).

use futures::future::LocalBoxFuture;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::dedup::visited::VisitedStore;
use crate::partition::partition_of_host;
use crate::store::{layout, Store};
use crate::urlnorm;

use super::{RunError, RunState};

/// What `forget` did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ForgetReport {
    /// URLs asked for, after normalisation.
    pub urls: Vec<String>,
    /// Entries removed from the visited store (a URL admitted in two layers counts twice).
    pub removed: u64,
}

/// Removes `urls` from the visited store of the crawl at `data`.
///
/// # Errors
/// When `data` holds no crawl, a URL is not a valid http(s) URL (named), or
/// storage fails.
pub fn forget<'a>(data: &'a str, urls: &'a [String]) -> LocalBoxFuture<'a, Result<ForgetReport, RunError>> {
    // Boxed here, so a caller in another crate (the binary) does not compile
    // this whole async call tree again (Contributing, "Builds").
    Box::pin(remove(data, urls))
}

async fn remove(data: &str, urls: &[String]) -> Result<ForgetReport, RunError> {
    let store = Store::open(data)?;
    let state: RunState = store.get_json(layout::RUN).await?.ok_or_else(|| RunError::Incompatible {
        data: store.location().to_string(),
        what: "state",
        was: "no crawl (state/run.json is missing)".into(),
        now: "a layercrawl data location".into(),
    })?;
    // The crawl's own normalisation, so the fingerprints match its store.
    let policy = state.strip_params.map_or_else(urlnorm::UrlPolicy::default, urlnorm::UrlPolicy::new);
    let mut by_part: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut report = ForgetReport::default();
    for raw in urls {
        let url = policy.parse_seed(raw).map_err(|e| RunError::BadUrl { url: raw.clone(), reason: e.to_string() })?;
        let part = partition_of_host(url.host_str().unwrap_or_default(), state.partitions);
        by_part.entry(part).or_default().push(urlnorm::fingerprint(&url));
        report.urls.push(url.to_string());
    }
    // Not while a run uses the store: its optimise step reads these runs.
    let lease = super::take_lease(&store, false, crate::store::lease::EXPIRY).await?;
    let visited = VisitedStore::new(store);
    let mut result = Ok(());
    for (part, mut fps) in by_part {
        fps.sort_unstable();
        fps.dedup();
        match visited.forget(part, &fps).await {
            Ok(n) => report.removed += n,
            Err(e) => {
                result = Err(e.into());
                break;
            }
        }
    }
    if let Err(e) = lease.release().await {
        tracing::warn!("cannot release the lease: {e}");
    }
    result.map(|()| report)
}
