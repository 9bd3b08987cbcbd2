//! The `agent_server` example's server (`state_examples::agent_server`)
//! on an ephemeral loopback port, driven over real HTTP: every graph is an
//! assistant, the ReAct agent and a seed graph answer runs, the pages of
//! LangGraph Studio may call it and others may not; and LangGraph's own
//! Python client (`langgraph-sdk`, the venv state-server's tests use) runs
//! the very lines the example prints and the README shows.

use serde_json::{Value, json};
use state_examples::agent_server::{
    DEFAULT_PORT, GRAPH_IDS, Options, QUESTION, StoreChoice, banner, python_lines, router,
};
use state_examples::langgraph::react_agent::{AgentModel, ScriptedModel};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The react agent's scripted answer to [`QUESTION`].
const ANSWER: &str = "Here is what I found: It's always sunny in sf!";

/// The example's routes, on `store`, served on a fresh loopback port for
/// the rest of the test.
async fn serve(store: StoreChoice) -> SocketAddr {
    let store = store.open().await.expect("the store opens");
    let app =
        router(store, AgentModel::Scripted(ScriptedModel::new())).expect("the graphs compile");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("its address");
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    addr
}

/// An answer: its status, headers (names in lower case) and body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    #[track_caller]
    fn json(&self) -> Value {
        assert_eq!(self.status, 200, "{}", self.body);
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

/// One request. HTTP/1.0, so that the server sends the body as it is,
/// up to the connection's end (no chunks to decode: a long wait's
/// keep-alive newlines arrive as leading whitespace, which JSON skips).
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    let exchange = async {
        let mut socket = TcpStream::connect(addr).await.expect("connect");
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() {
            head.push_str("Content-Type: application/json\r\n");
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        socket.write_all(head.as_bytes()).await.expect("send");
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.expect("read the answer");
        let raw = String::from_utf8(raw).expect("a UTF-8 answer");
        let (head, body) = raw.split_once("\r\n\r\n").expect("a head");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .expect("a status line");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        Answer {
            status,
            headers,
            body: body.to_owned(),
        }
    };
    tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .expect("the server answers within 60 s")
}

/// A new thread's id.
async fn new_thread(addr: SocketAddr) -> String {
    let thread = request(addr, "POST", "/threads", &[], Some(json!({})))
        .await
        .json();
    thread["thread_id"]
        .as_str()
        .expect("a thread id")
        .to_owned()
}

/// `POST /threads/{id}/runs/wait` on a new thread: the final values.
async fn wait_run(addr: SocketAddr, graph: &str, input: Value) -> Value {
    let thread = new_thread(addr).await;
    let body = json!({"assistant_id": graph, "input": input});
    request(
        addr,
        "POST",
        &format!("/threads/{thread}/runs/wait"),
        &[],
        Some(body),
    )
    .await
    .json()
}

/// The text of the last message of `values`' `field`.
fn last_text<'v>(values: &'v Value, field: &str) -> &'v str {
    values[field]
        .as_array()
        .and_then(|messages| messages.last())
        .and_then(|message| message["content"].as_str())
        .unwrap_or_else(|| panic!("no last message in {values}"))
}

#[tokio::test]
async fn assistants_search_lists_every_graph() {
    let addr = serve(StoreChoice::Memory).await;
    let found = request(
        addr,
        "POST",
        "/assistants/search",
        &[],
        Some(json!({"limit": 50})),
    )
    .await
    .json();
    let mut ids: Vec<&str> = found
        .as_array()
        .expect("a list")
        .iter()
        .map(|a| a["graph_id"].as_str().expect("a graph id"))
        .collect();
    ids.sort_unstable();
    let mut expected = GRAPH_IDS.to_vec();
    expected.sort_unstable();
    assert_eq!(ids, expected);
    // Each has its graph drawn for Studio: the react agent's two nodes.
    let graph = request(addr, "GET", "/assistants/agent/graph", &[], None)
        .await
        .json();
    let nodes: Vec<&str> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    assert!(
        nodes.contains(&"agent") && nodes.contains(&"tools"),
        "{graph}"
    );
}

/// The react agent on the scripted model, on a SQLite file as the example
/// keeps it by default: the tool called, then the scripted answer.
#[tokio::test]
async fn the_react_agent_answers_a_run_on_sqlite() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let addr = serve(StoreChoice::Sqlite(dir.path().join("agent_server.db"))).await;
    let values = wait_run(
        addr,
        "agent",
        json!({"messages": [{"role": "user", "content": QUESTION}]}),
    )
    .await;
    assert_eq!(last_text(&values, "messages"), ANSWER, "{values}");
    let kinds: Vec<&str> = values["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(kinds, ["human", "ai", "tool", "ai"]);
}

/// GAIA's graph: the calendar question goes through its memory search,
/// its tool and back to the agent, which answers in the demo user's time
/// zone (the context it is served with); the question is remembered in
/// the store's items, which the store routes read.
#[tokio::test]
async fn a_seed_graph_runs_gaia_with_its_context_and_memory() {
    let addr = serve(StoreChoice::Memory).await;
    let question = "What meetings are on my calendar tomorrow?";
    let values = wait_run(
        addr,
        "gaia",
        json!({"query": question, "messages": [{"role": "user", "content": question}]}),
    )
    .await;
    assert_eq!(
        last_text(&values, "messages"),
        "You have 2 events tomorrow; I'll suggest a free slot in Europe/Paris.",
        "{values}"
    );
    assert_eq!(values["memories_stored"], json!(true));
    let memories = request(
        addr,
        "POST",
        "/store/items/search",
        &[],
        Some(json!({"namespace_prefix": ["memories", "user_456"]})),
    )
    .await
    .json();
    let texts: Vec<&str> = memories["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|item| item["value"]["text"].as_str())
        .collect();
    assert_eq!(texts, [question]);
}

/// LangGraph Studio's page (another origin, calling a loopback address)
/// may call the server, and so may a page on this machine (Agent Chat UI
/// in development); any other site may not.
#[tokio::test]
async fn studio_and_local_pages_may_call_it_other_sites_not() {
    let addr = serve(StoreChoice::Memory).await;
    for origin in ["https://smith.langchain.com", "http://localhost:3000"] {
        let preflight = request(
            addr,
            "OPTIONS",
            "/threads/search",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "POST"),
                ("Access-Control-Request-Headers", "content-type,x-api-key"),
                ("Access-Control-Request-Private-Network", "true"),
            ],
            None,
        )
        .await;
        assert_eq!(preflight.status, 200, "{origin}: {}", preflight.body);
        assert_eq!(
            preflight.header("access-control-allow-origin"),
            Some(origin)
        );
        assert_eq!(
            preflight.header("access-control-allow-private-network"),
            Some("true")
        );
        let info = request(addr, "GET", "/info", &[("Origin", origin)], None).await;
        assert_eq!(info.header("access-control-allow-origin"), Some(origin));
        assert!(
            info.header("access-control-expose-headers")
                .is_some_and(|h| h.contains("x-pagination-total")),
            "{:?}",
            info.headers
        );
    }
    let refused = request(
        addr,
        "GET",
        "/info",
        &[("Origin", "https://evil.example")],
        None,
    )
    .await;
    assert_eq!(refused.header("access-control-allow-origin"), None);
}

#[test]
fn the_command_line_chooses_the_port_and_the_store() {
    let defaults = Options::parse([] as [&str; 0], None).expect("no arguments");
    assert_eq!(defaults.port, DEFAULT_PORT);
    assert_eq!(
        defaults.store,
        StoreChoice::Sqlite(PathBuf::from("agent_server.db"))
    );
    let given = Options::parse(["--db", "x.db", "--port", "8123"], Some("9000")).expect("valid");
    assert_eq!(given.port, 8123, "--port wins over the environment");
    assert_eq!(given.store, StoreChoice::Sqlite(PathBuf::from("x.db")));
    assert_eq!(
        Options::parse([] as [&str; 0], Some("9000"))
            .expect("valid")
            .port,
        9000
    );
    for (args, env, says) in [
        (
            &["--port", "99999"][..],
            None,
            "--port: \"99999\" is not a port",
        ),
        (&["--port"], None, "--port needs a value"),
        (
            &["--memory", "--db", "x.db"],
            None,
            "--memory and --db exclude each other",
        ),
        (&["--bind", "0.0.0.0"], None, "unknown argument \"--bind\""),
        (
            &[],
            Some("http"),
            "AGENT_SERVER_PORT: \"http\" is not a port",
        ),
    ] {
        let error = Options::parse(args.iter().copied(), env).expect_err("refused");
        assert!(error.starts_with(says), "{args:?}: {error}");
    }
}

/// The Python with `langgraph-sdk` (as state-server's `agent_sdk` tests
/// find it), or a failure that says how to get it.
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

/// Runs `code` (Python that may `await` at the top, as in
/// `python -m asyncio`) with langgraph-sdk; its standard output, or a
/// failure with what it printed.
async fn run_python(code: &str) -> String {
    // Compiled with top-level await allowed, the code is a coroutine to run.
    let runner = "import ast, asyncio, sys\n\
                  code = compile(sys.stdin.read(), '<lines>', 'exec', flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)\n\
                  result = eval(code, {'__name__': '__main__'})\n\
                  if result is not None:\n    asyncio.run(result)\n";
    let mut child = tokio::process::Command::new(sdk_python())
        .args(["-c", runner])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the SDK's Python");
    let mut stdin = child.stdin.take().expect("its stdin");
    stdin
        .write_all(code.as_bytes())
        .await
        .expect("send the code");
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("Python ends within 120 s")
        .expect("Python runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the Python failed ({}):\n{code}\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The README's streamed run, after the lines the example prints.
const README_STREAM: &str = r#"async for part in client.runs.stream(thread["thread_id"], "agent",
                                     input={"messages": [{"role": "user", "content": "and in nyc?"}]},
                                     stream_mode="messages-tuple"):
    print(part.event, part.data)
"#;

/// The lines the example prints (the README shows them for its default
/// address), then the README's streamed run, run as they are by
/// LangGraph's Python client: the agent's scripted answer comes back, then
/// the second question's run streams its messages.
#[tokio::test]
async fn the_printed_python_lines_talk_to_it() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("the README");
    let default_lines = python_lines(&format!("http://127.0.0.1:{DEFAULT_PORT}"));
    for snippet in [default_lines.as_str(), README_STREAM] {
        assert!(
            readme.contains(snippet),
            "the README shows, as they are tested:\n{snippet}"
        );
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let addr = serve(StoreChoice::Sqlite(dir.path().join("agent_server.db"))).await;
    let url = format!("http://{addr}");
    let lines = python_lines(&url);
    let shown = banner(&url, "in memory");
    assert!(
        shown.contains(&format!("\n{lines}")),
        "the example prints them:\n{shown}"
    );
    assert!(shown.contains(&format!(
        "https://smith.langchain.com/studio/?baseUrl={url}\n"
    )));
    let printed = run_python(&format!("{lines}{README_STREAM}")).await;
    let (waited, streamed) = printed.split_once('\n').expect("two parts");
    assert!(waited.contains(ANSWER), "{waited}");
    assert!(waited.contains("'name': 'get_weather'"), "{waited}");
    assert!(streamed.starts_with("metadata {'run_id': "), "{streamed}");
    assert!(streamed.contains("It's always sunny in nyc!"), "{streamed}");
    assert!(
        streamed.contains("'langgraph_node': 'agent'")
            && streamed.contains("'langgraph_node': 'tools'"),
        "{streamed}"
    );
}

/// The agent's tokens streamed over the SDK (`runs.stream`,
/// `messages-tuple`) make its replies; AgentFlow's order, paused before
/// checkout, is placed by the README's `command={"resume": ..}`.
#[tokio::test]
async fn the_sdk_streams_tokens_and_resumes_an_interrupt() {
    let addr = serve(StoreChoice::Memory).await;
    let script = format!(
        r#"from langgraph_sdk import get_client
client = get_client(url="http://{addr}")
thread = await client.threads.create()
tokens = []
async for part in client.runs.stream(thread["thread_id"], "agent", input={{"messages": [{{"role": "user", "content": "{QUESTION}"}}]}}, stream_mode="messages-tuple"):
    if part.event == "messages":
        chunk, metadata = part.data
        if chunk["type"] in ("AIMessageChunk", "ai"):
            tokens.append(chunk["content"])
print("streamed:", "".join(tokens))
order = await client.threads.create()
paused = await client.runs.wait(order["thread_id"], "agentflow", input={{"order_id": "A-1", "cart": [{{"sku": "tea", "qty": 2}}], "context": [{{"role": "user", "content": "Place my order"}}]}})
print("asks:", paused["__interrupt__"][0]["value"]["reason"])
done = await client.runs.wait(order["thread_id"], "agentflow", command={{"resume": {{"context": [{{"role": "user", "content": "yes"}}]}}}})
print("status:", done["execution_meta"]["status"], "said:", [m["content"] for m in done["context"]][-3:])
"#
    );
    let printed = run_python(&script).await;
    assert!(
        printed.contains(&format!(
            "streamed: Let me check the weather in sf.{ANSWER}"
        )),
        "{printed}"
    );
    assert!(
        printed.contains("asks: awaiting the customer's confirmation"),
        "{printed}"
    );
    assert!(
        printed.contains("status: completed said: ['yes', 'Order placed!',"),
        "{printed}"
    );
}
