//! The `scaleout` scenario: what the processes executor and object
//! storage cost and give.
//!
//! - `workers`: a latency-bound test web (128 sites, 50-100 ms a response),
//!   crawled to depth 1 (about 6,000 pages) by the processes executor with W = 1, 2, 4 workers,
//!   each task capped at the same `--concurrency` 8. Each partition owns
//!   8 sites on average, 16 connections at `--per-host` 2, so the cap, not
//!   politeness, bounds a task; the politeness bound of the whole web is
//!   128 x 2 connections / 75 ms, far above 4 workers. Runs alternate W,
//!   `SUITE_RUNS` rounds; the speed-up is the median wall time at W = 1
//!   over the median at W.
//! - `s3_cost`: the cpu scenario's crawl into a local folder and onto moto's
//!   S3 server on loopback, alternating, same binary; the ratio of the
//!   medians. moto is a Python server on the same cores, so this bounds
//!   from above what a real object store costs the crawl.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::{crawl, env_u32, median, responses, FarmProcess, Table, CPU_CRAWL, CPU_WEB};

pub(super) fn workers(tmp: &Path, table: &mut Table) {
    let runs = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(&["--sites", "128", "--pages", "20", "--page-kb", "4", "--latency", "50-100"], 128);
    let seeds = farm.write_seeds(tmp, "scaleout-seeds.txt");
    let ws = [1usize, 2, 4];
    let mut walls: Vec<Vec<f64>> = vec![Vec::new(); ws.len()];
    let mut pages = 0.0;
    for run in 0..runs {
        for (i, w) in ws.iter().enumerate() {
            let data = tmp.join(format!("scaleout-w{w}-{run}"));
            let mut args = farm.crawl_args(&seeds, &data, 1);
            args.extend(
                ["--delay", "0", "--per-host", "2", "--concurrency", "8", "--partitions", "16"].map(String::from),
            );
            args.extend(["--executor".into(), "processes".into(), "--workers".into(), w.to_string()]);
            let c = crawl(&args);
            pages = responses(&data.join("doc")) as f64;
            println!("  scaleout W={w} run {run}: {pages} pages in {:.1} s ({:.0} pages/s)", c.wall, pages / c.wall);
            walls[i].push(c.wall);
            let _ = std::fs::remove_dir_all(&data);
        }
    }
    let base = median(walls[0].clone());
    for (i, w) in ws.iter().enumerate() {
        let m = median(walls[i].clone());
        table.add("scaleout", &format!("W={w}: crawl rate"), pages / m, "pages/s");
        table.add("scaleout", &format!("W={w}: speed-up over W=1"), base / m, "ratio");
        table.add("scaleout", &format!("W={w}: speed-up / W"), base / m / *w as f64, "ratio");
    }
    table.add("scaleout", "politeness bound (128 hosts x 2 / 75 ms)", 128.0 * 2.0 / 0.075, "pages/s");
    farm.stop();
}

/// moto's S3 server on loopback, stopped when dropped.
struct Moto {
    child: Child,
    endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn moto(bucket: &str) -> Moto {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash").arg(root.join("scripts/objstores.sh")).output().expect("scripts/objstores.sh");
    assert!(out.status.success(), "scripts/objstores.sh: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let server = text.lines().find_map(|l| l.strip_prefix("MOTO_SERVER=")).expect("MOTO_SERVER").to_string();
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let child = Command::new(&server)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start moto_server");
    let endpoint = format!("http://127.0.0.1:{port}");
    let python = Path::new(&server).parent().expect("venv bin").join("python");
    let started = std::time::Instant::now();
    loop {
        let made = Command::new(&python)
            .arg(root.join("scripts/objstores.py"))
            .args(["mkbucket", "--endpoint", &endpoint, bucket])
            .output()
            .expect("objstores.py");
        if made.status.success() {
            break;
        }
        assert!(started.elapsed().as_secs() < 30, "moto did not start: {}", String::from_utf8_lossy(&made.stderr));
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Moto { child, endpoint }
}

pub(super) fn s3_cost(tmp: &Path, table: &mut Table) {
    let runs = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let seeds = farm.write_seeds(tmp, "s3-seeds.txt");
    let s3 = moto("bench");
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let dir = tmp.join(format!("s3cost-local-{run}"));
        let mut args = farm.crawl_args(&seeds, &dir, 3);
        args.extend(CPU_CRAWL.map(String::from));
        let l = crawl(&args);
        let pages = responses(&dir.join("doc")) as f64;
        let _ = std::fs::remove_dir_all(&dir);
        let url = format!("s3://bench/run-{run}");
        let mut args = farm.crawl_args(&seeds, Path::new(&url), 3);
        args.extend(CPU_CRAWL.map(String::from));
        for (k, v) in [
            ("AWS_ACCESS_KEY_ID", "testing"),
            ("AWS_SECRET_ACCESS_KEY", "testing"),
            ("AWS_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", s3.endpoint.as_str()),
        ] {
            std::env::set_var(k, v);
        }
        let r = crawl(&args);
        println!(
            "  s3 cost run {run}: local {:.1} s, {:.1} CPU s; s3 (moto) {:.1} s, {:.1} CPU s; {pages} pages",
            l.wall, l.cpu, r.wall, r.cpu
        );
        local.push((l.wall, l.cpu));
        remote.push((r.wall, r.cpu));
    }
    let wall = |v: &[(f64, f64)]| median(v.iter().map(|x| x.0).collect());
    let cpu = |v: &[(f64, f64)]| median(v.iter().map(|x| x.1).collect());
    table.add("scaleout", "cpu crawl, local folder: wall", wall(&local), "s");
    table.add("scaleout", "cpu crawl, S3 (moto on loopback): wall", wall(&remote), "s");
    table.add("scaleout", "S3 / local: wall", wall(&remote) / wall(&local), "ratio");
    table.add("scaleout", "S3 / local: crawler CPU", cpu(&remote) / cpu(&local), "ratio");
    farm.stop();
}
