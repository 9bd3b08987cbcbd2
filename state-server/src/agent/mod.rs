//! LangGraph's Agent Server API (what `langgraph dev` serves and
//! `langgraph-sdk` calls), served from Rust graphs. The wire contract is the
//! one recorded from the real server (`langgraph-server/` beside the
//! design); each handler's docs say what it answers.
//!
//! Assistants are one per graph given to
//! [`Server::assistant`](crate::Server::assistant), and those clients
//! create (`POST /assistants`), kept in the store.

mod assistant_routes;
mod assistant_writes;
mod assistants_found;
// Without `graph`, no assistant can be given: the routes answer none.
#[cfg_attr(not(feature = "graph"), allow(dead_code))]
mod assistants;
mod body;
#[cfg(feature = "graph")]
mod checkpoint;
#[cfg(feature = "graph")]
mod cron_routes;
#[cfg(feature = "graph")]
mod cron_schedule;
#[cfg(feature = "graph")]
mod cron_scheduler;
#[cfg(feature = "graph")]
mod follow;
#[cfg(feature = "graph")]
mod local_results;
#[cfg(feature = "graph")]
mod run_config;
#[cfg(feature = "graph")]
mod run_events;
#[cfg(feature = "graph")]
mod run_options;
#[cfg(feature = "graph")]
mod run_routes;
#[cfg(feature = "graph")]
mod served;
#[cfg(feature = "graph")]
mod served_graph;
#[cfg(feature = "graph")]
pub use served_graph::ServedGraph;
#[cfg(feature = "graph")]
mod protocol_commands;
#[cfg(feature = "graph")]
mod protocol_events;
#[cfg(feature = "graph")]
mod protocol_feed;
#[cfg(feature = "graph")]
mod protocol_shape;
#[cfg(feature = "graph")]
mod protocol_socket;
#[cfg(feature = "graph")]
mod protocol_state;
#[allow(dead_code)]
mod sse;
#[cfg(feature = "graph")]
mod state_routes;
#[cfg(feature = "graph")]
mod step_events;
#[cfg(feature = "graph")]
mod step_runs;
mod store_routes;
#[allow(dead_code)]
mod stream_mode;
mod thread_routes;
#[cfg(feature = "graph")]
mod worker;

#[cfg(feature = "graph")]
pub(crate) use worker::{LEASE, WORKERS, WorkerPool};
#[cfg(feature = "graph")]
mod thread_state;
#[cfg(feature = "graph")]
mod thread_stream;

#[cfg(feature = "graph")]
pub(crate) use run_routes::start_from_json as start_run;
#[cfg(feature = "graph")]
pub(crate) use state_routes::history_get;
#[cfg(feature = "graph")]
pub(crate) use thread_stream::open as thread_stream;

#[cfg(feature = "graph")]
pub(crate) use assistants::Assistant;
pub(crate) use assistants::Assistants;

use crate::routes::App;
use axum::Json;
use axum::Router;
use axum::extract::FromRef;
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::Arc;

impl FromRef<App> for Arc<Assistants> {
    fn from_ref(app: &App) -> Arc<Assistants> {
        app.assistants.clone()
    }
}

/// The Agent Server's routes.
pub(crate) fn routes() -> Router<App> {
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
        .route("/assistants", post(assistant_writes::create))
        .route("/assistants/search", post(assistant_routes::search))
        .route("/assistants/count", post(assistant_routes::count))
        .route(
            "/assistants/{assistant_id}",
            get(assistant_routes::get)
                .patch(assistant_writes::patch)
                .delete(assistant_writes::delete),
        )
        .route(
            "/assistants/{assistant_id}/versions",
            post(assistant_writes::versions),
        )
        .route(
            "/assistants/{assistant_id}/latest",
            post(assistant_writes::latest),
        )
        .route(
            "/assistants/{assistant_id}/graph",
            get(assistant_routes::graph),
        )
        .route(
            "/assistants/{assistant_id}/schemas",
            get(assistant_routes::schemas),
        )
        .route("/threads", post(thread_routes::create))
        .route("/threads/search", post(thread_routes::search))
        .route("/threads/{thread_id}/copy", post(thread_routes::copy))
        .route("/threads/count", post(thread_routes::count))
        .route(
            "/threads/{thread_id}",
            get(thread_routes::get)
                .patch(thread_routes::patch)
                .delete(thread_routes::delete),
        )
        .route(
            "/store/items",
            get(store_routes::get)
                .put(store_routes::put)
                .delete(store_routes::delete),
        )
        .route("/store/items/search", post(store_routes::search))
        .route("/store/namespaces", post(store_routes::namespaces))
        .merge(state_routes())
        .merge(cron_routes())
}

/// The Agent Server's cron routes (`cron_routes.rs`).
#[cfg(feature = "graph")]
fn cron_routes() -> Router<App> {
    Router::new()
        .route("/runs/crons", post(cron_routes::create))
        .route("/runs/crons/search", post(cron_routes::search))
        .route("/runs/crons/count", post(cron_routes::count))
        .route(
            "/runs/crons/{cron_id}",
            get(cron_routes::get)
                .patch(cron_routes::patch)
                .delete(cron_routes::delete),
        )
        .route(
            "/threads/{thread_id}/runs/crons",
            post(cron_routes::create_for_thread),
        )
}

/// Without graphs no run can be made: each cron route is refused as
/// LangGraph's server refuses them with its crons off (`/info` says
/// `"crons": false` then), a 403 that says so.
#[cfg(not(feature = "graph"))]
fn cron_routes() -> Router<App> {
    let no_crons = || async {
        crate::error::ApiError::forbidden(
            "Crons are not served by this server (built without its `graph` feature; its \
             /info says \"crons\": false)",
        )
    };
    Router::new()
        .route("/runs/crons", post(no_crons))
        .route("/runs/crons/search", post(no_crons))
        .route("/runs/crons/count", post(no_crons))
        .route(
            "/runs/crons/{cron_id}",
            get(no_crons).patch(no_crons).delete(no_crons),
        )
        .route("/threads/{thread_id}/runs/crons", post(no_crons))
}

/// The routes that read and edit a thread's state through its graph.
#[cfg(feature = "graph")]
fn state_routes() -> Router<App> {
    Router::new()
        .route("/threads/{thread_id}/state", post(state_routes::update))
        .route(
            "/threads/{thread_id}/state/{checkpoint_id}",
            get(state_routes::at_checkpoint),
        )
        .route(
            "/threads/{thread_id}/state/checkpoint",
            post(state_routes::at_checkpoint_body),
        )
        .route("/threads/{thread_id}/history", post(state_routes::history))
        .route(
            "/threads/{thread_id}/runs",
            post(run_routes::create).get(run_routes::list),
        )
        .route("/threads/{thread_id}/runs/wait", post(run_routes::wait))
        .route("/threads/{thread_id}/runs/stream", post(run_routes::stream))
        .route("/threads/{thread_id}/runs/{run_id}", get(run_routes::get))
        .route(
            "/threads/{thread_id}/runs/{run_id}/join",
            get(run_routes::join),
        )
        .route(
            "/threads/{thread_id}/runs/{run_id}/stream",
            get(run_routes::join_stream),
        )
        .route(
            "/threads/{thread_id}/runs/{run_id}/cancel",
            post(run_routes::cancel),
        )
        // The v3 thread protocol (`client.threads.stream`).
        .route(
            "/threads/{thread_id}/commands",
            post(protocol_commands::command),
        )
        .route(
            "/threads/{thread_id}/stream/events",
            post(protocol_events::events).get(protocol_socket::socket),
        )
        .route("/runs/wait", post(run_routes::wait_stateless))
        .route("/runs/stream", post(run_routes::stream_stateless))
}

#[cfg(not(feature = "graph"))]
fn state_routes() -> Router<App> {
    Router::new()
}

/// The `ThreadState` of thread `id` when it is an Agent Server thread (its
/// record names a graph this server serves); `None` otherwise, for the
/// crate's own `GET /threads/{id}/state`.
pub(crate) async fn agent_state(
    app: &App,
    id: &str,
) -> Result<Option<Value>, crate::error::ApiError> {
    let mut state = match app.store.thread_record(id, None).await {
        Ok(Some(record)) => thread_routes::state_of(&app.assistants, &record).await?,
        _ => None,
    };
    #[cfg(feature = "graph")]
    if let Some(state) = &mut state {
        step_runs::StepRuns::of(&app.store, id).join(state).await?;
    }
    Ok(state)
}

/// Whether thread `id` is one of the Agent Server API's (it has a
/// record): its `GET /threads/{id}/history` and `/stream` answer as the
/// Agent Server's, those of other threads as this crate's own JSON.
#[cfg(feature = "graph")]
pub(crate) async fn is_agent_thread(app: &App, id: &str) -> Result<bool, crate::error::ApiError> {
    Ok(app.store.thread_record(id, None).await?.is_some())
}

/// `GET /ok`: the server is up.
async fn ok() -> Json<Value> {
    Json(json!({"ok": true}))
}

/// `GET /info`: what serves, in the Agent Server's shape (`version` is
/// this crate's; crons with graphs; no LangSmith).
async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "flags": {"assistants": true, "crons": cfg!(feature = "graph"), "langsmith": false},
        "host": {"kind": "self-hosted", "project_id": null, "host_revision_id": null,
                 "revision_id": null, "tenant_id": null},
    }))
}
