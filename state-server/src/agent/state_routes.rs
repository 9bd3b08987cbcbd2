//! A thread's state through its graph, as the Agent Server answers it:
//! `POST /threads/{id}/state` (`update_state`), `GET
//! /threads/{id}/state/{checkpoint_id}` and `POST
//! /threads/{id}/state/checkpoint` (the state at a checkpoint) and
//! `POST /threads/{id}/history`, and `GET /threads/{id}/history` on an
//! Agent Server thread (on other threads that path answers this crate's
//! own JSON, as `GET /threads/{id}/state` does).

use super::assistants::Assistant;
use super::body::{Body, page_limit};
use super::checkpoint;
use super::step_runs::StepRuns;
use super::thread_state::checkpoint_json;
use crate::error::ApiError;
use crate::extract::Path;
use crate::routes::App;
use axum::Json;
use axum::extract::State as Shared;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The graph of thread `id`: the one its metadata's `graph_id` names.
async fn graph_of<'a>(app: &'a App, id: &str) -> Result<&'a Assistant, ApiError> {
    let record = app
        .store
        .thread_record(id, None)
        .await?
        .ok_or_else(|| ApiError::missing(format!("Thread with ID {id} not found")))?;
    let Some(graph_id) = super::assistants::graph_id_of(&record) else {
        return Err(ApiError::no_graph_id(format!(
            "Thread '{id}' has no assigned graph ID. This usually occurs when no runs have been \
             made on this particular thread. This operation requires a graph ID. Please ensure a \
             run has been made for the thread or manually update the thread metadata (by setting \
             the 'graph_id' field) before running this operation."
        )));
    };
    app.assistants.by_graph(graph_id).ok_or_else(|| {
        ApiError::missing(format!(
            "Graph '{graph_id}' not found. Expected one of: {:?}",
            app.assistants.graph_ids()
        ))
    })
}

/// `POST /threads/{id}/state`'s body (`ThreadStateUpdate`).
#[derive(Deserialize)]
pub(crate) struct Update {
    #[serde(default)]
    values: Option<Value>,
    #[serde(default)]
    as_node: Option<String>,
    #[serde(default)]
    checkpoint: Option<Value>,
    #[serde(default)]
    checkpoint_id: Option<Value>,
}

/// `POST /threads/{id}/state`: LangGraph's `update_state`: `values` as a
/// delta written by `as_node` (the run goes on from that node's edges);
/// answers the new checkpoint. At a past checkpoint (`checkpoint_id` or
/// `checkpoint`), the edit is made on its state, the thread branched back
/// there first (LangGraph's fork).
pub(crate) async fn update(
    Shared(app): Shared<App>,
    Path(id): Path<String>,
    Body(update): Body<Update>,
) -> Result<Json<Value>, ApiError> {
    let graph = graph_of(&app, &id).await?;
    let values = match update.values {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(values @ Value::Object(_)) => values,
        Some(_) => {
            return Err(ApiError::invalid_body(
                "values: expected an object (a partial update of the state)",
            ));
        }
    };
    let at = checkpoint::first_named(&[
        ("checkpoint_id", update.checkpoint_id.as_ref()),
        ("checkpoint", update.checkpoint.as_ref()),
    ])?;
    let seq = graph
        .served
        .update_state(id.clone(), values, update.as_node, at)
        .await?;
    let checkpoint = checkpoint_json(&id, Some(checkpoint::id(seq)));
    Ok(Json(json!({
        "checkpoint": checkpoint,
        "configurable": checkpoint,
        "checkpoint_id": checkpoint::id(seq),
    })))
}

/// `GET /threads/{id}/state/{checkpoint_id}`: the state after the step
/// the checkpoint names.
pub(crate) async fn at_checkpoint(
    Shared(app): Shared<App>,
    Path((id, checkpoint_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let graph = graph_of(&app, &id).await?;
    let seq = checkpoint::parse(&checkpoint_id)
        .ok_or_else(|| ApiError::missing(format!("Checkpoint {checkpoint_id} not found")))?;
    let mut state = graph.served.state(id.clone(), Some(seq)).await?;
    StepRuns::of(&app.store, &id).join(&mut state).await?;
    Ok(Json(state))
}

/// `POST /threads/{id}/state/checkpoint`'s body.
#[derive(Deserialize)]
pub(crate) struct AtCheckpoint {
    #[serde(default)]
    checkpoint: Option<Value>,
}

/// `POST /threads/{id}/state/checkpoint`: the state at the checkpoint the
/// body names (`{"checkpoint": {"checkpoint_id": ..}}`), or the latest.
pub(crate) async fn at_checkpoint_body(
    Shared(app): Shared<App>,
    Path(id): Path<String>,
    Body(body): Body<AtCheckpoint>,
) -> Result<Json<Value>, ApiError> {
    let graph = graph_of(&app, &id).await?;
    let seq = checkpoint::named("checkpoint", body.checkpoint.as_ref())?;
    let mut state = graph.served.state(id.clone(), seq).await?;
    StepRuns::of(&app.store, &id).join(&mut state).await?;
    Ok(Json(state))
}

/// `POST /threads/{id}/history`'s body.
#[derive(Deserialize)]
pub(crate) struct History {
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    before: Option<Value>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `POST /threads/{id}/history`: up to `limit` (10) states, newest first,
/// from before the checkpoint `before` names, whose metadata holds
/// `metadata`.
pub(crate) async fn history(
    Shared(app): Shared<App>,
    Path(id): Path<String>,
    Body(history): Body<History>,
) -> Result<Json<Vec<Value>>, ApiError> {
    let graph = graph_of(&app, &id).await?;
    let limit = page_limit(history.limit, 10)?;
    let before = checkpoint::named("before", history.before.as_ref())?;
    let states = states(&app, graph, &id, limit, before, history.metadata).await?;
    Ok(Json(states))
}

/// The keys of a step's own metadata the graph's history filters on; a
/// filter's other keys are checked on the metadata joined with its run's.
const STEP_KEYS: [&str; 2] = ["source", "step"];

/// How many states are read at a time when a filter names a run's keys.
const FILTERED_PAGE: usize = 50;

/// Up to `limit` states of thread `id`, newest first, before step
/// `before`, each with its run's keys ([`StepRuns`]), whose metadata holds
/// `filter`'s keys and values. A filter on a step's own keys is the
/// graph's; one on a run's reads the history a page at a time.
async fn states(
    app: &App,
    graph: &Assistant,
    id: &str,
    limit: usize,
    mut before: Option<u64>,
    filter: Option<Map<String, Value>>,
) -> Result<Vec<Value>, ApiError> {
    let mut runs = StepRuns::of(&app.store, id);
    let (own, joined): (Map<String, Value>, Map<String, Value>) = filter
        .unwrap_or_default()
        .into_iter()
        .partition(|(key, _)| STEP_KEYS.contains(&key.as_str()));
    let own = (!own.is_empty()).then_some(Value::Object(own));
    if joined.is_empty() {
        let mut states = graph
            .served
            .history(id.to_owned(), limit, before, own)
            .await?;
        for state in &mut states {
            runs.join(state).await?;
        }
        return Ok(states);
    }
    let page = limit.max(FILTERED_PAGE);
    let mut found = Vec::new();
    loop {
        let states = graph
            .served
            .history(id.to_owned(), page, before, own.clone())
            .await?;
        let read = states.len();
        for mut state in states {
            before = state["metadata"]["step"].as_u64();
            runs.join(&mut state).await?;
            if joined
                .iter()
                .all(|(key, value)| state["metadata"].get(key) == Some(value))
            {
                found.push(state);
                if found.len() == limit {
                    return Ok(found);
                }
            }
        }
        if read < page || before.is_none_or(|seq| seq == 0) {
            return Ok(found);
        }
    }
}

/// `GET /threads/{id}/history`'s query (on an Agent Server thread).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    before: Option<String>,
}

/// `GET /threads/{id}/history` on an Agent Server thread: the `POST`'s
/// answer, its `limit` and `before` (a checkpoint id) in the query.
pub(crate) async fn history_get(
    app: App,
    id: String,
    uri: &axum::http::Uri,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let crate::extract::Query(query) = crate::extract::Query::<HistoryQuery>::of(uri)?;
    let graph = graph_of(&app, &id).await?;
    let limit = page_limit(query.limit, 10)?;
    let before = checkpoint::named("before", query.before.map(Value::String).as_ref())?;
    let states = states(&app, graph, &id, limit, before, None).await?;
    Ok(Json(states).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_is_named_by_id_or_is_the_latest() {
        let step = checkpoint::id(3);
        for named in [
            json!(step),
            json!({"checkpoint_id": step}),
            json!({"configurable": {"checkpoint_id": step}, "thread_id": "t"}),
        ] {
            assert_eq!(
                checkpoint::named("checkpoint", Some(&named)).ok(),
                Some(Some(3)),
                "{named}"
            );
        }
        for latest in [
            Value::Null,
            json!({}),
            json!({"thread_id": "t", "checkpoint_ns": ""}),
            json!({"checkpoint_id": null}),
        ] {
            assert_eq!(
                checkpoint::named("checkpoint", Some(&latest)).ok(),
                Some(None),
                "{latest}"
            );
        }
        for bad in [json!(3), json!([step]), json!({"checkpoint_id": 3})] {
            let error = checkpoint::named("before", Some(&bad)).expect_err("refused");
            assert!(
                error
                    .message()
                    .starts_with("before: expected a checkpoint id"),
                "{bad}"
            );
        }
        let unknown = json!({"checkpoint_id": "1f1ea4ee-9854-6729-8003-d5fbd6f4b086"});
        assert!(checkpoint::named("checkpoint", Some(&unknown)).is_err());
    }
}
