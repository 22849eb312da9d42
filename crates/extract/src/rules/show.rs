//! Rules' results as JSON, for `layercrawl rules test --json` and the rule
//! editor: the same values the items datasets hold, in JSON's types.

use serde_json::{json, Value as Json};

use super::Applied;
use crate::store::column::Value;

/// A value as JSON: dates as `YYYY-MM-DD`, instants as RFC 3339 (UTC).
#[must_use]
pub fn value_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int32(n) => json!(n),
        Value::Int64(n) => json!(n),
        Value::Float64(x) => json!(x),
        Value::Utf8(s) => json!(s),
        Value::Binary(b) => json!(format!("<{} bytes>", b.len())),
        Value::Utf8List(l) => json!(l),
        Value::Int64List(l) => json!(l),
        Value::Float64List(l) => json!(l),
        Value::BoolList(l) => json!(l),
        Value::Date32(d) => json!(date(*d)),
        Value::Date32List(l) => json!(l.iter().map(|d| date(*d)).collect::<Vec<_>>()),
        Value::TimestampMicros(t) => json!(instant(*t)),
        Value::TimestampMicrosList(l) => json!(l.iter().map(|t| instant(*t)).collect::<Vec<_>>()),
    }
}

/// Days since the epoch as `YYYY-MM-DD`.
#[must_use]
pub fn date(days: i32) -> String {
    jiff::civil::date(1970, 1, 1)
        .checked_add(jiff::Span::new().days(i64::from(days)))
        .map_or_else(|_| days.to_string(), |d| d.to_string())
}

/// Microseconds since the epoch as RFC 3339, UTC.
#[must_use]
pub fn instant(us: i64) -> String {
    jiff::Timestamp::from_microsecond(us).map_or_else(|_| us.to_string(), |t| t.to_string())
}

/// The items of an applied rule, one JSON object each: the fields by name,
/// `item` for rules with `each`, and `_errors` (null when none).
#[must_use]
pub fn items_json(a: &Applied<'_>) -> Vec<Json> {
    a.items
        .items
        .iter()
        .map(|it| {
            let mut m = serde_json::Map::new();
            for (f, v) in a.rule.fields.iter().zip(&it.values) {
                m.insert(f.name.clone(), value_json(v));
            }
            if let Some(i) = it.index {
                m.insert("item".into(), json!(i));
            }
            m.insert("_errors".into(), if it.errors.is_empty() { Json::Null } else { json!(it.errors) });
            Json::Object(m)
        })
        .collect()
}
