#!/bin/sh
# One night's crawl (what jobs/nightly.cron runs), from the checkout's root:
#   jobs/nightly.sh [extra layercrawl run flags]
# Crawls into data/nightly-YYYY-MM-DD. When an earlier night's crawl finished
# (its layers merged: state/manifest/merge.json), tonight's requests are
# conditional on it (--previous): pages the servers say are unchanged are
# carried forward from it instead of being downloaded again (README,
# "Nightly recrawls"). A night that did not finish is skipped over, so one
# failed night does not stop the next.
# LAYERCRAWL names another binary, NIGHT another date (YYYY-MM-DD).
set -eu
bin="${LAYERCRAWL:-./target/release/layercrawl}"
today="data/nightly-${NIGHT:-$(date +%F)}"
previous=""
for d in $(ls -d data/nightly-* 2>/dev/null | sort -r); do
  # Nights before tonight only (a past night run again looks back, not ahead).
  [ "$d" = "$today" ] && continue
  [ "$(printf '%s\n%s\n' "$d" "$today" | sort | head -n 1)" = "$d" ] || continue
  if [ -f "$d/state/manifest/merge.json" ]; then previous="$d"; break; fi
done
if [ -n "$previous" ]; then
  exec "$bin" run --job jobs/nightly.toml --data "$today" --previous "$previous" --json "$@"
else
  exec "$bin" run --job jobs/nightly.toml --data "$today" --json "$@"
fi
