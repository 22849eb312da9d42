//! Shared helpers of the end-to-end tests: run the real `layercrawl` binary
//! against the test web and read its Parquet back.
#![allow(dead_code)]

#[cfg(feature = "render")]
pub mod chrome;
pub mod dnsmasq;
pub mod objstores;
pub mod realsites;
pub mod webapps;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch, RecordBatchReader};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// The path of Chromium (Debian's `chromium`), installed by
/// `scripts/chromium.sh` if needed; the test fails saying why without it.
pub fn chromium() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/chromium.sh");
    let out = Command::new("bash").arg(&script).output().expect("run scripts/chromium.sh");
    assert!(
        out.status.success(),
        "scripts/chromium.sh could not install Chromium (Debian's `chromium` package), which this test needs:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(path.is_file(), "scripts/chromium.sh printed {path:?}, which is not a file");
    path
}

/// Starts a crawl in the background with its output discarded, to be killed.
pub fn spawn_quiet<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn layercrawl")
}

/// Runs `layercrawl ARGS` for `after`, then kills it (SIGKILL) if it is
/// still going; true when it was killed, false when it had ended.
pub fn kill_after<S: AsRef<std::ffi::OsStr>>(args: &[S], after: std::time::Duration) -> bool {
    let mut child = spawn_quiet(args);
    std::thread::sleep(after);
    let killed = child.try_wait().expect("wait").is_none();
    if killed {
        child.kill().expect("SIGKILL");
    }
    let _ = child.wait();
    killed
}

/// The task manifests committed under the data folder `data`
/// (`state/manifest/layer=L/map-K.json`, `optimise-K.json`): how far a
/// crawl has come, counted the same on a quick machine and a loaded one.
pub fn committed_tasks(data: &Path) -> usize {
    let Ok(layers) = std::fs::read_dir(data.join("state/manifest")) else { return 0 };
    layers
        .flatten()
        .filter_map(|layer| std::fs::read_dir(layer.path()).ok())
        .flatten()
        .flatten()
        .filter(|f| {
            let name = f.file_name();
            let name = name.to_string_lossy();
            (name.starts_with("map-") || name.starts_with("optimise-")) && name.ends_with(".json")
        })
        .count()
}

/// Runs `layercrawl ARGS` on the data folder `data` until `more` tasks
/// more than when it started have committed, waits `then`, and kills it
/// (SIGKILL) if it is still going; true when it was killed, false when it
/// had ended. The kill lands at a point of the crawl's own progress, not
/// of the clock, so a loaded machine moves it no more than a quick one.
pub fn kill_after_tasks<S: AsRef<std::ffi::OsStr>>(
    args: &[S],
    data: &Path,
    more: usize,
    then: std::time::Duration,
) -> bool {
    let goal = committed_tasks(data) + more;
    let mut child = spawn_quiet(args);
    while committed_tasks(data) < goal {
        if child.try_wait().expect("wait").is_some() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    std::thread::sleep(then);
    let killed = child.try_wait().expect("wait").is_none();
    if killed {
        child.kill().expect("SIGKILL");
    }
    let _ = child.wait();
    killed
}

/// A checkout holding the project's nightly job (`jobs/nightly.sh` and its
/// files) in a folder of `web`, run as cron would run it.
pub struct Nightly<'a> {
    web: &'a Web,
    pub root: PathBuf,
}

impl<'a> Nightly<'a> {
    /// Copies the job into a `checkout` folder of `web`.
    pub fn checkout(web: &'a Web) -> Self {
        let root = web.dir("checkout");
        std::fs::create_dir_all(root.join("jobs")).expect("mkdir");
        let jobs = Path::new(env!("CARGO_MANIFEST_DIR")).join("jobs");
        for f in ["nightly.sh", "nightly.toml", "nightly-seeds.txt"] {
            std::fs::copy(jobs.join(f), root.join("jobs").join(f)).expect("copy the job");
        }
        Self { web, root }
    }

    /// The night of `date` (`NIGHT`): the job over the test web's seeds at
    /// depth 1; its JSON summary.
    pub fn night(&self, date: &str) -> serde_json::Value {
        let seeds = self.web.seeds.display().to_string();
        let out = Command::new("sh")
            .arg("jobs/nightly.sh")
            .args(["--seeds", &seeds, "--resolve", &self.web.rule, "--allow-private", "--quiet"])
            .args(["--depth", "1", "--delay", "0", "--partitions", "2"])
            .current_dir(&self.root)
            .env("LAYERCRAWL", env!("CARGO_BIN_EXE_layercrawl"))
            .env("NIGHT", date)
            .output()
            .expect("run jobs/nightly.sh");
        assert!(out.status.success(), "{date}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("the run's JSON summary on stdout")
    }
}

/// The Python of target/pyenv (DuckDB, pyarrow, pandas from PyPI), made by
/// `scripts/pyenv.sh` if needed.
pub fn pyenv_python() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("bash").arg(format!("{root}/scripts/pyenv.sh")).output().expect("run scripts/pyenv.sh");
    assert!(
        out.status.success(),
        "scripts/pyenv.sh failed (it installs duckdb, pyarrow and pandas from PyPI):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Runs `layercrawl ARGS...` and returns its output.
pub fn layercrawl<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_layercrawl")).args(args).output().expect("run layercrawl")
}

/// [`layercrawl`] with variables added to its environment.
pub fn layercrawl_env<S: AsRef<std::ffi::OsStr>>(vars: &[(&str, &str)], args: &[S]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_layercrawl"));
    cmd.args(args);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("run layercrawl")
}

/// The test web on loopback, a scratch folder, and a seeds file in it.
pub struct Web {
    pub farm: testweb::Farm,
    pub tmp: tempfile::TempDir,
    pub seeds: PathBuf,
    pub rule: String,
}

impl Web {
    /// Starts the test web; the seeds are its start URLs.
    pub fn start(cfg: testweb::FarmConfig) -> Self {
        let farm = testweb::Farm::start_background(cfg).expect("start the test web");
        let seeds = farm.start_urls();
        Self::with_seeds(farm, &seeds)
    }

    /// Uses `seeds` instead of the start URLs.
    pub fn with_seeds(farm: testweb::Farm, seeds: &[String]) -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let path = tmp.path().join("seeds.txt");
        std::fs::write(&path, seeds.join("\n")).expect("write seeds");
        let rule = farm.resolve_rule();
        Self { farm, tmp, seeds: path, rule }
    }

    /// A folder in the scratch space.
    pub fn dir(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// `run` over this web into `data`, loopback allowed, JSON summary, plus `extra`.
    pub fn run_args(&self, data: &Path, depth: u32, extra: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "run".into(),
            "--seeds".into(),
            self.seeds.display().to_string(),
            "--depth".into(),
            depth.to_string(),
            "--data".into(),
            data.display().to_string(),
            "--resolve".into(),
            self.rule.clone(),
            "--allow-private".into(),
            "--json".into(),
            "--quiet".into(),
        ];
        v.extend(extra.iter().map(|s| (*s).to_string()));
        v
    }

    /// Runs a crawl that must succeed; returns its summary.
    pub fn crawl(&self, data: &Path, depth: u32, extra: &[&str]) -> serde_json::Value {
        crawl_ok(&self.run_args(data, depth, extra))
    }
}

/// Runs a crawl and panics with its stderr if it fails; returns the JSON summary.
pub fn crawl_ok<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S]) -> serde_json::Value {
    let out = layercrawl(args);
    assert!(
        out.status.success(),
        "layercrawl {args:?} failed ({:?}):\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("summary is not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// Every `.parquet` file under `dir`, sorted.
pub fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(parquet_files(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// All batches of all Parquet files under `dir`, each with the layer of its
/// Hive folder (`layer=L`), as every notebook reader sees it.
pub fn read_all(dir: &Path) -> Vec<(i32, RecordBatch)> {
    parquet_files(dir)
        .into_iter()
        .flat_map(|p| {
            let layer = p
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("layer="))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{} is not in a layer=L folder", p.display()));
            read_file(&p).into_iter().map(|b| (layer, b)).collect::<Vec<_>>()
        })
        .collect()
}

/// All batches of one Parquet file (its layer is its folder's, not a column).
pub fn read_file(p: &Path) -> Vec<RecordBatch> {
    let f = std::fs::File::open(p).expect("open parquet");
    let batches = ParquetRecordBatchReaderBuilder::try_new(f).expect("parquet footer").build().expect("reader");
    assert!(batches.schema().field_with_name("layer").is_err(), "layer is the folder's, not a column");
    batches.map(|b| b.expect("batch")).collect()
}

/// One `doc` row, as the tests need it.
#[derive(Clone, Debug, Default)]
pub struct Doc {
    pub url: String,
    pub final_url: String,
    pub host: String,
    pub layer: i32,
    pub partition: i32,
    pub depth: i32,
    /// The page that linked it (none for a seed).
    pub referrer: Option<String>,
    pub status: i32,
    pub error: Option<String>,
    pub error_detail: Option<String>,
    pub content_type: Option<String>,
    pub charset: Option<String>,
    pub title: Option<String>,
    pub text: Option<String>,
    pub content_length: i64,
    pub truncated: bool,
    pub redirects: i32,
    pub content_hash: Option<u64>,
    pub duplicate_of: Option<String>,
    pub has_body: bool,
    pub main_text: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub unchanged: bool,
    pub rendered: bool,
}

pub fn s(b: &RecordBatch, name: &str, i: usize) -> Option<String> {
    let c = b.column_by_name(name).unwrap_or_else(|| panic!("column {name}")).as_string::<i32>();
    (!c.is_null(i)).then(|| c.value(i).to_string())
}

fn i32c(b: &RecordBatch, name: &str, i: usize) -> i32 {
    b.column_by_name(name).unwrap_or_else(|| panic!("column {name}")).as_primitive::<Int32Type>().value(i)
}

/// Reads every `doc` row under `data/doc`.
pub fn read_docs(data: &Path) -> Vec<Doc> {
    let mut out = Vec::new();
    for (layer, b) in read_all(&data.join("doc")) {
        for i in 0..b.num_rows() {
            // An int64 holding the xxh3 hash's 64 bits (docs/src/output.md).
            let hash = b.column_by_name("content_hash").expect("content_hash").as_primitive::<Int64Type>();
            out.push(Doc {
                url: s(&b, "url", i).expect("url"),
                final_url: s(&b, "final_url", i).expect("final_url"),
                host: s(&b, "host", i).expect("host"),
                layer,
                partition: i32c(&b, "partition", i),
                depth: i32c(&b, "depth", i),
                referrer: s(&b, "referrer", i),
                status: i32c(&b, "status", i),
                error: s(&b, "error", i),
                error_detail: s(&b, "error_detail", i),
                content_type: s(&b, "content_type", i),
                charset: s(&b, "charset", i),
                title: s(&b, "title", i),
                text: s(&b, "text", i),
                content_length: b.column_by_name("content_length").expect("len").as_primitive::<Int64Type>().value(i),
                truncated: b.column_by_name("truncated").expect("truncated").as_boolean().value(i),
                redirects: i32c(&b, "redirects", i),
                content_hash: (!hash.is_null(i)).then(|| u64::from_ne_bytes(hash.value(i).to_ne_bytes())),
                duplicate_of: s(&b, "duplicate_of", i),
                has_body: !b.column_by_name("body").expect("body").is_null(i),
                main_text: b.column_by_name("main_text").and_then(|_| s(&b, "main_text", i)),
                etag: s(&b, "etag", i),
                last_modified: s(&b, "last_modified", i),
                unchanged: b.column_by_name("unchanged").expect("unchanged").as_boolean().value(i),
                rendered: b.column_by_name("rendered").expect("rendered").as_boolean().value(i),
            });
        }
    }
    out
}

/// One row of the `skipped` dataset (URLs the noise filter did not follow).
#[derive(Clone, Debug)]
pub struct Skipped {
    pub url: String,
    /// The layer it would have been fetched in.
    pub layer: i32,
    pub reason: String,
    pub source_template: String,
    pub target_template: String,
    pub class_fetched: i64,
    pub class_new: i64,
}

/// Reads every row under `data/skipped`.
pub fn read_skipped(data: &Path) -> Vec<Skipped> {
    let mut out = Vec::new();
    for (layer, b) in read_all(&data.join("skipped")) {
        let n = |name: &str, i: usize| b.column_by_name(name).expect(name).as_primitive::<Int64Type>().value(i);
        for i in 0..b.num_rows() {
            out.push(Skipped {
                url: s(&b, "url", i).expect("url"),
                layer,
                reason: s(&b, "reason", i).expect("reason"),
                source_template: s(&b, "source_template", i).expect("source_template"),
                target_template: s(&b, "target_template", i).expect("target_template"),
                class_fetched: n("class_fetched", i),
                class_new: n("class_new", i),
            });
        }
    }
    out
}

/// One `links` row.
#[derive(Clone, Debug)]
pub struct Link {
    /// The layer of its source page.
    pub layer: i32,
    pub src_url: String,
    pub dst_url: String,
    pub anchor: String,
    pub noise: Option<String>,
    pub followed: bool,
    pub block_ratio: f32,
}

/// Reads every `links` row under `data/links`.
pub fn read_links(data: &Path) -> Vec<Link> {
    let mut out = Vec::new();
    for (layer, b) in read_all(&data.join("links")) {
        for i in 0..b.num_rows() {
            out.push(Link {
                layer,
                src_url: s(&b, "src_url", i).expect("src"),
                dst_url: s(&b, "dst_url", i).expect("dst"),
                anchor: s(&b, "anchor", i).expect("anchor"),
                noise: s(&b, "noise", i),
                followed: b.column_by_name("followed").expect("followed").as_boolean().value(i),
                block_ratio: b
                    .column_by_name("block_ratio")
                    .expect("block_ratio")
                    .as_primitive::<arrow_array::types::Float32Type>()
                    .value(i),
            });
        }
    }
    out
}

/// Rows per URL: every URL must map to exactly one row.
pub fn count_by_url(docs: &[Doc]) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for d in docs {
        *m.entry(d.url.as_str()).or_insert(0) += 1;
    }
    m
}
