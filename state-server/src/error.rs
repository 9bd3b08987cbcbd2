//! [`ApiError`]: every error this server answers, as JSON
//! (`{"detail": "<message>", "kind": "<short machine kind>"}`: the Agent
//! Server's `detail`, which LangGraph's clients read, and our kind) with a status
//! that fits. Bad input is a 4xx; a 5xx is the store's fault (a corrupt row,
//! a failed database), and its message names the row.

use axum::Json;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use state_core::StateError;
use state_store::StoreError;

/// An error answer: a status, a machine kind and a message for people.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    kind: &'static str,
    message: String,
    /// `WWW-Authenticate`, for a 401.
    challenge: Option<&'static str>,
    /// `Retry-After`, in seconds, for a 503 worth retrying.
    retry_after: Option<u32>,
}

/// The JSON body of every error.
#[derive(Serialize)]
struct ErrorBody<'a> {
    detail: &'a str,
    kind: &'a str,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            kind,
            message: message.into(),
            challenge: None,
            retry_after: None,
        }
    }

    /// 400: a request the Agent Server refuses as a whole (both
    /// `config.configurable` and `context`, say).
    pub(crate) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 400: a query string that does not parse, or a value out of range.
    pub(crate) fn bad_query(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_query", message)
    }

    /// 400: a path segment that cannot be a thread id (not UTF-8).
    pub(crate) fn bad_path(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_path", message)
    }

    /// 400: a header that does not parse (`Last-Event-ID`).
    pub(crate) fn bad_header(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_header", message)
    }

    /// 401: no bearer token, or the wrong one.
    pub(crate) fn unauthorized(message: &str, challenge: &'static str) -> ApiError {
        ApiError {
            challenge: Some(challenge),
            ..ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
        }
    }

    /// 405: every path here answers `GET` (and `HEAD`) only.
    pub(crate) fn method_not_allowed(method: &Method) -> ApiError {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{method} is not allowed on this path (`Allow` lists what is)"),
        )
    }

    /// 413: a request body over the limit.
    pub(crate) fn too_large(declared: u64, limit: usize) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body is {declared} bytes; this server reads at most {limit}"),
        )
    }

    /// 503: as many event streams are open as the server allows
    /// ([`Server::max_streams`](crate::Server::max_streams)); worth a
    /// retry in a second.
    pub(crate) fn too_many_streams(max: usize) -> ApiError {
        ApiError {
            retry_after: Some(1),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too_many_streams",
                format!(
                    "this server has {max} event streams open, as many as it allows \
                     (Server::max_streams): retry later"
                ),
            )
        }
    }

    /// 413: a request body read past the limit (one sent in chunks, with
    /// no length declared up front).
    pub(crate) fn too_large_read() -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "the request body is longer than this server reads (Server::body_limit)",
        )
    }

    /// 501: the state endpoint of a server that has no state type.
    pub(crate) fn no_state_type() -> ApiError {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_state_type",
            "this server does not know the threads' state type, so it cannot rebuild a state: \
             mount state_server::router::<YourState>(store) in your own program to serve \
             /threads/{id}/state (the steps are at /threads/{id}/history)",
        )
    }

    /// 501: `values` events from a server that has no state type.
    pub(crate) fn no_state_type_values() -> ApiError {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_state_type",
            "this server does not know the threads' state type, so it cannot send the state \
             after each step: ask for ?mode=updates (the default), or mount \
             state_server::router::<YourState>(store) in your own program for ?mode=values",
        )
    }

    /// 404: a step past the end of a thread, as a page asks for it.
    pub(crate) fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "no_such_step", message)
    }

    /// 422: a JSON body that does not fit its schema (the Agent Server's
    /// code for it); the message names the field.
    pub(crate) fn invalid_body(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_body", message)
    }

    /// 400: a thread operation that needs the thread's graph, on a thread
    /// whose metadata names none (the Agent Server's text).
    #[cfg(feature = "graph")]
    pub(crate) fn no_graph_id(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "no_graph_id", message)
    }

    /// 415: an Agent Server body that is not sent as JSON.
    pub(crate) fn unsupported_media_type() -> ApiError {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "the request body: send it as JSON (Content-Type: application/json)",
        )
    }

    /// 403: the auth hook's refusal, or what an identity may not do.
    pub(crate) fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 409: a thread that exists already (the Agent Server's text).
    pub(crate) fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 404: an assistant, a graph or a thread that is not there (the
    /// Agent Server's texts).
    pub(crate) fn missing(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 400: a form that does not parse.
    pub(crate) fn bad_form(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_form", message)
    }

    /// 403: a write to a server that serves read-only.
    pub(crate) fn read_only() -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "read_only",
            "this server is read-only: start it with --allow-writes \
             (Server::allow_writes) to fork threads and answer interrupts from the inspector",
        )
    }

    /// 501: an answer to an interrupt on a server that has no graph.
    pub(crate) fn no_graph() -> ApiError {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_graph",
            "this server has no graph to resume: give it with Server::graph(compiled_graph) \
             (and serve the typed router) to answer interrupts from the inspector",
        )
    }

    /// 403: a write posted from a page of another origin.
    pub(crate) fn cross_origin() -> ApiError {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_origin",
            "a write must come from this server's own pages (the Origin header names another site)",
        )
    }

    /// 409: an answer to an interrupt that is not pending (answered
    /// already, or never asked).
    #[cfg(feature = "graph")]
    pub(crate) fn not_pending(thread: &str, id: &str) -> ApiError {
        ApiError::new(
            StatusCode::CONFLICT,
            "not_pending",
            format!(
                "thread {thread:?} has no pending interrupt {id:?}: it was answered already, \
                 or the run moved on"
            ),
        )
    }

    /// A graph's error while reading what is pending.
    #[cfg(feature = "graph")]
    pub(crate) fn graph(error: state_graph::GraphError) -> ApiError {
        match error {
            state_graph::GraphError::Store(store) => ApiError::from(store),
            // The step a request named: the request's error.
            error @ state_graph::GraphError::Checkpoint { .. } => {
                ApiError::invalid_body(format!("checkpoint_id: {error}"))
            }
            other => {
                // The whole chain: "node \"x\" failed: <the node's error>".
                let mut message = other.to_string();
                let mut source = std::error::Error::source(&other);
                while let Some(cause) = source {
                    let cause_text = cause.to_string();
                    if !message.contains(&cause_text) {
                        message.push_str(": ");
                        message.push_str(&cause_text);
                    }
                    source = cause.source();
                }
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "graph", message)
            }
        }
    }

    /// The same error about field `field` of a request body: its detail
    /// begins with the field's name (`thread_id: invalid thread id ..`).
    pub(crate) fn in_field(mut self, field: &str) -> ApiError {
        self.message = format!("{field}: {}", self.message);
        self
    }

    /// Its machine kind.
    #[cfg_attr(not(feature = "graph"), allow(dead_code))]
    pub(crate) fn kind(&self) -> &'static str {
        self.kind
    }

    /// The status of this error.
    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }

    /// The words of this error, for people.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The JSON body of this error, `{"detail": .., "kind": ..}`: an
    /// answer's body, or an `error` event's data.
    pub(crate) fn body(&self) -> serde_json::Value {
        serde_json::json!({"detail": self.message, "kind": self.kind})
    }

    /// 500: what a run streams that JSON cannot hold (a NaN, say).
    #[cfg(feature = "graph")]
    pub(crate) fn unwritable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "encode", message)
    }

    /// 500: a rebuilt state that JSON cannot hold (NaN, say).
    pub(crate) fn encode(thread: &str, seq: u64, error: &StateError) -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "encode",
            format!("thread {thread:?}, state after step {seq}: cannot write it as JSON: {error}"),
        )
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        let (status, kind) = match &error {
            StoreError::ThreadNotFound { .. } => (StatusCode::NOT_FOUND, "thread_not_found"),
            StoreError::InvalidThreadId { .. } => (StatusCode::BAD_REQUEST, "invalid_thread_id"),
            StoreError::ThreadExists { .. } => (StatusCode::CONFLICT, "thread_exists"),
            // Past the end of the log, or compacted away: that state is
            // not there (any more).
            StoreError::NoSuchStep { .. } => (StatusCode::NOT_FOUND, "no_such_step"),
            // A followed thread was taken back (a run rolled back).
            StoreError::ThreadRewound { .. } => (StatusCode::CONFLICT, "thread_rewound"),
            StoreError::Corrupt { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "corrupt"),
            StoreError::Migration { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "migration"),
            StoreError::TooNew { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "too_new"),
            // The database is unreachable or failing: worth a retry later.
            StoreError::Backend { .. } => (StatusCode::SERVICE_UNAVAILABLE, "backend"),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        ApiError::new(status, kind, crate::report::chain(&error))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            detail: &self.message,
            kind: self.kind,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(challenge) = self.challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// An answer given before the request's body was read (a refusal by the
/// token guard or the auth hook): the connection closes after it (hyper
/// would otherwise close it at once, or read the body's rest as the next
/// request), so a client does not send its next request on a connection
/// that is going away.
pub(crate) fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_fitting_statuses() {
        let not_found = ApiError::from(StoreError::ThreadNotFound { thread: "t".into() });
        assert_eq!(not_found.status, StatusCode::NOT_FOUND);
        assert_eq!(not_found.kind, "thread_not_found");
        assert_eq!(not_found.message, "thread \"t\" does not exist");

        let corrupt = ApiError::from(StoreError::Corrupt {
            thread: "t".into(),
            what: "step",
            seq: 2,
            detail: "body is not JSON".into(),
        });
        assert_eq!(corrupt.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            corrupt.message,
            "thread \"t\", step 2: stored data is corrupt: body is not JSON"
        );
    }
}
