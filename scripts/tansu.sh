#!/usr/bin/env bash
# Installs Tansu, the Kafka-compatible broker the Kafka sink's tests run
# against on loopback (docs/src/kafka.md, "Building and testing"), from
# crates.io into target/tools, unless a tansu of the pinned version is
# already there. Only its SQLite storage (the `libsql` feature): the broker
# keeps its topics in one file, so a broker killed and started again has
# them all. Idempotent; prints the binary's path.
set -euo pipefail
version="0.6.0"
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/target/tools"
bin="$tools/bin/tansu"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q " $version\$"; then
  echo "$bin"
  exit 0
fi
# Its own target folder, so that its build neither waits for nor
# invalidates the project's; it is not needed after the install.
CARGO_TARGET_DIR="$tools/build" cargo install tansu --locked --version "$version" \
  --no-default-features --features libsql --root "$tools" >&2
echo "$bin"
