#!/usr/bin/env bash
# Paired runs of two builds of layercrawl on the same test web: the rows
# they write must be the same. For a change that should not change
# behaviour (a restructuring), run it with the binary built before and the
# one built after:
#
#   scripts/paired_rows.sh /tmp/layercrawl-before target/release/layercrawl [SITES] [PAGES] [DEPTH]
#
# It serves the generated test web (faults off, so that no row depends on
# timing) on 127.0.0.1, crawls it with each binary into its own data folder,
# and compares the `doc` and `links` rows of the two, leaving out the
# columns that record when and how fast (fetched_at, elapsed_ms...). It
# prints the counts and the rows that differ, and exits 1 when any does.
# Time the two runs with any whole-command timer, e.g.
#   /usr/bin/time -v BIN run --seeds ... (the command lines are printed).
set -euo pipefail
A=${1:?binary A}; B=${2:?binary B}
SITES=${3:-12}; PAGES=${4:-150}; DEPTH=${5:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
python=$(bash "$root/scripts/pyenv.sh")
work=$(mktemp -d)
trap 'kill $farm 2>/dev/null || true; rm -rf "$work"' EXIT
port=$((20000 + RANDOM % 20000))
"$A" webfarm --sites "$SITES" --pages "$PAGES" --faults off --listen "127.0.0.1:$port" >"$work/farm.log" 2>&1 &
farm=$!
for _ in $(seq 50); do
  curl -s -o /dev/null "http://127.0.0.1:$port/" -H "Host: s000.test" && break
  sleep 0.1
done
for i in $(seq 0 $((SITES - 1))); do printf 'http://s%03d.test/\n' "$i"; done >"$work/seeds.txt"
for side in A B; do
  bin=${!side}
  cmd=("$bin" run --seeds "$work/seeds.txt" --depth "$DEPTH" --data "$work/$side" --partitions 4
    --resolve "*.test=127.0.0.1:$port" --allow-private --delay 0 --per-host 8 --quiet --json)
  echo "$side: ${cmd[*]}"
  "${cmd[@]}" >"$work/$side.json"
done
"$python" - "$work/A" "$work/B" <<'PY'
import sys, duckdb
a, b = sys.argv[1], sys.argv[2]
con = duckdb.connect()
# Columns that record when or how fast, or which of several equal
# candidates came first (the first of two identical pages, the first page
# that linked a URL): two runs of one binary differ there too.
timing = {"fetched_at", "fetch_ms", "duplicate_of", "referrer"}
bad = 0
for table, key in [("doc", "url")]:
    src = lambda d: f"read_parquet('{d}/{table}/*/*.parquet', hive_partitioning=true)"
    cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {src(a)}").fetchall()]
    keys = [k.strip() for k in key.split(",")]
    na, nb = (con.execute(f"SELECT count(*) FROM {src(d)}").fetchone()[0] for d in (a, b))
    on = " AND ".join(f'x."{k}" = y."{k}"' for k in keys)
    only = lambda d1, d2: con.execute(
        f"SELECT count(*) FROM {src(d1)} x ANTI JOIN {src(d2)} y ON {on}").fetchone()[0]
    only_a, only_b = only(a, b), only(b, a)
    compared = [c for c in cols if c not in timing and c not in keys]
    diffs = {}
    for c in compared:
        n = con.execute(f'SELECT count(*) FROM {src(a)} x JOIN {src(b)} y ON {on} WHERE x."{c}" IS DISTINCT FROM y."{c}"').fetchone()[0]
        if n:
            diffs[c] = n
    print(f"{table}: A {na} rows, B {nb}; keys only in A {only_a}, only in B {only_b}; "
          f"{len(compared)} columns compared (not {', '.join(sorted(timing & set(cols))) or 'none'}): "
          + ("all equal" if not diffs else ", ".join(f"{c} differs in {n}" for c, n in diffs.items())))
    if only_a or only_b or diffs or na != nb:
        bad += 1
# A page's links, whole rows: the same multiset on both sides.
src = lambda d: f"SELECT * FROM read_parquet('{d}/links/*/*.parquet', hive_partitioning=true)"
na, nb = (con.execute(f"SELECT count(*) FROM ({src(d)})").fetchone()[0] for d in (a, b))
ea = con.execute(f"SELECT count(*) FROM ({src(a)} EXCEPT ALL {src(b)})").fetchone()[0]
eb = con.execute(f"SELECT count(*) FROM ({src(b)} EXCEPT ALL {src(a)})").fetchone()[0]
print(f"links: A {na} rows, B {nb}; rows only in A {ea}, only in B {eb} (every column)")
if ea or eb:
    bad += 1
sys.exit(1 if bad else 0)
PY
