//! The knowledge base of `--entities FILE` (docs/src/entities.md): the
//! entities a crawl recognises, read from CSV or JSON Lines and checked
//! as a whole, every bad line reported with its line number (the rules
//! file's and the crawl plan's way, `rules::file`).
//!
//! Each entity has an `id` (unique), a canonical `name`, `aliases` (other
//! ways of writing it: `|`-separated in CSV, a list in JSONL), an optional
//! `type` (`company`, `person`, `city`, ...), an optional `prior` from 0 to
//! 1 (how popular it is: which of two entities an unexplained alias more
//! likely means; 0.5 when not given) and optional `context`: words that
//! describe it, whose presence near a mention speaks for it.

use std::collections::HashMap;

use serde::Deserialize;

use super::fold::fold_key;
use crate::rules::file::{render_problems, Problem};

/// The prior of an entity that does not give one.
pub const DEFAULT_PRIOR: f64 = 0.5;

/// One entity of the knowledge base.
#[derive(Clone, Debug, PartialEq)]
pub struct Entity {
    pub id: String,
    pub name: String,
    /// Other ways of writing it, each once, the name not among them.
    pub aliases: Vec<String>,
    /// Its type as written (`None` when not given).
    pub kind: Option<String>,
    pub prior: f64,
    /// Its context words: folded, without short and common words.
    pub context: Vec<String>,
    /// The line it was read from.
    pub line: usize,
}

/// The checked knowledge base.
#[derive(Clone, Debug, PartialEq)]
pub struct KnowledgeBase {
    pub file: String,
    pub entities: Vec<Entity>,
}

/// Why a knowledge base cannot be used: every problem, in file order.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{}", render_problems(.file, .problems))]
pub struct KbError {
    pub file: String,
    pub problems: Vec<Problem>,
}

/// The formats a knowledge base may have, by its file's extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Csv,
    JsonLines,
}

impl Format {
    /// The format of `file`: `.csv`, or `.jsonl` / `.ndjson`.
    #[must_use]
    pub fn of(file: &str) -> Option<Self> {
        let lower = file.to_ascii_lowercase();
        if lower.ends_with(".csv") {
            Some(Self::Csv)
        } else if lower.ends_with(".jsonl") || lower.ends_with(".ndjson") {
            Some(Self::JsonLines)
        } else {
            None
        }
    }
}

/// Words too common to tell two entities apart, left out of `context`.
const COMMON: [&str; 24] = [
    "the", "and", "for", "with", "from", "that", "this", "its", "his", "her", "their", "are", "was", "were", "has",
    "have", "had", "into", "onto", "over", "under", "about", "also", "not",
];

/// The folded context words of `text`: runs of letters and digits, two
/// characters or more, common words left out, each once.
#[must_use]
pub fn context_words(text: &str) -> Vec<String> {
    let folded = fold_key(text);
    let mut out: Vec<String> = Vec::new();
    for w in folded.split(|c: char| !c.is_alphanumeric()) {
        if w.chars().count() >= 2 && !COMMON.contains(&w) && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    }
    out
}

/// One entity as read, before it is checked.
#[derive(Default)]
struct Raw {
    id: String,
    name: String,
    aliases: Vec<String>,
    kind: Option<String>,
    prior: Option<f64>,
    context: String,
    line: usize,
}

/// Reads the knowledge base in `text`, which came from `file` (its
/// extension says the format).
///
/// # Errors
/// Every problem of the file with its line: a format the extension does
/// not name, a missing or unknown column or key, a line that is not CSV or
/// JSON, an empty or repeated `id`, a `name` or alias without a letter or
/// digit, a `prior` that is not a number from 0 to 1, no entity at all.
pub fn parse_kb(file: &str, text: &str) -> Result<KnowledgeBase, KbError> {
    let fail = |problems| KbError { file: file.to_string(), problems };
    let at_line = |line, message: String| Problem { line, column: 1, message };
    let Some(format) = Format::of(file) else {
        return Err(fail(vec![at_line(
            1,
            "a knowledge base is CSV (.csv) or JSON Lines (.jsonl, .ndjson); rename the file to say which".into(),
        )]));
    };
    let mut problems = Vec::new();
    let raw = match format {
        Format::Csv => read_csv(text, &mut problems),
        Format::JsonLines => read_jsonl(text, &mut problems),
    };
    let mut entities = Vec::with_capacity(raw.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in raw {
        let mut bad = |m: String| problems.push(at_line(r.line, m));
        let id = r.id.trim().to_string();
        if id.is_empty() {
            bad("`id` is empty; every entity needs one".into());
        } else if let Some(first) = seen.get(&id) {
            bad(format!("id {id:?} is used twice (first on line {first}); ids must be unique"));
        } else {
            seen.insert(id.clone(), r.line);
        }
        let name = collapse(&r.name);
        if !has_word(&name) {
            bad(format!("`name` {:?} has no letter or digit to recognise", r.name));
        }
        let mut aliases: Vec<String> = Vec::new();
        for a in &r.aliases {
            let a = collapse(a);
            if !has_word(&a) {
                bad(format!("alias {a:?} has no letter or digit to recognise (an empty alias between two `|`?)"));
            } else if a != name && !aliases.contains(&a) {
                aliases.push(a);
            }
        }
        let prior = match r.prior {
            Some(p) if !(p.is_finite() && (0.0..=1.0).contains(&p)) => {
                bad(format!("`prior` {p} is outside 0 to 1 (how popular the entity is; 0.5 when left out)"));
                DEFAULT_PRIOR
            }
            Some(p) => p,
            None => DEFAULT_PRIOR,
        };
        let kind = r.kind.map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
        entities.push(Entity { id, name, aliases, kind, prior, context: context_words(&r.context), line: r.line });
    }
    if problems.is_empty() && entities.is_empty() {
        problems.push(at_line(1, "no entities (one a line, after the CSV header)".into()));
    }
    if problems.is_empty() {
        Ok(KnowledgeBase { file: file.to_string(), entities })
    } else {
        problems.sort_by_key(|p| p.line);
        Err(fail(problems))
    }
}

/// Whitespace runs made one space, ends trimmed.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn has_word(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

/// The CSV columns, by their header names.
const COLUMNS: [&str; 6] = ["id", "name", "aliases", "type", "prior", "context"];

fn read_csv(text: &str, problems: &mut Vec<Problem>) -> Vec<Raw> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Comment lines made blank, so that the reader's positions keep
    // counting every line of the file.
    let text: String = text
        .split_inclusive('\n')
        .map(|l| {
            if l.trim_start().starts_with('#') {
                if l.ends_with('\n') {
                    "\n"
                } else {
                    ""
                }
            } else {
                l
            }
        })
        .collect();
    let text = text.as_str();
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut header: Option<Vec<Option<usize>>> = None;
    let mut out = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(1, |p| line_of(text, p));
                problems.push(Problem { line, column: 1, message: format!("not CSV: {e}") });
                continue;
            }
        };
        let line = record.position().map_or(1, |p| line_of(text, p));
        if record.iter().all(|f| f.trim().is_empty()) {
            continue;
        }
        let Some(columns) = &header else {
            // The header: which known column each field is.
            let mut cols = Vec::new();
            for (i, f) in record.iter().enumerate() {
                let name = f.trim().to_ascii_lowercase();
                let known = COLUMNS.iter().position(|c| *c == name);
                if known.is_none() {
                    problems.push(Problem {
                        line,
                        column: 1,
                        message: format!(
                            "header field {} {f:?} is not a column; the columns are {}",
                            i + 1,
                            COLUMNS.join(", ")
                        ),
                    });
                }
                cols.push(known);
            }
            for required in ["id", "name"] {
                let at = COLUMNS.iter().position(|c| *c == required);
                if !cols.contains(&at) {
                    problems.push(Problem {
                        line,
                        column: 1,
                        message: format!(
                            "the header has no `{required}` column (the first line names the columns: id,name,aliases,type,prior,context)"
                        ),
                    });
                }
            }
            header = Some(cols);
            continue;
        };
        if record.len() != columns.len() {
            problems.push(Problem {
                line,
                column: 1,
                message: format!(
                    "{} fields, the header has {}; quote a field that holds a comma",
                    record.len(),
                    columns.len()
                ),
            });
            continue;
        }
        let mut raw = Raw { line, ..Raw::default() };
        for (value, col) in record.iter().zip(columns) {
            match col.map(|c| COLUMNS[c]) {
                Some("id") => raw.id = value.to_string(),
                Some("name") => raw.name = value.to_string(),
                Some("aliases") if !value.trim().is_empty() => {
                    raw.aliases = value.split('|').map(str::to_string).collect();
                }
                Some("type") => raw.kind = Some(value.to_string()),
                Some("prior") if !value.trim().is_empty() => match value.trim().parse::<f64>() {
                    Ok(p) => raw.prior = Some(p),
                    Err(_) => problems.push(Problem {
                        line,
                        column: 1,
                        message: format!("`prior` {value:?} is not a number (0 to 1)"),
                    }),
                },
                Some("context") => raw.context = value.to_string(),
                _ => {}
            }
        }
        out.push(raw);
    }
    out
}

/// The line of a CSV position, from its byte offset (the reader's own
/// line count leaves comment lines out, and a record's position may be
/// that of the blank lines before it).
fn line_of(text: &str, p: &csv::Position) -> usize {
    let bytes = text.as_bytes();
    let mut byte = usize::try_from(p.byte()).unwrap_or(usize::MAX).min(bytes.len());
    while byte < bytes.len() && matches!(bytes[byte], b'\n' | b'\r') {
        byte += 1;
    }
    bytes[..byte].iter().filter(|&&b| b == b'\n').count() + 1
}

/// One line of a JSON Lines knowledge base.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonEntity {
    id: String,
    name: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    prior: Option<f64>,
    #[serde(default)]
    context: Context,
}

/// `context` as one text or a list of words.
#[derive(Deserialize, Default)]
#[serde(untagged)]
enum Context {
    #[default]
    None,
    Text(String),
    Words(Vec<String>),
}

fn read_jsonl(text: &str, problems: &mut Vec<Problem>) -> Vec<Raw> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim().trim_start_matches('\u{feff}');
        if trimmed.is_empty() {
            continue;
        }
        match serde_json::from_str::<JsonEntity>(trimmed) {
            Ok(e) => out.push(Raw {
                id: e.id,
                name: e.name,
                aliases: e.aliases,
                kind: e.kind,
                prior: e.prior,
                context: match e.context {
                    Context::None => String::new(),
                    Context::Text(t) => t,
                    Context::Words(w) => w.join(" "),
                },
                line: line_no,
            }),
            Err(e) => problems.push(Problem {
                line: line_no,
                column: e.column().max(1),
                message: format!(
                    "not an entity: {e} (one JSON object a line with keys id, name, aliases, type, prior, context)"
                ),
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_quotes_aliases_and_defaults() {
        let kb = parse_kb(
            "kb.csv",
            "id,name,aliases,type,prior,context\n\
             # a comment line\n\
             orion-d,Orion Dynamics,Orion|ORION DYNAMICS,company,0.7,\"rockets, satellites and the launch\"\n\
             paris,Paris,,city,,\n",
        )
        .expect("a good knowledge base");
        assert_eq!(kb.entities.len(), 2);
        let o = &kb.entities[0];
        assert_eq!((o.id.as_str(), o.name.as_str(), o.line), ("orion-d", "Orion Dynamics", 3));
        assert_eq!(o.aliases, ["Orion", "ORION DYNAMICS"]);
        assert_eq!((o.kind.as_deref(), o.prior), (Some("company"), 0.7));
        assert_eq!(o.context, ["rockets", "satellites", "launch"]);
        let p = &kb.entities[1];
        assert_eq!((p.aliases.len(), p.prior), (0, DEFAULT_PRIOR));
    }

    #[test]
    fn jsonl_takes_lists_and_texts() {
        let kb = parse_kb(
            "kb.jsonl",
            "{\"id\":\"a\",\"name\":\"Straße AG\",\"aliases\":[\"Strasse\"],\"context\":[\"roads\",\"asphalt\"]}\n\n\
             {\"id\":\"b\",\"name\":\"B\",\"type\":\"person\",\"prior\":0.1,\"context\":\"a chef\"}\n",
        )
        .expect("good lines");
        assert_eq!(kb.entities[0].context, ["roads", "asphalt"]);
        assert_eq!(kb.entities[1].context, ["chef"]);
        assert_eq!(kb.entities[1].line, 3);
    }

    #[test]
    fn every_bad_line_is_named() {
        let e = parse_kb(
            "kb.csv",
            "id,name,aliases,prior\na,Alpha,,0.2\na,Again,,\nb,,,\nc,Gamma,x||y,2\nd,Delta,,high\ne,too,many,fields,here\n",
        )
        .expect_err("bad lines");
        let text = e.to_string();
        for want in [
            "kb.csv:3:1: id \"a\" is used twice (first on line 2)",
            "kb.csv:4:1: `name` \"\" has no letter",
            "kb.csv:5:1: alias \"\" has no letter",
            "kb.csv:5:1: `prior` 2 is outside 0 to 1",
            "kb.csv:6:1: `prior` \"high\" is not a number",
            "kb.csv:7:1: 5 fields, the header has 4",
        ] {
            assert!(text.contains(want), "{want:?} in:\n{text}");
        }
        let e = parse_kb("kb.jsonl", "{\"id\":\"a\",\"name\":\"A\"}\n{\"id\":\"b\",\"nam\":\"B\"}\nnot json\n")
            .expect_err("bad lines");
        let text = e.to_string();
        assert!(text.contains("kb.jsonl:2:") && text.contains("unknown field `nam`"), "{text}");
        assert!(text.contains("kb.jsonl:3:"), "{text}");
        let e = parse_kb("kb.csv", "name,alias\n").expect_err("bad header").to_string();
        assert!(e.contains("\"alias\" is not a column") && e.contains("no `id` column"), "{e}");
        assert!(parse_kb("kb.txt", "x")
            .expect_err("extension")
            .to_string()
            .contains("kb.txt:1:1: a knowledge base is CSV"));
        assert!(parse_kb("kb.csv", "id,name\n").expect_err("empty").to_string().contains("no entities"));
    }
}
