//! A run's `metadata` and `kwargs.config` as the Agent Server makes them
//! when it creates the run (`langgraph_runtime_inmem`'s `Runs.put`): its
//! assistant's, its thread's and its own, merged key by key, the later
//! winning, with the ids of the run written over them.
//!
//! The metadata is stored once, in the run's row, and put under
//! `kwargs.config.metadata` when the run is answered ([`Wire`]): a
//! metadata as deep as a body may carry stays readable in the store.
//!
//! What differs from LangGraph on purpose: the configurable keys the
//! Python server adds for its own machinery (`langgraph_request_id`,
//! `__request_start_time_ms__`, `__after_seconds__`,
//! `langgraph_auth_permissions`, ...) are not added, and a thread has no
//! `config` of its own here, so none is merged.

use super::assistants_found::Found;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};
use state_store::Run;

/// A JSON object.
type Object = Map<String, Value>;

/// What a run is made from, besides its assistant.
pub(crate) struct RunParts<'a> {
    pub run_id: &'a str,
    /// Its thread; `None` for a stateless run (which gets a thread of its
    /// own, named by the run's id).
    pub thread_id: Option<&'a str>,
    /// The thread's metadata, if the thread exists.
    pub thread_metadata: Option<&'a Object>,
    /// The request's `config`.
    pub config: Option<&'a Object>,
    /// The request's `context`, if it gave one: LangGraph puts it in the
    /// config as its `configurable` too.
    pub context: Option<&'a Object>,
    /// The request's `metadata`.
    pub metadata: Option<Object>,
    /// Who asks (the auth hook's identity).
    pub owner: Option<&'a str>,
}

/// `a` with the keys of `b` over it (LangGraph's `_merge_jsonb`).
fn over(mut a: Object, b: &Object) -> Object {
    a.extend(b.iter().map(|(k, v)| (k.clone(), v.clone())));
    a
}

/// The object under `key` of `map`, or an empty one.
fn object(map: &Object, key: &str) -> Object {
    map.get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The assistant's metadata and config (the ones given in code have
/// `{"created_by": "system"}` and `{}`).
fn assistant_parts(found: &Found<'_>) -> (Object, Object) {
    match found {
        Found::System(_) => {
            let mut metadata = Object::new();
            metadata.insert("created_by".into(), json!("system"));
            (metadata, Object::new())
        }
        Found::Created(record, _) => (
            record.metadata.as_object().cloned().unwrap_or_default(),
            record.config.as_object().cloned().unwrap_or_default(),
        ),
    }
}

/// The run's metadata and its `kwargs.config`: metadata is the
/// assistant's, the thread's, the config's `metadata` and the run's own,
/// with `graph_id` and `assistant_id` set to the run's (a client cannot
/// name another); config is the assistant's with the run's over it, its
/// `configurable` merged the same way and given the run's ids (the run's
/// metadata joins it when answered: [`Wire`]).
pub(crate) fn merged(found: &Found<'_>, parts: RunParts<'_>) -> (Object, Object) {
    let (assistant_metadata, assistant_config) = assistant_parts(found);
    let mut config = parts.config.cloned().unwrap_or_default();
    if let Some(context) = parts.context.filter(|c| !c.is_empty()) {
        config.insert("configurable".into(), Value::Object(context.clone()));
    }
    let graph_id = found.graph().graph_id.as_str();
    let assistant_id = found.id();
    let mut metadata = over(
        assistant_metadata,
        parts.thread_metadata.unwrap_or(&Object::new()),
    );
    metadata = over(metadata, &object(&config, "metadata"));
    metadata = over(metadata, &parts.metadata.unwrap_or_default());
    metadata.insert("graph_id".into(), json!(graph_id));
    metadata.insert("assistant_id".into(), json!(assistant_id));
    let (theirs, ours) = (
        object(&assistant_config, "configurable"),
        object(&config, "configurable"),
    );
    let user_id = ours
        .get("user_id")
        .or_else(|| theirs.get("user_id"))
        .cloned()
        .unwrap_or_else(|| json!(parts.owner.unwrap_or_default()));
    let mut configurable = over(theirs, &ours);
    configurable.insert("run_id".into(), json!(parts.run_id));
    configurable.insert(
        "thread_id".into(),
        json!(parts.thread_id.unwrap_or(parts.run_id)),
    );
    configurable.insert("graph_id".into(), json!(graph_id));
    configurable.insert("assistant_id".into(), json!(assistant_id));
    configurable.insert("user_id".into(), user_id);
    let mut merged_config = over(assistant_config, &config);
    merged_config.insert("configurable".into(), Value::Object(configurable));
    merged_config.remove("metadata");
    (metadata, merged_config)
}

/// What a thread created by its first run gets in its metadata besides
/// its graph and assistant (LangGraph's `Runs.put`): the run's config's
/// `metadata`, then the run's own. The ids in `named` win (LangGraph lets
/// the run's metadata replace them): a thread's `graph_id` names the
/// graph its state is read with.
pub(crate) fn add_new_thread_metadata(
    named: &mut Value,
    config: Option<&Object>,
    metadata: Option<&Object>,
) {
    let Value::Object(ids) = named else { return };
    let mut merged = config.map(|c| object(c, "metadata")).unwrap_or_default();
    merged = over(merged, metadata.unwrap_or(&Object::new()));
    merged = over(merged, ids);
    *ids = merged;
}

/// A run as the Agent Server answers it: the store's run, its metadata
/// under `kwargs.config.metadata` too.
pub(crate) struct Wire(pub Run);

impl Serialize for Wire {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let mut json = serde_json::to_value(&self.0).map_err(serde::ser::Error::custom)?;
        if let Some(config) = json
            .pointer_mut("/kwargs/config")
            .and_then(Value::as_object_mut)
        {
            config.insert("metadata".into(), self.0.metadata.clone());
        }
        json.serialize(serializer)
    }
}

#[cfg(all(test, feature = "graph"))]
mod tests {
    use super::*;
    use crate::agent::assistants::Assistant;
    use state_core::{AgentState, State};
    use state_store::{AssistantRecord, IfExists, NewAssistant, Store};

    #[derive(AgentState, Debug, Clone)]
    struct S {
        n: u32,
    }

    fn graph() -> Assistant {
        let mut g = state_graph::StateGraph::<S>::new();
        g.add_node("a", |_: &S| S::delta());
        g.add_edge(state_graph::START, "a");
        g.add_edge("a", state_graph::END);
        let graph = g.compile().expect("compiles");
        Assistant::new("agent", graph.into(), Store::memory())
    }

    async fn created() -> AssistantRecord {
        let new = NewAssistant::new("a1", "agent")
            .config(json!({"tags": ["x"], "configurable": {"model": "m", "user_id": "u9"}}))
            .metadata(json!({"team": "red", "purpose": "assistant's"}));
        Store::memory()
            .create_assistant(new, IfExists::Raise)
            .await
            .expect("created")
    }

    fn obj(value: Value) -> Object {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn a_system_assistants_run_is_shaped_as_the_recorded_one() {
        // wire/18_runs_create_then_join: the thread's metadata and the
        // run's, over `created_by: system`.
        let graph = graph();
        let found = Found::System(&graph);
        let thread = obj(json!({"purpose": "wire-capture", "graph_id": "agent"}));
        let (metadata, config) = merged(
            &found,
            RunParts {
                run_id: "r1",
                thread_id: Some("t1"),
                thread_metadata: Some(&thread),
                config: None,
                context: None,
                metadata: Some(obj(json!({"extra": "yes", "assistant_id": "spoofed"}))),
                owner: None,
            },
        );
        let id = crate::agent::assistants::default_id("agent");
        assert_eq!(
            Value::Object(metadata.clone()),
            json!({"created_by": "system", "purpose": "wire-capture", "graph_id": "agent",
                   "assistant_id": id, "extra": "yes"})
        );
        assert_eq!(
            Value::Object(config),
            json!({"configurable": {"run_id": "r1", "thread_id": "t1", "graph_id": "agent",
                                    "assistant_id": id, "user_id": ""}})
        );
    }

    #[tokio::test]
    async fn a_created_assistants_config_and_metadata_are_under_the_runs() {
        let graph = graph();
        let found = Found::Created(Box::new(created().await), &graph);
        let (metadata, config) = merged(
            &found,
            RunParts {
                run_id: "r1",
                thread_id: None,
                thread_metadata: None,
                config: Some(&obj(json!({
                    "recursion_limit": 5,
                    "metadata": {"purpose": "config's"},
                    "configurable": {"model": "n"},
                }))),
                context: None,
                metadata: Some(obj(json!({"extra": 1}))),
                owner: Some("ada"),
            },
        );
        assert_eq!(
            Value::Object(metadata),
            json!({"team": "red", "purpose": "config's", "extra": 1,
                   "graph_id": "agent", "assistant_id": "a1"})
        );
        assert_eq!(config["tags"], json!(["x"]));
        assert_eq!(config["recursion_limit"], json!(5));
        assert_eq!(
            config["configurable"],
            json!({"model": "n", "user_id": "u9", "run_id": "r1", "thread_id": "r1",
                   "graph_id": "agent", "assistant_id": "a1"})
        );
        assert_eq!(config.get("metadata"), None, "added when answered");
    }
}
