//! The cpu scenario: loopback, no latency, the crawl against the machine's
//! limit, and Scrapy beside it.

use super::*;

/// Loopback, no latency: the crawl against the machine's limit, and Scrapy.
pub(super) fn cpu_bound(tmp: &Path, table: &mut Table, ours: bool, peer: bool) {
    let runs = env_u32("SUITE_RUNS", 3).max(1);
    let farm = FarmProcess::start(&CPU_WEB, 50);
    let seeds = farm.write_seeds(tmp, "cpu-seeds.txt");
    let cores = cores();
    let crawl_args = |data: &Path| -> Vec<String> {
        let mut a = farm.crawl_args(&seeds, data, 3);
        a.extend(CPU_CRAWL.map(String::from));
        a
    };
    let mut last_data = None;
    if ours {
        let (mut rate, mut mbs, mut cpu_k, mut rss, mut serve_s) = (vec![], vec![], vec![], vec![], vec![]);
        let mut pages = 0.0;
        for run in 0..runs {
            let data = tmp.join(format!("cpu-{run}"));
            let farm_cpu = farm.cpu_seconds();
            let c = crawl(&crawl_args(&data));
            let farm_cpu = farm.cpu_seconds() - farm_cpu;
            pages = responses(&data.join("doc")) as f64;
            println!("  cpu run {run}: {pages} pages in {:.1} s, crawler {:.1} CPU s, peak RSS {:.0} MB; test web {farm_cpu:.1} CPU s", c.wall, c.cpu, c.rss_mb);
            rate.push(pages / c.wall);
            mbs.push(c.summary["bytes"].as_f64().unwrap_or(0.0) / 1e6 / c.wall);
            cpu_k.push(c.cpu / pages * 1000.0);
            rss.push(c.rss_mb);
            serve_s.push(farm_cpu / pages);
            if let Some(old) = last_data.replace(data) {
                let _ = std::fs::remove_dir_all(old);
            }
        }
        let data = last_data.as_ref().expect("at least one run");
        let parse_s = limit::parse_cost(&data.join("doc"), pages);
        let rows = doc_rows(&data.join("doc"));
        let (store_row, merge_row) = limit::store_cost(&data.join("doc"), rows, tmp);
        let (store_s, merge_s) = (store_row * rows as f64 / pages, merge_row * rows as f64 / pages);
        let rate = median(rate);
        let serve_s = median(serve_s);
        let parse_limit = cores / parse_s;
        let limit = cores / (parse_s + serve_s);
        let s = "cpu";
        table.add(s, "pages crawled (HTTP responses, robots.txt excluded)", pages, "pages");
        table.add(s, "crawl rate", rate, "pages/s");
        table.add(s, "HTML throughput", median(mbs), "MB/s");
        table.add(s, "crawler CPU", median(cpu_k), "CPU s / 1000 pages");
        table.add(s, "crawler peak RSS", max(&rss), "MB");
        table.add(s, "parse + extract, one core, same pages", 1.0 / parse_s, "pages/s");
        table.add(s, "test web CPU per page during the crawl", serve_s * 1e3, "ms");
        table.add(s, &format!("limit: parse alone x {cores} cores"), parse_limit, "pages/s");
        table.add(s, &format!("limit: test web alone x {cores} cores"), cores / serve_s, "pages/s");
        table.add(s, "limit: parse + test web sharing the cores", limit, "pages/s");
        table.add(s, "crawl / limit (parse + test web)", rate / limit, "ratio");
        table.add(s, "crawl / limit (parse alone)", rate / parse_limit, "ratio");
        // What keeping the pages costs, measured the same way: the crawl
        // against parse + store + merge + test web shows what the rest of
        // it (HTTP, scheduling, dedup, batching) adds.
        let kept = cores / (parse_s + store_s + merge_s + serve_s);
        table.add(s, "store: shard writer, one core, same rows", 1.0 / store_s, "pages/s");
        table.add(s, "merge: into the layer file, one core", 1.0 / merge_s, "pages/s");
        table.add(s, "limit: parse + store + merge + test web", kept, "pages/s");
        table.add(s, "crawl / limit (parse + store + merge + test web)", rate / kept, "ratio");
    }
    if peer {
        let python = peers_python();
        let out = tmp.join("scrapy");
        let mut cmd = Command::new(python);
        cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/peers/scrapy_crawl.py"))
            .arg("--seeds")
            .arg(&seeds)
            .args([
                "--proxy",
                &format!("http://{}", farm.addr),
                "--depth",
                "3",
                "--per-host",
                "8",
                "--concurrency",
                "256",
                "--delay-ms",
                "0",
            ])
            .arg("--out")
            .arg(&out);
        let r = run_measured(&mut cmd, &tmp.join("scrapy.out"), &tmp.join("scrapy.err"));
        let summary: Value = last_json_line(&r.stdout)
            .unwrap_or_else(|| panic!("Scrapy printed no summary; its log: {}", r.stderr_tail()));
        let pages = summary["pages"].as_f64().unwrap_or(0.0);
        println!("  scrapy: {pages} pages in {:.1} s, {:.1} CPU s, peak RSS {:.0} MB", r.wall, r.cpu, r.rss_mb);
        let s = "peer";
        table.add(s, "Scrapy pages crawled", pages, "pages");
        table.add(s, "Scrapy crawl rate", pages / r.wall, "pages/s");
        table.add(s, "Scrapy CPU", r.cpu / pages * 1000.0, "CPU s / 1000 pages");
        table.add(s, "Scrapy peak RSS", r.rss_mb, "MB");
        if let (Some(ours), Some(rss)) = (table.get("cpu", "crawl rate"), table.get("cpu", "crawler peak RSS")) {
            table.add(s, "layercrawl / Scrapy, pages/s", ours / (pages / r.wall), "ratio");
            table.add(s, "layercrawl / Scrapy, peak RSS", rss / r.rss_mb, "ratio");
        }
    }
    farm.stop();
}
