//! One WARC/1.1 record: its named fields, its block, its digests, its
//! identifier, and the record compressed as a gzip member of its own (so a
//! `.warc.gz` file can be cut at any record and read from there, which is
//! what the CDXJ index's offsets rely on).
//!
//! The format is small and written here rather than through a crate: the
//! `warc` crate compresses a whole file as one gzip stream, not a member
//! per record, and computes no digests (docs/src/warc.md).

use std::io::Write;
use std::time::SystemTime;

use flate2::write::GzEncoder;
use sha1::{Digest, Sha1};

/// gzip level of a record: zlib's default, what `warcio` and `wget` write.
/// On 1,087 of the test web's 22 KB pages (flate2 with zlib-rs, one run
/// each on a loaded machine) level 6 made 34.6 % of the bytes at the speed
/// of level 3 (35.0 %); level 2 made 36.1 % at 1.5x, level 1 47.3 % at 3x
/// the speed. An archive is written once and kept: level 6. (miniz_oxide,
/// flate2's default backend, took 2.5x as long at level 6.)
const GZIP_LEVEL: u32 = 6;

/// What a record is (the `WARC-Type` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Warcinfo,
    Request,
    Response,
    /// A 304 answer to a conditional request: the page is last night's.
    Revisit,
    /// The page's DOM after rendering, beside the response it came from.
    Conversion,
}

impl Kind {
    /// The `WARC-Type` value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warcinfo => "warcinfo",
            Self::Request => "request",
            Self::Response => "response",
            Self::Revisit => "revisit",
            Self::Conversion => "conversion",
        }
    }
}

/// A record being built: its fields in the order they are written, then
/// its block, given as parts so a body is never copied before compression.
#[derive(Debug)]
pub struct Record<'a> {
    fields: Vec<(&'static str, String)>,
    block: Vec<&'a [u8]>,
}

impl<'a> Record<'a> {
    /// A record of `kind` named `id` (see [`record_id`]), dated `date`.
    #[must_use]
    pub fn new(kind: Kind, id: &str, date: SystemTime) -> Self {
        let fields = vec![
            ("WARC-Type", kind.as_str().to_string()),
            ("WARC-Record-ID", id.to_string()),
            ("WARC-Date", warc_date(date)),
        ];
        Self { fields, block: Vec::new() }
    }

    /// Adds a field (written in the order added, before `Content-Length`).
    #[must_use]
    pub fn field(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.fields.push((name, value.into()));
        self
    }

    /// Appends part of the block.
    #[must_use]
    pub fn block(mut self, part: &'a [u8]) -> Self {
        self.block.push(part);
        self
    }

    /// The block's digest over every part, as `WARC-Block-Digest` and
    /// `WARC-Payload-Digest` write it.
    #[must_use]
    pub fn block_digest(&self) -> String {
        digest_of(&self.block)
    }

    /// The record as a gzip member: the version line, the fields, the
    /// block digest, `Content-Length`, the block and the two CRLFs that end
    /// a record.
    #[must_use]
    pub fn gzip(self) -> Vec<u8> {
        let len: usize = self.block.iter().map(|p| p.len()).sum();
        let mut head = String::with_capacity(512);
        head.push_str("WARC/1.1\r\n");
        for (name, value) in &self.fields {
            push_field(&mut head, name, value);
        }
        push_field(&mut head, "WARC-Block-Digest", &self.block_digest());
        push_field(&mut head, "Content-Length", &len.to_string());
        head.push_str("\r\n");
        // Text compresses to about a quarter: start there, grow if needed.
        let mut gz =
            GzEncoder::new(Vec::with_capacity(head.len() + len / 4 + 64), flate2::Compression::new(GZIP_LEVEL));
        let written = gz
            .write_all(head.as_bytes())
            .and_then(|()| self.block.iter().try_for_each(|p| gz.write_all(p)))
            .and_then(|()| gz.write_all(b"\r\n\r\n"))
            .and_then(|()| gz.finish());
        // Writing to a Vec cannot fail.
        written.expect("compressing into memory")
    }
}

fn push_field(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push_str(": ");
    // A field value is one line: a line break in a header value would
    // start a field of its own.
    out.extend(value.chars().map(|c| if c == '\r' || c == '\n' { ' ' } else { c }));
    out.push_str("\r\n");
}

/// `sha1:` and the base32 of the SHA-1 of `parts` taken as one sequence:
/// the digest form of `WARC-Block-Digest` and `WARC-Payload-Digest` that
/// the archiving tools write and check.
#[must_use]
pub fn digest_of(parts: &[&[u8]]) -> String {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    format!("sha1:{}", data_encoding::BASE32.encode(&h.finalize()))
}

/// A record's `urn:uuid:` identifier, derived from `name` (the run, layer,
/// partition, URL, hop and kind of the record, docs/src/warc.md): a name-based
/// UUID (version 5, SHA-1), so a task run again names its records as the
/// first run did.
#[must_use]
pub fn record_id(name: &str) -> String {
    // The URL namespace of RFC 9562: the names start with the run's id.
    const NAMESPACE: [u8; 16] =
        [0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8];
    let mut h = Sha1::new();
    h.update(NAMESPACE);
    h.update(name.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x50;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("<urn:uuid:{}-{}-{}-{}-{}>", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

/// `WARC-Date`: UTC to the microsecond (WARC/1.1 allows fractions of a
/// second), `2026-11-25T06:01:02.123456Z`.
#[must_use]
pub fn warc_date(t: SystemTime) -> String {
    let (date, micros) = civil(t);
    format!("{date}.{micros:06}Z")
}

/// The CDXJ timestamp of `t`: 14 digits, `20261125060102`.
#[must_use]
pub fn timestamp14(t: SystemTime) -> String {
    let (date, _) = civil(t);
    date.chars().filter(char::is_ascii_digit).collect()
}

/// `YYYY-MM-DDThh:mm:ss` in UTC and the microseconds.
fn civil(t: SystemTime) -> (String, i32) {
    let us = t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    let ts = jiff::Timestamp::from_microsecond(us).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let z = ts.to_zoned(jiff::tz::TimeZone::UTC);
    let date =
        format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", z.year(), z.month(), z.day(), z.hour(), z.minute(), z.second());
    (date, ts.subsec_microsecond())
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::time::Duration;

    use super::*;

    #[test]
    fn digests_are_sha1_in_base32() {
        // SHA-1 of nothing, as every WARC tool writes it for an empty payload.
        assert_eq!(digest_of(&[]), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
        // Parts are digested as one sequence.
        assert_eq!(digest_of(&[b"ab", b"c"]), digest_of(&[b"abc"]));
        assert_eq!(digest_of(&[b"abc"]), "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5");
    }

    #[test]
    fn record_ids_are_version_5_uuids_fixed_by_their_name() {
        let a = record_id("run/0/3/http://a.test/x/0/response");
        assert_eq!(a, record_id("run/0/3/http://a.test/x/0/response"));
        assert_ne!(a, record_id("run/0/3/http://a.test/x/0/request"));
        let uuid = a.strip_prefix("<urn:uuid:").and_then(|s| s.strip_suffix('>')).expect("urn:uuid form");
        let groups: Vec<&str> = uuid.split('-').collect();
        assert_eq!(groups.iter().map(|g| g.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12]);
        assert!(groups[2].starts_with('5'), "version 5: {uuid}");
        assert!(matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'), "RFC variant: {uuid}");
    }

    #[test]
    fn dates_are_utc_with_microseconds_and_timestamps_have_14_digits() {
        // 2015-10-21T07:28:00Z and 1.5 ms.
        let t = SystemTime::UNIX_EPOCH + Duration::from_micros(1_445_412_480_001_500);
        assert_eq!(warc_date(t), "2015-10-21T07:28:00.001500Z");
        assert_eq!(timestamp14(t), "20151021072800");
    }

    #[test]
    fn a_record_is_one_gzip_member_with_its_length_and_digest() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        let gz = Record::new(Kind::Warcinfo, "<urn:uuid:x>", t)
            .field("Content-Type", "application/warc-fields")
            .field("WARC-Filename", "bad\r\nname")
            .block(b"software: ")
            .block(b"test\r\n")
            .gzip();
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text).expect("one gzip member");
        let want = format!(
            "WARC/1.1\r\nWARC-Type: warcinfo\r\nWARC-Record-ID: <urn:uuid:x>\r\nWARC-Date: 2015-10-21T07:28:00.000000Z\r\n\
             Content-Type: application/warc-fields\r\nWARC-Filename: bad  name\r\nWARC-Block-Digest: {}\r\n\
             Content-Length: 16\r\n\r\nsoftware: test\r\n\r\n\r\n",
            digest_of(&[b"software: test\r\n"])
        );
        assert_eq!(text, want);
    }
}
