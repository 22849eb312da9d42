#!/usr/bin/env bash
# Creates target/pyenv, a Python virtualenv from PyPI with DuckDB, pyarrow and
# pandas (the interop test reads layercrawl's Parquet with them), and warcio
# and cdxj-indexer (the WARC test checks the `--warc` files and their CDXJ
# index with the web archiving community's own tools). Idempotent; prints the
# interpreter's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LAYERCRAWL_PYENV:-$root/target/pyenv}"
if ! "$venv/bin/python" -c 'import duckdb, pyarrow, pandas, warcio, cdxj_indexer' >/dev/null 2>&1; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'duckdb>=1.1' 'pyarrow>=17' 'pandas>=2' \
    'warcio>=1.7' 'cdxj-indexer>=1.4' >&2
fi
echo "$venv/bin/python"
