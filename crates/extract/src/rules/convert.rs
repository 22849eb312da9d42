//! A field's text, as a page shows it, to the typed value of its column.
//!
//! Pages write values for readers, not parsers: prices with currency signs
//! and the site's own grouping (`€1,299.00`, `1.299,00 €`), stock as words
//! or schema.org URLs, dates in prose. Each conversion takes the value out
//! of its decoration and fails with a message for the rules file's author
//! (it lands in the item's `_errors`) when there is none to take.

use std::fmt;

use jiff::civil::{Date, DateTime};
use jiff::tz::Offset;
use jiff::Timestamp;

use crate::store::column::{ColumnType, Value};

/// The type of a rule's field (`type = "float"` in the rules file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    String,
    Int,
    Float,
    Bool,
    /// A calendar day.
    Date,
    /// An instant, in UTC.
    DateTime,
    /// An absolute http(s) URL, relative links resolved against the page's.
    Url,
}

impl FieldType {
    /// Every type, in the order the rules file's documentation lists them.
    pub const ALL: [Self; 7] =
        [Self::String, Self::Int, Self::Float, Self::Bool, Self::Date, Self::DateTime, Self::Url];

    /// The type named `name` in a rules file.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Its name in a rules file.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Int => "int",
            Self::Float => "float",
            Self::Bool => "bool",
            Self::Date => "date",
            Self::DateTime => "datetime",
            Self::Url => "url",
        }
    }

    /// The column of a field of this type: a list of them when the field
    /// keeps every match (`multiple`).
    #[must_use]
    pub fn column(self, multiple: bool) -> ColumnType {
        match (self, multiple) {
            (Self::String | Self::Url, false) => ColumnType::Utf8,
            (Self::String | Self::Url, true) => ColumnType::Utf8List,
            (Self::Int, false) => ColumnType::Int64,
            (Self::Int, true) => ColumnType::Int64List,
            (Self::Float, false) => ColumnType::Float64,
            (Self::Float, true) => ColumnType::Float64List,
            (Self::Bool, false) => ColumnType::Bool,
            (Self::Bool, true) => ColumnType::BoolList,
            (Self::Date, false) => ColumnType::Date32,
            (Self::Date, true) => ColumnType::Date32List,
            (Self::DateTime, false) => ColumnType::TimestampMicros,
            (Self::DateTime, true) => ColumnType::TimestampMicrosList,
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `raw` as a value of type `ty`. `format` is a `strptime` format for dates
/// and datetimes (ignored by the other types); `base` is the page's URL,
/// which relative links resolve against.
///
/// - string: whitespace collapsed and trimmed.
/// - int: the first number in the text, grouping separators removed
///   (`1,299`, `1.299`, `1'299`, `1 299` with a thin or no-break space); a
///   number with a fraction is refused rather than cut.
/// - float: the first number in the text, whatever surrounds it (currency
///   signs and codes, units, `/ 5`); the decimal separator is told from
///   grouping as people read it: the last of two different separators
///   (`1.299,00`, `1,299.00`); a lone `,` or `.` followed by exactly three
///   digits groups (`1,299` is 1299), otherwise it is the decimal point
///   (`12,5`, `24.50`, `0.299`).
/// - bool: true/yes/y/1/on/checked/in stock, false/no/n/0/off/out of
///   stock/sold out, any case, also schema.org's `https://schema.org/InStock`.
/// - date: `format`, else an ISO 8601 date (the date part of a timestamp, as
///   written), `14 March 2026`, `March 14, 2026`, RFC 2822; days since 1970.
/// - datetime: `format` (UTC unless it reads an offset), else RFC 3339 /
///   ISO 8601 (UTC without an offset; a date alone is its midnight), RFC
///   2822, the prose dates above; microseconds since 1970, UTC.
/// - url: resolved against `base`; http and https only.
///
/// # Errors
/// Why `raw` is not of the type, quoting it, e.g. "`Call us` is not a float".
pub fn convert(raw: &str, ty: FieldType, format: Option<&str>, base: &url::Url) -> Result<Value, String> {
    let s = raw.trim();
    if s.is_empty() {
        return Err("empty".into());
    }
    match ty {
        FieldType::String => Ok(Value::Utf8(s.split_whitespace().collect::<Vec<_>>().join(" "))),
        FieldType::Int => int(s).map(Value::Int64),
        FieldType::Float => float(s).map(Value::Float64),
        FieldType::Bool => boolean(s).map(Value::Bool),
        FieldType::Date => date(s, format).map(Value::Date32),
        FieldType::DateTime => datetime(s, format).map(Value::TimestampMicros),
        FieldType::Url => link(s, base).map(Value::Utf8),
    }
}

/// [`convert`] for values a machine wrote (JSON-LD, a TOML default): a
/// number is read as written, `.` the decimal point (schema.org's `2.499`
/// is two and a half, not 2,499 as in a German price); anything else as
/// [`convert`] reads it.
///
/// # Errors
/// As [`convert`].
pub fn convert_exact(raw: &str, ty: FieldType, format: Option<&str>, base: &url::Url) -> Result<Value, String> {
    let s = raw.trim();
    match ty {
        FieldType::Float => {
            if let Ok(x) = s.parse::<f64>().map_err(|_| ()).and_then(|x| if x.is_finite() { Ok(x) } else { Err(()) }) {
                return Ok(Value::Float64(x));
            }
        }
        FieldType::Int => {
            if let Ok(n) = s.parse::<i64>() {
                return Ok(Value::Int64(n));
            }
            if let Ok(x) = s.parse::<f64>() {
                #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
                if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
                    return Ok(Value::Int64(x as i64));
                }
                return Err(format!("`{}` is not an int: it has a fraction", shown(s)));
            }
        }
        _ => {}
    }
    convert(raw, ty, format, base)
}

/// `s` as an error message shows it: one line, not too long.
fn shown(s: &str) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

/// A number found in a text: sign, digits before and after the decimal
/// point (grouping removed), and the power of ten (`e2`).
#[derive(Debug, PartialEq)]
struct Number {
    negative: bool,
    int: String,
    frac: String,
    exp: Option<String>,
}

/// Characters that group digits in threes: `1,299`, `1.299`, `1'299`
/// (Swiss), `1 299` with a no-break, narrow no-break or thin space
/// (French, and what typography tools insert). An ordinary space is not
/// one: `2 100 ml bottles` is two numbers.
const GROUPING: [char; 6] = [',', '.', '\'', '\u{a0}', '\u{202f}', '\u{2009}'];

/// The first number in `s`: a run of digits and grouping characters (each
/// between two digits), read as the longest prefix that makes sense as one
/// number (see [`split_decimal`]), with a sign right before it and, when
/// `exponent`, an exponent right after.
fn first_number(s: &str, exponent: bool) -> Option<Number> {
    let chars: Vec<char> = s.chars().collect();
    let digit = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    // The first digit, or a decimal point that starts a number (`.5`).
    let start =
        (0..chars.len()).find(|&i| digit(i) || (chars[i] == '.' && digit(i + 1) && (i == 0 || !digit(i - 1))))?;
    // A sign, unless it joins a word to the number (`SKU-123`, `A-4`).
    let negative =
        start > 0 && matches!(chars[start - 1], '-' | '\u{2212}') && (start < 2 || !chars[start - 2].is_alphanumeric());
    let mut groups: Vec<String> = Vec::new();
    let mut seps: Vec<char> = Vec::new();
    let mut i = start;
    if chars[i] == '.' {
        groups.push(String::new());
        seps.push('.');
        i += 1;
    }
    loop {
        let from = i;
        while digit(i) {
            i += 1;
        }
        groups.push(chars[from..i].iter().collect());
        if i < chars.len() && GROUPING.contains(&chars[i]) && digit(i + 1) {
            seps.push(chars[i]);
            i += 1;
        } else {
            break;
        }
    }
    let exp = if exponent && matches!(chars.get(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
        let from = i + 1 + sign;
        let mut end = from;
        while digit(end) {
            end += 1;
        }
        (end > from).then(|| chars[i + 1..end].iter().collect::<String>())
    } else {
        None
    };
    // The longest prefix of the run that reads as one number.
    let mut n = seps.len();
    loop {
        if let Some((int, frac)) = split_decimal(&groups[..=n], &seps[..n], exp.is_some()) {
            // The exponent belongs to the whole run only.
            let exp = if n == seps.len() { exp } else { None };
            return Some(Number { negative, int, frac, exp });
        }
        n -= 1;
    }
}

/// The integer and fraction digits of digit `groups` joined by `seps`
/// (one fewer), or `None` when they do not read as one number: grouped
/// digits come in threes after a first group of one to three, with one
/// grouping character throughout, and a decimal separator, if any, is the
/// last separator and differs from the grouping one.
fn split_decimal(groups: &[String], seps: &[char], has_exponent: bool) -> Option<(String, String)> {
    let Some((&last, grouping)) = seps.split_last() else {
        return Some((groups[0].clone(), String::new()));
    };
    let decimal_char = |c: char| c == '.' || c == ',';
    let threes = |gs: &[String]| gs.iter().all(|g| g.len() == 3);
    let head_ok = !groups[0].is_empty() && groups[0].len() <= 3;
    let n = seps.len();
    if grouping.is_empty() {
        // One separator: it groups when three digits follow (and there is a
        // head it could group), else it is the decimal point.
        let groups_here = groups[1].len() == 3 && head_ok && groups[0] != "0" && !(has_exponent && last == '.');
        return if groups_here {
            Some((format!("{}{}", groups[0], groups[1]), String::new()))
        } else if decimal_char(last) {
            Some((groups[0].clone(), groups[1].clone()))
        } else {
            None
        };
    }
    let g = grouping[0];
    if !head_ok || grouping.iter().any(|&c| c != g) || !threes(&groups[1..n]) {
        return None;
    }
    if last == g {
        return threes(&groups[n..]).then(|| (groups.concat(), String::new()));
    }
    decimal_char(last).then(|| (groups[..n].concat(), groups[n].clone()))
}

fn int(s: &str) -> Result<i64, String> {
    let n = first_number(s, false).ok_or_else(|| format!("`{}` is not an int", shown(s)))?;
    if n.frac.bytes().any(|b| b != b'0') {
        return Err(format!("`{}` is not an int: it has a fraction", shown(s)));
    }
    let digits = if n.int.is_empty() { "0" } else { &n.int };
    let v: i64 = digits.parse().map_err(|_| format!("`{}` is too large for an int", shown(s)))?;
    Ok(if n.negative { -v } else { v })
}

fn float(s: &str) -> Result<f64, String> {
    let n = first_number(s, true).ok_or_else(|| format!("`{}` is not a float", shown(s)))?;
    let text = format!(
        "{}{}.{}e{}",
        if n.negative { "-" } else { "" },
        if n.int.is_empty() { "0" } else { &n.int },
        if n.frac.is_empty() { "0" } else { &n.frac },
        n.exp.as_deref().unwrap_or("0"),
    );
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(format!("`{}` is out of range for a float", shown(s))),
    }
}

fn boolean(s: &str) -> Result<bool, String> {
    let lower = s.to_lowercase();
    // `https://schema.org/InStock`, `http://schema.org/OutOfStock`, `schema:InStock`.
    let word = match lower.rsplit_once("schema.org/").or_else(|| lower.rsplit_once("schema:")) {
        Some((_, w)) => w,
        None => &lower,
    };
    let word: String = word.chars().filter(|c| !c.is_whitespace() && *c != '-' && *c != '_').collect();
    match word.as_str() {
        "true" | "yes" | "y" | "1" | "on" | "checked" | "instock" => Ok(true),
        "false" | "no" | "n" | "0" | "off" | "outofstock" | "soldout" => Ok(false),
        _ => Err(format!("`{}` is not a bool (true/false, yes/no, in stock/out of stock)", shown(s))),
    }
}

/// Days from 1970-01-01 to `d`.
fn days(d: Date) -> Result<i32, String> {
    let span = jiff::civil::date(1970, 1, 1).until(d).map_err(|e| e.to_string())?;
    Ok(span.get_days())
}

/// `s` read with the `strptime` format `format`.
fn with_format(s: &str, format: &str) -> Result<jiff::fmt::strtime::BrokenDownTime, String> {
    jiff::fmt::strtime::parse(format, s)
        .map_err(|e| format!("`{}` does not match the format `{format}` ({e})", shown(s)))
}

fn date(s: &str, format: Option<&str>) -> Result<i32, String> {
    if let Some(format) = format {
        let tm = with_format(s, format)?;
        let d = tm.to_date().map_err(|e| format!("`{}` with the format `{format}`: {e}", shown(s)))?;
        return days(d);
    }
    // The date as written, also of a timestamp with an offset; a `Z`
    // timestamp is refused as a civil date, and written in UTC anyway.
    let d = s
        .parse::<Date>()
        .ok()
        .or_else(|| s.parse::<Timestamp>().ok().map(|t| t.to_zoned(jiff::tz::TimeZone::UTC).date()))
        .or_else(|| jiff::fmt::rfc2822::parse(s).ok().map(|z| z.date()))
        .or_else(|| prose_date(s));
    match d {
        Some(d) => days(d),
        None => Err(format!(
            "`{}` is not a date (e.g. 2026-03-14, 14 March 2026, March 14, 2026; or give a `format`)",
            shown(s)
        )),
    }
}

fn datetime(s: &str, format: Option<&str>) -> Result<i64, String> {
    let utc = |dt: DateTime| Offset::UTC.to_timestamp(dt).ok();
    let t = if let Some(format) = format {
        let tm = with_format(s, format)?;
        let t = if tm.offset().is_some() {
            tm.to_timestamp()
        } else {
            tm.to_datetime().and_then(|dt| Offset::UTC.to_timestamp(dt))
        };
        t.map_err(|e| format!("`{}` with the format `{format}`: {e}", shown(s)))?
    } else {
        s.parse::<Timestamp>()
            .ok()
            .or_else(|| s.parse::<DateTime>().ok().and_then(utc))
            .or_else(|| jiff::fmt::rfc2822::parse(s).ok().map(|z| z.timestamp()))
            .or_else(|| prose_date(s).and_then(|d| utc(d.to_datetime(jiff::civil::Time::midnight()))))
            .ok_or_else(|| {
                format!(
                    "`{}` is not a date and time (e.g. 2026-03-14T10:30:00+01:00, \
                     Sat, 14 Mar 2026 10:30:00 +0100; or give a `format`)",
                    shown(s)
                )
            })?
    };
    Ok(t.as_microsecond())
}

/// English dates in prose: `14 March 2026`, `March 14, 2026`, `14th Mar.
/// 2026`, `Saturday, 14 March 2026`.
fn prose_date(s: &str) -> Option<Date> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    const DAYS: [&str; 7] = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
    let lower = s.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || c == ',')
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| !w.is_empty())
        .collect();
    // `mar`, `sept`, `march`: a name or an abbreviation of three letters or more.
    let named = |w: &str, names: &[&str]| (w.len() >= 3).then(|| names.iter().position(|n| n.starts_with(w))).flatten();
    let words = match words.split_first() {
        Some((first, rest)) if named(first, &DAYS).is_some() => rest,
        _ => &words[..],
    };
    let day = |w: &str| -> Option<i8> {
        let w = ["st", "nd", "rd", "th"].iter().find_map(|x| w.strip_suffix(x)).unwrap_or(w);
        (w.len() <= 2).then(|| w.parse().ok()).flatten()
    };
    let year = |w: &str| -> Option<i16> { (w.len() == 4).then(|| w.parse().ok()).flatten() };
    let (d, m, y) = match words {
        [a, b, c] => match (day(a), named(b, &MONTHS)) {
            (Some(d), Some(m)) => (d, m, year(c)?),
            _ => (day(b)?, named(a, &MONTHS)?, year(c)?),
        },
        _ => return None,
    };
    Date::new(y, i8::try_from(m + 1).ok()?, d).ok()
}

fn link(s: &str, base: &url::Url) -> Result<String, String> {
    let u = base.join(s).map_err(|e| format!("`{}` is not a URL ({e})", shown(s)))?;
    match u.scheme() {
        "http" | "https" => Ok(u.into()),
        _ => Err(format!("`{}` is not an http(s) URL", shown(s))),
    }
}

#[cfg(test)]
mod tests;
