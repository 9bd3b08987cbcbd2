//! The inspector: `GET /` (every thread, newest first) and
//! `GET /inspect/{id}` (one thread step by step), server-rendered HTML
//! that works without a script; `inspector.js` adds selecting a step in
//! place and following the thread live, `inspector.css` the looks. Both
//! are compiled into the binary.
//!
//! Every request reads a bounded amount: a page of threads, a window of
//! [`WINDOW`] steps, and the states after two steps (each rebuilt from its
//! latest snapshot); never a thread's whole history.

mod diff;
mod events;
mod graph;
mod runs;
mod show;
mod view;
mod writes;

pub(crate) use events::events;
pub(crate) use runs::{run, run_new};

use crate::error::ApiError;
use crate::extract::{Query, ThreadId};
use crate::routes::App;
use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::extract::{FromRequestParts, NestedPath, State as Shared};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::Markup;
use serde::Deserialize;
use serde::de::IgnoredAny;
use state_store::{StepKind, StepRecord, StoreError};
use view::{Base, Panel, ThreadView};

/// How many steps the thread page shows at once.
pub(crate) const WINDOW: u64 = 50;

/// The most steps one live update carries (the script asks again for more).
const LIVE_BATCH: u64 = 200;

/// The script and the style sheet, compiled in.
const SCRIPT: &str = include_str!("assets/inspector.js");
const STYLE: &str = include_str!("assets/inspector.css");

/// What the pages allow: their own script and styles, requests to this
/// server, forms posted here; no inline script, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

impl<S: Send + Sync> FromRequestParts<S> for Base {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        // The path an app nested the router under; none at the root.
        let nested = NestedPath::from_request_parts(parts, state).await.ok();
        let prefix = nested.as_ref().map_or("", |path| path.as_str());
        Ok(Base(prefix.trim_end_matches('/').to_owned()))
    }
}

/// An HTML answer with the pages' headers.
fn html(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    // A link away from the inspector never carries its URL (which may hold
    // `?access_token=`); within it, requests keep their origin (a form's
    // `Origin` is checked).
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// An error as a page: the same status and words as the JSON error.
pub(crate) struct PageError {
    base: Base,
    error: ApiError,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let status = self.error.status();
        let content = view::error(status.as_u16(), self.error.message());
        html(status, view::page(&self.base, "Error", content))
    }
}

impl Base {
    /// `error` as a page of this site.
    fn error(&self, error: ApiError) -> PageError {
        PageError {
            base: self.clone(),
            error,
        }
    }
}

trait OrPage<T> {
    fn or_page(self, base: &Base) -> Result<T, PageError>;
}

impl<T, E: Into<ApiError>> OrPage<T> for Result<T, E> {
    fn or_page(self, base: &Base) -> Result<T, PageError> {
        self.map_err(|error| base.error(error.into()))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HomeQuery {
    q: Option<String>,
    before: Option<String>,
    limit: Option<u64>,
    #[serde(rename = "access_token")]
    _access_token: Option<IgnoredAny>,
}

/// `GET /`: the threads, newest first, a page at a time, filtered by id.
pub(crate) async fn home(
    Shared(app): Shared<App>,
    base: Base,
    query: Result<Query<HomeQuery>, ApiError>,
) -> Result<Response, PageError> {
    let Query(query) = query.or_page(&base)?;
    let limit = app.page(query.limit).or_page(&base)?;
    let filter = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    let listed = crate::listing::page(&app.store, query.before.as_deref(), limit, filter)
        .await
        .or_page(&base)?;
    let next = listed.next.map(|cursor| {
        let mut next = format!("before={}", crate::json::percent_encode(&cursor));
        if let Some(q) = filter {
            next.push_str(&format!("&q={}", crate::json::percent_encode(q)));
        }
        if query.limit.is_some() {
            next.push_str(&format!("&limit={limit}"));
        }
        next
    });
    let threads: Vec<_> = listed.threads.into_iter().map(|(_, info)| info).collect();
    let assistants = run_assistants(&app);
    let start = (!assistants.is_empty()).then(|| runs::run_form(&base, None, &assistants, None));
    let content = view::threads(&base, &threads, filter, next.as_deref(), start);
    Ok(html(StatusCode::OK, view::page(&base, "Threads", content)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ThreadQuery {
    /// The selected step (default: the last).
    seq: Option<u64>,
    /// The step to compare it with (default: the one before it).
    compare: Option<u64>,
    /// The last step of the window shown (default: around the selected).
    upto: Option<u64>,
    /// `panel`: only the state side, for the script.
    part: Option<String>,
    #[serde(rename = "access_token")]
    _access_token: Option<IgnoredAny>,
}

/// `GET /inspect/{id}`: the thread's steps (a window of them), the state
/// after the selected step, and what changed since the compared one.
pub(crate) async fn thread(
    Shared(app): Shared<App>,
    base: Base,
    id: Result<ThreadId, ApiError>,
    query: Result<Query<ThreadQuery>, ApiError>,
) -> Result<Response, PageError> {
    let ThreadId(id) = id.or_page(&base)?;
    let Query(query) = query.or_page(&base)?;
    let info = app.store.thread_info(&id).await.or_page(&base)?;
    let head = info.seq;
    let past = |what: &str, seq: u64| {
        base.error(ApiError::not_found(format!(
            "thread {id:?} has {head} steps: there is no step {seq} ({what})"
        )))
    };
    let seq = query.seq.unwrap_or(head);
    if seq > head {
        return Err(past("seq", seq));
    }
    let compare = query.compare.unwrap_or(seq.saturating_sub(1));
    if compare > head {
        return Err(past("compare", compare));
    }
    let only_panel = match query.part.as_deref() {
        None => false,
        Some("panel") => true,
        Some(other) => {
            return Err(base.error(ApiError::bad_query(format!(
                "part must be panel, got {other:?}"
            ))));
        }
    };

    let panel = match app.typed {
        None => Panel::Untyped,
        Some(typed) => {
            let (before, state) = if compare <= seq {
                (typed.states)(app.store.clone(), id.clone(), compare, seq).await
            } else {
                let (state, before) =
                    (typed.states)(app.store.clone(), id.clone(), seq, compare).await;
                (before, state)
            };
            Panel::States {
                schema: typed.schema,
                state: state.map_err(|e| e.message().to_owned()),
                before: before.map_err(|e| e.message().to_owned()),
            }
        }
    };
    let schema = app.typed.map(|typed| typed.schema);
    let can_fork = app.allow_writes;
    let can_answer = app.allow_writes && app.answer.is_some();

    // The window: WINDOW steps ending at `upto`, by default centred on the
    // selected step (ending at the last step when it is among the last).
    let upto = query
        .upto
        .unwrap_or_else(|| seq.saturating_add(WINDOW / 2).max(WINDOW))
        .min(head);
    let first = upto.saturating_sub(WINDOW - 1).max(1);
    let (steps, pending) = if only_panel {
        (Vec::new(), None)
    } else {
        let steps = app.store.history(&id, first..=upto).await.or_page(&base)?;
        let pending = pending_step(&app, &id, head, &steps).await.or_page(&base)?;
        (steps, pending)
    };
    // A thread of the Agent Server API: its graph (the selected step's
    // nodes marked) and its runs.
    let agent = runs::agent_thread(&app, &id).await.or_page(&base)?;
    let marked = match &agent {
        Some(agent) if agent.drawn.is_some() && seq > 0 => {
            let selected = match steps.iter().find(|step| step.seq == seq) {
                Some(step) => Some(step.clone()),
                None => app
                    .store
                    .history(&id, seq..=seq)
                    .await
                    .or_page(&base)?
                    .pop(),
            };
            selected.as_ref().map(runs::ran).unwrap_or_default()
        }
        _ => Vec::new(),
    };
    let assistants = if agent.is_some() {
        run_assistants(&app)
    } else {
        Vec::new()
    };
    let view = ThreadView {
        base: &base,
        info: &info,
        steps: &steps,
        seq,
        compare,
        earlier: (first > 1).then(|| first - 1),
        later: (upto < head).then(|| upto.saturating_add(WINDOW).min(head)),
        pending: pending.as_ref(),
        panel,
        schema,
        can_fork,
        can_answer,
        agent: agent.as_ref(),
        marked,
        assistants,
    };
    if only_panel {
        return Ok(html(StatusCode::OK, view::panel(&view)));
    }
    let title = format!("Thread {id}");
    Ok(html(
        StatusCode::OK,
        view::page(&base, &title, view::thread(&view)),
    ))
}

/// The thread's last step when it is a paused superstep (read from
/// `steps` when the window holds it).
async fn pending_step(
    app: &App,
    id: &str,
    head: u64,
    steps: &[StepRecord],
) -> Result<Option<StepRecord>, StoreError> {
    let last = match steps.last() {
        Some(step) if step.seq == head => Some(step.clone()),
        _ if head == 0 => None,
        _ => app.store.history(id, head..=head).await?.pop(),
    };
    Ok(last.filter(|step| step.kind == StepKind::Pending))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LiveQuery {
    after: u64,
    #[serde(rename = "access_token")]
    _access_token: Option<IgnoredAny>,
}

/// `GET /inspect/{id}/live?after=N`: the steps after N (at most
/// [`LIVE_BATCH`]) as timeline items, and the pending interrupts now: what
/// the script fetches when the event stream says the thread moved on.
pub(crate) async fn live(
    Shared(app): Shared<App>,
    base: Base,
    ThreadId(id): ThreadId,
    Query(query): Query<LiveQuery>,
) -> Result<Response, ApiError> {
    let info = app.store.thread_info(&id).await?;
    let last = query.after.saturating_add(LIVE_BATCH).min(info.seq);
    let steps = if query.after < info.seq {
        app.store
            .history(&id, query.after.saturating_add(1)..=last)
            .await?
    } else {
        Vec::new()
    };
    let pending = pending_step(&app, &id, info.seq, &steps).await?;
    let schema = app.typed.map(|typed| typed.schema);
    let can_answer = app.allow_writes && app.answer.is_some();
    let agent = runs::agent_thread(&app, &id).await?;
    let runs = agent.as_ref().map(|agent| agent.runs.as_slice());
    let markup = view::live(
        &base,
        &info,
        &steps,
        pending.as_ref(),
        schema,
        can_answer,
        runs,
    );
    Ok(html(StatusCode::OK, markup))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ForkForm {
    seq: u64,
    to: String,
}

/// `POST /inspect/{id}/fork` (`seq`, `to`): a new thread `to` with the
/// state after step `seq` ([`Store::fork_log`]); then its page. Only when
/// the server allows writes.
///
/// [`Store::fork_log`]: state_store::Store::fork_log
pub(crate) async fn fork(
    Shared(app): Shared<App>,
    base: Base,
    headers: HeaderMap,
    ThreadId(id): ThreadId,
    form: Result<Form<ForkForm>, FormRejection>,
) -> Result<Redirect, PageError> {
    let form = writable(&app, &headers, form).map_err(|e| base.error(e))?;
    let to = form.to.trim().to_owned();
    // A copy of the log: exact, no state type needed, and the new thread's
    // page shows the steps that led to the fork.
    app.store
        .fork_log(&id, form.seq, &to)
        .await
        .map_err(|e| base.error(e.into()))?;
    Ok(Redirect::to(&base.thread(&to)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerForm {
    interrupt: String,
    answer: String,
}

/// `POST /inspect/{id}/answer` (`interrupt`, `answer`): resumes the run
/// with the answer to that pending interrupt (in the background), then
/// the thread's page, which follows the run live. Only when the server
/// allows writes and has the graph.
pub(crate) async fn answer(
    Shared(app): Shared<App>,
    base: Base,
    headers: HeaderMap,
    ThreadId(id): ThreadId,
    form: Result<Form<AnswerForm>, FormRejection>,
) -> Result<Redirect, PageError> {
    let form = writable(&app, &headers, form).map_err(|e| base.error(e))?;
    let Some(answer) = app.answer.clone() else {
        return Err(base.error(ApiError::no_graph()));
    };
    let value = crate::answer::parse_answer(&form.answer);
    answer(id.clone(), form.interrupt, value)
        .await
        .map_err(|e| base.error(e))?;
    Ok(Redirect::to(&base.thread(&id)))
}

/// The assistants the page's run form offers (their graph ids): every
/// one served, when the server allows writes; none otherwise (no form).
fn run_assistants(app: &App) -> Vec<&str> {
    if app.allow_writes && cfg!(feature = "graph") {
        app.assistants.graph_ids()
    } else {
        Vec::new()
    }
}

/// What every write checks first, in this order: the server allows
/// writes, the request comes from its own pages, the form reads.
fn writable<T>(
    app: &App,
    headers: &HeaderMap,
    form: Result<Form<T>, FormRejection>,
) -> Result<T, ApiError> {
    if !app.allow_writes {
        return Err(ApiError::read_only());
    }
    crate::origin::same_origin(headers)?;
    form.map(|Form(form)| form)
        .map_err(|rejection| ApiError::bad_form(rejection.body_text()))
}

/// `GET /inspector.js`.
pub(crate) async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /inspector.css`.
pub(crate) async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}
