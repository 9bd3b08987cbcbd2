//! The runs' routes, as the Agent Server answers them: create
//! (`POST /threads/{id}/runs`), wait (`.../runs/wait`), stream
//! (`.../runs/stream`), get, list, join, and the stateless `POST
//! /runs/wait` and `/runs/stream`. A run is a row of the store, run by the
//! workers (`worker.rs`); its events are stored, and a stream reads them
//! from the store, so any process serving the database streams any run.

use super::assistants_found::{Found, find};
use super::body::Body;
use super::checkpoint;
use super::follow::{Frames, event_key, follow};
use super::run_config::{self, Wire};
use super::run_options::{RunOptions, flag};
use super::sse;
use super::stream_mode::{StreamModeField, modes};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::Path;
use crate::routes::App;
use axum::Json;
use axum::body::{Body as ResponseBody, Bytes};
use axum::extract::State as Shared;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use state_store::{IfNotExists, MultitaskStrategy, NewRun, Run, RunStatus, RunWatch, StoreError};
use std::convert::Infallible;

/// A run's request (`RunCreateStateful`): what the routes read; the rest
/// is kept with the run as the Agent Server keeps it.
#[derive(Deserialize)]
pub(crate) struct Create {
    assistant_id: String,
    #[serde(default)]
    input: Option<Value>,
    #[serde(default)]
    command: Option<Map<String, Value>>,
    #[serde(default)]
    stream_mode: Option<StreamModeField>,
    #[serde(default)]
    stream_subgraphs: Option<bool>,
    #[serde(default)]
    stream_resumable: Option<bool>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    multitask_strategy: Option<MultitaskStrategy>,
    #[serde(default)]
    if_not_exists: Option<IfNotExists>,
    /// What a client that goes away does to the run it streams or waits
    /// for (LangGraph's `on_disconnect`; `continue` by default).
    #[serde(default)]
    on_disconnect: Option<OnDisconnect>,
    /// Not claimed before this many seconds from now.
    #[serde(default)]
    after_seconds: Option<f64>,
    /// The run's config; its `configurable` is LangGraph's older form of
    /// the context.
    #[serde(default)]
    config: Option<Map<String, Value>>,
    /// The run's context, merged over its assistant's, for the graph's
    /// typed context.
    #[serde(default)]
    context: Option<Map<String, Value>>,
    /// Its breakpoints, durability, and the fields refused here.
    #[serde(flatten)]
    options: RunOptions,
}

/// `on_disconnect`.
#[derive(Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum OnDisconnect {
    /// The run is cancelled (interrupted).
    Cancel,
    /// The run goes on.
    #[default]
    Continue,
}

/// The longest `after_seconds` accepted: a year.
const MAX_DELAY: f64 = 365.0 * 24.0 * 3600.0;

/// The assistant a run names (given in code, or created and visible to
/// `owner`), or the Agent Server's 422.
async fn assistant<'a>(app: &'a App, id: &str, owner: Option<&str>) -> Result<Found<'a>, ApiError> {
    find(app, id, owner)
        .await?
        .ok_or_else(|| no_assistant(app, id))
}

/// The Agent Server's 422 for a run on assistant `id`, which is not there.
fn no_assistant(app: &App, id: &str) -> ApiError {
    ApiError::invalid_body(format!(
        "Invalid assistant: '{id}'. Must be either:\n- A valid assistant UUID, or\n- One of the registered graphs: {}",
        app.assistants.graph_ids().join(", ")
    ))
}

/// Refuses a run asked to start from step `seq` of `thread` when the
/// thread has no such step (past its last; a stateless run's thread is
/// new). The run branches the thread back there when it runs (LangGraph's
/// run from a past checkpoint).
async fn has_step(app: &App, thread: Option<&str>, seq: u64) -> Result<(), ApiError> {
    let head = match thread {
        Some(thread) => match app.store.thread_info(thread).await {
            Ok(info) => info.seq,
            Err(StoreError::ThreadNotFound { .. }) => 0,
            Err(error) => return Err(error.into()),
        },
        None => 0,
    };
    if seq <= head {
        return Ok(());
    }
    Err(ApiError::missing(format!(
        "Checkpoint {} not found: the thread's last step is {head}",
        checkpoint::id(seq)
    )))
}

impl Create {
    /// The same request, creating its thread if it is not there.
    pub(crate) fn creating_thread(mut self) -> Create {
        self.if_not_exists = Some(IfNotExists::Create);
        self
    }

    /// What a run made of it would be refused for, checked before
    /// anything is written (a run's request when the run is made, a
    /// cron's when the cron is): its assistant, stream modes, context,
    /// breakpoints, checkpoint and delay; what a run is made of.
    pub(crate) async fn checked<'a>(
        &self,
        app: &'a App,
        owner: Option<&str>,
    ) -> Result<Checked<'a>, ApiError> {
        let found = assistant(app, &self.assistant_id, owner).await?;
        let modes = modes(self.stream_mode.as_ref())?;
        let context = found.run_context(self.config.as_ref(), self.context.as_ref())?;
        let served = &found.graph().served;
        served.check_context(context.as_ref().unwrap_or(&Map::new()))?;
        served.check_breakpoints(&self.options.check()?)?;
        // Named by the request, or in its config as LangGraph's
        // RemoteGraph and the v3 protocol send it.
        let configured = self
            .config
            .as_ref()
            .and_then(|config| config.get("configurable"))
            .and_then(|configurable| configurable.get("checkpoint_id"));
        let checkpoint = match self.options.checkpoint()? {
            Some(seq) => Some(seq),
            None => checkpoint::named("config.configurable.checkpoint_id", configured)?,
        };
        let delay = delay_of(self.after_seconds)?;
        Ok(Checked {
            found,
            modes,
            context,
            checkpoint,
            delay,
        })
    }
}

/// A run's request as [`Create::checked`] read it.
pub(crate) struct Checked<'a> {
    /// Its assistant.
    pub found: Found<'a>,
    modes: Vec<String>,
    /// The context merged over its assistant's.
    context: Option<Map<String, Value>>,
    /// The step it asks to start from.
    checkpoint: Option<u64>,
    delay: Option<std::time::Duration>,
}

/// `after_seconds` as a delay, or the 422 naming it.
fn delay_of(after_seconds: Option<f64>) -> Result<Option<std::time::Duration>, ApiError> {
    match after_seconds {
        None => Ok(None),
        Some(s) if s.is_finite() && (0.0..=MAX_DELAY).contains(&s) => {
            Ok(Some(std::time::Duration::from_secs_f64(s)))
        }
        Some(s) => Err(ApiError::invalid_body(format!(
            "after_seconds: expected a number of seconds from 0 to {MAX_DELAY}, got {s}"
        ))),
    }
}

/// Creates the run (pending; the workers take it), on `thread` or, for a
/// stateless run, on a thread of its own; with a watch of it made before
/// it was (see [`ended_from`]).
pub(crate) async fn create_run(
    app: &App,
    thread: Option<&str>,
    create: Create,
    owner: Option<&str>,
) -> Result<(Run, RunWatch), ApiError> {
    let run_id = uuid::Uuid::now_v7().to_string();
    create_run_as(app, thread, create, owner, run_id).await
}

/// [`create_run`] with the run's id given (a cron's run, whose id its
/// tick makes: the schedulers of two processes make it once).
pub(crate) async fn create_run_as(
    app: &App,
    thread: Option<&str>,
    create: Create,
    owner: Option<&str>,
    run_id: String,
) -> Result<(Run, RunWatch), ApiError> {
    // A request that cannot run is refused before anything is written.
    let Checked {
        found,
        modes,
        context,
        checkpoint,
        delay,
    } = create.checked(app, owner).await?;
    let assistant = found.graph();
    if let Some(seq) = checkpoint {
        has_step(app, thread, seq).await?;
    }
    // The thread's metadata goes into the run's (a thread not there yet
    // has none).
    let thread_metadata = match thread {
        Some(thread) => app
            .store
            .thread_record(thread, None)
            .await?
            .map(|record| record.metadata),
        None => None,
    };
    // A thread the run creates (`if_not_exists: "create"`) gets the
    // run's metadata too, as LangGraph's; one that exists only learns its
    // graph and assistant.
    let mut named = json!({"graph_id": assistant.graph_id, "assistant_id": found.id()});
    if thread_metadata.is_none() {
        run_config::add_new_thread_metadata(
            &mut named,
            create.config.as_ref(),
            create.metadata.as_ref(),
        );
    }
    let (metadata, mut config) = run_config::merged(
        &found,
        run_config::RunParts {
            run_id: &run_id,
            thread_id: thread,
            thread_metadata: thread_metadata.as_ref().and_then(Value::as_object),
            config: create.config.as_ref(),
            context: create.context.as_ref(),
            metadata: create.metadata,
            owner,
        },
    );
    // Where the run starts, in its config as LangGraph keeps it.
    if let (Some(seq), Some(configurable)) = (
        checkpoint,
        config
            .get_mut("configurable")
            .and_then(Value::as_object_mut),
    ) {
        configurable.insert("checkpoint_id".into(), json!(checkpoint::id(seq)));
        configurable.insert("checkpoint_ns".into(), json!(""));
    }
    // LangGraph's names and order (`subgraphs`, `resumable`).
    let mut kwargs = Map::new();
    kwargs.insert("input".into(), json!(create.input));
    kwargs.insert("command".into(), json!(create.command));
    kwargs.insert("config".into(), json!(config));
    kwargs.insert("context".into(), json!(context.unwrap_or_default()));
    kwargs.insert("stream_mode".into(), json!(modes));
    create.options.kwargs(&mut kwargs);
    kwargs.insert(
        "subgraphs".into(),
        json!(create.stream_subgraphs.unwrap_or(false)),
    );
    kwargs.insert(
        "resumable".into(),
        json!(create.stream_resumable.unwrap_or(false)),
    );
    let mut new = NewRun::new(&run_id, found.id())
        .kwargs(Value::Object(kwargs))
        .metadata(Value::Object(metadata))
        .multitask_strategy(create.multitask_strategy.unwrap_or_default())
        .if_not_exists(create.if_not_exists.unwrap_or(IfNotExists::Reject));
    if let Some(thread) = thread {
        new = new.thread(thread).thread_metadata(named);
    }
    if let Some(owner) = owner {
        new = new.owner(owner);
    }
    if let Some(delay) = delay.filter(|d| !d.is_zero()) {
        new = new.after(delay);
    }
    // Watched from before its creation: a waiter for its end sees every
    // change, so it need not read the run first.
    let watch = app.store.watch_run(&run_id);
    watch.ready().await;
    // A worker of this process idle: the run is claimed for it as it is
    // created (one write), and handed to it, watched from before.
    let created = match app.workers.claimant() {
        Some((worker, lease)) => {
            let worker_watch = app.store.watch_run(&run_id);
            worker_watch.ready().await;
            app.store
                .create_run_claimed(new, worker, lease, super::worker::claim_events)
                .await
                .map(|(run, claim)| {
                    if let Some(claim) = claim {
                        app.workers.hand(claim, worker_watch);
                    }
                    run
                })
        }
        None => app.store.create_run(new).await,
    };
    let run = created.map_err(|error| match error {
        StoreError::ThreadNotFound { thread } => {
            ApiError::missing(format!("Thread with ID {thread} not found"))
        }
        StoreError::ThreadBusy { .. } => ApiError::conflict(error.to_string()),
        other => ApiError::from(other),
    })?;
    // A created assistant deleted while this run was being created: a
    // delete removes the assistant, then cancels the runs it finds. Read
    // again here, the assistant still there means the delete's cancel is
    // yet to come and will find this run; gone, the cancel may have
    // missed it, so it is taken back and refused as on a missing one.
    if let Found::Created(..) = found
        && app.store.assistant(found.id(), None).await?.is_none()
    {
        take_back(app, &run.run_id, watch).await?;
        return Err(no_assistant(app, found.id()));
    }
    app.workers.start(app);
    Ok((run, watch))
}

/// Rolls back run `run_id`, refused after it was made, and returns once
/// it is gone: a worker may have claimed it already (its worker then
/// rolls it back), and the refusal must not leave it behind, running.
async fn take_back(app: &App, run_id: &str, mut watch: RunWatch) -> Result<(), ApiError> {
    let rollback = state_store::CancelAction::Rollback;
    let mut left = app.store.cancel_run(run_id, rollback, None).await?;
    loop {
        match left {
            None => return Ok(()),
            // Interrupted by the delete meanwhile: refused, so gone too.
            Some(run) if run.status.is_final() => {
                app.store.delete_run(run_id, None).await?;
                return Ok(());
            }
            Some(_) => {
                watch.changed().await;
                left = app.store.get_run(run_id, None).await?;
            }
        }
    }
}

/// `Location` and `Content-Location`, as the Agent Server sends them.
fn locate(response: &mut Response, run: &Run, location: &str) {
    response
        .headers_mut()
        .extend(location_headers(run, location));
}

/// [`locate`]'s headers, for a response made after the run is handed on.
fn location_headers(run: &Run, location: &str) -> HeaderMap {
    let base = match &run.thread_id {
        Some(thread) => format!("/threads/{thread}/runs/{}", run.run_id),
        None => format!("/runs/{}", run.run_id),
    };
    let mut headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&format!("{base}{location}")) {
        headers.insert(header::LOCATION, value);
    }
    if let Ok(value) = HeaderValue::from_str(&base) {
        headers.insert(header::CONTENT_LOCATION, value);
    }
    headers
}

/// `POST /threads/{id}/runs`: the run, pending.
pub(crate) async fn create(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    Body(create): Body<Create>,
) -> Result<Json<Wire>, ApiError> {
    Ok(Json(Wire(
        create_run(&app, Some(&thread), create, owner.as_deref())
            .await?
            .0,
    )))
}

/// Waits for the run to end; its last state.
async fn ended(app: &App, run_id: &str) -> Result<Run, ApiError> {
    let watch = app.store.watch_run(run_id);
    watch.ready().await;
    ended_from(app, run_id, watch, None).await
}

/// Waits on `watch` for the run to end; its last state. `created`: the
/// run as created, with the watch made before (without it, the run may
/// have ended before the watch was made: it is read first). A run whose
/// end was written by this process is not read again: it is `created`
/// with the status the watch says it ended with.
async fn ended_from(
    app: &App,
    run_id: &str,
    mut watch: RunWatch,
    mut created: Option<Run>,
) -> Result<Run, ApiError> {
    let mut read = created.is_none();
    loop {
        if std::mem::replace(&mut read, true) {
            let run = app
                .store
                .get_run(run_id, None)
                .await?
                .ok_or_else(|| ApiError::missing(format!("Run {run_id} not found")))?;
            if run.status.is_final() {
                return Ok(run);
            }
        }
        // Its row, not its events (each would cost a read here), nor its
        // claim: one read a run at most, at its end.
        watch.cancel_or_end().await;
        if let Some(status) = watch.ended()
            && let Some(mut run) = created.take()
        {
            run.status = status;
            return Ok(run);
        }
    }
}

/// What `wait` and `join` answer for an ended run: the thread's values
/// (with `__interrupt__` when it paused), or `{"__error__": ..}`.
async fn result_of(app: &App, run: &Run) -> Result<Value, ApiError> {
    if run.status == RunStatus::Error {
        let events = app.store.run_events(&run.run_id, 0, usize::MAX).await?;
        let error = events
            .iter()
            .rev()
            .find(|e| e.event == "error")
            .map(|e| e.data.clone())
            .unwrap_or_else(|| json!({"error": "Error", "message": "the run failed"}));
        return Ok(json!({"__error__": error}));
    }
    let thread = run.thread_id.clone().unwrap_or_else(|| run.run_id.clone());
    let Some(assistant) = app.assistants.of_run(run) else {
        return Ok(Value::Null);
    };
    let state = assistant.served.state(thread, None).await?;
    Ok(super::served::wait_answer(&state))
}

/// `POST /threads/{id}/runs/wait`: creates the run, waits for its end,
/// answers its result.
pub(crate) async fn wait(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    Body(create): Body<Create>,
) -> Result<Response, ApiError> {
    wait_on(app, Some(thread), create, owner).await
}

/// `POST /runs/wait`: the same, stateless.
pub(crate) async fn wait_stateless(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(create): Body<Create>,
) -> Result<Response, ApiError> {
    wait_on(app, None, create, owner).await
}

async fn wait_on(
    app: App,
    thread: Option<String>,
    create: Create,
    owner: Owner,
) -> Result<Response, ApiError> {
    let on_disconnect = create.on_disconnect.unwrap_or_default();
    let run_id = uuid::Uuid::now_v7().to_string();
    // Its worker, if it is one of this process's, hands the result over;
    // asked before the run is made (a worker may claim it as it is). A
    // stateless run's is its last `values` event, as LangGraph's.
    let expected = thread
        .is_some()
        .then(|| app.workers.results().expect(&run_id));
    let (run, watch) = create_run_as(
        &app,
        thread.as_deref(),
        create,
        owner.as_deref(),
        run_id.clone(),
    )
    .await?;
    let stateless = run.thread_id.is_none();
    let guard = CancelOnDrop::new(&app, &run, on_disconnect);
    let located = location_headers(&run, "/join");
    let mut response = kept_alive(guard, async move {
        let ended = ended_from(&app, &run_id, watch, Some(run)).await?;
        if let (Some(result), RunStatus::Success | RunStatus::Interrupted) =
            (expected.as_ref().and_then(|e| e.take()), ended.status)
        {
            return Ok(result);
        }
        if stateless {
            // The run's own thread is deleted as it ends: its values are
            // the last `values` event, if one was streamed.
            stateless_result(&app, &ended).await
        } else {
            result_of(&app, &ended).await
        }
    });
    response.headers_mut().extend(located);
    Ok(response)
}

/// A JSON answer that may take long (a run's result): a newline every
/// [`sse::HEARTBEAT`] until it is ready, then the JSON, as the Agent
/// Server answers a wait or a join (JSON parsers skip the leading
/// whitespace; a proxy sees the connection alive). An error once the
/// answer has begun is `{"__error__": ..}`.
fn kept_alive(
    guard: Option<CancelOnDrop>,
    result: impl std::future::Future<Output = Result<Value, ApiError>> + Send + 'static,
) -> Response {
    let result = Box::pin(result);
    let body = futures::stream::unfold(Some((result, guard)), |pending| async move {
        let (mut result, guard) = pending?;
        tokio::select! {
            value = &mut result => {
                CancelOnDrop::disarm(guard);
                let value = value.unwrap_or_else(|error| {
                    json!({"__error__": {"error": error.kind(), "message": error.message()}})
                });
                let bytes = serde_json::to_vec(&value).unwrap_or_default();
                Some((Ok::<_, Infallible>(Bytes::from(bytes)), None))
            }
            () = tokio::time::sleep(sse::HEARTBEAT) => {
                Some((Ok(Bytes::from_static(b"\n")), Some((result, guard))))
            }
        }
    });
    let mut response = Response::new(ResponseBody::from_stream(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A stateless run's result: from its events (its thread is gone).
async fn stateless_result(app: &App, run: &Run) -> Result<Value, ApiError> {
    let events = app.store.run_events(&run.run_id, 0, usize::MAX).await?;
    if let Some(error) = events.iter().rev().find(|e| e.event == "error") {
        return Ok(json!({"__error__": error.data}));
    }
    Ok(events
        .iter()
        .rev()
        .find(|e| e.event == "values")
        .map(|e| e.data.clone())
        .unwrap_or(Value::Null))
}

/// `GET /threads/{id}/runs/{run_id}/join`: waits for the run's end, its
/// result (kept alive as a wait's).
pub(crate) async fn join(
    Shared(app): Shared<App>,
    Path((thread, run_id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let run = run_on(&app, &thread, &run_id).await?;
    let mut response = kept_alive(None, async move {
        let ended = ended(&app, &run_id).await?;
        result_of(&app, &ended).await
    });
    locate(&mut response, &run, "/join");
    Ok(response)
}

/// `GET /threads/{id}/runs/{run_id}`.
pub(crate) async fn get(
    Shared(app): Shared<App>,
    Path((thread, run_id)): Path<(String, String)>,
) -> Result<Json<Wire>, ApiError> {
    Ok(Json(Wire(run_on(&app, &thread, &run_id).await?)))
}

/// Run `run_id` of thread `thread`, or the Agent Server's 404.
async fn run_on(app: &App, thread: &str, run_id: &str) -> Result<Run, ApiError> {
    app.store
        .get_run(run_id, None)
        .await?
        .filter(|run| run.thread_id.as_deref() == Some(thread))
        .ok_or_else(|| ApiError::missing(format!("Run {run_id} not found")))
}

/// `GET /threads/{id}/runs`'s query.
#[derive(Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    offset: Option<usize>,
}

/// `GET /threads/{id}/runs`: newest first.
pub(crate) async fn list(
    Shared(app): Shared<App>,
    Path(thread): Path<String>,
    crate::extract::Query(query): crate::extract::Query<ListQuery>,
) -> Result<Json<Vec<Wire>>, ApiError> {
    let filter = state_store::RunFilter::default()
        .limit(query.limit.unwrap_or(10).clamp(1, 1000))
        .offset(query.offset.unwrap_or(0));
    let runs = app.store.list_runs(Some(&thread), filter).await?;
    Ok(Json(runs.into_iter().map(Wire).collect()))
}

/// `POST /threads/{id}/runs/stream`: creates the run and streams its
/// events as they are stored.
pub(crate) async fn stream(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    Body(create): Body<Create>,
) -> Result<Response, ApiError> {
    stream_on(app, Some(thread), create, owner).await
}

/// A run on `thread` from `body` (a `RunCreateStateful`, read as the
/// routes read theirs: a 422 names the field), for the inspector's form:
/// streamed as `POST /threads/{id}/runs/stream` answers (`stream`), or
/// created only, pending, as `POST /threads/{id}/runs` (`None`).
pub(crate) async fn start_from_json(
    app: App,
    thread: String,
    body: &Value,
    owner: Owner,
    stream: bool,
) -> Result<Option<Response>, ApiError> {
    let bytes = serde_json::to_vec(body).map_err(|e| ApiError::unwritable(e.to_string()))?;
    let create: Create = super::body::parse(&bytes)?;
    if stream {
        return stream_on(app, Some(thread), create, owner).await.map(Some);
    }
    create_run(&app, Some(&thread), create, owner.as_deref()).await?;
    Ok(None)
}

/// `POST /runs/stream`: the same, stateless.
pub(crate) async fn stream_stateless(
    Shared(app): Shared<App>,
    owner: Owner,
    Body(create): Body<Create>,
) -> Result<Response, ApiError> {
    stream_on(app, None, create, owner).await
}

async fn stream_on(
    app: App,
    thread: Option<String>,
    create: Create,
    owner: Owner,
) -> Result<Response, ApiError> {
    // A place among the open streams first: a refused stream creates no
    // run.
    let permit = app.streams.acquire()?;
    let on_disconnect = create.on_disconnect.unwrap_or_default();
    let (run, _) = create_run(&app, thread.as_deref(), create, owner.as_deref()).await?;
    let ids = flag(&run.kwargs, "resumable", "stream_resumable");
    let guard = CancelOnDrop::new(&app, &run, on_disconnect);
    let frames = follow(app, run.run_id.clone(), 0, Frames::all(ids), None);
    Ok(sse_response(
        &run,
        CancelOnDrop::guard(guard, frames),
        permit,
    ))
}

/// An SSE response of `frames`, with the Agent Server's headers.
fn sse_response(
    run: &Run,
    frames: impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    permit: crate::stream_cap::Permit,
) -> Response {
    let mut response = sse::response(frames, permit);
    locate(&mut response, run, "/stream");
    response
}

/// `GET /threads/{id}/runs/{run_id}/stream` (`join_stream`): the run's
/// events after `Last-Event-ID` (all of them without one; every event is
/// stored), then live until it ends; each with its `id:`.
pub(crate) async fn join_stream(
    Shared(app): Shared<App>,
    Path((thread, run_id)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
) -> Result<Response, ApiError> {
    let after = event_key(headers.get("last-event-id"))?.map_or(0, |(_, seq)| seq);
    let run = run_on(&app, &thread, &run_id).await?;
    let permit = app.streams.acquire()?;
    Ok(sse_response(
        &run,
        follow(app, run_id, after, Frames::all(true), None),
        permit,
    ))
}

/// `POST /threads/{id}/runs/{run_id}/cancel`'s query.
#[derive(Deserialize)]
pub(crate) struct CancelQuery {
    /// `0`/`1` (what the Python client sends) or `false`/`true`.
    #[serde(default)]
    wait: Option<String>,
    #[serde(default)]
    action: Option<state_store::CancelAction>,
}

/// `POST /threads/{id}/runs/{run_id}/cancel`: a pending run is cancelled
/// at once, a running one stops at its worker's next event (202; with
/// `wait=true`, once it has ended, 200). `action=interrupt` keeps what the
/// run wrote (the answer with `wait`: the run). `action=rollback` deletes
/// the run, its events and the steps it wrote: its worker (in any
/// process) stops the graph, waits until it has let go, then rewinds the
/// thread to where it was when the run started, in one transaction with
/// the run's deletion (`Store::roll_back_run`); the run is then 404, and
/// the answer with `wait` is the thread's values as they are again.
pub(crate) async fn cancel(
    Shared(app): Shared<App>,
    Path((thread, run_id)): Path<(String, String)>,
    crate::extract::Query(query): crate::extract::Query<CancelQuery>,
) -> Result<Response, ApiError> {
    let action = query.action.unwrap_or(state_store::CancelAction::Interrupt);
    let wait = match query.wait.as_deref() {
        None | Some("0" | "false" | "False") => false,
        Some("1" | "true" | "True") => true,
        Some(other) => {
            return Err(ApiError::bad_query(format!(
                "wait: \"{other}\" is not a boolean (0, 1, false or true)"
            )));
        }
    };
    let run = run_on(&app, &thread, &run_id).await?;
    // Subscribed before the request: its end cannot slip by.
    let mut watch = app.store.watch_run(&run_id);
    watch.ready().await;
    let cancelled = app.store.cancel_run(&run_id, action, None).await?;
    // `None` after a rollback: a pending run, deleted at once.
    if cancelled.is_none() && action == state_store::CancelAction::Interrupt {
        return Err(ApiError::missing(format!("Run {run_id} not found")));
    }
    if !wait {
        return Ok(axum::http::StatusCode::ACCEPTED.into_response());
    }
    if action == state_store::CancelAction::Interrupt {
        let run = ended(&app, &run_id).await?;
        return Ok(Json(Wire(run)).into_response());
    }
    // Rolled back once gone; a run that ended first (or whose rollback
    // was refused) stays, and is answered as it is.
    loop {
        match app.store.get_run(&run_id, None).await? {
            None => break,
            Some(now) if now.status.is_final() => return Ok(Json(Wire(now)).into_response()),
            Some(_) => watch.changed().await,
        }
    }
    let Some(assistant) = app.assistants.of_run(&run) else {
        return Ok(Json(Value::Null).into_response());
    };
    let state = assistant.served.state(thread, None).await?;
    Ok(Json(state["values"].clone()).into_response())
}

/// Cancels a run when its client goes away (`on_disconnect: "cancel"`):
/// the response's body holds it, and drops it unarmed once the run's
/// answer is sent whole.
pub(crate) struct CancelOnDrop {
    store: state_store::Store,
    run_id: String,
    armed: bool,
}

impl CancelOnDrop {
    /// A guard for `run` when its request asked for one.
    fn new(app: &App, run: &Run, on_disconnect: OnDisconnect) -> Option<CancelOnDrop> {
        (on_disconnect == OnDisconnect::Cancel).then(|| CancelOnDrop {
            store: app.store.clone(),
            run_id: run.run_id.clone(),
            armed: true,
        })
    }

    /// The answer was sent whole: nothing to cancel.
    fn disarm(guard: Option<CancelOnDrop>) {
        if let Some(mut guard) = guard {
            guard.armed = false;
        }
    }

    /// `frames`, holding the guard until they end.
    fn guard(
        guard: Option<CancelOnDrop>,
        frames: impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
    ) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
        let frames = Box::pin(frames);
        futures::stream::unfold(Some((frames, guard)), |state| async move {
            let (mut frames, guard) = state?;
            match futures::StreamExt::next(&mut frames).await {
                Some(frame) => Some((frame, Some((frames, guard)))),
                None => {
                    CancelOnDrop::disarm(guard);
                    None
                }
            }
        })
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let store = self.store.clone();
        let run_id = std::mem::take(&mut self.run_id);
        // Dropped inside the server's runtime (with the response body).
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = store
                    .cancel_run(&run_id, state_store::CancelAction::Interrupt, None)
                    .await;
            });
        }
    }
}
