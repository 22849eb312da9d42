//! The browser half of tests/e2e/report.rs: headless Chromium (Debian's
//! `chromium`, installed by `scripts/chromium.sh`) opens the report, checks
//! that every chart drew and that the graph view answers a real mouse, and
//! takes the screenshots.

use std::path::Path;
use std::time::Duration;

use chromiumoxide::browser::{Browser, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::input::{DispatchMouseEventParams, DispatchMouseEventType, MouseButton};
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::Page;

use crate::common::chrome::{collect_errors, eval, wait_for};
use futures::StreamExt;
use serde_json::Value as Json;
use std::collections::BTreeSet;

async fn mouse(page: &Page, kind: DispatchMouseEventType, x: f64, y: f64, pressed: bool, delta_y: Option<f64>) {
    let mut p = DispatchMouseEventParams::builder().r#type(kind.clone()).x(x).y(y);
    if pressed || matches!(kind, DispatchMouseEventType::MousePressed | DispatchMouseEventType::MouseReleased) {
        p = p.button(MouseButton::Left).click_count(1);
    }
    if pressed {
        p = p.buttons(1);
    }
    if let Some(d) = delta_y {
        p = p.delta_x(0.0).delta_y(d);
    }
    page.execute(p.build().expect("mouse event")).await.expect("dispatch a mouse event");
}

/// Non-transparent pixels of a canvas.
const INKED: &str = "(c) => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; \
    let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }";

/// The browser part's budget.
const BUDGET: Duration = Duration::from_secs(90);

/// Opens the report at `page` in headless Chromium and checks it draws
/// `fig` (see [`in_chromium`]); keeps the screenshots in
/// target/report-screenshots/ (and, with `LAYERCRAWL_DOCS=1`, in docs/src/images/).
pub async fn draws_in_chromium(page: &Path, fig: &Json, web: &crate::common::Web) {
    let chromium = crate::common::chromium();
    let shots = tokio::time::timeout(BUDGET, in_chromium(&chromium, page, fig, &web.dir("chromium-profile")))
        .await
        .expect("the browser part finished in time");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/report-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    for (name, png) in &shots {
        std::fs::write(dir.join(name), png).expect("write a screenshot");
        if std::env::var_os("LAYERCRAWL_DOCS").is_some() && *name != "report-full.png" {
            std::fs::write(root.join("docs/src/images").join(name), png)
                .expect("write a screenshot to docs/src/images/");
        }
    }
}

/// Everything in the browser; returns screenshots (PNG) by file name: the
/// whole page, its top, and the link graph.
pub async fn in_chromium(chromium: &Path, report: &Path, fig: &Json, profile: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let config = BrowserConfig::builder()
        .chrome_executable(chromium)
        .no_sandbox()
        .window_size(1280, 900)
        .viewport(Viewport { width: 1280, height: 900, device_scale_factor: Some(1.0), ..Viewport::default() })
        .user_data_dir(profile)
        .arg("--disable-gpu")
        .arg("--disable-dev-shm-usage")
        .build()
        .expect("browser config");
    let (mut browser, mut handler) =
        Browser::launch(config).await.unwrap_or_else(|e| panic!("launch Chromium at {}: {e}", chromium.display()));
    let handler = tokio::spawn(async move { while handler.next().await.is_some() {} });
    let page = browser.new_page("about:blank").await.expect("new page");
    let errors = collect_errors(&page).await;
    page.goto(format!("file://{}", report.display())).await.expect("open the report");
    wait_for(&page, "the page's script to finish", "document.body.dataset.ready === '1'", &errors, None).await;

    // Every chart drew: SVG shapes, or inked canvas pixels.
    wait_for(
        &page,
        "the link graph's layout to settle",
        "document.getElementById('link-graph').dataset.settled === '1'",
        &errors,
        None,
    )
    .await;
    let charts = eval(
        &page,
        &format!(
            "Array.from(document.querySelectorAll('[data-chart]')).map(e => [e.dataset.chart, e.tagName === 'CANVAS' \
             ? ({INKED})(e) : e.querySelectorAll('svg rect, svg path, svg circle').length])"
        ),
    )
    .await;
    let charts: Vec<(String, u64)> = serde_json::from_value(charts).expect("charts");
    let names: BTreeSet<&str> = charts.iter().map(|c| c.0.as_str()).collect();
    for want in
        ["funnel", "statuses", "latency", "sizes", "noise", "link-graph", "entity-types", "entity-graph", "trend"]
    {
        assert!(names.contains(want), "chart {want} is on the page: {charts:?}");
    }
    for (name, drawn) in &charts {
        let least = if name.ends_with("graph") { 500 } else { 1 };
        assert!(*drawn >= least, "chart {name} drew nothing ({drawn}): {charts:?}");
    }
    // The graph view: its node count in the DOM, a node's label on hover, zoom on the wheel, a node dragged.
    let nodes = fig["link_graph"]["nodes"].as_array().expect("nodes").len();
    assert_eq!(eval(&page, "document.getElementById('link-graph').dataset.nodes").await, Json::from(nodes.to_string()));
    let at = eval(
        &page,
        "(() => { const c = document.getElementById('link-graph'); c.scrollIntoView({block: 'center'}); \
         const r = c.getBoundingClientRect(); const p = c.graphView.screenOf(0); \
         return [r.left + p.x, r.top + p.y, c.graphView.label(0)]; })()",
    )
    .await;
    let (x, y, label) =
        (at[0].as_f64().expect("x"), at[1].as_f64().expect("y"), at[2].as_str().expect("label").to_string());
    mouse(&page, DispatchMouseEventType::MouseMoved, x, y, false, None).await;
    let shown = wait_for(
        &page,
        "the hovered node's label",
        "(() => { const t = document.getElementById('link-graph-tip'); \
         return t.style.display === 'block' ? document.getElementById('link-graph').dataset.hover + '|' + t.textContent : null; })()",
        &errors,
        None,
    )
    .await;
    assert!(
        shown.as_str().is_some_and(|s| s.starts_with(&format!("{label}|{label}")) && s.contains("pages")),
        "{shown}"
    );
    let zoom = eval(&page, "Number(document.getElementById('link-graph').dataset.zoom)").await;
    mouse(&page, DispatchMouseEventType::MouseWheel, x, y, false, Some(-400.0)).await;
    wait_for(
        &page,
        "a zoom in",
        &format!("Number(document.getElementById('link-graph').dataset.zoom) > {zoom} * 1.2"),
        &errors,
        None,
    )
    .await;
    mouse(&page, DispatchMouseEventType::MousePressed, x, y, true, None).await;
    mouse(&page, DispatchMouseEventType::MouseMoved, x + 60.0, y + 40.0, true, None).await;
    mouse(&page, DispatchMouseEventType::MouseReleased, x + 60.0, y + 40.0, false, None).await;
    let moved = eval(
        &page,
        &format!(
            "(() => {{ const c = document.getElementById('link-graph'); const r = c.getBoundingClientRect(); \
             const p = c.graphView.screenOf(0); return Math.hypot(r.left + p.x - {x} - 60, r.top + p.y - {y} - 40); }})()"
        ),
    )
    .await;
    assert!(moved.as_f64().is_some_and(|d| d < 5.0), "the dragged node followed the mouse: {moved} px off");
    let entity_nodes = eval(&page, "document.getElementById('entity-graph').dataset.nodes").await;
    let want = fig["entities"]["graph"]["nodes"].as_array().expect("entity nodes").len();
    assert_eq!(entity_nodes, Json::from(want.to_string()), "the entity graph's nodes");

    // The hosts table sorts by the column clicked.
    page.find_element("#host-table th[data-col='0']").await.expect("host header").click().await.expect("click");
    let sorted = eval(
        &page,
        "(() => { const h = Array.from(document.querySelectorAll('#host-table tbody tr td:first-child')).map(t => t.textContent); \
         return JSON.stringify(h) === JSON.stringify(h.slice().sort()) && h.length; })()",
    )
    .await;
    assert_eq!(sorted, Json::from(fig["hosts"]["rows"].as_array().expect("rows").len()), "sorted by host");

    // No error of any kind, and a screenshot that is not blank.
    eval(&page, "window.scrollTo(0, 0)").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logged = errors.lock().expect("errors").clone();
    assert!(logged.is_empty(), "the report logged errors: {logged:#?}");
    let full = page.screenshot(ScreenshotParams::builder().full_page(true).build()).await.expect("screenshot");
    let (w, h, spread) = pixel_spread(&full);
    assert!(w >= 1200 && h > 2000, "a full page: {w}x{h}");
    assert!(spread > 200.0, "the screenshot is not blank (pixel variance {spread:.0})");
    let top = page.screenshot(ScreenshotParams::builder().build()).await.expect("screenshot");
    eval(&page, "document.getElementById('graph').scrollIntoView({block: 'start'}); document.getElementById('link-graph').graphView.fit()").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let graph = page.screenshot(ScreenshotParams::builder().build()).await.expect("screenshot of the graph");
    for shot in [&top, &graph] {
        let (w, h, spread) = pixel_spread(shot);
        assert!(spread > 200.0, "a {w}x{h} screenshot is not blank (pixel variance {spread:.0})");
    }
    browser.close().await.expect("close Chromium");
    let _ = browser.wait().await;
    let _ = handler.await;
    vec![("report-full.png", full), ("report.png", top), ("report-graph.png", graph)]
}

/// Width, height and the variance of the pixels' brightness of a PNG.
fn pixel_spread(png: &[u8]) -> (u32, u32, f64) {
    let mut decoder = png::Decoder::new(std::io::Cursor::new(png));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let channels = info.color_type.samples();
    let px: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| p.iter().take(3.min(channels)).map(|&c| f64::from(c)).sum::<f64>() / 3f64.min(channels as f64))
        .collect();
    let mean = px.iter().sum::<f64>() / px.len() as f64;
    let var = px.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / px.len() as f64;
    (info.width, info.height, var)
}
