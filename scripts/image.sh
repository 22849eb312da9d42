#!/usr/bin/env bash
# What the container image's tests need (docs/src/cluster.md, "The
# image"): Podman (with buildah inside it) and runc from Debian, and a
# Debian base image made here from the package archive by mmdebstrap, since
# no image registry is reachable: the Essential packages plus
# ca-certificates (no apt: the runtime image installs nothing), without
# manual pages, translations and documentation other than the copyright
# files (as the public bookworm-slim image), /usr merged by mmdebstrap's
# own hook rather than the usrmerge package (which brings Perl), imported
# as localhost/layercrawl-base:bookworm. The file system is built
# once and kept in target/image/ (as mdBook is kept in target/tools).
# Idempotent. It also makes localhost/layercrawl-base:bookworm-render, the
# same with Debian's chromium (for jobs/k8s/Dockerfile's RENDER=1; below).
#
# Podman's configuration here (target/image/containers.conf): runc, since
# crun refuses a kernel with hybrid cgroups; cgroups managed by Podman
# itself (no systemd); no default ulimits (raising RLIMIT_NOFILE is not
# permitted in every sandbox); events to a file (no journald).
#
# Prints on stdout, everything else goes to stderr:
#   CONTAINERS_CONF=<path>   (export it for podman)
#   BASE=localhost/layercrawl-base:bookworm
#   RENDER_BASE=localhost/layercrawl-base:bookworm-render
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/target/image"
suite="bookworm"
mkdir -p "$dir"

as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
missing=()
for tool in podman mmdebstrap runc; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "image: missing ${missing[*]}; installing podman, buildah, mmdebstrap and runc from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  pkgs=(podman buildah mmdebstrap runc)
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${pkgs[@]}" >&2; then
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${pkgs[@]}" >&2
  fi
fi

conf="$dir/containers.conf"
cat >"$conf.new" <<'EOF'
[containers]
default_ulimits = []
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
mv "$conf.new" "$conf"
export CONTAINERS_CONF="$conf"

# One base: NAME TAG PACKAGES [MMDEBSTRAP OPTIONS]. The tar file is the
# cache: made once (again when the packages or options change), then
# imported again only when Podman's storage lost the image.
base() {
  local name="$1" tag="$2" include="$3" tar="$dir/$1.tar"
  shift 3
  # A recipe changed since the file system was made: made again.
  local recipe="$include $*"
  [ "$(cat "$dir/$name.recipe" 2>/dev/null)" = "$recipe" ] || rm -f "$tar"
  if [ ! -s "$tar" ]; then
    echo "image: building the $suite file system $tar (mmdebstrap, minbase + $include)" >&2
    mmdebstrap --variant=essential --format=tar --include="$include" \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      --aptopt='Apt::Install-Recommends "false"' \
      --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
      "$@" --quiet "$suite" "$tar.part" >&2
    mv "$tar.part" "$tar"
    echo "$recipe" >"$dir/$name.recipe"
  fi
  if ! podman image exists "$tag" || [ "$tar" -nt "$dir/$name.imported" ]; then
    echo "image: importing $tar as $tag" >&2
    podman import "$tar" "$tag" >&2
    touch "$dir/$name.imported"
  fi
}
# The runtime base: the binary needs glibc and libgcc only, and the CA
# bundle that ca-certificates writes when it is installed; so OpenSSL, which
# writes it, and Perl, which only package scripts run, go once it is
# written (dpkg --force-depends --force-remove-essential: the image
# installs nothing). 14 MB less: the image with the release binary of every
# feature (61.3 MB) is 124 MB with them, 109 MB without.
base "base-$suite" "localhost/layercrawl-base:$suite" ca-certificates \
  --customize-hook='chroot "$1" dpkg --purge --force-depends --force-remove-essential openssl libssl3 perl-base' \
  --customize-hook='test -s "$1"/etc/ssl/certs/ca-certificates.crt'
# The render base: Debian's chromium, without what a headless browser with
# no GPU never loads (jobs/k8s/Dockerfile's RENDER_TRIM, one list for both),
# removed once installed (dpkg --force-depends: the image installs nothing,
# so the dependencies need not hold, and every library Chromium links is
# kept, which the last hook checks; tests/e2e/image.rs renders with it);
# also Chromium's interface translations but American English, and its
# Vulkan validation layer and mock driver. 471 MB, of which Chromium
# itself is 356 MB (738 MB untrimmed).
trim="$(sed -n 's/^ARG RENDER_TRIM="\(.*\)"$/\1/p' "$root/jobs/k8s/Dockerfile")"
[ -n "$trim" ] || { echo "image: no ARG RENDER_TRIM line in jobs/k8s/Dockerfile" >&2; exit 1; }
base "base-$suite-render" "localhost/layercrawl-base:$suite-render" ca-certificates,chromium \
  --dpkgopt='path-exclude=/usr/lib/chromium/locales/*' --dpkgopt='path-include=/usr/lib/chromium/locales/en-US.pak' \
  --customize-hook="chroot \"\$1\" dpkg --purge --force-depends $trim" \
  --customize-hook='rm -f "$1"/usr/lib/chromium/libVk*' \
  --customize-hook='chroot "$1" sh -c "! ldd /usr/lib/chromium/chromium /usr/lib/chromium/chrome_crashpad_handler /usr/lib/chromium/*.so | grep \"not found\""'

echo "CONTAINERS_CONF=$conf"
echo "BASE=localhost/layercrawl-base:$suite"
echo "RENDER_BASE=localhost/layercrawl-base:$suite-render"
exit 0
