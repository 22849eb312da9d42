//! Rendering in headless Chromium (docs/src/rendering.md): the test web's
//! script-built pages (`/app/`, links made by a script from a JSON answer)
//! crawled with `--render never`, `auto` and `always`, in a real Chromium
//! (Debian's, installed by scripts/chromium.sh).

use crate::common;

mod devtools;

use common::{crawl_ok, read_docs, Web};
use testweb::{Farm, FarmConfig};

/// A two-site web with applications; the seeds are the applications.
fn web() -> Web {
    web_seeded("/app/")
}

/// The same web, seeded with the page at `path` of both sites.
fn web_seeded(path: &str) -> Web {
    let cfg = FarmConfig {
        sites: 2,
        pages: 12,
        faults: false,
        apps: true,
        log_requests: true,
        seed: 31,
        ..FarmConfig::default()
    };
    let farm = Farm::start_background(cfg).expect("test web");
    let seeds: Vec<String> = ["s000", "s001"].iter().map(|s| format!("http://{s}.test{path}")).collect();
    Web::with_seeds(farm, &seeds)
}

/// Requests the web saw for `path` on the two sites.
fn asked(web: &Web, path: &str) -> usize {
    let stats = web.farm.stats();
    ["s000.test", "s001.test"]
        .iter()
        .filter_map(|h| stats.hosts.get(*h))
        .map(|h| h.log.iter().filter(|r| r.path == path).count())
        .sum()
}

#[test]
fn script_built_links_are_reached_with_auto_and_not_with_never() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let items = |docs: &[common::Doc]| docs.iter().filter(|d| d.url.contains("/app/item/")).count();

    let data = web.dir("never");
    let summary = crawl_ok(&web.run_args(&data, 1, &["--delay", "0", "--render", "never"]));
    let docs = read_docs(&data);
    assert_eq!(items(&docs), 0, "no links without scripts: {summary}");
    assert!(docs.iter().all(|d| !d.rendered));
    assert_eq!(asked(&web, "/app/app.js"), 0, "nothing but the page was asked");

    web.farm.reset_stats();
    let data = web.dir("auto");
    let args = ["--delay", "150", "--delay-factor", "0", "--render", "auto", "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    assert_eq!(items(&docs), 16, "the 8 items of each site, reached through the script's links: {summary}");
    let shells: Vec<_> = docs.iter().filter(|d| d.url.ends_with("/app/")).collect();
    assert_eq!(shells.len(), 2);
    for shell in &shells {
        assert!(shell.rendered, "{}: a script shell is rendered with auto", shell.url);
        let text = shell.text.as_deref().unwrap_or("");
        assert!(text.contains("Catalogue of site"), "the text of the DOM the script built: {text:?}");
    }
    assert!(docs.iter().filter(|d| d.url.contains("/app/item/")).all(|d| !d.rendered), "plain pages are not rendered");
    // Rendered in the first layer, or in the next when a render outlasts
    // the layer's tail and its request is handed over (a loaded machine).
    assert_eq!(rendered_in_all_layers(&summary), 2, "{summary}");
    // The script and its data came through the crawler, once per site;
    // the image and the style sheet were never asked for.
    assert_eq!((asked(&web, "/app/app.js"), asked(&web, "/app/items.json")), (2, 2));
    assert_eq!((asked(&web, "/app/logo.png"), asked(&web, "/app/app.css")), (0, 0));
    // Politeness covers the subresources: 150 ms between any two requests to a host.
    let stats = web.farm.stats();
    for h in ["s000.test", "s001.test"] {
        if let Err(e) = stats.hosts[h].spaced(150.0) {
            panic!("{h}: {e}");
        }
    }

    web.farm.reset_stats();
    let data = web.dir("always");
    let args = ["--delay", "0", "--render", "always", "--render-max", "5", "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    let rendered = docs.iter().filter(|d| d.rendered).count();
    assert_eq!(rendered, 5, "always renders every HTML page, up to the budget: {summary}");
    assert_eq!(items(&docs), 16, "{summary}");
}

fn rendered_in_all_layers(summary: &serde_json::Value) -> u64 {
    summary["layers"].as_array().into_iter().flatten().filter_map(|l| l["rendered"].as_u64()).sum()
}

/// A page that never stops changing (a ticker) is taken once its network
/// has been quiet and its DOM watched for a while, not at the render
/// timeout: the render log says it settled, and the list its script
/// built is read.
#[test]
fn a_page_that_never_stops_changing_is_taken_before_the_render_timeout() {
    let web = web_seeded("/app/ticker/");
    let browser = common::chromium().display().to_string();
    let data = web.dir("data");
    let extra = ["--delay", "0", "--delay-factor", "0", "--render", "always", "--render-timeout", "30s"];
    let args = web.run_args(&data, 0, &[&extra[..], &["--chromium", &browser]].concat());
    let out = common::layercrawl_env(&[("RUST_LOG", "layercrawl_fetch::render=debug")], &args);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    for site in ["s000", "s001"] {
        let seed = format!("http://{site}.test/app/ticker/");
        assert!(log.contains(&format!("{seed}: settled")), "{seed} settled before the timeout: {log}");
    }
    assert!(!log.contains("not settled within"), "{log}");
    let docs = read_docs(&data);
    assert_eq!(docs.len(), 2);
    for d in &docs {
        assert!(d.rendered && d.text.as_deref().unwrap_or("").contains("Catalogue of site"), "{}", d.url);
    }
}

/// A script that works on after the network went quiet (here, 400 ms of
/// its main thread between the answer to its request and reading it; on
/// a loaded machine, any script): the DOM is read once the page is idle
/// and has stopped changing, not when its last request was answered.
#[test]
fn a_page_whose_script_works_after_its_last_request_is_read_when_done() {
    let web = web_seeded("/app/busy/");
    let browser = common::chromium().display().to_string();
    let data = web.dir("data");
    let args = ["--delay", "0", "--delay-factor", "0", "--render", "always", "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    for shell in docs.iter().filter(|d| d.url.ends_with("/app/busy/")) {
        assert!(shell.rendered, "{}: {summary}", shell.url);
        assert!(shell.text.as_deref().unwrap_or("").contains("Catalogue of site"), "{}: the built list", shell.url);
    }
    let items = docs.iter().filter(|d| d.url.contains("/app/item/")).count();
    assert_eq!(items, 16, "the 8 items of each site, from the lists the scripts built: {summary}");
}

#[test]
fn a_rule_with_render_renders_its_pages_only() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let rules = web.dir("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nname = \"catalogue\"\nurls = [\"http://s000.test/app/\"]\nrole = \"nav\"\nrender = true\n",
    )
    .expect("write the rules");
    let data = web.dir("data");
    let args = ["--delay", "0", "--rules", &rules.display().to_string(), "--chromium", &browser];
    let summary = crawl_ok(&web.run_args(&data, 1, &args));
    let docs = read_docs(&data);
    let reached =
        |site: &str| docs.iter().filter(|d| d.url.starts_with(&format!("http://{site}.test/app/item/"))).count();
    assert_eq!((reached("s000"), reached("s001")), (8, 0), "only the rule's page is rendered: {summary}");
    let rendered: Vec<&str> = docs.iter().filter(|d| d.rendered).map(|d| d.url.as_str()).collect();
    assert_eq!(rendered, ["http://s000.test/app/"]);
}

/// The processes of Chromium descended from process `root` (other tests
/// run browsers of their own at the same time): pid, command line,
/// environment, real uid. `family` holds the descendants seen so far and
/// grows with each call, so a process is known by its parent even after
/// that parent has gone.
fn chromium_processes(root: u32, family: &mut std::collections::BTreeSet<u32>) -> Vec<(u32, String, String, u32)> {
    family.insert(root);
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            // `pid (comm) state ppid ...`: the command may hold spaces and parentheses.
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    // A process that has ended leaves (its number may be given again).
    family.retain(|p| *p == root || parents.iter().any(|(q, _)| q == p));
    // Parents come before their children in no particular order: repeat
    // until no new descendant turns up.
    while parents.iter().fold(false, |grew, &(pid, ppid)| (family.contains(&ppid) && family.insert(pid)) || grew) {}
    let mut out = Vec::new();
    for &pid in family.iter() {
        let dir = std::path::PathBuf::from(format!("/proc/{pid}"));
        let read = |f: &str| std::fs::read(dir.join(f)).map(|b| String::from_utf8_lossy(&b).replace('\0', " "));
        let Ok(cmd) = read("cmdline") else { continue };
        if !cmd.contains("chromium") || !cmd.contains("remote-debugging") {
            continue;
        }
        let env = read("environ").unwrap_or_default();
        let uid = read("status")
            .ok()
            .and_then(|s| {
                s.lines().find(|l| l.starts_with("Uid:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            })
            .unwrap_or(u32::MAX);
        out.push((pid, cmd, env, uid));
    }
    out
}

/// The browser runs other people's scripts: it gets none of the crawler's
/// environment (where a worker keeps its store's credentials), and its
/// sandbox stays on (as root, it runs as an unprivileged user instead).
#[test]
fn chromium_gets_none_of_the_crawlers_environment_and_keeps_its_sandbox() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let data = web.dir("canary");
    let args =
        web.run_args(&data, 1, &["--delay", "0", "--render", "always", "--render-max", "4", "--chromium", &browser]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&args)
        .env("AWS_SECRET_ACCESS_KEY", "canary-4f1d2e-secret")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("crawl");
    let mut seen = std::collections::BTreeMap::new();
    let mut family = std::collections::BTreeSet::new();
    while child.try_wait().expect("wait").is_none() {
        for (pid, cmd, env, uid) in chromium_processes(child.id(), &mut family) {
            seen.insert(pid, (cmd, env, uid));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().expect("wait").success());
    // Only this crawl's browser counts (the processes descended from it,
    // with the profile folder its launcher gives).
    let ours: Vec<_> = seen.values().filter(|(cmd, _, _)| cmd.contains("--user-data-dir=/")).collect();
    assert!(!ours.is_empty(), "no Chromium process seen during the crawl");
    let canary = ours.iter().filter(|(_, env, _)| env.contains("canary-4f1d2e")).count();
    assert_eq!(canary, 0, "the crawler's secret reached Chromium's environment");
    let root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0")));
    // (Chromium's child processes write their titles over their
    // environment; the browser process keeps the one it was given.)
    assert!(ours.iter().any(|(_, env, _)| env.contains("LANG=C.UTF-8") && env.contains("TMPDIR=")), "the launcher's");
    for (cmd, _, uid) in &ours {
        assert!(!cmd.contains("--no-sandbox"), "sandbox kept on: {cmd}");
        // (u32::MAX: it ended before its status was read, as the browser
        // the run starts to check its sandbox does at once.)
        if root && *uid != u32::MAX {
            assert_eq!(*uid, 65_534, "as root, Chromium runs as nobody: {cmd}");
        }
    }
}

/// The relay that carries Chromium's own traffic serves that browser only:
/// during a rendering crawl, another process (curl) that uses it as its
/// proxy gets 407, and its request reaches no site.
#[test]
fn another_process_gets_407_from_the_browsers_relay_and_nothing_through() {
    let web = web();
    let browser = common::chromium().display().to_string();
    let data = web.dir("relay");
    let args = web.run_args(&data, 1, &["--delay", "400", "--render", "always", "--chromium", &browser]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_layercrawl"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("crawl");
    let mut family = std::collections::BTreeSet::new();
    let mut answers = std::collections::BTreeMap::<String, u32>::new();
    while child.try_wait().expect("wait").is_none() {
        let ports: std::collections::BTreeSet<String> = chromium_processes(child.id(), &mut family)
            .into_iter()
            .filter_map(|(_, cmd, _, _)| {
                let at = cmd.find("--proxy-server=http://127.0.0.1:")? + "--proxy-server=http://".len();
                Some(cmd[at..].split_whitespace().next()?.to_string())
            })
            .collect();
        for proxy in ports {
            let out = std::process::Command::new("curl")
                .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-A", "another-process", "-x"])
                .arg(format!("http://{proxy}"))
                .arg("http://s000.test/app/")
                .output()
                .expect("curl");
            // 000: the relay of a browser that just ended (the start check's).
            *answers.entry(String::from_utf8_lossy(&out.stdout).into_owned()).or_default() += 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(child.wait().expect("wait").success());
    assert!(answers.get("407").is_some_and(|n| *n > 0), "the relay was asked during the crawl: {answers:?}");
    assert!(answers.keys().all(|code| code == "407" || code == "000"), "only 407s: {answers:?}");
    let stats = web.farm.stats();
    let through =
        stats.hosts.values().flat_map(|h| h.log.iter()).filter(|r| r.agent.as_deref() == Some("another-process"));
    assert_eq!(through.count(), 0, "a request of another process went through the relay");
    assert!(read_docs(&data).iter().any(|d| d.rendered), "the crawl rendered its pages");
}

/// `layercrawl ARGS` as the shipped worker pod runs it (docs/src/security.md):
/// a non-root user (65534) with no new privileges, `restricted` taking away
/// user namespaces as a seccomp profile that forbids them does (a user
/// namespace whose limit of nested ones is spent: the crawler sees itself
/// as 65534, and the files of the test's user as its own).
fn as_the_pod(args: &[String], restricted: bool, rust_log: &str) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_layercrawl");
    let mut cmd = std::process::Command::new(if restricted { "unshare" } else { "setpriv" });
    if restricted {
        cmd.args(["-U", "-r", "sh", "-c"]).arg(
            "echo 1 > /proc/sys/user/max_user_namespaces && exec unshare -U --map-user=65534 --map-group=65534 setpriv --no-new-privs \"$0\" \"$@\"",
        );
    } else {
        cmd.args(["--no-new-privs", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    }
    cmd.arg(bin).args(args).env("RUST_LOG", rust_log).output().expect("run layercrawl as the pod would")
}

/// No silent fallback to an unsandboxed browser: run as the worker pod
/// runs (non-root, no new privileges), rendering is sandboxed where the
/// kernel gives the sandbox what it needs, refused at start (exit 2, one
/// line naming --render-no-sandbox) where it does not, and unsandboxed only
/// when asked, with a warning.
#[test]
fn rendering_is_sandboxed_or_refused_never_silently_unsandboxed() {
    let web = web();
    let browser = common::chromium().display().to_string();
    // A generous render timeout: a page that times out is kept as fetched,
    // and the test asks that some page was rendered (on a CI machine busy
    // with the other feature tests, the default once let both pages go).
    let flags =
        ["--delay", "0", "--render", "always", "--render-max", "2", "--render-timeout", "60s", "--chromium", &browser];
    let unsandboxed = |err: &str| err.contains("WITHOUT its sandbox") || err.contains("rendering without it");

    // No user namespaces: refused, before anything is written.
    let data = web.dir("refused");
    let out = as_the_pod(&web.run_args(&data, 1, &flags), true, "warn");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!unsandboxed(&err), "Chromium ran without its sandbox, unasked: {err}");
    assert_eq!(out.status.code(), Some(2), "refused at start: {err}");
    let said: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(said.len(), 1, "one line says why: {err}");
    assert!(said[0].contains("sandbox") && said[0].contains("--render-no-sandbox"), "and what to change: {err}");
    assert!(!data.join("doc").exists() && !data.join("state/lease.json").exists(), "nothing written: {err}");

    // Asked for: rendered without it, and told so.
    let data = web.dir("asked");
    let mut args = web.run_args(&data, 1, &flags);
    args.push("--render-no-sandbox".into());
    let out = as_the_pod(&args, true, "warn");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("WITHOUT its sandbox"), "warned on every run: {err}");
    assert!(read_docs(&data).iter().any(|d| d.rendered), "rendered: {err}");

    // With user namespaces, as user 65534 (its own folder for the data and
    // the seeds: the test's are its user's alone): rendered, sandboxed.
    let open = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(open.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod");
    let seeds = open.path().join("seeds.txt");
    std::fs::copy(&web.seeds, &seeds).expect("seeds");
    std::fs::set_permissions(&seeds, std::os::unix::fs::PermissionsExt::from_mode(0o644)).expect("chmod");
    let data = open.path().join("sandboxed");
    let mut args = web.run_args(&data, 1, &flags);
    let at = args.iter().position(|a| a == "--seeds").expect("--seeds") + 1;
    args[at] = seeds.display().to_string();
    let out = as_the_pod(&args, false, "info");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!unsandboxed(&err), "{err}");
    // (The log's fields are coloured: its escapes taken out.)
    let mut parts = err.split('\u{1b}');
    let mut plain = parts.next().unwrap_or_default().to_string();
    plain.extend(parts.map(|part| part.split_once('m').map_or(part, |(_, rest)| rest)));
    assert!(plain.contains("Chromium started for rendering") && plain.contains("sandbox=true"), "sandboxed: {plain}");
    assert!(read_docs(&data).iter().any(|d| d.rendered), "rendered: {plain}");
}

/// A listener on 127.0.0.66, an address the crawl below does not allow,
/// counting every TCP connection and UDP datagram that reaches it.
struct Canary {
    addr: std::net::SocketAddr,
    tcp: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    udp: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Canary {
    fn start() -> Self {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.66:0").expect("bind the canary");
        let addr = listener.local_addr().expect("addr");
        // STUN goes to the same port over UDP.
        let socket = std::net::UdpSocket::bind(addr).expect("bind the canary's UDP port");
        let tcp = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let udp = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = std::sync::Arc::clone(&tcp);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                count.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
        let count = std::sync::Arc::clone(&udp);
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while socket.recv_from(&mut buf).is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        Self { addr, tcp, udp }
    }
}

/// The hostile site on 127.0.0.17: its page reaches for `canary` every way
/// a page can; `/w.js` is its workers' script.
fn hostile_site(canary: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::io::{Read as _, Write as _};
    let c = format!("http://{canary}");
    let page = format!(
        r#"<!doctype html><html><head><title>Hostile</title>
<link rel="preconnect" href="{c}/"><link rel="preconnect" href="http://canary.test/">
<link rel="dns-prefetch" href="http://canary.test/"><link rel="prefetch" href="{c}/prefetch">
</head><body><p>The hostile page itself.</p>
<img src="{c}/img.png"><iframe src="http://canary.test/frame"></iframe><iframe src="{c}/frame"></iframe>
<script>
try {{ new WebSocket("ws://{canary}/ws"); }} catch (e) {{}}
try {{ new WebSocket("ws://canary.test/ws"); }} catch (e) {{}}
try {{ new Worker("/w.js"); }} catch (e) {{}}
try {{ new SharedWorker("/w.js"); }} catch (e) {{}}
try {{ new Worker(URL.createObjectURL(new Blob(['fetch("{c}/blob-worker", {{mode: "no-cors"}}).catch(() => {{}})']))); }} catch (e) {{}}
try {{ navigator.sendBeacon("{c}/beacon", "x"); }} catch (e) {{}}
fetch("{c}/fetch", {{mode: "no-cors"}}).catch(() => {{}});
try {{ window.open("{c}/popup"); }} catch (e) {{}}
try {{ window.open("http://canary.test/popup"); }} catch (e) {{}}
try {{ const w = window.open("about:blank"); if (w) {{ w.location = "{c}/popup-nav"; }} }} catch (e) {{}}
try {{ navigator.serviceWorker.register("/sw.js").catch(() => {{}}); }} catch (e) {{}}
try {{
  const pc = new RTCPeerConnection({{iceServers: [{{urls: "stun:{canary}"}}]}});
  pc.createDataChannel("x");
  pc.createOffer().then((o) => pc.setLocalDescription(o));
}} catch (e) {{}}
document.body.insertAdjacentHTML("beforeend", "<p>Its script ran.</p>");
setTimeout(() => {{ location.href = "{c}/away"; }}, 100);
</script></body></html>"#
    );
    let worker = format!(
        r#"fetch("{c}/worker", {{mode: "no-cors"}}).catch(() => {{}}); try {{ new WebSocket("ws://{canary}/worker-ws"); }} catch (e) {{}}"#
    );
    let listener = std::net::TcpListener::bind("127.0.0.17:0").expect("bind the hostile site");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split(' ').nth(1).unwrap_or("/");
            let (status, ctype, body) = match path {
                "/" => ("200 OK", "text/html; charset=utf-8", page.as_str()),
                "/w.js" => ("200 OK", "text/javascript", worker.as_str()),
                _ => ("404 Not Found", "text/plain", "not here"),
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// A rendered page reaches nothing the crawl may not reach: a page on an
/// allowed address (`--allow-private 127.0.0.17`) tries a WebSocket,
/// workers' requests, preconnects, an image, frames, a beacon, a STUN
/// server and a navigation away, to an address it does not allow, by
/// address and by a name a `--resolve` rule maps there. Not one TCP
/// connection nor UDP datagram reaches it, and the page is rendered and
/// stored.
#[test]
fn a_rendered_page_reaches_no_address_the_crawl_does_not_allow() {
    use std::sync::atomic::Ordering;
    let browser = common::chromium().display().to_string();
    let canary = Canary::start();
    let site = hostile_site(canary.addr);
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad_tls = BadCertificate::start(tmp.path());
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, "http://hostile.test/\nhttps://badcert.test/\n").expect("seeds");
    let data = tmp.path().join("data");
    let args: Vec<String> = [
        "run",
        "--seeds",
        &seeds.display().to_string(),
        "--depth",
        "0",
        "--data",
        &data.display().to_string(),
        "--resolve",
        &format!("hostile.test={site}"),
        "--resolve",
        &format!("canary.test={}", canary.addr),
        "--resolve",
        &format!("badcert.test={}", bad_tls.addr),
        "--allow-private",
        "127.0.0.17",
        "--delay",
        "0",
        "--render",
        "always",
        "--chromium",
        &browser,
        "--json",
        "--quiet",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    let summary = crawl_ok(&args);
    // Whatever a page left running has had its time.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let docs = read_docs(&data);
    let page = docs.iter().find(|d| d.url == "http://hostile.test/").expect("the page's row");
    assert_eq!(page.status, 200, "{summary}");
    assert!(page.rendered, "the page is rendered: {summary}");
    let text = page.text.as_deref().unwrap_or("");
    assert!(text.contains("The hostile page itself.") && text.contains("Its script ran."), "its DOM: {text:?}");
    assert_eq!(canary.tcp.load(Ordering::SeqCst), 0, "TCP connections reached the canary");
    assert_eq!(canary.udp.load(Ordering::SeqCst), 0, "UDP datagrams reached the canary");
    // A page whose certificate no one signed is an error row, not a page.
    let bad = docs.iter().find(|d| d.url == "https://badcert.test/").expect("the bad certificate's row");
    assert!(bad.error.is_some() && bad.status != 200 && !bad.rendered, "an error row: {bad:?} {summary}");
}

/// An https server on 127.0.0.17 whose certificate is its own (self-signed,
/// for `badcert.test`): `openssl s_server`, stopped when dropped.
struct BadCertificate {
    addr: std::net::SocketAddr,
    server: std::process::Child,
}

impl BadCertificate {
    fn start(dir: &std::path::Path) -> Self {
        let (cert, key) = (dir.join("bad.pem"), dir.join("bad.key"));
        let made = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=badcert.test"])
            .args(["-addext", "subjectAltName=DNS:badcert.test", "-keyout"])
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl req");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
        let addr = std::net::TcpListener::bind("127.0.0.17:0").and_then(|l| l.local_addr()).expect("a free port");
        let server = std::process::Command::new("openssl")
            .args(["s_server", "-quiet", "-www", "-accept"])
            .arg(addr.to_string())
            .arg("-cert")
            .arg(&cert)
            .arg("-key")
            .arg(&key)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("openssl s_server");
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(std::time::Instant::now() < until, "openssl s_server does not listen on {addr}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Self { addr, server }
    }
}

impl Drop for BadCertificate {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}
