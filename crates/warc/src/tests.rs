//! A page's records as built on the rayon pool, read back member by member.

use std::io::Read;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue};
use url::Url;

use super::*;
use crate::fetch::capture::request_headers;

fn archive() -> TaskArchive {
    TaskArchive {
        run: "r1".into(),
        layer: 1,
        part: 3,
        filename: layout::warc(1, 3),
        warcinfo_id: record_id("r1/1/3/warcinfo"),
        user_agent: "layercrawl-test/1".into(),
    }
}

fn response(url: &str, status: u16, body: &'static str, headers: &[(&'static str, &'static str)]) -> Response {
    let url = Url::parse(url).expect("url");
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.append(*k, HeaderValue::from_static(v));
    }
    Response {
        status,
        content_type: headers.iter().find(|(k, _)| *k == "content-type").map(|(_, v)| (*v).to_string()),
        body: Bytes::from_static(body.as_bytes()),
        received: body.len() as u64,
        capture: Some(Box::new(Capture {
            request: request_headers("layercrawl-test/1", &url, None),
            url,
            sent_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480),
            status,
            version: reqwest::Version::HTTP_11,
            reason: None,
            headers: h,
            remote_ip: Some("127.0.0.1".parse().expect("ip")),
            served_body: None,
        })),
        ..Response::default()
    }
}

fn fetched(hops: Vec<Response>, last: Option<Response>) -> Fetched {
    let url = Url::parse("http://a.test/old").expect("url");
    Fetched {
        id: 0,
        final_url: last.as_ref().and_then(|r| r.capture.as_ref()).map_or_else(|| url.clone(), |c| c.url.clone()),
        url,
        redirects: u32::try_from(hops.len()).expect("few"),
        response: last,
        error: None,
        redirect_out: None,
        hops,
        started_at: SystemTime::UNIX_EPOCH,
        elapsed: Duration::ZERO,
    }
}

/// A record read back: its fields and its block.
struct Rec {
    fields: Vec<(String, String)>,
    block: Vec<u8>,
}

impl Rec {
    fn get(&self, name: &str) -> &str {
        self.fields.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
}

/// Each gzip member of `bytes` as a record, with its offset and length.
fn members(bytes: &[u8]) -> Vec<(u64, u64, Rec)> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let mut d = flate2::bufread::GzDecoder::new(&bytes[at..]);
        let mut text = Vec::new();
        d.read_to_end(&mut text).expect("a gzip member");
        let rest = d.into_inner().len();
        let len = bytes.len() - at - rest;
        let split = text.windows(4).position(|w| w == b"\r\n\r\n").expect("end of fields");
        let head = String::from_utf8(text[..split].to_vec()).expect("utf8 fields");
        let mut lines = head.split("\r\n");
        assert_eq!(lines.next(), Some("WARC/1.1"));
        let fields: Vec<(String, String)> = lines
            .map(|l| l.split_once(": ").map(|(k, v)| (k.to_string(), v.to_string())).expect("name: value"))
            .collect();
        let block = text[split + 4..].to_vec();
        assert!(block.ends_with(b"\r\n\r\n"), "a record ends with two CRLFs");
        let block = block[..block.len() - 4].to_vec();
        let r = Rec { fields, block };
        assert_eq!(r.get("Content-Length"), r.block.len().to_string());
        assert_eq!(r.get("WARC-Block-Digest"), digest_of(&[&r.block]));
        out.push((at as u64, len as u64, r));
        at += len;
    }
    out
}

#[test]
fn a_redirected_page_has_a_request_and_a_response_per_hop_linked_and_indexed() {
    let a = archive();
    let hop = response("http://a.test/old", 301, "", &[("location", "/new")]);
    let last = response(
        "http://a.test/new",
        200,
        "<p>hello</p>",
        &[("content-type", "text/html; charset=utf-8"), ("transfer-encoding", "chunked")],
    );
    let page = a.page(&fetched(vec![hop], Some(last))).expect("records");
    let records = members(&page.bytes);
    let kinds: Vec<&str> = records.iter().map(|(_, _, r)| r.get("WARC-Type")).collect();
    assert_eq!(kinds, ["request", "response", "request", "response"]);
    for pair in records.chunks(2) {
        let (req, resp) = (&pair[0].2, &pair[1].2);
        assert_eq!(req.get("WARC-Concurrent-To"), resp.get("WARC-Record-ID"));
        assert_eq!(resp.get("WARC-Concurrent-To"), req.get("WARC-Record-ID"));
        assert_eq!(req.get("WARC-Target-URI"), resp.get("WARC-Target-URI"));
        assert_eq!(req.get("Content-Type"), "application/http;msgtype=request");
        assert_eq!(resp.get("Content-Type"), "application/http;msgtype=response");
        assert_eq!(resp.get("WARC-IP-Address"), "127.0.0.1");
        assert_eq!(resp.get("WARC-Date"), "2015-10-21T07:28:00.000000Z");
        assert_eq!(resp.get("WARC-Warcinfo-ID"), a.warcinfo_id);
    }
    assert_eq!(records[0].2.get("WARC-Target-URI"), "http://a.test/old");
    assert_eq!(records[2].2.get("WARC-Target-URI"), "http://a.test/new");
    let final_resp = &records[3].2;
    let text = String::from_utf8(final_resp.block.clone()).expect("utf8");
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    assert!(text.ends_with("\r\ncontent-length: 12\r\n\r\n<p>hello</p>"), "rewritten for the body kept: {text}");
    assert!(!text.contains("transfer-encoding"), "{text}");
    assert_eq!(final_resp.get("WARC-Payload-Digest"), digest_of(&[b"<p>hello</p>"]));
    // One index line per response, each at its member's place.
    assert_eq!(page.index.len(), 2);
    for (e, (offset, len, r)) in page.index.iter().zip([&records[1], &records[3]]) {
        assert_eq!((e.start, e.length), (*offset, *len));
        assert_eq!(e.url, r.get("WARC-Target-URI"));
        assert_eq!(e.digest, r.get("WARC-Payload-Digest"));
    }
    assert_eq!(page.index[0].status, 301);
    assert_eq!(page.index[1].mime.as_deref(), Some("text/html"));
    assert_eq!(page.index[1].key, "test,a)/new 20151021072800");
    // Ids are fixed by run, layer, partition, URL, hop and type.
    let again = a.page(&fetched(
        vec![response("http://a.test/old", 301, "", &[])],
        Some(response("http://a.test/new", 200, "other", &[])),
    ));
    let again = members(&again.expect("records").bytes);
    let ids =
        |rs: &[(u64, u64, Rec)]| rs.iter().map(|(_, _, r)| r.get("WARC-Record-ID").to_string()).collect::<Vec<_>>();
    assert_eq!(ids(&again), ids(&records));
    let all = ids(&records);
    assert_eq!(all.iter().collect::<std::collections::BTreeSet<_>>().len(), 4, "distinct: {all:?}");
}

#[test]
fn a_replayed_304_is_a_revisit_and_a_cut_body_says_why() {
    let a = archive();
    let mut r = response("http://a.test/old", 304, "", &[("etag", "\"v1\"")]);
    // The 304 replay put last night's page in place (map::replay).
    r.status = 200;
    r.body = Bytes::from_static(b"last night");
    let page = a.page(&fetched(Vec::new(), Some(r))).expect("records");
    let records = members(&page.bytes);
    let revisit = &records[1].2;
    assert_eq!(revisit.get("WARC-Type"), "revisit");
    assert_eq!(revisit.get("WARC-Profile"), "http://netpreserve.org/warc/1.1/revisit/server-not-modified");
    assert_eq!(revisit.get("WARC-Payload-Digest"), digest_of(&[b"last night"]));
    let text = String::from_utf8(revisit.block.clone()).expect("utf8");
    assert_eq!(text, "HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\n\r\n");
    assert_eq!(page.index[0].mime.as_deref(), Some("warc/revisit"));
    assert_eq!(page.index[0].status, 304);

    let mut cut = response("http://a.test/old", 200, "half a pa", &[]);
    cut.truncated = true;
    cut.body_error = Some((ErrorKind::Reset, "reset".into()));
    let records = members(&a.page(&fetched(Vec::new(), Some(cut))).expect("records").bytes);
    assert_eq!(records[1].2.get("WARC-Truncated"), "disconnect");
    let mut long = response("http://a.test/old", 200, "first bytes", &[]);
    long.truncated = true;
    let records = members(&a.page(&fetched(Vec::new(), Some(long))).expect("records").bytes);
    assert_eq!(records[1].2.get("WARC-Truncated"), "length");
}

#[test]
fn a_rendered_page_keeps_what_the_server_sent_and_adds_its_dom() {
    let a = archive();
    let mut r = response("http://a.test/old", 200, "<div id=app></div>", &[("content-type", "text/html")]);
    let served = std::mem::replace(&mut r.body, Bytes::from_static(b"<div id=app>drawn</div>"));
    r.capture.as_mut().expect("capture").served_body = Some(served);
    r.rendered = true;
    r.content_type = Some("text/html; charset=utf-8".into());
    let records = members(&a.page(&fetched(Vec::new(), Some(r))).expect("records").bytes);
    let kinds: Vec<&str> = records.iter().map(|(_, _, r)| r.get("WARC-Type")).collect();
    assert_eq!(kinds, ["request", "response", "conversion"]);
    assert!(records[1].2.block.ends_with(b"\r\n\r\n<div id=app></div>"));
    assert_eq!(records[2].2.block, b"<div id=app>drawn</div>");
    assert_eq!(records[2].2.get("WARC-Refers-To"), records[1].2.get("WARC-Record-ID"));
}

#[test]
fn nothing_exchanged_is_no_record() {
    let a = archive();
    assert!(a.page(&fetched(Vec::new(), None)).is_none());
    let mut plain = response("http://a.test/old", 200, "x", &[]);
    plain.capture = None;
    assert!(a.page(&fetched(Vec::new(), Some(plain))).is_none(), "a fetch without captures");
    let info = members(&a.warcinfo());
    assert_eq!(info[0].2.get("WARC-Type"), "warcinfo");
    assert_eq!(info[0].2.get("WARC-Filename"), "part-00003.warc.gz");
    assert!(String::from_utf8_lossy(&info[0].2.block).contains("isPartOf: layercrawl-run-r1\r\n"));
}

/// Two pages' records in a task's file, through `store`, then the file and
/// its index read back from where the attempt wrote them.
async fn write_two_pages(store: &Store) -> (Vec<u8>, String) {
    let a = std::sync::Arc::new(archive());
    let attempt = store.staged_in("state/attempts/layer=1/map-00003/a1");
    let mut file = WarcFile::new(&attempt, std::sync::Arc::clone(&a));
    for path in ["/z", "/b"] {
        let r = response(&format!("http://a.test{path}"), 200, "<p>page</p>", &[("content-type", "text/html")]);
        file.add(a.page(&fetched(Vec::new(), Some(r))).expect("records")).await.expect("append");
    }
    file.finish().await.expect("finish");
    let at = |p: String| format!("state/attempts/layer=1/map-00003/a1/{p}");
    let warc = store.get(&at(layout::warc(1, 3))).await.expect("read").expect("the archive");
    let cdxj = store.get(&at(layout::warc_index(1, 3))).await.expect("read").expect("the index");
    (warc.to_vec(), String::from_utf8(cdxj.to_vec()).expect("utf8"))
}

fn assert_written(warc: &[u8], cdxj: &str) {
    let records = members(warc);
    let kinds: Vec<&str> = records.iter().map(|(_, _, r)| r.get("WARC-Type")).collect();
    assert_eq!(kinds, ["warcinfo", "request", "response", "request", "response"]);
    let lines: Vec<&str> = cdxj.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("test,a)/b ") && lines[1].starts_with("test,a)/z "), "sorted: {cdxj}");
    for line in lines {
        let json: serde_json::Value = serde_json::from_str(line.splitn(3, ' ').nth(2).expect("json")).expect("json");
        let offset: u64 = json["offset"].as_str().and_then(|s| s.parse().ok()).expect("offset");
        let (_, len, r) = records.iter().find(|(at, _, _)| *at == offset).expect("a record starts at the offset");
        assert_eq!(json["length"].as_str(), Some(len.to_string().as_str()));
        assert_eq!(json["url"].as_str(), Some(r.get("WARC-Target-URI")));
        assert_eq!(json["filename"], "warc/layer=1/part-00003.warc.gz");
    }
}

#[tokio::test]
async fn on_object_storage_the_archive_is_uploaded_whole_with_its_index() {
    let store = Store::open("memory://").expect("memory store");
    let (warc, cdxj) = write_two_pages(&store).await;
    assert_written(&warc, &cdxj);
}

#[tokio::test]
async fn in_a_folder_the_archive_appears_whole_and_a_given_up_one_leaves_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().to_str().expect("utf8")).expect("folder store");
    let (warc, cdxj) = write_two_pages(&store).await;
    assert_written(&warc, &cdxj);
    let folder = dir.path().join("state/attempts/layer=1/map-00003/a1/warc/layer=1");
    let names = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .expect("folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(names(&folder), ["part-00003.cdxj", "part-00003.warc.gz"], "no staging file left");

    // A file dropped before it is finished (an error, a cancelled task).
    let a = std::sync::Arc::new(TaskArchive { part: 4, filename: layout::warc(1, 4), ..archive() });
    let attempt = store.staged_in("state/attempts/layer=1/map-00004/a1");
    let mut file = WarcFile::new(&attempt, std::sync::Arc::clone(&a));
    let r = response("http://a.test/x", 200, "x", &[]);
    file.add(a.page(&fetched(Vec::new(), Some(r))).expect("records")).await.expect("append");
    let folder = dir.path().join("state/attempts/layer=1/map-00004/a1/warc/layer=1");
    assert_eq!(names(&folder), [".part-00004.warc.gz.staged"], "written to a hidden staging file");
    drop(file);
    assert!(names(&folder).is_empty(), "the staging file goes with the writer");
}
