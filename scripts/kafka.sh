#!/usr/bin/env bash
# What the Kafka sink's build needs (README, "Kafka"): the rdkafka crate
# builds librdkafka from its bundled source with mklove's ./configure and
# make, which want a C compiler, a C++ compiler (configure checks for one)
# and make; no cmake. Installs Debian's gcc, g++ and make when one is
# missing. Idempotent; prints the tools found.
set -euo pipefail
missing=()
for tool in cc c++ make; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "missing for librdkafka's build: ${missing[*]}; installing gcc, g++ and make from Debian" >&2
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 gcc g++ make >&2; then
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 gcc g++ make >&2
  fi
fi
for tool in cc c++ make; do
  command -v "$tool" >/dev/null || { echo "$tool: not found after installing gcc, g++ and make" >&2; exit 1; }
done
echo "librdkafka's build: $(cc --version | head -1); $(c++ --version | head -1); $(make --version | head -1)"
