//! The rule editor (`layercrawl studio`) end to end, in a real browser:
//! headless Chromium, driven over the DevTools protocol, opens a product
//! page of the test web's shop in the editor, clicks its price, checks the
//! selector the page proposes and the values it previews against the
//! shop's ground truth, adds the field and saves the file; the saved file
//! passes `layercrawl rules check`. Screenshots of the editor land in
//! `target/studio-screenshots/` (the book's rule editor page shows such
//! screenshots, from `docs/src/images/`).
//!
//! Chromium comes from Debian's `chromium` package (`scripts/chromium.sh`
//! installs it); without it the test fails and says why.

use crate::common;
use crate::common::chrome;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chrome::{collect_errors, eval, Errors};
use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::Page;
use futures::StreamExt;
use serde_json::Value as Json;
use testweb::{FarmConfig, ShopProduct};

const RULES: &str = r#"# Product pages of the test web's shop; only their related products are followed.
[[rule]]
name = "product"
urls = ["http://shop.test/product/*"]

[[rule.field]]
name = "name"
css = "h1.product-title"

[rule.links]
scopes = [".related"]
"#;

/// The whole test's budget: it fails with what it was waiting for instead of hanging.
const BUDGET: Duration = Duration::from_secs(50);

/// A plain HTTP/1.1 GET: status and body (as sent, chunked or not).
fn http_get(addr: &str, host: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

/// `layercrawl studio`, killed when dropped.
struct Studio {
    child: Child,
    /// `http://127.0.0.1:PORT/?token=T`.
    url: String,
    /// `127.0.0.1:PORT`.
    addr: String,
    stderr: PathBuf,
}

impl Studio {
    fn start(rules: &Path, resolve: &str, scratch: &Path) -> Self {
        let stderr = scratch.join("studio.stderr");
        let mut child = Command::new(env!("CARGO_BIN_EXE_layercrawl"))
            .arg("studio")
            .arg("--rules")
            .arg(rules)
            .args(["--resolve", resolve, "--allow-private", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"))
            .spawn()
            .expect("spawn layercrawl studio");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut studio = Self { child, url: String::new(), addr: String::new(), stderr };
        let line = rx.recv_timeout(Duration::from_secs(20)).unwrap_or_default();
        let printed: Json = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "`layercrawl studio --json` printed {line:?}, not its JSON line ({e}); stderr:\n{}",
                studio.stderr_text()
            )
        });
        let url = printed["url"].as_str().unwrap_or_else(|| panic!("no url in {printed}")).to_string();
        let parsed = url::Url::parse(&url).expect("the studio's URL parses");
        assert_eq!(parsed.host_str(), Some("127.0.0.1"), "the studio listens on loopback: {url}");
        assert!(parsed.query_pairs().any(|(k, v)| k == "token" && v.len() >= 16), "a token in {url}");
        studio.addr = format!("127.0.0.1:{}", parsed.port().expect("a port"));
        studio.url = url;
        studio
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Studio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits as [`chrome::wait_for`], saying on a timeout what the editor's
/// status line says.
async fn wait_for(page: &Page, what: &str, js: &str, errors: &Errors) -> Json {
    chrome::wait_for(page, what, js, errors, Some("document.getElementById('status').textContent")).await
}

/// Clicks the element `selector` of the editor (scrolled into view, a real mouse click).
async fn click(page: &Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {selector}: {e}"));
}

/// Types into the editor's input `selector`, emptied first.
async fn type_into(page: &Page, selector: &str, text: &str) {
    eval(page, &format!("document.querySelector({}).value = ''", Json::from(selector))).await;
    page.find_element(selector)
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {selector}: {e}"))
        .type_str(text)
        .await
        .unwrap_or_else(|e| panic!("type into {selector}: {e}"));
}

async fn screenshot(page: &Page, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/studio-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    let path = dir.join(name);
    let png = page.screenshot(ScreenshotParams::builder().build()).await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    std::fs::write(&path, png).expect("write screenshot");
    path
}

/// A product with a price whose page wraps its fields in generated ids
/// (`<div id="p-8f3a2c">`), the case where a naive selector goes wrong.
fn product_with_generated_ids(farm: &testweb::Farm) -> ShopProduct {
    let addr = farm.addr().to_string();
    farm.shop_products()
        .into_iter()
        .filter(|p| p.price.is_some())
        .find(|p| {
            let path = p.url.trim_start_matches("http://shop.test");
            let (status, body) = http_get(&addr, "shop.test", path);
            status == 200 && body.contains("id=\"p-")
        })
        .expect("a product with a price and generated ids")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_editor_builds_a_field_by_clicking_the_page_previews_it_and_saves_it() {
    let chromium = common::chromium();
    let cfg = FarmConfig { sites: 1, pages: 10, faults: false, shop: true, shop_products: 30, ..FarmConfig::default() };
    let farm = testweb::Farm::start_background(cfg).expect("farm");
    let product = product_with_generated_ids(&farm);
    let tmp = tempfile::tempdir().expect("tempdir");
    let rules = tmp.path().join("rules.toml");
    std::fs::write(&rules, RULES).expect("rules");
    let studio = Studio::start(&rules, &farm.resolve_rule(), tmp.path());

    // Nothing without the token: not the page, not the API.
    for path in ["/", "/api/state"] {
        let (status, _) = http_get(&studio.addr, &studio.addr, path);
        assert_eq!(status, 403, "GET {path} without the token");
    }

    let run = drive(&chromium, &studio, &product, &rules, tmp.path());
    match tokio::time::timeout(BUDGET, run).await {
        Ok(selector) => {
            // The file on disk: valid, with the new field as built in the browser.
            let saved = std::fs::read_to_string(&rules).expect("read the saved file");
            let check = common::layercrawl(&["rules".to_string(), "check".into(), rules.display().to_string()]);
            assert!(
                check.status.success(),
                "the saved file does not pass `rules check`:\n{}\n{saved}",
                String::from_utf8_lossy(&check.stderr)
            );
            let css = format!("css = {}", toml::Value::String(selector.clone()));
            assert!(saved.starts_with(RULES), "the file's own text is kept:\n{saved}");
            assert!(
                saved.contains("name = \"price\"") && saved.contains(&css) && saved.contains("type = \"float\""),
                "the new field (css {selector:?}, float) in the saved file:\n{saved}"
            );
        }
        Err(_) => {
            panic!("the browser test did not finish within {BUDGET:?}; the studio's stderr:\n{}", studio.stderr_text())
        }
    }
    drop(studio);
    farm.shutdown();
}

/// Everything in the browser; returns the selector the page proposed.
async fn drive(chromium: &Path, studio: &Studio, product: &ShopProduct, rules: &Path, scratch: &Path) -> String {
    // Chromium refuses its sandbox as root (as the tests run here and in CI);
    // it only loads the local editor and the local test web.
    let config = BrowserConfig::builder()
        .chrome_executable(chromium)
        .no_sandbox()
        .window_size(1400, 900)
        .viewport(Viewport { width: 1400, height: 900, device_scale_factor: Some(1.0), ..Viewport::default() })
        .user_data_dir(scratch.join("chromium-profile"))
        .arg("--disable-gpu")
        .arg("--disable-dev-shm-usage")
        .build()
        .expect("browser config");
    let (mut browser, mut handler) =
        Browser::launch(config).await.unwrap_or_else(|e| panic!("launch Chromium at {}: {e}", chromium.display()));
    let handler = tokio::spawn(async move {
        while let Some(event) = handler.next().await {
            if event.is_err() {
                break;
            }
        }
    });
    let page = browser.new_page("about:blank").await.expect("new page");
    let errors = collect_errors(&page).await;
    page.goto(studio.url.as_str()).await.expect("open the editor");
    wait_for(
        &page,
        "the rules file's rule in the picker",
        "document.getElementById('rule-select').value === 'product'",
        &errors,
    )
    .await;
    let file_text = eval(&page, "document.getElementById('rules-text').value").await;
    assert_eq!(file_text, RULES, "the editor shows the file");

    // Open the product page: it shows in the sandboxed frame, scripts off.
    type_into(&page, "#url", &product.url).await;
    click(&page, "#open").await;
    wait_for(
        &page,
        "the product page in the frame",
        "(() => { const f = document.getElementById('frame'); const d = f.contentDocument; \
         return f.dataset.ready === '1' && !!d && !!d.querySelector('.buy-box .price'); })()",
        &errors,
    )
    .await;
    let sandbox = eval(&page, "document.getElementById('frame').getAttribute('sandbox')").await;
    assert_eq!(sandbox, "allow-same-origin", "the frame runs no script of the page");
    // The rule's links: the related products followed (solid), the rest held back (dashed).
    wait_for(
        &page,
        "the links outlined by what the rule follows",
        "(() => { const d = document.getElementById('frame').contentDocument; \
         const look = (sel) => Array.from(d.querySelectorAll(sel)).map(a => a.style.getPropertyValue('outline')); \
         const related = look('.related a'), nav = look('nav.main-nav a'); \
         return related.length > 0 && nav.length > 0 && related.every(o => o.includes('solid')) \
           && nav.every(o => o.includes('dashed')); })()",
        &errors,
    )
    .await;

    // A real mouse click on the price, inside the frame.
    let at = eval(
        &page,
        "(() => { const f = document.getElementById('frame'); const e = f.contentDocument.querySelector('.buy-box .price'); \
         e.scrollIntoView({block: 'center'}); const o = f.getBoundingClientRect(); const r = e.getBoundingClientRect(); \
         return [o.left + f.clientLeft + r.left + r.width / 2, o.top + f.clientTop + r.top + r.height / 2]; })()",
    )
    .await;
    let (x, y) = (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"));
    page.click(Point { x, y }).await.expect("click the price");
    let selector =
        wait_for(&page, "a selector from the click", "document.getElementById('field-selector').value", &errors)
            .await
            .as_str()
            .expect("a string")
            .to_string();
    assert!(
        !selector.contains("nth") && !selector.contains("#p-") && selector.contains("price"),
        "a robust selector, by class, without positions or the generated ids: {selector:?}"
    );
    let picked = eval(
        &page,
        &format!(
            "(() => {{ const d = document.getElementById('frame').contentDocument; const m = d.querySelectorAll({}); \
             return m.length === 1 && m[0] === d.querySelector('.buy-box .price') && m[0].style.getPropertyValue('outline') !== ''; }})()",
            Json::from(selector.as_str())
        ),
    )
    .await;
    assert_eq!(picked, Json::Bool(true), "{selector:?} matches exactly the clicked price, outlined");
    let at_frame = eval(&page, "location.href").await;
    assert_eq!(at_frame.as_str(), Some(studio.url.as_str()), "the editor did not navigate");
    wait_for(
        &page,
        "the preview column of the picked element",
        "!!document.querySelector('#values th.preview')",
        &errors,
    )
    .await;
    let shot_selected = screenshot(&page, "editor-selected.png").await;

    // Name it, type it; the preview column shows the truth's price.
    type_into(&page, "#field-name", "price").await;
    eval(
        &page,
        "(() => { const s = document.getElementById('field-type'); s.value = 'float'; \
         s.dispatchEvent(new Event('change', {bubbles: true})); })()",
    )
    .await;
    let want = product.price.expect("a price");
    let shown = wait_for(
        &page,
        "the preview column with the price",
        &format!(
            "(() => {{ const th = document.querySelector('#values th.preview'); \
             if (!th || !th.textContent.startsWith('price')) return null; \
             const cells = Array.from(document.querySelectorAll('#values tr.opened td.preview')); \
             const hit = cells.find(c => JSON.parse(c.dataset.json) === {want:?}); \
             return hit ? hit.textContent : null; }})()"
        ),
        &errors,
    )
    .await;
    assert_eq!(shown.as_str().map(str::parse::<f64>), Some(Ok(want)), "the price as the page shows it");
    let shot_preview = screenshot(&page, "editor-preview.png").await;

    // Add it: the text gets the field, and the table a real column for it.
    click(&page, "#add-field").await;
    wait_for(
        &page,
        "the field in the rules text",
        "document.getElementById('rules-text').value.includes('name = \"price\"') \
         && !document.querySelector('#values th.preview') \
         && Array.from(document.querySelectorAll('#values th')).some(th => th.textContent === 'price')",
        &errors,
    )
    .await;

    // Save: the diff first, then the file.
    click(&page, "#save").await;
    wait_for(
        &page,
        "the diff with the new field",
        "document.getElementById('save-dialog').open && Array.from(document.querySelectorAll('#diff .add'))\
         .some(l => l.textContent.startsWith('+') && l.textContent.includes('name = \"price\"'))",
        &errors,
    )
    .await;
    let shot_diff = screenshot(&page, "editor-diff.png").await;
    click(&page, "#confirm-save").await;
    wait_for(
        &page,
        "`saved` in the status line",
        "document.getElementById('status').textContent.toLowerCase().startsWith('saved')",
        &errors,
    )
    .await;
    assert!(std::fs::read_to_string(rules).expect("rules").contains("name = \"price\""), "written to disk");

    // A moment for late events, then: not one error in the console.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logged = errors.lock().expect("errors").clone();
    assert!(logged.is_empty(), "the editor logged errors: {logged:#?}");
    for shot in [&shot_selected, &shot_preview, &shot_diff] {
        assert!(std::fs::metadata(shot).is_ok_and(|m| m.len() > 10_000), "{} is a real screenshot", shot.display());
    }

    browser.close().await.expect("close Chromium");
    let _ = browser.wait().await;
    let _ = handler.await;
    selector
}
