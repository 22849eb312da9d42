#!/bin/sh
# One night's crawl (what jobs/nightly.cron runs), from the checkout's root:
#   jobs/nightly.sh [extra layercrawl run flags]
# Crawls into data/nightly-YYYY-MM-DD. When an earlier night's crawl finished
# (its layers merged: state/manifest/merge.json), tonight's requests are
# conditional on it (--previous): pages the servers say are unchanged are
# carried forward from it instead of being downloaded again (README,
# "Nightly recrawls"). A night that did not finish is skipped over, so one
# failed night does not stop the next.
# The night's summary (`run --json`) is printed and kept in
# data/history/nightly-YYYY-MM-DD.json, and the night's report, with the
# trends of every night kept, is written to data/reports/nightly-YYYY-MM-DD.html
# (README, "Crawl report"); a report that fails does not fail the night.
# LAYERCRAWL names another binary, NIGHT another date (YYYY-MM-DD), HISTORY
# and REPORTS other folders.
set -eu
bin="${LAYERCRAWL:-./target/release/layercrawl}"
night="nightly-${NIGHT:-$(date +%F)}"
today="data/$night"
history="${HISTORY:-data/history}"
reports="${REPORTS:-data/reports}"
previous=""
for d in $(ls -d data/nightly-* 2>/dev/null | sort -r); do
  # Nights before tonight only (a past night run again looks back, not ahead).
  [ "$d" = "$today" ] && continue
  [ "$(printf '%s\n%s\n' "$d" "$today" | sort | head -n 1)" = "$d" ] || continue
  if [ -f "$d/state/manifest/merge.json" ]; then previous="$d"; break; fi
done
mkdir -p "$history"
summary="$history/$night.json"
# Written beside its final name and renamed: a killed night leaves no half summary.
if [ -n "$previous" ]; then
  set -- --previous "$previous" "$@"
fi
status=0
"$bin" run --job jobs/nightly.toml --data "$today" --json "$@" > "$summary.part" || status=$?
if [ "$status" -ne 0 ]; then
  cat "$summary.part"
  rm -f "$summary.part"
  exit "$status"
fi
mv "$summary.part" "$summary"
cat "$summary"
"$bin" report --data "$today" --history "$history" --out "$reports/$night.html" >&2 \
  || echo "jobs/nightly.sh: the report of $today failed (the crawl itself is done)" >&2
