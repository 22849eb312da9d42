//! Failure and recovery end to end: a host that keeps failing, and a crawl
//! killed with SIGKILL at several points that must end exactly like an
//! uninterrupted one.

use crate::common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{crawl_ok, read_docs, read_links, Web};
use testweb::{Farm, FarmConfig};

#[test]
fn a_host_that_keeps_failing_is_paused_probed_and_then_each_of_its_urls_ends_as_a_row() {
    let farm = Farm::start_background(FarmConfig {
        sites: 1,
        pages: 5,
        faults: true,
        log_requests: true,
        ..FarmConfig::default()
    })
    .expect("farm");
    let urls: Vec<String> = (0..20).map(|i| format!("http://faults.test/status/500?n={i:02}")).collect();
    let web = Web::with_seeds(farm, &urls);
    let data = web.dir("data");
    let started = Instant::now();
    let s = web.crawl(&data, 0, &["--delay", "0", "--per-host", "1", "--retries", "0", "--host-down-after", "3s"]);
    let farm = &web.farm;
    let layer = |l: usize, k: &str| s["layers"][l][k].as_u64().unwrap_or(u64::MAX);
    // Five failures in a row open the host's breaker; probes 1, 2, ... s
    // apart fail too; after 3 s of failing the host is down, and its other
    // URLs end as host_down rows without a request. Nothing is carried.
    assert_eq!((layer(0, "fetched"), layer(0, "carried"), layer(0, "hosts_down")), (20, 0, 1), "{}", s["layers"][0]);
    assert!(layer(0, "breaker_opens") >= 1);
    let docs = read_docs(&data);
    assert_eq!(common::count_by_url(&docs).len(), 20, "every URL is a row, once");
    let asked = docs.iter().filter(|d| d.status == 500).count();
    let down: Vec<&common::Doc> = docs.iter().filter(|d| d.error.as_deref() == Some("host_down")).collect();
    assert_eq!(asked + down.len(), 20);
    assert!(down.len() >= 10, "{} host_down rows", down.len());
    assert!(down.iter().all(|d| d.status == 0 && d.error_detail.as_deref().is_some_and(|e| e.contains("faults.test"))));
    let h = &farm.stats().hosts["faults.test"];
    assert_eq!(h.requests, 1 + asked as u64, "robots.txt and one request per 500 row, nothing more: {h:?}");
    assert!(asked <= 5 + 4, "the burst that opened the breaker and a few probes: {asked}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(s["not_requested"], 0);
    assert!(!data.join("state/carry/layer=0").exists());
}

/// Links counted by layer, noise label and whether they were followed.
type LinkCounts = BTreeMap<(i32, Option<String>, bool), usize>;

/// What a finished crawl holds, for comparing two runs: its pages, and its
/// links by label (the noise labels are written into a layer's links after
/// the layer is sealed: a kill in between must not lose them).
fn snapshot(data: &std::path::Path) -> (BTreeMap<(i32, String), i32>, LinkCounts) {
    let docs = read_docs(data);
    let rows = docs.iter().map(|d| ((d.layer, d.url.clone()), d.status)).collect::<BTreeMap<_, _>>();
    assert_eq!(rows.len(), docs.len(), "a URL has two rows in one layer");
    let mut links = LinkCounts::new();
    for l in read_links(data) {
        *links.entry((l.layer, l.noise, l.followed)).or_default() += 1;
    }
    (rows, links)
}

#[test]
fn killed_again_and_again_the_crawl_ends_exactly_like_an_uninterrupted_one() {
    let cfg =
        FarmConfig { sites: 6, pages: 100, faults: false, seed: 13, latency_ms: (5, 15), ..FarmConfig::default() };
    let web = Web::start(cfg);
    let args =
        |data: &std::path::Path| web.run_args(data, 3, &["--delay", "0", "--per-host", "2", "--partitions", "4"]);
    let reference = web.dir("reference");
    let t = Instant::now();
    crawl_ok(&args(&reference));
    let whole = t.elapsed();

    // Kill at spread-out points of the run (fetch, reduce, optimise and merge
    // all take part of it), each time resuming the same data folder: each
    // run is killed a little after a tenth of the crawl's tasks more have
    // committed, then once more after the last task (in the seal, the
    // labels or the merge).
    let tasks = common::committed_tasks(&reference);
    let killed = web.dir("killed");
    let mut kills = 0;
    for then_ms in [0, 40, 10, 80, 20, 120, 5, 60] {
        let then = Duration::from_millis(then_ms);
        kills += usize::from(common::kill_after_tasks(&args(&killed), &killed, (tasks / 10).max(1), then));
    }
    let left = tasks.saturating_sub(common::committed_tasks(&killed));
    kills += usize::from(common::kill_after_tasks(&args(&killed), &killed, left, Duration::from_millis(5)));
    eprintln!("reference crawl {:.2} s, {tasks} tasks; {kills} runs killed", whole.as_secs_f64());
    assert!(kills >= 6, "only {kills} of the runs were still going when killed");
    let summary = crawl_ok(&args(&killed));
    assert!(summary["merged"]["doc_rows"].as_u64().is_some());

    let (want, want_links) = snapshot(&reference);
    let (got, got_links) = snapshot(&killed);
    assert!(want.len() > 150, "reference crawl too small: {}", want.len());
    let missing: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).take(5).collect();
    let extra: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).take(5).collect();
    assert!(missing.is_empty() && extra.is_empty(), "after {kills} kills: missing {missing:?}, extra {extra:?}");
    assert_eq!(got, want, "same URLs, layers and statuses");
    assert!(want_links.keys().any(|k| k.1.as_deref() == Some("barren")), "the filter labelled links: {want_links:?}");
    assert_eq!(got_links, want_links, "same link rows, with the same labels");
    // No shard or staging file is left behind to be read twice.
    let leftovers: Vec<_> =
        common::parquet_files(&killed.join("doc")).into_iter().filter(|p| !p.ends_with("data-00000.parquet")).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert!(whole < Duration::from_secs(120));
}

/// A run stopped while it removed a layer's noise-label files (they go
/// one by one, once every links shard of the layer has its labels): the
/// same command finishes, and the labels left behind are not applied a
/// second time. The state is made as the stop leaves it, after a finished
/// crawl: of the files of the layer's labelled partitions the first and
/// the last are left and those between are gone. Each file left names a
/// link that has no label, so a file applied again would show in the links.
#[test]
fn stopped_while_removing_a_layers_noise_labels_the_same_command_finishes_and_applies_nothing_twice() {
    let web = Web::start(FarmConfig { sites: 6, pages: 80, faults: false, seed: 37, ..FarmConfig::default() });
    let data = web.dir("data");
    let args = web.run_args(&data, 3, &["--delay", "0", "--per-host", "4", "--partitions", "4"]);
    crawl_ok(&args);
    let (rows, links) = snapshot(&data);
    let labelled = |layer: u32| -> Vec<u32> {
        (0..4)
            .filter(|k| {
                let path = data.join(format!("state/manifest/layer={layer}/optimise-{k:05}.json"));
                let m: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(&path).expect("optimise manifest")).expect("JSON");
                m["labels"].as_u64().expect("labels count") > 0
            })
            .collect()
    };
    let (layer, parts) = (0..3)
        .map(|l| (l, labelled(l)))
        .find(|(_, parts)| parts.len() >= 3)
        .expect("a layer with three partitions that had labels");
    let unlabelled = read_links(&data)
        .into_iter()
        .find(|l| l.layer == i32::try_from(layer).expect("layer") && l.noise.is_none())
        .expect("a link without a label");
    // One entry: the link's URL fingerprint and the first label.
    let mut entry = layercrawl::urlnorm::fingerprint_str(&unlabelled.dst_url).to_le_bytes().to_vec();
    entry.push(0);
    let dir = data.join(format!("state/labels/layer={layer}"));
    std::fs::create_dir_all(&dir).expect("labels folder");
    for part in [parts[0], parts[parts.len() - 1]] {
        std::fs::write(dir.join(format!("part-{part:05}.bin")), &entry).expect("labels file");
    }

    crawl_ok(&args);
    assert!(std::fs::read_dir(&dir).map_or(true, |mut d| d.next().is_none()), "the files left are removed");
    let (rows_after, links_after) = snapshot(&data);
    assert_eq!(rows_after, rows, "the same pages");
    assert_eq!(links_after, links, "the same links, with the same labels: none applied twice");
}

#[test]
fn traps_stay_bounded() {
    let web = Web::start(FarmConfig { sites: 4, pages: 20, faults: false, seed: 2, ..FarmConfig::default() });
    let data = web.dir("data");
    let s = web.crawl(&data, 6, &["--delay", "0", "--per-host", "4", "--denoise", "off", "--max-query-variants", "5"]);
    let truth = web.farm.truth(&web.farm.start_urls(), 6);
    let families: Vec<(String, String)> =
        truth.trap_families.iter().map(|f| (f.host.clone(), f.prefix.clone())).collect();
    assert!(families.iter().any(|f| f.1 == "/docs/") && families.iter().any(|f| f.1 == "/search"), "{families:?}");
    let docs = read_docs(&data);
    // Ever-deeper paths stop at the second repeat of a segment.
    let depth_of = |u: &str| u.split('?').next().unwrap_or(u).split('/').filter(|seg| *seg == "a").count();
    let deepest = docs.iter().filter(|d| d.url.contains("/docs/")).map(|d| depth_of(&d.url)).max().unwrap_or(0);
    assert_eq!(deepest, 2, "the trap is entered, and stops at the second repeat");
    // At most five query variants of /search per host and layer.
    let mut per: BTreeMap<(i32, String), usize> = BTreeMap::new();
    for d in docs.iter().filter(|d| d.url.contains("/search?")) {
        *per.entry((d.layer, d.host.clone())).or_default() += 1;
    }
    assert!(!per.is_empty() && per.values().all(|&n| n <= 5), "{per:?}");
    let traps: u64 = (0..7).filter_map(|l| s["layers"][l]["traps"].as_u64()).sum();
    assert!(traps > 0);
    let labelled = read_links(&data).iter().filter(|l| l.noise.as_deref() == Some("trap") && !l.followed).count();
    assert!(labelled > 0, "trap links are labelled and not followed");
}

#[test]
fn a_layer_out_of_time_carries_what_is_left_into_the_next_layer() {
    // Slow responses and one connection per host: the first layer cannot finish in 1 s.
    let farm = Farm::start_background(FarmConfig {
        sites: 2,
        pages: 40,
        faults: false,
        latency_ms: (100, 150),
        ..FarmConfig::default()
    })
    .expect("farm");
    let urls: Vec<String> = (1..=30).map(|i| format!("http://s000.test/about?v={i}")).collect();
    let web = Web::with_seeds(farm, &urls);
    let data = web.dir("data");
    let s = web.crawl(&data, 3, &["--delay", "0", "--per-host", "1", "--layer-timeout", "1s", "--denoise", "off"]);
    let layer = |l: usize, k: &str| s["layers"][l][k].as_u64().unwrap_or(0);
    assert!(layer(0, "carried") > 0 && layer(0, "fetched") < 30, "{}", s["layers"][0]);
    assert_eq!(layer(0, "fetched") + layer(0, "carried"), 30, "each seed fetched or carried, none lost");
    // Every seed is fetched exactly once over the layers.
    let docs = read_docs(&data);
    let seeds_fetched: Vec<&str> =
        docs.iter().filter(|d| d.url.contains("/about?v=")).map(|d| d.url.as_str()).collect();
    let distinct: std::collections::BTreeSet<&str> = seeds_fetched.iter().copied().collect();
    assert_eq!(seeds_fetched.len(), distinct.len(), "no seed fetched twice");
    // The rest are still carried after the last layer (kept for a deeper
    // re-run), and the summary says how many and why. The last layer may
    // be a catch-up layer past the depth (seeds fetched late have links
    // within it).
    let last = s["layers"].as_array().expect("layers").len() - 1;
    assert!(last >= 3);
    let mut still_carried = std::collections::BTreeSet::new();
    for (_, b) in common::read_all(&data.join(format!("state/carry/layer={last}"))) {
        let urls = b.column_by_name("url").expect("url");
        let urls = arrow_array::cast::AsArray::as_string::<i32>(urls);
        still_carried.extend((0..b.num_rows()).map(|i| urls.value(i).to_string()).filter(|u| u.contains("/about?v=")));
    }
    assert!(still_carried.iter().all(|u| !distinct.contains(u.as_str())));
    assert_eq!(
        distinct.len() + still_carried.len(),
        30,
        "every seed fetched once, or still carried after the last layer"
    );
    let carried_last = layer(last, "carried");
    assert_eq!(s["not_requested"].as_u64(), Some(carried_last), "{}", s["layers"][last]);
    if carried_last > 0 {
        assert_eq!(s["not_requested_by"]["layer-timeout"].as_u64(), Some(carried_last), "{}", s["not_requested_by"]);
    }
    // A carried URL keeps its depth: the seeds are depth 0 whatever layer fetched them.
    assert!(docs.iter().filter(|d| d.url.contains("/about?v=")).all(|d| d.depth == 0));
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(at: std::path::PathBuf, size: &str) -> Option<Self> {
        std::fs::create_dir_all(&at).expect("mount point");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Self(at))
    }

    fn grow(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {}", self.0.display());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_run_clearly_and_the_same_command_then_finishes_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(disk) = SmallDisk::mount(tmp.path().join("disk"), "1m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (needs root); the full-disk path is not exercised");
        return;
    };
    let web = Web::start(FarmConfig { sites: 4, pages: 60, faults: false, seed: 4, ..FarmConfig::default() });
    let args =
        |data: &std::path::Path| web.run_args(data, 3, &["--delay", "0", "--per-host", "4", "--partitions", "4"]);
    let data = disk.0.join("data");
    let out = common::layercrawl(&args(&data));
    assert_eq!(out.status.code(), Some(1), "a storage failure is exit code 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("No space left on device")
            && err.contains(".parquet")
            && err.contains("run the same command again"),
        "{err}"
    );
    assert_eq!(err.matches("No space left").count(), 1, "the cause is said once: {err}");
    // Whatever is visible is whole: every Parquet file opens and reads.
    let _ = common::read_all(&data.join("doc"));

    disk.grow("200m");
    crawl_ok(&args(&data));
    let reference = web.dir("reference");
    crawl_ok(&args(&reference));
    assert_eq!(snapshot(&data), snapshot(&reference), "the resumed crawl equals an uninterrupted one");
}

#[test]
fn a_temporary_folder_that_refuses_scratch_files_stops_the_run_clearly_and_loses_nothing() {
    let web = Web::start(FarmConfig { sites: 3, pages: 40, faults: false, seed: 5, ..FarmConfig::default() });
    let args =
        |data: &std::path::Path| web.run_args(data, 2, &["--delay", "0", "--per-host", "4", "--partitions", "2"]);
    let data = web.dir("data");
    let missing = web.dir("no-such-folder");
    let out = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(args(&data))
        .env("TMPDIR", &missing)
        .output()
        .expect("run layercrawl");
    assert_eq!(out.status.code(), Some(1), "a scratch failure is exit code 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("in/layer=0/part-")
            && err.contains(&missing.display().to_string())
            && err.contains("Point TMPDIR at"),
        "{err}"
    );
    assert!(!data.join("doc/layer=0").exists(), "nothing half-done is committed");

    crawl_ok(&args(&data));
    let reference = web.dir("reference");
    crawl_ok(&args(&reference));
    assert_eq!(snapshot(&data), snapshot(&reference), "the crawl after the fix equals an uninterrupted one");
}

/// A site, plus two stragglers seeded beside it: a page whose body trickles
/// for 2.5 s and a URL whose server asks for a 5 s pause (503 with
/// `Retry-After: 5`) before it answers. Two connections per host, request
/// starts 100 ms apart, so layer 1 takes several seconds.
fn straggling_web() -> Web {
    let farm = Farm::start_background(FarmConfig {
        sites: 1,
        pages: 40,
        faults: true,
        slow_ms: 2500,
        log_requests: true,
        ..FarmConfig::default()
    })
    .expect("farm");
    let seeds =
        ["http://s000.test/", "http://faults.test/trickle", "http://faults.test/wait-then-ok"].map(String::from);
    Web::with_seeds(farm, &seeds)
}

const STRAGGLING: [&str; 8] = ["--delay", "100", "--per-host", "2", "--partitions", "2", "--denoise", "off"];

#[test]
fn stragglers_cross_the_layer_barrier_and_nothing_is_lost_or_doubled() {
    let web = straggling_web();
    let run = |name: &str, after: &str| {
        web.farm.reset_stats();
        let data = web.dir(name);
        let mut args = STRAGGLING.to_vec();
        args.extend(["--straggler-after", after]);
        let s = web.crawl(&data, 1, &args);
        let stats = web.farm.stats();
        (data, s, stats)
    };
    let (waited, s_off, stats_off) = run("waited", "off");
    let (crossed, s, stats) = run("crossed", "1s");
    let secs = |s: &serde_json::Value, l: usize| s["layers"][l]["seconds"].as_f64().expect("seconds");
    let n = |s: &serde_json::Value, l: usize, k: &str| s["layers"][l][k].as_u64().unwrap_or(u64::MAX);
    eprintln!(
        "layer 0: {:.2} s waiting for its slowest URL, {:.2} s with stragglers; whole crawl {:.2} vs {:.2} s",
        secs(&s_off, 0),
        secs(&s, 0),
        s_off["seconds"],
        s["seconds"]
    );
    // Without the tail rule, layer 0 waits for the 5 s pause; with it, layer 0
    // ends about 1 s after its last fast page, and both stragglers go on.
    assert!(secs(&s_off, 0) >= 5.0, "{}", s_off["layers"][0]);
    assert!(secs(&s, 0) < 2.4, "layer 0 did not wait for the trickle: {}", s["layers"][0]);
    assert_eq!(
        (n(&s, 0, "stragglers"), n(&s, 0, "stragglers_in_flight"), n(&s, 0, "carried")),
        (2, 1, 2),
        "{}",
        s["layers"][0]
    );
    assert_eq!(n(&s, 1, "adopted"), 1, "layer 1 adopts the trickle instead of requesting it again: {}", s["layers"][1]);
    assert_eq!(n(&s_off, 0, "stragglers"), 0);

    // The same rows, each once; the stragglers land in layer 1 with their own depth.
    let rows = |data: &std::path::Path| {
        let docs = read_docs(data);
        assert_eq!(common::count_by_url(&docs).len(), docs.len(), "a URL has two rows");
        docs
    };
    let (docs_off, docs) = (rows(&waited), rows(&crossed));
    let by_url =
        |d: &[common::Doc]| d.iter().map(|d| (d.url.clone(), (d.status, d.error.clone()))).collect::<BTreeMap<_, _>>();
    assert_eq!(by_url(&docs), by_url(&docs_off), "same URLs and outcomes");
    assert_eq!(read_links(&crossed).len(), read_links(&waited).len(), "same link rows");
    for url in ["http://faults.test/trickle", "http://faults.test/wait-then-ok"] {
        let d = docs.iter().find(|d| d.url == url).expect("straggler row");
        assert_eq!((d.layer, d.depth, d.status, d.error.as_deref()), (1, 0, 200, None), "{url}");
        let d = docs_off.iter().find(|d| d.url == url).expect("row");
        assert_eq!((d.layer, d.status), (0, 200), "{url}");
    }
    // Politeness held across the barrier: at most two connections to a host
    // (the adopted trickle counted in layer 1), one request for the trickle
    // and one for each try of the pause.
    for st in [&stats, &stats_off] {
        let h = &st.hosts["faults.test"];
        assert_eq!(h.requests, 1 + 1 + 2, "robots.txt, the trickle, the pause twice: {h:?}");
        assert!(st.hosts.values().all(|h| h.crawler_in_flight() <= 2 && h.robots_requests <= 1), "{:?}", st.hosts);
    }
}

#[test]
fn killed_with_stragglers_in_flight_the_crawl_ends_like_an_uninterrupted_one() {
    let web = straggling_web();
    let mut argv = STRAGGLING.to_vec();
    argv.extend(["--straggler-after", "1s"]);
    let args = |data: &std::path::Path| web.run_args(data, 1, &argv);
    let reference = web.dir("reference");
    let t = Instant::now();
    crawl_ok(&args(&reference));
    let whole = t.elapsed();
    let killed = web.dir("killed");
    let mut kills = 0;
    // Layer 0 hands its stragglers over at about 1.1 s; the trickle ends at
    // 2.5 s, the pause at 5 s: kill before, during and after the hand-over.
    for at in [0.6, 1.6, 3.0, 5.5] {
        web.farm.reset_stats();
        kills += usize::from(common::kill_after(&args(&killed), Duration::from_secs_f64(at)));
    }
    assert!(kills >= 3, "only {kills} runs were still going when killed (reference took {:.1} s)", whole.as_secs_f64());
    crawl_ok(&args(&killed));
    let (want, want_links) = snapshot(&reference);
    let (got, got_links) = snapshot(&killed);
    assert_eq!(got, want, "same URLs, layers and statuses after {kills} kills");
    assert_eq!(got_links, want_links, "same link rows");
}

/// SIGTERM (a pod being stopped): the run stops saying so, exit code 143,
/// its lease given back at once; the same command then finishes the crawl
/// as an uninterrupted one would.
#[test]
fn sigterm_stops_the_run_gives_the_lease_back_and_the_same_command_resumes() {
    let cfg = FarmConfig { sites: 4, pages: 60, faults: false, seed: 5, latency_ms: (20, 40), ..FarmConfig::default() };
    let web = Web::start(cfg);
    let args = |data: &std::path::Path| web.run_args(data, 2, &["--delay", "50", "--per-host", "1"]);
    let reference = web.dir("reference");
    crawl_ok(&args(&reference));
    let data = web.dir("stopped");
    let child = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(args(&data))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("crawl");
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: a plain kill(2) of our own child.
    let sent = unsafe { libc::kill(libc::pid_t::try_from(child.id()).expect("pid"), libc::SIGTERM) };
    assert_eq!(sent, 0);
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "{err}");
    assert!(err.contains("stopped by SIGTERM") && err.contains("run the same command again"), "{err}");
    let lease: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("state/lease.json")).expect("the lease")).expect("json");
    assert_eq!(lease["released"], true, "the lease is given back: {lease}");
    crawl_ok(&args(&data));
    let (want, want_links) = snapshot(&reference);
    let (got, got_links) = snapshot(&data);
    assert_eq!(got, want, "same URLs, layers and statuses");
    assert_eq!(got_links, want_links);
}

#[test]
fn without_ca_certificates_the_run_stops_saying_what_to_install() {
    // As in a container image without the ca-certificates package: the TLS
    // verifier finds no certificate where SSL_CERT_FILE and SSL_CERT_DIR say.
    let web = Web::start(FarmConfig { sites: 1, pages: 3, ..FarmConfig::default() });
    let data = web.dir("data");
    let out = common::layercrawl_env(
        &[("SSL_CERT_FILE", "/nonexistent/cert.pem"), ("SSL_CERT_DIR", "/nonexistent/certs")],
        &web.run_args(&data, 0, &[]),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot build the HTTP client"), "{err}");
    assert!(err.contains("no CA certificates were found") && err.contains("ca-certificates"), "{err}");
    assert!(!err.contains("builder error"), "the cause, not reqwest's summary: {err}");
}
