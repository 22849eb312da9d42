//! Cross-module unit tests of the test web: generation determinism, the
//! URL space (every emitted link answers), truth invariants, and every
//! fault mode answered through the same function the server uses.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::header::{HeaderMap, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use url::Url;

use super::site::{decode_unreserved, HostId, Page, Route, Special, Variant};
use super::truth::{classify, Target};
use super::*;

fn core(faults: bool) -> Core {
    Core::new(&FarmConfig { sites: 8, pages: 120, faults, slow_ms: 300, ..FarmConfig::default() })
        .expect("valid config")
}

/// Answers `url` as the server would (without the network).
async fn get_with_gap(core: &Core, url: &str, gap: Option<Duration>) -> (u16, HeaderMap, Bytes) {
    let u = Url::parse(url).expect("url");
    let host = core.world.parse_host(u.host_str().expect("host"));
    let decoded = decode_unreserved(u.path());
    let resp = server::answer(core, host, decoded.as_deref().unwrap_or(u.path()), u.query(), gap).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = match resp.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::from_static(b"<<body error>>"),
    };
    (status, headers, body)
}

async fn get(core: &Core, url: &str) -> (u16, HeaderMap, Bytes) {
    get_with_gap(core, url, None).await
}

fn text(b: &Bytes) -> &str {
    std::str::from_utf8(b).expect("utf-8")
}

#[tokio::test]
async fn generation_is_deterministic_per_seed() {
    let a = core(true);
    let b = core(true);
    let other = Core::new(&FarmConfig { sites: 8, pages: 120, seed: 2, ..FarmConfig::default() }).expect("config");
    let urls = ["http://s001.test/", "http://s003.test/tag/", "http://blog.s003.test/"];
    for u in urls.iter().map(|u| u.to_string()).chain(a.start_urls()) {
        assert_eq!(get(&a, &u).await, get(&b, &u).await, "{u}");
    }
    let home_a = get(&a, "http://s001.test/").await.2;
    let home_o = get(&other, "http://s001.test/").await.2;
    assert_ne!(home_a, home_o, "another seed gives another web");
    let ta = a.world.clone();
    let seeds = a.start_urls();
    assert_eq!(truth::compute(&ta, &seeds, 3), truth::compute(&b.world, &seeds, 3));
}

#[test]
fn hosts_parse_in_any_case_with_ports_and_only_if_they_exist() {
    let c = core(true);
    let w = &c.world;
    assert_eq!(w.parse_host("s001.test"), Some(HostId::Site(1)));
    assert_eq!(w.parse_host("S001.TEST:80"), Some(HostId::Site(1)));
    assert_eq!(w.parse_host("blog.s003.test"), Some(HostId::Blog(3)));
    assert_eq!(w.parse_host("blog.s001.test"), None, "site 1 has no blog");
    assert_eq!(w.parse_host("s1.test"), None);
    assert_eq!(w.parse_host("s008.test"), None, "only 8 sites");
    assert_eq!(w.parse_host("ext.test"), None);
    assert_eq!(w.parse_host("faults.test"), Some(HostId::Special(Special::Faults)));
    assert_eq!(core(false).world.parse_host("faults.test"), None, "no fault hosts when faults are off");
    let wide = World::new(1, 1500, 10, false, 8);
    assert_eq!(wide.parse_host("s1499.test"), Some(HostId::Site(1499)));
    assert_eq!(wide.parse_host("s001.test"), None);
}

#[tokio::test]
async fn url_variants_serve_the_same_page() {
    let c = core(true);
    let w = &c.world;
    let host = HostId::Site(0);
    let site = w.site(0);
    let id = 7;
    let canonical = w.canonical_url(host, &Page::Article { id }).expect("canonical");
    let path = canonical.trim_start_matches("http://s000.test");
    let page = get(&c, &canonical).await;
    assert_eq!(page.0, 200);
    for v in [
        format!("{canonical}/"),
        format!("{canonical}?utm_source=x&utm_medium=y"),
        format!("{canonical}?sid=abc"),
        format!("{canonical}#frag"),
    ] {
        assert_eq!(get(&c, &v).await.2, page.2, "{v}");
    }
    let dash = path.find('-').expect("dash") + 1;
    let pct = format!("http://s000.test{}%{:02X}{}", &path[..dash], path.as_bytes()[dash], &path[dash + 1..]);
    assert_eq!(get(&c, &pct).await.2, page.2, "{pct}");
    assert_eq!(get(&c, &format!("http://s000.test/mirror{path}")).await.2, page.2, "mirror is byte-identical");
    let print = get(&c, &format!("{canonical}?print=1")).await;
    assert!(print.2.len() < page.2.len() && text(&print.2).contains("Printed from"));
    let amp = get(&c, &format!("http://s000.test/amp{path}")).await;
    assert!(text(&amp.2).contains("accelerated mobile version"));
    let wrong = get(&c, &format!("http://s000.test/{}/{id}-wrong-slug", site.section_name(site.section_of(id)))).await;
    assert_eq!(
        (wrong.0, wrong.1.get(LOCATION).map(|v| v.to_str().expect("ascii").to_string())),
        (301, Some(canonical.clone()))
    );
    let sec = format!("http://s000.test/{}/", site.section_name(0));
    let list = get(&c, &sec).await.2;
    assert_eq!(get(&c, &sec[..sec.len() - 1]).await.2, list);
    assert_eq!(get(&c, &format!("{sec}index.html")).await.2, list);
    assert_eq!(
        w.route(host, &path[..path.len()], Some("print=1&utm_source=a")),
        Route::Page(Page::Article { id }, Variant::Print)
    );
}

#[tokio::test]
async fn every_link_on_reachable_pages_answers() {
    let c = core(true);
    let seeds = c.start_urls();
    let t = truth::compute(&c.world, &seeds, 3);
    let mut checked = std::collections::HashSet::new();
    for page in t.pages.keys() {
        let links = truth::page_links(&c.world, page).expect("pages have links");
        assert!(!links.is_empty(), "{page}");
        for l in links {
            let mut u = Url::parse(&l.url).expect("resolved");
            u.set_fragment(None);
            if u.scheme() != "http" || !checked.insert(u.to_string()) {
                continue;
            }
            let host = u.host_str().expect("host").to_string();
            assert!(host.ends_with(".test"), "{u} leaves the .test TLD");
            if c.world.parse_host(&host).is_none() {
                continue; // off-farm (ext.test): answers 404 by design
            }
            if matches!(classify(&c.world, &u), Target::Fault) {
                continue; // fault URLs fail on purpose
            }
            let status = get(&c, u.as_str()).await.0;
            // Share links leave for a social network's form, as real ones do.
            let want = if u.query().is_some_and(|q| q.starts_with("share=")) { 301 } else { 200 };
            assert_eq!(status, want, "{u} linked from {page} ({:?})", l.role);
        }
    }
    assert!(checked.len() > 1000, "checked {} URLs", checked.len());
}

#[test]
fn variant_links_never_change_reachability() {
    // A crawler that normalises URL variants must reach the same pages at
    // the same depths as the truth's canonical-only BFS: every variant link
    // comes with a canonical link to the same page on the same page.
    let c = core(true);
    let t = truth::compute(&c.world, &c.start_urls(), 3);
    for page in t.pages.keys() {
        let links = truth::page_links(&c.world, page).expect("links");
        let canon: std::collections::HashSet<String> = links
            .iter()
            .filter_map(|l| Url::parse(&l.url).ok())
            .map(|mut u| {
                u.set_fragment(None);
                u.to_string()
            })
            .collect();
        for l in &links {
            let Ok(mut u) = Url::parse(&l.url) else { continue };
            u.set_fragment(None);
            if let Target::Page { page: p, canonical: Some(cu), .. } = classify(&c.world, &u) {
                if cu != u.as_str() && !matches!(p, Page::Mirror { .. } | Page::Amp { .. }) {
                    assert!(cu == *page || canon.contains(&cu), "{page}: variant {u} without a canonical link to {cu}");
                }
            }
        }
    }
}

#[test]
fn truth_covers_pages_traps_duplicates_and_robots() {
    let c = core(true);
    let seeds = c.start_urls();
    let t = truth::compute(&c.world, &seeds, 3);
    assert_eq!(t.pages["http://s000.test/"], 0);
    assert!(t.pages.contains_key("http://faults.test/"));
    assert!(t.pages.contains_key("http://crawldelay.test/p/1"));
    assert!(!t.pages.contains_key("http://robots500.test/"), "5xx robots.txt disallows the seed itself");
    assert!(t.disallowed.contains(&"http://robots500.test/".to_string()));
    assert!(t.disallowed.contains(&"http://crawldelay.test/hidden/secret".to_string()));
    assert!(t.disallowed.iter().any(|u| u.starts_with("http://s000.test/private/")));
    assert!(!t.disallowed.iter().any(|u| u.starts_with("http://s004.test/")), "s004 has no robots.txt");
    let articles = 8 * 120 + 3 * 12; // and 3 blogs (s000, s003, s006) of 12 posts
    assert!(
        t.content_pages.len() * 10 >= articles * 8,
        "depth 3 reaches most articles: {} of {articles}",
        t.content_pages.len()
    );
    assert!(t.content_pages.keys().all(|u| t.pages.contains_key(u)));
    assert!(t.pages.keys().all(|u| !u.contains("/private/") && !u.contains("/calendar/") && !u.contains("/search")));
    let kinds: Vec<&str> = t.trap_families.iter().map(|f| f.kind.as_str()).collect();
    for k in ["calendar", "deep_path", "facets"] {
        assert!(kinds.contains(&k), "{k} trap within reach");
    }
    let has = |pat: &str| t.duplicate_groups.iter().any(|g| g[1..].iter().any(|u| u.contains(pat)));
    for pat in ["utm_source=", "?print=1", "/index.html", "/mirror/", "?sid="] {
        assert!(has(pat), "a duplicate group with {pat}");
    }
    assert!(
        t.duplicate_groups.iter().any(|g| g[1..].iter().any(|u| u.ends_with('/') && g[0].ends_with(&u[..u.len() - 1]))),
        "trailing slash variant"
    );
    assert!(t.near_duplicates.iter().any(|g| g[1].contains("/amp/")));
    assert!(t.near_duplicates.iter().any(|g| !g[1].contains("/amp/")), "syndicated near-copies");
    for g in &t.duplicate_groups {
        assert!(
            g.len() >= 2 && t.pages.contains_key(&g[0]),
            "group {:?} starts with its canonical page",
            &g[..g.len().min(4)]
        );
    }
    let shallow = truth::compute(&c.world, &["http://s002.test/".to_string()], 1);
    assert!(shallow.pages.values().all(|d| *d <= 1));
    assert!(shallow.pages.keys().all(|u| u.starts_with("http://s002.test/")), "scope is the seed's registrable domain");
}

#[test]
fn link_roles_and_article_text_ratio() {
    let c = core(false);
    let w = &c.world;
    for id in [0, 17, 64, 119] {
        let url = w.canonical_url(HostId::Site(2), &Page::Article { id }).expect("url");
        let links = truth::page_links(w, &url).expect("links");
        let content = links.iter().filter(|l| !l.role.is_noise() && l.role != LinkRole::Resource).count();
        assert!((2..=7).contains(&content), "{url}: {content} content links");
        assert!(links.iter().filter(|l| l.role == LinkRole::Sidebar).count() >= 8);
        for role in [LinkRole::Header, LinkRole::Footer, LinkRole::Breadcrumb, LinkRole::Pagination, LinkRole::TagCloud]
        {
            assert!(links.iter().any(|l| l.role == role), "{url} has a {role:?} link");
        }
        // Link-text ratio of the article body: anchor text over all text.
        let html = pages::render(w, HostId::Site(2), Page::Article { id }, Variant::Canonical, None, None).out;
        let body = &html[html.find("</figure>").expect("figure")..html.find("<div class=\"tags\">").expect("tags")];
        let (mut all, mut anchor, mut in_a, mut in_tag) = (0usize, 0usize, false, false);
        let mut rest = body;
        while let Some(ch) = rest.chars().next() {
            if rest.starts_with("<a ") {
                in_a = true;
            } else if rest.starts_with("</a>") {
                in_a = false;
            }
            match ch {
                '<' => in_tag = true,
                '>' => in_tag = false,
                _ if !in_tag => {
                    all += 1;
                    anchor += usize::from(in_a);
                }
                _ => {}
            }
            rest = &rest[ch.len_utf8()..];
        }
        assert!(anchor * 8 < all, "{url}: link text {anchor} of {all}");
        let kb = html.len() / 1024;
        assert!((6..=12).contains(&kb), "{url}: {kb} KiB for page_kb 8");
    }
    let big = World::new(1, 3, 20, false, 32);
    let html = pages::render(&big, HostId::Site(0), Page::Article { id: 3 }, Variant::Canonical, None, None).out;
    assert!((30..=40).contains(&(html.len() / 1024)), "{} bytes for page_kb 32", html.len());
}

#[test]
fn traps_go_on_forever() {
    let c = core(false);
    let w = &c.world;
    // s001 calendar, s002 deep path, s003 facets.
    let cal = truth::page_links(w, "http://s001.test/calendar/2024/06/").expect("calendar");
    assert!(cal.iter().any(|l| l.url == "http://s001.test/calendar/2024/07/"));
    assert!(truth::page_links(w, "http://s001.test/calendar/3012/01/").is_some());
    let deep = truth::page_links(w, "http://s002.test/docs/a/a/").expect("docs");
    assert!(deep.iter().any(|l| l.url == "http://s002.test/docs/a/a/a/"));
    let long = format!("http://s002.test/docs/{}", "a/".repeat(500));
    assert!(truth::page_links(w, &long).is_some());
    let f = truth::page_links(w, "http://s003.test/search?color=red").expect("facets");
    assert!(f.iter().any(|l| l.url == "http://s003.test/search?color=red&size=m"));
    assert!(f.iter().any(|l| l.url == "http://s003.test/search?color=red&page=2"));
    assert!(truth::page_links(w, "http://s000.test/calendar/2024/06/").is_none(), "s000 has no calendar");
}

#[tokio::test]
async fn robots_files() {
    let c = core(true);
    let site = get(&c, "http://s000.test/robots.txt").await;
    assert!(text(&site.2).contains("Disallow: /private/") && !text(&site.2).contains("Crawl-delay"));
    assert_eq!(get(&c, "http://s004.test/robots.txt").await.0, 404, "every fifth site has none");
    assert_eq!(get(&c, "http://robots500.test/robots.txt").await.0, 500);
    assert_eq!(get(&c, "http://norobots.test/robots.txt").await.0, 404);
    assert!(text(&get(&c, "http://crawldelay.test/robots.txt").await.2).contains("Crawl-delay: 1"));
    assert!(text(&get(&c, "http://faults.test/robots.txt").await.2).contains("Disallow:\n"));
    assert_eq!(get(&c, "http://ext.test/").await.0, 404, "off-farm hosts answer 404");
}

#[tokio::test]
async fn resources_have_their_content_types() {
    let c = core(false);
    for (path, ctype, magic) in [
        ("/static/site.css", "text/css", &b"body"[..]),
        ("/static/app.js", "application/javascript", b"document"),
        ("/img/3.jpg", "image/jpeg", b"\xFF\xD8"),
        ("/img/3.png", "image/png", b"\x89PNG"),
        ("/files/3.pdf", "application/pdf", b"%PDF-"),
        ("/feed.xml", "application/rss+xml", b"<?xml"),
    ] {
        let (s, h, b) = get(&c, &format!("http://s000.test{path}")).await;
        assert_eq!(s, 200);
        assert!(h[CONTENT_TYPE].to_str().expect("ascii").starts_with(ctype), "{path}");
        assert!(b.starts_with(magic), "{path}");
    }
}

#[tokio::test]
async fn every_fault_answers_as_documented() {
    let c = core(true);
    let f = |p: &str| format!("http://faults.test{p}");
    let header =
        |h: &HeaderMap, k| h.get(k).map(|v: &hyper::header::HeaderValue| v.to_str().expect("ascii").to_string());
    assert_eq!(get(&c, &f("/ok")).await.0, 200);
    // Redirect chain of 3: 307 absolute, 303 relative, 302 absolute, then 200.
    let hop = get(&c, &f("/redirect/chain/3")).await;
    assert_eq!((hop.0, header(&hop.1, LOCATION).as_deref()), (307, Some("http://faults.test/redirect/chain/2")));
    let hop = get(&c, &f("/redirect/chain/2")).await;
    assert_eq!((hop.0, header(&hop.1, LOCATION).as_deref()), (303, Some("1")));
    assert_eq!(get(&c, &f("/redirect/chain/0")).await.0, 200);
    assert!(matches!(get(&c, &f("/redirect/chain/15")).await.0, 301..=308));
    assert_eq!(get(&c, &f("/redirect/chain/51")).await.0, 404);
    assert_eq!(header(&get(&c, &f("/redirect/loop/a")).await.1, LOCATION).as_deref(), Some("/redirect/loop/b"));
    assert_eq!(
        header(&get(&c, &f("/redirect/loop/b")).await.1, LOCATION).as_deref(),
        Some("http://faults.test/redirect/loop/a")
    );
    let nolocation = get(&c, &f("/status/302")).await;
    assert_eq!((nolocation.0, nolocation.1.get(LOCATION)), (302, None));
    for code in [404, 410, 500] {
        assert_eq!(get(&c, &f(&format!("/status/{code}"))).await.0, code);
    }
    let r503 = get(&c, &f("/503")).await;
    assert_eq!((r503.0, header(&r503.1, RETRY_AFTER).as_deref()), (503, Some("2")));
    assert_eq!(get(&c, &f("/503")).await.0, 503, "always");
    let first = get(&c, &f("/503-once")).await;
    assert_eq!((first.0, header(&first.1, RETRY_AFTER).as_deref()), (503, Some("1")));
    assert_eq!(get(&c, &f("/503-once")).await.0, 200);
    c.reset();
    assert_eq!(get(&c, &f("/503-once")).await.0, 503, "a stats reset re-arms it");
    let t = Instant::now();
    assert_eq!(get(&c, &f("/slow-headers")).await.0, 200);
    assert!(t.elapsed() >= Duration::from_millis(300));
    let t = Instant::now();
    let trickle = get(&c, &f("/trickle")).await;
    assert!(t.elapsed() >= Duration::from_millis(290) && text(&trickle.2).ends_with("</html>\n"));
    let reset = get(&c, &f("/reset")).await;
    assert_eq!((header(&reset.1, CONTENT_LENGTH).as_deref(), &reset.2[..]), (Some("100000"), &b"<<body error>>"[..]));
    let big = get(&c, &f("/big")).await;
    assert!(big.2.len() > 11 << 20 && header(&big.1, CONTENT_LENGTH) == Some(big.2.len().to_string()));
    let chunked = get(&c, &f("/big-chunked")).await;
    assert!(chunked.2.len() > 11 << 20 && chunked.1.get(CONTENT_LENGTH).is_none());
    let bomb = get(&c, &f("/gzip-bomb")).await;
    assert_eq!(header(&bomb.1, CONTENT_ENCODING).as_deref(), Some("gzip"));
    assert!(bomb.2.len() < 2 << 20 && bomb.2.starts_with(&[0x1f, 0x8b]));
    let bin = get(&c, &f("/wrong-type/html-as-binary")).await;
    assert_eq!(header(&bin.1, CONTENT_TYPE).as_deref(), Some("application/octet-stream"));
    assert!(text(&bin.2).contains("<title>Mislabelled HTML</title>"));
    let pdf = get(&c, &f("/wrong-type/pdf-as-html")).await;
    assert!(header(&pdf.1, CONTENT_TYPE).is_some_and(|t| t.starts_with("text/html")) && pdf.2.starts_with(b"%PDF-"));
    let png = get(&c, &f("/wrong-type/png-as-html")).await;
    assert!(header(&png.1, CONTENT_TYPE).is_some_and(|t| t.starts_with("text/html")) && png.2.contains(&0));
    assert!(text(&get(&c, &f("/malformed")).await.2).contains("This text survives the broken markup"));
    assert!(get(&c, &f("/no-content-type")).await.1.get(CONTENT_TYPE).is_none());
    assert!(get(&c, &f("/empty")).await.2.is_empty());
    // Rate limiting depends only on the gap the server measured.
    assert_eq!(get_with_gap(&c, "http://ratelimit.test/p/1", Some(Duration::from_millis(30))).await.0, 429);
    assert_eq!(
        header(&get_with_gap(&c, "http://ratelimit.test/p/1", Some(Duration::from_millis(30))).await.1, RETRY_AFTER)
            .as_deref(),
        Some("1")
    );
    assert_eq!(get_with_gap(&c, "http://ratelimit.test/p/1", Some(Duration::from_millis(150))).await.0, 200);
    assert_eq!(
        get_with_gap(&c, "http://ratelimit.test/robots.txt", Some(Duration::ZERO)).await.0,
        200,
        "robots.txt is never limited"
    );
    for (enc, label) in [("win1252", "windows-1252"), ("gbk", "GBK"), ("sjis", "Shift_JIS")] {
        let (s, h, b) = get(&c, &format!("http://charset.test/{enc}/header")).await;
        assert_eq!((s, header(&h, CONTENT_TYPE)), (200, Some(format!("text/html; charset={label}"))));
        assert!(std::str::from_utf8(&b).is_err());
        assert_eq!(
            header(&get(&c, &format!("http://charset.test/{enc}/meta")).await.1, CONTENT_TYPE).as_deref(),
            Some("text/html")
        );
        assert_eq!(
            header(&get(&c, &format!("http://charset.test/{enc}/none")).await.1, CONTENT_TYPE).as_deref(),
            Some("text/html")
        );
    }
}

#[tokio::test]
async fn fault_cases_cover_every_fault_url() {
    let c = core(true);
    let cases = faults::cases(&c.world);
    let names: std::collections::HashSet<&str> = cases.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "names are unique");
    for n in [
        "redirect_loop",
        "gzip_bomb",
        "too_large",
        "reset",
        "rate_limit_429",
        "robots_500",
        "crawl_delay",
        "charset_sjis_none",
    ] {
        assert!(names.contains(n), "{n}");
    }
    for k in &cases {
        let u = Url::parse(&k.url).expect("case url");
        assert!(c.world.parse_host(u.host_str().expect("host")).is_some(), "{}", k.url);
    }
    assert!(cases.iter().filter(|k| k.name.starts_with("charset_")).all(|k| k.expect_text.is_some()));
    assert!(faults::cases(&core(false).world).is_empty());
    let home = text(&get(&c, "http://faults.test/").await.2).to_string();
    for (path, _, _) in FAULT_PATHS {
        assert!(home.contains(&format!("href=\"{path}\"")), "faults.test/ links {path}");
    }
}

use faults::FAULT_PATHS;

/// The forward proxies reach the web for plain requests and CONNECT
/// tunnels, count what went through each, and answer 502 when down.
#[tokio::test]
async fn proxies_forward_count_and_fail_on_demand() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let farm = Farm::start(FarmConfig { sites: 1, pages: 5, faults: false, proxies: 2, ..FarmConfig::default() })
        .await
        .expect("farm");
    let proxies = farm.proxy_addrs();
    assert_eq!(proxies.len(), 2);
    let ask = |addr: std::net::SocketAddr, head: String| async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(head.as_bytes()).await.expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    };
    // A plain request in absolute form, through proxy 0.
    let plain =
        ask(proxies[0], "GET http://s000.test/ HTTP/1.1\r\nHost: s000.test\r\nConnection: close\r\n\r\n".into()).await;
    assert!(plain.starts_with("HTTP/1.1 200") && plain.contains("<html"), "{}", &plain[..plain.len().min(200)]);
    // A tunnel through proxy 1, then a request inside it.
    let mut s = tokio::net::TcpStream::connect(proxies[1]).await.expect("connect");
    s.write_all(b"CONNECT s000.test:80 HTTP/1.1\r\nHost: s000.test:80\r\n\r\n").await.expect("connect line");
    let mut head = [0u8; 19];
    s.read_exact(&mut head).await.expect("tunnel answer");
    assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
    let mut rest = [0u8; 2];
    let _ = s.read_exact(&mut rest).await; // the head's closing CRLF
    s.write_all(b"GET /robots.txt HTTP/1.1\r\nHost: s000.test\r\nConnection: close\r\n\r\n").await.expect("inside");
    let mut inside = Vec::new();
    let _ = s.read_to_end(&mut inside).await;
    let inside = String::from_utf8_lossy(&inside);
    assert!(inside.contains("200 OK") && inside.contains("User-agent"), "{inside}");
    // Down: 502, counted as refused, not forwarded.
    farm.set_proxy_down(0, true);
    let refused =
        ask(proxies[0], "GET http://s000.test/ HTTP/1.1\r\nHost: s000.test\r\nConnection: close\r\n\r\n".into()).await;
    assert!(refused.starts_with("HTTP/1.1 502"), "{refused}");
    let stats = farm.proxy_stats();
    assert_eq!((stats[0].requests, stats[0].refused, stats[0].tunnels), (1, 1, 0));
    assert_eq!(stats[0].hosts.get("s000.test"), Some(&1));
    assert_eq!((stats[1].requests, stats[1].tunnels), (0, 1));
    // The web counted both requests that reached it as its own.
    assert_eq!(farm.stats().hosts["s000.test"].requests, 2);
}
