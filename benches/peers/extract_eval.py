"""Main-text extraction evaluation: layercrawl's extractor side by side with
trafilatura, the reference extractor, on 990 annotated real pages.

The evaluation set is a .tar.zst that unpacks to `teval/`:

- `teval/pages/*.html`: the pages' raw bytes as served (many encodings);
- `teval/evaldata.json`: {url: {"file": name in pages/, "with": [snippets],
  "without": [snippets], ...}}. `with` snippets belong to the main text,
  `without` snippets sit on the page but are boilerplate (navigation, dates,
  footers, teasers, comments). Other keys (title, author, comments, ...) are
  not used here.

Where the set is: the environment variable LAYERCRAWL_EXTRACT_EVAL names the
tarball; a relative path is taken from the repository root. Default:
`../shared/extract-eval/pages.tar.zst` from the repository root. It is
unpacked once into `target/extract-eval/` (again only if the tarball changes).

Run with the peers virtualenv (`benches/peers/setup.sh` makes it and prints
its interpreter):

    PY=$(bash benches/peers/setup.sh)
    $PY benches/peers/extract_eval.py unpack
    $PY benches/peers/extract_eval.py trafilatura --out target/extract-eval/trafilatura.json
    $PY benches/peers/extract_eval.py alltext --out target/extract-eval/alltext.json
    $PY benches/peers/extract_eval.py score target/extract-eval/trafilatura.json \
        target/extract-eval/alltext.json [--per-page target/extract-eval/per-page.csv]

Extractor outputs (trafilatura's, the all-text baseline's, and the one the Rust
side writes) share one shape:

    {"extractor": "name version", "cpu_seconds": float, "bytes": int,
     "texts": {"<file name in pages/>": "extracted text", ...}}

where cpu_seconds is the CPU time of the extraction calls alone (file reading
excluded) and bytes the total size of the HTML they were given.

Scoring (`score`), the method of trafilatura's own comparison: over all pages
of evaldata.json, each `with` snippet found in the page's extracted text is a
true positive (TP), each one missing a false negative (FN); each `without`
snippet found is a false positive (FP), each one absent a true negative (TN).
precision = TP/(TP+FP), recall = TP/(TP+FN), F1 = 2PR/(P+R),
accuracy = (TP+TN)/(TP+FP+TN+FN). Before matching, snippets and texts are both
put in Unicode NFC and their whitespace collapsed: every run of whitespace
(Python's str.isspace, which includes the no-break space) becomes one space,
and leading/trailing whitespace goes. A page missing from an output counts as
an empty text. mb_per_cpu_second = bytes / 10^6 / cpu_seconds.

`score --skip-empty` scores the way trafilatura's comparison script tallies
instead: a page whose text is empty is left out of the counts altogether
(that script counts it as a "skipped instance"). It is for comparing with
figures published from that script, not for ranking extractors.

`trafilatura` settings. By default each page is given to
`trafilatura.extract` as bytes (trafilatura detects the encoding itself) with
url=<the page's URL>, output_format="txt", include_comments=False,
include_tables=True, include_formatting=False, and fast=False (trafilatura's
default: its own extraction, then a comparison with its fallback
extractors). This is the "trafilatura + X" row of trafilatura's comparison
script; its "trafilatura" row is the same with the fallbacks off
(`--fast`, formerly no_fallback=True). The flags below change one setting
each; the extractor name then lists them, e.g. "trafilatura 2.3.1 (fast)".
"""

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TARBALL = "../shared/extract-eval/pages.tar.zst"
UNPACK_DIR = ROOT / "target" / "extract-eval"
TEVAL = UNPACK_DIR / "teval"
STAMP = UNPACK_DIR / "unpacked-from.json"


# ---------------------------------------------------------------- unpacking


def tarball_path():
    p = Path(os.environ.get("LAYERCRAWL_EXTRACT_EVAL") or DEFAULT_TARBALL)
    if not p.is_absolute():
        p = ROOT / p
    return p.resolve()


def tarball_identity(p):
    st = p.stat()
    return {"tarball": str(p), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _extract_stream(fileobj, dest):
    # Streamed ("r|") since a zstd stream cannot seek; the "data" filter
    # (Python >= 3.11.4) refuses absolute paths, links out of dest and the like.
    with tarfile.open(fileobj=fileobj, mode="r|") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)


def unpack():
    """Makes sure target/extract-eval/teval is the tarball's content; returns it."""
    src = tarball_path()
    if not src.is_file():
        sys.exit(f"extract-eval: no evaluation set at {src} "
                 "(set LAYERCRAWL_EXTRACT_EVAL to the pages.tar.zst file)")
    ident = tarball_identity(src)
    if (TEVAL / "evaldata.json").is_file() and STAMP.is_file():
        try:
            if json.loads(STAMP.read_text()) == ident:
                return TEVAL
        except ValueError:
            pass
    UNPACK_DIR.mkdir(parents=True, exist_ok=True)
    tmp = UNPACK_DIR / "unpacking.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        import zstandard  # pure-PyPI route: no zstd binary needed
    except ImportError:
        zstandard = None
    if zstandard is not None:
        with open(src, "rb") as f:
            with zstandard.ZstdDecompressor().stream_reader(f) as reader:
                _extract_stream(reader, tmp)
    elif shutil.which("zstd"):
        proc = subprocess.Popen(["zstd", "-dc", str(src)], stdout=subprocess.PIPE)
        _extract_stream(proc.stdout, tmp)
        if proc.wait() != 0:
            sys.exit("extract-eval: zstd failed to decompress " + str(src))
    else:
        sys.exit("extract-eval: need the Python module zstandard "
                 "(benches/peers/setup.sh installs it) or a zstd command")
    if not (tmp / "teval" / "evaldata.json").is_file():
        sys.exit(f"extract-eval: {src} holds no teval/evaldata.json")
    shutil.rmtree(TEVAL, ignore_errors=True)
    (tmp / "teval").rename(TEVAL)
    shutil.rmtree(tmp, ignore_errors=True)
    STAMP.write_text(json.dumps(ident))
    return TEVAL


def load_evaldata(teval):
    with open(teval / "evaldata.json", encoding="utf-8") as f:
        return json.load(f)


def pages(teval):
    """(url, file name, raw bytes) for every page of evaldata.json, in its order."""
    for url, item in load_evaldata(teval).items():
        with open(teval / "pages" / item["file"], "rb") as f:
            yield url, item["file"], f.read()


def write_output(path, extractor, cpu, nbytes, texts, errors):
    out = {"extractor": extractor, "cpu_seconds": round(cpu, 6), "bytes": nbytes,
           "texts": texts}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)
    print(json.dumps({"extractor": extractor, "pages": len(texts), "errors": errors,
                      "cpu_seconds": round(cpu, 3), "bytes": nbytes,
                      "mb_per_cpu_second": round(nbytes / 1e6 / cpu, 3) if cpu else None,
                      "out": str(path)}))


# ---------------------------------------------------------------- trafilatura


def run_trafilatura(args):
    import trafilatura

    teval = unpack()
    settings = dict(output_format="txt", include_comments=args.include_comments,
                    include_tables=not args.no_tables, include_formatting=False,
                    fast=args.fast, favor_precision=args.favor_precision,
                    favor_recall=args.favor_recall)
    changed = [name for name, on in (("fast", args.fast),
                                     ("favor_precision", args.favor_precision),
                                     ("favor_recall", args.favor_recall),
                                     ("include_comments", args.include_comments),
                                     ("no tables", args.no_tables),
                                     ("decoded", args.decoded)) if on]
    name = f"trafilatura {trafilatura.__version__}"
    if changed:
        name += " (" + ", ".join(changed) + ")"
    if args.decoded:
        from charset_normalizer import from_bytes
    cpu = 0.0
    nbytes = 0
    texts = {}
    errors = 0
    for url, fname, raw in pages(teval):
        doc = raw
        if args.decoded:
            # As trafilatura's comparison script loads pages: UTF-8 if that
            # decodes, else the detected encoding (decoding is not timed).
            try:
                doc = raw.decode("utf-8")
            except UnicodeDecodeError:
                best = from_bytes(raw).best()
                doc = str(best) if best is not None else raw
        nbytes += len(raw)
        t0 = time.process_time()
        try:
            text = trafilatura.extract(doc, url=url, **settings)
        except Exception as err:  # one bad page must not stop the run
            print(f"trafilatura failed on {fname}: {err!r}", file=sys.stderr)
            text, errors = None, errors + 1
        cpu += time.process_time() - t0
        texts[fname] = text or ""
    write_output(args.out, name, cpu, nbytes, texts, errors)


# ---------------------------------------------------------------- all-text baseline

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
# C0 control characters other than tab, line feed and carriage return: lxml
# refuses them in element text, and a browser shows none of them.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
# Elements whose text a browser lays out on a line of its own.
_BLOCKS = frozenset("""address article aside blockquote br dd details dialog div dl dt
fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main nav ol p
pre section summary table tbody td tfoot th thead tr ul option title""".split())
# Never shown. <noscript> is kept: some pages wrap their whole body in it, and
# a crawler's view of a page is the one without scripts.
_INVISIBLE = ("script", "style", "template")


def decode_html(raw):
    """Decodes a page's bytes: BOM, else <meta charset>, else UTF-8 if valid,
    else the best guess of charset_normalizer, else Windows-1252."""
    for bom, enc in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"),
                     (b"\xfe\xff", "utf-16-be")):
        if raw.startswith(bom):
            return raw[len(bom):].decode(enc, "replace")
    m = _META_CHARSET.search(raw[:8192])
    if m:
        try:
            return raw.decode(m.group(1).decode("ascii"), "replace")
        except LookupError:
            pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        from charset_normalizer import from_bytes
        best = from_bytes(raw).best()
        if best is not None:
            return str(best)
    except ImportError:
        pass
    return raw.decode("cp1252", "replace")


def all_text(raw):
    """Every text node of <body> (the whole document if it has none) except
    those in script, style and template, with line breaks around
    block elements so that neighbouring blocks' words do not run together."""
    import lxml.html

    doc = _CONTROLS.sub(" ", _XML_DECL.sub("", decode_html(raw), count=1))
    if not doc.strip():
        return ""
    try:
        root = lxml.html.document_fromstring(doc)
    except Exception:  # lxml refuses some degenerate documents
        return ""
    for el in root.xpath("|".join("//" + tag for tag in _INVISIBLE)):
        el.drop_tree()
    body = root.find("body")
    if body is None:
        body = root
    for el in body.iter():
        if isinstance(el.tag, str) and el.tag.lower() in _BLOCKS:
            el.text = "\n" + (el.text or "")
            el.tail = "\n" + (el.tail or "")
    return "".join(t for t in body.itertext() if isinstance(t, str))


def run_alltext(args):
    teval = unpack()
    cpu = 0.0
    nbytes = 0
    texts = {}
    errors = 0
    for _url, fname, raw in pages(teval):
        nbytes += len(raw)
        t0 = time.process_time()
        try:
            text = all_text(raw)
        except Exception as err:
            print(f"alltext failed on {fname}: {err!r}", file=sys.stderr)
            text, errors = "", errors + 1
        cpu += time.process_time() - t0
        texts[fname] = text
    write_output(args.out, "baseline-alltext", cpu, nbytes, texts, errors)


# ---------------------------------------------------------------- scoring


def normalise(s):
    return " ".join(unicodedata.normalize("NFC", s or "").split())


def ratios(tp, fp, tn, fn):
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    total = tp + fp + tn + fn
    accuracy = (tp + tn) / total if total else 0.0
    return precision, recall, f1, accuracy


def score_output(evaldata, out, skip_empty=False):
    """Totals and per-page rows (file, tp, fp, tn, fn, empty) for one output."""
    texts = out.get("texts", {})
    rows = []
    tot = dict(tp=0, fp=0, tn=0, fn=0)
    empty = missing = 0
    for item in evaldata.values():
        fname = item["file"]
        if fname not in texts:
            missing += 1
        text = normalise(texts.get(fname))
        if not text:
            empty += 1
            if skip_empty:
                continue
        c = dict(tp=0, fp=0, tn=0, fn=0)
        for snippet in item["with"]:
            c["tp" if normalise(snippet) in text else "fn"] += 1
        for snippet in item["without"]:
            c["fp" if normalise(snippet) in text else "tn"] += 1
        for k in tot:
            tot[k] += c[k]
        rows.append(dict(file=fname, empty=int(not text), **c))
    p, r, f1, acc = ratios(tot["tp"], tot["fp"], tot["tn"], tot["fn"])
    cpu = out.get("cpu_seconds")
    nbytes = out.get("bytes")
    summary = {
        "extractor": out.get("extractor", "?"),
        "pages": len(rows),
        **tot,
        "precision": round(p, 4), "recall": round(r, 4),
        "f1": round(f1, 4), "accuracy": round(acc, 4),
        "mb_per_cpu_second": round(nbytes / 1e6 / cpu, 3) if cpu and nbytes else None,
        "empty_pages": empty, "missing_pages": missing,
    }
    if skip_empty:
        summary["skip_empty"] = True
    return summary, rows


def run_score(args):
    teval = unpack()
    evaldata = load_evaldata(teval)
    writer = None
    csvfile = None
    if args.per_page:
        Path(args.per_page).parent.mkdir(parents=True, exist_ok=True)
        csvfile = open(args.per_page, "w", newline="", encoding="utf-8")
        writer = csv.writer(csvfile)
        writer.writerow(["extractor", "file", "tp", "fp", "tn", "fn", "empty"])
    try:
        for path in args.outputs:
            with open(path, encoding="utf-8") as f:
                out = json.load(f)
            summary, rows = score_output(evaldata, out, args.skip_empty)
            print(json.dumps(summary, ensure_ascii=False))
            if writer:
                for row in rows:
                    writer.writerow([summary["extractor"], row["file"], row["tp"],
                                     row["fp"], row["tn"], row["fn"], row["empty"]])
    finally:
        if csvfile:
            csvfile.close()


# ---------------------------------------------------------------- command line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    sub.add_parser("unpack", help="unpack the evaluation set once; print teval/'s path")

    t = sub.add_parser("trafilatura", help="run trafilatura over every page")
    t.add_argument("--out", required=True, help="output JSON file")
    t.add_argument("--fast", action="store_true",
                   help="fast=True: no fallback extractors (no_fallback=True before 2.0)")
    t.add_argument("--favor-precision", action="store_true")
    t.add_argument("--favor-recall", action="store_true")
    t.add_argument("--include-comments", action="store_true")
    t.add_argument("--no-tables", action="store_true", help="include_tables=False")
    t.add_argument("--decoded", action="store_true",
                   help="pass text decoded the way trafilatura's comparison script "
                        "does (UTF-8, else detected) instead of bytes")

    a = sub.add_parser("alltext", help="the baseline: all visible text of each page")
    a.add_argument("--out", required=True, help="output JSON file")

    s = sub.add_parser("score", help="score extractor outputs against evaldata.json")
    s.add_argument("outputs", nargs="+", help="output JSON files")
    s.add_argument("--per-page", metavar="FILE.csv",
                   help="also write per-page tp/fp/tn/fn of every output")
    s.add_argument("--skip-empty", action="store_true",
                   help="leave pages with empty text out, as trafilatura's script does")

    args = ap.parse_args(argv)
    if args.cmd == "unpack":
        print(unpack())
    elif args.cmd == "trafilatura":
        run_trafilatura(args)
    elif args.cmd == "alltext":
        run_alltext(args)
    elif args.cmd == "score":
        run_score(args)


if __name__ == "__main__":
    main()
