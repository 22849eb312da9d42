use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::resolve::{AddressPolicy, AllowPrivate, ResolveRule};

/// A listener on `ip` that counts the connections it accepts and closes
/// them: the canary an address the crawl may not reach stands for.
pub(crate) async fn canary(ip: &str) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip.parse::<IpAddr>().expect("ip"), 0)).await.expect("bind the canary");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((conn, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            drop(conn);
        }
    });
    (addr, seen)
}

/// An HTTP server on `ip` answering every request `200 hello` and
/// recording the `Host` header of each.
pub(crate) async fn server(ip: &str) -> (SocketAddr, Arc<std::sync::Mutex<Vec<String>>>) {
    let listener = TcpListener::bind((ip.parse::<IpAddr>().expect("ip"), 0)).await.expect("bind the server");
    let addr = listener.local_addr().expect("addr");
    let hosts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = Arc::clone(&hosts);
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let log = Arc::clone(&log);
            tokio::spawn(async move {
                let Ok((raw, _)) = read_head(&mut conn).await else { return };
                let Ok(head) = Head::parse(&raw) else { return };
                let host = head.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case("host")).map(|(_, v)| v.clone());
                log.lock().expect("log").push(host.unwrap_or_default());
                let _ = conn
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 5\r\n\r\nhello")
                    .await;
            });
        }
    });
    (addr, hosts)
}

/// `head` with the relay's secret added after its request line.
fn authed(relay: &Relay, head: &str) -> String {
    use base64::Engine as _;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{}", relay.password()));
    let (line, rest) = head.split_once("\r\n").expect("a request line");
    format!("{line}\r\nProxy-Authorization: Basic {token}\r\n{rest}")
}

/// Sends `head` to the relay at `relay` and reads the whole answer.
async fn ask(relay: SocketAddr, head: &str) -> String {
    let mut conn = TcpStream::connect(relay).await.expect("connect to the relay");
    conn.write_all(head.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn heads_and_authorities_are_read_as_proxies_name_them() {
    assert_eq!(split_authority("a.test:443"), Some(("a.test", 443)));
    assert_eq!(split_authority("[::1]:8080"), Some(("::1", 8080)));
    assert_eq!(split_authority("a.test"), None);
    assert_eq!(split_authority("u@a.test:443"), None);
    let head = Head::parse(b"GET http://a.test/x?y HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: keep-alive\r\n\r\n")
        .expect("head");
    let url = Url::parse(&head.target).expect("url");
    let addr: SocketAddr = "127.0.0.17:8080".parse().expect("addr");
    let direct = request_head(&head, &url, addr, "/x?y", &Upstream::Direct);
    assert_eq!(direct, "GET /x?y HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n");
    let hop =
        ProxyHop::new(&Url::parse("http://127.0.0.1:3128").expect("url"), Some("Basic eA==".into())).expect("hop");
    let proxied = request_head(&head, &url, addr, "/x?y", &Upstream::Proxy(hop));
    assert!(proxied.starts_with("GET http://127.0.0.17:8080/x?y HTTP/1.1\r\nHost: a.test\r\n"), "{proxied}");
    assert!(proxied.contains("Proxy-Authorization: Basic eA==\r\n") && !proxied.contains("Proxy-Connection"));
    let answer = closing(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nX: y\r\n\r\n");
    assert_eq!(answer, b"HTTP/1.1 200 OK\r\nX: y\r\nConnection: close\r\n\r\n");
}

/// Straight to the address: what the policy allows goes through, by name
/// (a `--resolve` rule) or by address; what it refuses is answered 403 and
/// never connected to, whichever form asks for it.
#[tokio::test]
async fn a_direct_relay_reaches_only_what_the_policy_allows() {
    let (allowed, hosts) = server("127.0.0.17").await;
    let (blocked, knocks) = canary("127.0.0.66").await;
    let rules = vec![
        ResolveRule::parse(&format!("site.test={allowed}")).expect("rule"),
        ResolveRule::parse(&format!("canary.test={blocked}")).expect("rule"),
    ];
    let only = AllowPrivate::parse_list("127.0.0.17").expect("list");
    let resolver = PolicyResolver::new(rules, AddressPolicy::new(only));
    let relay = Relay::bind(resolver, Upstream::Direct, Duration::from_secs(2)).expect("bind");
    relay.serve().expect("serve");
    let at = relay.addr();

    let ok = ask(at, &authed(&relay, "GET http://site.test/page HTTP/1.1\r\nHost: site.test\r\n\r\n")).await;
    assert!(ok.starts_with("HTTP/1.1 200") && ok.ends_with("hello") && ok.contains("Connection: close"), "{ok}");
    let ok = ask(at, &authed(&relay, &format!("GET http://{allowed}/ HTTP/1.1\r\nHost: {allowed}\r\n\r\n"))).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert_eq!(*hosts.lock().expect("log"), ["site.test".to_string(), allowed.to_string()]);

    for head in [
        format!("CONNECT {blocked} HTTP/1.1\r\nHost: {blocked}\r\n\r\n"),
        "CONNECT canary.test:443 HTTP/1.1\r\nHost: canary.test:443\r\n\r\n".to_string(),
        format!("GET http://{blocked}/ HTTP/1.1\r\nHost: {blocked}\r\n\r\n"),
        "GET http://canary.test/ HTTP/1.1\r\nHost: canary.test\r\n\r\n".to_string(),
        "CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: x\r\n\r\n".to_string(),
    ] {
        let answer = ask(at, &authed(&relay, &head)).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{head:?}: {answer}");
    }
    let answer = ask(at, &authed(&relay, "GET /direct HTTP/1.1\r\nHost: site.test\r\n\r\n")).await;
    assert!(answer.starts_with("HTTP/1.1 400"), "origin-form: {answer}");
    // A tunnel to the allowed address carries bytes both ways.
    let mut conn = TcpStream::connect(at).await.expect("connect");
    conn.write_all(
        authed(&relay, "CONNECT site.test:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nHost: s\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut out = vec![0u8; 512];
    let mut got = Vec::new();
    while !String::from_utf8_lossy(&got).ends_with("hello") {
        let n =
            tokio::time::timeout(Duration::from_secs(5), conn.read(&mut out)).await.expect("in time").expect("read");
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&out[..n]);
    }
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(knocks.load(Ordering::SeqCst), 0, "the canary was connected to");
}

/// The relay serves its own client only: another process on the machine
/// that asks it without the relay's secret (none, or a wrong one) gets 407
/// and nothing is resolved, connected to or sent on; through an upstream
/// proxy, that proxy is never contacted, so its credentials go nowhere.
#[tokio::test]
async fn a_relay_asked_without_its_secret_answers_407_and_sends_nothing_on() {
    let (allowed, hosts) = server("127.0.0.17").await;
    // The upstream proxy, recording every head it gets.
    let (upstream, asked) = server("127.0.0.18").await;
    let only = AllowPrivate::parse_list("127.0.0.17").expect("list");
    let rules = vec![ResolveRule::parse(&format!("site.test={allowed}")).expect("rule")];
    let direct = Relay::bind(
        PolicyResolver::new(rules.clone(), AddressPolicy::new(only.clone())),
        Upstream::Direct,
        Duration::from_secs(2),
    )
    .expect("bind");
    let hop = ProxyHop::new(
        &Url::parse(&format!("http://{upstream}")).expect("url"),
        Some("Basic dXBzdHJlYW0tc2VjcmV0".into()),
    )
    .expect("hop");
    let proxied =
        Relay::bind(PolicyResolver::new(rules, AddressPolicy::new(only)), Upstream::Proxy(hop), Duration::from_secs(2))
            .expect("bind");
    assert_ne!(direct.password(), proxied.password(), "a secret per relay");
    assert_eq!(direct.password().len(), 64);
    for relay in [&direct, &proxied] {
        relay.serve().expect("serve");
        let wrong = authed(relay, "GET http://site.test/ HTTP/1.1\r\nHost: site.test\r\n\r\n")
            .replace(&relay_token(relay), &relay_token(&direct).chars().rev().collect::<String>());
        for head in [
            "GET http://site.test/ HTTP/1.1\r\nHost: site.test\r\n\r\n".to_string(),
            "CONNECT site.test:443 HTTP/1.1\r\nHost: site.test:443\r\n\r\n".to_string(),
            format!("GET http://{allowed}/ HTTP/1.1\r\nHost: {allowed}\r\nProxy-Authorization: Basic bGF5ZXJjcmF3bDo=\r\n\r\n"),
            wrong,
        ] {
            let answer = ask(relay.addr(), &head).await;
            assert!(answer.starts_with("HTTP/1.1 407") && answer.contains("Proxy-Authenticate: Basic"), "{head:?}: {answer}");
            assert!(!answer.contains("dXBzdHJlYW0tc2VjcmV0") && !answer.contains(relay.password()), "{answer}");
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(hosts.lock().expect("log").is_empty(), "the site was reached");
    assert!(asked.lock().expect("log").is_empty(), "the upstream proxy (and its credentials) was used");
    // With the secret, the same request goes through, without the secret.
    let ok = ask(direct.addr(), &authed(&direct, "GET http://site.test/ HTTP/1.1\r\nHost: site.test\r\n\r\n")).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let ok = ask(proxied.addr(), &authed(&proxied, "GET http://site.test/ HTTP/1.1\r\nHost: site.test\r\n\r\n")).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert_eq!(asked.lock().expect("log").len(), 1, "now through the upstream");
}

/// The `Proxy-Authorization` token of `relay`.
fn relay_token(relay: &Relay) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{}", relay.password()))
}
