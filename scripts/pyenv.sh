#!/usr/bin/env bash
# Creates target/pyenv, a Python virtualenv with DuckDB and pyarrow from PyPI,
# used by the interop test to read layercrawl's Parquet. Idempotent; prints
# the interpreter's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LAYERCRAWL_PYENV:-$root/target/pyenv}"
if ! "$venv/bin/python" -c 'import duckdb, pyarrow, pandas' >/dev/null 2>&1; then
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'duckdb>=1.1' 'pyarrow>=17' 'pandas>=2' >&2
fi
echo "$venv/bin/python"
