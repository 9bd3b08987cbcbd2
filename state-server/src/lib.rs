#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod agent;
mod answer;
mod auth;
mod error;
mod extract;
mod guard;
mod inspect;
mod json;
mod listing;
mod origin;
mod report;
mod routes;
mod stream;
mod stream_cap;
mod typed;

#[cfg(feature = "graph")]
pub use agent::ServedGraph;
pub use auth::{Identity, Refusal};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{MethodRouter, get, post};
use routes::App;
use serde::Serialize;
use state_core::State;
use state_store::Store;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use typed::Typed;

/// The page size of `GET /threads` and `GET /threads/{id}/history` when a
/// request names no `limit` (or the largest page, if that is smaller).
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// The largest `limit` a request may ask for, unless
/// [`Server::max_page_size`] says otherwise; a larger one is a 400.
pub const MAX_PAGE_SIZE: usize = 1000;

/// The largest request body accepted, in bytes (1 MiB), unless
/// [`Server::body_limit`] says otherwise; a larger one is a 413. The
/// Agent Server API's bodies (a run's input, a state update, a store
/// item) and the inspector's forms are read whole, so this bounds what
/// one request can make the server hold.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// How many event streams may be open at once, unless
/// [`Server::max_streams`] says otherwise; one more is a 503.
pub const DEFAULT_MAX_STREAMS: usize = 1024;

/// How long `GET /threads/{id}/stream` may be silent before it sends a
/// keep-alive comment, unless [`Server::keep_alive`] says otherwise.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The routes over `store`, with the default options (no token, pages of
/// [`DEFAULT_PAGE_SIZE`] up to [`MAX_PAGE_SIZE`]): `GET /threads`,
/// `GET /threads/{id}/history`, `GET /threads/{id}/state` (the state
/// rebuilt as an `S` through its reducers), `GET /threads/{id}/stream`
/// (the steps as server-sent events, live), and the inspector's pages,
/// `GET /` and `GET /inspect/{id}` (read-only).
///
/// An [`axum::Router`] to serve as it is or to mount beside an app's own
/// routes with [`Router::merge`] or [`Router::nest`]; the same as
/// `Server::new(store).router::<S>()` (see [`Server`] for the options).
///
/// ```no_run
/// # use state_core::{AgentState, Messages};
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct Chat {
/// #     #[reducer(add_messages)]
/// #     messages: Messages,
/// # }
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use axum::{Router, routing::get};
/// use state_store::Store;
///
/// let store = Store::sqlite("agent.db").await?;
/// let app = Router::new()
///     .route("/health", get(|| async { "ok" }))
///     .nest("/agent", state_server::router::<Chat>(store)); // GET /agent/threads, ...
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8123").await?;
/// axum::serve(listener, app).await?;
/// # Ok(())
/// # }
/// ```
pub fn router<S>(store: Store) -> Router
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    Server::new(store).router::<S>()
}

/// A store to serve, with its options: a bearer token, page sizes, a body
/// limit. [`router`](Server::router) makes the routes.
///
/// ```
/// # use state_core::{AgentState, Messages};
/// # #[derive(AgentState, Debug, Clone, PartialEq)]
/// # struct Chat {
/// #     #[reducer(add_messages)]
/// #     messages: Messages,
/// # }
/// use state_server::Server;
/// use state_store::Store;
///
/// let routes: axum::Router = Server::new(Store::memory())
///     .token("s3cret")       // every request: `Authorization: Bearer s3cret`
///     .max_page_size(500)    // `?limit=` up to 500
///     .router::<Chat>();
/// ```
///
/// Its `Debug` output does not show the token.
#[derive(Clone)]
pub struct Server {
    store: Store,
    token: Option<Arc<str>>,
    max_page_size: usize,
    body_limit: usize,
    keep_alive: Duration,
    streams: stream_cap::Streams,
    allow_writes: bool,
    answerer: Option<answer::Answerer>,
    assistants: agent::Assistants,
    auth: Option<auth::AuthFn>,
    #[cfg(feature = "graph")]
    workers: usize,
    #[cfg(feature = "graph")]
    lease: Duration,
    /// The run workers, made with the first router or
    /// [`start_workers`](Server::start_workers) and shared by the clones.
    #[cfg(feature = "graph")]
    pool: Arc<std::sync::OnceLock<Arc<agent::WorkerPool>>>,
}

impl Server {
    /// Serves `store`, with no token, pages of [`DEFAULT_PAGE_SIZE`] up to
    /// [`MAX_PAGE_SIZE`], and bodies up to [`DEFAULT_BODY_LIMIT`] bytes.
    ///
    /// ```
    /// let server = state_server::Server::new(state_store::Store::memory());
    /// ```
    pub fn new(store: Store) -> Server {
        Server {
            store,
            token: None,
            max_page_size: MAX_PAGE_SIZE,
            body_limit: DEFAULT_BODY_LIMIT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            streams: stream_cap::Streams::new(DEFAULT_MAX_STREAMS),
            allow_writes: false,
            answerer: None,
            assistants: agent::Assistants::default(),
            auth: None,
            #[cfg(feature = "graph")]
            workers: agent::WORKERS,
            #[cfg(feature = "graph")]
            lease: agent::LEASE,
            #[cfg(feature = "graph")]
            pool: Arc::default(),
        }
    }

    /// Requires `Authorization: Bearer <token>` on every request to these
    /// routes: without it, or with another token, the answer is a 401
    /// (JSON, with `WWW-Authenticate: Bearer`) and no handler runs. Routes
    /// an app mounts beside them are not affected.
    ///
    /// ```
    /// let server = state_server::Server::new(state_store::Store::memory()).token("s3cret");
    /// ```
    ///
    /// # Panics
    ///
    /// If `token` is empty, or is not visible ASCII (a client could not
    /// send it in a header).
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Server {
        let token = token.into();
        assert!(
            !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()),
            "state_server::Server::token: a bearer token must be non-empty visible ASCII \
             (no spaces or control characters)"
        );
        self.token = Some(token.into());
        self
    }

    /// Runs `hook` on every request before its handler (LangGraph's
    /// custom auth, `@auth.authenticate`): it gets the request's method,
    /// URI and headers, and answers who it is from ([`Identity`]) or why
    /// not ([`Refusal`]: a 401 or 403 with its message as `detail`).
    ///
    /// An identity owns the threads and runs it creates and sees only
    /// those: another's thread is a 404 on every `/threads/{id}/...`
    /// path, as if absent (not a 403, which would say it exists), and
    /// searches and counts see its own. Its long-term store items are
    /// those under namespaces that begin with its id (a search without a
    /// prefix searches those; writing elsewhere is a 403). The inspector,
    /// `GET /threads` and threads written outside the API read every
    /// thread: they are for [`admin`](Identity::admin) identities, which
    /// see everything. With a [`token`](Server::token) as well, the token
    /// is checked first.
    ///
    /// ```
    /// use state_server::{Identity, Refusal, Server};
    ///
    /// let server = Server::new(state_store::Store::memory()).auth(|request| async move {
    ///     let key = request.headers().get("x-api-key").and_then(|v| v.to_str().ok());
    ///     match key {
    ///         Some("key-ada") => Ok(Identity::new("ada")),
    ///         Some("key-ops") => Ok(Identity::new("ops").admin()),
    ///         Some(_) => Err(Refusal::unauthorized("unknown API key")),
    ///         None => Err(Refusal::unauthorized("send an x-api-key header")),
    ///     }
    /// });
    /// ```
    #[must_use]
    pub fn auth<F, Fut>(mut self, hook: F) -> Server
    where
        F: Fn(axum::http::Request<()>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Identity, Refusal>> + Send + 'static,
    {
        self.auth = Some(Arc::new(move |request| Box::pin(hook(request))));
        self
    }

    /// The largest page (`?limit=`) a request may ask for, [`MAX_PAGE_SIZE`]
    /// by default; the default page is the smaller of this and
    /// [`DEFAULT_PAGE_SIZE`].
    ///
    /// ```
    /// let server = state_server::Server::new(state_store::Store::memory()).max_page_size(50);
    /// ```
    ///
    /// # Panics
    ///
    /// If `max` is 0.
    #[must_use]
    pub fn max_page_size(mut self, max: usize) -> Server {
        assert!(
            max > 0,
            "state_server::Server::max_page_size: a page holds at least one item"
        );
        self.max_page_size = max;
        self
    }

    /// The largest request body accepted, in bytes ([`DEFAULT_BODY_LIMIT`]
    /// by default): a request that declares a longer one is a 413.
    ///
    /// ```
    /// let server = state_server::Server::new(state_store::Store::memory()).body_limit(0);
    /// ```
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Server {
        self.body_limit = bytes;
        self
    }

    /// How long `GET /threads/{id}/stream` may be silent before it sends a
    /// keep-alive comment (`: keep-alive`), [`DEFAULT_KEEP_ALIVE`] (15 s)
    /// by default: proxies and load balancers close connections idle for
    /// longer than a minute or so.
    ///
    /// ```
    /// use std::time::Duration;
    /// let server = state_server::Server::new(state_store::Store::memory())
    ///     .keep_alive(Duration::from_secs(30));
    /// ```
    ///
    /// # Panics
    ///
    /// If `interval` is zero.
    #[must_use]
    pub fn keep_alive(mut self, interval: Duration) -> Server {
        assert!(
            !interval.is_zero(),
            "state_server::Server::keep_alive: the interval must be longer than zero"
        );
        self.keep_alive = interval;
        self
    }

    /// How many event streams may be open at once, [`DEFAULT_MAX_STREAMS`]
    /// (1024) by default: the Agent Server API's run streams
    /// (`POST .../runs/stream`, `POST /runs/stream`), join streams
    /// (`GET .../runs/{run_id}/stream`) and thread streams, and
    /// `GET /threads/{id}/stream`, counted together. One more is refused
    /// before anything is done (a refused `runs/stream` creates no run)
    /// with a 503, `{"detail": .., "kind": "too_many_streams"}` and
    /// `Retry-After: 1`; a stream's place is freed when it ends or its
    /// client disconnects. Each open stream holds a connection, a task and
    /// its buffers: this bounds what clients can make the server hold.
    ///
    /// ```
    /// let server = state_server::Server::new(state_store::Store::memory()).max_streams(10_000);
    /// ```
    ///
    /// # Panics
    ///
    /// If `max` is 0.
    #[must_use]
    pub fn max_streams(mut self, max: usize) -> Server {
        assert!(
            max > 0,
            "state_server::Server::max_streams: allow at least one stream"
        );
        self.streams = stream_cap::Streams::new(max);
        self
    }

    /// Lets the inspector change the store (off by default: every route
    /// reads only): with it, the thread page of the
    /// [typed router](Server::router) forks a thread at any step
    /// (`POST /inspect/{id}/fork`, from the page's form), and with
    /// assistants served (`Server::assistant`), the pages start runs
    /// (`POST /inspect/{id}/run`, `POST /inspect` on a new thread) and
    /// stream them in. A write must come from the server's own pages: a
    /// browser's cross-site post is refused by its `Origin`.
    ///
    /// ```
    /// let server = state_server::Server::new(state_store::Store::memory()).allow_writes(true);
    /// ```
    #[must_use]
    pub fn allow_writes(mut self, allow: bool) -> Server {
        self.allow_writes = allow;
        self
    }

    /// The graph whose runs pause on this store's threads: with
    /// [`allow_writes`](Server::allow_writes), the inspector shows a form
    /// under each pending interrupt, and an answer resumes the run
    /// (`POST /inspect/{id}/answer`; the run goes on in the background,
    /// and the page follows it live). The answer is JSON when it parses as
    /// JSON (`true`, `42`, `{"ok": true}`), else the text as typed.
    ///
    /// The graph must run on the served store, and its state type must be
    /// the [router](Server::router)'s.
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { approved: bool }
    /// use state_graph::{END, START, StateGraph};
    ///
    /// let store = state_store::Store::memory();
    /// let mut g = StateGraph::<Chat>::new();
    /// g.add_node("approve", |_: &Chat| Chat::delta().approved(true));
    /// g.add_edge(START, "approve");
    /// g.add_edge("approve", END);
    /// let graph = g.compile()?.with_store(store.clone());
    ///
    /// let routes = state_server::Server::new(store)
    ///     .allow_writes(true)
    ///     .graph(graph)
    ///     .router::<Chat>();
    /// # Ok::<(), state_graph::GraphError>(())
    /// ```
    #[cfg(feature = "graph")]
    #[must_use]
    pub fn graph<S>(mut self, graph: state_graph::CompiledGraph<S>) -> Server
    where
        S: State + Clone + Serialize + Send + Sync + 'static,
        S::Delta: Serialize + Clone + Send + Sync + 'static,
    {
        self.answerer = Some(answer::Answerer::of(graph));
        self
    }

    /// Serves `graph` as an assistant of LangGraph's Agent Server API,
    /// named `graph_id` (what `langgraph.json` names a graph): its default
    /// assistant's id is LangGraph's (`uuid5` of the graph id, the same on
    /// every server and restart), and a client may name it by either.
    /// Graphs of different state types serve side by side. `graph` is a
    /// compiled graph, its runs given the context bound in code, or a
    /// [`ServedGraph`] whose runs' JSON context is decoded into its typed
    /// context ([`ServedGraph::context_from_json`]). Clients may create
    /// more assistants on it (`POST /assistants`, kept in the store, so
    /// every process on one database sees them); this one, LangGraph's
    /// "system" assistant, cannot be changed or deleted.
    ///
    /// The Agent Server's routes (assistants, threads, state, runs and
    /// their streams, the thread stream, the long-term store, `/ok`,
    /// `/info`) answer in the recorded contract's shapes; an error is
    /// `{"detail": ..}` with its status codes. The crate's documentation
    /// (section "LangGraph's Agent Server API") lists them.
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// use state_graph::{END, START, StateGraph};
    ///
    /// let mut g = StateGraph::<Chat>::new();
    /// g.add_node("agent", |s: &Chat| Chat::delta().turns(s.turns + 1));
    /// g.add_edge(START, "agent");
    /// g.add_edge("agent", END);
    /// let agent = g.compile()?;
    ///
    /// let routes = state_server::Server::new(state_store::Store::memory())
    ///     .assistant("agent", agent) // GET /assistants/agent, POST /assistants/search, ...
    ///     .router::<Chat>();
    /// # Ok::<(), state_graph::GraphError>(())
    /// ```
    ///
    /// # Panics
    ///
    /// If `graph_id` is empty or already served: each graph id names one
    /// graph.
    #[cfg(feature = "graph")]
    #[must_use]
    pub fn assistant<S, C>(
        mut self,
        graph_id: impl Into<String>,
        graph: impl Into<ServedGraph<S, C>>,
    ) -> Server
    where
        S: state_graph::GraphState,
        C: Send + Sync + 'static,
    {
        let graph_id = graph_id.into();
        assert!(
            !graph_id.is_empty(),
            "state_server::Server::assistant: a graph id is not empty"
        );
        let assistant = agent::Assistant::new(&graph_id, graph.into(), self.store.clone());
        assert!(
            self.assistants.add(assistant),
            "state_server::Server::assistant: graph id \"{graph_id}\" is served already; \
             give each graph an id of its own"
        );
        self
    }

    /// How many runs this process runs at once: 8 by default. `0` makes
    /// it an API process only: it creates runs and crons and streams
    /// runs, and worker processes on the same PostgreSQL database run
    /// them and schedule the crons (each a
    /// program that serves the same graphs and calls
    /// [`start_workers`](Server::start_workers)). Set before the routes
    /// are made.
    ///
    /// ```
    /// let api_only = state_server::Server::new(state_store::Store::memory()).workers(0);
    /// ```
    #[cfg(feature = "graph")]
    #[must_use]
    pub fn workers(mut self, count: usize) -> Server {
        self.workers = count;
        self
    }

    /// How long a worker's claim on a run holds without a renewal (30 s
    /// by default; renewed every third of it): when a worker process
    /// dies, another takes its runs over after this, and goes on from
    /// each run's last committed step. Set before the routes are made.
    ///
    /// ```
    /// use std::time::Duration;
    /// let server = state_server::Server::new(state_store::Store::memory())
    ///     .lease(Duration::from_secs(10));
    /// ```
    ///
    /// # Panics
    ///
    /// If `lease` is shorter than 30 ms (renewals could not keep up).
    #[cfg(feature = "graph")]
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Server {
        assert!(
            lease >= Duration::from_millis(30),
            "state_server::Server::lease: a lease of {lease:?} is too short to renew; give 30 ms or more"
        );
        self.lease = lease;
        self
    }

    /// Starts this process's run workers now, rather than with the first
    /// run (or cron) created here: what a worker process calls (it may
    /// serve no routes at all), and what a server calls at its start for
    /// the runs left pending and the crons due in its store to go on at
    /// once. With the workers runs the crons' scheduler, which makes each
    /// due cron's run (once per tick, however many processes share the
    /// database). The handle stops them gracefully.
    ///
    /// ```no_run
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// # #[tokio::main]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use state_graph::{END, START, StateGraph};
    /// use std::time::Duration;
    ///
    /// let mut g = StateGraph::<Chat>::new();
    /// g.add_node("agent", |s: &Chat| Chat::delta().turns(s.turns + 1));
    /// g.add_edge(START, "agent");
    /// g.add_edge("agent", END);
    ///
    /// let store = state_store::Store::postgres("postgres://localhost/agents").await?;
    /// let workers = state_server::Server::new(store)
    ///     .assistant("agent", g.compile()?)
    ///     .start_workers();
    /// tokio::signal::ctrl_c().await?;
    /// workers.shutdown(Duration::from_secs(30)).await; // finish, or hand back
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (the workers are its tasks).
    #[cfg(feature = "graph")]
    pub fn start_workers(&self) -> Workers {
        let pool = self.pool();
        pool.start(&self.app(None));
        Workers { pool }
    }

    #[cfg(feature = "graph")]
    fn pool(&self) -> Arc<agent::WorkerPool> {
        self.pool
            .get_or_init(|| Arc::new(agent::WorkerPool::new(self.workers, self.lease)))
            .clone()
    }

    /// The routes, the state rebuilt as an `S`: `GET /threads`,
    /// `GET /threads/{id}/history`, `GET /threads/{id}/state`,
    /// `GET /threads/{id}/stream` (`?mode=updates`, `values` or both), the
    /// inspector (`GET /`, `GET /inspect/{id}`, its script and styles, and
    /// with [`allow_writes`](Server::allow_writes) its forms). See the
    /// crate's documentation for what each answers.
    ///
    /// ```
    /// # use state_core::{AgentState, State};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// let routes = state_server::Server::new(state_store::Store::memory()).router::<Chat>();
    /// let app = axum::Router::new().nest("/agent", routes);
    /// ```
    ///
    /// # Panics
    ///
    /// If a [`graph`](Server::graph) was given for another state type.
    pub fn router<S>(&self) -> Router
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        if let Some(answerer) = &self.answerer {
            assert!(
                answerer.state == std::any::TypeId::of::<S>(),
                "state_server::Server::router::<{}>: the graph given to Server::graph runs \
                 {}; serve the graph's own state type",
                std::any::type_name::<S>(),
                answerer.state_name,
            );
        }
        self.routes(
            get(routes::state::<S>),
            get(stream::stream::<S>),
            Some(Typed::of::<S>()),
        )
    }

    /// The routes without a state type: the same paths, but
    /// `GET /threads/{id}/state` and `GET /threads/{id}/stream?mode=values`
    /// answer 501 with a JSON error that says to mount
    /// [`router::<YourState>`](Server::router) instead (the stream's
    /// `updates` work). What the `state-server` binary serves.
    ///
    /// ```
    /// let routes = state_server::Server::new(state_store::Store::memory()).untyped_router();
    /// ```
    pub fn untyped_router(&self) -> Router {
        self.routes(get(routes::no_state), get(stream::stream_untyped), None)
    }

    /// What the handlers share (`typed`: the typed router's state type).
    fn app(&self, typed: Option<Typed>) -> App {
        App {
            store: self.store.clone(),
            default_page: DEFAULT_PAGE_SIZE.min(self.max_page_size),
            max_page: self.max_page_size,
            keep_alive: self.keep_alive,
            streams: self.streams.clone(),
            // The untyped router has no state to check a graph against.
            answer: typed
                .and(self.answerer.as_ref())
                .map(|answerer| answerer.answer.clone()),
            typed,
            allow_writes: self.allow_writes,
            assistants: Arc::new(self.assistants.clone()),
            #[cfg(feature = "graph")]
            workers: self.pool(),
        }
    }

    fn routes(
        &self,
        state: MethodRouter<App>,
        stream: MethodRouter<App>,
        typed: Option<Typed>,
    ) -> Router {
        let app = self.app(typed);
        let guarded = |routes: Router<App>, query_token: guard::QueryToken| {
            // The auth hook, then what its identity may see, inside the
            // token check.
            let routes = match &self.auth {
                Some(hook) => routes
                    .route_layer(axum::middleware::from_fn_with_state(
                        self.store.clone(),
                        auth::gate,
                    ))
                    .route_layer(axum::middleware::from_fn_with_state(
                        hook.clone(),
                        auth::authenticate,
                    )),
                None => routes,
            };
            let guard = Arc::new(guard::Guard {
                token: self.token.as_deref().map(|t| t.as_bytes().into()),
                body_limit: self.body_limit,
                query_token,
            });
            routes
                // Route layers: they guard these routes only, never the
                // fallback, so an app's own routes and 404s stay its own.
                .route_layer(DefaultBodyLimit::max(self.body_limit))
                .route_layer(axum::middleware::from_fn_with_state(guard, guard::guard))
        };
        let id = extract::THREAD_ID;
        let json = Router::new()
            .route("/threads", get(routes::threads))
            .route(&format!("/threads/{{{id}}}/history"), get(routes::history))
            .route(&format!("/threads/{{{id}}}/state"), state);
        // The stream alone may take the token as `?access_token=`: a
        // browser's `EventSource` cannot send a header.
        let live = Router::new().route(&format!("/threads/{{{id}}}/stream"), stream);
        // The inspector's pages: a browser opens the first with
        // `?access_token=`, which the answer keeps as a cookie for the rest.
        let pages = Router::new()
            .route("/", get(inspect::home))
            .route(&format!("/inspect/{{{id}}}"), get(inspect::thread))
            .route(&format!("/inspect/{{{id}}}/live"), get(inspect::live))
            .route(&format!("/inspect/{{{id}}}/fork"), post(inspect::fork))
            .route(&format!("/inspect/{{{id}}}/answer"), post(inspect::answer))
            .route(&format!("/inspect/{{{id}}}/events"), get(inspect::events))
            .route(&format!("/inspect/{{{id}}}/run"), post(inspect::run))
            .route("/inspect", post(inspect::run_new))
            .route("/inspector.js", get(inspect::script))
            .route("/inspector.css", get(inspect::style));
        // LangGraph's Agent Server API shares paths with the JSON routes
        // (`GET /threads` is ours, `POST /threads` its): one router.
        let json = json.merge(agent::routes());
        // A JSON 405 (with `Allow`) for a method these paths lack.
        let answered =
            |routes: Router<App>| routes.method_not_allowed_fallback(routes::method_not_allowed);
        guarded(answered(json), guard::QueryToken::No)
            .merge(guarded(answered(live), guard::QueryToken::Accepted))
            .merge(guarded(answered(pages), guard::QueryToken::KeptAsCookie))
            .with_state(app)
    }
}

/// The run workers of a process, from
/// [`Server::start_workers`]: stop them with
/// [`shutdown`](Workers::shutdown). Dropping the handle leaves them
/// running.
#[cfg(feature = "graph")]
#[derive(Clone)]
pub struct Workers {
    pool: Arc<agent::WorkerPool>,
}

#[cfg(feature = "graph")]
impl Workers {
    /// Stops claiming runs, lets the runs in hand finish for up to
    /// `grace`, then hands back those still running: they are pending
    /// again, and another worker (of this database) takes each over at
    /// once, from its last committed step. Returns when every worker has
    /// stopped. The routes of this process go on answering; runs created
    /// after this wait for a worker elsewhere.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// let workers = state_server::Server::new(state_store::Store::memory()).start_workers();
    /// workers.shutdown(Duration::from_secs(10)).await;
    /// # }
    /// ```
    pub async fn shutdown(self, grace: Duration) {
        self.pool.shutdown(grace).await;
    }
}

#[cfg(feature = "graph")]
impl fmt::Debug for Workers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workers").finish_non_exhaustive()
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("store", &self.store)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("max_page_size", &self.max_page_size)
            .field("body_limit", &self.body_limit)
            .field("keep_alive", &self.keep_alive)
            .field("streams", &self.streams)
            .field("allow_writes", &self.allow_writes)
            .field("graph", &self.answerer.as_ref().map(|a| a.state_name))
            .field("auth", &self.auth.as_ref().map(|_| "<hook>"))
            .finish()
    }
}
