#!/usr/bin/env bash
# Installs the web-application corpus from Debian's archive (nginx, cgit with
# fcgiwrap, DokuWiki with php-fpm, Fossil) and prepares its data under DIR
# (default target/webapps), from this repository's own history pinned at
# commit c0e8007, so that every machine and every later commit serves the
# same content:
#   DIR/git/{full,small}.git          bare repositories for cgit: `main` is the
#                                      pin (small: its first 60 commits), no other ref
#   DIR/fossil/{full,small}.fossil    the same histories imported into Fossil
#   DIR/dokuwiki/{conf,data}          a DokuWiki whose pages are the book
#                                      (docs/src/*.md), one revision per commit
#                                      that changed a page, with its search index
# tests/e2e/common/webapps.rs serves them (one nginx, fcgiwrap, php-fpm).
# Idempotent, and quick when everything is there; one run at a time.
#   scripts/webapps.sh [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="${1:-$root/target/webapps}"
pin=c0e8007f898629a62a97b9967e0f9ab9d6935caa
small_pin=334de4dee3ab200812349f3461fb355326011885
# Bump when the prepared data changes shape, so that old data is made anew.
version="webapps 2 $pin $small_pin"

packages=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || packages+=(nginx-light)
[ -x /usr/lib/cgit/cgit.cgi ] || packages+=(cgit)
[ -x /usr/sbin/fcgiwrap ] || packages+=(fcgiwrap)
compgen -G '/usr/sbin/php-fpm*' >/dev/null || packages+=(php-fpm)
command -v php >/dev/null 2>&1 || packages+=(php-cli)
[ -f /usr/share/dokuwiki/doku.php ] || packages+=(dokuwiki)
command -v fossil >/dev/null 2>&1 || packages+=(fossil)
if [ "${#packages[@]}" -gt 0 ]; then
  as_root=()
  [ "$(id -u)" = 0 ] || as_root=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${packages[@]}" >&2; then
    # A fresh machine has no package lists yet.
    "${as_root[@]}" apt-get update -o DPkg::Lock::Timeout=300 >&2
    "${as_root[@]}" apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 "${packages[@]}" >&2
  fi
  # The packages start system services where they can; the corpus runs its
  # own instances, so stop those.
  if command -v systemctl >/dev/null 2>&1; then
    for s in nginx fcgiwrap.socket fcgiwrap php8.2-fpm; do "${as_root[@]}" systemctl stop "$s" >/dev/null 2>&1 || true; done
  fi
  echo "web-app corpus: installed ${packages[*]}" >&2
fi

# Tests run beside each other: one of them prepares, the others wait.
mkdir -p "$(dirname "$out")"
exec 9>"$out.lock"
flock 9
if [ "$(cat "$out/.prepared" 2>/dev/null || true)" = "$version" ]; then
  echo "web-app corpus: data ready in $out" >&2
  exit 0
fi
if ! git -C "$root" cat-file -e "$pin^{commit}" 2>/dev/null; then
  echo "web-app corpus: commit $pin is not in $root (a shallow clone? run git fetch --unshallow)" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/git" "$out/fossil" "$out/dokuwiki"

# A bare clone whose only ref is main at the commit given.
bare() {
  local dir="$out/git/$1.git" commit="$2"
  git clone --quiet --bare --no-local "$root" "$dir"
  git -C "$dir" symbolic-ref HEAD refs/heads/main
  git -C "$dir" update-ref refs/heads/main "$commit"
  git -C "$dir" for-each-ref --format='%(refname)' | { grep -vx refs/heads/main || true; } | while read -r ref; do
    git -C "$dir" update-ref -d "$ref"
  done
  git -C "$dir" config gc.auto 0
  git -C "$dir" reflog expire --expire=now --all
  git -C "$dir" gc --quiet --prune=now
}
bare full "$pin"
bare small "$small_pin"
echo "web-app corpus: git repositories ready" >&2

# Fossil: the same histories imported; the anonymous visitor ("nobody") may
# read check-ins, files, wiki and tickets and sees hyperlinks, as on a public
# repository; no tarball or ZIP downloads (they are archives, not pages).
for v in full small; do
  repo="$out/fossil/$v.fossil"
  git -C "$out/git/$v.git" fast-export --signed-tags=strip --tag-of-filtered-object=drop main \
    | USER=layercrawl fossil import --git --quiet "$repo" >&2
  export USER=layercrawl
  fossil user capabilities nobody hjor -R "$repo" >/dev/null
  fossil user capabilities anonymous hjor -R "$repo" >/dev/null
  fossil sql -R "$repo" "REPLACE INTO config(name,value,mtime) VALUES('project-name','layercrawl',now()),('index-page','/timeline',now());" >/dev/null
done
echo "web-app corpus: Fossil repositories ready" >&2

# DokuWiki: its configuration (the package's, with a local.php of ours) and
# pages made from the book's history.
wiki="$out/dokuwiki"
mkdir -p "$wiki/conf"
for f in /etc/dokuwiki/*; do
  case "$(basename "$f")" in local.php|acl.auth.php|users.auth.php|local.protected.php|apache.conf|lighttpd.conf) continue ;; esac
  cp -L "$f" "$wiki/conf/"
done
cat > "$wiki/conf/local.php" <<'PHP'
<?php
// The web-app corpus' wiki: read-only for everyone, no login or registration.
// Its data folder is given by the server (DOKUWIKI_DATA), so that each start
// serves its own copy; URLs are made from the request, for any host name.
$conf['savedir'] = $_SERVER['DOKUWIKI_DATA'] ?? getenv('DOKUWIKI_DATA') ?: __DIR__ . '/../data';
$conf['title'] = 'layercrawl wiki';
$conf['start'] = 'summary';
$conf['lang'] = 'en';
$conf['baseurl'] = '';
$conf['basedir'] = '';
$conf['userewrite'] = 0;
$conf['useacl'] = 1;
$conf['superuser'] = '@admin';
$conf['disableactions'] = 'register,resendpwd,profile,profile_delete,login,subscribe';
$conf['recent'] = 20;
$conf['indexdelay'] = 0;
$conf['securecookie'] = 0;
$conf['dnslookups'] = 0;
$conf['updatecheck'] = 0;
$conf['breadcrumbs'] = 0;
PHP
printf '# everyone reads, nobody writes\n*\t@ALL\t1\n' > "$wiki/conf/acl.auth.php"
printf '# no users\n' > "$wiki/conf/users.auth.php"
cat > "$wiki/prepend.php" <<PHP
<?php
// Loaded before DokuWiki (php's auto_prepend_file): its configuration folder.
if (!defined('DOKU_CONF')) define('DOKU_CONF', '$wiki/conf/');
PHP
python3 "$here/webapps_wiki.py" --repo "$root" --pin "$pin" --data "$wiki/data"
# Its search index (backlinks, the page index) as the indexer would build it
# over time.
# (HTTP_HOST and SERVER_PORT: its cache keys read them, as under a server.)
DOKUWIKI_DATA="$wiki/data" HTTP_HOST=localhost SERVER_PORT=80 \
  php -d "auto_prepend_file=$wiki/prepend.php" /usr/share/dokuwiki/bin/indexer.php -q >&2
rm -rf "$wiki/data/cache"/* "$wiki/data/locks"/* "$wiki/data/tmp"/*
echo "web-app corpus: DokuWiki ready" >&2

echo "$version" > "$out/.prepared"
echo "web-app corpus: data ready in $out" >&2
