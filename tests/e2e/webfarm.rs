//! End-to-end test of the test web over real HTTP on loopback: every fault
//! case fetched with reqwest (name resolution overridden to the farm's
//! port, as a crawler's `--resolve '*.test=127.0.0.1:PORT'` does), the
//! politeness audit read back from the server, the `/__farm` endpoints,
//! latency injection, and every truth page answering.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use testweb::{Farm, FarmConfig, FarmStats, FaultCase, Truth};

/// A client that sends every farm host (and the off-farm `ext.test`) to the farm.
fn client(farm: &Farm, follow: bool, timeout: Duration) -> reqwest::Client {
    let addr: SocketAddr = farm.addr();
    let mut hosts: Vec<String> =
        farm.start_urls().iter().map(|u| u.trim_start_matches("http://").trim_end_matches('/').to_string()).collect();
    hosts.extend(hosts.clone().iter().filter(|h| h.starts_with('s')).map(|h| format!("blog.{h}")));
    hosts.push("ext.test".into());
    layercrawl::store::tls::install_provider();
    let mut b = reqwest::Client::builder().no_proxy().timeout(timeout).redirect(if follow {
        reqwest::redirect::Policy::limited(10)
    } else {
        reqwest::redirect::Policy::none()
    });
    for h in &hosts {
        b = b.resolve(h, addr);
    }
    b.build().expect("client")
}

fn config() -> FarmConfig {
    FarmConfig { sites: 6, pages: 60, slow_ms: 400, log_requests: true, ..FarmConfig::default() }
}

async fn json<T: serde::de::DeserializeOwned>(r: reqwest::Response) -> T {
    serde_json::from_slice(&r.bytes().await.expect("body")).expect("JSON")
}

/// Reads at most `cap` bytes of the body; `Err` when the body broke off.
async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        body.extend_from_slice(&chunk);
        if body.len() > cap {
            return Ok((body, true));
        }
    }
    Ok((body, false))
}

async fn check_case(farm: &Farm, c: &FaultCase) {
    let plain = client(farm, false, Duration::from_secs(5));
    let follow = client(farm, true, Duration::from_secs(5));
    let get = |cl: &reqwest::Client| cl.get(&c.url).send();
    let ten_mib = 10 << 20;
    match c.name.as_str() {
        "redirect_chain" => {
            let r = get(&follow).await.expect("chain");
            assert_eq!((r.status().as_u16(), r.url().as_str()), (200, "http://faults.test/redirect/chain/0"));
        }
        "redirect_too_many" | "redirect_loop" => {
            let e = get(&follow).await.expect_err("redirect error");
            assert!(e.is_redirect(), "{}: {e}", c.name);
        }
        "redirect_no_location" => assert_eq!(get(&follow).await.expect("302").status(), 302),
        "status_503" => {
            let r = get(&plain).await.expect("503");
            assert_eq!((r.status().as_u16(), r.headers()["retry-after"].to_str().expect("ascii")), (503, "2"));
        }
        "status_503_once" => {
            farm.reset_stats();
            let first = get(&plain).await.expect("503");
            assert_eq!((first.status().as_u16(), first.headers()["retry-after"].to_str().expect("ascii")), (503, "1"));
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert_eq!(get(&plain).await.expect("200").status(), 200);
        }
        "slow_headers" => {
            let short = client(farm, false, Duration::from_millis(150));
            assert!(get(&short).await.expect_err("timeout").is_timeout());
            let t = Instant::now();
            assert_eq!(get(&plain).await.expect("slow").status(), 200);
            assert!(t.elapsed() >= Duration::from_millis(400));
        }
        "trickle" => {
            let t = Instant::now();
            let body = get(&plain).await.expect("trickle").text().await.expect("body");
            assert!(t.elapsed() >= Duration::from_millis(390) && body.ends_with("</html>\n"));
        }
        "reset" => {
            let r = get(&plain).await.expect("head arrives");
            assert_eq!(r.content_length(), Some(100_000));
            assert!(read_capped(r, 200_000).await.is_err(), "the body breaks off");
        }
        "too_large" | "too_large_chunked" => {
            let r = get(&plain).await.expect("big");
            assert_eq!(r.content_length().is_some(), c.name == "too_large");
            let (body, capped) = read_capped(r, ten_mib).await.expect("body");
            assert!(capped && body.len() > ten_mib);
        }
        "gzip_bomb" => {
            // reqwest inflates gzip: a capped read stops early instead of inflating 1 GiB.
            let r = get(&plain).await.expect("bomb");
            let (body, capped) = read_capped(r, ten_mib).await.expect("inflate");
            assert!(capped && body.iter().all(|b| *b == 0));
        }
        "wrong_type_html_as_binary" => {
            let r = get(&plain).await.expect("ok");
            assert_eq!(r.headers()["content-type"], "application/octet-stream");
            assert!(r.text().await.expect("text").contains("<title>Mislabelled HTML</title>"));
        }
        "wrong_type_pdf_as_html" | "wrong_type_png_as_html" => {
            let r = get(&plain).await.expect("ok");
            assert!(r.headers()["content-type"].to_str().expect("ascii").starts_with("text/html"));
            let b = r.bytes().await.expect("body");
            assert!(b.starts_with(b"%PDF-") || b.starts_with(b"\x89PNG"));
        }
        "no_content_type" => assert!(get(&plain).await.expect("ok").headers().get("content-type").is_none()),
        "empty_body" => assert!(get(&plain).await.expect("ok").bytes().await.expect("body").is_empty()),
        "robots_500" => {
            assert_eq!(plain.get("http://robots500.test/robots.txt").send().await.expect("robots").status(), 500);
        }
        "crawl_delay" => {
            let robots = plain
                .get("http://crawldelay.test/robots.txt")
                .send()
                .await
                .expect("robots")
                .text()
                .await
                .expect("text");
            assert!(robots.contains("Crawl-delay: 1"));
        }
        "rate_limit_429" => {
            assert_eq!(get(&plain).await.expect("first").status(), 200);
            let second = get(&plain).await.expect("second");
            assert_eq!(
                (second.status().as_u16(), second.headers()["retry-after"].to_str().expect("ascii")),
                (429, "1")
            );
            tokio::time::sleep(Duration::from_millis(150)).await;
            assert_eq!(get(&plain).await.expect("polite").status(), 200);
        }
        "robots_404" => {
            assert_eq!(plain.get("http://norobots.test/robots.txt").send().await.expect("robots").status(), 404)
        }
        name if name.starts_with("charset_") => {
            let r = get(&plain).await.expect("charset page");
            let declared =
                c.expect.split_whitespace().next().and_then(|s| s.strip_prefix("charset=")).expect("charset=LABEL");
            let enc = encoding_rs::Encoding::for_label(declared.as_bytes()).expect("known label");
            let ctype = r.headers()["content-type"].to_str().expect("ascii").to_string();
            assert_eq!(ctype.contains("charset="), name.ends_with("_header"), "{ctype}");
            let body = r.bytes().await.expect("body");
            let (text, _, bad) = enc.decode(&body);
            assert!(!bad && text.contains(c.expect_text.as_deref().expect("snippet")), "{name}");
        }
        name => {
            let want: u16 = match name {
                "status_404" => 404,
                "status_410" => 410,
                "status_500" => 500,
                _ => 200,
            };
            let r = get(&plain).await.expect("response");
            assert_eq!(r.status().as_u16(), want, "{name}");
            if let Some(t) = &c.expect_text {
                assert!(r.text().await.expect("text").contains(t.as_str()), "{name}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_case_over_http() {
    let farm = Farm::start(config()).await.expect("farm");
    let cases = farm.fault_cases();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    for c in &cases {
        check_case(&farm, c).await;
    }
    // Off-farm hosts answer 404, whether named by the Host header or the URL.
    let cl = client(&farm, false, Duration::from_secs(5));
    assert_eq!(cl.get("http://ext.test/story/").send().await.expect("ext").status(), 404);
    let stats = farm.stats();
    assert_eq!(stats.hosts["ext.test"].statuses[&404], 1);
    assert_eq!(stats.hosts["faults.test"].statuses[&503], 1, "503 once since the reset");
    farm.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn politeness_is_measured_by_the_server() {
    let farm = Farm::start(config()).await.expect("farm");
    let cl = client(&farm, false, Duration::from_secs(5));
    // A polite client: robots.txt first, then one request at a time, 60 ms apart.
    let paths = ["/robots.txt", "/", "/about", "/contact"];
    for p in paths {
        assert!(cl.get(format!("http://s001.test{p}")).send().await.expect("get").status().is_success());
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    let s = farm.stats();
    let h = &s.hosts["s001.test"];
    assert_eq!((h.requests, h.robots_requests, h.max_in_flight), (4, 1, 1));
    assert!(h.min_gap_ms.expect("gap") >= 55.0, "{h:?}");
    assert!(h.disallowed_requests.is_empty());
    assert_eq!(h.log.iter().map(|l| l.path.as_str()).collect::<Vec<_>>(), paths);
    assert!(h.log.windows(2).all(|w| w[0].at_ms < w[1].at_ms));
    // An impolite burst: 12 at once, one of them disallowed.
    let slow = FarmConfig { latency_ms: (80, 80), ..config() };
    let farm2 = Farm::start(slow).await.expect("farm with latency");
    let cl2 = client(&farm2, false, Duration::from_secs(5));
    let burst = (0..12).map(|i| {
        let cl2 = cl2.clone();
        let path = if i == 0 { "/private/members".to_string() } else { format!("/tag/x{i}/") };
        async move { cl2.get(format!("http://s002.test{path}")).send().await.expect("burst").status().as_u16() }
    });
    let t = Instant::now();
    let statuses = futures::future::join_all(burst).await;
    assert!(t.elapsed() >= Duration::from_millis(80), "latency is injected");
    assert_eq!(statuses[0], 200, "the members area is served, and recorded");
    let h = &farm2.stats().hosts["s002.test"];
    assert_eq!(h.requests, 12);
    assert!(h.max_in_flight >= 2, "{h:?}");
    assert!(h.min_gap_ms.expect("gap") < 50.0);
    assert_eq!(h.disallowed_requests, vec!["/private/members".to_string()]);
    farm.reset_stats();
    assert_eq!(farm.stats(), FarmStats::default());
}

#[test]
fn endpoints_and_truth_pages_answer() {
    // The synchronous start path, as benches and sync tests use it.
    let farm = Farm::start_background(config()).expect("farm");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let cl = client(&farm, false, Duration::from_secs(10));
        let bare = reqwest::Client::builder().no_proxy().build().expect("client");
        assert_eq!(cl.get("http://s000.test/").send().await.expect("home").status(), 200);
        // /__farm/stats answers on a bare IP:PORT and on any farm host alike.
        let by_ip: FarmStats =
            json(bare.get(format!("http://{}/__farm/stats", farm.addr())).send().await.expect("stats")).await;
        let by_host: FarmStats = json(cl.get("http://s003.test/__farm/stats").send().await.expect("stats")).await;
        assert_eq!(by_ip, by_host, "the endpoints are not counted");
        assert_eq!(by_ip.hosts["s000.test"].requests, 1);
        let truth: Truth =
            json(bare.get(format!("http://{}/__farm/truth?depth=2", farm.addr())).send().await.expect("truth")).await;
        assert_eq!(truth, farm.truth(&farm.start_urls(), 2));
        let one_url = format!("http://{}/__farm/truth?depth=1&seed=http%3A%2F%2Fs001.test%2F", farm.addr());
        let one: Truth = json(bare.get(one_url).send().await.expect("truth")).await;
        assert!(one.pages.keys().all(|u| u.starts_with("http://s001.test/")));
        // Every page the truth lists is served as HTML.
        for url in truth.pages.keys().filter(|u| u.starts_with("http://s00")) {
            let r = cl.get(url).send().await.expect("page");
            assert_eq!(r.status(), 200, "{url}");
            assert!(r.headers()["content-type"].to_str().expect("ascii").starts_with("text/html"));
        }
        // Concurrency: many keep-alive requests at once.
        let urls: Vec<String> = truth.content_pages.keys().take(200).cloned().collect();
        let all = futures::future::join_all(urls.iter().map(|u| cl.get(u).send())).await;
        assert!(all.into_iter().all(|r| r.is_ok_and(|r| r.status() == 200)));
    });
    let links = farm.page_links("http://s000.test/").expect("home links");
    assert!(links.iter().any(|l| l.role.is_noise()) && links.iter().any(|l| !l.role.is_noise()));
    assert!(farm.page_links("http://ext.test/").is_none());
    farm.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_off_serves_only_regular_sites() {
    let farm = Farm::start(FarmConfig { faults: false, ..config() }).await.expect("farm");
    assert!(farm.fault_cases().is_empty());
    assert_eq!(farm.start_urls().len(), 6);
    assert_eq!(farm.resolve_rule(), format!("*.test=127.0.0.1:{}", farm.addr().port()));
    let cl = client(&farm, false, Duration::from_secs(5));
    assert_eq!(cl.get("http://s005.test/").send().await.expect("home").status(), 200);
    let busy = Farm::start(FarmConfig { listen: farm.addr(), ..config() }).await;
    assert!(busy.is_err_and(|e| e.to_string().contains(&farm.addr().to_string())), "a bind error names the address");
}
