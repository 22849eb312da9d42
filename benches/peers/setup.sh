#!/usr/bin/env bash
# Creates target/peers-venv, a Python virtualenv from PyPI for the peers the
# benchmarks compare layercrawl with:
#   - Scrapy, for the side-by-side crawl in the benchmark suite;
#   - trafilatura 2.3.1, the reference main-text extractor, for the extraction
#     evaluation (benches/peers/extract_eval.py);
#   - lxml_html_clean, which trafilatura needs through jusText (lxml from 5.2
#     on no longer ships lxml.html.clean, and newer lxml releases drop the
#     'html_clean' extra that would pull it in);
#   - zstandard, so that extract_eval.py can unpack the evaluation set
#     (a .tar.zst) with Python alone, without a zstd binary.
# Idempotent: installs only when one of the imports fails or trafilatura is
# not at the pinned version. Prints the interpreter's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${LAYERCRAWL_PEERS_VENV:-$root/target/peers-venv}"
trafilatura_version="2.3.1"
check="import scrapy, zstandard, trafilatura, sys; sys.exit(trafilatura.__version__ != '$trafilatura_version')"
if ! "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'scrapy>=2.11,<3' \
    "trafilatura==$trafilatura_version" 'lxml_html_clean' 'zstandard>=0.22' >&2
fi
echo "$venv/bin/python"
