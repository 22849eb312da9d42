//! `layercrawl export` end to end: the test web is crawled, the crawl
//! exported to SQLite and to a real PostgreSQL server (started here, in a
//! temporary folder on a loopback port), and the tables read back and
//! compared with the Parquet: row counts, one `content` row per content
//! hash shared by duplicate pages, nothing added by a second export, only
//! the new layers' rows by the export of a deeper crawl, and the keys,
//! indexes and foreign key in the database's catalog. A crawl on object
//! storage (moto's S3 server) is exported from its URL. PostgreSQL over
//! TLS checks the server's certificate as `sslmode` says; passwords come
//! from libpq's places and appear in no output and no file, whatever
//! characters they hold (`export/secrets.rs`).

use crate::common;
#[path = "export/postgres.rs"]
mod postgres;
#[path = "export/secrets.rs"]
mod secrets;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use common::{layercrawl, read_all, read_docs, Web};
use postgres::Postgres;
use testweb::FarmConfig;

/// A database the test reads back: rows of a query, each value as text.
trait Db {
    fn rows(&self, sql: &str) -> Vec<Vec<String>>;

    fn one(&self, sql: &str) -> String {
        let rows = self.rows(sql);
        assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
        rows[0][0].clone()
    }

    fn count(&self, sql: &str) -> u64 {
        self.one(sql).parse().unwrap_or_else(|e| panic!("{sql}: not a count ({e})"))
    }
}

struct Sqlite(std::path::PathBuf);

impl Db for Sqlite {
    fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        let conn = rusqlite::Connection::open(&self.0).expect("open the export");
        let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| {
                        Ok(match r.get_ref(i)? {
                            rusqlite::types::ValueRef::Null => String::new(),
                            rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                            rusqlite::types::ValueRef::Real(v) => v.to_string(),
                            rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
                            rusqlite::types::ValueRef::Blob(b) => format!("{} bytes", b.len()),
                        })
                    })
                    .collect::<rusqlite::Result<Vec<String>>>()
            })
            .expect("query");
        rows.map(|r| r.expect("row")).collect()
    }
}

struct Pg<'a> {
    server: &'a Postgres,
    db: String,
}

impl Db for Pg<'_> {
    fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        self.server.query(&self.db, sql)
    }
}

/// Runs `layercrawl export` and returns its JSON summary.
fn export(data: &Path, to: &str) -> serde_json::Value {
    let out = layercrawl(&["export", "--data", data.to_str().expect("utf-8 path"), "--to", to, "--json"]);
    assert!(
        out.status.success(),
        "export to {to} failed ({:?}):\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("summary is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

fn added(summary: &serde_json::Value, table: &str) -> u64 {
    summary["tables"][table]["added"].as_u64().unwrap_or_else(|| panic!("no {table} in {summary}"))
}

fn there(summary: &serde_json::Value, table: &str) -> u64 {
    summary["tables"][table]["already_there"].as_u64().unwrap_or_else(|| panic!("no {table} in {summary}"))
}

/// Rows of each layer of a dataset, from its Parquet.
fn rows_by_layer(data: &Path, dataset: &str) -> BTreeMap<i32, u64> {
    let mut m = BTreeMap::new();
    for (layer, b) in read_all(&data.join(dataset)) {
        *m.entry(layer).or_default() += b.num_rows() as u64;
    }
    m
}

/// The distinct content hashes of the crawl's pages.
fn content_hashes(data: &Path) -> BTreeSet<i64> {
    let mut set = BTreeSet::new();
    for (_, b) in read_all(&data.join("doc")) {
        let h = b.column_by_name("content_hash").expect("content_hash").as_primitive::<Int64Type>();
        set.extend((0..b.num_rows()).filter(|&i| h.is_valid(i)).map(|i| h.value(i)));
    }
    set
}

fn web() -> Web {
    Web::start(FarmConfig { sites: 4, pages: 60, faults: false, seed: 23, ..FarmConfig::default() })
}

fn crawl(web: &Web, data: &Path, depth: u32) {
    web.crawl(data, depth, &["--delay", "0", "--per-host", "4", "--partitions", "3"]);
}

/// The whole check against one database: a depth-1 crawl exported, checked,
/// exported again (nothing added), deepened to depth 2 and exported (only
/// layer 2 added).
fn exports_and_deepens(web: &Web, to: &str, db: &dyn Db) {
    let data = web.dir("data");
    crawl(web, &data, 1);
    let docs = rows_by_layer(&data, "doc");
    let links = rows_by_layer(&data, "links");
    let hashes = content_hashes(&data);
    let first = export(&data, to);
    let (n_docs, n_links) = (docs.values().sum::<u64>(), links.values().sum::<u64>());
    assert_eq!((added(&first, "doc"), there(&first, "doc")), (n_docs, 0), "{first}");
    assert_eq!((added(&first, "links"), there(&first, "links")), (n_links, 0), "{first}");
    assert_eq!(added(&first, "content"), hashes.len() as u64, "{first}");
    assert!(first["tables"].get("entities").is_none(), "a crawl without entities has no entities table rows: {first}");

    // The tables hold what the Parquet holds.
    assert_eq!(db.count("SELECT count(*) FROM doc"), n_docs);
    assert_eq!(db.count("SELECT count(*) FROM links"), n_links);
    assert_eq!(db.count("SELECT count(*) FROM content"), hashes.len() as u64);
    for (layer, n) in &docs {
        assert_eq!(db.count(&format!("SELECT count(*) FROM doc WHERE layer = {layer}")), *n, "doc layer {layer}");
    }
    for (layer, n) in &links {
        assert_eq!(db.count(&format!("SELECT count(*) FROM links WHERE layer = {layer}")), *n, "links layer {layer}");
    }
    check_pages(&data, db);

    // Again: nothing added, everything counted as there.
    let again = export(&data, to);
    assert_eq!(again["rows_added"].as_u64(), Some(0), "{again}");
    assert_eq!(there(&again, "doc"), n_docs, "{again}");
    assert_eq!(there(&again, "links"), n_links, "{again}");
    assert_eq!(db.count("SELECT count(*) FROM doc"), n_docs);

    // Deeper: the same data folder continued to depth 2 adds layer 2 only.
    crawl(web, &data, 2);
    let deeper_docs = rows_by_layer(&data, "doc");
    let deeper_links = rows_by_layer(&data, "links");
    assert_eq!(deeper_docs.range(..2).map(|(l, n)| (*l, *n)).collect::<Vec<_>>(), docs.into_iter().collect::<Vec<_>>());
    let new_docs = deeper_docs.get(&2).copied().unwrap_or(0);
    let new_links = deeper_links.get(&2).copied().unwrap_or(0);
    assert!(new_docs > 0 && new_links > 0, "layer 2 has rows: {deeper_docs:?} {deeper_links:?}");
    let deeper = export(&data, to);
    assert_eq!((added(&deeper, "doc"), there(&deeper, "doc")), (new_docs, n_docs), "{deeper}");
    assert_eq!((added(&deeper, "links"), there(&deeper, "links")), (new_links, n_links), "{deeper}");
    let all_hashes = content_hashes(&data);
    assert_eq!(added(&deeper, "content"), (all_hashes.len() - hashes.len()) as u64, "{deeper}");
    assert_eq!(db.count("SELECT count(*) FROM doc WHERE layer = 2"), new_docs);
    assert_eq!(db.count("SELECT count(*) FROM links"), n_links + new_links);
    assert_eq!(db.count("SELECT count(*) FROM content"), all_hashes.len() as u64);
    check_pages(&data, db);
}

/// Page by page: the exported row has the Parquet's values, its content
/// row the page's text, and duplicate pages share one content row.
fn check_pages(data: &Path, db: &dyn Db) {
    let docs = read_docs(data);
    let exported: BTreeMap<(String, i32), (String, String, String)> = db
        .rows(
            "SELECT d.url, d.layer, d.status, coalesce(d.host, ''), coalesce(length(c.text), -1) \
             FROM doc d LEFT JOIN content c ON c.content_hash = d.content_hash",
        )
        .into_iter()
        .map(|r| ((r[0].clone(), r[1].parse().expect("layer")), (r[2].clone(), r[3].clone(), r[4].clone())))
        .collect();
    assert_eq!(exported.len(), docs.len());
    for d in &docs {
        let (status, host, text_len) = exported
            .get(&(d.url.clone(), d.layer))
            .unwrap_or_else(|| panic!("{} layer {} not exported", d.url, d.layer));
        assert_eq!((status.as_str(), host.as_str()), (d.status.to_string().as_str(), d.host.as_str()), "{}", d.url);
        if d.content_hash.is_some() {
            let want = d.text.as_deref().map_or(-1, |t| t.chars().count() as i64);
            // Non-HTML pages hash their body and have no text.
            assert_eq!(text_len.parse::<i64>().expect("length"), want, "text of {}", d.url);
        }
    }
    // Duplicates: each copy names its first page, and both point at one content row.
    let copies = docs.iter().filter(|d| d.duplicate_of.is_some()).count() as u64;
    assert!(copies >= 3, "the test web has duplicate pages: {copies}");
    assert_eq!(
        db.count(
            "SELECT count(*) FROM doc d JOIN doc f ON f.url = d.duplicate_of \
             WHERE d.content_hash = f.content_hash"
        ),
        copies,
        "every copy shares its first page's content row"
    );
    assert_eq!(
        db.count("SELECT count(*) FROM doc WHERE content_hash IS NOT NULL AND content_hash NOT IN (SELECT content_hash FROM content)"),
        0
    );
    assert_eq!(
        db.count("SELECT count(*) FROM (SELECT content_hash FROM content GROUP BY content_hash HAVING count(*) > 1) x"),
        0
    );
    // A stored body is the page's (pages whose content no other page shares).
    let bodies: u64 = db.count(
        "SELECT count(*) FROM doc d JOIN content c ON c.content_hash = d.content_hash \
         WHERE d.duplicate_of IS NULL AND d.truncated = false AND length(c.body) = d.content_length",
    );
    assert!(bodies > 0, "bodies stored with --store-body html");
}

#[test]
fn a_crawl_exported_to_sqlite_adds_only_new_rows() {
    let web = web();
    let file = web.dir("crawl.db");
    let to = format!("sqlite:{}", file.display());
    let db = Sqlite(file.clone());
    exports_and_deepens(&web, &to, &db);

    // Keys, indexes and the foreign key, from the catalog.
    let pk = |table: &str| -> Vec<String> {
        let mut cols = db.rows(&format!("SELECT pk, name FROM pragma_table_info('{table}') WHERE pk > 0"));
        cols.sort_by_key(|r| r[0].parse::<u32>().expect("pk"));
        cols.into_iter().map(|r| r[1].clone()).collect()
    };
    assert_eq!(pk("doc"), ["url", "layer"]);
    assert_eq!(pk("content"), ["content_hash"]);
    assert_eq!(pk("links"), ["src_url", "layer", "ord"]);
    assert_eq!(pk("entities"), ["url", "layer", "ord"]);
    assert_eq!(pk("relations"), ["url", "layer", "ord"]);
    let indexes: BTreeSet<String> =
        db.rows("SELECT name FROM sqlite_master WHERE type = 'index'").into_iter().map(|r| r[0].clone()).collect();
    for name in ["doc_host", "doc_content_hash", "links_dst_url", "entities_entity_id", "relations_subject_id"] {
        assert!(indexes.contains(name), "index {name} missing: {indexes:?}");
    }
    assert_eq!(
        db.rows("SELECT \"from\", \"table\", \"to\" FROM pragma_foreign_key_list('doc')"),
        vec![vec!["content_hash".to_string(), "content".to_string(), "content_hash".to_string()]]
    );
    // Timestamps are ISO 8601 text that SQLite's date functions read.
    assert_eq!(db.count("SELECT count(*) FROM doc WHERE julianday(fetched_at) IS NULL"), 0);

    // The text summary says when there was nothing new.
    let data = web.dir("data");
    let out = layercrawl(&["export", "--data", data.to_str().expect("utf-8"), "--to", &to]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nothing new"), "{text}");
}

#[test]
fn a_crawl_exported_to_postgres_adds_only_new_rows() {
    let server = Postgres::start(false);
    server.create_db("crawl");
    let web = web();
    let db = Pg { server: &server, db: "crawl".into() };
    exports_and_deepens(&web, &server.url("crawl"), &db);

    let indexes: BTreeMap<String, String> = db
        .rows("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'")
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    for (name, cols) in [
        ("doc_pkey", "(url, layer)"),
        ("content_pkey", "(content_hash)"),
        ("links_pkey", "(src_url, layer, ord)"),
        ("entities_pkey", "(url, layer, ord)"),
        ("relations_pkey", "(url, layer, ord)"),
        ("doc_host", "(host)"),
        ("doc_content_hash", "(content_hash)"),
        ("links_dst_url", "(dst_url)"),
        ("entities_entity_id", "(entity_id)"),
        ("relations_subject_id", "(subject_id)"),
        ("relations_object_id", "(object_id)"),
    ] {
        let def = indexes.get(name).unwrap_or_else(|| panic!("index {name} missing: {indexes:?}"));
        assert!(def.contains(cols), "{name}: {def}");
        assert_eq!(name.ends_with("_pkey"), def.starts_with("CREATE UNIQUE INDEX"), "{def}");
    }
    assert_eq!(
        db.rows(
            "SELECT conrelid::regclass::text, confrelid::regclass::text, pg_get_constraintdef(oid) \
             FROM pg_constraint WHERE contype = 'f'"
        ),
        vec![vec![
            "doc".to_string(),
            "content".to_string(),
            "FOREIGN KEY (content_hash) REFERENCES content(content_hash)".to_string()
        ]]
    );
    // Types: timestamps are timestamptz, hashes bigint.
    assert_eq!(
        db.rows(
            "SELECT column_name, data_type FROM information_schema.columns \
             WHERE table_name = 'doc' AND column_name IN ('fetched_at', 'content_hash') ORDER BY 1"
        ),
        vec![
            vec!["content_hash".to_string(), "bigint".to_string()],
            vec!["fetched_at".to_string(), "timestamp with time zone".to_string()]
        ]
    );
    // fetched_at is the crawl's time: within the last hour.
    assert_eq!(db.count("SELECT count(*) FROM doc WHERE fetched_at < now() - interval '1 hour'"), 0);
}

/// `layercrawl export` run as a user would, in folder `cwd` with `HOME`
/// there too (no password file of the machine's), the PG* variables only
/// those given; returns (exit code, stdout, stderr).
fn export_as_user(cwd: &Path, data: &Path, to: &str, vars: &[(&str, &str)], json: bool) -> (i32, String, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"));
    cmd.current_dir(cwd).env("HOME", cwd);
    for var in ["PGPASSWORD", "PGPASSFILE", "PGSSLMODE", "PGSSLROOTCERT"] {
        cmd.env_remove(var);
    }
    cmd.envs(vars.iter().copied()).args(["export", "--data", data.to_str().expect("utf-8"), "--to", to]);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().expect("run layercrawl export");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

/// The files under `dir` that contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").map(|e| e.expect("entry")) {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else if std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes())) {
                found.push(path);
            }
        }
    }
    found
}

#[test]
fn postgres_over_tls_checks_the_servers_certificate() {
    let server = Postgres::start(false);
    server.create_db("crawl");
    let web = Web::start(FarmConfig { sites: 1, pages: 8, faults: false, ..FarmConfig::default() });
    let (data, cwd) = (web.dir("data"), web.dir("cwd"));
    std::fs::create_dir_all(&cwd).expect("mkdir");
    web.crawl(&data, 1, &["--delay", "0"]);
    let (ca, wrong) = (server.tls.join("ca.crt"), server.tls.join("other-ca.crt"));
    let base = server.url("crawl");

    for mode in ["verify-full", "verify-ca"] {
        let to = format!("{base}?sslmode={mode}&sslrootcert={}", ca.display());
        let (code, out, err) = export_as_user(&cwd, &data, &to, &[], true);
        assert_eq!(code, 0, "{mode} with the CA that signed the server's certificate: {err}");
        let summary: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
        assert!(summary["rows_read"].as_u64() > Some(0), "{summary}");
    }
    // The same from libpq's variables.
    let vars = [("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", ca.to_str().expect("utf-8"))];
    let (code, _, err) = export_as_user(&cwd, &data, &base, &vars, false);
    assert_eq!(code, 0, "PGSSLMODE and PGSSLROOTCERT: {err}");
    let log = server.log();
    let authorized = log.lines().filter(|l| l.contains("connection authorized: user=layercrawl database=crawl"));
    assert!(authorized.clone().count() >= 3 && authorized.clone().all(|l| l.contains("SSL enabled")), "{log}");

    // A CA that did not sign it: refused before anything is sent.
    let to = format!("{base}?sslmode=verify-full&sslrootcert={}", wrong.display());
    let (code, _, err) = export_as_user(&cwd, &data, &to, &[], false);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cannot reach the database") && err.contains("invalid peer certificate"), "{err}");
    assert!(err.contains(&format!("was not signed by a CA in sslrootcert {}", wrong.display())), "{err}");
    eprintln!("the wrong CA:\n{err}");
    // No CA at all for a verifying mode: a bad --to.
    let (code, _, err) = export_as_user(&cwd, &data, &format!("{base}?sslmode=verify-full"), &[], false);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs the CA's certificate") && err.contains("sslrootcert=FILE"), "{err}");
}

#[test]
fn passwords_come_from_libpqs_places_and_are_never_shown() {
    use postgres::{PASSWORD, PW_USER};
    let server = Postgres::start(false);
    server.create_db_of_pw_user("pw");
    let web = Web::start(FarmConfig { sites: 1, pages: 8, faults: false, ..FarmConfig::default() });
    let (data, cwd, secrets) = (web.dir("data"), web.dir("cwd"), web.dir("secrets"));
    std::fs::create_dir_all(&cwd).expect("mkdir");
    std::fs::create_dir_all(&secrets).expect("mkdir");
    web.crawl(&data, 1, &["--delay", "0"]);
    let port = server.port;
    let plain = format!("postgres://{PW_USER}@127.0.0.1:{port}/pw");
    let mut outputs = Vec::new();
    let mut run = |to: &str, vars: &[(&str, &str)], json: bool, want: i32| {
        let (code, out, err) = export_as_user(&cwd, &data, to, vars, json);
        assert_eq!(code, want, "--to {to} with {vars:?}:\n{out}\n{err}");
        outputs.push(format!("{out}\n{err}"));
        (out, err)
    };

    // No password anywhere: the server's refusal says where to give one.
    let (_, err) = run(&plain, &[], false, 1);
    assert!(err.contains("PGPASSWORD") && err.contains("PGPASSFILE"), "{err}");
    eprintln!("no password:\n{err}");
    // PGPASSWORD.
    let (out, _) = run(&plain, &[("PGPASSWORD", PASSWORD)], true, 0);
    let summary: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
    assert!(summary["rows_added"].as_u64() > Some(0), "{summary}");
    // A password file, private to its owner; one others may read is not used.
    let file = secrets.join("pgpass");
    std::fs::write(
        &file,
        format!("# test\n127.0.0.1:{port}:other:{PW_USER}:wrong\n*:{port}:pw:{PW_USER}:{PASSWORD}\n"),
    )
    .expect("write");
    let file_s = file.to_str().expect("utf-8");
    let mode =
        |m: u32| std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(m)).expect("chmod");
    mode(0o600);
    let (out, _) = run(&plain, &[("PGPASSFILE", file_s)], false, 0);
    assert!(out.contains("nothing new"), "{out}");
    mode(0o644);
    let (_, err) = run(&plain, &[("PGPASSFILE", file_s)], false, 1);
    assert!(err.contains("group or world access") && err.contains("0600"), "{err}");
    mode(0o600);
    // ~/.pgpass by default, and `passfile` in the string.
    std::fs::copy(&file, cwd.join(".pgpass")).expect("copy");
    std::fs::set_permissions(cwd.join(".pgpass"), std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod");
    run(&plain, &[], false, 0);
    std::fs::remove_file(cwd.join(".pgpass")).expect("rm");
    run(&format!("{plain}?passfile={file_s}"), &[], false, 0);

    // In the string (URL, query parameter, key=value): works, shown as ***.
    let given = [
        format!("postgres://{PW_USER}:{PASSWORD}@127.0.0.1:{port}/pw"),
        format!("{plain}?password={PASSWORD}&sslmode=require"),
        format!("host=127.0.0.1 port={port} user={PW_USER} dbname=pw password='{PASSWORD}'"),
    ];
    for to in &given {
        let (out, _) = run(to, &[], false, 0);
        assert!(out.contains("***"), "the destination is shown redacted: {out}");
        let (out, _) = run(to, &[], true, 0);
        let summary: serde_json::Value = serde_json::from_str(&out).expect("JSON summary");
        assert!(summary["to"].as_str().is_some_and(|t| t.contains("***")), "{summary}");
    }
    // Errors that name the destination: a wrong password, a bad setting,
    // a server that is not there.
    let wrong = "Wrong-pw-84213";
    let (_, err) = run(&format!("postgres://{PW_USER}:{wrong}@127.0.0.1:{port}/pw"), &[], false, 1);
    assert!(err.contains("password authentication failed") && err.contains("***") && !err.contains(wrong), "{err}");
    eprintln!("a wrong password:\n{err}");
    let (_, err) = run(&format!("postgres://{PW_USER}:{PASSWORD}@127.0.0.1:{port}/pw?sslmode=bogus"), &[], false, 2);
    assert!(err.contains("bogus") && err.contains("***"), "{err}");
    let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let (_, err) = run(&format!("postgres://{PW_USER}:{PASSWORD}@127.0.0.1:{free}/pw"), &[], false, 1);
    assert!(err.contains("cannot reach the database") && err.contains("***"), "{err}");

    for (i, text) in outputs.iter().enumerate() {
        assert!(!text.contains(PASSWORD) && !text.contains(wrong), "run {i} printed a password:\n{text}");
    }
    for dir in [&cwd, &data] {
        assert_eq!(files_containing(dir, PASSWORD), Vec::<std::path::PathBuf>::new(), "written with the password");
    }
    assert_eq!(server.query("pw", "SELECT count(*) > 0 FROM doc"), vec![vec!["t".to_string()]]);
}

#[test]
fn a_crawl_on_object_storage_is_exported_from_its_url() {
    use common::objstores::{Kind, Server};
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "night");
    let web = Web::start(FarmConfig { sites: 2, pages: 20, faults: false, seed: 4, ..FarmConfig::default() });
    let out = s3.command().args(web.run_args(Path::new(&data), 1, &["--delay", "0"])).output().expect("run");
    assert!(out.status.success(), "the s3 crawl: {}", String::from_utf8_lossy(&out.stderr));
    let file = web.dir("crawl.db");
    let to = format!("sqlite:{}", file.display());
    let out = s3.command().args(["export", "--data", &data, "--to", &to, "--json"]).output().expect("export");
    assert!(out.status.success(), "export from {data}: {}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(summary["data"].as_str(), Some(data.as_str()), "{summary}");
    // The same rows as the crawl's files, read back from the bucket.
    let copy = web.dir("copy");
    s3.download("crawl", "night", &copy);
    let db = Sqlite(file);
    let (docs, links) = (rows_by_layer(&copy, "doc"), rows_by_layer(&copy, "links"));
    assert_eq!(added(&summary, "doc"), docs.values().sum::<u64>(), "{summary}");
    assert_eq!(db.count("SELECT count(*) FROM doc"), docs.values().sum::<u64>());
    assert_eq!(db.count("SELECT count(*) FROM links"), links.values().sum::<u64>());
    assert_eq!(db.count("SELECT count(*) FROM content"), content_hashes(&copy).len() as u64);
}

#[test]
fn bad_destinations_missing_crawls_and_unreachable_servers_are_named() {
    let web = Web::start(FarmConfig { sites: 1, pages: 5, faults: false, ..FarmConfig::default() });
    let data = web.dir("data");
    web.crawl(&data, 0, &["--delay", "0"]);
    let data_s = data.to_str().expect("utf-8");

    let out = layercrawl(&["export", "--data", data_s, "--to", "mysql://me@127.0.0.1/crawl"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("mysql") && err.contains("sqlite:FILE") && err.contains("postgres://"), "{err}");

    for empty in [web.dir("empty"), web.dir("missing")] {
        if empty.ends_with("empty") {
            std::fs::create_dir_all(&empty).expect("mkdir");
        }
        let out = layercrawl(&["export", "--data", empty.to_str().expect("utf-8"), "--to", "sqlite:x.db"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("no crawl in") && err.contains(empty.to_str().expect("utf-8")), "{err}");
        assert!(err.contains("layercrawl run"), "{err}");
    }
    assert!(!web.dir("missing").exists(), "a missing data folder is not created");
    assert!(!Path::new("x.db").exists(), "nothing written for a folder without a crawl");

    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("port").local_addr().expect("addr").port();
    let to = format!("postgres://layercrawl@127.0.0.1:{port}/crawl");
    let out = layercrawl(&["export", "--data", data_s, "--to", &to]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot reach the database {to}")), "{err}");

    let out = layercrawl(&["export", "--data", data_s, "--to", "sqlite:/nonexistent-folder/crawl.db"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot reach the database sqlite:/nonexistent-folder/crawl.db"), "{err}");
}

#[test]
fn entities_and_relations_are_exported_when_the_crawl_has_them() {
    // The test web's knowledge-base section, crawled with its knowledge base.
    let farm = testweb::Farm::start_background(FarmConfig {
        sites: 2,
        pages: 10,
        faults: false,
        kb: 12,
        seed: 23,
        ..FarmConfig::default()
    })
    .expect("start the test web");
    let seeds = farm.kb_start_urls();
    let web = Web::with_seeds(farm, &seeds);
    let data = web.dir("data");
    let kb = web.dir("kb.csv");
    std::fs::write(&kb, web.farm.kb_csv()).expect("kb");
    web.crawl(&data, 2, &["--delay", "0", "--entities", kb.to_str().expect("utf-8")]);
    let entities = rows_by_layer(&data, "entities");
    let relations = rows_by_layer(&data, "relations");
    assert!(entities.values().sum::<u64>() > 100, "the crawl found entity mentions: {entities:?}");
    assert!(relations.values().sum::<u64>() > 10, "the crawl found relations: {relations:?}");
    let file = web.dir("crawl.db");
    let to = format!("sqlite:{}", file.display());
    let summary = export(&data, &to);
    let db = Sqlite(file);
    assert_eq!(added(&summary, "entities"), entities.values().sum::<u64>(), "{summary}");
    assert_eq!(db.count("SELECT count(*) FROM entities"), entities.values().sum::<u64>());
    assert_eq!(db.count("SELECT count(*) FROM relations"), relations.values().sum::<u64>());
    // Every mention is of an exported page.
    assert_eq!(
        db.count("SELECT count(*) FROM entities e LEFT JOIN doc d ON d.url = e.url AND d.layer = e.layer WHERE d.url IS NULL"),
        0
    );
    let again = export(&data, &to);
    assert_eq!(again["rows_added"].as_u64(), Some(0), "{again}");
}
