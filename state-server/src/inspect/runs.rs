//! The Agent Server's side of the inspector: for a thread made through
//! that API (it has a record), the graph it runs on (drawn, the selected
//! step's nodes marked, and as Mermaid text) and its runs with their
//! status; behind `allow_writes`, the form that starts a run (on the
//! thread, or on a new one from the thread list) and streams it into the
//! page.

use super::view::{Base, time};
use super::{graph, writable};
use crate::auth::Owner;
use crate::error::ApiError;
use crate::extract::ThreadId;
use crate::routes::App;
use axum::Form;
use axum::extract::State as Shared;
use axum::extract::rejection::FormRejection;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::{Value, json};
use state_store::{Run, RunFilter, RunStatus, StepKind, StepRecord, StoreError};

/// How many of a thread's runs its page lists, the newest first.
pub(crate) const RUNS_SHOWN: usize = 20;

/// What the inspector shows of an Agent Server thread.
pub(crate) struct AgentThread {
    /// The graph its record names (`graph_id`), if any.
    pub graph_id: Option<String>,
    /// That graph, when this server serves it: its JSON and Mermaid text.
    pub drawn: Option<(Value, String)>,
    /// Its latest runs, newest first.
    pub runs: Vec<Run>,
}

/// Thread `id`'s Agent Server side; `None` for a thread without a record
/// (written outside the API), whose page shows none of it.
pub(crate) async fn agent_thread(app: &App, id: &str) -> Result<Option<AgentThread>, StoreError> {
    let Some(record) = app.store.thread_record(id, None).await? else {
        return Ok(None);
    };
    let drawn = app
        .assistants
        .of_thread(&record)
        .map(|assistant| (assistant.graph.clone(), assistant.mermaid.clone()));
    let runs = app
        .store
        .list_runs(Some(id), RunFilter::default().limit(RUNS_SHOWN))
        .await?;
    Ok(Some(AgentThread {
        graph_id: record
            .metadata
            .get("graph_id")
            .and_then(Value::as_str)
            .map(str::to_owned),
        drawn,
        runs,
    }))
}

/// The graph's nodes that `step` ran: its metadata's `nodes`; for a
/// run's input (a turn begun with a body), `__start__`, as LangGraph's
/// input checkpoint writes it; for a subgraph's step, the node of this
/// graph that runs the subgraph (the first part of its namespace).
pub(crate) fn ran(step: &StepRecord) -> Vec<String> {
    if step.kind == StepKind::BeginTurn && !step.body.is_null() && step.nodes().is_empty() {
        return vec!["__start__".to_owned()];
    }
    if step.kind == StepKind::Subgraph {
        let namespace = step.metadata.get("ns").and_then(Value::as_str);
        return namespace
            .and_then(|ns| ns.split(['|', ':']).next())
            .map(|node| vec![node.to_owned()])
            .unwrap_or_default();
    }
    step.nodes().into_iter().map(str::to_owned).collect()
}

/// The graph section of the state side: the picture, the selected step's
/// nodes marked, and the Mermaid text.
pub(crate) fn graph_section(agent: &AgentThread, seq: u64, marked: &[String]) -> Markup {
    let Some((graph, mermaid)) = &agent.drawn else {
        return html! {};
    };
    let name = agent.graph_id.as_deref().unwrap_or("graph");
    html! {
        section #graph data-seq=(seq) data-nodes=(marked.join(" ")) aria-labelledby="graph-heading" {
            h2 #graph-heading { "Graph " code { (name) } }
            p.note {
                @if marked.is_empty() { "Step " (seq) " ran no node of this graph." }
                @else {
                    "Step " (seq) " ran "
                    @for (i, node) in marked.iter().enumerate() {
                        @if i > 0 { ", " } code.node-name { (node) }
                    }
                    " (marked)."
                }
            }
            @if let Some(picture) = graph::draw(graph, marked) {
                div.graph-wrap { (picture) }
            }
            details.mermaid {
                summary { "As Mermaid text" }
                pre.json { code #mermaid { (mermaid) } }
            }
        }
    }
}

fn is_active(run: &Run) -> bool {
    matches!(run.status, RunStatus::Pending | RunStatus::Running)
}

/// The thread's runs, newest first, as a section the script replaces when
/// the thread moves on (and asks again for while one is pending or
/// running: its status changes after its last step).
pub(crate) fn runs(runs: &[Run]) -> Markup {
    let active = runs.iter().any(is_active);
    html! {
        section #runs data-active=(active) aria-labelledby="runs-title" aria-live="polite" {
            h2 #runs-title { "Runs" }
            @if runs.is_empty() {
                p.empty { "No runs yet." }
            } @else {
                div.table-wrap {
                    table #runs-table {
                        caption {
                            (runs.len()) @if runs.len() == 1 { " run" } @else { " runs" } ", the newest first"
                            @if runs.len() == RUNS_SHOWN { " (the latest " (RUNS_SHOWN) ")" }
                        }
                        thead { tr {
                            th scope="col" { "Run" }
                            th scope="col" { "Assistant" }
                            th scope="col" { "Status" }
                            th scope="col" { "Created" }
                            th scope="col" { "Updated" }
                        } }
                        tbody {
                            @for run in runs {
                                @let status = run.status.as_str();
                                tr data-run=(run.run_id) data-status=(status) {
                                    th scope="row" { code { (run.run_id) } }
                                    td { (assistant_name(run)) }
                                    td { span class={ "status status-" (status) } { (status) } }
                                    td { (time(run.created_at)) }
                                    td { (time(run.updated_at)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The graph a run ran (its metadata's `graph_id`), else its assistant id.
fn assistant_name(run: &Run) -> &str {
    run.metadata
        .get("graph_id")
        .and_then(Value::as_str)
        .unwrap_or(&run.assistant_id)
}

/// The form that starts a run: on thread `thread`, or on a new thread;
/// `selected` is the assistant chosen first. Without a script it posts
/// and lands on the thread's page; with one, the run's events stream into
/// `#run-events`.
pub(crate) fn run_form(
    base: &Base,
    thread: Option<&str>,
    assistants: &[&str],
    selected: Option<&str>,
) -> Markup {
    let action = match thread {
        Some(id) => format!("{}/run", base.thread(id)),
        None => format!("{}/inspect", base.0),
    };
    html! {
        section #run-start aria-labelledby="run-start-title" {
            h2 #run-start-title {
                @if thread.is_some() { "Start a run on this thread" } @else { "Start a run on a new thread" }
            }
            form #run-form .run method="post" action=(action) {
                label for="run-assistant" { "Assistant" }
                select #run-assistant name="assistant" {
                    @for name in assistants {
                        option value=(name) selected[selected == Some(*name)] { (name) }
                    }
                }
                label.wide for="run-input" { "Input (JSON; empty for none)" }
                textarea #run-input name="input" rows="4" spellcheck="false"
                    placeholder=r#"{"messages": [{"role": "user", "content": "Hello"}]}"# {}
                button type="submit" { "Start run" }
            }
            p #run-status .live role="status" aria-live="polite" {}
            ol #run-events {}
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunForm {
    assistant: String,
    input: String,
}

/// `POST /inspect/{id}/run` (`assistant`, `input`): starts a run of that
/// assistant on the thread, with the input (JSON; empty: none). A
/// script's request (`Accept: text/event-stream`) is answered as
/// `POST /threads/{id}/runs/stream` answers (its `values` and `updates`),
/// with the thread's page in `X-Thread-Page` and the run's JSON in
/// `X-Run-Url`; a plain form's lands on the
/// thread's page, which follows the run live. Only when the server allows
/// writes, from its own pages.
pub(crate) async fn run(
    Shared(app): Shared<App>,
    base: Base,
    headers: HeaderMap,
    owner: Owner,
    ThreadId(id): ThreadId,
    form: Result<Form<RunForm>, FormRejection>,
) -> Response {
    start(app, base, headers, owner, id, false, form).await
}

/// `POST /inspect` (`assistant`, `input`): the same on a new thread (a
/// UUID, as the Agent Server names threads).
pub(crate) async fn run_new(
    Shared(app): Shared<App>,
    base: Base,
    headers: HeaderMap,
    owner: Owner,
    form: Result<Form<RunForm>, FormRejection>,
) -> Response {
    let id = uuid::Uuid::now_v7().to_string();
    start(app, base, headers, owner, id, true, form).await
}

async fn start(
    app: App,
    base: Base,
    headers: HeaderMap,
    owner: Owner,
    thread: String,
    new: bool,
    form: Result<Form<RunForm>, FormRejection>,
) -> Response {
    // The script asks for the events; a form without it, for a page.
    let streaming = headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    let started = async {
        let form = writable(&app, &headers, form)?;
        let input = match form.input.trim() {
            "" => Value::Null,
            text => serde_json::from_str::<Value>(text)
                .map_err(|e| ApiError::invalid_body(format!("input: not JSON: {e}")))?,
        };
        let body = json!({
            "assistant_id": form.assistant.trim(),
            "input": input,
            "stream_mode": ["values", "updates"],
            "if_not_exists": if new { "create" } else { "reject" },
        });
        start_run(app, thread.clone(), body, owner, streaming).await
    };
    match started.await {
        Ok(Some(mut response)) => {
            let headers = response.headers_mut();
            if let Ok(page) = HeaderValue::from_str(&base.thread(&thread)) {
                headers.insert("x-thread-page", page);
            }
            // The run's JSON (`Content-Location` is the run's path, from
            // the root): where the script reads how the run ended.
            let run = headers
                .get(header::CONTENT_LOCATION)
                .and_then(|at| at.to_str().ok())
                .and_then(|at| HeaderValue::from_str(&format!("{}{at}", base.0)).ok());
            if let Some(run) = run {
                headers.insert("x-run-url", run);
            }
            response
        }
        Ok(None) => Redirect::to(&base.thread(&thread)).into_response(),
        Err(error) if streaming => error.into_response(),
        Err(error) => base.error(error).into_response(),
    }
}

#[cfg(feature = "graph")]
async fn start_run(
    app: App,
    thread: String,
    body: Value,
    owner: Owner,
    streaming: bool,
) -> Result<Option<Response>, ApiError> {
    crate::agent::start_run(app, thread, &body, owner, streaming).await
}

#[cfg(not(feature = "graph"))]
async fn start_run(
    _: App,
    _: String,
    _: Value,
    _: Owner,
    _: bool,
) -> Result<Option<Response>, ApiError> {
    Err(ApiError::no_graph())
}
