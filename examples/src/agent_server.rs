//! What `cargo run --example agent_server` serves: the seed graphs and the
//! quickstart's ReAct agent as assistants of LangGraph's Agent Server API,
//! the Rust equivalent of `langgraph dev` reading this `langgraph.json`:
//!
//! ```json
//! {
//!   "graphs": {
//!     "agent": "./react_agent.py:agent",
//!     "gaia": "./gaia/graph.py:graph",
//!     "ohmind": "./ohmind/graph.py:app",
//!     "therapy": "./therapy/graph.py:graph",
//!     "alpha_berkeley": "./alpha_berkeley/graph.py:graph",
//!     "agentflow": "./agentflow/graph.py:app"
//!   }
//! }
//! ```
//!
//! [`router`] builds the routes (`Server::new(store).assistant(..)` per
//! graph, the inspector beside them, and CORS so that LangGraph Studio and
//! Agent Chat UI, pages on other origins, may call them:
//! [`allowed_origin`]); [`Options`] reads
//! the command line; [`python_lines`] are the lines of `langgraph-sdk`
//! Python the example prints (and the README shows) to talk to it.
//!
//! Each graph keeps its models and its context as its own example runs
//! it: offline, the scripted models; GAIA runs with its demo user's
//! `RunnableConfig` (Ada, Europe/Paris), the therapy agent with the default
//! `WorkflowContext`. The store is indexed (GAIA's memory search ranks by
//! meaning), and GAIA's memories are the store's items, which
//! `client.store.search_items(["memories", "user_456"])` reads too.

use crate::gaia::{self, graph as gaia_graph};
use crate::langgraph::react_agent::{AgentModel, build_agent};
use crate::{agentflow, alpha_berkeley, ohmind, therapy};
use axum::http::{HeaderName, Method};
use state_core::MessagesState;
use state_graph::GraphError;
use state_server::Server;
use state_store::Store;
use std::path::PathBuf;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// The port `langgraph dev` listens on, and so this example by default.
pub const DEFAULT_PORT: u16 = 2024;

/// The SQLite file the example keeps its threads in, unless told otherwise
/// (`--db PATH`, or `--memory` for none), in the current directory (as
/// `langgraph dev` keeps its `.langgraph_api/`).
pub const DEFAULT_DB: &str = "agent_server.db";

/// The environment variable that may name the port (`--port` wins).
pub const PORT_VAR: &str = "AGENT_SERVER_PORT";

/// The graph ids served, as a `langgraph.json` would name them: the
/// quickstart's ReAct agent first, then the five seeds.
pub const GRAPH_IDS: [&str; 6] = [
    "agent",
    "gaia",
    "ohmind",
    "therapy",
    "alpha_berkeley",
    "agentflow",
];

/// The question the printed Python asks the ReAct agent.
pub const QUESTION: &str = crate::langgraph::react_agent::QUESTION;

/// Where the example keeps its threads and runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// In memory, gone when the server stops (`--memory`).
    Memory,
    /// A SQLite file, kept across restarts.
    Sqlite(PathBuf),
}

impl StoreChoice {
    /// The store, indexed for GAIA's memory search.
    ///
    /// # Errors
    ///
    /// When the SQLite file cannot be opened or migrated.
    pub async fn open(&self) -> Result<Store, state_store::StoreError> {
        let store = match self {
            StoreChoice::Memory => Store::memory(),
            StoreChoice::Sqlite(path) => Store::sqlite(path).await?,
        };
        Ok(gaia::memory::indexed(store))
    }

    /// One line saying where the threads are kept.
    pub fn describe(&self) -> String {
        match self {
            StoreChoice::Memory => {
                "in memory (--memory): the threads go when the server stops".to_owned()
            }
            StoreChoice::Sqlite(path) => format!(
                "in the SQLite file {} (--memory for none, --db PATH for another)",
                path.display()
            ),
        }
    }
}

/// The command line: `[--port N] [--memory | --db PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The loopback port to listen on.
    pub port: u16,
    /// Where the threads are kept.
    pub store: StoreChoice,
}

/// How to call the example, for a bad command line.
pub const USAGE: &str = "usage: cargo run --example agent_server -- [--port N] [--memory | --db PATH]\n\
    \x20 --port N    the loopback port (default 2024, or $AGENT_SERVER_PORT)\n\
    \x20 --memory    keep the threads in memory only\n\
    \x20 --db PATH   the SQLite file (default ./agent_server.db)";

impl Options {
    /// Reads `args` (without the program's name); `env_port` is the value
    /// of [`PORT_VAR`], if set.
    ///
    /// ```
    /// use state_examples::agent_server::{Options, StoreChoice};
    ///
    /// let options = Options::parse(["--port", "8123", "--memory"], None)?;
    /// assert_eq!(options.port, 8123);
    /// assert_eq!(options.store, StoreChoice::Memory);
    /// assert_eq!(Options::parse([] as [&str; 0], Some("9000"))?.port, 9000);
    /// # Ok::<(), String>(())
    /// ```
    ///
    /// # Errors
    ///
    /// An unknown argument, a missing or bad value, or both `--memory` and
    /// `--db`: the message says which.
    pub fn parse<I>(args: I, env_port: Option<&str>) -> Result<Options, String>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let port_of = |text: &str, from: &str| {
            text.trim()
                .parse::<u16>()
                .map_err(|_| format!("{from}: {text:?} is not a port (0 to 65535)"))
        };
        let mut port = match env_port {
            Some(text) => port_of(text, PORT_VAR)?,
            None => DEFAULT_PORT,
        };
        let (mut memory, mut db) = (false, None);
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            let mut value = |name: &str| {
                args.next()
                    .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
            };
            match arg.as_str() {
                "--port" => port = port_of(&value("--port")?, "--port")?,
                "--memory" => memory = true,
                "--db" => db = Some(PathBuf::from(value("--db")?)),
                "-h" | "--help" => return Err(USAGE.to_owned()),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        let store = match (memory, db) {
            (true, Some(_)) => {
                return Err(format!("--memory and --db exclude each other\n{USAGE}"));
            }
            (true, None) => StoreChoice::Memory,
            (false, db) => StoreChoice::Sqlite(db.unwrap_or_else(|| DEFAULT_DB.into())),
        };
        Ok(Options { port, store })
    }
}

/// The server: each graph of [`GRAPH_IDS`] an assistant, running its
/// threads in `store`. `model` is the ReAct agent's, and the agents' of
/// GAIA and OHMind when it is a provider's; offline
/// ([`AgentModel::Scripted`]) each seed keeps its own scripted model.
///
/// ```
/// use state_examples::agent_server::server;
/// use state_examples::langgraph::react_agent::{AgentModel, ScriptedModel};
///
/// let store = state_store::Store::memory();
/// let server = server(store, AgentModel::Scripted(ScriptedModel::new()))?;
/// let routes = server.router::<state_core::MessagesState>();
/// # Ok::<(), state_graph::GraphError>(())
/// ```
///
/// # Errors
///
/// When a graph does not compile (they do: the tests build them).
pub fn server(store: Store, model: AgentModel) -> Result<Server, GraphError> {
    let provider = match &model {
        AgentModel::Scripted(_) => None,
        other => Some(other.clone()),
    };
    let gaia = gaia_graph::shared(match provider.clone() {
        Some(model) => gaia::Gaia::with_model(model),
        None => gaia::Gaia::default(),
    });
    let ohmind = ohmind::graph::shared(match provider {
        Some(model) => ohmind::Ohmind::with_model(model),
        None => ohmind::Ohmind::new(),
    });
    // The server runs every graph on its own store (`with_store`): the
    // store given to each compile here is replaced.
    Ok(Server::new(store.clone())
        .assistant("agent", build_agent(model)?)
        .assistant(
            "gaia",
            gaia_graph::compile(&gaia, store.clone())?.with_context(gaia::demo::config()),
        )
        .assistant("ohmind", ohmind::graph::compile(&ohmind, store.clone())?)
        .assistant(
            "therapy",
            therapy::graph::compile(store.clone())?
                .with_context(therapy::WorkflowContext::default()),
        )
        .assistant(
            "alpha_berkeley",
            alpha_berkeley::graph::build(alpha_berkeley::graph::conversation())?,
        )
        .assistant(
            "agentflow",
            agentflow::order_graph().compile(store)?.graph().clone(),
        ))
}

/// The origins whose pages may call the server from a browser, besides
/// the loopback ones (`http://localhost:<any port>`, `http://127.0.0.1:..`,
/// where Agent Chat UI runs with `pnpm dev`): LangGraph Studio (both
/// regions) and Agent Chat UI's deployment.
pub const ALLOWED_ORIGINS: [&str; 3] = [
    "https://smith.langchain.com",
    "https://eu.smith.langchain.com",
    "https://agentchat.vercel.app",
];

/// Whether a page from `origin` may call the server: one of
/// [`ALLOWED_ORIGINS`], or a page served from this machine over HTTP.
///
/// ```
/// use state_examples::agent_server::allowed_origin;
///
/// assert!(allowed_origin("https://smith.langchain.com"));
/// assert!(allowed_origin("http://localhost:3000"));
/// assert!(!allowed_origin("https://evil.example"));
/// assert!(!allowed_origin("http://localhost.evil.example"));
/// ```
pub fn allowed_origin(origin: &str) -> bool {
    if ALLOWED_ORIGINS.contains(&origin) {
        return true;
    }
    ["http://localhost", "http://127.0.0.1", "http://[::1]"]
        .iter()
        .any(|host| match origin.strip_prefix(host) {
            Some(rest) => {
                rest.is_empty()
                    || rest.strip_prefix(':').is_some_and(|port| {
                        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                    })
            }
            None => false,
        })
}

/// The routes to serve: [`server`]'s, typed as the ReAct agent's state
/// (the inspector at `/` rebuilds its threads' state), under a CORS layer
/// that lets the pages of LangGraph Studio and Agent Chat UI (other
/// origins, calling the server from the browser) call them
/// ([`allowed_origin`]). `langgraph dev` lets any origin call it; this
/// server takes no token, so it lets only those. Starts the server's
/// workers (and its crons' scheduler).
///
/// # Errors
///
/// As [`server`].
///
/// # Panics
///
/// Outside a tokio runtime (the workers are its tasks).
pub fn router(store: Store, model: AgentModel) -> Result<axum::Router, GraphError> {
    let cors = CorsLayer::new()
        .allow_origin(AllowOrigin::predicate(|origin, _| {
            origin.to_str().is_ok_and(allowed_origin)
        }))
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers(AllowHeaders::mirror_request())
        // The headers LangGraph's clients read from an answer.
        .expose_headers([
            HeaderName::from_static("content-location"),
            HeaderName::from_static("location"),
            HeaderName::from_static("x-pagination-total"),
            HeaderName::from_static("x-pagination-next"),
        ])
        // Studio is a public page calling a loopback address (Chrome's
        // Private Network Access preflight asks for this).
        .allow_private_network(true);
    let server = server(store, model)?;
    // The workers and the crons' scheduler from the start: runs left
    // pending and crons due in the store go on after a restart at once,
    // not at the first run created.
    server.start_workers();
    Ok(server.router::<MessagesState>().layer(cors))
}

/// The lines of `langgraph-sdk` Python that talk to the server at `url`
/// (in `python -m asyncio`, which takes a top-level `await`): a client, a
/// thread, and a run of the ReAct agent waited for, its final state
/// printed.
///
/// ```
/// let lines = state_examples::agent_server::python_lines("http://127.0.0.1:2024");
/// assert!(lines.contains(r#"client = get_client(url="http://127.0.0.1:2024")"#));
/// ```
pub fn python_lines(url: &str) -> String {
    format!(
        "from langgraph_sdk import get_client\n\
         client = get_client(url=\"{url}\")\n\
         thread = await client.threads.create()\n\
         print(await client.runs.wait(thread[\"thread_id\"], \"agent\", input={{\"messages\": [{{\"role\": \"user\", \"content\": \"{QUESTION}\"}}]}}))\n"
    )
}

/// What the example prints once it listens at `url`, its store described
/// by `store`: the URL, the graphs, the Python to talk to it, and how to
/// point LangGraph Studio at it.
pub fn banner(url: &str, store: &str) -> String {
    let graphs = GRAPH_IDS.join(", ");
    // Unindented: pasted into Python as printed.
    let python = python_lines(url);
    format!(
        "LangGraph's Agent Server API (as `langgraph dev` serves it) at {url}\n\
         \x20 assistants: {graphs}\n\
         \x20 threads:    {store}\n\
         \x20 inspector:  {url}/\n\
         \x20 Studio:     https://smith.langchain.com/studio/?baseUrl={url}\n\
         \n\
         Talk to it from Python (pip install langgraph-sdk; then, in python -m asyncio):\n\
         \n\
         {python}\n\
         Ctrl-C stops it."
    )
}
