//! [`Found`]: the assistant a request names, given in code or created
//! (`POST /assistants`, kept in the store), with the graph it runs; and
//! how a run's context is made from its assistant's and its own, as the
//! Agent Server makes it.

use super::assistants::Assistant;
use crate::error::ApiError;
use crate::routes::App;
use serde_json::{Map, Value, json};
use state_store::AssistantRecord;

/// LangGraph's words when a body gives both forms of a context.
pub(crate) const BOTH_FORMS: &str = "Cannot specify both configurable and context. Prefer setting context alone. Context was introduced in LangGraph 0.6.0 and is the long term planned replacement for configurable.";

/// An assistant a request names.
pub(crate) enum Found<'a> {
    /// One given in code ([`Server::assistant`](crate::Server::assistant)).
    System(&'a Assistant),
    /// One created, with its graph's.
    Created(Box<AssistantRecord>, &'a Assistant),
}

/// The assistant `id` names, visible to `owner`: one given in code (by
/// its id or graph id), or one created whose graph is served here.
pub(crate) async fn find<'a>(
    app: &'a App,
    id: &str,
    owner: Option<&str>,
) -> Result<Option<Found<'a>>, ApiError> {
    if let Some(system) = app.assistants.find(id) {
        return Ok(Some(Found::System(system)));
    }
    // Created assistants have UUIDs (checked when created): anything else
    // names none, and is not worth a query.
    if uuid::Uuid::parse_str(id).is_err() {
        return Ok(None);
    }
    let Some(record) = app.store.assistant(id, owner).await? else {
        return Ok(None);
    };
    Ok(app
        .assistants
        .by_graph(&record.graph_id)
        .map(|graph| Found::Created(Box::new(record), graph)))
}

impl Found<'_> {
    /// The graph it runs.
    pub(crate) fn graph(&self) -> &Assistant {
        match self {
            Found::System(graph) | Found::Created(_, graph) => graph,
        }
    }

    /// Its id.
    #[cfg_attr(not(feature = "graph"), allow(dead_code))]
    pub(crate) fn id(&self) -> &str {
        match self {
            Found::System(graph) => &graph.assistant_id,
            Found::Created(record, _) => &record.assistant_id,
        }
    }

    /// As `GET /assistants/{id}` answers it.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Found::System(graph) => graph.to_json(),
            Found::Created(record, _) => created_json(record),
        }
    }

    /// A run's context for the graph (`None`: the one bound in code), from
    /// the run's `context` or else its `config.configurable` (LangGraph's
    /// older form), merged key by key over the assistant's, as the Agent
    /// Server merges them. A graph that takes no context from a run
    /// refuses a run's explicit `context` (its `configurable` is config
    /// too, and kept as such).
    #[cfg_attr(not(feature = "graph"), allow(dead_code))]
    pub(crate) fn run_context(
        &self,
        config: Option<&Map<String, Value>>,
        context: Option<&Map<String, Value>>,
    ) -> Result<Option<Map<String, Value>>, ApiError> {
        let configurable = configurable(config)?;
        let context = context.filter(|c| !c.is_empty());
        if configurable.is_some() && context.is_some() {
            return Err(ApiError::bad_request(BOTH_FORMS));
        }
        let graph = self.graph();
        if !graph.takes_context {
            return match context {
                Some(_) => Err(no_context(&graph.graph_id)),
                None => Ok(None),
            };
        }
        let mut merged = match self {
            Found::System(_) => Map::new(),
            Found::Created(record, _) => record.context.as_object().cloned().unwrap_or_default(),
        };
        merged.extend(context.or(configurable).cloned().unwrap_or_default());
        Ok(Some(merged))
    }
}

/// `config.configurable`, if it has keys; a 422 if it is not an object.
pub(crate) fn configurable(
    config: Option<&Map<String, Value>>,
) -> Result<Option<&Map<String, Value>>, ApiError> {
    match config.and_then(|c| c.get("configurable")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map).filter(|m| !m.is_empty())),
        Some(_) => Err(ApiError::invalid_body(
            "config.configurable: expected an object",
        )),
    }
}

/// The refusal of a context for graph `graph_id`, which takes none.
pub(crate) fn no_context(graph_id: &str) -> ApiError {
    ApiError::invalid_body(format!(
        "context: graph \"{graph_id}\" takes no context from a request: its context is bound \
         in code (serve it as `ServedGraph::new(graph).context_from_json()` for a run's context \
         to reach its nodes)"
    ))
}

/// A created assistant as the Agent Server answers it.
pub(crate) fn created_json(record: &AssistantRecord) -> Value {
    serde_json::to_value(record).unwrap_or_else(|_| json!({}))
}

/// One version as `POST /assistants/{id}/versions` lists it (LangGraph's
/// `AssistantVersion`: no `updated_at`).
pub(crate) fn version_json(record: &AssistantRecord) -> Value {
    let mut json = created_json(record);
    if let Value::Object(map) = &mut json {
        map.remove("updated_at");
    }
    json
}
