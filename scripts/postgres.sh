#!/usr/bin/env bash
# Installs PostgreSQL from Debian's archive (the `postgresql` package), the
# real server the SQL export's tests and bench load into (each starts its
# own cluster in a temporary folder on a loopback port, never the system
# service), and makes the test TLS certificates (openssl, Debian's
# `openssl`): a CA, a server certificate it signs for 127.0.0.1 and
# localhost, and a second CA that signed nothing (the wrong CA), in
# ${LAYERCRAWL_PG_TLS:-target/pg-tls}. Idempotent (certificates are made
# again when missing or within a day of expiring). Prints exactly two
# lines on stdout, everything else goes to stderr:
#   BIN=<folder of the server's programs (initdb, postgres, psql)>
#   TLS=<folder with ca.crt, server.crt, server.key, other-ca.crt>
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tls="${LAYERCRAWL_PG_TLS:-$root/target/pg-tls}"
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
apt_install() {
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "$@" >&2; then
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "$@" >&2
  fi
}
find_it() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true; }
found="$(find_it)"
if [ -z "$found" ] || [ ! -x "$found/postgres" ] || [ ! -x "$found/initdb" ]; then
  apt_install postgresql
  found="$(find_it)"
fi
[ -n "$found" ] && [ -x "$found/postgres" ] || { echo "postgres: not found after installing Debian's postgresql package" >&2; exit 1; }
command -v openssl >/dev/null 2>&1 || apt_install openssl

fresh() { [ -s "$1" ] && openssl x509 -in "$1" -noout -checkend 86400 >/dev/null 2>&1; }
if ! fresh "$tls/ca.crt" || ! fresh "$tls/server.crt" || ! fresh "$tls/other-ca.crt" || [ ! -s "$tls/server.key" ]; then
  echo "postgres: making the test CA and server certificate in $tls" >&2
  mkdir -p "$tls"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  ca_ext=(-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign")
  for ca in ca other-ca; do
    openssl req -x509 "${ec[@]}" -keyout "$work/$ca.key" -out "$work/$ca.crt" -days 825 \
      -subj "/CN=layercrawl test $ca" "${ca_ext[@]}" 2>/dev/null
  done
  openssl req -new "${ec[@]}" -keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
  printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" > "$work/server.ext"
  openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/server.crt" -days 825 -extfile "$work/server.ext" 2>/dev/null
  chmod 600 "$work/server.key"
  # The CAs' keys are not kept: nothing else is ever signed.
  mv "$work/ca.crt" "$work/other-ca.crt" "$work/server.crt" "$work/server.key" "$tls/"
fi
echo "BIN=$found"
echo "TLS=$tls"
