//! `--prefer-entities ID_OR_TYPE,...` (docs/src/entities.md):
//! the links of pages that mention the preferred entities, or entities of
//! the preferred types, are fetched first.
//!
//! Each link gets a score from 0 to 1 that orders the next layer's input
//! as a crawl plan's link score does (docs/src/focused-crawling.md; with a
//! plan, the two are averaged): `1 − (1 − anchor)(1 − page / 2)`, where
//! `anchor` is the best score of a preferred entity linked in the link's
//! anchor text, and `page` how strongly its page mentions preferred
//! entities, `1 − Π(1 − score)` over their mentions. A link whose anchor
//! names a preferred entity comes first, then the other links of pages
//! that mention them, then the rest.

use std::collections::HashSet;

use super::kb::KnowledgeBase;
use super::matcher::fold_key;
use super::Recognizer;

/// The preferred entities, by id and by type.
#[derive(Clone, Debug)]
pub struct Preference {
    ids: HashSet<String>,
    /// Folded types.
    kinds: HashSet<String>,
}

impl Preference {
    /// The preference for `items` (entity ids, or types, compared without
    /// regard to case) of `kb`.
    ///
    /// # Errors
    /// An item that is neither an id nor a type of the knowledge base.
    pub fn new(kb: &KnowledgeBase, items: &[String]) -> Result<Self, String> {
        let types: HashSet<String> = kb.entities.iter().filter_map(|e| e.kind.as_deref()).map(fold_key).collect();
        let (mut ids, mut kinds) = (HashSet::new(), HashSet::new());
        for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
            if kb.entities.iter().any(|e| e.id == item) {
                ids.insert(item.to_string());
            } else if types.contains(&fold_key(item)) {
                kinds.insert(fold_key(item));
            } else {
                let mut known: Vec<&String> = types.iter().collect();
                known.sort();
                return Err(format!(
                    "--prefer-entities: {item:?} is neither an entity id nor a type of {}; its types are {known:?}",
                    kb.file
                ));
            }
        }
        if ids.is_empty() && kinds.is_empty() {
            return Err("--prefer-entities: no entity id or type given".into());
        }
        Ok(Self { ids, kinds })
    }

    /// Whether the entity `id` of type `kind` is preferred.
    #[must_use]
    pub fn prefers(&self, id: &str, kind: Option<&str>) -> bool {
        self.ids.contains(id) || kind.is_some_and(|k| self.kinds.contains(&fold_key(k)))
    }

    /// How strongly a page mentions preferred entities, from its mentions
    /// `(id, type, score)`: `1 − Π(1 − score)` over the preferred ones.
    pub fn page<'a>(&self, mentions: impl Iterator<Item = (&'a str, Option<&'a str>, f64)>) -> f64 {
        1.0 - mentions.filter(|(id, kind, _)| self.prefers(id, *kind)).map(|(_, _, s)| 1.0 - s).product::<f64>()
    }

    /// A link's score on a page whose [`Self::page`] is `page`, from its anchor text.
    #[must_use]
    pub fn link(&self, recognizer: &Recognizer, page: f64, anchor: &str) -> f64 {
        let kb = recognizer.kb();
        let anchor = if anchor.trim().is_empty() {
            0.0
        } else {
            recognizer
                .mentions(anchor)
                .iter()
                .filter(|m| {
                    let e = &kb.entities[m.entity as usize];
                    self.prefers(&e.id, e.kind.as_deref())
                })
                .map(|m| m.score)
                .fold(0.0, f64::max)
        };
        (1.0 - (1.0 - anchor) * (1.0 - page / 2.0)).clamp(0.0, 1.0)
    }
}
