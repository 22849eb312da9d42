//! The rules a layer's map tasks run with (`--rules`): the file as the
//! run's settings carry it, and the check that every partition of a layer
//! makes its items with the same one.

use crate::error::StageError;
use crate::store::manifest::MapManifest;
use crate::store::{layout, Created, Store};

/// Refuses to map a partition of `layer` with other rules than the
/// partitions of the layer already committed: their items would not share
/// a schema with this one's, and the layer's merge would refuse them
/// (docs/src/rules.md: a changed rules file applies to the layers not yet
/// started).
pub(super) async fn same_rules_as_the_layer(store: &Store, layer: u32, now: Option<&str>) -> Result<(), StageError> {
    // One small file per layer, written by its first task (create-if-absent),
    // read by the others: not every committed manifest read by every task.
    let marker = layout::layer_rules(layer);
    let mine = LayerRules { rules: now.map(str::to_string) };
    if store.put_json_new(&marker, &mine).await? == Created::New {
        return Ok(());
    }
    let was: LayerRules = store.get_json(&marker).await?.unwrap_or_default();
    let hash = |r: Option<&str>| r.and_then(|r| r.split(' ').next().map(str::to_string));
    if hash(was.rules.as_deref()) == hash(now) {
        return Ok(());
    }
    // Another file: allowed while no partition of the layer has committed
    // pages (a run stopped right away, its rules corrected).
    let dir = layout::map_manifest(layer, 0);
    let dir = dir.rsplit_once('/').map_or(dir.as_str(), |(d, _)| d);
    for (path, _) in store.list(dir).await? {
        if !path.rsplit('/').next().is_some_and(|f| f.starts_with("map-") && f.ends_with(".json")) {
            continue;
        }
        if store.get_json::<MapManifest>(&path).await?.is_some_and(|done| done.input > 0) {
            let show = |r: Option<&str>| r.map_or_else(|| "no rules".to_string(), str::to_string);
            return Err(StageError::RulesChanged { layer, started: show(was.rules.as_deref()), now: show(now) });
        }
    }
    store.put_json(&marker, &mine).await?;
    Ok(())
}

/// The content of [`layout::layer_rules`].
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct LayerRules {
    /// The rules' identity ([`RulesSource::identity`]), or none.
    rules: Option<String>,
}
