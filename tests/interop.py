"""Reads a layercrawl data folder the way a notebook would and prints JSON.

Usage: python tests/interop.py DATA_DIR
Runs real queries with DuckDB (pages per layer, per host, status counts, the
link graph) and reads the same files with pyarrow and pandas; the Rust test
`tests/e2e/interop.rs` compares the answers with what it read itself.
"""
import json
import sys

import duckdb
import pandas as pd
import pyarrow.dataset as ds

data = sys.argv[1]
doc = f"{data}/doc/*/*.parquet"
links = f"{data}/links/*/*.parquet"
con = duckdb.connect()


def rows(sql):
    """All result rows (the cursor API, stable across DuckDB 1.x and 2.x)."""
    return con.execute(sql).fetchall()


def one(sql):
    return rows(sql)[0][0]


out = {
    "rows": one(f"SELECT count(*) FROM '{doc}'"),
    "distinct_urls": one(f"SELECT count(DISTINCT url) FROM '{doc}'"),
    "per_layer": {str(l): n for l, n in rows(f"SELECT layer, count(*) FROM '{doc}' GROUP BY layer ORDER BY layer")},
    "per_host": {h: n for h, n in rows(f"SELECT host, count(*) FROM '{doc}' GROUP BY host")},
    "status": {str(s): n for s, n in rows(f"SELECT status, count(*) FROM '{doc}' GROUP BY status")},
    "ok_with_text": one(f"SELECT count(*) FROM '{doc}' WHERE status = 200 AND error IS NULL AND length(text) > 0"),
    "link_rows": one(f"SELECT count(*) FROM '{links}'"),
    "top_linked": one(
        f"SELECT dst_url, count(*) AS n FROM '{links}' WHERE noise IS NULL GROUP BY dst_url ORDER BY n DESC, dst_url LIMIT 1"
    ),
}
# content_hash is a signed 64-bit integer, so Spark (no unsigned types) reads it natively.
out["content_hash_duckdb_type"] = one(f"SELECT typeof(content_hash) FROM '{doc}' LIMIT 1")
out["distinct_content_hashes"] = one(f"SELECT count(DISTINCT content_hash) FROM '{doc}'")
dataset = ds.dataset(f"{data}/doc", format="parquet", partitioning="hive")
out["content_hash_arrow_type"] = str(dataset.schema.field("content_hash").type)
table = dataset.to_table(columns=["url", "status", "fetched_at"])
out["pyarrow_rows"] = table.num_rows
# The main text and metadata columns, as notebooks see them.
out["main_text_rows"] = one(f"SELECT count(*) FROM '{doc}' WHERE main_text IS NOT NULL")
out["lang"] = {l: n for l, n in rows(f"SELECT lang, count(*) FROM '{doc}' WHERE lang IS NOT NULL GROUP BY lang")}
out["published_at_duckdb_type"] = one(f"SELECT typeof(published_at) FROM '{doc}' LIMIT 1")
meta = dataset.to_table(columns=["main_text", "lang", "published_at", "json_ld", "canonical_url"])
out["main_text_arrow_type"] = str(meta.schema.field("main_text").type)
out["published_at_arrow_type"] = str(meta.schema.field("published_at").type)
out["pyarrow_main_text_rows"] = meta.num_rows - meta.column("main_text").null_count
frame = pd.read_parquet(f"{data}/doc", columns=["url", "status", "title"])
out["pandas_rows"] = len(frame)
out["pandas_200"] = int((frame["status"] == 200).sum())
print(json.dumps(out, sort_keys=True))
