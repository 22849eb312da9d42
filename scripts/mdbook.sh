#!/usr/bin/env bash
# Installs mdBook, which builds the book under docs/, from crates.io into
# target/tools (only the search feature: no local server, no file watcher),
# unless an mdbook of the pinned version is already there or on the PATH.
# Idempotent; prints the binary's path.
set -euo pipefail
version="0.4.52"
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/target/tools"
for bin in "$tools/bin/mdbook" "$(command -v mdbook || true)"; do
  if [ -n "$bin" ] && [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "v$version\$"; then
    echo "$bin"
    exit 0
  fi
done
cargo install mdbook --locked --version "$version" --no-default-features --features search --root "$tools" >&2
echo "$tools/bin/mdbook"
