"""Reads a layercrawl data folder's WARC files with warcio and prints JSON.

Usage: python tests/warc.py DATA_DIR [FARM_HOST:PORT]
For every `warc/layer=L/*.warc.gz`: each record as warcio parses it (type,
ids, target, HTTP status, the payload's SHA-1 computed here and its length);
each CDXJ line looked up by seeking to its offset and reading one record
there; the CDXJ compared with what cdxj-indexer makes of the same file; and,
given the test web's address, the payload of a few pages compared with the
page fetched again straight from the test web. The Rust test `tests/e2e/warc.rs`
asserts on the result.
"""
import base64
import glob
import hashlib
import http.client
import io
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

data = sys.argv[1]
farm = sys.argv[2] if len(sys.argv) > 2 else None
bindir = os.path.dirname(sys.executable)


def sha1(b):
    return "sha1:" + base64.b32encode(hashlib.sha1(b).digest()).decode()


def record_info(r, layer, path):
    h = r.rec_headers
    info = {
        "layer": layer,
        "file": path,
        "type": r.rec_type,
        "id": h.get_header("WARC-Record-ID"),
        "target": h.get_header("WARC-Target-URI"),
        "date": h.get_header("WARC-Date"),
        "concurrent_to": h.get_header("WARC-Concurrent-To"),
        "ip": h.get_header("WARC-IP-Address"),
        "truncated": h.get_header("WARC-Truncated"),
        "payload_digest": h.get_header("WARC-Payload-Digest"),
        "content_type": h.get_header("Content-Type"),
    }
    if r.http_headers is not None and r.rec_type in ("request", "response", "revisit"):
        if r.rec_type == "request":
            info["method"] = r.http_headers.protocol
            info["user_agent"] = r.http_headers.get_header("User-Agent")
            info["conditional"] = bool(
                r.http_headers.get_header("If-None-Match") or r.http_headers.get_header("If-Modified-Since")
            )
        else:
            info["status"] = int(r.http_headers.get_statuscode())
            info["http_content_length"] = r.http_headers.get_header("Content-Length")
            info["transfer_encoding"] = r.http_headers.get_header("Transfer-Encoding")
    # The payload as stored: after the HTTP head, before any decoding.
    payload = r.raw_stream.read()
    info["payload_sha1"] = sha1(payload)
    info["payload_len"] = len(payload)
    return info, payload


records = []
payloads = {}
files = sorted(glob.glob(f"{data}/warc/layer=*/*.warc.gz"))
checks = {}
for path in files:
    rel = os.path.relpath(path, data)
    layer = int(rel.split("/")[1].split("=")[1])
    check = subprocess.run([f"{bindir}/warcio", "check", "-v", path], capture_output=True, text=True)
    checks[rel] = {"code": check.returncode, "output": check.stdout + check.stderr}
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        for r in it:
            info, payload = record_info(r, layer, rel)
            info["offset"] = it.get_record_offset()
            records.append(info)
            if info["type"] == "response":
                payloads[info["id"]] = payload

# The index: every line found again by seeking to its offset.
index = []
indexer = {}
for path in files:
    rel = os.path.relpath(path, data)
    cdxj = path[: -len(".warc.gz")] + ".cdxj"
    with open(cdxj, "r", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for line in lines:
        key, ts, js = line.split(" ", 2)
        entry = json.loads(js)
        with open(os.path.join(data, entry["filename"]), "rb") as wf:
            wf.seek(int(entry["offset"]))
            member = wf.read(int(entry["length"]))
        # Exactly one record in exactly `length` bytes at `offset`.
        found = list(ArchiveIterator(io.BytesIO(member)))
        r = found[0]
        index.append({
            "file": rel,
            "key": key,
            "ts": ts,
            "entry": entry,
            "records_in_member": len(found),
            "found_type": r.rec_type,
            "found_target": r.rec_headers.get_header("WARC-Target-URI"),
            "found_ts": iso_date_to_timestamp(r.rec_headers.get_header("WARC-Date")),
            "found_digest": r.rec_headers.get_header("WARC-Payload-Digest"),
            "found_status": r.http_headers.get_statuscode() if r.http_headers else None,
        })
    # What the web archiving community's indexer makes of the same file.
    out = subprocess.run(
        [f"{bindir}/cdxj-indexer", "--sort", "--dir-root", data, path], capture_output=True, text=True, check=True
    )
    theirs = [l for l in out.stdout.splitlines() if l and not l.startswith("!")]
    ours = lines
    indexer[rel] = {
        "sorted": ours == sorted(ours, key=lambda l: l.encode("utf-8")),
        "same_as_cdxj_indexer": [(l.split(" ", 2)[0], l.split(" ", 2)[1], json.loads(l.split(" ", 2)[2])) for l in ours]
        == [(l.split(" ", 2)[0], l.split(" ", 2)[1], json.loads(l.split(" ", 2)[2])) for l in theirs],
        "ours": len(ours),
        "theirs": len(theirs),
        "first_difference": next(
            ([a, b] for a, b in zip(ours, theirs) if a.split(" ", 2)[:2] != b.split(" ", 2)[:2]), None
        ),
    }

# A few pages fetched again from the test web itself, compared with the payload.
direct = []
if farm:
    host, port = farm.rsplit(":", 1)
    chosen = [r for r in records if r["type"] == "response" and r.get("status") == 200][:8]
    for r in chosen:
        u = urlsplit(r["target"])
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", u.path + (("?" + u.query) if u.query else ""), headers={"Host": u.netloc})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        direct.append({"target": r["target"], "same": body == payloads[r["id"]], "len": len(body)})

json.dump({"checks": checks, "records": records, "index": index, "indexer": indexer, "direct": direct}, sys.stdout)
