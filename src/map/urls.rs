//! A partition's input as the scheduler sees it (its URLs, last night's
//! validators, its share of the layer's page budget).

use std::sync::Arc;

use url::Url;

use super::gate::Gates;
use super::previous::PartitionIndex;
use crate::error::StageError;
use crate::fetch::{Admit, UrlSource};
use crate::store::scratch::InputRows;
use crate::store::{layout, Store};

/// The scheduler reads the URLs from the input's temporary file, and
/// last night's validators from the partition's index (`--previous`).
pub(super) struct Urls(
    pub(super) Arc<InputRows>,
    pub(super) Option<Arc<PartitionIndex>>,
    pub(super) Option<usize>,
    /// The noise filter's gates of the layer ([`super::gate`]).
    pub(super) Option<Arc<Gates>>,
);

impl UrlSource for Urls {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn url(&self, id: usize) -> std::io::Result<String> {
        self.0.url(id)
    }
    fn start(&self, id: usize) -> std::io::Result<(String, u32)> {
        self.0.start(id)
    }
    fn validators(&self, url: &Url) -> Option<crate::fetch::Validators> {
        self.1.as_ref()?.get(url.as_str()).map(|e| e.validators.clone())
    }
    fn budget(&self) -> Option<usize> {
        self.2
    }
    fn admit(&self, _id: usize, url: &Url) -> Admit {
        self.3.as_ref().map_or(Admit::Now, |g| g.admit(url))
    }
}

/// This partition's share of the layer's page budget (`--max-pages`):
/// with an order that ranks URLs, the quota the layer's input manifest
/// gives it (the budget went to the best URLs of the whole layer when the
/// layer was sealed: `optimise::budget`); otherwise, or for a manifest
/// made for another budget, the budget split among the partitions in
/// proportion to their input (the manifest has the total), rounded down
/// so that the layer stays within it. `None` when the partition's input
/// fits.
pub(super) async fn partition_quota(
    store: &Store,
    layer: u32,
    part: u32,
    max: u64,
    here: usize,
) -> Result<Option<usize>, StageError> {
    let manifest = store.get_json::<crate::store::manifest::NextManifest>(&layout::input_manifest(layer)).await?;
    let given = manifest.as_ref().and_then(|m| m.budget.as_ref()).filter(|b| b.max_pages == max);
    if let Some(quota) = given.and_then(|b| b.quotas.get(part as usize)) {
        return Ok(Some(usize::try_from(*quota).unwrap_or(usize::MAX)).filter(|&q| q < here));
    }
    let total = manifest.map_or(here as u64, |m| m.next.max(here as u64));
    if total <= max {
        return Ok(None);
    }
    let share = u128::from(max) * here as u128 / u128::from(total.max(1));
    Ok(Some(usize::try_from(share).unwrap_or(usize::MAX)).filter(|&q| q < here))
}
