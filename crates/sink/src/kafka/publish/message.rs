//! A page's Kafka message, built from its `doc` row (docs/src/kafka.md):
//! `{id, content, resource, url, time}` as JSON, keyed by the URL, on the
//! topic of the page's rule, else its role in the crawl plan, else
//! `pages`. CPU work: run on a blocking thread, never an async worker.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch, StringArray};
use serde::Serialize;

use super::url::KafkaUrl;
use crate::rules::Rules;

/// The largest message sent, key and all: librdkafka's and Kafka's
/// default limit (1,000,000 and 1,048,588 bytes). A page whose message
/// would be larger has its `content` cut to fit and `"truncated": true`;
/// the whole text stays in the `doc` row.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1_000_000;
/// Room left for the record's own framing (headers, lengths, timestamp).
const RECORD_OVERHEAD: usize = 512;

/// The `doc` columns a message is made of (`main_text` and `role` when
/// the run has them).
pub(super) const COLUMNS: [&str; 8] =
    ["url", "final_url", "domain", "status", "fetched_at", "text", "main_text", "role"];

/// A page's message as JSON.
#[derive(Serialize)]
struct PageMessage<'a> {
    /// xxh3 of the URL, 16 hex digits: the same page has the same id in
    /// every crawl.
    id: String,
    /// The main text (`main_text`), else the page's text, else null.
    content: Option<&'a str>,
    /// The source platform: the page's registrable domain.
    resource: &'a str,
    url: &'a str,
    /// When it was fetched, RFC 3339 in UTC.
    time: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

/// The topics of a run: one per rule of its rules file, `nav` and
/// `content` (a crawl plan's roles), and `pages`.
pub(super) struct Topics {
    rules: Option<Arc<Rules>>,
    /// Rule `i`'s topic is `names[FIXED + i]`.
    names: Vec<String>,
}

const PAGES: usize = 0;
const NAV: usize = 1;
const CONTENT: usize = 2;
const FIXED: usize = 3;

impl Topics {
    pub(super) fn new(spec: &KafkaUrl, rules: Option<Arc<Rules>>) -> Self {
        let mut names = vec![spec.topic("pages"), spec.topic("nav"), spec.topic("content")];
        names.extend(rules.iter().flat_map(|r| r.list.iter()).map(|r| spec.topic(&r.name)));
        Self { rules, names }
    }

    /// The topic of a page: the first rule matching its final URL (as the
    /// map stage chose it), else its plan role, else `pages`.
    fn of(&self, final_url: &str, role: Option<&str>) -> usize {
        if let Some((i, _)) = self.rules.as_deref().and_then(|r| r.matching(final_url)) {
            return FIXED + i;
        }
        match role {
            Some("nav") => NAV,
            Some("content") => CONTENT,
            _ => PAGES,
        }
    }

    /// The name of topic `i`.
    pub(super) fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// How many topics there are (indices `0..len`).
    pub(super) fn len(&self) -> usize {
        self.names.len()
    }
}

/// One message, ready to send.
pub(super) struct Outgoing {
    pub(super) topic: usize,
    pub(super) key: String,
    pub(super) payload: Vec<u8>,
    pub(super) truncated: bool,
}

/// The messages of the rows of `batch` (projected to [`COLUMNS`]) that
/// have a response (`status` > 0): errors before any answer (DNS,
/// connection, robots.txt) are not pages.
///
/// # Errors
/// When a column the `doc` schema always has is missing or of another type.
pub(super) fn messages(batch: &RecordBatch, topics: &Topics) -> Result<Vec<Outgoing>, String> {
    let text = |name: &str| -> Result<&StringArray, String> {
        batch.column_by_name(name).and_then(|c| c.as_string_opt::<i32>()).ok_or_else(|| format!("no {name} column"))
    };
    let optional = |name: &str| batch.column_by_name(name).and_then(|c| c.as_string_opt::<i32>());
    let (url, final_url, domain, page_text) = (text("url")?, text("final_url")?, text("domain")?, text("text")?);
    let (main_text, role) = (optional("main_text"), optional("role"));
    let status =
        batch.column_by_name("status").and_then(|c| c.as_primitive_opt::<Int32Type>()).ok_or("no status column")?;
    let time = batch
        .column_by_name("fetched_at")
        .and_then(|c| c.as_primitive_opt::<TimestampMicrosecondType>())
        .ok_or("no fetched_at column")?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        if status.value(i) <= 0 {
            continue;
        }
        let content = main_text
            .and_then(|m| value(m, i))
            .filter(|t| !t.is_empty())
            .or_else(|| value(page_text, i).filter(|t| !t.is_empty()));
        let url = url.value(i);
        let msg = PageMessage {
            id: format!("{:016x}", xxhash_rust::xxh3::xxh3_64(url.as_bytes())),
            content,
            resource: domain.value(i),
            url,
            time: rfc3339(time.value(i)),
            truncated: false,
        };
        let (payload, truncated) = fit(msg, MAX_MESSAGE_BYTES - RECORD_OVERHEAD - url.len())?;
        let topic = topics.of(final_url.value(i), role.and_then(|r| value(r, i)));
        out.push(Outgoing { topic, key: url.to_string(), payload, truncated });
    }
    Ok(out)
}

/// Row `i` of `a`, or `None` when null.
fn value(a: &StringArray, i: usize) -> Option<&str> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// `us` microseconds after the epoch, RFC 3339 in UTC.
fn rfc3339(us: i64) -> String {
    jiff::Timestamp::from_microsecond(us).map_or_else(|_| "1970-01-01T00:00:00Z".to_string(), |t| t.to_string())
}

/// The JSON of `msg`, its content cut (at a character boundary) to the
/// longest start that keeps it within `limit` bytes.
fn fit(mut msg: PageMessage<'_>, limit: usize) -> Result<(Vec<u8>, bool), String> {
    let encode =
        |m: &PageMessage<'_>| serde_json::to_vec(m).map_err(|e| format!("encoding the message of {}: {e}", m.url));
    let bytes = encode(&msg)?;
    if bytes.len() <= limit {
        return Ok((bytes, false));
    }
    let content = msg.content.unwrap_or_default();
    let rest = bytes.len() - content.chars().map(escaped_len).sum::<usize>() + r#","truncated":true"#.len();
    let Some(mut budget) = limit.checked_sub(rest) else {
        // Nothing left to cut: only a URL of about a megabyte gets here.
        return Err(format!("the message of {} is {} bytes without its content", msg.url, rest));
    };
    let mut keep = 0;
    for c in content.chars() {
        match budget.checked_sub(escaped_len(c)) {
            Some(b) => (budget, keep) = (b, keep + c.len_utf8()),
            None => break,
        }
    }
    msg.content = Some(&content[..keep]);
    msg.truncated = true;
    Ok((encode(&msg)?, true))
}

/// The bytes of `c` in a JSON string as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if c < ' ' => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, RecordBatch, StringArray, TimestampMicrosecondArray};
    use arrow_schema::{DataType, Field, Schema, TimeUnit};

    use super::*;

    fn spec() -> KafkaUrl {
        KafkaUrl { brokers: vec!["k:9092".into()], prefix: "crawl".into() }
    }

    /// (url, status, text, main_text, role) per row.
    type Row<'a> = (&'a str, i32, Option<&'a str>, Option<&'a str>, Option<&'a str>);

    fn batch(rows: &[Row<'_>]) -> RecordBatch {
        let strings = |v: Vec<Option<&str>>| Arc::new(StringArray::from(v)) as Arc<dyn Array>;
        let schema = Schema::new(vec![
            Field::new("url", DataType::Utf8, false),
            Field::new("final_url", DataType::Utf8, false),
            Field::new("domain", DataType::Utf8, false),
            Field::new("status", DataType::Int32, false),
            Field::new("fetched_at", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false),
            Field::new("text", DataType::Utf8, true),
            Field::new("main_text", DataType::Utf8, true),
            Field::new("role", DataType::Utf8, true),
        ]);
        let n = rows.len();
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                strings(rows.iter().map(|r| Some(r.0)).collect()),
                strings(rows.iter().map(|r| Some(r.0)).collect()),
                strings(vec![Some("example.com"); n]),
                Arc::new(rows.iter().map(|r| r.1).collect::<Int32Array>()),
                Arc::new(TimestampMicrosecondArray::from(vec![1_717_243_200_123_456; n]).with_timezone("UTC")),
                strings(rows.iter().map(|r| r.2).collect()),
                strings(rows.iter().map(|r| r.3).collect()),
                strings(rows.iter().map(|r| r.4).collect()),
            ],
        )
        .expect("batch")
    }

    #[test]
    fn a_page_becomes_its_json_keyed_by_url_and_rows_without_a_response_are_skipped() {
        let topics = Topics::new(&spec(), None);
        let b = batch(&[
            ("http://a.example.com/1", 200, Some("whole text"), Some("main text"), Some("content")),
            ("http://a.example.com/dns", 0, None, None, None),
            ("http://a.example.com/2", 404, Some("not found"), None, Some("nav")),
            ("http://a.example.com/3", 200, None, None, None),
        ]);
        let out = messages(&b, &topics).expect("messages");
        assert_eq!(out.len(), 3, "the row without a response is not a page");
        let json: serde_json::Value = serde_json::from_slice(&out[0].payload).expect("json");
        assert_eq!(out[0].key, "http://a.example.com/1");
        assert_eq!(json["url"], "http://a.example.com/1");
        assert_eq!(json["id"], format!("{:016x}", xxhash_rust::xxh3::xxh3_64(b"http://a.example.com/1")));
        assert_eq!((json["content"].as_str(), json["resource"].as_str()), (Some("main text"), Some("example.com")));
        assert_eq!(json["time"], "2024-06-01T12:00:00.123456Z");
        assert!(json.get("truncated").is_none());
        assert_eq!(json.as_object().map(serde_json::Map::len), Some(5), "{json}");
        let second: serde_json::Value = serde_json::from_slice(&out[1].payload).expect("json");
        assert_eq!(second["content"], "not found", "the text when there is no main text");
        let third: serde_json::Value = serde_json::from_slice(&out[2].payload).expect("json");
        assert!(third["content"].is_null());
        let names: Vec<&str> = out.iter().map(|m| topics.name(m.topic)).collect();
        assert_eq!(names, ["crawl.content", "crawl.nav", "crawl.pages"]);
    }

    #[test]
    fn a_rule_names_the_topic_before_the_role() {
        let rules = crate::rules::parse_rules(
            "r.toml",
            "[[rule]]\nname = \"product\"\nurls = [\"http://shop.test/p/**\"]\n[[rule.field]]\nname = \"t\"\ncss = \"h1\"\n",
        )
        .expect("rules");
        let topics = Topics::new(&spec(), Some(Arc::new(rules)));
        assert_eq!(topics.len(), 4);
        assert_eq!(topics.name(topics.of("http://shop.test/p/1", Some("nav"))), "crawl.product");
        assert_eq!(topics.name(topics.of("http://shop.test/q", Some("nav"))), "crawl.nav");
        assert_eq!(topics.name(topics.of("http://shop.test/q", None)), "crawl.pages");
    }

    #[test]
    fn a_message_too_large_has_its_content_cut_to_fit_on_a_character_boundary() {
        let topics = Topics::new(&spec(), None);
        // Multi-byte characters and characters JSON escapes, over the limit.
        let huge = "é\"\u{1}".repeat(MAX_MESSAGE_BYTES / 3);
        let b = batch(&[("http://a.example.com/big", 200, Some(&huge), None, None)]);
        let out = messages(&b, &topics).expect("messages");
        let m = &out[0];
        assert!(m.truncated);
        let limit = MAX_MESSAGE_BYTES - RECORD_OVERHEAD - m.key.len();
        assert!(m.payload.len() <= limit && m.payload.len() > limit - 10, "{} of {limit}", m.payload.len());
        let json: serde_json::Value = serde_json::from_slice(&m.payload).expect("valid JSON after the cut");
        let content = json["content"].as_str().expect("content");
        assert!(huge.starts_with(content) && content.len() > MAX_MESSAGE_BYTES / 3, "{}", content.len());
        assert!(content.len() < huge.len());
        assert_eq!(json["truncated"], true);
    }
}
