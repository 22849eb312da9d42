#!/usr/bin/env bash
# Installs dnsmasq from Debian's archive, the real DNS server the DNS cache's
# tests answer from (started by the test itself on a loopback port, never as
# a system service). Idempotent; prints the program's path on stdout.
set -euo pipefail
find_it() { command -v dnsmasq || { [ -x /usr/sbin/dnsmasq ] && echo /usr/sbin/dnsmasq; } || true; }
found="$(find_it)"
if [ -z "$found" ]; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # dnsmasq-base: the program without the service that would start at install.
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 dnsmasq-base >&2; then
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 dnsmasq-base >&2
  fi
  found="$(find_it)"
fi
[ -n "$found" ] || { echo "dnsmasq: not found after installing Debian's dnsmasq-base package" >&2; exit 1; }
echo "$found"
