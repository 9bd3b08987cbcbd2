//! LangGraph's Agent Server API (what `langgraph dev` serves and
//! `langgraph-sdk` calls), served from Rust graphs. The wire contract is the
//! one recorded from the real server (`langgraph-server/` beside the
//! design); each handler's docs say what it answers.
//!
//! Served so far: `GET /ok`, `GET /info`, and the assistants (one per graph
//! given to [`Server::assistant`](crate::Server::assistant)).

mod assistant_routes;
// Without `graph`, no assistant can be given: the routes answer none.
#[cfg_attr(not(feature = "graph"), allow(dead_code))]
mod assistants;
mod body;
// The thread and run routes' parts (issue 34's next parts serve them at
// `/threads/{id}/state`, `/history` and `/runs`), tested on their own
// until then.
#[allow(dead_code)]
mod checkpoint;
#[cfg(feature = "graph")]
#[allow(dead_code)]
mod served;
#[allow(dead_code)]
mod sse;
#[allow(dead_code)]
mod stream_mode;
#[cfg(feature = "graph")]
#[allow(dead_code)]
mod thread_state;

pub(crate) use assistants::Assistants;
#[cfg(feature = "graph")]
pub(crate) use assistants::{Assistant, state_schema};

use crate::error::ApiError;
use crate::routes::App;
use axum::Json;
use axum::Router;
use axum::extract::FromRef;
use axum::http::Method;
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
        .route("/assistants/search", post(assistant_routes::search))
        .route("/assistants/count", post(assistant_routes::count))
        .route("/assistants/{assistant_id}", get(assistant_routes::get))
        .route(
            "/assistants/{assistant_id}/graph",
            get(assistant_routes::graph),
        )
        .route(
            "/assistants/{assistant_id}/schemas",
            get(assistant_routes::schemas),
        )
}

/// A 405 for a method an Agent Server path does not answer.
pub(crate) async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::method_not_allowed_here(&method)
}

/// `GET /ok`: the server is up.
async fn ok() -> Json<Value> {
    Json(json!({"ok": true}))
}

/// `GET /info`: what serves, in the Agent Server's shape (`version` is
/// this crate's; no crons, no LangSmith).
async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "flags": {"assistants": true, "crons": false, "langsmith": false},
        "host": {"kind": "self-hosted", "project_id": null, "host_revision_id": null,
                 "revision_id": null, "tenant_id": null},
    }))
}
