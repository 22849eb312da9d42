#!/usr/bin/env python3
"""Import circles among the crate's files, from the paths they name.

Each file under src/ is a module (src/a/b.rs and src/a/b/mod.rs are
`crate::a::b`). A file depends on another when it names a path into it:
`use crate::a::b::X`, `crate::a::b::f()`, `super::x`, `self::x`. The
strongly connected components of that graph are the import circles.

    scripts/import_cycles.py            # lists every circle
    scripts/import_cycles.py --max 2    # exit 1 if one spans more than 2 files

Comments, strings and `#[cfg(test)]` test modules (files named tests.rs
or under a tests/ folder) are left out: tests may reach anywhere.
"""

import argparse
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def module_of(path: Path) -> tuple:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def strip(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    # Test modules inside a file: `#[cfg(test)] mod tests { ... }` to the end.
    cut = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if cut:
        text = text[: cut.start()]
    return text


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=None, help="largest circle allowed (files)")
    ap.add_argument("--edges", action="store_true", help="list the imports inside each circle")
    args = ap.parse_args()
    files = {}
    for p in sorted(SRC.rglob("*.rs")):
        if p.name == "tests.rs" or "tests" in p.relative_to(SRC).parts[:-1]:
            continue
        files[module_of(p)] = p
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
    circles = sorted((c for c in comps if len(c) > 1), key=len, reverse=True)
    name = lambda m: "::".join(m) or "crate"
    for c in circles:
        print(f"{len(c)} files: " + ", ".join(sorted(name(m) for m in c)))
        if args.edges:
            inside = set(c)
            for m in sorted(c):
                print(f"    {name(m)} -> " + ", ".join(sorted(name(d) for d in edges[m] & inside)))
    largest = max((len(c) for c in circles), default=0)
    print(f"{len(circles)} import circles; the largest spans {largest} files")
    if args.max is not None and largest > args.max:
        print(f"an import circle spans more than {args.max} files", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
