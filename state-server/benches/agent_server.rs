//! The Agent Server against LangGraph's (BENCHMARKS.md section 16, issue
//! 34's speed list): both servers run as processes of their own on this
//! machine, in the same run, driven by the same load generator (this
//! binary: tokio + reqwest, HTTP/1.1 keep-alive, one connection pool).
//!
//! - **Ours**: this binary run again with `AGENT_SERVER_CHILD` set
//!   (`memory`, or `sqlite:<file>`), serving the reference app's `agent`
//!   (agent → tools → agent → END, no model, custom events as the
//!   reference writes them) and `hitl` (an interrupt, then a node) on a
//!   loopback port.
//! - **LangGraph's**: `langgraph dev --no-reload` (the venv that
//!   `state-server/benches/agent_server/langgraph.sh` makes under
//!   `target/`) serving a copy of `../shared/langgraph-server/reference-app`.
//!
//! Per server:
//! - **Load**: `CLIENTS` clients, each in a loop `POST /threads` then
//!   `POST /threads/{id}/runs/wait` with the tool loop's input, for a fixed
//!   time: runs/s, server CPU per run (utime + stime of the server's
//!   processes from `/proc/<pid>/stat`, before and after), the server's
//!   `VmRSS` after the load, the client's own CPU.
//! - **First event**: one client, `POST /threads` then `POST
//!   /threads/{id}/runs/stream`; the time from sending the stream request
//!   to the first whole SSE event (`metadata`), each stream read to its
//!   end before the next run.
//! - **Interrupt + resume**: one client, `POST /threads`, then
//!   `runs/wait` on `hitl` (answers `__interrupt__`) and `runs/wait` with
//!   `command: {"resume": ..}`: the two waits' time.
//! - **Same runs** (ours on memory, after LangGraph's server): a fresh
//!   server on `Store::memory()` driven by the load's `CLIENTS` clients
//!   until they have started as many runs as LangGraph's served in its
//!   warm-up and load, then its `VmRSS`: the memory after the same load
//!   (a memory store keeps every run, and ours serves many more in the
//!   load's time).
//! - **Curve** (ours on SQLite): runs/s with 1 to 64 clients.
//! - **Worker processes on PostgreSQL** (`agent_server/postgres.rs`): one
//!   API process (`Server::workers(0)`) and 1, then 2 worker processes on
//!   one database of a throwaway PostgreSQL cluster, the tool loop's
//!   nodes each waiting 50 ms (a model call): runs/s and their ratio.
//!
//! Run: `cargo bench -p state-server --bench agent_server` (about 9
//! minutes; `AGENT_BENCH_LANGGRAPH=0` leaves LangGraph's server out,
//! `AGENT_BENCH_MAIN=0` ours on memory and SQLite (the first tables),
//! `AGENT_BENCH_MEMORY=0` ours on memory only,
//! `AGENT_BENCH_CURVE=0` the curve, `AGENT_BENCH_PG=0` the PostgreSQL
//! workers, `AGENT_BENCH_SAME_RUNS=0` the same runs (`=<n>`: n runs when
//! LangGraph's server is left out); `AGENT_BENCH_SECS` sets the load's
//! length, 15 by default;
//! `AGENT_SERVER_NODELAY=0` serves without `TCP_NODELAY`, as
//! `axum::serve` does by default). It prints the tables and writes
//! `target/agent-server-bench.json` (the PostgreSQL part
//! `target/agent-server-bench-postgres.json`). Without
//! `--bench` (under `cargo test --all-targets`) it only says how to run
//! it: nothing here is timed in the tests.

use reqwest::Client;
use serde_json::{Value, json};
use state_core::{AgentState, Message, Messages, State, ToolCall};
use state_graph::{Ctx, END, NodeError, START, StateGraph};
use state_server::Server;
use state_store::Store;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// The throwaway PostgreSQL cluster of state-store's tests and benches
// (initdb + pg_ctl in a temporary directory), shared rather than copied.
#[path = "../../state-store/tests/it/support/postgres.rs"]
mod pg_cluster;
// The PostgreSQL mode: an API process and worker processes.
#[path = "agent_server/postgres.rs"]
mod postgres;

/// Set in our server's process: `memory`, `sqlite:<file>`, `pg-api:<url>`
/// (routes only, runs left to worker processes) or `pg-worker:<url>` (a
/// worker process: no routes).
const CHILD_ENV: &str = "AGENT_SERVER_CHILD";
/// How many run workers our server has (its default without it).
const WORKERS_ENV: &str = "AGENT_SERVER_WORKERS";
/// The concurrent clients of the load (the 16).
const CLIENTS: usize = 16;

// ------------------------------------------------------------ the graphs

/// The reference app's `State`: the conversation.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
}

/// The reference app's `HState`: the conversation and the answer.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Ask {
    /// The conversation.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// The human's answer to the interrupt.
    pub answer: String,
}

/// The reference app's `agent`: calls `echo` with the human's text, then
/// answers with what the tool said; a custom event each time.
fn agent(s: &Chat, ctx: &Ctx) -> ChatDelta {
    let last = s.messages.last();
    let n = s.messages.len();
    let reply = match last.and_then(Message::tool_call_id) {
        Some(_) => {
            ctx.write_custom(json!({"progress": "final answer", "n_messages": n}));
            Message::ai(format!(
                "The tool said: {}",
                last.map(Message::text).unwrap_or_default()
            ))
        }
        None => {
            ctx.write_custom(json!({"progress": "calling tool", "n_messages": n}));
            let text = last.map(Message::text).unwrap_or_default();
            Message::ai("")
                .with_tool_calls([ToolCall::new("echo", json!({"text": text})).with_id("call_1")])
        }
    };
    Chat::delta().messages(vec![reply])
}

/// The reference app's `tools`: answers each tool call with `echo:<text>`.
fn tools(s: &Chat) -> ChatDelta {
    let calls = s
        .messages
        .last()
        .map(|m| m.tool_calls().to_vec())
        .unwrap_or_default();
    let results = calls
        .iter()
        .map(|call| {
            let text = call.args["text"].as_str().unwrap_or_default();
            Message::tool_result(call, format!("echo:{text}")).with_name("echo")
        })
        .collect::<Vec<_>>();
    Chat::delta().messages(results)
}

/// Our server: the reference app's `agent` and `hitl` on `store`; with
/// `node_wait`, each of the tool loop's nodes first waits that long (a
/// model or tool call's time, spent awaiting, not computing).
fn server(store: Store, node_wait: Option<Duration>) -> Server {
    let mut loop_graph = StateGraph::<Chat>::new();
    match node_wait {
        None => {
            loop_graph.add_node("agent", agent);
            loop_graph.add_node("tools", tools);
        }
        Some(wait) => {
            loop_graph.add_node("agent", move |s: Arc<Chat>, ctx: Ctx| async move {
                tokio::time::sleep(wait).await;
                agent(&s, &ctx)
            });
            loop_graph.add_node("tools", move |s: Arc<Chat>| async move {
                tokio::time::sleep(wait).await;
                tools(&s)
            });
        }
    }
    loop_graph.add_edge(START, "agent");
    loop_graph.add_conditional_edges(
        "agent",
        |s: &Chat| match s.messages.last().map(|m| m.tool_calls().is_empty()) {
            Some(false) => "tools",
            _ => END,
        },
        ["tools", END],
    );
    loop_graph.add_edge("tools", "agent");
    let mut hitl = StateGraph::<Ask>::new();
    hitl.add_node("ask", |_: &Ask, ctx: &Ctx| {
        let answer = ctx.interrupt(json!({"question": "What is your name?"}))?;
        let name = answer.as_str().unwrap_or_default().to_owned();
        let hello = Message::ai(format!("Hello, {name}!"));
        Ok::<_, NodeError>(Ask::delta().answer(name).messages(vec![hello]))
    });
    hitl.add_node("finish", |s: &Ask| {
        Ask::delta().messages(vec![Message::ai(format!("done ({})", s.answer))])
    });
    hitl.add_edge(START, "ask");
    hitl.add_edge("ask", "finish");
    hitl.add_edge("finish", END);
    let mut server = Server::new(store)
        .assistant(
            "agent",
            loop_graph.compile().expect("the tool loop compiles"),
        )
        .assistant("hitl", hitl.compile().expect("hitl compiles"));
    if let Some(n) = std::env::var(WORKERS_ENV).ok().and_then(|n| n.parse().ok()) {
        server = server.workers(n);
    }
    server
}

/// Our server's process: serves until its standard input closes (the
/// harness went away) and prints `listening <addr>` once it listens; a
/// worker process (`pg-worker:<url>`) prints `working` once its workers
/// run.
fn child(kind: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        // Standard input closes when the harness ends, however it ends.
        let gone = tokio::task::spawn_blocking(|| {
            let mut sink = String::new();
            while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        });
        if let Some(url) = kind.strip_prefix("pg-worker:") {
            return postgres::worker(url, gone).await;
        }
        let (store, node_wait) = if let Some(path) = kind.strip_prefix("sqlite:") {
            (Store::sqlite(path).await.expect("a SQLite store"), None)
        } else if let Some(url) = kind.strip_prefix("pg-api:") {
            let store = Store::postgres(url).await.expect("a PostgreSQL store");
            (store, Some(postgres::NODE_WAIT))
        } else {
            (Store::memory(), None)
        };
        let router = server(store, node_wait).router::<Chat>();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        println!("listening {}", listener.local_addr().expect("its address"));
        let nodelay = std::env::var("AGENT_SERVER_NODELAY").as_deref() != Ok("0");
        let listener = axum::serve::ListenerExt::tap_io(listener, move |tcp| {
            let _ = tcp.set_nodelay(nodelay);
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = gone.await;
            })
            .await
            .expect("serve");
    });
}

// ------------------------------------------------------- the processes

/// A server process under test.
struct Served {
    name: String,
    base: String,
    child: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        // SIGTERM first (uvicorn's clean stop), then SIGKILL.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This binary as our server's process on `kind` (see [`CHILD_ENV`]),
/// with `workers`; the process and the first line it printed.
fn spawn_ours(kind: &str, workers: Option<usize>) -> (Child, String) {
    let mut command = Command::new(std::env::current_exe().expect("this binary"));
    command
        .env(CHILD_ENV, kind)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if let Some(n) = workers {
        command.env(WORKERS_ENV, n.to_string());
    }
    let mut child = command.spawn().expect("start our server");
    let stdout = child.stdout.take().expect("its stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("its first line");
    (child, line)
}

/// Our server on `kind` (`memory`, `sqlite:<file>`, `pg-api:<url>`),
/// with `workers`.
fn start_ours(name: &str, kind: &str, workers: Option<usize>) -> Served {
    let (child, line) = spawn_ours(kind, workers);
    let addr = line
        .trim()
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("our server said {line:?}"))
        .to_owned();
    Served {
        name: name.to_owned(),
        base: format!("http://{addr}"),
        child,
    }
}

/// The workspace's root (this crate's parent).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// `langgraph dev --no-reload` on a copy of the reference app in `dir`.
fn start_langgraph(dir: &Path) -> Option<Served> {
    let langgraph = std::env::var_os("LANGGRAPH_CMD")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/venv-langgraph-server/bin/langgraph"));
    let app = std::env::var_os("LANGGRAPH_REFERENCE_APP")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/langgraph-server/reference-app"));
    if !langgraph.exists() || !app.exists() {
        println!(
            "LangGraph's server left out: no {} (make it with state-server/benches/agent_server/langgraph.sh) or no {}",
            langgraph.display(),
            app.display()
        );
        return None;
    }
    for file in ["graphs.py", "langgraph.json"] {
        std::fs::copy(app.join(file), dir.join(file)).expect("copy the reference app");
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let log = std::fs::File::create(dir.join("langgraph.log")).expect("a log file");
    let child = Command::new(&langgraph)
        .args(["dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"])
        .args(["--port", &port.to_string()])
        .current_dir(dir)
        .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
        .env("LANGGRAPH_NO_VERSION_CHECK", "true")
        .env("LANGSMITH_TRACING", "false")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("the log"))
        .stderr(log)
        .spawn()
        .expect("start langgraph dev");
    Some(Served {
        name: "LangGraph (langgraph dev)".into(),
        base: format!("http://127.0.0.1:{port}"),
        child,
    })
}

/// The pids of `pid` and its descendants.
fn tree(pid: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(stat) = stat_fields(p) {
                parents.push((p, stat[1].parse::<u32>().unwrap_or(0)));
            }
        }
    }
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        all.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    all
}

/// `/proc/<pid>/stat`'s fields after the command's name (field 3 on).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// CPU seconds (user + system) of `pid` and its descendants.
fn cpu_seconds(pid: u32) -> f64 {
    let ticks: u64 = tree(pid)
        .into_iter()
        .filter_map(stat_fields)
        .map(|f| f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0))
        .sum();
    ticks as f64 / clock_ticks()
}

/// This process's CPU seconds.
fn own_cpu_seconds() -> f64 {
    cpu_seconds_of(std::process::id())
}

fn cpu_seconds_of(pid: u32) -> f64 {
    stat_fields(pid).map_or(0.0, |f| {
        (f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0)) as f64
            / clock_ticks()
    })
}

/// The kernel's clock ticks per second (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// `VmRSS` of `pid` and its descendants, in MiB.
fn rss_mib(pid: u32) -> f64 {
    tree(pid)
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
        .filter_map(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse::<f64>().ok()
        })
        .sum::<f64>()
        / 1024.0
}

/// The machine's load average (1, 5, 15 minutes).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

// ------------------------------------------------------------- the client

/// `POST base+path` with a JSON body; the answer's JSON.
async fn post(client: &Client, url: String, body: &Value) -> Result<Value, String> {
    let response = client
        .post(&url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = response.status();
    let bytes = response
        .bytes()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "POST {url}: {status} {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("POST {url}: {e}"))
}

/// A new thread's id.
async fn new_thread(client: &Client, base: &str) -> Result<String, String> {
    let thread = post(client, format!("{base}/threads"), &json!({})).await?;
    thread["thread_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no thread_id in {thread}"))
}

/// The tool loop's input (the wire contract's `runs.wait` of `agent`).
fn loop_input() -> Value {
    json!({"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": "ping"}]}})
}

/// One run of the tool loop on a new thread; checks its answer.
async fn one_run(client: &Client, base: &str) -> Result<(), String> {
    let thread = new_thread(client, base).await?;
    let values = post(
        client,
        format!("{base}/threads/{thread}/runs/wait"),
        &loop_input(),
    )
    .await?;
    let messages = values["messages"].as_array().map_or(0, Vec::len);
    if messages != 4 {
        return Err(format!(
            "the tool loop ended with {messages} messages: {values}"
        ));
    }
    Ok(())
}

/// What a load of `clients` for `time` did.
struct Load {
    clients: usize,
    runs: usize,
    errors: usize,
    first_error: Option<String>,
    seconds: f64,
    server_cpu: f64,
    client_cpu: f64,
    rss_after: f64,
    latency_p50: Duration,
}

impl Load {
    fn runs_per_s(&self) -> f64 {
        self.runs as f64 / self.seconds
    }
    fn cpu_ms_per_run(&self) -> f64 {
        self.server_cpu * 1000.0 / self.runs.max(1) as f64
    }
}

/// When a load stops.
#[derive(Clone, Copy)]
enum Until {
    /// After this long (the runs in flight then end first).
    Time(Duration),
    /// Once this many runs are started (counted over all the clients).
    Runs(usize),
}

/// A load of a fixed time, as most are.
impl From<Duration> for Until {
    fn from(time: Duration) -> Until {
        Until::Time(time)
    }
}

/// `clients` clients, each creating a thread and waiting on a run of
/// the tool loop in a loop, `until` a time or a number of runs.
async fn load(server: &Served, client: &Client, clients: usize, until: impl Into<Until>) -> Load {
    let until = until.into();
    let pid = server.child.id();
    let stop = Arc::new(AtomicBool::new(false));
    // The runs started, and how many to start.
    let started = Arc::new(AtomicUsize::new(0));
    let limit = match until {
        Until::Time(_) => usize::MAX,
        Until::Runs(n) => n,
    };
    let cpu0 = cpu_seconds(pid);
    let own0 = own_cpu_seconds();
    let start = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let client = client.clone();
            let base = server.base.clone();
            let stop = stop.clone();
            let started = started.clone();
            tokio::spawn(async move {
                let mut times = Vec::new();
                let mut errors = Vec::new();
                while !stop.load(Ordering::Relaxed)
                    && started.fetch_add(1, Ordering::Relaxed) < limit
                {
                    let t = Instant::now();
                    match one_run(&client, &base).await {
                        Ok(()) => times.push(t.elapsed()),
                        Err(e) => errors.push(e),
                    }
                }
                (times, errors)
            })
        })
        .collect();
    if let Until::Time(time) = until {
        tokio::time::sleep(time).await;
        stop.store(true, Ordering::Relaxed);
    }
    let mut times = Vec::new();
    let mut errors = Vec::new();
    for task in tasks {
        let (t, e) = task.await.expect("a client");
        times.extend(t);
        errors.extend(e);
    }
    let seconds = start.elapsed().as_secs_f64();
    let server_cpu = cpu_seconds(pid) - cpu0;
    let client_cpu = own_cpu_seconds() - own0;
    times.sort();
    Load {
        clients,
        runs: times.len(),
        errors: errors.len(),
        first_error: errors.into_iter().next(),
        seconds,
        server_cpu,
        client_cpu,
        rss_after: rss_mib(pid),
        latency_p50: percentile(&times, 0.5),
    }
}

/// The `q` quantile of sorted `times` (nearest rank).
fn percentile(times: &[Duration], q: f64) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
    times[rank - 1]
}

/// From sending `POST /threads/{id}/runs/stream` to its first whole SSE
/// event, `n` runs one after another (each stream read to its end).
async fn first_events(server: &Served, client: &Client, n: usize) -> Result<Vec<Duration>, String> {
    let base = &server.base;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let thread = new_thread(client, base).await?;
        let url = format!("{base}/threads/{thread}/runs/stream");
        let t = Instant::now();
        let mut response = client
            .post(&url)
            .header("content-type", "application/json")
            .body(loop_input().to_string())
            .send()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("POST {url}: {}", response.status()));
        }
        let mut seen = Vec::new();
        let mut first = None;
        let mut events = 0;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("POST {url}: {e}"))?
        {
            seen.extend_from_slice(&chunk);
            if first.is_none() && whole_event(&seen) {
                first = Some(t.elapsed());
            }
            events = count_events(&seen);
        }
        let first = first.ok_or_else(|| format!("POST {url}: no event"))?;
        if events < 2 {
            return Err(format!("POST {url}: {events} events"));
        }
        times.push(first);
    }
    times.sort();
    Ok(times)
}

/// Whether `seen` holds a whole SSE event (`event:` line, then a blank
/// line).
fn whole_event(seen: &[u8]) -> bool {
    let text = String::from_utf8_lossy(seen).replace("\r\n", "\n");
    text.find("event:")
        .is_some_and(|at| text[at..].contains("\n\n"))
}

fn count_events(seen: &[u8]) -> usize {
    String::from_utf8_lossy(seen).matches("event:").count()
}

/// `n` interrupt + resume round trips of `hitl`, one after another: the
/// time of the run that pauses plus the run that resumes.
async fn interrupts(server: &Served, client: &Client, n: usize) -> Result<Vec<Duration>, String> {
    let base = &server.base;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let thread = new_thread(client, base).await?;
        let url = format!("{base}/threads/{thread}/runs/wait");
        let t = Instant::now();
        let paused = post(
            client,
            url.clone(),
            &json!({"assistant_id": "hitl", "input": {"messages": [{"role": "user", "content": "hi"}]}}),
        )
        .await?;
        if paused["__interrupt__"].as_array().is_none_or(Vec::is_empty) {
            return Err(format!("hitl did not pause: {paused}"));
        }
        let done = post(
            client,
            url,
            &json!({"assistant_id": "hitl", "command": {"resume": "Alice"}}),
        )
        .await?;
        times.push(t.elapsed());
        let last = done["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m["content"].clone());
        if last != Some(json!("done (Alice)")) {
            return Err(format!("hitl did not finish: {done}"));
        }
    }
    times.sort();
    Ok(times)
}

/// Waits for `GET /ok` (LangGraph's server takes seconds to start).
async fn ready(server: &Served, client: &Client) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        if let Ok(r) = client.get(format!("{}/ok", server.base)).send().await
            && r.status().is_success()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not answer /ok in 180 s",
            server.name
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

// ---------------------------------------------------------------- report

/// What one server measured.
struct Measured {
    name: String,
    /// The warm-up's runs (the server holds them too).
    warm_runs: usize,
    load: Load,
    first: Vec<Duration>,
    hitl: Vec<Duration>,
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn print_load(name: &str, l: &Load) {
    println!(
        "{name} | {} | {} | {:.1} | {:.2} ms | {:.1} MiB | {:.2} s ({:.0}% of the time) | {} | {}",
        l.clients,
        l.runs,
        l.runs_per_s(),
        l.cpu_ms_per_run(),
        l.rss_after,
        l.client_cpu,
        100.0 * l.client_cpu / l.seconds,
        ms(l.latency_p50),
        match &l.first_error {
            Some(e) => format!("{} errors, first: {e}", l.errors),
            None => "0 errors".into(),
        }
    );
}

fn load_json(l: &Load) -> Value {
    json!({
        "clients": l.clients, "runs": l.runs, "errors": l.errors, "seconds": l.seconds,
        "runs_per_s": l.runs_per_s(), "server_cpu_s": l.server_cpu,
        "server_cpu_ms_per_run": l.cpu_ms_per_run(), "rss_after_mib": l.rss_after,
        "client_cpu_s": l.client_cpu, "latency_p50_ms": l.latency_p50.as_secs_f64() * 1000.0,
    })
}

fn times_json(times: &[Duration]) -> Value {
    json!({
        "n": times.len(),
        "p50_ms": percentile(times, 0.5).as_secs_f64() * 1000.0,
        "p99_ms": percentile(times, 0.99).as_secs_f64() * 1000.0,
        "max_ms": times.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    })
}

// ------------------------------------------------------------------ main

/// Numbers of one full run.
struct Plan {
    time: Duration,
    first_ours: usize,
    first_langgraph: usize,
    hitl_ours: usize,
    hitl_langgraph: usize,
    curve: Vec<usize>,
    /// `AGENT_BENCH_SAME_RUNS`: 0 leaves the same runs out; n is their
    /// count when LangGraph's server is left out (its count otherwise).
    same_runs: Option<usize>,
}

fn main() {
    if let Ok(kind) = std::env::var(CHILD_ENV) {
        return child(&kind);
    }
    if !std::env::args().any(|arg| arg == "--bench") {
        println!(
            "agent_server: a benchmark of whole server processes; run it with \
             `cargo bench -p state-server --bench agent_server` (nothing is timed under cargo test)"
        );
        return;
    }
    let secs = std::env::var("AGENT_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let plan = Plan {
        time: Duration::from_secs(secs),
        first_ours: 500,
        first_langgraph: 30,
        hitl_ours: 200,
        hitl_langgraph: 10,
        curve: if std::env::var("AGENT_BENCH_CURVE").as_deref() == Ok("0") {
            Vec::new()
        } else {
            vec![1, 2, 4, 8, 16, 32, 64]
        },
        same_runs: std::env::var("AGENT_BENCH_SAME_RUNS")
            .ok()
            .and_then(|n| n.parse().ok()),
    };
    let with_langgraph = std::env::var("AGENT_BENCH_LANGGRAPH").as_deref() != Ok("0");
    let with_main = std::env::var("AGENT_BENCH_MAIN").as_deref() != Ok("0");
    let with_pg = std::env::var("AGENT_BENCH_PG").as_deref() != Ok("0");
    // Plain HTTP only, but reqwest is built with rustls (state-agent's
    // features) and wants a provider installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(run(&plan, with_main, with_langgraph));
    if with_pg {
        runtime.block_on(postgres::run(plan.time));
    }
}

async fn run(plan: &Plan, with_main: bool, with_langgraph: bool) {
    if !with_main && !with_langgraph && plan.curve.is_empty() && plan.same_runs.is_none() {
        return; // only the PostgreSQL workers asked for
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let client = Client::builder()
        .pool_max_idle_per_host(128)
        .timeout(Duration::from_secs(120))
        .build()
        .expect("an HTTP client");
    let load_start = load_average();
    println!(
        "agent_server: {CLIENTS} clients, {} s a load; load average at start {load_start}",
        plan.time.as_secs()
    );
    let mut measured = Vec::new();
    let sqlite = format!("sqlite:{}", dir.path().join("agent.db").display());
    let lg_dir = dir.path().join("langgraph");
    std::fs::create_dir_all(&lg_dir).expect("a directory for LangGraph");
    let mut servers: Vec<Box<dyn Fn() -> Option<Served> + '_>> = Vec::new();
    // `AGENT_BENCH_MEMORY=0`: ours on SQLite only (A/B runs of a change
    // to the SQLite path).
    if with_main && std::env::var("AGENT_BENCH_MEMORY").as_deref() != Ok("0") {
        servers.push(Box::new(|| {
            Some(start_ours("ours, Store::memory()", "memory", None))
        }));
    }
    if with_main {
        servers.push(Box::new(|| Some(start_ours("ours, SQLite", &sqlite, None))));
    }
    if with_langgraph {
        servers.push(Box::new(|| start_langgraph(&lg_dir)));
    }
    for start in &servers {
        let Some(server) = start() else { continue };
        ready(&server, &client).await;
        let ours = !server.name.starts_with("LangGraph");
        // Warm-up: the first runs load the graphs (LangGraph) and fill
        // the connection pool.
        let warm = load(&server, &client, CLIENTS, Duration::from_secs(3)).await;
        println!("{}: load ...", server.name);
        let l = load(&server, &client, CLIENTS, plan.time).await;
        println!("{}: first events ...", server.name);
        let n = if ours {
            plan.first_ours
        } else {
            plan.first_langgraph
        };
        let first = first_events(&server, &client, n)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", server.name));
        println!("{}: interrupt + resume ...", server.name);
        let n = if ours {
            plan.hitl_ours
        } else {
            plan.hitl_langgraph
        };
        let hitl = interrupts(&server, &client, n)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", server.name));
        measured.push(Measured {
            name: server.name.clone(),
            warm_runs: warm.runs,
            load: l,
            first,
            hitl,
        });
    }

    // Ours on memory after as many runs as LangGraph's server served.
    let langgraph = measured
        .iter()
        .find(|m| m.name.starts_with("LangGraph"))
        .map(|m| (m.warm_runs + m.load.runs, m.load.rss_after));
    let same_runs = match (plan.same_runs, langgraph) {
        (Some(0), _) | (None, None) => None,
        (_, Some((n, _))) | (Some(n), None) => Some(n),
    };
    let same = match same_runs {
        Some(n) => {
            let server = start_ours("ours, Store::memory()", "memory", None);
            ready(&server, &client).await;
            println!("{}: {n} runs (the same runs) ...", server.name);
            Some(load(&server, &client, CLIENTS, Until::Runs(n)).await)
        }
        None => None,
    };

    // The curve on SQLite: a fresh server per point, default workers and
    // as many workers as clients.
    let mut curve = Vec::new();
    for &clients in &plan.curve {
        for workers in [None, Some(clients.max(8))] {
            if workers == Some(8) {
                continue;
            }
            let file = dir.path().join(format!("curve-{clients}-{workers:?}.db"));
            let server = start_ours(
                "ours, SQLite",
                &format!("sqlite:{}", file.display()),
                workers,
            );
            ready(&server, &client).await;
            let _ = load(&server, &client, clients, Duration::from_secs(1)).await;
            let l = load(&server, &client, clients, plan.time / 3).await;
            curve.push((workers, l));
        }
    }
    let load_end = load_average();

    println!();
    println!(
        "load: {CLIENTS} clients, POST /threads + POST /threads/{{id}}/runs/wait (tool loop), {} s",
        plan.time.as_secs()
    );
    println!(
        "server | clients | runs | runs/s | server CPU per run | server RSS after | client CPU | run p50 | errors"
    );
    for m in &measured {
        print_load(&m.name, &m.load);
    }
    println!("RSS after the load per run served (warm-up and load)");
    for m in &measured {
        let served = m.warm_runs + m.load.runs;
        println!(
            "{} | {served} runs | {:.1} KiB a run",
            m.name,
            m.load.rss_after * 1024.0 / served as f64
        );
    }
    if let Some(l) = &same {
        let errors = match &l.first_error {
            Some(e) => format!(" ({} errors, first: {e})", l.errors),
            None => String::new(),
        };
        let theirs = langgraph.map_or(String::new(), |(runs, rss)| {
            let ratio = rss / l.rss_after;
            format!(", LangGraph {runs} runs {rss:.1} MiB: {ratio:.1}x less")
        });
        let what = match langgraph {
            Some(_) => "the same runs as LangGraph's",
            None => "AGENT_BENCH_SAME_RUNS runs",
        };
        println!(
            "RSS after {what}: ours, Store::memory() {} runs {:.1} MiB{theirs}{errors}",
            l.runs, l.rss_after
        );
    }
    println!();
    println!("runs/stream: creation to first event | runs | p50 | p99 | max");
    for m in &measured {
        println!(
            "{} | {} | {} | {} | {}",
            m.name,
            m.first.len(),
            ms(percentile(&m.first, 0.5)),
            ms(percentile(&m.first, 0.99)),
            ms(m.first.last().copied().unwrap_or_default())
        );
    }
    println!();
    println!("hitl: interrupt + resume round trip | round trips | p50 | p99");
    for m in &measured {
        println!(
            "{} | {} | {} | {}",
            m.name,
            m.hitl.len(),
            ms(percentile(&m.hitl, 0.5)),
            ms(percentile(&m.hitl, 0.99))
        );
    }
    println!();
    println!(
        "curve, ours on SQLite ({} s a point)",
        (plan.time / 3).as_secs()
    );
    println!(
        "workers | clients | runs | runs/s | server CPU per run | server RSS after | client CPU | run p50 | errors"
    );
    for (workers, l) in &curve {
        let name = workers.map_or("8 (default)".to_owned(), |w| w.to_string());
        print_load(&name, l);
    }
    if let (Some(lg), true) = (
        measured.iter().find(|m| m.name.starts_with("LangGraph")),
        measured.len() > 1,
    ) {
        println!();
        println!("ratios against LangGraph");
        for m in measured.iter().filter(|m| !m.name.starts_with("LangGraph")) {
            println!(
                "{}: runs/s {:.1}x, CPU per run {:.1}x less, RSS {:.1}x less, first event p50 {:.0}x, round trip p50 {:.0}x",
                m.name,
                m.load.runs_per_s() / lg.load.runs_per_s(),
                lg.load.cpu_ms_per_run() / m.load.cpu_ms_per_run(),
                lg.load.rss_after / m.load.rss_after,
                percentile(&lg.first, 0.5).as_secs_f64() / percentile(&m.first, 0.5).as_secs_f64(),
                percentile(&lg.hitl, 0.5).as_secs_f64() / percentile(&m.hitl, 0.5).as_secs_f64(),
            );
        }
    }
    println!("load average at start {load_start}, at end {load_end}");
    let report = json!({
        "load_average": {"start": load_start, "end": load_end},
        "servers": measured.iter().map(|m| json!({
            "name": m.name, "warm_up_runs": m.warm_runs, "load": load_json(&m.load),
            "first_event": times_json(&m.first), "interrupt_resume": times_json(&m.hitl),
        })).collect::<Vec<_>>(),
        "same_runs": same.as_ref().map(|l| json!({
            "ours_memory": load_json(l),
            "langgraph": langgraph.map(|(runs, rss)| json!({"runs": runs, "rss_after_mib": rss})),
            "rss_less": langgraph.map(|(_, rss)| rss / l.rss_after),
        })),
        "curve_sqlite": curve.iter().map(|(w, l)| json!({"workers": w, "load": load_json(l)})).collect::<Vec<_>>(),
    });
    let out = root().join("target/agent-server-bench.json");
    if let Err(e) = std::fs::write(
        &out,
        serde_json::to_string_pretty(&report).unwrap_or_default(),
    ) {
        println!("could not write {}: {e}", out.display());
    } else {
        println!("wrote {}", out.display());
    }
}
