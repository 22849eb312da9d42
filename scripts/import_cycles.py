#!/usr/bin/env python3
"""Import circles and upward imports among each crate's files, from the
paths they name.

Each file under src/ is a module (src/a/b.rs and src/a/b/mod.rs are
`crate::a::b`). A file depends on another when it names a path into it:
`use crate::a::b::X`, `crate::a::b::f()`, `super::x`, `self::x`. The
strongly connected components of that graph are the import circles.

    scripts/import_cycles.py            # exit 1 if a circle spans more than 2 files
    scripts/import_cycles.py --edges    # and the imports inside each circle
    scripts/import_cycles.py --src DIR  # one tree only (its test's fixtures)

By default it reads the binary's crate (src/) and every crate of the
crawler (crates/*/src/ but the test web's), each on its own: between
crates, the compiler holds the layers (a crate cannot name one it does
not depend on).

The rules (ARCHITECTURE.md, "Layers, bottom to top"): no circle inside a
crate spans more than two files (two files naming each other are one
concern split in two; three or more are layers pointing both ways); in the
binary's crate, a stage driver names neither the driver, the executors,
the commands beside the crawl nor the binary's modules (LAYERS below).

Comments, strings and `#[cfg(test)]` test modules (files named tests.rs
or under a tests/ folder) are left out: tests may reach anywhere. The
check's own test, scripts/test_import_cycles.py, runs it on a tree with a
known circle.
"""

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
# The longest circle allowed, in files.
LONGEST = 2

# The binary's crate: its stage drivers name no module of the top.
STAGES = {"map", "optimise", "merge", "shuffle"}
TOP = {"driver", "exec", "report", "export", "studio", "demo", "rules_cmd", "plan_cmd", "docs_cmd"}
LAYERS = {s: None for s in STAGES}  # anything but TOP


# The test web is no layer of the crawler: its sites name one another's
# pages by design, and the crawler's crates never use it.
NOT_LAYERED = {"testweb"}


def trees() -> list:
    """The source trees of the crawler: src/, then crates/*/src/."""
    crates = (p for p in (ROOT / "crates").glob("*/src") if p.is_dir() and p.parent.name not in NOT_LAYERED)
    return [SRC] + sorted(crates)


def module_of(src: Path, path: Path) -> tuple:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def strip(text: str) -> str:
    """The code of a Rust file without its comments and literals.

    A small lexer rather than regular expressions: a raw string starts at an
    `r` that begins a token (`r"`, `r#"`, `br"`), never at the `r"` that ends
    a word such as `folder")`; block comments nest; `'"'` is a character, not
    the start of a string; a lifetime (`'a`) is neither. Each literal becomes
    `""` and each comment a space, so the paths around them stay apart.
    """
    out = []
    i, n = 0, len(text)

    def word_char(c: str) -> bool:
        return c.isalnum() or c == "_"

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
            continue
        if text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
            continue
        starts_token = i == 0 or not word_char(text[i - 1])
        if starts_token and c in "rb":
            # r"…", r#"…"#, br"…", br#"…"#, b"…"
            j = i + 1 if c == "r" else (i + 2 if text.startswith("br", i) else i + 1)
            raw = c == "r" or text.startswith("br", i)
            if raw:
                hashes = 0
                while j < n and text[j] == "#":
                    hashes += 1
                    j += 1
                if j < n and text[j] == '"':
                    end = text.find('"' + "#" * hashes, j + 1)
                    i = n if end < 0 else end + 1 + hashes
                    out.append('""')
                    continue
            elif j < n and text[j] == '"':
                i = j  # b"…": an ordinary string from its quote
                c = '"'
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            out.append('""')
            continue
        if c == "'":
            # A character literal ('x', '\n', '\u{1F600}', '"') or a lifetime ('a).
            if i + 2 < n and text[i + 1] == "\\":
                end = text.find("'", i + 2)
                i = n if end < 0 else end + 1
                out.append("' '")
                continue
            if i + 2 < n and text[i + 2] == "'":
                i += 3
                out.append("' '")
                continue
            out.append(c)
            i += 1
            continue
        out.append(c)
        i += 1
    code = "".join(out)
    # Test modules inside a file: `#[cfg(test)] mod tests { ... }` to the end.
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", code)
    return code[: cut.start()] if cut else code


def expand_use(body: str) -> list:
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    body = re.sub(r"\s+as\s+\w+", "", body)
    body = re.sub(r"\s+", "", body)
    out = []

    def walk(prefix: str, s: str):
        depth, start, items = 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(s[start:i])
                start = i + 1
        items.append(s[start:])
        for item in filter(None, items):
            m = re.match(r"^(.*?)::\{(.*)\}$", item)
            if m:
                walk(prefix + m.group(1) + "::", m.group(2))
            else:
                out.append(prefix + item)

    walk("", body)
    return out


def circles(src: Path) -> tuple:
    """The import circles of the tree `src` (largest first) and its edges."""
    files = {}
    for p in sorted(src.rglob("*.rs")):
        if p.name == "tests.rs" or "tests" in p.relative_to(src).parts[:-1]:
            continue
        files[module_of(src, p)] = p
    modules = set(files)

    def resolve(parts: tuple):
        while parts and parts not in modules:
            parts = parts[:-1]
        return parts if parts in modules else None

    edges = {m: set() for m in modules}
    for mod, path in files.items():
        text = strip(path.read_text(encoding="utf-8"))
        paths = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            paths.extend(expand_use(m.group(1)))
        paths.extend(re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", text))
        for p in paths:
            segs = [s for s in p.split("::") if s]
            if not segs:
                continue
            if segs[0] == "crate":
                target = tuple(segs[1:])
            elif segs[0] in ("super", "self"):
                # In a mod.rs or a leaf file alike, `self` is this module
                # and `super` its parent.
                base = list(mod)
                while segs and segs[0] in ("super", "self"):
                    if segs[0] == "super":
                        base = base[:-1]
                    segs = segs[1:]
                target = tuple(base + segs)
            else:
                continue
            dst = resolve(target)
            # A module naming its own children is structure, not an import.
            if dst is not None and dst != mod and not (len(dst) > len(mod) and dst[: len(mod)] == mod and mod != ()):
                edges[mod].add(dst)

    # Tarjan's strongly connected components.
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    for v in sorted(modules):
        if v not in index:
            strong(v)
    found = sorted((sorted(c) for c in comps if len(c) > 1), key=lambda c: (-len(c), c))
    return found, edges


def name(m: tuple) -> str:
    return "::".join(m) or "crate"


def breaches(edges: dict) -> list:
    """Imports against LAYERS: (file, the module it names), sorted."""
    out = []
    for m, targets in edges.items():
        if not m or m[0] not in LAYERS:
            continue
        allowed = LAYERS[m[0]]
        for d in targets:
            top = d[0] if d else "crate"
            if (allowed is None and top in TOP) or (allowed is not None and top not in allowed):
                out.append((m, d))
    return sorted(out)


def check(src: Path, show_edges: bool) -> tuple:
    """Prints the circles and upward imports of `src`: (largest circle,
    upward imports)."""
    found, edges = circles(src)
    for c in found:
        print(f"{len(c)} files: " + ", ".join(sorted(name(m) for m in c)))
        if show_edges:
            inside = set(c)
            for m in sorted(c):
                print(f"    {name(m)} -> " + ", ".join(sorted(name(d) for d in edges[m] & inside)))
    largest = max((len(c) for c in found), default=0)
    upward = breaches(edges)
    for m, d in upward:
        print(f"upward import: {name(m)} names {name(d)}")
    where = src.relative_to(ROOT) if src.is_relative_to(ROOT) else src
    print(f"{where}: {len(found)} import circles; the largest spans {largest} files")
    return largest, len(upward)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", type=Path, help="the one tree to read (default: every crate's)")
    ap.add_argument("--edges", action="store_true", help="list the imports inside each circle")
    args = ap.parse_args()
    largest, upward = 0, 0
    for src in [args.src.resolve()] if args.src else trees():
        big, up = check(src, args.edges)
        largest, upward = max(largest, big), upward + up
    failed = False
    if largest > LONGEST:
        print(f"an import circle spans more than {LONGEST} files (ARCHITECTURE.md)", file=sys.stderr)
        failed = True
    if upward:
        print(f"{upward} imports point up the layers (ARCHITECTURE.md)", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
