//! A run's lease, end to end: a driver stopped past its lease's expiry,
//! in the middle of a layer or of its merge, and a second driver taking
//! the lease over; the first driver's workers fenced off, and the first
//! driver, resumed, starting and merging nothing.

use super::*;

/// The lease fences every task (docs/src/cluster.md, "One run per data
/// location"): a driver stopped (SIGSTOP) past its lease's expiry leaves
/// its workers running; they must stop their requests and commit nothing
/// before a second driver (`--wait`) may take the lease over, and the first
/// driver, resumed (SIGCONT) after the takeover, must start nothing. Each
/// driver sends its own User-Agent, so the test web's log tells their
/// requests apart.
#[test]
fn a_driver_stopped_past_its_lease_has_its_workers_fenced_off_before_a_takeover() {
    let web = Web::start(FarmConfig {
        sites: 5,
        pages: 30,
        faults: false,
        seed: 17,
        log_requests: true,
        ..FarmConfig::default()
    });
    let farm_started = Instant::now();
    let want = local_reference(&web, 1);
    let data = web.dir("fenced");
    // Layer 0 first, at full speed (a run one layer shallower, resumed
    // below: `--delay` is not part of a crawl's settings). Then the first
    // driver's layer 1 is slow (a page every 30 s per host): its workers
    // still have minutes of work when it is stopped.
    let seeds_only = common::layercrawl(&web.run_args(&data, 0, &["--partitions", "6", "--delay", "0"]));
    ok(&seeds_only, "layer 0");
    let mut first_args = web.run_args(&data, 1, &["--partitions", "6", "--delay", "30000"]);
    // A 12 s lease (heartbeat 2 s, fence 8 s): the same protocol as the
    // default 60 s, five times quicker to wait out.
    first_args.extend(
        ["--executor", "processes", "--workers", "2", "--user-agent", "first-driver/1", "--lease-expiry", "12s"]
            .map(String::from),
    );
    let logs = web.dir("logs");
    std::fs::create_dir_all(&logs).expect("logs folder");
    let file = |name: &str| std::fs::File::create(logs.join(name)).expect("log file");
    let mut first = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&first_args)
        .env("RUST_LOG", "warn")
        .stdout(file("first.out"))
        .stderr(file("first.err"))
        .spawn()
        .expect("start the first driver");
    let deadline = Instant::now() + Duration::from_secs(120);
    let workers = loop {
        let tasks = map_children_of_layer(first.id(), Some(1));
        if !tasks.is_empty() {
            break tasks;
        }
        assert!(Instant::now() < deadline, "no map task of layer 1 appeared");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_secs(3));
    let lease = data.join("state/lease.json");
    let first_token = lease_token(&lease);
    signal(first.id(), "-STOP");
    let stopped = Instant::now();
    let mut second_args = web.run_args(&data, 1, &["--partitions", "6", "--delay", "0"]);
    second_args.extend(
        [
            "--executor",
            "processes",
            "--workers",
            "2",
            "--user-agent",
            "second-driver/1",
            "--wait",
            "--lease-expiry",
            "12s",
        ]
        .map(String::from),
    );
    // Killed, should an assertion below fail before it is waited for.
    let mut second = second_driver(&second_args);

    // The stopped driver's workers see no renewal: they stop within its
    // fence (8 s after its last renewal, at most 8 s before the stop) and a
    // look at the lease (2 s) more, long before a takeover (12 s after the
    // last renewal at the earliest, and only once the successor has watched
    // the heartbeat stand still for 12 s).
    let fenced_by = stopped + Duration::from_secs(20);
    while workers.iter().any(|&pid| runs(pid)) {
        if Instant::now() > fenced_by {
            signal(first.id(), "-CONT");
            let _ = first.kill();
            panic!("the stopped driver's workers {workers:?} still run 20 s after it was stopped: nothing fences them");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let workers_gone = Instant::now();

    // The second driver takes the lease over once the first's heartbeat
    // has not moved for the expiry; then the first is resumed.
    wait_for_takeover(&mut second, &lease, &first_token);
    let took_over = Instant::now();
    // When the takeover was written (seen up to a poll later, by when the
    // second driver may have committed an empty partition already).
    let taken_at = std::fs::metadata(&lease).and_then(|m| m.modified()).expect("the lease's time");
    signal(first.id(), "-CONT");
    let first_status = first.wait().expect("wait for the first driver");
    let first_err = std::fs::read_to_string(logs.join("first.err")).unwrap_or_default();
    assert_eq!(first_status.code(), Some(2), "the resumed first driver stops, saying why: {first_err}");
    assert!(first_err.contains("lease"), "{first_err}");
    let second = second.0.take().expect("the second driver");
    let s = ok(&second.wait_with_output().expect("wait for the second driver"), "the second driver");
    assert_eq!(s["executor"], "processes");

    // No request of the first driver's after its workers were fenced off
    // (so none after the takeover, nor after it was resumed).
    let farm_ms = |t: Instant| t.duration_since(farm_started).as_secs_f64() * 1000.0;
    let stats = web.farm.stats();
    let first_requests: Vec<f64> = stats
        .hosts
        .values()
        .flat_map(|h| h.log.iter())
        .filter(|r| r.agent.as_deref().is_some_and(|a| a.contains("first-driver")))
        .map(|r| r.at_ms)
        .collect();
    assert!(!first_requests.is_empty(), "the first driver crawled before it was stopped");
    let late: Vec<f64> = first_requests.iter().copied().filter(|&at| at > farm_ms(workers_gone) + 50.0).collect();
    assert!(
        late.is_empty(),
        "requests of the first driver reached the web after its workers were fenced off: {late:?}"
    );
    assert!(farm_ms(took_over) > farm_ms(workers_gone), "fenced off before the takeover");

    // None of its workers' commits landed after they were fenced off: no
    // map manifest of layer 1 was written between then and the takeover
    // (the first driver started nothing after it either: it exited 2).
    let wall = |t: Instant| std::time::SystemTime::now() - Instant::now().duration_since(t);
    for entry in std::fs::read_dir(data.join("state/manifest/layer=1")).expect("layer 1's manifests").flatten() {
        let written = entry.metadata().and_then(|m| m.modified()).expect("mtime");
        assert!(
            written <= wall(workers_gone) || written >= taken_at,
            "{} was committed after the first driver's workers were fenced off, before the takeover",
            entry.path().display()
        );
    }
    assert_eq!(crawl_of(&data), want, "the rows are those of a clean run");
}

/// The children of `pid` that have not ended (from each thread's
/// `children`, quicker than a scan of /proc), with their command lines.
fn live_children(pid: u32) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in list.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
            if runs(child) {
                out.push((child, std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default()));
            }
        }
    }
    out
}

/// Sends `sig` (`-STOP`, `-CONT`) to `pid` with `kill`, failing the test
/// if it cannot.
fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill").args([sig, &pid.to_string()]).status().expect("kill").success();
    assert!(ok, "kill {sig} {pid}");
}

/// Sends `sig` to `pid` at once (a `kill` process would take milliseconds).
fn send(pid: u32, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: kill(2) touches no memory of this process.
    unsafe { libc::kill(pid, sig) };
}

/// Waits until every thread of `pid` is stopped; `false` if it ended.
fn wait_stopped(pid: u32) -> bool {
    loop {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return false };
        let states: Vec<String> = tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
            .filter_map(|s| s.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().next().map(str::to_string)))
            .collect();
        if states.is_empty() || states.iter().any(|s| s == "Z" || s == "X") {
            return false;
        }
        if states.iter().all(|s| s == "T" || s == "t") {
            return true;
        }
        std::thread::yield_now();
    }
}

/// Whether process `pid` has a Parquet file under `data` open (the merge
/// reading the shards it copies).
fn reads_parquet(pid: u32, data: &Path) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
    fds.flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| target.starts_with(data) && target.extension().is_some_and(|e| e == "parquet"))
}

/// Every data file (not `state/`) under `data` of layers 0 and 1, with
/// when it was last written if it is a merged file (the second driver's
/// seal rewrites layer 1's links shards in place). A merge's staging
/// files (`.NAME.staged`, which every reader skips) are no data: a merge
/// stopped by its fence removes its own.
fn layer_files(data: &Path) -> BTreeMap<String, Option<std::time::SystemTime>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Option<std::time::SystemTime>>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).expect("under the root").display().to_string();
            let staging = entry.file_name().to_string_lossy().starts_with('.');
            if rel == "state" || rel.contains("layer=2") || staging {
                continue;
            }
            if path.is_dir() {
                walk(&path, root, out);
            } else if rel.contains("layer=") {
                let merged = !rel.contains("/part-");
                out.insert(rel, merged.then(|| entry.metadata().and_then(|m| m.modified()).expect("mtime")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(data, data, &mut out);
    out
}

/// The merge is fenced like every task (docs/src/cluster.md, "One run per
/// data location"). A driver is stopped (SIGSTOP, with its merge task) in
/// the middle of its merge, after the task checked the lease; a second
/// driver (`--wait`, one layer deeper) takes the lease over; the first is
/// resumed while the second still crawls. Its merge must land nothing:
/// no manifest (it wrote one of two layers, which the deeper run's would
/// have to replace), no merged file, no shard deleted; the first exits
/// with code 2, and the rows are those of a clean run of the deeper crawl.
#[test]
fn a_driver_stopped_in_its_merge_past_its_lease_merges_nothing_after_a_takeover() {
    let web = web((0, 0));
    let want = local_reference(&web, 2);
    let logs = web.dir("logs");
    std::fs::create_dir_all(&logs).expect("logs folder");
    // Whether the merge task is caught before its manifest depends on the
    // scheduler (it merges a small crawl in milliseconds): a crawl whose
    // merge was caught too late is started again in another folder.
    let mut caught = None;
    for attempt in 0..4 {
        let data = web.dir(&format!("stale-merge-{attempt}"));
        if let Some(c) = stop_in_its_merge(&web, &data, &logs) {
            caught = Some((data, c));
            break;
        }
        eprintln!("attempt {attempt}: the merge was caught past its manifest; again in another folder");
    }
    let (data, (mut first, first_pid, merge)) = caught.expect("the merge task caught before its manifest in 4 crawls");
    let at_stop = layer_files(&data);
    assert!(at_stop.keys().any(|f| f.contains("/part-")), "the shards are there: {at_stop:?}");

    let lease = data.join("state/lease.json");
    let first_token = lease_token(&lease);
    // One layer deeper, and slow enough (a page every 60 ms per host, its
    // layer 2 about 20 s) that its own merge comes well after the first
    // driver is resumed, a second after the takeover.
    let mut second_args = web.run_args(&data, 2, &["--partitions", "6", "--delay", "60"]);
    second_args
        .extend(["--executor", "processes", "--workers", "2", "--wait", "--lease-expiry", "12s"].map(String::from));
    let mut second = second_driver(&second_args);
    wait_for_takeover(&mut second, &lease, &first_token);
    signal(merge, "-CONT");
    signal(first_pid, "-CONT");
    let status = first.0.take().expect("the first driver").wait().expect("wait for the first driver");
    let first_err = std::fs::read_to_string(logs.join("first.err")).unwrap_or_default();
    let layer2_maps = std::fs::read_dir(data.join("state/manifest/layer=2"))
        .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("map-")).count())
        .unwrap_or(0);
    assert!(layer2_maps < 6, "the second driver's layer 2 was done before the first ended: slow it more");

    assert!(
        !data.join("state/manifest/merge.json").exists(),
        "the first driver's merge wrote its manifest after the takeover: {first_err}"
    );
    let now = layer_files(&data);
    let changed: Vec<_> = now.iter().filter(|(f, t)| at_stop.get(*f) != Some(t)).collect();
    let gone: Vec<_> = at_stop.keys().filter(|f| !now.contains_key(*f)).collect();
    assert!(
        changed.is_empty() && gone.is_empty(),
        "the first driver's merge wrote {changed:?} and deleted {gone:?} after the takeover"
    );
    assert_eq!(status.code(), Some(2), "the resumed first driver stops, saying why: {first_err}");
    assert!(first_err.contains("lease"), "{first_err}");

    let second = second.0.take().expect("the second driver");
    let s = ok(&second.wait_with_output().expect("wait for the second driver"), "the second driver");
    assert_eq!(s["merged"]["layers"], 3, "the second driver merged its three layers: {s}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("state/manifest/merge.json")).expect("manifest"))
            .expect("JSON");
    assert_eq!(manifest["layers"], 3, "the manifest is the deeper run's");
    assert_eq!(crawl_of(&data), want, "the rows are those of a clean run");
}

/// Starts a first driver on `data` (one layer, two worker processes, a
/// 12 s lease) and stops it and its merge task in the middle of the merge:
/// past its start (where it checked the lease), before its manifest, with
/// the lease's lock free. Returns the driver, its pid and the merge task's
/// pid; none when the merge was caught too late (the caller starts again).
fn stop_in_its_merge(web: &Web, data: &Path, logs: &Path) -> Option<(KillOnDrop, u32, u32)> {
    let mut first_args = web.run_args(data, 1, &ARGS);
    // A 12 s lease, as above: the takeover comes five times sooner.
    first_args.extend(["--executor", "processes", "--workers", "2", "--lease-expiry", "12s"].map(String::from));
    let first = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&first_args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(logs.join("first.err")).expect("log file"))
        .spawn()
        .expect("start the first driver");
    // Killed (stopped or not), should an assertion below fail.
    let first = KillOnDrop(Some(first));
    let first_pid = first.0.as_ref().expect("the first driver").id();
    // Its merge task is caught once it reads a shard: past its start (where
    // it checked the lease), before its manifest. Looked for without a
    // pause once layer 1's map tasks are done.
    let layer1_done = || {
        std::fs::read_dir(data.join("state/manifest/layer=1"))
            .map(|d| d.flatten().filter(|e| e.file_name().to_string_lossy().starts_with("map-")).count() == 6)
            .unwrap_or(false)
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    while !layer1_done() {
        assert!(Instant::now() < deadline, "the first driver did not finish layer 1");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The merge task is caught as early as it can be seen: as a child that
    // runs `task merge`, or as a child not yet past its exec (its command
    // line is still the driver's). Anything else (a map task on its way out,
    // whose command line is already empty) is let go. Once stopped, it runs
    // a fraction of a millisecond at a time until it reads a shard or has
    // written a merged file.
    let driver_cmd = std::fs::read(format!("/proc/{first_pid}/cmdline")).expect("the driver's command line");
    let is_merge = |cmd: &[u8]| cmd.split(|&b| b == 0).any(|a| a == b"merge");
    let merge = 'find: loop {
        assert!(Instant::now() < deadline, "the first driver started no merge task");
        for (pid, cmd) in live_children(first_pid) {
            if !is_merge(&cmd) && cmd != driver_cmd {
                continue;
            }
            send(pid, libc::SIGSTOP);
            if !wait_stopped(pid) {
                continue;
            }
            // Stopped before its exec: stepped until it shows what it runs.
            loop {
                let now = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if is_merge(&now) {
                    break 'find pid;
                }
                if now != driver_cmd {
                    send(pid, libc::SIGCONT);
                    break;
                }
                send(pid, libc::SIGCONT);
                std::thread::sleep(Duration::from_micros(100));
                send(pid, libc::SIGSTOP);
                if !wait_stopped(pid) {
                    break;
                }
            }
        }
    };
    let merged_any = || {
        ["doc", "links"].iter().any(|d| (0..2).any(|l| data.join(format!("{d}/layer={l}/data-00000.parquet")).exists()))
    };
    let manifest = data.join("state/manifest/merge.json");
    loop {
        // Caught too late: it ended, or wrote its manifest already.
        if !wait_stopped(merge) || manifest.exists() {
            send(merge, libc::SIGKILL);
            return None;
        }
        if reads_parquet(merge, data) || merged_any() {
            break;
        }
        send(merge, libc::SIGCONT);
        std::thread::sleep(Duration::from_micros(300));
        send(merge, libc::SIGSTOP);
    }
    signal(first_pid, "-STOP");
    // Not while it renews its lease: a driver stopped holding the lease's
    // lock would hold it on, and the second driver's takeover gives up
    // after 10 s, saying so. Stepped on until the lock is free.
    let lease_lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data.join("state/lease.json.lock"))
        .expect("the lease's lock file");
    let lock_deadline = Instant::now() + Duration::from_secs(30);
    while let Err(std::fs::TryLockError::WouldBlock) = lease_lock.try_lock() {
        assert!(Instant::now() < lock_deadline, "the first driver kept its lease's lock");
        signal(first_pid, "-CONT");
        std::thread::sleep(Duration::from_millis(1));
        signal(first_pid, "-STOP");
        std::thread::sleep(Duration::from_millis(5));
    }
    lease_lock.unlock().expect("unlock the lease's lock");
    if manifest.exists() {
        send(merge, libc::SIGKILL);
        return None;
    }
    Some((first, first_pid, merge))
}

/// The token of the lease at `path`.
/// Starts the driver that takes over, its output piped; killed when
/// dropped before it is waited for.
fn second_driver(args: &[String]) -> KillOnDrop {
    let child = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the second driver");
    KillOnDrop(Some(child))
}

fn lease_token(path: &Path) -> String {
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(path).expect("lease")).expect("lease JSON");
    v["token"].as_str().expect("token").to_string()
}

/// Waits (up to 240 s) until the lease at `lease` has another token than
/// `first_token`: the `second` driver took it over. If that driver ends
/// first, the test fails with what it printed.
fn wait_for_takeover(second: &mut KillOnDrop, lease: &Path, first_token: &str) {
    let deadline = Instant::now() + Duration::from_secs(240);
    while lease_token(lease) == first_token {
        if let Some(status) = second.0.as_mut().expect("the second driver").try_wait().expect("the second driver") {
            let out = second.0.take().expect("the second driver").wait_with_output().expect("its output");
            panic!(
                "the second driver ended ({status}) before taking the lease over: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "the second driver never took the lease over");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A child process killed when dropped (a test that fails half-way leaves
/// no driver behind).
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
