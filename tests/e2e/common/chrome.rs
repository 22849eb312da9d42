//! Headless Chromium for the browser tests (tests/e2e/studio.rs, tests/e2e/report.rs):
//! what the page logged as an error, JavaScript evaluated in it, and waits on
//! a condition that fail saying what they waited for. The browser's path
//! comes from `common::chromium` (Debian's `chromium`, installed by
//! `scripts/chromium.sh`). Included with `#[path]` by the tests that drive a
//! browser, so that the others do not compile chromiumoxide's code.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::log::{EventEntryAdded, LogEntryLevel};
use chromiumoxide::cdp::js_protocol::runtime::{ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown};
use chromiumoxide::Page;
use futures::StreamExt;
use serde_json::Value as Json;

/// How long one wait in the browser may take.
pub const WAIT: Duration = Duration::from_secs(15);

/// Errors the page logged: console.error, uncaught exceptions, and the
/// browser's own error entries (failed requests, CSP violations).
pub type Errors = Arc<Mutex<Vec<String>>>;

/// Starts collecting the errors `page` logs from now on.
pub async fn collect_errors(page: &Page) -> Errors {
    let errors: Errors = Arc::default();
    page.enable_runtime().await.expect("Runtime.enable");
    page.enable_log().await.expect("Log.enable");
    let mut console = page.event_listener::<EventConsoleApiCalled>().await.expect("console listener");
    let mut log = page.event_listener::<EventEntryAdded>().await.expect("log listener");
    let mut thrown = page.event_listener::<EventExceptionThrown>().await.expect("exception listener");
    let e = Arc::clone(&errors);
    tokio::spawn(async move {
        while let Some(ev) = console.next().await {
            if matches!(ev.r#type, ConsoleApiCalledType::Error | ConsoleApiCalledType::Assert) {
                let args: Vec<String> = ev
                    .args
                    .iter()
                    .map(|a| {
                        a.value.as_ref().map_or_else(|| a.description.clone().unwrap_or_default(), Json::to_string)
                    })
                    .collect();
                e.lock().expect("errors").push(format!("console.{:?}: {}", ev.r#type, args.join(" ")));
            }
        }
    });
    let e = Arc::clone(&errors);
    tokio::spawn(async move {
        while let Some(ev) = log.next().await {
            if ev.entry.level == LogEntryLevel::Error {
                let at = ev.entry.url.clone().unwrap_or_default();
                e.lock().expect("errors").push(format!("log ({:?}): {} {at}", ev.entry.source, ev.entry.text));
            }
        }
    });
    let e = Arc::clone(&errors);
    tokio::spawn(async move {
        while let Some(ev) = thrown.next().await {
            let d = &ev.exception_details;
            let what = d.exception.as_ref().and_then(|x| x.description.clone()).unwrap_or_default();
            e.lock()
                .expect("errors")
                .push(format!("exception: {} {what} at {}:{}", d.text, d.line_number, d.column_number));
        }
    });
    errors
}

/// Evaluates `js` in `page` (JSON back; `null` for undefined).
pub async fn eval(page: &Page, js: &str) -> Json {
    match page.evaluate_expression(js).await {
        Ok(r) => r.into_value::<Json>().unwrap_or(Json::Null),
        Err(e) => panic!("evaluating {js}: {e}"),
    }
}

/// JavaScript's truthiness of a value.
pub fn truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        Json::String(s) => !s.is_empty(),
        Json::Array(_) | Json::Object(_) => true,
    }
}

/// Polls `js` until it is truthy and returns its value; after [`WAIT`]
/// fails saying what it waited for, the last value, what `describe` (a
/// JavaScript expression, e.g. a status line) says if given, and the
/// errors logged so far.
pub async fn wait_for(page: &Page, what: &str, js: &str, errors: &Errors, describe: Option<&str>) -> Json {
    let deadline = Instant::now() + WAIT;
    loop {
        let v = eval(page, js).await;
        if truthy(&v) {
            return v;
        }
        if Instant::now() > deadline {
            let said = match describe {
                Some(d) => format!("; {d} is {}", eval(page, d).await),
                None => String::new(),
            };
            let errors = errors.lock().expect("errors").clone();
            panic!("timed out waiting for {what} (last value {v}){said}; errors logged: {errors:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
