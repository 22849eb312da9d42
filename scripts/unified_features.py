#!/usr/bin/env python3
"""Checks that the `full` build reuses the default build's dependencies.

Cargo compiles a dependency once per set of features. When the opt-in
capabilities (`--features full`) turn on a feature of a dependency that the
default build has too, that dependency and everything built on it are
compiled a second time, which CI, building both, pays for. crates/unify
turns those features on in every build; this check says which shared
dependency still differs, and what to add there.

It compares `cargo tree`'s features of every package in the two builds CI
makes (.ci/run): the default build of the whole workspace, with its tests,
and the `full` build of the crates a feature changes. Exit 1 when any
package both builds have differs in features (the workspace's own crates
whose features are the capabilities themselves excepted).

Usage: python3 scripts/unified_features.py
"""
import re
import subprocess
import sys

# The crates whose features are the opt-in capabilities: they differ by design.
OWN = {"layercrawl", "layercrawl-fetch", "layercrawl-extract", "layercrawl-sink"}
FULL = ["-p", "layercrawl", "-p", "layercrawl-fetch", "-p", "layercrawl-extract", "-p", "layercrawl-sink",
        "--features", "layercrawl/full"]
LINE = re.compile(r"(\S+) (v\S+)(?: \(.*?\))? \[(.*?)\]")


def features(args):
    out = subprocess.run(
        ["cargo", "tree", *args, "-e", "normal,build,dev", "--prefix", "none", "-f", "{p} [{f}]"],
        check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        m = LINE.match(line.strip())
        if m:
            found.setdefault((m.group(1), m.group(2)), set()).update(f for f in m.group(3).split(",") if f)
    return found


def main():
    default, full = features(["--workspace"]), features(FULL)
    differ = []
    for key in sorted(default.keys() & full.keys()):
        if key[0] in OWN or default[key] == full[key]:
            continue
        more, fewer = sorted(full[key] - default[key]), sorted(default[key] - full[key])
        differ.append(f"  {key[0]} {key[1]}: the full build adds {more or 'nothing'}, lacks {fewer or 'nothing'}")
    shared = len(default.keys() & full.keys())
    if differ:
        print(f"{len(differ)} of the {shared} dependencies both builds have differ in features, so the full "
              "build compiles them (and all above them) again:")
        print("\n".join(differ))
        print("Turn the features the full build adds on in crates/unify/Cargo.toml.")
        return 1
    print(f"the default and full builds share all {shared} dependencies they have in common, with the same features")
    return 0


if __name__ == "__main__":
    sys.exit(main())
