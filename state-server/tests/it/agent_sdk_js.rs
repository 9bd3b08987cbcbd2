//! The Agent Server API driven by LangGraph's official JavaScript client
//! (`@langchain/langgraph-sdk`, pinned with its dependencies in
//! `tests/js/package-lock.json`): each test serves the graphs of
//! `agent_sdk` on a loopback port and runs `node tests/js/<script>`, which
//! asserts the shapes the recorded contract shows. `scripts/test.sh`
//! installs the client (`scripts/install/node.sh`: `npm ci` into
//! `tests/js/node_modules`); `LANGGRAPH_SDK_NODE` names another `node`.

use crate::agent_sdk::{Chat, server, sqlite_store};
use crate::support::serve;
use state_store::Store;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The fix a missing or stale client install gets told.
const INSTALL: &str =
    "run `bash scripts/install/node.sh` (or `npm ci --prefix state-server/tests/js`)";

fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

/// The version `package.json` pins, or why it cannot be read.
fn version_in(package: &Path, key: &str) -> Result<String, String> {
    let text =
        std::fs::read_to_string(package).map_err(|e| format!("{}: {e}", package.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", package.display()))?;
    let version = match key {
        "version" => &json["version"],
        dependency => &json["dependencies"][dependency],
    };
    version
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{}: no {key}", package.display()))
}

/// Fails, naming the command to run, unless `node_modules` holds the
/// client at the version `package.json` pins.
fn assert_client_installed() {
    let dir = js_dir();
    let pinned = version_in(&dir.join("package.json"), "@langchain/langgraph-sdk")
        .unwrap_or_else(|e| panic!("the JS client's pin: {e}"));
    let installed = dir.join("node_modules/@langchain/langgraph-sdk/package.json");
    match version_in(&installed, "version") {
        Ok(version) => assert_eq!(
            version,
            pinned,
            "{} holds @langchain/langgraph-sdk {version}, package.json pins {pinned}: {INSTALL}",
            installed.display()
        ),
        Err(_) => panic!(
            "LangGraph's JavaScript client is not installed in {}: {INSTALL}",
            dir.join("node_modules").display()
        ),
    }
}

/// Runs `node tests/js/<script>` against the server at `url`; fails the
/// test with the script's output if it fails.
async fn run_js(script: &str, url: &str) {
    run_js_with(script, url, &[]).await;
}

/// [`run_js`] with `flags` for `node` before the script.
async fn run_js_with(script: &str, url: &str, flags: &[&str]) {
    assert_client_installed();
    let node = std::env::var_os("LANGGRAPH_SDK_NODE").unwrap_or_else(|| "node".into());
    let output = tokio::process::Command::new(&node)
        .args(flags)
        .arg(js_dir().join(script))
        .current_dir(js_dir())
        .env("LANGGRAPH_URL", url)
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!("cannot run {node:?} ({e}): {INSTALL}, or set LANGGRAPH_SDK_NODE")
        });
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // A script that stopped early without failing would not say so.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.trim_end().ends_with(": ok"),
        "{script} did not finish: {stdout}"
    );
}

#[tokio::test]
async fn runs() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_js("runs.mjs", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn runs_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_js("runs.mjs", &format!("http://{addr}")).await;
}

/// The v3 thread protocol through the JavaScript client's
/// `client.threads.stream` (exchanges 55 and 56), over SSE and over the
/// WebSocket transport (a global `WebSocket`: Node 22's, or Node 20's
/// behind its flag).
#[tokio::test]
async fn thread_stream() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    let node = std::env::var_os("LANGGRAPH_SDK_NODE").unwrap_or_else(|| "node".into());
    let has_websocket = std::process::Command::new(&node)
        .args([
            "-e",
            "process.exit(typeof WebSocket === 'undefined' ? 1 : 0)",
        ])
        .status()
        .is_ok_and(|status| status.success());
    let flags: &[&str] = if has_websocket {
        &[]
    } else {
        &["--experimental-websocket"]
    };
    run_js_with("thread_stream.mjs", &format!("http://{addr}"), flags).await;
}
