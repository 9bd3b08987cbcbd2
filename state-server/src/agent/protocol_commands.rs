//! `POST /threads/{id}/commands`: the v3 thread protocol's commands
//! (recorded exchanges 55, 56, 59), JSON in, JSON out:
//! `{"id": 1, "method": .., "params": {..}}` answered by
//! `{"type": "success", "id": 1, "result": {..}, "meta":
//! {"applied_through_seq": 0}}` or `{"type": "error", "id": 1, "error":
//! <code>, "message": ..}` (status 200 both; a body that is not a command
//! is a 400).
//!
//! - `run.start` (`assistant_id`, `input`, `config`, `metadata`,
//!   `multitaskStrategy`): a run on the thread, made if it is not there,
//!   streaming every mode the protocol's channels are made from, its
//!   subgraphs' too, resumable. On a thread paused at an interrupt, the
//!   input answers the interrupt (LangGraph's `Command(resume=input)`). A
//!   run from a past checkpoint (`config.configurable.checkpoint_id`)
//!   branches the thread back there, as `POST /threads/{id}/runs` does.
//! - `input.respond` (`interrupt_id`, `response`, `namespace`, or
//!   `responses`: a list of those; `update` and `goto` optional): a run
//!   answering each pending interrupt by id, on the thread's assistant.
//!
//! `subscription.subscribe`, `.unsubscribe` and `agent.getTree` are
//! commands of the WebSocket (`protocol_socket.rs`); `subscription.reconnect`
//! is not served: all four are `not_supported` here, as methods the
//! protocol does not have are `unknown_command`.

use super::run_routes::{Create, create_run};
use crate::auth::Owner;
use crate::extract::Path;
use crate::routes::App;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use state_store::ThreadStatus;

/// The stream modes a protocol run streams: those its channels are made
/// from.
const RUN_MODES: [&str; 6] = [
    "values",
    "updates",
    "messages",
    "custom",
    "tasks",
    "checkpoints",
];

/// Why a command failed: the protocol's error code and the words.
struct Refused {
    code: &'static str,
    message: String,
}

impl Refused {
    fn invalid(message: impl Into<String>) -> Refused {
        Refused {
            code: "invalid_argument",
            message: message.into(),
        }
    }
}

impl From<crate::error::ApiError> for Refused {
    fn from(error: crate::error::ApiError) -> Refused {
        let code = match error.status().as_u16() {
            401 | 403 => "permission_denied",
            400..=499 => "invalid_argument",
            _ => "unknown_error",
        };
        Refused {
            code,
            message: error.message().to_owned(),
        }
    }
}

impl From<state_store::StoreError> for Refused {
    fn from(error: state_store::StoreError) -> Refused {
        Refused::from(crate::error::ApiError::from(error))
    }
}

/// The route.
pub(crate) async fn command(
    Shared(app): Shared<App>,
    owner: Owner,
    Path(thread): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refusal) = super::body::require_json(&headers) {
        return refusal.into_response();
    }
    let command: Value = match serde_json::from_slice(&body) {
        Ok(command) => command,
        Err(error) => {
            let refusal =
                crate::error::ApiError::bad_request(format!("Invalid JSON body: {error}"));
            return refusal.into_response();
        }
    };
    let (envelope, malformed) = answer(&app, owner.as_deref(), &thread, &command).await;
    let status = if malformed {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    (status, Json(envelope)).into_response()
}

/// The answer to `command` on `thread`: its envelope, and whether the
/// command was no command at all (no integer `id` or no string
/// `method`: over HTTP, a 400).
pub(crate) async fn answer(
    app: &App,
    owner: Option<&str>,
    thread: &str,
    command: &Value,
) -> (Value, bool) {
    let id = command.get("id").cloned().unwrap_or(Value::Null);
    let (Some(number), Some(method)) = (id.as_u64(), command.get("method").and_then(Value::as_str))
    else {
        let id = if command.is_object() { id } else { Value::Null };
        let refused =
            Refused::invalid("Protocol commands must include an integer id and string method.");
        return (failure(id, refused), true);
    };
    let params = match command.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(other) => {
            let refused = Refused::invalid(format!("params: expected an object, got {other}"));
            return (failure(id, refused), false);
        }
    };
    let answer = match method {
        "run.start" => run_start(app, owner, thread, &params).await,
        "input.respond" => input_respond(app, owner, thread, &params).await,
        "subscription.subscribe" | "subscription.unsubscribe" | "agent.getTree" => Err(Refused {
            code: "not_supported",
            message: format!(
                "{method} is a command of the WebSocket on /threads/{{id}}/stream/events; over \
                 HTTP, POST /threads/{{id}}/stream/events streams the channels its body names"
            ),
        }),
        "subscription.reconnect" => Err(Refused {
            code: "not_supported",
            message: format!("{method} is not served by this server"),
        }),
        other => Err(Refused {
            code: "unknown_command",
            message: format!("Unknown protocol command: {other}"),
        }),
    };
    match answer {
        Ok(result) => (success(number, result), false),
        Err(refused) => (failure(id, refused), false),
    }
}

/// A success envelope.
pub(crate) fn success(id: u64, result: Value) -> Value {
    json!({"type": "success", "id": id, "result": result, "meta": {"applied_through_seq": 0}})
}

/// An error envelope.
fn failure(id: Value, refused: Refused) -> Value {
    json!({"type": "error", "id": id, "error": refused.code, "message": refused.message})
}

/// An error envelope with code `invalid_argument`.
pub(crate) fn invalid(id: Value, message: impl Into<String>) -> Value {
    failure(id, Refused::invalid(message))
}

/// `run.start`: the run's id.
async fn run_start(
    app: &App,
    owner: Option<&str>,
    thread: &str,
    params: &Map<String, Value>,
) -> Result<Value, Refused> {
    let assistant_id = params
        .get("assistant_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| Refused::invalid("run.start requires an assistant_id."))?;
    let mut request = Map::new();
    request.insert("assistant_id".into(), json!(assistant_id));
    let config = match params.get("config") {
        None | Some(Value::Null) => None,
        Some(Value::Object(config)) => Some(config.clone()),
        Some(other) => {
            return Err(Refused::invalid(format!(
                "config: expected an object, got {other}"
            )));
        }
    };
    // A fork target, checked in LangGraph's words; the run reads it from
    // its config, as `/runs` does.
    let fork = config
        .as_ref()
        .and_then(|config| config.get("configurable"))
        .and_then(|configurable| configurable.get("checkpoint_id"));
    if let Some(fork) = fork.filter(|fork| !fork.is_null())
        && fork.as_str().is_none_or(|id| id.trim().is_empty())
    {
        return Err(Refused::invalid(
            "config.configurable.checkpoint_id must be a non-empty string.",
        ));
    }
    let input = params.get("input").cloned().unwrap_or(Value::Null);
    // On a thread paused at an interrupt, the input is the answer.
    let paused = !input.is_null()
        && app
            .store
            .thread_record(thread, owner)
            .await?
            .is_some_and(|record| record.status == ThreadStatus::Interrupted);
    if paused {
        request.insert("command".into(), json!({"resume": input}));
    } else {
        request.insert("input".into(), input);
    }
    if let Some(config) = config {
        request.insert("config".into(), Value::Object(config));
    }
    copy_metadata(params, &mut request)?;
    let run_id = start(app, owner, thread, request, params).await?;
    Ok(json!({"run_id": run_id}))
}

/// `input.respond`: an empty result once the answering run is made.
async fn input_respond(
    app: &App,
    owner: Option<&str>,
    thread: &str,
    params: &Map<String, Value>,
) -> Result<Value, Refused> {
    let answers = answers_of(params)?;
    let Some(record) = app.store.thread_record(thread, owner).await? else {
        return Err(Refused {
            code: "no_such_run",
            message: "No interrupted run is bound to this thread.".into(),
        });
    };
    let state = super::thread_routes::state_of(&app.assistants, &record).await?;
    let pending: Vec<&str> = state
        .as_ref()
        .and_then(|state| state["interrupts"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|interrupt| interrupt["id"].as_str())
        .collect();
    let mut resume = Map::new();
    for (id, response) in answers {
        if !pending.contains(&id.as_str()) {
            return Err(Refused {
                code: "no_such_interrupt",
                message: format!("Unknown or already-consumed interrupt: {id}"),
            });
        }
        resume.insert(id, response);
    }
    let Some(assistant_id) = record.metadata["assistant_id"].as_str() else {
        return Err(Refused {
            code: "no_such_run",
            message: "No interrupted run is bound to this thread.".into(),
        });
    };
    let mut command = json!({"resume": resume});
    for key in ["update", "goto"] {
        if let Some(value) = params.get(key).filter(|v| !v.is_null()) {
            command[key] = value.clone();
        }
    }
    let mut request = Map::new();
    request.insert("assistant_id".into(), json!(assistant_id));
    request.insert("command".into(), command);
    if let Some(config) = params.get("config").filter(|v| !v.is_null()) {
        request.insert("config".into(), config.clone());
    }
    copy_metadata(params, &mut request)?;
    start(app, owner, thread, request, params).await?;
    Ok(json!({}))
}

/// The answers an `input.respond` gives, by interrupt id: `responses`,
/// or the one `interrupt_id` and `response`.
fn answers_of(params: &Map<String, Value>) -> Result<Vec<(String, Value)>, Refused> {
    let one = |entry: &Map<String, Value>, at: &str| -> Result<(String, Value), Refused> {
        let id = entry
            .get("interrupt_id")
            .and_then(Value::as_str)
            .ok_or_else(|| Refused::invalid(format!("{at}interrupt_id: expected a string")))?;
        match entry.get("namespace") {
            None | Some(Value::Null) => {}
            Some(Value::Array(segments)) if segments.iter().all(Value::is_string) => {}
            Some(_) => {
                return Err(Refused::invalid(format!(
                    "{at}namespace: expected a list of strings"
                )));
            }
        }
        let response = entry.get("response").cloned().unwrap_or(Value::Null);
        Ok((id.to_owned(), response))
    };
    match params.get("responses") {
        None | Some(Value::Null) => Ok(vec![one(params, "")?]),
        Some(Value::Array(entries)) if !entries.is_empty() => entries
            .iter()
            .enumerate()
            .map(|(i, entry)| match entry {
                Value::Object(entry) => one(entry, &format!("responses[{i}].")),
                _ => Err(Refused::invalid(format!(
                    "responses[{i}]: expected an object"
                ))),
            })
            .collect(),
        Some(_) => Err(Refused::invalid(
            "responses: expected a non-empty list of {interrupt_id, response}",
        )),
    }
}

/// The command's `metadata`, into the run's request.
fn copy_metadata(
    params: &Map<String, Value>,
    request: &mut Map<String, Value>,
) -> Result<(), Refused> {
    match params.get("metadata") {
        None | Some(Value::Null) => Ok(()),
        Some(metadata @ Value::Object(_)) => {
            request.insert("metadata".into(), metadata.clone());
            Ok(())
        }
        Some(other) => Err(Refused::invalid(format!(
            "metadata: expected an object, got {other}"
        ))),
    }
}

/// Makes the run `request` describes on `thread` (made if not there),
/// with the protocol's modes and the command's multitask strategy
/// (`enqueue` unless it names another); its id.
async fn start(
    app: &App,
    owner: Option<&str>,
    thread: &str,
    mut request: Map<String, Value>,
    params: &Map<String, Value>,
) -> Result<String, Refused> {
    request.insert("stream_mode".into(), json!(RUN_MODES));
    request.insert("stream_subgraphs".into(), json!(true));
    request.insert("stream_resumable".into(), json!(true));
    request.insert("if_not_exists".into(), json!("create"));
    // As LangGraph: a strategy it does not know is the default.
    let strategy = params
        .get("multitaskStrategy")
        .and_then(Value::as_str)
        .filter(|s| matches!(*s, "reject" | "enqueue" | "interrupt" | "rollback"))
        .unwrap_or("enqueue");
    request.insert("multitask_strategy".into(), json!(strategy));
    let bytes = serde_json::to_vec(&request).map_err(|e| Refused::invalid(e.to_string()))?;
    let create: Create = super::body::parse(&bytes)?;
    let (run, _) = create_run(app, Some(thread), create, owner).await?;
    Ok(run.run_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn answers_are_one_or_a_list() {
        let one = answers_of(&params(json!({"interrupt_id": "a", "namespace": [],
                                            "response": "Carol"})));
        assert_eq!(one.ok().unwrap(), vec![("a".to_owned(), json!("Carol"))]);
        let many = answers_of(&params(json!({"responses": [
            {"interrupt_id": "a", "response": 1}, {"interrupt_id": "b"}]})));
        assert_eq!(
            many.ok().unwrap(),
            vec![("a".to_owned(), json!(1)), ("b".to_owned(), Value::Null)]
        );
        let refused = |value: Value| answers_of(&params(value)).err().unwrap().message;
        assert_eq!(refused(json!({})), "interrupt_id: expected a string");
        assert_eq!(
            refused(json!({"interrupt_id": "a", "namespace": "x"})),
            "namespace: expected a list of strings"
        );
        assert_eq!(
            refused(json!({"responses": [{"interrupt_id": "a"}, 3]})),
            "responses[1]: expected an object"
        );
        assert_eq!(
            refused(json!({"responses": [{"response": 2}]})),
            "responses[0].interrupt_id: expected a string"
        );
        assert!(refused(json!({"responses": []})).starts_with("responses: expected"));
    }
}
