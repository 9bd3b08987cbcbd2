//! The `state-server` binary, built by cargo and spawned: it serves a
//! SQLite file the test wrote, says where it listens, guards with a token,
//! answers the state with a 501 that says what to do, listens on loopback
//! unless told otherwise, and refuses a bad command line with a reason.

use crate::support;
use crate::support::{get, get_with_token, post_form, thread_with_steps};
use serde_json::json;
use state_store::Store;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_state-server");

/// A SQLite store with threads "a" (2 steps) and "b" (1 step).
async fn store_file(dir: &Path) -> PathBuf {
    let path = dir.join("agent.db");
    let store = Store::sqlite(&path).await.unwrap();
    thread_with_steps(&store, "a", 2).await;
    thread_with_steps(&store, "b", 1).await;
    path
}

fn command(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(args)
        .env_remove("STATE_SERVER_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// The child's first line on stdout (within 30 s), or `None` if it
/// exited without one.
async fn first_line(child: &mut Child) -> Option<String> {
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("state-server says where it listens within 30 s")
        .unwrap()
}

/// All the child's stderr, to its end.
async fn stderr(child: &mut Child) -> String {
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .await
        .unwrap();
    stderr
}

/// Spawns the binary and waits for its "serving ... on http://ADDR" line.
async fn start(mut command: Command) -> (Child, SocketAddr, String) {
    let mut child = command.spawn().expect("spawn state-server");
    let Some(line) = first_line(&mut child).await else {
        panic!("state-server exited: {}", stderr(&mut child).await);
    };
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .parse()
        .unwrap_or_else(|e| panic!("{line:?}: {e}"));
    (child, addr, line)
}

/// Runs the binary to its end: exit code, stdout, stderr.
async fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let output = tokio::time::timeout(Duration::from_secs(30), command(args).output())
        .await
        .expect("state-server exits within 30 s")
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[tokio::test]
async fn serves_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    let file = path.to_str().unwrap();
    let (mut child, addr, line) = start(command(&["--bind", "127.0.0.1:0", file])).await;
    assert!(addr.ip().is_loopback());
    assert_eq!(
        line,
        format!("state-server: serving SQLite file {file} on http://{addr} (no token, read-only)")
    );

    let threads = get(addr, "/threads").await;
    assert_eq!(threads.status, 200);
    let ids: Vec<_> = threads
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(ids, [json!("b"), json!("a")]);
    let history = get(addr, "/threads/a/history?after=1").await;
    assert_eq!(history.json()[0]["body"], json!({"log": ["2"]}));
    get(addr, "/threads/ghost/history")
        .await
        .error(404, "thread_not_found");
    get(addr, "/threads/a/history?limit=0")
        .await
        .error(400, "bad_query");
    // No state type: a 501 that says how to get typed state.
    let message = get(addr, "/threads/a/state")
        .await
        .error(501, "no_state_type");
    assert!(
        message.contains("state_server::router::<YourState>(store)"),
        "{message}"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn serves_the_inspector_and_forks_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    let file = path.to_str().unwrap();

    let (mut child, addr, _) = start(command(&["--bind", "127.0.0.1:0", file])).await;
    let home = get(addr, "/").await;
    assert_eq!(home.status, 200);
    let html = String::from_utf8(home.body).unwrap();
    assert!(html.contains(r#"<a href="/inspect/a">a</a>"#), "{html}");
    let thread = String::from_utf8(get(addr, "/inspect/a").await.body).unwrap();
    assert!(thread.contains(r#"id="step-2""#), "{thread}");
    assert!(!thread.contains("Fork at step"), "read-only: {thread}");
    let refused = post_form(addr, "/inspect/a/fork", "seq=1&to=copy", None).await;
    assert_eq!(refused.status, 403);
    child.kill().await.unwrap();

    let (mut child, addr, line) =
        start(command(&["--bind", "127.0.0.1:0", "--allow-writes", file])).await;
    assert!(line.ends_with("(no token, writes allowed)"), "{line}");
    let thread = String::from_utf8(get(addr, "/inspect/a?seq=1").await.body).unwrap();
    assert!(thread.contains("Fork at step 1"), "{thread}");
    let forked = post_form(addr, "/inspect/a/fork", "seq=1&to=copy", None).await;
    assert_eq!(forked.status, 303);
    assert_eq!(forked.header("location"), Some("/inspect/copy"));
    child.kill().await.unwrap();

    // Forked in the file, as another program sees it.
    let store = Store::sqlite(&path).await.unwrap();
    let copy = store.thread::<support::Notes>("copy").await.unwrap();
    assert_eq!(copy.state().log, ["1"]);
    assert_eq!(
        store.thread_info("copy").await.unwrap().forked_from,
        Some(("a".to_owned(), 1))
    );
}

#[tokio::test]
async fn serves_on_an_explicit_port() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    // A free port, named on the command line as a user would.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bind = format!("127.0.0.1:{port}");
    let (mut child, addr, _) = start(command(&[
        path.to_str().unwrap(),
        &format!("--bind={bind}"),
    ]))
    .await;
    assert_eq!(addr.to_string(), bind);
    assert_eq!(get(addr, "/threads").await.status, 200);
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_token_from_the_flag_or_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    let file = path.to_str().unwrap();

    let (mut child, addr, line) = start(command(&[
        "--bind",
        "127.0.0.1:0",
        "--token",
        "fl4g-token",
        file,
    ]))
    .await;
    assert!(
        line.ends_with("(bearer token required, read-only)"),
        "{line}"
    );
    assert!(!line.contains("fl4g"), "{line}");
    for path in ["/threads", "/threads/a/history", "/threads/a/state"] {
        get(addr, path).await.error(401, "unauthorized");
        assert_eq!(get_with_token(addr, path, "wrong").await.status, 401);
    }
    assert_eq!(
        get_with_token(addr, "/threads", "fl4g-token").await.status,
        200
    );
    assert_eq!(
        get_with_token(addr, "/threads/a/history", "fl4g-token")
            .await
            .status,
        200
    );
    assert_eq!(
        get_with_token(addr, "/threads/a/state", "fl4g-token")
            .await
            .status,
        501
    );
    child.kill().await.unwrap();

    let mut with_env = command(&["--bind", "127.0.0.1:0", file]);
    with_env.env("STATE_SERVER_TOKEN", "env-token");
    let (mut child, addr, _) = start(with_env).await;
    get(addr, "/threads").await.error(401, "unauthorized");
    assert_eq!(
        get_with_token(addr, "/threads", "env-token").await.status,
        200
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn the_default_address_is_loopback() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    // No --bind: 127.0.0.1:8123. If that port is taken on this machine,
    // the refusal names the address instead; either way, loopback.
    let mut child = command(&[path.to_str().unwrap()]).spawn().unwrap();
    match first_line(&mut child).await {
        Some(line) => {
            assert!(line.contains("on http://127.0.0.1:8123 "), "{line}");
            child.kill().await.unwrap();
        }
        None => {
            let stderr = stderr(&mut child).await;
            assert!(
                stderr.contains("cannot listen on 127.0.0.1:8123"),
                "{stderr}"
            );
        }
    }
}

#[tokio::test]
async fn a_non_loopback_address_without_a_token_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    // Listening on every interface, only to read the warning; the test
    // talks to it on loopback, and stops it at once.
    let (mut child, addr, _) =
        start(command(&["--bind", "0.0.0.0:0", path.to_str().unwrap()])).await;
    assert!(addr.ip().is_unspecified());
    child.kill().await.unwrap();
    let stderr = stderr(&mut child).await;
    assert!(
        stderr.contains("is not a loopback address and no token is set"),
        "{stderr}"
    );
}

#[tokio::test]
async fn bad_command_lines_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = store_file(dir.path()).await;
    let file = path.to_str().unwrap();
    let missing = dir.path().join("typo.db");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["--port", "80", file], "unknown flag \"--port\""),
        (&[file, "--bind"], "--bind needs a value"),
        (&[file, "--bind", "everywhere"], "expected IP:PORT"),
        (&[file, "--token", ""], "non-empty"),
        (&[file, file], "unexpected argument"),
        (&[], "nothing to serve"),
        (
            &[file, "--postgres", "postgres://127.0.0.1:1/db"],
            "not both",
        ),
    ];
    for (args, says) in cases {
        let (code, stdout, stderr) = run(args).await;
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!("state-server: {says}")) || stderr.contains(says),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("Usage: state-server"), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
    }
    // A file that is not there is not created.
    let (code, _, stderr) = run(&["--bind", "127.0.0.1:0", missing]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no such file"), "{stderr}");
    assert!(!Path::new(missing).exists());
    // A file that is not a database.
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database, just some text that is long enough").unwrap();
    let (code, _, stderr) = run(&["--bind", "127.0.0.1:0", text.to_str().unwrap()]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.starts_with("state-server: "), "{stderr}");
    assert_eq!(
        stderr.matches("file is not a database").count(),
        1,
        "each cause once: {stderr}"
    );

    let (code, stdout, _) = run(&["--help"]).await;
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("--bind <ADDR>") && stdout.contains("127.0.0.1:8123"),
        "{stdout}"
    );
    let (code, stdout, _) = run(&["--version"]).await;
    assert_eq!((code, stdout.trim()), (Some(0), "state-server 0.1.0"));
}

#[tokio::test]
async fn serves_postgres() {
    let db = support::postgres::shared().fresh_database("server");
    let store = Store::postgres(&db.url).await.unwrap();
    thread_with_steps(&store, "pg", 3).await;
    let (mut child, addr, line) =
        start(command(&["--postgres", &db.url, "--bind", "127.0.0.1:0"])).await;
    // The server is named by its host only.
    let host = db.url.split('@').nth(1).unwrap().split('/').next().unwrap();
    assert!(
        line.starts_with(&format!(
            "state-server: serving PostgreSQL at {host} on http://"
        )),
        "{line}"
    );
    let threads = get(addr, "/threads").await;
    assert_eq!(threads.json()[0]["id"], "pg");
    let (steps, pages) = support::all_pages(addr, "/threads/pg/history", "limit=2").await;
    assert_eq!((steps.len(), pages), (3, 2));
    get(addr, "/threads/pg/state")
        .await
        .error(501, "no_state_type");
    child.kill().await.unwrap();
}
