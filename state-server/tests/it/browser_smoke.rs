//! The headless-browser driver (tests/it/support/browser.rs) against a small
//! page served from here on loopback: text, a click whose effect comes a
//! moment later, a form that navigates, JavaScript values and promises,
//! viewports and screenshots, the page's script errors, the failure
//! messages, and a browser that leaves no process or profile behind.

use crate::browser::{Browser, chromium_processes};
use crate::support;
use axum::Router;
use axum::extract::Query;
use axum::response::Html;
use axum::routing::get;
use serde_json::json;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::time::{Duration, Instant};

/// A page with a button that adds an item a moment after a click, and a
/// search form.
const HOME: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Browser smoke</title>
<style>
  body { font-family: sans-serif; margin: 2rem; }
  .item { color: #075; }
</style>
</head>
<body>
<h1>Browser smoke</h1>
<button id="add" type="button">Add an item</button>
<ul id="items"></ul>
<form action="/search" method="get">
  <label>Query <input id="q" name="q"></label>
  <button id="go" type="submit">Search</button>
</form>
<script>
  let added = 0;
  document.getElementById('add').addEventListener('click', () => {
    // Later, as after a fetch: the test has to wait for it.
    setTimeout(() => {
      added += 1;
      const item = document.createElement('li');
      item.className = 'item';
      item.textContent = 'item ' + added;
      document.getElementById('items').append(item);
    }, 100);
  });
</script>
</body>
</html>
"#;

/// A page with every kind of script error the driver reports, and a
/// button that throws later.
const ERRORS: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Errors</title></head>
<body>
<p id="shown">rendered despite its errors</p>
<button id="later" type="button">Throw</button>
<script src="/missing.js"></script>
<script>
  console.error('logged on purpose', 42);
  Promise.reject(new Error('rejected on purpose'));
  document.getElementById('later').addEventListener('click', () => {
    setTimeout(() => { throw new TypeError('thrown later on purpose'); }, 50);
  });
</script>
<script>throw new Error('thrown on purpose');</script>
</body>
</html>
"#;

/// The search form's answer.
async fn search(Query(query): Query<HashMap<String, String>>) -> Html<String> {
    let q = query.get("q").map(String::as_str).unwrap_or_default();
    let escaped = q
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Results</title></head>\
         <body><p id=\"echo\">You searched: {escaped}</p></body></html>"
    ))
}

/// Serves the test pages on a fresh loopback port, for the rest of the
/// test.
async fn serve() -> SocketAddr {
    let router = Router::new()
        .route("/", get(|| async { Html(HOME) }))
        .route("/search", get(search))
        .route("/errors", get(|| async { Html(ERRORS) }));
    support::serve(router).await
}

/// A PNG file's width and height, from its header.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG signature");
    assert_eq!(&png[12..16], b"IHDR", "a PNG header");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    (width, height)
}

/// The message of the panic `f` ends in.
fn panic_message(f: impl FnOnce()) -> String {
    let payload = std::panic::catch_unwind(AssertUnwindSafe(f)).expect_err("a panic");
    if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else {
        panic!("a panic without a message")
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn drives_a_page() {
    let addr = serve().await;
    let browser = Browser::launch();
    let page = browser.open(&format!("http://{addr}/"));

    assert_eq!(page.text("h1"), "Browser smoke");
    assert_eq!(page.eval_json("document.title"), json!("Browser smoke"));
    assert_eq!(page.count(".item"), 0);

    // The item comes 100 ms after the click: wait_for waits for it.
    page.click("#add");
    page.wait_for("document.querySelectorAll('.item').length === 1");
    assert_eq!(page.text(".item"), "item 1");
    page.click("#add");
    page.wait_for("document.querySelectorAll('.item').length === 2");
    assert_eq!(page.count("#items > li"), 2);

    // Values come back as JSON, promises awaited; undefined is null.
    assert_eq!(
        page.eval_json(
            "({items: [...document.querySelectorAll('.item')].map(e => e.textContent), n: 2})"
        ),
        json!({"items": ["item 1", "item 2"], "n": 2})
    );
    assert_eq!(
        page.eval_json("new Promise(resolve => setTimeout(() => resolve([1, 'two']), 20))"),
        json!([1, "two"])
    );
    assert_eq!(page.eval_json("undefined"), json!(null));

    let desktop = page.screenshot("smoke-desktop");
    let png = std::fs::read(&desktop).expect("read the screenshot");
    assert_eq!(png_size(&png), (1280, 800), "{}", desktop.display());
    assert!(desktop.ends_with("test-artifacts/inspector/smoke-desktop.png"));

    // A phone: the page lays out at its width.
    page.set_mobile_viewport(390, 844);
    assert_eq!(page.eval_json("innerWidth"), json!(390));
    let phone = page.screenshot("smoke-phone");
    let png = std::fs::read(&phone).expect("read the screenshot");
    assert_eq!(png_size(&png), (390, 844), "{}", phone.display());
    page.set_viewport(1280, 800);

    // The form navigates: expect_navigation waits for the new document.
    page.fill("#q", "tea & <cake>");
    page.expect_navigation(|page| page.click("#go"));
    assert!(page.url().starts_with(&format!("http://{addr}/search?q=")));
    assert_eq!(page.text("#echo"), "You searched: tea & <cake>");
    assert_eq!(page.count(".item"), 0, "a new document");
    let full = page.screenshot_full_page("smoke-results");
    assert!(png_size(&std::fs::read(&full).expect("read the screenshot")).0 > 0);

    // Back to the first page, in the same tab.
    page.goto(&format!("http://{addr}/"));
    assert_eq!(page.count(".item"), 0);

    assert_eq!(page.js_errors(), Vec::<String>::new());
    page.assert_no_js_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn failures_say_what_and_show_the_page() {
    let addr = serve().await;
    let browser = Browser::launch();
    let page = browser.open(&format!("http://{addr}/"));

    let message = panic_message(|| {
        page.wait_for_within(
            "document.querySelector('.item').textContent === 'x'",
            Duration::from_millis(300),
        )
    });
    assert!(
        message.contains(
            "`document.querySelector('.item').textContent === 'x'` was not true within 300ms"
        ),
        "{message}"
    );
    assert!(message.contains("TypeError"), "the last error: {message}");
    assert!(
        message.contains(&format!("page: http://{addr}/")),
        "{message}"
    );
    assert!(
        message.contains("Browser smoke\nAdd an item"),
        "the page's text: {message}"
    );

    let message = panic_message(|| {
        page.eval_json("JSON.parse('{')");
    });
    assert!(message.contains("SyntaxError"), "{message}");
    let message = panic_message(|| {
        page.eval_json("NaN");
    });
    assert!(message.contains("NaN is not JSON"), "{message}");

    // Evaluations that threw are not the page's errors.
    assert_eq!(page.js_errors(), Vec::<String>::new());

    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let closed_port = closed.local_addr().expect("its address").port();
    drop(closed);
    let message = panic_message(|| page.goto(&format!("http://127.0.0.1:{closed_port}/")));
    assert!(message.contains("ERR_CONNECTION_REFUSED"), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn reports_the_page_script_errors() {
    let addr = serve().await;
    let browser = Browser::launch();
    let page = browser.open(&format!("http://{addr}/errors"));
    assert_eq!(page.text("#shown"), "rendered despite its errors");

    let errors = page.js_errors();
    let has = |part: &str| errors.iter().any(|error| error.contains(part));
    assert!(has("Uncaught Error: thrown on purpose"), "{errors:#?}");
    assert!(has("rejected on purpose"), "{errors:#?}");
    assert!(has("console.error: logged on purpose 42"), "{errors:#?}");
    assert!(has("/missing.js"), "{errors:#?}");
    assert!(!has("favicon"), "{errors:#?}");

    let message = panic_message(|| page.assert_no_js_errors());
    assert!(message.contains("the page had script errors"), "{message}");
    assert!(message.contains("thrown on purpose"), "{message}");

    // One thrown from a timer after a click comes after them.
    let before = errors.len();
    page.click("#later");
    let deadline = Instant::now() + Duration::from_secs(10);
    let errors = loop {
        let errors = page.js_errors();
        if errors.len() > before || Instant::now() > deadline {
            break errors;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(errors.len(), before + 1, "{errors:#?}");
    assert!(
        errors[before].contains("TypeError: thrown later on purpose"),
        "{errors:#?}"
    );
}

#[test]
fn dropping_the_browser_ends_chromium_and_removes_its_profile() {
    let browser = Browser::launch();
    let page = browser.open("data:text/html,<p id=p>hello</p>");
    assert_eq!(page.text("#p"), "hello");
    let profile = browser.profile_dir().to_path_buf();
    let processes = chromium_processes(&profile);
    assert!(processes.contains(&browser.pid()), "{processes:?}");
    assert!(
        processes.len() > 1,
        "a browser and its renderer: {processes:?}"
    );
    drop(page);
    drop(browser);
    assert_eq!(chromium_processes(&profile), Vec::<u32>::new());
    assert!(!profile.exists(), "{} is left", profile.display());

    // And when a test panics with it open.
    let (sender, receiver) = std::sync::mpsc::channel();
    let failed = std::thread::spawn(move || {
        let browser = Browser::launch();
        let _page = browser.open("data:text/html,<p>about to fail</p>");
        sender
            .send(browser.profile_dir().to_path_buf())
            .expect("send the profile's path");
        panic!("a test failing with its browser open");
    })
    .join();
    assert!(failed.is_err());
    let profile = receiver.recv().expect("the profile's path");
    assert_eq!(chromium_processes(&profile), Vec::<u32>::new());
    assert!(!profile.exists(), "{} is left", profile.display());
}

#[test]
#[should_panic(expected = "scripts/install/chromium.sh")]
fn a_missing_chromium_fails_naming_the_install_script() {
    Browser::launch_at(Path::new("/nonexistent/chromium"));
}

#[tokio::test]
#[should_panic(expected = "flavor = \"multi_thread\"")]
async fn a_current_thread_runtime_is_refused() {
    Browser::launch();
}
