#!/usr/bin/env bash
# Creates target/peers-venv, a Python virtualenv with Scrapy from PyPI, for
# the side-by-side crawl in the benchmark suite. Idempotent; prints the
# interpreter's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${LAYERCRAWL_PEERS_VENV:-$root/target/peers-venv}"
if ! "$venv/bin/python" -c 'import scrapy' >/dev/null 2>&1; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'scrapy>=2.11,<3' >&2
fi
echo "$venv/bin/python"
