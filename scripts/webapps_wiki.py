#!/usr/bin/env python3
"""Makes a DokuWiki data folder from the book's history (docs/src/*.md):
each commit up to --pin that changed a page becomes one revision of that
wiki page, as DokuWiki itself stores one: data/pages/ID.txt (the current
text, its mtime the last revision's time), data/attic/ID.TIME.txt.gz (every
revision), data/meta/ID.changes and data/meta/_dokuwiki.changes (the
changelog lines). Markdown is lightly converted (headings, links between
pages, code blocks, lists, tables); the text is what matters.

    webapps_wiki.py --repo . --pin c0e8007 --data target/webapps/dokuwiki/data
"""

import argparse
import gzip
import os
import re
import subprocess

DIRS = ["pages", "attic", "meta", "media", "media_attic", "media_meta", "cache", "index", "locks", "tmp", "log"]
CODE_LANGS = {"sh": "bash", "bash": "bash", "rust": "rust", "sql": "sql", "python": "python", "json": "javascript",
              "toml": "ini", "yaml": "yaml", "html": "html5", "text": None, "console": "bash"}


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def page_id(path):
    """docs/src/Getting-Started.md -> getting-started (DokuWiki's cleanID keeps a-z0-9_.-)."""
    stem = os.path.basename(path)[: -len(".md")].lower()
    return re.sub(r"[^a-z0-9_.-]+", "_", stem).strip("_")


def convert_inline(line):
    def link(m):
        text, target = m.group(1), m.group(2).strip()
        if re.match(r"https?://", target):
            return f"[[{target}|{text}]]"
        m2 = re.match(r"^(?:\./)?([A-Za-z0-9_.-]+)\.md(#[A-Za-z0-9_-]*)?$", target)
        if m2:
            return f"[[{page_id(m2.group(1) + '.md')}{m2.group(2) or ''}|{text}]]"
        return text

    # Inline code first, so that its text is not read as a link.
    parts = re.split(r"(`[^`]+`)", line)
    out = []
    for p in parts:
        if len(p) > 1 and p.startswith("`") and p.endswith("`"):
            out.append("''%%" + p[1:-1] + "%%''")
        else:
            p = re.sub(r"!\[([^\]]*)\]\(([^)]*)\)", r"\1", p)
            out.append(re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", link, p))
    return "".join(out)


def convert(md):
    """Markdown (mdBook's) to DokuWiki syntax, lightly."""
    out = []
    in_code = False
    header_next = False
    for line in md.splitlines():
        fence = re.match(r"^\s*```\s*([A-Za-z0-9_+-]*)", line)
        if fence:
            if in_code:
                out.append("</code>")
                in_code = False
            else:
                lang = CODE_LANGS.get(fence.group(1).lower())
                out.append(f"<code {lang}>" if lang else "<code>")
                in_code = True
            continue
        if in_code:
            out.append(line)
            continue
        h = re.match(r"^(#{1,5})\s+(.*?)\s*#*\s*$", line)
        if h:
            eq = "=" * (7 - len(h.group(1)))
            out.append(f"{eq} {h.group(2)} {eq}")
            continue
        if re.match(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$", line):
            # The header separator: the row before it becomes a header row.
            if out and out[-1].startswith("|"):
                out[-1] = "^" + out[-1][1:].replace("|", "^")
            continue
        if line.lstrip().startswith("|"):
            row = convert_inline(line.strip())
            out.append(row if row.endswith("|") else row + " |")
            continue
        li = re.match(r"^(\s*)([-*+]|\d+\.)\s+(.*)$", line)
        if li:
            depth = len(li.group(1).expandtabs(4)) // 2 + 1
            mark = "-" if li.group(2)[0].isdigit() else "*"
            out.append("  " * depth + f"{mark} {convert_inline(li.group(3))}")
            continue
        out.append(convert_inline(line))
    if in_code:
        out.append("</code>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--pin", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    for d in DIRS:
        os.makedirs(os.path.join(a.data, d), exist_ok=True)
    # Every commit up to the pin that touched a page of the book, oldest first,
    # with the pages it added, changed or deleted.
    log = git(a.repo, "log", "--reverse", "--no-renames", "--format=%x00%H%x09%at%x09%an%x09%s",
              "--name-status", a.pin, "--", "docs/src/*.md").decode()
    changes = {}  # page id -> [(time, type, user, summary, text or None)]
    last_time = {}
    for entry in log.split("\x00")[1:]:
        head, _, names = entry.partition("\n")
        sha, at, author, subject = head.split("\t", 3)
        user = re.sub(r"[^a-z0-9._-]+", "", author.lower().replace(" ", ".")) or "git"
        summary = subject.replace("\t", " ")[:250]
        for row in names.strip().splitlines():
            status, path = row.split("\t", 1)
            if "/" in path[len("docs/src/"):] or not path.endswith(".md"):
                continue
            pid = page_id(path)
            # A page's revisions are told apart by their second: two commits in
            # one second become two revisions one second apart.
            t = max(int(at), last_time.get(pid, 0) + 1)
            last_time[pid] = t
            if status.startswith("D"):
                changes.setdefault(pid, []).append((t, "D", user, summary, None))
            else:
                text = convert(git(a.repo, "show", f"{sha}:{path}").decode("utf-8", "replace"))
                kind = "C" if not changes.get(pid) or changes[pid][-1][4] is None else "E"
                changes.setdefault(pid, []).append((t, kind, user, summary, text))
    every = []
    for pid, revs in sorted(changes.items()):
        lines = []
        size = 0
        for t, kind, user, summary, text in revs:
            new = len(text.encode()) if text is not None else 0
            line = f"{t}\t127.0.0.1\t{kind}\t{pid}\t{user}\t{summary}\t\t{new - size}\n"
            size = new
            lines.append(line)
            every.append((t, pid, line))
            if text is not None:
                # The revision's time in the gzip header, no file name: the same
                # bytes on every machine.
                with open(os.path.join(a.data, "attic", f"{pid}.{t}.txt.gz"), "wb") as raw:
                    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=t) as f:
                        f.write(text.encode("utf-8"))
        with open(os.path.join(a.data, "meta", f"{pid}.changes"), "w", encoding="utf-8") as f:
            f.writelines(lines)
        t, _, _, _, text = revs[-1]
        if text is not None:
            page = os.path.join(a.data, "pages", f"{pid}.txt")
            with open(page, "w", encoding="utf-8") as f:
                f.write(text)
            os.utime(page, (t, t))
    with open(os.path.join(a.data, "meta", "_dokuwiki.changes"), "w", encoding="utf-8") as f:
        f.writelines(line for _, _, line in sorted(every))
    print(f"{len(changes)} pages, {len(every)} revisions", file=__import__("sys").stderr)


if __name__ == "__main__":
    main()
