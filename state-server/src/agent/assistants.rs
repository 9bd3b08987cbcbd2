//! The assistants: one per graph given to [`Server::assistant`], as the
//! Agent Server makes one per graph of its `langgraph.json` (the "system"
//! assistants), with LangGraph's ids, so a client may name either.
//!
//! [`Server::assistant`]: crate::Server::assistant

use crate::json::rfc3339_micros;
use serde_json::{Map, Value, json};
use state_core::Schema;
use std::time::SystemTime;
use uuid::Uuid;

/// LangGraph's namespace for the ids of the default assistants
/// (`langgraph_api/graph.py`, `NAMESPACE_GRAPH`): the id of graph `g`'s
/// assistant is `uuid5(NAMESPACE_GRAPH, g)`, the same across restarts and
/// servers.
const NAMESPACE_GRAPH: Uuid = Uuid::from_u128(0x6ba7b821_9dad_11d1_80b4_00c04fd430c8);

/// One graph, served as its default assistant.
#[derive(Clone)]
pub(crate) struct Assistant {
    pub graph_id: String,
    pub assistant_id: String,
    pub created_at: SystemTime,
    /// `GET /assistants/{id}/graph`: LangGraph's `get_graph().to_json()`.
    pub graph: Value,
    /// The same graph as Mermaid text (`draw_mermaid`), for the inspector.
    pub mermaid: String,
    /// `GET /assistants/{id}/schemas`, `state_schema`.
    pub state_schema: Value,
    /// Whether a run (or an assistant created on this graph) may give it
    /// a context.
    pub takes_context: bool,
    /// `GET /assistants/{id}/schemas`, `context_schema`: the context's
    /// JSON Schema if the graph was served with one, else `null`.
    pub context_schema: Value,
    /// The graph, behind JSON.
    #[cfg(feature = "graph")]
    pub served: std::sync::Arc<dyn super::served::Served>,
}

impl Assistant {
    #[cfg(feature = "graph")]
    pub(crate) fn new<S, C>(
        graph_id: &str,
        served: super::ServedGraph<S, C>,
        store: state_store::Store,
    ) -> Assistant
    where
        S: state_graph::GraphState,
        C: Send + Sync + 'static,
    {
        let super::ServedGraph {
            graph,
            decode,
            context_schema,
        } = served;
        Assistant {
            takes_context: decode.is_some(),
            context_schema: context_schema.unwrap_or(Value::Null),
            graph_id: graph_id.to_owned(),
            assistant_id: default_id(graph_id),
            created_at: SystemTime::now(),
            graph: graph.graph_json(),
            mermaid: graph.draw_mermaid(),
            state_schema: state_schema(S::schema()),
            served: std::sync::Arc::new(super::served::serve(graph, decode, store)),
        }
    }

    /// As the Agent Server answers it (`GET /assistants/{id}`).
    pub(crate) fn to_json(&self) -> Value {
        let at = rfc3339_micros(self.created_at);
        json!({
            "assistant_id": self.assistant_id,
            "graph_id": self.graph_id,
            "config": {},
            "context": {},
            "metadata": {"created_by": "system"},
            "name": self.graph_id,
            "created_at": at,
            "updated_at": at,
            "version": 1,
            "description": null,
        })
    }
}

/// The graph a thread's metadata names (`graph_id`), if any.
pub(crate) fn graph_id_of(record: &state_store::ThreadRecord) -> Option<&str> {
    record.metadata.get("graph_id").and_then(Value::as_str)
}

/// The id of graph `graph_id`'s default assistant.
pub(crate) fn default_id(graph_id: &str) -> String {
    Uuid::new_v5(&NAMESPACE_GRAPH, graph_id.as_bytes()).to_string()
}

/// Every assistant of a server, in the order they were given.
#[derive(Clone, Default)]
pub(crate) struct Assistants {
    list: Vec<Assistant>,
}

impl Assistants {
    /// Adds one; `false` if its graph id is taken.
    pub(crate) fn add(&mut self, assistant: Assistant) -> bool {
        if self.by_graph(&assistant.graph_id).is_some() {
            return false;
        }
        self.list.push(assistant);
        true
    }

    pub(crate) fn by_graph(&self, graph_id: &str) -> Option<&Assistant> {
        self.list.iter().find(|a| a.graph_id == graph_id)
    }

    /// The assistant `id` names: an assistant id, or a graph id (LangGraph's
    /// `get_assistant_id`: a graph id stands for its default assistant).
    pub(crate) fn find(&self, id: &str) -> Option<&Assistant> {
        self.list
            .iter()
            .find(|a| a.assistant_id == id)
            .or_else(|| self.by_graph(id))
    }

    /// Every assistant, newest first (LangGraph's default order).
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = &Assistant> {
        self.list.iter().rev()
    }

    /// The assistant of thread `record`: the graph its metadata's
    /// `graph_id` names (set by a run, or by hand), if served here.
    pub(crate) fn of_thread(&self, record: &state_store::ThreadRecord) -> Option<&Assistant> {
        graph_id_of(record).and_then(|graph_id| self.by_graph(graph_id))
    }

    /// The graph run `run` runs: its assistant's if given in code, else
    /// the graph its metadata names (a created assistant's run).
    pub(crate) fn of_run(&self, run: &state_store::Run) -> Option<&Assistant> {
        self.find(&run.assistant_id).or_else(|| {
            run.metadata
                .get("graph_id")
                .and_then(Value::as_str)
                .and_then(|graph_id| self.by_graph(graph_id))
        })
    }

    pub(crate) fn graph_ids(&self) -> Vec<&str> {
        let mut ids: Vec<&str> = self.list.iter().map(|a| a.graph_id.as_str()).collect();
        ids.sort_unstable();
        ids
    }
}

/// A state's schema for `GET /assistants/{id}/schemas`, from its field
/// table: an object with one property per field (its doc comment as its
/// description, its reducer and Rust type as `x-` keys). The fields' JSON
/// types are not spelled out (LangGraph's, from pydantic, are).
pub(crate) fn state_schema(schema: &Schema) -> Value {
    let properties: Map<String, Value> = schema
        .entries()
        .into_iter()
        .map(|(key, field)| {
            let mut property = json!({
                "title": key,
                "x-reducer": field.reducer,
                "x-rust-type": field.ty,
            });
            if !field.doc.is_empty() {
                property["description"] = Value::String(field.doc.trim().to_owned());
            }
            (key, property)
        })
        .collect();
    json!({"title": schema.name, "type": "object", "properties": properties})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_ids_are_langgraphs() {
        // As recorded from the Agent Server (wire/02_assistants_search).
        assert_eq!(default_id("agent"), "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
        assert_eq!(default_id("hitl"), "d2a02ed8-fb92-5e43-81ea-cb78d82caa2f");
        assert_eq!(default_id("chat"), "eb6db400-e3c8-5d06-a834-015cb89efe69");
    }

    #[cfg(feature = "graph")]
    #[test]
    fn an_assistant_is_found_by_its_id_or_its_graphs() {
        use state_core::{AgentState, State};
        #[derive(AgentState, Debug, Clone)]
        struct S {
            n: u32,
        }
        let mut g = state_graph::StateGraph::<S>::new();
        g.add_node("a", |_: &S| S::delta());
        g.add_edge(state_graph::START, "a");
        g.add_edge("a", state_graph::END);
        let graph = g.compile().expect("compiles");
        let store = state_store::Store::memory();
        let mut all = Assistants::default();
        assert!(all.add(Assistant::new("agent", graph.clone().into(), store.clone())));
        assert!(!all.add(Assistant::new("agent", graph.into(), store)));
        assert_eq!(all.find("agent").unwrap().graph_id, "agent");
        let id = default_id("agent");
        assert_eq!(all.find(&id).unwrap().graph_id, "agent");
        assert!(all.find("other").is_none());
    }
}
