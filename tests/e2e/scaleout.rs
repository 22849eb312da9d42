//! Scale-out, end to end on real servers on loopback: the crawl's data on
//! an S3 API server (moto) and on Azure's storage emulator (Azurite), its
//! tasks run as child processes (`--executor processes`, the test bed of
//! the cluster path), a worker killed in the middle of a partition, two
//! attempts of one task racing, and two drivers on one data location.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::objstores::{Kind, Server};
use common::{read_docs, read_links, Web};
use testweb::FarmConfig;

mod takeover;

/// What must come out the same wherever the crawl runs.
#[derive(Debug, PartialEq)]
struct Crawl {
    /// URL -> (layer, status), one entry per row.
    docs: BTreeMap<String, (i32, i32)>,
    /// Every link row: source, target, label, followed.
    links: Vec<(String, String, Option<String>, bool)>,
}

fn crawl_of(dir: &Path) -> Crawl {
    let docs = read_docs(dir);
    let n = docs.len();
    let map: BTreeMap<String, (i32, i32)> = docs.into_iter().map(|d| (d.url, (d.layer, d.status))).collect();
    assert_eq!(map.len(), n, "a URL has two rows in {}", dir.display());
    let mut links: Vec<_> = read_links(dir).into_iter().map(|l| (l.src_url, l.dst_url, l.noise, l.followed)).collect();
    links.sort();
    Crawl { docs: map, links }
}

const ARGS: [&str; 4] = ["--delay", "0", "--partitions", "6"];

fn web(latency_ms: (u32, u32)) -> Web {
    Web::start(FarmConfig {
        sites: 5,
        pages: 30,
        faults: false,
        seed: 17,
        latency_ms,
        log_requests: true,
        ..FarmConfig::default()
    })
}

/// The reference: the same crawl in one process, into a local folder.
fn local_reference(web: &Web, depth: u32) -> Crawl {
    let dir = web.dir("local");
    web.crawl(&dir, depth, &ARGS);
    let c = crawl_of(&dir);
    assert!(c.docs.values().filter(|(_, s)| *s == 200).count() >= 50, "the reference crawl fetched pages: {c:?}");
    c
}

fn ok(out: &Output, what: &str) -> serde_json::Value {
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what}: summary JSON: {e}"))
}

/// `run` over `web` into `data` on `server`, with `extra` flags.
fn run_on(server: &Server, web: &Web, data: &str, depth: u32, extra: &[&str]) -> Command {
    let mut args = web.run_args(Path::new(data), depth, &ARGS);
    args.extend(extra.iter().map(|s| (*s).to_string()));
    let mut c = server.command();
    c.args(args);
    c
}

#[test]
fn processes_on_s3_crawl_what_one_process_crawls_and_pyarrow_reads_it() {
    let web = web((0, 0));
    let want = local_reference(&web, 2);
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "nightly");
    let summary = ok(
        &run_on(&s3, &web, &data, 2, &["--executor", "processes", "--workers", "3"]).output().expect("run"),
        "the s3 crawl",
    );
    assert_eq!(summary["executor"], "processes");
    let copy = web.dir("s3-copy");
    s3.download("crawl", "nightly", &copy);
    assert_eq!(crawl_of(&copy), want, "URL set, statuses and link rows as in the local run");
    assert!(!copy.join("state/attempts").exists(), "no attempt folder is left");
    for layer in 0..2 {
        let respill = copy.join(format!("state/manifest/layer={layer}/shuffle.json"));
        assert!(!respill.exists(), "the map tasks shuffled layer {layer}'s links themselves (empty partitions too)");
    }

    // Notebooks read the s3:// output directly.
    let python = common::pyenv_python();
    let script = format!(
        "import json, pyarrow.dataset as ds, pyarrow.fs as fs\n\
         s3 = fs.S3FileSystem(endpoint_override='{}', scheme='http', access_key='testing', secret_key='testing', region='us-east-1')\n\
         t = ds.dataset('crawl/nightly/doc', filesystem=s3, format='parquet', partitioning='hive').to_table(columns=['url', 'status'])\n\
         print(json.dumps(sorted(zip(t.column('url').to_pylist(), t.column('status').to_pylist()))))",
        s3.endpoint
    );
    let out = Command::new(python).args(["-c", &script]).output().expect("python");
    assert!(out.status.success(), "pyarrow: {}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<(String, i32)> = serde_json::from_slice(&out.stdout).expect("json");
    let want_rows: Vec<(String, i32)> = want.docs.iter().map(|(u, (_, s))| (u.clone(), *s)).collect();
    assert_eq!(rows, want_rows, "pyarrow reads the rows from s3://");
}

/// Whether process `pid` still runs (a zombie, dead but not yet reaped by
/// whoever adopted it, does not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next().map(str::to_string)))
        .is_some_and(|state| state != "Z" && state != "X")
}

/// The pids of the driver's children that run a map task.
fn map_children(driver: u32) -> Vec<u32> {
    map_children_of_layer(driver, None)
}

/// The same, of one layer only when given.
fn map_children_of_layer(driver: u32, layer: Option<u32>) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // Fields after the command's closing parenthesis: state, ppid, ...
        let ppid =
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse().ok());
        if ppid != Some(driver) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let in_layer =
            layer.is_none_or(|l| args.windows(2).any(|w| w[0] == b"--layer" && w[1] == l.to_string().as_bytes()));
        if args.iter().any(|a| *a == b"task") && args.iter().any(|a| *a == b"map") && in_layer {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_worker_killed_in_the_middle_of_a_partition_is_retried_and_nothing_is_lost_or_doubled() {
    // Slow pages, so that a map task is still fetching when it is killed.
    let web = web((40, 80));
    let want = local_reference(&web, 1);
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "killed");
    let mut cmd = run_on(&s3, &web, &data, 1, &["--executor", "processes", "--workers", "2"]);
    let driver = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start the driver");
    let deadline = Instant::now() + Duration::from_secs(60);
    let victim = loop {
        if let Some(&pid) = map_children(driver.id()).first() {
            // Let it fetch for a while, then kill it mid-partition.
            std::thread::sleep(Duration::from_millis(300));
            if std::path::Path::new(&format!("/proc/{pid}")).exists() {
                // SAFETY: kill(2) on a process id; no memory is involved.
                assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0, "kill {pid}");
                break pid;
            }
        }
        assert!(Instant::now() < deadline, "no map task to kill appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = driver.wait_with_output().expect("wait for the driver");
    let stderr = String::from_utf8_lossy(&out.stderr);
    ok(&out, "the crawl with a killed worker");
    assert!(
        stderr.contains("killed by signal 9") && stderr.contains("starting it again"),
        "the retry of {victim} is reported: {stderr}"
    );
    let copy = web.dir("copy");
    s3.download("crawl", "killed", &copy);
    assert_eq!(crawl_of(&copy), want, "the same output, no row lost or doubled");
}

#[test]
fn two_attempts_of_one_task_racing_commit_exactly_once() {
    let web = web((5, 10));
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "race");
    ok(
        &run_on(&s3, &web, &data, 0, &["--executor", "processes", "--workers", "2"]).output().expect("run"),
        "the crawl",
    );
    // Partition of the most pages in layer 0; its commit is undone.
    let before = web.dir("before");
    s3.download("crawl", "race", &before);
    let mut sizes: BTreeMap<i32, usize> = BTreeMap::new();
    for d in read_docs(&before) {
        *sizes.entry(d.partition).or_default() += 1;
    }
    let (&part, _) = sizes.iter().max_by_key(|(_, n)| **n).expect("rows");
    let manifest = format!("race/state/manifest/layer=0/map-{part:05}.json");
    s3.rm("crawl", &manifest);

    let task = || {
        let mut c = s3.command();
        c.args(["task", "map", "--data", &data, "--layer", "0", "--partition", &part.to_string(), "--json"]);
        c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start a task")
    };
    let (a, b) = (task(), task());
    let reports: Vec<serde_json::Value> =
        [a, b].into_iter().map(|c| ok(&c.wait_with_output().expect("wait"), "a racing task")).collect();
    let outcomes: BTreeSet<&str> = reports.iter().map(|r| r["outcome"].as_str().expect("outcome")).collect();
    assert_eq!(outcomes, BTreeSet::from(["already committed", "committed"]), "{reports:?}");
    assert_eq!(reports[0]["attempt"], reports[1]["attempt"], "both name the attempt that won: {reports:?}");

    let after = web.dir("after");
    s3.download("crawl", "race", &after);
    let m: serde_json::Value = serde_json::from_slice(
        &std::fs::read(after.join(format!("state/manifest/layer=0/map-{part:05}.json"))).expect("the manifest"),
    )
    .expect("json");
    assert_eq!(m["attempt"], reports[0]["attempt"], "the manifest names the winner");
    assert!(!after.join("state/attempts").exists(), "the loser's files are gone, the winner's published");
    let shard = after.join(format!("doc/layer=0/part-{part:05}.parquet"));
    assert!(shard.exists(), "the winner's shard is in place");
    let urls: Vec<String> = read_docs(&after).into_iter().filter(|d| d.partition == part).map(|d| d.url).collect();
    let distinct: BTreeSet<&String> = urls.iter().collect();
    // The merged file and the re-made shard hold the partition's rows once each.
    assert_eq!(urls.len(), 2 * distinct.len(), "one shard committed, not two");
}

#[test]
fn the_same_crawl_on_azure_blob_storage() {
    let web = web((0, 0));
    let want = local_reference(&web, 2);
    let az = Server::start(Kind::Azure);
    let data = az.bucket("crawl", "nightly");
    ok(
        &run_on(&az, &web, &data, 2, &["--executor", "processes", "--workers", "2"]).output().expect("run"),
        "the az crawl",
    );
    let copy = web.dir("az-copy");
    az.download("crawl", "nightly", &copy);
    assert_eq!(crawl_of(&copy), want);
}

/// Two drivers started at once on one location: one crawls, the other is
/// refused naming the holder; no host saw more than --per-host requests at once.
fn two_drivers(server: Option<&Server>, web: &Web, data: &str) {
    let start = || {
        let mut args = web.run_args(Path::new(data), 1, &ARGS);
        args.extend(["--per-host".to_string(), "2".to_string()]);
        let mut c = match server {
            Some(s) => s.command(),
            None => Command::new(env!("CARGO_BIN_EXE_layercrawl")),
        };
        c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start a driver")
    };
    let (a, b) = (start(), start());
    let outs = [a.wait_with_output().expect("wait"), b.wait_with_output().expect("wait")];
    let codes: Vec<Option<i32>> = outs.iter().map(|o| o.status.code()).collect();
    assert!(codes.contains(&Some(0)) && codes.contains(&Some(2)), "one crawls, one is refused: {codes:?}");
    let refused = outs.iter().find(|o| o.status.code() == Some(2)).expect("refused");
    let msg = String::from_utf8_lossy(&refused.stderr);
    assert!(msg.contains("another run is using data location") && msg.contains("--wait"), "{msg}");
    for (host, h) in &web.farm.stats().hosts {
        let most = h.crawler_in_flight();
        assert!(most <= 2, "{host}: {most} requests at once");
    }
}

#[test]
fn one_run_per_data_location_locally_and_on_s3() {
    let web = web((20, 40));
    two_drivers(None, &web, web.dir("data").to_str().expect("utf8"));
    let s3 = Server::start(Kind::S3);
    let data = s3.bucket("crawl", "twice");
    web.farm.reset_stats();
    two_drivers(Some(&s3), &web, &data);

    // With --wait the second one waits, then finds the crawl done.
    let wait_data = web.dir("waited");
    let first = {
        let mut c = Command::new(env!("CARGO_BIN_EXE_layercrawl"));
        c.args(web.run_args(&wait_data, 1, &ARGS)).stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().expect("first")
    };
    std::thread::sleep(Duration::from_millis(300));
    let mut args = web.run_args(&wait_data, 1, &ARGS);
    args.push("--wait".into());
    let second = common::layercrawl(&args);
    ok(&first.wait_with_output().expect("wait"), "the first run");
    let s = ok(&second, "the run that waited");
    assert_eq!(s["fetched"], ok_fetched(&wait_data), "it resumed the finished crawl: {s}");
}

fn ok_fetched(dir: &Path) -> serde_json::Value {
    serde_json::Value::from(read_docs(dir).len() as u64)
}

#[test]
fn a_killed_driver_takes_its_tasks_with_it_and_the_same_command_resumes() {
    // Slow pages: a task of layer 1 runs for seconds.
    let web = web((80, 120));
    let want = local_reference(&web, 1);
    let data = web.dir("resumed");
    let mut args = web.run_args(&data, 1, &ARGS);
    args.extend(["--executor", "processes", "--workers", "2"].map(String::from));
    let mut driver = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the driver");
    let deadline = Instant::now() + Duration::from_secs(60);
    let tasks = loop {
        let tasks = map_children_of_layer(driver.id(), Some(1));
        if !tasks.is_empty() {
            break tasks;
        }
        assert!(Instant::now() < deadline, "no map task of layer 1 appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(200));
    driver.kill().expect("kill -9 the driver");
    driver.wait().expect("reap the driver");
    // Far sooner than the tasks would end on their own.
    let gone = Instant::now() + Duration::from_millis(500);
    while tasks.iter().any(|&pid| runs(pid)) {
        assert!(Instant::now() < gone, "tasks {tasks:?} outlived their driver");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The driver's lease names a process that no longer runs: taken over at once.
    common::crawl_ok(&args);
    assert_eq!(crawl_of(&data), want, "the resumed crawl is the uninterrupted one");
}
