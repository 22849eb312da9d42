#!/usr/bin/env bash
# Installs the object-store test servers, for the tests of the s3:// and
# az:// data stores on loopback. Idempotent; nothing is installed globally.
#   - an S3 server: moto's server mode, in a Python virtualenv at
#     ${LAYERCRAWL_OBJSTORES_VENV:-target/objstores-venv}, with boto3 and
#     azure-storage-blob for scripts/objstores.py (buckets, containers);
#   - an Azure Blob server: Azurite, from npm into target/azurite.
# Prints exactly two lines on stdout, everything else goes to stderr:
#   MOTO_SERVER=<path of moto_server>
#   AZURITE_BLOB=<path of azurite-blob>
# Start them bound to loopback only, e.g.
#   moto_server -H 127.0.0.1 -p 0      # port 0: it prints "Running on http://127.0.0.1:PORT" on stderr
#   python scripts/objstores.py serve-s3 --port PORT   # the same, one write at a time: what the tests run,
#                                                      # since two drivers racing for a lease need atomic conditional writes
#   azurite-blob --blobHost 127.0.0.1 --blobPort PORT --location DIR --skipApiVersionCheck --silent --disableTelemetry
# (--disableTelemetry: Azurite would otherwise try to send usage data out.)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LAYERCRAWL_OBJSTORES_VENV:-$root/target/objstores-venv}"
azurite_dir="$root/target/azurite"
azurite_version="3.35.0"

if ! { [ -x "$venv/bin/moto_server" ] && "$venv/bin/python" -c 'import moto, boto3, azure.storage.blob, flask' >/dev/null 2>&1; }; then
  echo "objstores: installing moto's server, boto3 and azure-storage-blob into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    'moto[server]>=5.1,<6' 'boto3>=1.35' 'azure-storage-blob>=12.20,<13' >&2
fi

azurite_blob="$azurite_dir/node_modules/.bin/azurite-blob"
if [ ! -x "$azurite_blob" ]; then
  echo "objstores: installing Azurite $azurite_version into $azurite_dir" >&2
  command -v npm >/dev/null 2>&1 || { echo "objstores: npm is needed (Debian: apt-get install npm)" >&2; exit 1; }
  mkdir -p "$azurite_dir"
  npm --prefix "$azurite_dir" install --no-audit --no-fund --loglevel=error "azurite@$azurite_version" >&2
fi

echo "MOTO_SERVER=$venv/bin/moto_server"
echo "AZURITE_BLOB=$azurite_blob"
