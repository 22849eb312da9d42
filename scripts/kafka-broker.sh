#!/usr/bin/env bash
# Installs the Kafka-compatible broker that the Kafka sink's tests and its
# bench publish to on loopback (docs/src/kafka.md, "Building and testing"):
# noida-db, from PyPI, whose wheel carries one prebuilt binary that speaks
# Kafka's protocol (with Postgres's, Redis's and others' we leave off:
# `--only kafka`), with transactions, producer fencing and
# `read_committed` reads, and keeps its topics in a folder that outlives
# the process. Into a Python virtualenv under target/tools (kept with
# target, as mdBook is), unless the pinned version is already there.
# Idempotent; prints the broker's path on stdout, everything else goes to
# stderr. Start it bound to loopback only:
#   noida-db start --data-dir DIR --host 127.0.0.1 --only kafka --kafka-port PORT
set -euo pipefail
version="0.2.3"
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/target/tools/kafka-broker"
mkdir -p "$root/target/tools"
# Tests that start at once wait for the one that installs.
exec 9>"$venv.lock"
flock 9
where() { "$venv/bin/python" -c 'import os, noida_db; print(os.path.join(os.path.dirname(noida_db.__file__), "noida-db"))' 2>/dev/null; }
bin="$(where || true)"
# (Its version, read whole: `| grep -q` under pipefail fails when grep
# stops reading first.)
said="$({ [ -n "$bin" ] && "$bin" version 2>/dev/null; } || true)"
if [ "$said" != "noida-db $version" ]; then
  echo "kafka-broker: installing noida-db $version from PyPI into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "noida-db==$version" >&2
  bin="$(where)"
fi
# The wheel's binary may come without its execute bit (its own launcher sets it).
[ -x "$bin" ] || chmod +x "$bin"
[ -x "$bin" ] || { echo "kafka-broker: no noida-db binary at $bin" >&2; exit 1; }
echo "$bin"
