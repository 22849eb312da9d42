#!/usr/bin/env bash
# Installs headless Chromium from Debian's archive (the `chromium` package)
# for the browser tests (the rule editor's end-to-end test). Idempotent;
# prints the browser's path on stdout.
set -euo pipefail
find_it() { command -v chromium || command -v chromium-browser || true; }
found="$(find_it)"
if [ -z "$found" ]; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 chromium fonts-dejavu-core >&2; then
    # A fresh machine has no package lists yet.
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 chromium fonts-dejavu-core >&2
  fi
  found="$(find_it)"
fi
[ -n "$found" ] || { echo "chromium: not found after installing Debian's chromium package" >&2; exit 1; }
echo "$found"
