//! Hostile bodies on every route of the Agent Server API that reads one,
//! over real HTTP on a SQLite store: JSON of any shape (the route's own
//! field names mixed with others, wrong types, huge numbers, deep
//! nesting, unicode, empty strings, NUL), bytes that are not JSON,
//! truncated JSON, and wrong or missing content types.
//!
//! Every answer must be a 2xx or a 4xx, never a 5xx or a dropped
//! connection (the server answers `/ok` after each case); a 4xx is
//! `{"detail", "kind"}` and, when a field is wrong, its detail begins with
//! the field's name; and a refused request writes nothing (the thread's
//! metadata, runs and log, the thread records and the store's items are
//! as they were, read back over HTTP and from the store).
//!
//! The cases are generated from a fixed seed (the same ones on every run,
//! no failure files); `PROPTEST_CASES` sets how many per route.

use crate::agent_sdk::{Chat, server};
use crate::support::{Response, encode, get, request, request_or_stream, serve};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use state_store::{RunFilter, Store, ThreadSearch};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

/// How many cases per route, unless `PROPTEST_CASES` says.
const CASES: u32 = 40;

/// The fixture thread every `/threads/{id}/...` route is sent to (its
/// graph is `agent`).
const THREAD: &str = "fuzz-thread";

/// A route that reads a body: its method, its path (`{run}` is a run of
/// [`THREAD`]), the fields its body names, a body it accepts (which the
/// cases mutate, to get past the first check), and whether it creates
/// runs.
struct Route {
    method: &'static str,
    path: &'static str,
    fields: &'static [&'static str],
    valid: &'static str,
    runs: bool,
    /// A route of the v3 thread protocol ([`check_protocol`]).
    protocol: bool,
}

/// The assistant the fixture creates.
const ASSISTANT: &str = "00000000-0000-4000-8000-0000000000aa";

/// The cron the fixture creates (on [`THREAD`], for New Year's Day).
const CRON: &str = "00000000-0000-4000-8000-0000000000cc";

/// A cron's body that is accepted (it fires on New Year's Day only).
const CRON_BODY: &str = r#"{"assistant_id": "agent", "schedule": "0 0 1 1 *", "timezone": "UTC",
    "input": {"messages": [{"type": "human", "content": "hi"}]}, "metadata": {"k": "v"},
    "enabled": true, "end_time": "2999-01-01T00:00:00Z"}"#;

/// The fields of a cron's body (`CronCreate`).
const CRON_FIELDS: &[&str] = &[
    "assistant_id",
    "schedule",
    "timezone",
    "end_time",
    "enabled",
    "on_run_completed",
    "input",
    "metadata",
    "config",
    "context",
    "stream_mode",
    "multitask_strategy",
    "interrupt_before",
    "webhook",
];

/// A run's body that is accepted.
const RUN: &str = r#"{"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": "hi"}]},
    "stream_mode": ["values", "updates"], "multitask_strategy": "enqueue", "metadata": {"k": "v"},
    "if_not_exists": "reject", "stream_resumable": true}"#;

/// The fields of a run's body (`RunCreateStateful`).
const RUN_FIELDS: &[&str] = &[
    "assistant_id",
    "input",
    "command",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "metadata",
    "multitask_strategy",
    "if_not_exists",
    "config",
    "context",
    "checkpoint",
    "interrupt_before",
    "on_disconnect",
    "webhook",
];

/// Values with a meaning somewhere: assistants, modes, strategies, sort
/// orders, statuses, checkpoint ids, so generated bodies get past the
/// first check often.
const MEANINGFUL: &[&str] = &[
    "agent",
    "hitl",
    "fail",
    "values",
    "updates",
    "messages",
    "debug",
    "reject",
    "enqueue",
    "interrupt",
    "rollback",
    "create",
    "do_nothing",
    "raise",
    "asc",
    "desc",
    "idle",
    "busy",
    "created_at",
    "thread_id",
    "graph_id",
    "tools",
    "__start__",
    "human",
    "1f1ea4ee-9854-6729-8003-d5fbd6f4b086",
    "00000000-0000-0000-0000-000000000000",
    "users",
    "fuzz",
];

/// Numbers and literals serde_json's `Value` cannot hold, written into
/// the body's text as they are.
const RAW_LITERALS: &[&str] = &[
    "1e400",
    "-1e400",
    "123456789012345678901234567890",
    "-9223372036854775809",
    "18446744073709551616",
    "-0",
    "1.5",
    "NaN",
    "Infinity",
    "0x10",
    "01",
    "\"\\ud800\"",
    "\"\\u0000\"",
    "tru",
    "[",
    "{\"a\":",
];

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(MEANINGFUL).prop_map(str::to_owned),
        2 => ".{0,12}",
        1 => Just(String::new()),
        1 => Just("\0".to_owned()),
        1 => "[a-z]{0,4}\0[a-z]{0,4}",
        1 => Just("x".repeat(4096)),
        1 => Just("ünïcødé 🦀 漢字 \u{202e}".to_owned()),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => any::<f64>().prop_map(Value::from),
        1 => prop::sample::select(vec![0, 1, 10, 1000, 1001, u64::MAX]).prop_map(Value::from),
        1 => Just(json!(1e308)),
        1 => Just(json!(-1)),
        4 => string().prop_map(Value::from),
    ]
}

/// Any JSON, nested up to 6 deep, its object keys `fields` often.
fn arb_json(fields: &'static [&'static str]) -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
            prop::collection::btree_map(key(fields), inner, 0..5)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn key(fields: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(fields).prop_map(str::to_owned),
        1 => prop::sample::select(MEANINGFUL).prop_map(str::to_owned),
        1 => ".{0,8}",
    ]
}

/// A body object: the route's fields (most of them), other keys, any
/// values.
fn object(fields: &'static [&'static str]) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(fields), arb_json(fields), 0..6)
        .prop_map(|map| map.into_iter().collect())
}

/// An accepted body with some of its fields dropped or replaced by any
/// JSON, and other keys added.
fn mutated(
    valid: &'static str,
    fields: &'static [&'static str],
) -> impl Strategy<Value = Map<String, Value>> {
    let Value::Object(valid) = serde_json::from_str::<Value>(valid).expect("a valid body") else {
        panic!("a valid body is an object");
    };
    let n = valid.len();
    (
        prop::collection::vec((0..12u8, arb_json(fields)), n),
        object(fields),
    )
        .prop_map(move |(changes, extra)| {
            let mut body = Map::new();
            for ((field, value), (change, other)) in valid.iter().zip(changes) {
                match change {
                    0 => {}
                    1 | 2 => {
                        body.insert(field.clone(), other);
                    }
                    _ => {
                        body.insert(field.clone(), value.clone());
                    }
                }
            }
            for (key, value) in extra {
                body.entry(key).or_insert(value);
            }
            body
        })
}

/// What a case sends.
#[derive(Debug, Clone)]
struct Case {
    body: Vec<u8>,
    content_type: Option<&'static str>,
}

const CONTENT_TYPES: &[Option<&str>] = &[
    None,
    Some("text/plain"),
    Some("application/x-www-form-urlencoded"),
    Some("application/json; charset=utf-16"),
    Some("multipart/form-data; boundary=x"),
    Some("garbage;;=\"x"),
];

fn case(fields: &'static [&'static str], valid: &'static str) -> impl Strategy<Value = Case> {
    let json = |body: Vec<u8>| Case {
        body,
        content_type: Some("application/json"),
    };
    prop_oneof![
        // (a) JSON objects, and other JSON values.
        6 => mutated(valid, fields).prop_map(move |o| json(serde_json::to_vec(&o).unwrap())),
        3 => object(fields).prop_map(move |o| json(serde_json::to_vec(&o).unwrap())),
        1 => arb_json(fields).prop_map(move |v| json(serde_json::to_vec(&v).unwrap())),
        // A real field with a literal no JSON value holds.
        2 => (object(fields), prop::sample::select(fields), prop::sample::select(RAW_LITERALS))
            .prop_map(move |(mut o, field, literal)| {
                o.insert(field.to_owned(), json!("@@"));
                let text = serde_json::to_string(&o).unwrap().replace("\"@@\"", literal);
                json(text.into_bytes())
            }),
        // (b) Bytes, and truncated JSON.
        1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(json),
        2 => (object(fields), any::<prop::sample::Index>()).prop_map(move |(o, cut)| {
            let text = serde_json::to_vec(&o).unwrap();
            let at = cut.index(text.len().max(1));
            json(text[..at].to_vec())
        }),
        // (c) A wrong or missing content type, on JSON or not.
        2 => (object(fields), prop::sample::select(CONTENT_TYPES), any::<bool>()).prop_map(
            |(o, content_type, as_form)| Case {
                body: if as_form {
                    b"assistant_id=agent&input=x".to_vec()
                } else {
                    serde_json::to_vec(&o).unwrap()
                },
                content_type,
            }
        ),
    ]
}

impl Case {
    /// Its headers: its content type, if it has one.
    fn headers(&self) -> Vec<(&'static str, &'static str)> {
        self.content_type
            .map(|content_type| ("Content-Type", content_type))
            .into_iter()
            .collect()
    }
}

/// Everything a refused request must leave as it was.
#[derive(Debug, PartialEq)]
struct Snapshot {
    /// `GET /threads/{THREAD}`'s metadata.
    metadata: Value,
    /// The thread's runs, by `GET /threads/{THREAD}/runs`.
    runs: Vec<Value>,
    /// Its log's head.
    seq: Option<u64>,
    /// Every thread record but a stateless run's own.
    threads: BTreeSet<String>,
    /// The stateless runs.
    stateless: usize,
    /// The store's items.
    items: Value,
    /// The created assistants.
    assistants: Value,
    /// The crons.
    crons: Vec<state_store::CronRecord>,
}

async fn snapshot(addr: SocketAddr, store: &Store) -> Snapshot {
    let thread = get(addr, &format!("/threads/{THREAD}")).await;
    assert_eq!(thread.status, 200, "{:?}", thread.json());
    let runs = get(addr, &format!("/threads/{THREAD}/runs?limit=1000")).await;
    assert_eq!(runs.status, 200, "{:?}", runs.json());
    let stateless = store
        .list_runs(None, RunFilter::default().limit(1000))
        .await
        .expect("list the stateless runs");
    let own: BTreeSet<&str> = stateless.iter().map(|r| r.run_id.as_str()).collect();
    let threads = store
        .search_thread_records(&ThreadSearch::default().limit(usize::MAX))
        .await
        .expect("list the thread records")
        .into_iter()
        .map(|r| r.thread_id)
        .filter(|id| !own.contains(id.as_str()))
        .collect();
    let items = store
        .search_items(..)
        .limit(1000)
        .await
        .expect("list the items");
    let assistants = store.assistants(None).await.expect("list the assistants");
    let crons = store
        .search_crons(&state_store::CronSearch::default().limit(1000))
        .await
        .expect("list the crons");
    Snapshot {
        crons,
        assistants: serde_json::to_value(assistants).expect("assistants as JSON"),
        metadata: thread.json()["metadata"].clone(),
        runs: runs.json().as_array().expect("a list").clone(),
        seq: store.thread_info(THREAD).await.ok().map(|info| info.seq),
        threads,
        stateless: stateless.len(),
        items: serde_json::to_value(items).expect("items as JSON"),
    }
}

/// Waits for every run to have ended (an accepted run is left to finish,
/// so the next case's snapshot holds still).
async fn settle(store: &Store) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut runs = store
            .list_runs(Some(THREAD), RunFilter::default().limit(1000))
            .await
            .expect("list runs");
        runs.extend(
            store
                .list_runs(None, RunFilter::default().limit(1000))
                .await
                .expect("list runs"),
        );
        if runs.iter().all(|run| run.status.is_final()) {
            // A stateless run's thread is deleted just after its end.
            tokio::time::sleep(Duration::from_millis(20)).await;
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "runs still going after 20 s: {runs:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `detail` (a 422's) names the field at fault: it begins with a
/// path into the body whose first segment is one of the route's fields,
/// or it is about the body as a whole (which then is no JSON object, or
/// lacks a field serde names), or it is the recorded Agent Server text
/// for an unknown assistant or an id that is not a UUID.
fn names_the_field(detail: &str, fields: &[&str], object: bool) -> bool {
    let Some((head, rest)) = detail.split_once(": ") else {
        return false;
    };
    if head == "the request body" {
        return !object || rest.contains("missing field `");
    }
    if matches!(
        head,
        "Invalid assistant" | "Invalid assistant ID" | "Invalid thread ID"
    ) {
        return true;
    }
    let first = head.split(['.', '[']).next().unwrap_or_default();
    fields.contains(&first)
}

/// Sends one case and checks the answer, the server's health and that a
/// refusal wrote nothing.
async fn check(
    addr: SocketAddr,
    store: &Store,
    route: &Route,
    path: &str,
    case: &Case,
) -> Result<(), TestCaseError> {
    if route.protocol {
        return check_protocol(addr, store, route, path, case).await;
    }
    let before = snapshot(addr, store).await;
    let headers = case.headers();
    let response: Response = request(addr, route.method, path, &headers, &case.body).await;
    let shown = String::from_utf8_lossy(&response.body).into_owned();
    if std::env::var_os("FUZZ_LOG").is_some() {
        eprintln!(
            "FUZZ {} {path} {} {}",
            route.method,
            response.status,
            shown
                .chars()
                .take(150)
                .collect::<String>()
                .replace('\n', " ")
        );
    }
    prop_assert!(
        response.status < 500,
        "{} {path}: {} {shown}",
        route.method,
        response.status
    );
    prop_assert_eq!(
        get(addr, "/ok").await.status,
        200,
        "the server stopped answering"
    );
    if response.status >= 400 {
        let body: Value = serde_json::from_slice(&response.body)
            .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {shown}")))?;
        let object = body.as_object();
        prop_assert!(
            object
                .is_some_and(|o| o.len() == 2 && o["detail"].is_string() && o["kind"].is_string()),
            "not {{detail, kind}}: {}",
            body
        );
        let detail = body["detail"].as_str().unwrap_or_default();
        // A thread id in the body (not the path) is named as its field.
        let body_thread_id = body["kind"] == "invalid_thread_id" && !path.contains(THREAD);
        if body["kind"] == "invalid_body" || body_thread_id {
            let sent_object =
                serde_json::from_slice::<Value>(&case.body).is_ok_and(|sent| sent.is_object());
            prop_assert!(
                names_the_field(detail, route.fields, sent_object),
                "{} {path}: the detail names no field: {detail:?}",
                route.method
            );
        }
        let after = snapshot(addr, store).await;
        prop_assert_eq!(before, after, "a refused request wrote: {}", body);
    } else if route.runs {
        settle(store).await;
    }
    Ok(())
}

/// The error codes of the v3 thread protocol.
const PROTOCOL_CODES: [&str; 10] = [
    "invalid_argument",
    "unknown_command",
    "unknown_error",
    "no_such_run",
    "no_such_subscription",
    "no_such_namespace",
    "no_such_interrupt",
    "no_such_checkpoint",
    "permission_denied",
    "not_supported",
];

/// [`check`] for the v3 thread protocol's routes: a command is answered
/// by a protocol envelope (`success`, or `error` with one of its codes
/// and words, status 200, or 400 when the body is no command) or a
/// `{detail, kind}` 4xx; an event stream opens (200, `text/event-stream`)
/// or is a `{detail, kind}` 4xx naming the field. Nothing but a command's
/// success writes.
async fn check_protocol(
    addr: SocketAddr,
    store: &Store,
    route: &Route,
    path: &str,
    case: &Case,
) -> Result<(), TestCaseError> {
    let before = snapshot(addr, store).await;
    let headers = case.headers();
    let response = request_or_stream(addr, route.method, path, &headers, &case.body).await;
    let shown = String::from_utf8_lossy(&response.body).into_owned();
    if std::env::var_os("FUZZ_LOG").is_some() {
        let shown: String = shown.chars().take(150).collect();
        eprintln!(
            "FUZZ {path} {} {}",
            response.status,
            shown.replace('\n', " ")
        );
    }
    prop_assert!(response.status < 500, "{path}: {} {shown}", response.status);
    prop_assert_eq!(
        get(addr, "/ok").await.status,
        200,
        "the server stopped answering"
    );
    if response.header("content-type") == Some("text/event-stream; charset=utf-8") {
        prop_assert_eq!(response.status, 200);
        prop_assert_eq!(before, snapshot(addr, store).await, "a stream wrote");
        return Ok(());
    }
    let body: Value = serde_json::from_slice(&response.body)
        .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {shown}")))?;
    let succeeded = match body["type"].as_str() {
        Some("success") => {
            prop_assert_eq!(response.status, 200, "{}", body);
            prop_assert!(
                body["id"].is_u64() && body["result"].is_object(),
                "{}",
                body
            );
            true
        }
        Some("error") => {
            prop_assert!(matches!(response.status, 200 | 400), "{}", body);
            let code = body["error"].as_str().unwrap_or_default();
            prop_assert!(
                PROTOCOL_CODES.contains(&code),
                "not a protocol code: {}",
                body
            );
            prop_assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "no words: {}",
                body
            );
            false
        }
        _ => {
            prop_assert!(response.status >= 400, "{}", body);
            let object = body.as_object();
            prop_assert!(
                object.is_some_and(|o| o.len() == 2 && o["detail"].is_string()),
                "not {{detail, kind}}: {}",
                body
            );
            let detail = body["detail"].as_str().unwrap_or_default();
            if body["kind"] == "invalid_body" {
                let sent_object =
                    serde_json::from_slice::<Value>(&case.body).is_ok_and(|sent| sent.is_object());
                prop_assert!(
                    names_the_field(detail, route.fields, sent_object),
                    "{path}: the detail names no field: {detail:?}"
                );
            }
            false
        }
    };
    if succeeded {
        settle(store).await;
    } else {
        prop_assert_eq!(
            before,
            snapshot(addr, store).await,
            "a refused request wrote: {}",
            body
        );
    }
    Ok(())
}

/// A command that starts a run on the fixture thread.
const RUN_START: &str = r#"{"id": 1, "method": "run.start", "params": {"assistant_id": "agent",
    "input": {"messages": [{"type": "human", "content": "hi"}]}, "metadata": {"k": "v"},
    "multitaskStrategy": "enqueue"}}"#;

#[test]
fn protocol_commands() {
    fuzz(Route {
        method: "POST",
        path: "/threads/{thread}/commands",
        fields: &["id", "method", "params"],
        valid: RUN_START,
        runs: true,
        protocol: true,
    });
}

#[test]
fn protocol_answers() {
    fuzz(Route {
        method: "POST",
        path: "/threads/{thread}/commands",
        fields: &["id", "method", "params"],
        valid: r#"{"id": 2, "method": "input.respond", "params": {"interrupt_id": "i",
            "namespace": [], "response": "Carol", "responses": [{"interrupt_id": "i"}]}}"#,
        runs: true,
        protocol: true,
    });
}

#[test]
fn protocol_events() {
    fuzz(Route {
        method: "POST",
        path: "/threads/{thread}/stream/events",
        fields: &["channels", "namespaces", "depth", "since"],
        valid: r#"{"channels": ["values", "lifecycle", "custom:x"], "namespaces": [["a"]],
            "depth": 1, "since": 3}"#,
        runs: false,
        protocol: true,
    });
}

/// Serves the reference graphs on a SQLite store with [`THREAD`] (a run
/// of `agent` done) and one item; `(addr, store, run id)`.
async fn fixture(dir: &std::path::Path) -> (SocketAddr, Store, String) {
    let store = Store::sqlite(dir.join("fuzz.db"))
        .await
        .expect("open SQLite");
    let addr = serve(server(store.clone()).router::<Chat>()).await;
    let created = request(
        addr,
        "POST",
        "/threads",
        &[("Content-Type", "application/json")],
        json!({"thread_id": THREAD, "metadata": {"owner": "fuzz"}})
            .to_string()
            .as_bytes(),
    )
    .await;
    assert_eq!(created.status, 200, "{:?}", created.json());
    let wait = request(
        addr,
        "POST",
        &format!("/threads/{THREAD}/runs/wait"),
        &[("Content-Type", "application/json")],
        json!({"assistant_id": "agent",
               "input": {"messages": [{"type": "human", "content": "hi"}]}})
        .to_string()
        .as_bytes(),
    )
    .await;
    assert_eq!(wait.status, 200, "{:?}", wait.json());
    let runs = get(addr, &format!("/threads/{THREAD}/runs")).await.json();
    let run = runs[0]["run_id"].as_str().expect("a run").to_owned();
    store
        .put_item(&["fuzz"], "kept", json!({"v": 1}))
        .await
        .expect("put an item");
    let cron = state_store::NewCron::new(CRON, ASSISTANT, "0 0 1 1 *")
        .thread(THREAD)
        .payload(json!({"assistant_id": ASSISTANT, "input": {}}));
    store.create_cron(cron).await.expect("create a cron");
    let assistant = state_store::NewAssistant::new(ASSISTANT, "agent").metadata(json!({"a": 1}));
    store
        .create_assistant(assistant, state_store::IfExists::Raise)
        .await
        .expect("create an assistant");
    (addr, store, run)
}

/// Runs the cases of `route` (its body from [`case`], or for the cancel
/// route, its query) against a fresh server.
fn fuzz(route: Route) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, store, run) = runtime.block_on(fixture(dir.path()));
    let path = route
        .path
        .replace("{thread}", THREAD)
        .replace("{run}", &run)
        .replace("{assistant}", ASSISTANT)
        .replace("{cron}", CRON);
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(CASES);
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&case(route.fields, route.valid), |case| {
        runtime.block_on(check(addr, &store, &route, &path, &case))
    });
    if let Err(error) = result {
        panic!("{} {}: {error}", route.method, route.path);
    }
}

macro_rules! routes {
    ($($name:ident: $method:literal $path:literal $fields:expr, $valid:expr, $runs:literal;)*) => {$(
        #[test]
        fn $name() {
            fuzz(Route {
                method: $method,
                path: $path,
                fields: $fields,
                valid: $valid,
                runs: $runs,
                protocol: false,
            });
        }
    )*};
}

routes! {
    threads_create: "POST" "/threads" &["thread_id", "metadata", "if_exists"],
        r#"{"thread_id": "new", "metadata": {"a": 1}, "if_exists": "do_nothing"}"#, false;
    threads_search: "POST" "/threads/search"
        &["metadata", "values", "status", "limit", "offset", "sort_by", "sort_order"],
        r#"{"metadata": {"owner": "fuzz"}, "values": {}, "status": "idle", "limit": 5,
            "offset": 0, "sort_by": "created_at", "sort_order": "asc"}"#, false;
    threads_count: "POST" "/threads/count" &["metadata", "values", "status"],
        r#"{"metadata": {"owner": "fuzz"}, "values": {}, "status": "idle"}"#, false;
    threads_patch: "PATCH" "/threads/{thread}" &["metadata"],
        r#"{"metadata": {"owner": "fuzz", "n": 2}}"#, false;
    threads_copy: "POST" "/threads/{thread}/copy" &["metadata"], "{}", false;
    state_update: "POST" "/threads/{thread}/state" &["values", "as_node", "checkpoint"],
        r#"{"values": {"messages": [{"type": "ai", "content": "x"}]}, "as_node": "agent"}"#, false;
    state_at_checkpoint: "POST" "/threads/{thread}/state/checkpoint"
        &["checkpoint", "subgraphs"],
        r#"{"checkpoint": {"checkpoint_id": "1f1ea4ee-9854-6729-8003-d5fbd6f4b086"}}"#, false;
    history: "POST" "/threads/{thread}/history" &["limit", "before", "metadata", "checkpoint"],
        r#"{"limit": 3, "before": null, "metadata": {"source": "loop"}}"#, false;
    runs_create: "POST" "/threads/{thread}/runs" RUN_FIELDS, RUN, true;
    runs_wait: "POST" "/threads/{thread}/runs/wait" RUN_FIELDS, RUN, true;
    runs_stream: "POST" "/threads/{thread}/runs/stream" RUN_FIELDS, RUN, true;
    stateless_wait: "POST" "/runs/wait" RUN_FIELDS, RUN, true;
    stateless_stream: "POST" "/runs/stream" RUN_FIELDS, RUN, true;
    store_put: "PUT" "/store/items" &["namespace", "key", "value", "index", "ttl"],
        r#"{"namespace": ["fuzz", "a"], "key": "k", "value": {"v": "x"}, "index": false}"#, false;
    store_delete: "DELETE" "/store/items" &["namespace", "key"],
        r#"{"namespace": ["fuzz", "a"], "key": "k"}"#, false;
    store_search: "POST" "/store/items/search"
        &["namespace_prefix", "filter", "limit", "offset", "query"],
        r#"{"namespace_prefix": ["fuzz"], "filter": {"v": {"$gte": 1}}, "limit": 5, "offset": 0}"#,
        false;
    store_namespaces: "POST" "/store/namespaces"
        &["prefix", "suffix", "max_depth", "limit", "offset"],
        r#"{"prefix": ["fuzz"], "suffix": ["a"], "max_depth": 2, "limit": 5, "offset": 0}"#, false;
    assistants_search: "POST" "/assistants/search"
        &["graph_id", "name", "metadata", "limit", "offset", "sort_by", "sort_order", "select"],
        r#"{"graph_id": "agent", "name": "a", "metadata": {}, "limit": 5, "offset": 0,
            "sort_by": "name", "sort_order": "asc", "select": ["graph_id"]}"#, false;
    assistants_count: "POST" "/assistants/count" &["graph_id", "name", "metadata"],
        r#"{"graph_id": "agent", "name": "a", "metadata": {}}"#, false;
    assistants_create: "POST" "/assistants"
        &["graph_id", "assistant_id", "config", "context", "metadata", "if_exists", "name",
          "description"],
        r#"{"graph_id": "agent", "config": {"tags": ["x"]}, "metadata": {"a": 1},
            "if_exists": "do_nothing", "name": "n", "description": "d"}"#, false;
    assistants_patch: "PATCH" "/assistants/{assistant}"
        &["graph_id", "config", "context", "metadata", "name", "description"],
        r#"{"graph_id": "agent", "config": {"tags": ["y"]}, "metadata": {"b": 2}, "name": "n2"}"#,
        false;
    assistants_versions: "POST" "/assistants/{assistant}/versions"
        &["metadata", "limit", "offset"], r#"{"metadata": {"a": 1}, "limit": 5, "offset": 0}"#,
        false;
    assistants_latest: "POST" "/assistants/{assistant}/latest" &["version"],
        r#"{"version": 1}"#, false;
    crons_create: "POST" "/runs/crons" CRON_FIELDS, CRON_BODY, false;
    crons_create_for_thread: "POST" "/threads/{thread}/runs/crons" CRON_FIELDS, CRON_BODY,
        false;
    crons_patch: "PATCH" "/runs/crons/{cron}" CRON_FIELDS,
        r#"{"schedule": "0 0 2 1 *", "enabled": false, "metadata": {"b": 2}}"#, false;
    crons_search: "POST" "/runs/crons/search"
        &["assistant_id", "thread_id", "enabled", "metadata", "limit", "offset", "sort_by",
          "sort_order", "select"],
        r#"{"enabled": true, "metadata": {}, "limit": 5, "offset": 0, "sort_by": "next_run_date",
            "sort_order": "asc", "select": ["cron_id"]}"#, false;
    crons_count: "POST" "/runs/crons/count" &["assistant_id", "thread_id"], "{}", false;
    cancel_body: "POST" "/threads/{thread}/runs/{run}/cancel" &["wait", "action"],
        r#"{"wait": true}"#, false;
}

/// What the fuzzing found, each once: the store's refusals of a
/// namespace, key, value, filter or query, and a thread id the store
/// cannot hold, name the body's field; nothing is written.
#[tokio::test]
async fn store_refusals_name_the_field() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, store, _) = fixture(dir.path()).await;
    let before = snapshot(addr, &store).await;
    let cases = [
        (
            "PUT",
            "/store/items",
            json!({"namespace": [""], "key": "k", "value": {}}),
            "namespace: invalid namespace [\"\"]",
        ),
        (
            "PUT",
            "/store/items",
            json!({"namespace": ["langgraph"], "key": "k", "value": {}}),
            "namespace: ",
        ),
        (
            "PUT",
            "/store/items",
            json!({"namespace": ["a"], "key": "k\u{0}", "value": {}}),
            "key: ",
        ),
        (
            "PUT",
            "/store/items",
            json!({"namespace": ["a"], "key": "k", "value": {"s": "\u{0}"}}),
            "value: ",
        ),
        (
            "DELETE",
            "/store/items",
            json!({"namespace": ["a.b"], "key": "k"}),
            "namespace: ",
        ),
        (
            "DELETE",
            "/store/items",
            json!({"namespace": ["a"], "key": "\u{0}"}),
            "key: ",
        ),
        (
            "POST",
            "/store/items/search",
            json!({"namespace_prefix": [""]}),
            "namespace_prefix: ",
        ),
        (
            "POST",
            "/store/items/search",
            json!({"filter": {"v": {"$near": 1}}}),
            "filter: ",
        ),
        (
            "POST",
            "/store/items/search",
            json!({"query": "hello"}),
            "query: ",
        ),
        (
            "POST",
            "/store/namespaces",
            json!({"prefix": ["a", ""]}),
            "prefix: ",
        ),
        (
            "POST",
            "/store/namespaces",
            json!({"prefix": ["a"], "suffix": ["b.c"]}),
            "suffix: ",
        ),
        (
            "POST",
            "/threads",
            json!({"thread_id": "a\u{0}b"}),
            "thread_id: invalid thread id",
        ),
        (
            "POST",
            "/threads",
            json!({"thread_id": "x".repeat(600)}),
            "thread_id: invalid thread id",
        ),
        (
            "POST",
            "/threads",
            json!({"if_exists": 3}),
            "if_exists: expected one of its names",
        ),
        (
            "POST",
            "/threads/search",
            json!({"sort_by": ["created_at"]}),
            "sort_by: expected one of its names",
        ),
        (
            "POST",
            "/runs/wait",
            json!({"assistant_id": "agent", "stream_mode": 3}),
            "stream_mode: a stream mode or a list of them",
        ),
    ];
    for (method, path, body, starts) in cases {
        let response = request(
            addr,
            method,
            path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
        .await;
        let kind = if path == "/threads" && body.get("thread_id").is_some() {
            (400, "invalid_thread_id")
        } else {
            (422, "invalid_body")
        };
        let detail = response.error(kind.0, kind.1);
        assert!(
            detail.starts_with(starts),
            "{method} {path} {body}: {detail}"
        );
    }
    assert_eq!(snapshot(addr, &store).await, before);
}

/// A chunked body (no declared length) over the limit: the guard cannot
/// refuse it up front, the reader stops at the limit; a 413 as for a
/// declared one, not a 422, and nothing is written.
#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, store, _) = fixture(dir.path()).await;
    let before = snapshot(addr, &store).await;
    let value = "x".repeat(state_server::DEFAULT_BODY_LIMIT);
    let body = json!({"namespace": ["fuzz"], "key": "big", "value": {"v": value}}).to_string();
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "PUT /store/items HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await.expect("send");
    for chunk in body.as_bytes().chunks(64 * 1024) {
        let sent = async {
            socket
                .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await?;
            socket.write_all(chunk).await?;
            socket.write_all(b"\r\n").await
        };
        // The server may answer and close before the body is all sent.
        if sent.await.is_err() {
            break;
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let mut raw = Vec::new();
    let _ = socket.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    let json_start = text.find("{\"detail\"").expect("a JSON error");
    let error: Value = serde_json::from_str(text[json_start..].trim_end()).expect("JSON");
    assert_eq!(error["kind"], "body_too_large", "{error}");
    assert_eq!(snapshot(addr, &store).await, before);
}

/// Paths no thread id fits, on the routes that read a body: a JSON 4xx
/// too (axum's own `Path` rejection is text).
#[tokio::test]
async fn bad_paths_are_json_errors() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, _store, run) = fixture(dir.path()).await;
    let body = br#"{"assistant_id": "agent", "metadata": {}}"#;
    for id in ["%FF", "a%C3", "%ED%A0%80"] {
        for (method, path) in [
            ("PATCH", format!("/threads/{id}")),
            ("DELETE", format!("/threads/{id}")),
            ("GET", format!("/threads/{id}")),
            ("POST", format!("/threads/{id}/copy")),
            ("POST", format!("/threads/{id}/state")),
            ("POST", format!("/threads/{id}/state/checkpoint")),
            ("GET", format!("/threads/{id}/state/{id}")),
            ("POST", format!("/threads/{id}/history")),
            ("POST", format!("/threads/{id}/runs")),
            ("GET", format!("/threads/{id}/runs")),
            ("POST", format!("/threads/{id}/runs/wait")),
            ("POST", format!("/threads/{id}/runs/stream")),
            ("GET", format!("/threads/{THREAD}/runs/{id}")),
            ("GET", format!("/threads/{THREAD}/runs/{id}/join")),
            ("GET", format!("/threads/{THREAD}/runs/{id}/stream")),
            ("POST", format!("/threads/{THREAD}/runs/{id}/cancel")),
            ("POST", format!("/threads/{id}/runs/{run}/cancel")),
            ("GET", format!("/assistants/{id}")),
            ("GET", format!("/assistants/{id}/graph")),
            ("GET", format!("/assistants/{id}/schemas")),
        ] {
            let response = request(
                addr,
                method,
                &path,
                &[("Content-Type", "application/json")],
                body,
            )
            .await;
            assert!(
                (400..500).contains(&response.status),
                "{method} {path}: {}",
                response.status
            );
            let message = response.error(response.status, "bad_path");
            assert!(message.contains("UTF-8"), "{method} {path}: {message}");
        }
    }
}

/// The cancel route's query: `wait` and `action` of any text, other
/// parameters, broken percent-encoding.
#[test]
fn cancel_query() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, store, run) = runtime.block_on(fixture(dir.path()));
    let route = Route {
        method: "POST",
        path: "",
        fields: &["wait", "action"],
        valid: "{}",
        runs: false,
        protocol: false,
    };
    let pair = (
        prop_oneof![
            Just("wait".to_owned()),
            Just("action".to_owned()),
            "[a-z%]{0,6}"
        ],
        prop_oneof![
            prop::sample::select(vec![
                "0",
                "1",
                "true",
                "True",
                "interrupt",
                "rollback",
                "%FF",
                "%",
                "%00",
                ""
            ])
            .prop_map(str::to_owned),
            ".{0,8}".prop_map(|s| encode(&s)),
        ],
    );
    let query = prop::collection::vec(pair, 0..4).prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&")
    });
    let config = Config {
        cases: CASES * 2,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&query, |query| {
        let path = format!("/threads/{THREAD}/runs/{run}/cancel?{query}");
        let case = Case {
            body: Vec::new(),
            content_type: None,
        };
        runtime.block_on(check(addr, &store, &route, &path, &case))
    });
    if let Err(error) = result {
        panic!("cancel's query: {error}");
    }
}

/// JSON nested as deep as a body may be (serde_json reads 128 levels)
/// where a run keeps it (its resume value, its metadata): stored and read
/// back, it must not make the thread's rows unreadable (a 5xx on every
/// later read); one level deeper is a 422 naming the field.
#[tokio::test]
async fn deep_values_a_body_may_hold_stay_readable() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, _store, _) = fixture(dir.path()).await;
    let json_headers = [("Content-Type", "application/json")];
    let deep = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
    for depth in [100, 125, 126] {
        let thread = format!("deep-{depth}");
        let create = format!(r#"{{"thread_id": "{thread}"}}"#);
        let created = request(addr, "POST", "/threads", &json_headers, create.as_bytes()).await;
        assert_eq!(created.status, 200);
        let first = request(
            addr,
            "POST",
            &format!("/threads/{thread}/runs/wait"),
            &json_headers,
            br#"{"assistant_id": "hitl", "input": {}}"#,
        )
        .await;
        assert!(
            first.json()["__interrupt__"].is_array(),
            "{:?}",
            first.json()
        );
        // The deepest a body carries: {"command": {"resume": ..}}.
        let body = format!(
            r#"{{"assistant_id": "hitl", "command": {{"resume": {}}}, "metadata": {{"m": {}}}}}"#,
            deep(depth),
            deep(depth)
        );
        let path = format!("/threads/{thread}/runs/wait");
        let resumed = request(addr, "POST", &path, &json_headers, body.as_bytes()).await;
        if depth < 126 {
            assert_eq!(
                resumed.json(),
                json!({"answer": "", "approved": false}),
                "{depth}"
            );
        } else {
            let detail = resumed.error(422, "invalid_body");
            assert!(detail.starts_with("command.resume[0]"), "{detail}");
            assert!(detail.contains("recursion limit exceeded"), "{detail}");
        }
        for tail in ["", "/state", "/runs", "/history"] {
            let read = get(addr, &format!("/threads/{thread}{tail}")).await;
            assert_eq!(read.status, 200, "{depth} {tail}: {:?}", read.json());
        }
        let history = request(
            addr,
            "POST",
            &format!("/threads/{thread}/history"),
            &json_headers,
            b"{}",
        )
        .await;
        assert_eq!(history.status, 200, "{depth}: {:?}", history.json());
    }
}

/// A body nested past any limit (100,000 `[`, or as deep inside a real
/// field) is a 4xx on every route that reads one, not a stack overflow.
#[tokio::test]
async fn deeply_nested_bodies_are_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (addr, _store, run) = fixture(dir.path()).await;
    let open = "[".repeat(100_000);
    let bodies = [
        open.clone(),
        format!(r#"{{"input": {open}"#),
        format!(r#"{{"metadata": {{"a": {}}}}}"#, "{\"a\": ".repeat(50_000)),
        format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
    ];
    let paths = [
        ("POST", "/threads".to_owned()),
        ("POST", "/threads/search".to_owned()),
        ("POST", "/threads/count".to_owned()),
        ("PATCH", format!("/threads/{THREAD}")),
        ("POST", format!("/threads/{THREAD}/state")),
        ("POST", format!("/threads/{THREAD}/state/checkpoint")),
        ("POST", format!("/threads/{THREAD}/history")),
        ("POST", format!("/threads/{THREAD}/runs")),
        ("POST", format!("/threads/{THREAD}/runs/wait")),
        ("POST", format!("/threads/{THREAD}/runs/stream")),
        ("POST", "/runs/wait".to_owned()),
        ("POST", "/runs/stream".to_owned()),
        ("PUT", "/store/items".to_owned()),
        ("DELETE", "/store/items".to_owned()),
        ("POST", "/store/items/search".to_owned()),
        ("POST", "/store/namespaces".to_owned()),
        ("POST", "/assistants/search".to_owned()),
        ("POST", "/assistants/count".to_owned()),
        ("POST", format!("/threads/{THREAD}/runs/{run}/cancel")),
    ];
    for (method, path) in &paths {
        for body in &bodies {
            let response = request(
                addr,
                method,
                path,
                &[("Content-Type", "application/json")],
                body.as_bytes(),
            )
            .await;
            // The cancel route reads no body: it answers as without one.
            if path.ends_with("/cancel") {
                assert!(
                    response.status < 500,
                    "{method} {path}: {}",
                    response.status
                );
                continue;
            }
            let detail = response.error(422, "invalid_body");
            assert!(
                detail.starts_with("the request body: ") || detail.contains("recursion limit"),
                "{method} {path}: {detail}"
            );
            assert!(
                detail.len() < 2000,
                "{method} {path}: {} bytes",
                detail.len()
            );
        }
    }
    assert_eq!(get(addr, "/ok").await.status, 200);
}
