//! Script-built pages, when the web is started with them (`--apps on`):
//! every regular site serves a small single-page application whose links
//! exist only after its scripts run, for testing rendering.
//!
//! - `/app/` is a script shell: a title, an empty `<div id="app">`, a
//!   script, a style sheet and an image; no text, no links.
//! - `/app/app.js` asks `/app/items.json` (with `fetch`) and builds a list
//!   of links to `/app/item/1` … `/app/item/8` with their titles.
//! - `/app/item/N` are plain HTML pages, each linking back to `/app/`.
//! - `/app/app.css` and `/app/logo.png` are served too, so a test can see
//!   that a renderer did not ask for them.
//! - `/app/busy/` is the same shell with `/app/busy.js`, which keeps the
//!   page's main thread busy for 400 ms between the answer to its request
//!   and reading it: its list is built well after the network went
//!   quiet, as on a page whose scripts run on a loaded machine.
//! - `/app/ticker/` is the same shell with `/app/ticker.js`, which builds
//!   the list and then changes the page every 50 ms for as long as it is
//!   open, as a clock or a news ticker does.

use bytes::Bytes;
use hyper::{Response, StatusCode};

use crate::body::FarmBody;
use crate::server;
use crate::site::HostId;

/// Items each application lists.
pub const ITEMS: u32 = 8;

fn shell(script: &str) -> String {
    format!(
        r#"<!doctype html>
<html><head><meta charset="utf-8"><title>Catalogue</title>
<link rel="stylesheet" href="/app/app.css">
<script src="{script}" defer></script></head>
<body><div id="app"></div><img src="/app/logo.png" alt=""></body></html>
"#
    )
}

/// The application's script: asks the items, reads them (after `before_reading`), builds the list.
fn script(before_reading: &str) -> String {
    format!("fetch('/app/items.json')\n  .then(function (r) {{ {before_reading}return r.json(); }})\n{BUILD}")
}

/// A line that grows every 50 ms.
const TICKER: &str = "var tick = document.createElement('p'); document.body.appendChild(tick);
setInterval(function () { tick.textContent += '.'; }, 50);
";

/// Busy for 400 ms.
const BUSY: &str = "var until = Date.now() + 400; while (Date.now() < until) {} ";

const BUILD: &str = r#"  .then(function (items) {
    var root = document.getElementById('app');
    var h = document.createElement('h1');
    h.textContent = 'Catalogue of ' + items.site;
    root.appendChild(h);
    var ul = document.createElement('ul');
    items.items.forEach(function (it) {
      var li = document.createElement('li');
      var a = document.createElement('a');
      a.href = '/app/item/' + it.id;
      a.textContent = it.title;
      li.appendChild(a);
      ul.appendChild(li);
    });
    root.appendChild(ul);
  });
"#;

/// The answer for `path` on `host`, when it is an application path.
#[must_use]
pub fn respond(host: HostId, path: &str) -> Option<Response<FarmBody>> {
    if !matches!(host, HostId::Site(_)) || !path.starts_with("/app/") {
        return None;
    }
    let site = host.site_number();
    Some(match path {
        "/app/" => server::html(StatusCode::OK, shell("/app/app.js")),
        "/app/busy/" => server::html(StatusCode::OK, shell("/app/busy.js")),
        "/app/app.js" => server::typed(StatusCode::OK, "application/javascript", Bytes::from(script(""))),
        "/app/busy.js" => server::typed(StatusCode::OK, "application/javascript", Bytes::from(script(BUSY))),
        "/app/ticker/" => server::html(StatusCode::OK, shell("/app/ticker.js")),
        "/app/ticker.js" => {
            server::typed(StatusCode::OK, "application/javascript", Bytes::from(script("") + TICKER))
        }
        "/app/app.css" => server::typed(StatusCode::OK, "text/css", Bytes::from_static(b"h1 { color: #345; }\n")),
        "/app/logo.png" => server::typed(StatusCode::OK, "image/png", Bytes::from_static(b"\x89PNG\r\n\x1a\n")),
        "/app/items.json" => {
            let items: Vec<String> = (1..=ITEMS)
                .map(|i| format!(r#"{{"id":{i},"title":"{} for site {site}"}}"#, item_title(i)))
                .collect();
            let body = format!(r#"{{"site":"site {site}","items":[{}]}}"#, items.join(","));
            server::typed(StatusCode::OK, "application/json", Bytes::from(body))
        }
        _ => match path.strip_prefix("/app/item/").and_then(|n| n.parse::<u32>().ok()) {
            Some(i) if (1..=ITEMS).contains(&i) => server::html(
                StatusCode::OK,
                format!(
                    "<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>\
                     <p>Item {i} of the catalogue of site {site}, described at length for readers who \
                     arrive here from the catalogue's list.</p><p><a href=\"/app/\">Back to the catalogue</a></p></body></html>",
                    title = item_title(i)
                ),
            ),
            _ => server::html(StatusCode::NOT_FOUND, "<h1>Not found</h1>"),
        },
    })
}

fn item_title(i: u32) -> String {
    const NAMES: [&str; 8] = ["Lantern", "Compass", "Kettle", "Satchel", "Barometer", "Chisel", "Ledger", "Spyglass"];
    format!("{} {i}", NAMES[(i as usize - 1) % NAMES.len()])
}
