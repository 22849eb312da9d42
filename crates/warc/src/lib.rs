//! WARC output (`--warc`; docs/src/warc.md): every exchange of a map task's
//! fetched URLs as WARC/1.1 records, for web archives.
//!
//! Per map partition, `warc/layer=L/part-PPPPP.warc.gz` (a `warcinfo`
//! record, then per URL a `request` and a `response` record for each
//! redirect hop and for the final answer, each record its own gzip
//! member) and its CDXJ index `part-PPPPP.cdxj`, written under the map
//! task's one commit like its Parquet shards. The records of a page are
//! built and compressed where the page is processed, on the rayon pool
//! ([`TaskArchive::page`], called by `map::process`); the map task's
//! writer only appends their bytes ([`WarcFile`], fed by `map::outputs`).
//!
//! Record ids are name-based UUIDs of the run, layer, partition, URL, hop
//! and record type ([`record::record_id`]): a task run again after a kill
//! names its records as the first attempt did. The run's id is made once
//! per data location, by the first map task that writes an archive
//! ([`TaskArchive::open`]).

// The layers below, under the names this crate's files use.
pub(crate) use layercrawl_fetch as fetch;
pub(crate) use layercrawl_store::{self as store, error};

mod cdxj;
mod http;
mod index;
mod record;
mod writer;

use std::time::SystemTime;

use bytes::Bytes;

use crate::fetch::{Capture, ErrorKind, Fetched, Response};
use crate::store::{layout, Created, Store, StoreError};
use record::{digest_of, record_id, timestamp14, Kind, Record};

pub use cdxj::surt;
pub use writer::WarcFile;

/// Why the archive of a map task could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WarcError {
    /// Appending to the archive file, or closing it, failed.
    #[error("cannot write WARC file {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<WarcError> for crate::error::StageError {
    fn from(e: WarcError) -> Self {
        Self::stage(e)
    }
}

/// The run's archive identity, kept at `layout::WARC_RUN`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct RunId {
    id: String,
}

/// What the archive records of one map task share: the run's id, the
/// task's layer and partition, its file's name and `warcinfo` record.
#[derive(Debug)]
pub struct TaskArchive {
    run: String,
    layer: u32,
    part: u32,
    /// The file's path under the data location, as the index names it.
    filename: String,
    warcinfo_id: String,
    user_agent: String,
}

impl TaskArchive {
    /// The archive of partition `part` of `layer`; makes the run's id
    /// (create-if-absent, so concurrent first tasks agree) when no task
    /// made it before. `store` is the data location itself, not an
    /// attempt's.
    ///
    /// # Errors
    /// When the run's id cannot be read or written.
    pub async fn open(store: &Store, layer: u32, part: u32, user_agent: &str) -> Result<Self, StoreError> {
        let run = match store.get_json::<RunId>(layout::WARC_RUN).await? {
            Some(r) => r.id,
            None => {
                let fresh = RunId { id: fresh_id() };
                match store.put_json_new(layout::WARC_RUN, &fresh).await? {
                    Created::New => fresh.id,
                    Created::Existed => {
                        store
                            .get_json::<RunId>(layout::WARC_RUN)
                            .await?
                            .ok_or_else(|| StoreError::Schema {
                                path: layout::WARC_RUN.to_string(),
                                reason: "written by another task, then gone".into(),
                            })?
                            .id
                    }
                }
            }
        };
        let warcinfo_id = record_id(&format!("{run}/{layer}/{part}/warcinfo"));
        Ok(Self {
            run,
            layer,
            part,
            filename: layout::warc(layer, part),
            warcinfo_id,
            user_agent: user_agent.to_string(),
        })
    }

    /// The file's `warcinfo` record, which opens it.
    #[must_use]
    pub fn warcinfo(&self) -> Vec<u8> {
        let block = format!(
            "software: layercrawl/{}\r\nformat: WARC File Format 1.1\r\n\
             conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n\
             isPartOf: layercrawl-run-{}\r\nrobots: obey\r\nhttp-header-user-agent: {}\r\n",
            env!("CARGO_PKG_VERSION"),
            self.run,
            self.user_agent.replace(['\r', '\n'], " ")
        );
        let name = self.filename.rsplit('/').next().unwrap_or_default();
        Record::new(Kind::Warcinfo, &self.warcinfo_id, SystemTime::now())
            .field("WARC-Filename", name)
            .field("Content-Type", "application/warc-fields")
            .block(block.as_bytes())
            .gzip()
    }

    /// The records of one fetched URL, compressed: a `request` and a
    /// `response` per redirect hop and for the final answer (a 304 that
    /// carried last night's page forward is a `revisit`; a rendered page
    /// adds a `conversion` with its DOM), with the index lines of its
    /// responses. `None` when nothing was exchanged (robots.txt denied the
    /// URL, or the request got no answer: the `doc` row says why) or the
    /// fetch kept no captures.
    #[must_use]
    pub fn page(&self, f: &Fetched) -> Option<PageRecords> {
        let mut out = PageRecords::default();
        let url = f.url.as_str();
        for (hop, resp) in f.hops.iter().chain(f.response.as_ref()).enumerate() {
            let Some(c) = resp.capture.as_deref() else { continue };
            let last = hop == f.hops.len();
            let error = if last { f.error.as_ref().map(|e| e.0) } else { None };
            self.exchange(&mut out, &format!("{}/{}/{url}/{hop}", self.layer, self.part), c, resp, error);
        }
        (!out.bytes.is_empty()).then_some(out)
    }

    /// One exchange's records, named from `name` (layer, partition, URL, hop).
    fn exchange(&self, out: &mut PageRecords, name: &str, c: &Capture, resp: &Response, error: Option<ErrorKind>) {
        let id = |kind: Kind| record_id(&format!("{}/{name}/{}", self.run, kind.as_str()));
        let revisit = c.status == 304 && resp.status != 304;
        let answer_kind = if revisit { Kind::Revisit } else { Kind::Response };
        let (request_id, answer_id) = (id(Kind::Request), id(answer_kind));
        let target = c.url.as_str();
        let ip = c.remote_ip.map(|ip| ip.to_string());

        let head = http::request_head(c);
        let request = Record::new(Kind::Request, &request_id, c.sent_at)
            .field("WARC-Target-URI", target)
            .field("WARC-Warcinfo-ID", self.warcinfo_id.clone())
            .field("WARC-Concurrent-To", answer_id.clone())
            .field("Content-Type", "application/http;msgtype=request")
            .field("WARC-Payload-Digest", digest_of(&[]))
            .block(&head);
        out.push(request.gzip(), None);

        // What the server sent: the body before rendering, or for a 304
        // that carried last night's page forward, no body (the payload
        // digest is then last night's page's, which the revisit stands for).
        let payload: &Bytes = c.served_body.as_ref().unwrap_or(&resp.body);
        let payload_digest = digest_of(&[payload]);
        let sent: &[u8] = if revisit { &[] } else { payload };
        let head = http::response_head(c, sent.len());
        let mut answer = Record::new(answer_kind, &answer_id, c.sent_at).field("WARC-Target-URI", target);
        if let Some(ip) = &ip {
            answer = answer.field("WARC-IP-Address", ip.clone());
        }
        answer = answer
            .field("WARC-Warcinfo-ID", self.warcinfo_id.clone())
            .field("WARC-Concurrent-To", request_id)
            .field("Content-Type", "application/http;msgtype=response")
            .field("WARC-Payload-Digest", payload_digest.clone());
        if revisit {
            answer = answer
                .field("WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/server-not-modified") // not a dataset: the WARC standard's URI
                .field("WARC-Refers-To-Target-URI", target);
        }
        if let Some(why) = truncated(resp, error) {
            answer = answer.field("WARC-Truncated", why);
        }
        let answer = answer.block(&head).block(sent).gzip();
        let mime = c.headers.get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).and_then(cdxj::mime);
        let entry = cdxj::Entry {
            key: format!("{} {}", cdxj::surt(&c.url), timestamp14(c.sent_at)),
            url: target.to_string(),
            mime: if revisit { Some("warc/revisit".into()) } else { mime }, // not a dataset: a WARC record's type
            status: c.status,
            digest: payload_digest,
            length: answer.len() as u64,
            start: 0,
        };
        out.push(answer, Some(entry));

        if resp.rendered && c.served_body.is_some() {
            let conversion = Record::new(Kind::Conversion, &id(Kind::Conversion), c.sent_at)
                .field("WARC-Target-URI", target)
                .field("WARC-Warcinfo-ID", self.warcinfo_id.clone())
                .field("WARC-Refers-To", answer_id)
                .field("Content-Type", resp.content_type.clone().unwrap_or_else(|| "text/html".into()))
                .field("WARC-Payload-Digest", digest_of(&[&resp.body]))
                .block(&resp.body);
            out.push(conversion.gzip(), None);
        }
    }

    /// The file's path under the data location.
    #[must_use]
    pub fn filename(&self) -> &str {
        &self.filename
    }
}

/// Why a response's body in the record is not the whole body the server
/// meant to send (`WARC-Truncated`).
fn truncated(resp: &Response, error: Option<ErrorKind>) -> Option<&'static str> {
    match resp.body_error.as_ref().map(|e| e.0).or(error) {
        Some(ErrorKind::Timeout) => Some("time"),
        Some(ErrorKind::Reset) => Some("disconnect"),
        Some(ErrorKind::Decode) => Some("unspecified"),
        _ if resp.truncated => Some("length"),
        _ => None,
    }
}

/// One page's records, compressed, and the index lines of its responses:
/// what rides from the rayon pool to the task's [`WarcFile`].
#[derive(Debug, Default)]
pub struct PageRecords {
    /// Gzip members, one per record, in file order.
    bytes: Vec<u8>,
    /// Index lines, each with its member's start in `bytes`.
    index: Vec<cdxj::Entry>,
}

impl PageRecords {
    fn push(&mut self, member: Vec<u8>, entry: Option<cdxj::Entry>) {
        if let Some(mut e) = entry {
            e.start = self.bytes.len() as u64;
            self.index.push(e);
        }
        if self.bytes.is_empty() {
            self.bytes = member;
        } else {
            self.bytes.extend_from_slice(&member);
        }
    }
}

/// A run id no other run shares: 128 bits from the process's hash seeds
/// (random per process), the clock and the process id.
fn fresh_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let half = |salt: u8| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now);
        h.write_u32(std::process::id());
        h.write_u8(salt);
        h.finish()
    };
    format!("{:016x}{:016x}", half(0), half(1))
}

#[cfg(test)]
mod tests;
