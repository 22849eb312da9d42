//! The value types of options: durations, sizes, percentages, lists and
//! addresses. Each parses from the text a flag is given (`FromStr`, which
//! clap uses), prints back as that text (`Display`, which `--help` shows as
//! the default) and reads from a job file as text or a number (serde), so a
//! flag and a job-file key accept the same values.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Implements serde for a type through its text: written with `Display`,
/// read with `FromStr` from a string, a number or a boolean (a job file's
/// `timeout = 30` is `30` seconds, as `--timeout 30` is).
macro_rules! serde_as_text {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                text::deserialize(d)
            }
        }
    )*};
}

/// serde through the text, for a field whose type keeps another serde form
/// elsewhere (`#[serde(with = "text")]`).
pub mod text {
    use super::{Deserialize, Deserializer, Serializer};

    /// Writes the value as its `Display` text.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<T: std::fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    /// Reads a string, number or boolean and parses its text.
    ///
    /// # Errors
    /// The parser's message, or a value of another kind.
    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: std::str::FromStr,
        T::Err: std::fmt::Display,
        D: Deserializer<'de>,
    {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Scalar {
            Text(String),
            Int(i64),
            Float(f64),
            Bool(bool),
        }
        let text = match Scalar::deserialize(d)? {
            Scalar::Text(s) => s,
            Scalar::Int(n) => n.to_string(),
            Scalar::Float(x) => x.to_string(),
            Scalar::Bool(b) => b.to_string(),
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A duration: `250ms`, `30s`, `5m`, `2h`, or a bare number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span(pub Duration);

impl FromStr for Span {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_duration(s).map(Self)
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        match ms {
            _ if !ms.is_multiple_of(1000) => write!(f, "{ms}ms"),
            _ if ms.is_multiple_of(3_600_000) => write!(f, "{}h", ms / 3_600_000),
            _ if ms.is_multiple_of(60_000) => write!(f, "{}m", ms / 60_000),
            _ => write!(f, "{}s", ms / 1000),
        }
    }
}

/// A duration given as a whole number of milliseconds (`--delay 250`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Millis(pub Duration);

impl FromStr for Millis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        s.trim()
            .parse::<u64>()
            .map(|ms| Self(Duration::from_millis(ms)))
            .map_err(|_| format!("{s:?} is not a whole number of milliseconds (e.g. 250)"))
    }
}

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.as_millis())
    }
}

/// A duration, or `off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanOrOff(pub Option<Duration>);

impl FromStr for SpanOrOff {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim() == "off" {
            return Ok(Self(None));
        }
        parse_duration(s).map(|d| Self(Some(d))).map_err(|e| format!("{e}, or off"))
    }
}

impl fmt::Display for SpanOrOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(d) => Span(d).fmt(f),
            None => f.write_str("off"),
        }
    }
}

/// A memory size in bytes: `512M`, `2G`, `1.5GiB` or a bare number
/// (powers of 1024, as `free -h` and `ps` count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl FromStr for Size {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_size(s).map(Self)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A percentage of all cores, 1 to 100, with or without `%`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Percent(pub u8);

impl FromStr for Percent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse_percent(s).map(Self)
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A DNS server: `IP:PORT`, or `IP` for port 53.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DnsServer(pub std::net::SocketAddr);

impl FromStr for DnsServer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        t.parse::<std::net::SocketAddr>()
            .or_else(|_| t.parse::<std::net::IpAddr>().map(|ip| std::net::SocketAddr::new(ip, 53)))
            .map(Self)
            .map_err(|_| format!("{s:?} is not IP or IP:PORT (e.g. 127.0.0.1:5353)"))
    }
}

impl fmt::Display for DnsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

serde_as_text!(Span, Millis, SpanOrOff, Size, Percent, DnsServer);

/// A capability on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    /// Whether it is on.
    #[must_use]
    pub fn on(self) -> bool {
        self == Self::On
    }
}

/// What a crawl makes of links marked `rel="nofollow"` and of the links of
/// a page whose robots meta tag says `nofollow`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Nofollow {
    /// Not followed: the link is kept, labelled `nofollow`.
    #[default]
    Obey,
    /// Followed like any other link (a crawl of one's own site or
    /// application, whose generated views are marked nofollow for search
    /// engines).
    Ignore,
}

impl Nofollow {
    /// Whether a link marked nofollow is left unfollowed.
    #[must_use]
    pub fn obeyed(self) -> bool {
        self == Self::Obey
    }
}

/// A list of names: comma-separated on the command line, a TOML array or
/// a comma-separated string in a job file. Blank items are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List(pub Vec<String>);

impl List {
    /// The list of these items.
    #[must_use]
    pub fn of(items: &[&str]) -> Self {
        Self(items.iter().map(|s| (*s).to_string()).collect())
    }
}

impl FromStr for List {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(Self(s.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect()))
    }
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join(","))
    }
}

/// Written as its text: one value, which a flag replaces as a whole
/// (unlike a repeatable flag's items, which add to the job file's).
impl Serialize for List {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Text(String),
            Items(Vec<String>),
        }
        Ok(match Either::deserialize(d)? {
            Either::Text(s) => s.parse().unwrap_or_default(),
            Either::Items(items) => {
                Self(items.into_iter().map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect())
            }
        })
    }
}

/// Parses `250ms`, `30s`, `5m`, `2h` or a bare number of seconds.
///
/// # Errors
/// A message with the accepted forms.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a duration; use e.g. 250ms, 30s, 5m, 2h"))?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        other => return Err(format!("{s:?}: unknown unit {other:?}; use ms, s, m or h")),
    };
    if !secs.is_finite() || secs <= 0.0 || secs > 30.0 * 86400.0 {
        return Err(format!("{s:?} is out of range (0 < d <= 30 days)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Least `--max-memory`: below it, a crawler's own runtime would not fit.
const MIN_MEMORY: u64 = 16 << 20;

/// Parses a memory size: `512M`, `2G`, `1.5GiB`, `300MB`, `65536K`, or a
/// bare number of bytes. K, M, G and T are powers of 1024 with or without
/// `B` or `iB` (as `free -h` and `ps` count); case does not matter.
///
/// # Errors
/// A message naming the value and the accepted forms, or the range.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let forms = "use e.g. 512M, 2G, 1.5GiB";
    let n: f64 = num.parse().map_err(|_| format!("{s:?} is not a size; {forms}"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix("ib").or_else(|| unit.strip_suffix('b')).unwrap_or(&unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => return Err(format!("{s:?}: unknown unit; {forms} (K, M, G, T: powers of 1024)")),
    };
    #[allow(clippy::cast_precision_loss)]
    let bytes = n * (1u64 << shift) as f64;
    #[allow(clippy::cast_precision_loss)]
    if !bytes.is_finite() || bytes < MIN_MEMORY as f64 || bytes > (1u64 << 50) as f64 {
        return Err(format!("{s:?} is out of range; allowed 16M to 1024T"));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(bytes as u64)
}

/// Parses a percentage of all cores, 1 to 100, with or without `%`.
///
/// # Errors
/// A message naming the value and the range.
pub fn parse_percent(s: &str) -> Result<u8, String> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim();
    match t.parse::<u8>() {
        Ok(n @ 1..=100) => Ok(n),
        _ => Err(format!("{s:?} is not a percentage of all cores; allowed 1 to 100")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("0s").is_err());
    }

    /// What `--help` prints as a default parses back to the same value.
    #[test]
    fn spans_print_as_they_parse() {
        for text in ["250ms", "1500ms", "1s", "30s", "5m", "90s", "2h"] {
            let span: Span = text.parse().expect(text);
            assert_eq!(span.to_string(), text);
            assert_eq!(span.to_string().parse::<Span>(), Ok(span));
        }
        assert_eq!("off".parse::<SpanOrOff>(), Ok(SpanOrOff(None)));
        assert_eq!(SpanOrOff(Some(Duration::from_secs(1))).to_string(), "1s");
        assert!("soon".parse::<SpanOrOff>().expect_err("not a span").contains("or off"));
    }

    #[test]
    fn job_file_values_read_as_text_or_numbers() {
        #[derive(Deserialize)]
        struct Job {
            a: Span,
            b: Span,
            c: Size,
            d: List,
            e: List,
            f: DnsServer,
        }
        let job: Job =
            toml::from_str("a = '250ms'\nb = 30\nc = '2G'\nd = ['x', ' y ']\ne = 'p, q,'\nf = '127.0.0.1'\n")
                .expect("job");
        assert_eq!((job.a.0, job.b.0, job.c.0), (Duration::from_millis(250), Duration::from_secs(30), 2 << 30));
        assert_eq!((job.d.0, job.e.0), (vec!["x".to_string(), "y".into()], vec!["p".to_string(), "q".into()]));
        assert_eq!(job.f.to_string(), "127.0.0.1:53");
        let e = toml::from_str::<Job>("a = 'soon'\nb = 1\nc = 1\nd = []\ne = ''\nf = '1.1.1.1'\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("\"soon\" is not a duration"), "{e}");
    }

    #[test]
    fn sizes_in_every_form() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("300mb"), Ok(300 << 20));
        assert_eq!(parse_size(" 65536 K "), Ok(64 << 20));
        assert_eq!(parse_size("1t"), Ok(1 << 40));
        assert_eq!(parse_size("134217728"), Ok(128 << 20));
    }

    #[test]
    fn bad_sizes_are_named() {
        for (v, says) in [
            ("lots", "not a size"),
            ("", "not a size"),
            ("2X", "unknown unit"),
            ("5M", "out of range"),
            ("-1G", "not a size"),
            ("9999999T", "out of range"),
        ] {
            let e = parse_size(v).expect_err(v);
            assert!(e.contains(says) && e.contains(&format!("{v:?}")), "{v}: {e}");
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("80"), Ok(80));
        assert_eq!(parse_percent("50%"), Ok(50));
        assert_eq!(parse_percent("100"), Ok(100));
        for v in ["0", "101", "-5", "half", "12.5"] {
            let e = parse_percent(v).expect_err(v);
            assert!(e.contains("1 to 100") && e.contains(&format!("{v:?}")), "{v}: {e}");
        }
    }
}
