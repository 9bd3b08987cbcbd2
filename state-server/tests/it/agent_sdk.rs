//! The Agent Server API driven by LangGraph's official Python client
//! (`langgraph-sdk`, pinned in `tests/sdk/requirements.txt`): each test
//! serves graphs on a loopback port and runs a script of `tests/sdk/` that
//! asserts the shapes the recorded contract shows. The client's venv is
//! `target/venv-sdk` (the README's test command makes it), or the Python
//! that `LANGGRAPH_SDK_PYTHON` names.

use crate::support::{request, serve};
use serde_json::json;
use state_core::{AgentState, Message, Messages, State, ToolCall};
use state_graph::{Ctx, END, NodeError, START, StateGraph};
use state_server::Server;
use state_store::Store;
use std::path::PathBuf;
use std::process::Stdio;

/// The tool loop of the reference app, in Rust.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
}

/// The interrupt graph's state.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Review {
    pub answer: String,
    pub approved: bool,
}

/// The reference app's tool loop: the agent calls `echo` with the
/// human's text, then answers with what the tool said.
fn agent(s: &Chat) -> ChatDelta {
    let last = s.messages.last();
    let reply = match last.and_then(Message::tool_call_id) {
        Some(_) => Message::ai(format!(
            "The tool said: {}",
            last.map(Message::text).unwrap_or_default()
        )),
        None => {
            let text = last.map(Message::text).unwrap_or_default();
            Message::ai("")
                .with_tool_calls([ToolCall::new("echo", json!({"text": text})).with_id("call_1")])
        }
    };
    Chat::delta().messages(vec![reply])
}

fn tools(s: &Chat) -> ChatDelta {
    let call = s
        .messages
        .last()
        .and_then(|m| m.tool_calls().first().cloned());
    let results = call
        .map(|call| {
            let text = call.args["text"].as_str().unwrap_or_default().to_owned();
            vec![Message::tool_result(&call, format!("echo:{text}")).with_name("echo")]
        })
        .unwrap_or_default();
    Chat::delta().messages(results)
}

/// Our graphs as the reference app's: `agent`, `hitl`, `fail`, `slow`.
/// A SQLite store in a temporary directory (kept while the directory is).
pub(crate) async fn sqlite_store() -> (Store, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = Store::sqlite(dir.path().join("agent.db"))
        .await
        .expect("a SQLite store");
    (store, dir)
}

pub(crate) fn server(store: Store) -> Server {
    let mut agent_graph = StateGraph::<Chat>::new();
    agent_graph.add_node("agent", agent);
    agent_graph.add_node("tools", tools);
    agent_graph.add_edge(START, "agent");
    agent_graph.add_conditional_edges(
        "agent",
        |s: &Chat| match s.messages.last().map(|m| m.tool_calls().is_empty()) {
            Some(false) => "tools",
            _ => END,
        },
        ["tools", END],
    );
    agent_graph.add_edge("tools", "agent");
    let mut hitl = StateGraph::<Review>::new();
    hitl.add_node("ask", |_: &Review, ctx: &Ctx| {
        let answer = ctx.interrupt(json!({"question": "What is your name?"}))?;
        let name = answer.as_str().unwrap_or_default().to_owned();
        Ok::<_, NodeError>(Review::delta().answer(name))
    });
    hitl.add_node("finish", |s: &Review| {
        Review::delta().approved(!s.answer.is_empty())
    });
    hitl.add_edge(START, "ask");
    hitl.add_edge("ask", "finish");
    hitl.add_edge("finish", END);
    let mut fail = StateGraph::<Review>::new();
    fail.add_node("explode", |_: &Review| -> Result<ReviewDelta, NodeError> {
        Err(NodeError::msg("boom: deliberate failure"))
    });
    fail.add_edge(START, "explode");
    fail.add_edge("explode", END);
    let mut slow = StateGraph::<Review>::new();
    slow.add_node("nap", |_: std::sync::Arc<Review>| async {
        tokio::time::sleep(std::time::Duration::from_secs(20)).await;
        Ok::<_, NodeError>(Review::delta().approved(true))
    });
    slow.add_edge(START, "nap");
    slow.add_edge("nap", END);
    Server::new(store)
        .assistant("agent", agent_graph.compile().expect("the agent compiles"))
        .assistant("hitl", hitl.compile().expect("hitl compiles"))
        .assistant("fail", fail.compile().expect("fail compiles"))
        .assistant("slow", slow.compile().expect("slow compiles"))
}

/// The greeter's state: what its node made of the run's context.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Greeting {
    pub greeting: String,
}

/// The greeter's context, decoded from each run's JSON context; its JSON
/// Schema is the assistant's `context_schema`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Visitor {
    name: String,
    #[serde(default)]
    lang: Option<String>,
}

/// `server`'s graphs and `greeter`, whose runs' JSON context reaches its
/// node (`ServedGraph::context_schema`: `context_from_json`, and the
/// context's JSON Schema), which writes it in the state.
fn server_with_greeter(store: Store) -> Server {
    let mut greeter = StateGraph::<Greeting, Visitor>::new();
    greeter.add_node("greet", |_: &Greeting, ctx: &Ctx<Visitor>| {
        let visitor = ctx.context();
        let lang = visitor.lang.as_deref().unwrap_or("en");
        Greeting::delta().greeting(format!("{lang}:{}", visitor.name))
    });
    greeter.add_edge(START, "greet");
    greeter.add_edge("greet", END);
    let greeter = greeter.compile().expect("the greeter compiles");
    server(store).assistant(
        "greeter",
        state_server::ServedGraph::new(greeter).context_schema(),
    )
}

/// The Python with `langgraph-sdk`, or a failure that says how to get it.
fn sdk_python() -> PathBuf {
    if let Some(python) = std::env::var_os("LANGGRAPH_SDK_PYTHON") {
        return python.into();
    }
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/venv-sdk/bin/python");
    assert!(
        python.exists(),
        "no langgraph-sdk venv at {}: run `scripts/test.sh` (it makes it), or \
         `VENV=target/venv-sdk bash scripts/install/venv.sh state-server/tests/sdk/requirements.txt`, \
         or set LANGGRAPH_SDK_PYTHON",
        python.display()
    );
    python
}

/// Runs `tests/sdk/<script>` against the server at `url`; fails the test
/// with the script's output if it fails.
pub(crate) async fn run_script(script: &str, url: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk")
        .join(script);
    let output = tokio::process::Command::new(sdk_python())
        .arg(&path)
        .env("LANGGRAPH_URL", url)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run the SDK's Python");
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test]
async fn assistants() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("assistants.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn threads() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("threads.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn threads_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("threads.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn runs() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("runs.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn runs_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("runs.py", &format!("http://{addr}")).await;
}

/// The runs script on PostgreSQL (its rollbacks above all: the rewind of
/// a thread's log and the run's deletion in one transaction there).
#[tokio::test]
async fn runs_on_postgres() {
    let db = crate::support::postgres::shared().fresh_database("sdk_runs");
    let store = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("runs.py", &format!("http://{addr}")).await;
}

/// The server's auth hook: two users and an admin, by `x-api-key` (what
/// the SDK's `api_key` sends).
fn with_auth(server: Server) -> Server {
    server.auth(|request| async move {
        let key = request
            .headers()
            .get("x-api-key")
            .and_then(|v| v.to_str().ok());
        match key {
            Some("key-ada") => Ok(state_server::Identity::new("ada")),
            Some("key-bob") => Ok(state_server::Identity::new("bob")),
            Some("key-ops") => Ok(state_server::Identity::new("ops").admin()),
            Some(_) => Err(state_server::Refusal::unauthorized("unknown API key")),
            None => Err(state_server::Refusal::unauthorized("send an x-api-key")),
        }
    })
}

#[tokio::test]
async fn auth() {
    let addr = serve(with_auth(server(Store::memory())).router::<Chat>()).await;
    run_script("auth.py", &format!("http://{addr}")).await;
}

/// Assistants created, read, searched, updated, versioned, set back and
/// deleted by two users through the SDK; a run on a created assistant
/// whose context reaches the graph's node.
#[tokio::test]
async fn created_assistants() {
    let addr = serve(with_auth(server_with_greeter(Store::memory())).router::<Chat>()).await;
    run_script("assistants_created.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn created_assistants_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(with_auth(server_with_greeter(store)).router::<Chat>()).await;
    run_script("assistants_created.py", &format!("http://{addr}")).await;
}

/// Created assistants live in the database: an assistant created through
/// one server is seen, run and deleted through another on the same file.
#[tokio::test]
async fn created_assistants_are_shared_by_servers_on_one_database() {
    let (store, dir) = sqlite_store().await;
    let one = serve(server_with_greeter(store).router::<Chat>()).await;
    let other_store = Store::sqlite(dir.path().join("agent.db"))
        .await
        .expect("the same SQLite file");
    let two = serve(server_with_greeter(other_store).router::<Chat>()).await;
    let json = [("Content-Type", "application/json")];
    let made = request(
        one,
        "POST",
        "/assistants",
        &json,
        br#"{"graph_id": "greeter", "context": {"name": "Ada", "lang": "it"}}"#,
    )
    .await
    .json();
    let id = made["assistant_id"].as_str().expect("an id").to_owned();
    let seen = request(two, "GET", &format!("/assistants/{id}"), &[], b"").await;
    assert_eq!(seen.json(), made);
    let body = format!(r#"{{"assistant_id": "{id}", "input": {{}}}}"#);
    let out = request(two, "POST", "/runs/wait", &json, body.as_bytes()).await;
    assert_eq!(out.json(), json!({"greeting": "it:Ada"}));
    let deleted = request(two, "DELETE", &format!("/assistants/{id}"), &[], b"").await;
    assert_eq!(deleted.status, 204);
    let gone = request(one, "GET", &format!("/assistants/{id}"), &[], b"").await;
    assert_eq!(
        gone.error(404, "not_found"),
        format!("Assistant {id} not found")
    );
}

/// Deleting an assistant cancels its runs in flight, and with
/// `delete_threads=true` deletes the threads its runs named; a run's
/// metadata and config merge its assistant's, its thread's and its own;
/// a context's JSON Schema is served (tests/sdk/assistants_deleted.py).
#[tokio::test]
async fn deleted_assistants() {
    let addr = serve(with_auth(server_with_greeter(Store::memory())).router::<Chat>()).await;
    run_script("assistants_deleted.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn deleted_assistants_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(with_auth(server_with_greeter(store)).router::<Chat>()).await;
    run_script("assistants_deleted.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn deleted_assistants_on_postgres() {
    let db = crate::support::postgres::shared().fresh_database("sdk_deleted_assistants");
    let store = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let addr = serve(with_auth(server_with_greeter(store)).router::<Chat>()).await;
    run_script("assistants_deleted.py", &format!("http://{addr}")).await;
}

/// Runs created on an assistant while it is deleted: each is either
/// refused (422, nothing left behind) or cancelled by the delete; none
/// is left to run later on the missing assistant.
#[tokio::test]
async fn no_run_outlives_its_deleted_assistant() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store.clone()).router::<Chat>()).await;
    let json = [("Content-Type", "application/json")];
    let made = request(
        addr,
        "POST",
        "/assistants",
        &json,
        br#"{"graph_id": "slow"}"#,
    )
    .await;
    let id = made.json()["assistant_id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let creates: Vec<_> = (0..24)
        .map(|_| {
            let id = id.clone();
            tokio::spawn(async move {
                let body = format!(r#"{{"assistant_id": "{id}", "input": {{}}}}"#);
                let thread = request(addr, "POST", "/threads", &json, b"{}").await.json();
                let thread = thread["thread_id"].as_str().expect("a thread").to_owned();
                let path = format!("/threads/{thread}/runs");
                (
                    thread,
                    request(addr, "POST", &path, &json, body.as_bytes()).await,
                )
            })
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let deleted = request(addr, "DELETE", &format!("/assistants/{id}"), &[], b"").await;
    assert_eq!(deleted.status, 204);
    let (mut refused, mut cancelled) = (0, 0);
    for create in creates {
        let (thread, created) = create.await.expect("the request ran");
        if created.status == 422 {
            let detail = created.error(422, "invalid_body");
            assert!(
                detail.starts_with(&format!("Invalid assistant: '{id}'")),
                "{detail}"
            );
            let runs = crate::support::get(addr, &format!("/threads/{thread}/runs")).await;
            assert_eq!(runs.json(), json!([]), "a refused run was left behind");
            refused += 1;
            continue;
        }
        let run_id = created.json()["run_id"].as_str().expect("a run").to_owned();
        let join = format!("/threads/{thread}/runs/{run_id}/join");
        let joined = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            crate::support::get(addr, &join),
        )
        .await;
        assert!(joined.is_ok(), "run {run_id} was not stopped by the delete");
        let run = crate::support::get(addr, &format!("/threads/{thread}/runs/{run_id}")).await;
        assert_eq!(run.json()["status"], "interrupted", "{:?}", run.json());
        cancelled += 1;
    }
    assert_eq!(refused + cancelled, 24);
    assert!(
        store
            .cancel_assistant_runs(&id, state_store::CancelAction::Interrupt)
            .await
            .expect("the store answers")
            .is_empty(),
        "runs in flight on the deleted assistant"
    );
}

#[tokio::test]
async fn auth_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(with_auth(server(store)).router::<Chat>()).await;
    run_script("auth.py", &format!("http://{addr}")).await;
}

/// A wait longer than the Agent Server's keep-alive (5 s) sends newlines
/// until its result, which then parses (JSON skips the whitespace); a
/// cancel ends the run at once, long before its 20 s node would.
#[tokio::test]
async fn a_long_wait_is_kept_alive() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    let json = [("Content-Type", "application/json")];
    let thread = request(addr, "POST", "/threads", &json, b"{}").await.json();
    let thread = thread["thread_id"]
        .as_str()
        .expect("a thread id")
        .to_owned();
    let path = format!("/threads/{thread}/runs/wait");
    let waiting = tokio::spawn(async move {
        request(
            addr,
            "POST",
            &path,
            &json,
            br#"{"assistant_id": "slow", "input": {}}"#,
        )
        .await
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let runs = request(addr, "GET", &format!("/threads/{thread}/runs"), &[], b"")
        .await
        .json();
    let run = runs[0]["run_id"].as_str().expect("the run").to_owned();
    tokio::time::sleep(std::time::Duration::from_millis(5_700)).await;
    let cancel = format!("/threads/{thread}/runs/{run}/cancel?wait=0&action=interrupt");
    assert_eq!(request(addr, "POST", &cancel, &[], b"").await.status, 202);
    let waited = waiting.await.expect("the wait");
    assert_eq!(waited.status, 200);
    assert_eq!(waited.header("content-type"), Some("application/json"));
    assert!(
        waited
            .header("location")
            .is_some_and(|l| l.ends_with(&format!("/runs/{run}/join"))),
        "{:?}",
        waited.headers
    );
    assert_eq!(
        waited.body.first(),
        Some(&b'\n'),
        "{:?}",
        String::from_utf8_lossy(&waited.body)
    );
    let result: serde_json::Value =
        serde_json::from_slice(&waited.body).expect("JSON after the newlines");
    assert_eq!(result, json!({"answer": "", "approved": false}));
    let run = request(
        addr,
        "GET",
        &format!("/threads/{thread}/runs/{run}"),
        &[],
        b"",
    )
    .await
    .json();
    assert_eq!(run["status"], json!("interrupted"));
}

/// Python LangGraph's `RemoteGraph` calls our tool loop directly and as
/// the node of a Python graph, and pauses and resumes our interrupt graph.
#[tokio::test]
async fn remote_graph() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("remote_graph.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn remote_graph_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("remote_graph.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn store_and_copy() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("store.py", &format!("http://{addr}")).await;
}

/// A model called inside a node streams its tokens on its own; over the
/// Agent Server API they reach LangGraph's client as `messages` events
/// whose chunks make the final message (issue 33, item 6).
#[tokio::test]
async fn a_models_tokens_reach_the_client() {
    use state_agent::{FakeChatModel, react_agent};
    // One reply per run of the script: messages-tuple, then messages.
    let reply = || Message::ai("Hello from a streaming model!");
    let model = FakeChatModel::new([reply(), reply()]).chunk_size(3);
    let chat = react_agent(model, [])
        .compile()
        .expect("the agent compiles");
    let server = Server::new(Store::memory()).assistant("chat", chat);
    let addr = serve(server.router::<state_core::MessagesState>()).await;
    run_script("tokens.py", &format!("http://{addr}")).await;
}

/// The `events` stream mode (exchange 26): the tool loop as recorded,
/// with other modes, paused and resumed, joined as stored, and a model's
/// tokens as a chat model run; on SQLite, where runs store their events.
#[tokio::test]
async fn stream_mode_events() {
    use state_agent::{FakeChatModel, react_agent};
    let (store, _dir) = sqlite_store().await;
    let model = FakeChatModel::new([Message::ai("Hello from a streaming model!")]).chunk_size(3);
    let chat = react_agent(model, [])
        .compile()
        .expect("the agent compiles");
    let server = server(store).assistant("chat", chat);
    let addr = serve(server.router::<Chat>()).await;
    run_script("events.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn assistant_search_pages_and_refuses_bad_bodies() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    let json = [("Content-Type", "application/json")];
    let page = request(
        addr,
        "POST",
        "/assistants/search",
        &json,
        br#"{"limit": 1}"#,
    )
    .await;
    assert_eq!(page.status, 200);
    assert_eq!(page.json().as_array().map(Vec::len), Some(1));
    assert_eq!(page.header("x-pagination-total"), Some("2"));
    assert_eq!(page.header("x-pagination-next"), Some("1"));
    let last = request(
        addr,
        "POST",
        "/assistants/search",
        &json,
        br#"{"offset": 3}"#,
    )
    .await;
    assert_eq!(last.header("x-pagination-total"), Some("4"));
    assert_eq!(last.header("x-pagination-next"), None);

    for (body, field) in [
        (&br#"{"limit": "ten"}"#[..], "limit: invalid type"),
        (br#"{"limit": 0}"#, "limit: must be between 1 and 1000"),
        (
            br#"{"select": ["secret"]}"#,
            "select: unknown field \"secret\"",
        ),
        (br#"{"sort_by": "x"}"#, "sort_by: unknown field \"x\""),
        (br#"{"sort_order": "up"}"#, "sort_order: \"up\""),
        (br#"[1, 2]"#, "the request body: "),
        (b"{", "the request body: "),
    ] {
        let refused = request(addr, "POST", "/assistants/search", &json, body).await;
        let detail = refused.error(422, "invalid_body");
        assert!(
            detail.starts_with(field),
            "{detail:?} for {:?}",
            String::from_utf8_lossy(body)
        );
    }
    let wrong = request(addr, "GET", "/assistants/search", &[], b"").await;
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.header("allow"), Some("POST"));
    assert_eq!(
        wrong.json()["detail"],
        json!("GET is not allowed on this path (`Allow` lists what is)")
    );
    let xray = request(addr, "GET", "/assistants/agent/graph?xray=-1", &[], b"").await;
    assert_eq!(xray.error(422, "invalid_body"), "Invalid xray value");
}

#[tokio::test]
async fn the_token_guards_the_agent_routes_too() {
    let addr = serve(server(Store::memory()).token("s3cret").router::<Chat>()).await;
    let refused = request(addr, "GET", "/assistants/agent", &[], b"").await;
    assert_eq!(refused.status, 401);
    let auth = [("Authorization", "Bearer s3cret")];
    let ok = request(addr, "GET", "/assistants/agent", &auth, b"").await;
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["graph_id"], json!("agent"));
}

#[test]
#[should_panic(expected = "graph id \"agent\" is served already")]
fn a_graph_id_is_served_once() {
    let mut g = StateGraph::<Review>::new();
    g.add_node("review", |_: &Review| Review::delta());
    g.add_edge(START, "review");
    g.add_edge("review", END);
    let app = g.compile().expect("compiles");
    let _ = Server::new(Store::memory())
        .assistant("agent", app.clone())
        .assistant("agent", app);
}
