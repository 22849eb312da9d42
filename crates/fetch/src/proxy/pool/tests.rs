use super::*;

/// A pool whose proxies all listen (on loopback listeners kept open).
async fn pool(n: usize, limits: Limits) -> (Arc<Pool>, Vec<tokio::net::TcpListener>) {
    let mut listeners = Vec::new();
    for _ in 0..n {
        listeners.push(tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind"));
    }
    let targets: Vec<String> = listeners.iter().map(|l| l.local_addr().expect("addr").to_string()).collect();
    let names = (0..n).map(|i| format!("p{i}")).collect();
    (Arc::new(Pool::new(names, targets, limits)), listeners)
}

const FREE: Limits = Limits { concurrency: 100, delay: Duration::ZERO, retry: Duration::from_secs(30) };

fn far() -> Instant {
    Instant::now() + Duration::from_secs(5)
}

#[tokio::test]
async fn a_domain_goes_round_its_ring_and_domains_start_apart() {
    let (pool, _l) = pool(3, FREE).await;
    let mut seen = Vec::new();
    for _ in 0..6 {
        let lease = pool.acquire("a.example", "example", &[], far()).await.expect("proxy");
        seen.push(lease.index);
        lease.finish(Verdict::Answered(Duration::from_millis(10)));
    }
    assert_eq!(&seen[..3], &seen[3..], "a ring: {seen:?}");
    let mut first = seen[..3].to_vec();
    first.sort_unstable();
    assert_eq!(first, [0, 1, 2], "every proxy in turn: {seen:?}");
    let starts: std::collections::HashSet<usize> =
        (0..20).map(|d| ring_start(&format!("site{d}.example"), 3)).collect();
    assert_eq!(starts.len(), 3, "domains start on different proxies");
}

#[tokio::test]
async fn the_fastest_proxy_comes_first_in_the_ring() {
    let (pool, _l) = pool(3, FREE).await;
    for (i, ms) in [(0, 90), (1, 10), (2, 40)] {
        pool.finish_for_test(i, ms);
    }
    // A new domain's ring is [1, 2, 0] rotated to its start.
    let start = ring_start("b.example", 3);
    let lease = pool.acquire("b.example", "b.example", &[], far()).await.expect("proxy");
    assert_eq!(lease.index, [1, 2, 0][start]);
}

#[tokio::test]
async fn limits_hold_a_request_until_a_proxy_frees_up() {
    let limits = Limits { concurrency: 1, delay: Duration::from_millis(120), retry: Duration::from_secs(30) };
    let (pool, _l) = pool(1, limits).await;
    let t0 = Instant::now();
    let first = pool.acquire("h", "h", &[], far()).await.expect("proxy");
    let p = Arc::clone(&pool);
    let second = tokio::spawn(async move { p.acquire("h", "h", &[], far()).await.map(|l| (l, Instant::now())) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!second.is_finished(), "concurrency 1: the second waits for the first");
    first.finish(Verdict::Answered(Duration::from_millis(5)));
    let (lease, at) = second.await.expect("task").expect("proxy");
    assert!(at - t0 >= Duration::from_millis(200), "{:?}", at - t0);
    drop(lease);
    let third = pool.acquire("h", "h", &[], far()).await.expect("proxy");
    assert!(Instant::now() - at >= Duration::from_millis(115), "the delay between starts");
    drop(third);
}

// The clock is tokio's, paused: the time outs run out when the test says
// so, whatever else the machine is busy with (a real 200 ms sleep on a
// loaded machine could outlast the 300 ms a proxy stays out).
#[tokio::test(start_paused = true)]
async fn failing_proxies_are_taken_out_checked_and_tried_again() {
    let limits = Limits { concurrency: 10, delay: Duration::ZERO, retry: Duration::from_millis(150) };
    let (pool, _l) = pool(2, limits).await;
    for _ in 0..EVICT_AFTER {
        let lease = pool.acquire("h", "h", &[1], far()).await.expect("proxy");
        assert_eq!(lease.index, 0);
        lease.finish(Verdict::ProxyFailed);
    }
    assert!(!pool.in_service(0));
    for _ in 0..4 {
        let lease = pool.acquire("h", "h", &[], far()).await.expect("proxy");
        assert_eq!(lease.index, 1, "only the healthy one while 0 is out");
        lease.finish(Verdict::Answered(Duration::from_millis(1)));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Time out over: health check (its listener is up), then a trial.
    let lease = pool.acquire("h", "h", &[1], far()).await.expect("proxy 0 on trial");
    assert_eq!(lease.index, 0);
    lease.finish(Verdict::ProxyFailed);
    assert!(!pool.in_service(0), "a failed trial: out again, for twice as long");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(pool.acquire("h", "h", &[1], Instant::now() + Duration::from_millis(50)).await.is_err(), "300 ms now");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let lease = pool.acquire("h", "h", &[1], far()).await.expect("proxy 0 on trial again");
    lease.finish(Verdict::Answered(Duration::from_millis(1)));
    assert!(pool.in_service(0));
    let counts = pool.take_counts(["h"]);
    assert_eq!((counts[0].evictions, counts[0].recoveries, counts[0].failures), (2, 1, 4));
    assert_eq!(counts[1].requests, 4);
}

#[tokio::test]
async fn a_proxy_that_does_not_listen_starts_out_of_service() {
    // Bound and not listening: connections are refused, and the port
    // stays this test's (a port let go could be taken by another test's
    // listener, or be the very port a connection to it goes out from).
    let dead = tokio::net::TcpSocket::new_v4().expect("socket");
    dead.bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let dead_addr = dead.local_addr().expect("addr").to_string();
    let live = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let names = vec!["dead".to_string(), "live".to_string()];
    let pool = Arc::new(Pool::new(names, vec![dead_addr, live.local_addr().expect("addr").to_string()], FREE));
    for _ in 0..3 {
        let lease = pool.acquire("h", "h", &[], far()).await.expect("proxy");
        assert_eq!(lease.index, 1);
        lease.finish(Verdict::Answered(Duration::from_millis(1)));
    }
    assert_eq!(pool.take_counts(["h"])[0].evictions, 1);
    let err = pool.acquire("h", "h", &[1], Instant::now() + Duration::from_millis(20)).await.err().expect("none");
    assert!(err.contains("1 of 2 out of service (dead)") && err.contains("failed on live"), "{err}");
}

impl Pool {
    fn finish_for_test(&self, i: usize, ms: u64) {
        let mut st = self.lock();
        st.slots[i].mean_ms = Some(ms as f64);
        let State { slots, ranking, .. } = &mut *st;
        rank(slots, ranking);
    }
}
