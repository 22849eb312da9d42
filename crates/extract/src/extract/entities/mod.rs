//! Entities and relations (docs/src/entities.md): the
//! mentions of a user's knowledge base (`--entities FILE`) in each page's
//! main text, linked to its entities, and the relations between the
//! linked entities of one sentence; with `--prefer-entities`, the links of
//! pages that mention the preferred ones are fetched first.
//!
//! - [`kb`]: the knowledge base file (CSV or JSON Lines), checked line by line;
//! - [`matcher`]: its names and aliases found in a text (one Aho-Corasick
//!   automaton, Unicode case folding, whole words, the longest match);
//! - [`disambiguate`]: which entity a name means, and the link's score;
//! - [`relations`] and [`patterns`]: sentences, and the patterns that find
//!   subject–predicate–object in them;
//! - [`EntityExtractor`]: the row extractor that writes the `entities`
//!   and `relations` datasets and scores a page's links for
//!   `--prefer-entities`.
//!
//! The knowledge base travels in the run's settings ([`EntitiesSource`],
//! like the crawl plan), and is compiled once where the run's extractors
//! are made (the driver, or a task run on its own), not per page.

pub mod disambiguate;
mod fold;
pub mod kb;
pub mod matcher;
pub mod patterns;
mod prefer;
pub mod relations;

use std::path::Path;
use std::sync::Arc;

use disambiguate::{Linker, Mention};
use kb::{KbError, KnowledgeBase};
use matcher::Matcher;
use patterns::{Pattern, PatternsError};
pub use prefer::Preference;
use relations::Relation;

use super::main_text::TextFormat;
use super::{Column, ColumnType, Dataset, PageInput, Row, RowExtractor, Tuning, Value};
use crate::store::dataset::{ENTITIES, RELATIONS};

/// Links that score below this are dropped, unless `--entity-threshold` says otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.35;

/// A relation patterns file as the run's settings carry it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RelationsSource {
    pub file: String,
    pub text: String,
}

/// The run's entity settings (`--entities`, `--relations`,
/// `--prefer-entities`, `--entity-threshold`) as its settings carry them:
/// each place that makes the run's extractors compiles them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EntitiesSource {
    pub file: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relations: Option<RelationsSource>,
    /// Entity ids and types whose pages' links are fetched first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefer: Vec<String>,
    pub threshold: f64,
}

/// Why the entity settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntitiesError {
    #[error("cannot read {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{0}")]
    Kb(#[from] KbError),
    #[error("{0}")]
    Patterns(#[from] PatternsError),
    #[error("{0}")]
    Automaton(#[from] matcher::BuildError),
    #[error("{0}")]
    Prefer(String),
    #[error("the threshold {0} is outside 0 to 1")]
    Threshold(f64),
    #[error("{0}")]
    Extractors(#[from] super::ExtractError),
}

impl EntitiesSource {
    /// Reads the knowledge base at `path` (and the patterns at
    /// `relations`) and checks the whole setting.
    ///
    /// # Errors
    /// A file that cannot be read, or every problem of the settings.
    pub fn read(
        path: &Path,
        relations: Option<&Path>,
        prefer: Vec<String>,
        threshold: f64,
    ) -> Result<Self, EntitiesError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p)
                .map_err(|e| EntitiesError::Read { path: p.display().to_string(), reason: e.to_string() })
        };
        let relations = match relations {
            Some(p) => Some(RelationsSource { file: p.display().to_string(), text: read(p)? }),
            None => None,
        };
        let source = Self { file: path.display().to_string(), text: read(path)?, relations, prefer, threshold };
        source.compile(TextFormat::Plain)?;
        Ok(source)
    }

    /// The recogniser of these settings, for main texts rendered as `format`.
    ///
    /// # Errors
    /// Every problem of the knowledge base or the patterns file, a
    /// preferred id or type the knowledge base does not have, a threshold
    /// outside 0 to 1.
    pub fn compile(&self, format: TextFormat) -> Result<Recognizer, EntitiesError> {
        if !(self.threshold.is_finite() && (0.0..=1.0).contains(&self.threshold)) {
            return Err(EntitiesError::Threshold(self.threshold));
        }
        let kb = kb::parse_kb(&self.file, &self.text)?;
        let mut patterns = patterns::builtin();
        if let Some(r) = &self.relations {
            patterns.extend(patterns::parse_patterns(&r.file, &r.text)?);
        }
        let prefer = if self.prefer.is_empty() {
            None
        } else {
            Some(Preference::new(&kb, &self.prefer).map_err(EntitiesError::Prefer)?)
        };
        let matcher = Matcher::new(&kb)?;
        let linker = Linker::new(&kb, self.threshold);
        Ok(Recognizer { kb, matcher, linker, patterns, prefer, format })
    }
}

/// A knowledge base compiled for recognition: its automaton, linker,
/// relation patterns and preference. Built once, shared by every worker.
pub struct Recognizer {
    kb: KnowledgeBase,
    matcher: Matcher,
    linker: Linker,
    patterns: Vec<Pattern>,
    prefer: Option<Preference>,
    format: TextFormat,
}

/// What one text holds: its linked mentions and relations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recognised {
    pub mentions: Vec<Mention>,
    pub relations: Vec<Relation>,
}

impl Recognizer {
    /// The knowledge base.
    #[must_use]
    pub fn kb(&self) -> &KnowledgeBase {
        &self.kb
    }

    /// The linked mentions of `text` and the relations between them.
    #[must_use]
    pub fn recognise(&self, text: &str) -> Recognised {
        let Some(folded) = matcher::fold(text) else { return Recognised::default() };
        let found = self.matcher.find(text, &folded);
        let mentions = self.linker.link(&self.matcher, text, &folded, &found);
        let relations = relations::relations(text, &mentions, &self.kb, &self.patterns);
        Recognised { mentions, relations }
    }

    /// Only the linked mentions of `text` (an anchor text).
    #[must_use]
    pub fn mentions(&self, text: &str) -> Vec<Mention> {
        let Some(folded) = matcher::fold(text) else { return Vec::new() };
        let found = self.matcher.find(text, &folded);
        self.linker.link(&self.matcher, text, &folded, &found)
    }
}

/// The `entities` dataset's columns (docs/src/output.md).
#[must_use]
pub fn entity_columns() -> Vec<Column> {
    vec![
        Column::new("url", ColumnType::Utf8).not_null().tuned(Tuning::DISTINCT),
        Column::new("entity_id", ColumnType::Utf8).not_null(),
        Column::new("entity_name", ColumnType::Utf8).not_null(),
        Column::new("entity_type", ColumnType::Utf8),
        Column::new("mention", ColumnType::Utf8).not_null(),
        Column::new("offset", ColumnType::Int64).not_null(),
        Column::new("score", ColumnType::Float64).not_null(),
    ]
}

/// The `relations` dataset's columns (docs/src/output.md).
#[must_use]
pub fn relation_columns() -> Vec<Column> {
    vec![
        Column::new("url", ColumnType::Utf8).not_null().tuned(Tuning::DISTINCT),
        Column::new("subject_id", ColumnType::Utf8).not_null(),
        Column::new("predicate", ColumnType::Utf8).not_null(),
        Column::new("object_id", ColumnType::Utf8).not_null(),
        Column::new("sentence", ColumnType::Utf8).not_null().tuned(Tuning::DISTINCT),
        Column::new("score", ColumnType::Float64).not_null(),
    ]
}

/// Where the `entity_id` and `score` of an `entities` row are.
const ROW_ID: usize = 1;
const ROW_TYPE: usize = 3;
const ROW_SCORE: usize = 6;

/// The row extractor of a run with `--entities`: the `entities` and
/// `relations` datasets from each page's main text, and with
/// `--prefer-entities` the score of its links.
pub struct EntityExtractor {
    recognizer: Arc<Recognizer>,
}

impl EntityExtractor {
    #[must_use]
    pub fn new(recognizer: Arc<Recognizer>) -> Self {
        Self { recognizer }
    }
}

impl RowExtractor for EntityExtractor {
    fn name(&self) -> &str {
        // Named after its first dataset.
        ENTITIES.name
    }

    fn datasets(&self) -> Vec<Dataset> {
        vec![
            Dataset { name: ENTITIES.name.into(), columns: entity_columns() },
            Dataset { name: RELATIONS.name.into(), columns: relation_columns() },
        ]
    }

    fn rows(&self, input: &PageInput<'_>, out: &mut [Vec<Row>]) {
        let r = &self.recognizer;
        let Some(text) = input.parsed.and_then(|p| p.main_text(r.format)) else { return };
        let found = r.recognise(&text);
        let url = input.url.as_str();
        let [entities, relations] = out else { return };
        // Offsets count characters: one pass over the text for all mentions.
        let (mut chars, mut at) = (0usize, 0usize);
        for m in &found.mentions {
            chars += text[at..m.start].chars().count();
            at = m.start;
            let e = &r.kb.entities[m.entity as usize];
            entities.push(vec![
                Value::Utf8(url.to_string()),
                Value::Utf8(e.id.clone()),
                Value::Utf8(e.name.clone()),
                e.kind.clone().map_or(Value::Null, Value::Utf8),
                Value::Utf8(text[m.start..m.end].to_string()),
                Value::Int64(i64::try_from(chars).unwrap_or(i64::MAX)),
                Value::Float64(m.score),
            ]);
        }
        for rel in &found.relations {
            relations.push(vec![
                Value::Utf8(url.to_string()),
                Value::Utf8(r.kb.entities[rel.subject as usize].id.clone()),
                Value::Utf8(rel.predicate.clone()),
                Value::Utf8(r.kb.entities[rel.object as usize].id.clone()),
                Value::Utf8(text[rel.sentence.0..rel.sentence.1].to_string()),
                Value::Float64(rel.score),
            ]);
        }
    }

    fn link_scores(&self, rows: &[Vec<Row>], anchors: &[&str]) -> Option<Vec<f64>> {
        let prefer = self.recognizer.prefer.as_ref()?;
        let page = prefer.page(rows.first().map_or(&[][..], Vec::as_slice).iter().filter_map(|row| {
            let text = |i: usize| match row.get(i) {
                Some(Value::Utf8(s)) => Some(s.as_str()),
                _ => None,
            };
            let Some(Value::Float64(score)) = row.get(ROW_SCORE) else { return None };
            Some((text(ROW_ID)?, text(ROW_TYPE), *score))
        }));
        Some(anchors.iter().map(|a| prefer.link(&self.recognizer, page, a)).collect())
    }
}
