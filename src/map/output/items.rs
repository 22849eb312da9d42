//! The rules' items (`--rules`): one dataset per rule of the run's rules
//! file, `items/rule=NAME/layer=L/part-PPPPP.parquet`, each item beside
//! its page's URL; the manifest counts each rule's pages, items and the
//! links it held back.

use std::sync::Arc;

use futures::future::BoxFuture;

use super::shard::LazyShard;
use super::{Opening, Output};
use crate::error::StageError;
use crate::map::{Processed, BATCH_ROWS};
use crate::rules::items::{self as rule_items, ItemRow};
use crate::rules::Rules;
use crate::store::layout;
use crate::store::manifest::MapManifest;

/// One shard per rule of the run's rules file, in its order.
pub(super) struct Items<'a> {
    rules: Arc<Rules>,
    shards: Vec<(LazyShard<'a>, Vec<ItemRow>)>,
}

impl<'a> Items<'a> {
    /// The items of a run with rules; none without.
    pub(super) fn open(at: &Opening<'a>) -> Option<Self> {
        let rules = Arc::clone(at.rules?);
        let shards = rules
            .list
            .iter()
            .map(|rule| {
                let path = layout::items(&rule.name, at.layer, at.part);
                (LazyShard::new(at.staged, path, rule_items::schema(rule)), Vec::new())
            })
            .collect();
        Some(Self { rules, shards })
    }
}

impl Output for Items<'_> {
    fn add<'s>(
        &'s mut self,
        page: &'s mut Processed,
        manifest: &'s mut MapManifest,
        _tight: bool,
    ) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            let Some((page_items, dropped)) = page.rule.take() else { return Ok(()) };
            let r = &self.rules.list[page_items.rule];
            let counts = manifest.rules.entry(r.name.clone()).or_default();
            crate::rules::items::count_page(counts, r, &page_items.items);
            counts.links_dropped += dropped;
            let (shard, buf) = &mut self.shards[page_items.rule];
            let doc = &page.doc;
            for item in page_items.items {
                buf.push(ItemRow { url: doc.url.clone(), fetched_at_us: doc.fetched_at_us, item });
            }
            if buf.len() >= BATCH_ROWS {
                shard.write(&rule_items::batch(r, &shard.schema, buf)?).await?;
                buf.clear();
            }
            Ok(())
        })
    }

    fn finish<'s>(&'s mut self, _: &'s mut MapManifest) -> BoxFuture<'s, Result<(), StageError>> {
        Box::pin(async move {
            for (rule, (shard, buf)) in self.rules.list.iter().zip(&mut self.shards) {
                if !buf.is_empty() {
                    shard.write(&rule_items::batch(rule, &shard.schema, buf)?).await?;
                    buf.clear();
                }
                shard.finish().await?;
            }
            Ok(())
        })
    }
}
