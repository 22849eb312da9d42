#!/usr/bin/env bash
# Installs PostgreSQL from Debian's archive (the `postgresql` package), the
# real server the SQL export's tests and bench load into (each starts its
# own cluster in a temporary folder on a loopback port, never the system
# service). Idempotent; prints the folder of the server's programs
# (initdb, postgres) on stdout.
set -euo pipefail
find_it() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true; }
found="$(find_it)"
if [ -z "$found" ] || [ ! -x "$found/postgres" ] || [ ! -x "$found/initdb" ]; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 postgresql >&2; then
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 postgresql >&2
  fi
  found="$(find_it)"
fi
[ -n "$found" ] && [ -x "$found/postgres" ] || { echo "postgres: not found after installing Debian's postgresql package" >&2; exit 1; }
echo "$found"
