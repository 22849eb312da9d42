#!/usr/bin/env bash
# Installs the real-site corpus: nginx and the documentation packages listed
# in scripts/realsites.tsv, from Debian's archive. Idempotent.
#   scripts/realsites.sh        every site (the benchmark's corpus)
#   scripts/realsites.sh --ci   only the sites marked for CI (one small site)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
only_ci=no
[ "${1:-}" = "--ci" ] && only_ci=yes
packages=(nginx-light)
while IFS=$'\t' read -r name package root start generator ci; do
  case "$name" in ''|'#'*) continue ;; esac
  [ "$only_ci" = yes ] && [ "$ci" != yes ] && continue
  [ -d "$root" ] || packages+=("$package")
done < "$here/realsites.tsv"
command -v nginx >/dev/null 2>&1 && [ "${packages[*]}" = nginx-light ] && { echo "real-site corpus: installed" >&2; exit 0; }
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${packages[@]}" >&2; then
  # A fresh machine has no package lists yet.
  "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
  "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${packages[@]}" >&2
fi
# The package starts a system nginx on port 80 where it can; the corpus runs
# its own instances, so stop that one if it is there.
if command -v systemctl >/dev/null 2>&1; then "${as_root[@]}" systemctl stop nginx >/dev/null 2>&1 || true; fi
echo "real-site corpus: installed ${packages[*]}" >&2
