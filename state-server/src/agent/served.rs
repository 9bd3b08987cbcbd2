//! [`Served`]: a compiled graph behind plain JSON in and out, so that the
//! server holds graphs of any state type side by side (one table of
//! boxed functions per graph, made once when it is given to the server).

use super::{checkpoint, thread_state};
use crate::error::ApiError;
use futures::future::BoxFuture;
use serde_json::Value;
use state_graph::{CompiledGraph, GraphError, GraphState};
use state_store::Store;

/// What the Agent Server's thread routes ask of a graph, in JSON.
pub(crate) trait Served: Send + Sync {
    /// The thread's state (`ThreadState`) after step `at`, or its latest.
    fn state(&self, thread: String, at: Option<u64>)
    -> BoxFuture<'static, Result<Value, ApiError>>;

    /// Up to `limit` states, newest first, from before step `before`,
    /// whose metadata contains `filter`.
    fn history(
        &self,
        thread: String,
        limit: usize,
        before: Option<u64>,
        filter: Option<Value>,
    ) -> BoxFuture<'static, Result<Vec<Value>, ApiError>>;

    /// Applies `values` (a delta's JSON) as written by `as_node`; the
    /// step's seq.
    fn update_state(
        &self,
        thread: String,
        values: Value,
        as_node: Option<String>,
    ) -> BoxFuture<'static, Result<u64, ApiError>>;
}

/// `graph`, run on `store`.
pub(crate) fn serve<S, C>(graph: CompiledGraph<S, C>, store: Store) -> impl Served
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    Graph(graph.with_store(store))
}

struct Graph<S: GraphState, C>(CompiledGraph<S, C>);

impl<S, C> Served for Graph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    fn state(
        &self,
        thread: String,
        at: Option<u64>,
    ) -> BoxFuture<'static, Result<Value, ApiError>> {
        let graph = self.0.clone();
        Box::pin(async move {
            let snapshot = match at {
                None => graph.get_state(&thread).await.map_err(ApiError::graph)?,
                Some(seq) => graph
                    .get_state_history(&thread)
                    .before(seq.saturating_add(1))
                    .limit(1)
                    .await
                    .map_err(ApiError::graph)?
                    .pop()
                    .filter(|snapshot| snapshot.seq() == seq)
                    .ok_or_else(|| {
                        ApiError::missing(format!("Checkpoint {} not found", checkpoint::id(seq)))
                    })?,
            };
            thread_state::to_json(&snapshot, &thread)
        })
    }

    fn history(
        &self,
        thread: String,
        limit: usize,
        before: Option<u64>,
        filter: Option<Value>,
    ) -> BoxFuture<'static, Result<Vec<Value>, ApiError>> {
        let graph = self.0.clone();
        Box::pin(async move {
            let mut history = graph.get_state_history(&thread).limit(limit);
            if let Some(seq) = before {
                history = history.before(seq);
            }
            if let Some(filter) = filter {
                history = history.filter(filter);
            }
            let snapshots = history.await.map_err(ApiError::graph)?;
            snapshots
                .iter()
                .map(|snapshot| thread_state::to_json(snapshot, &thread))
                .collect()
        })
    }

    fn update_state(
        &self,
        thread: String,
        values: Value,
        as_node: Option<String>,
    ) -> BoxFuture<'static, Result<u64, ApiError>> {
        let graph = self.0.clone();
        Box::pin(async move {
            let delta = <S::Delta as state_core::Delta>::from_json(values)
                .map_err(|error| ApiError::invalid_body(format!("values: {error}")))?;
            graph
                .update_state(&thread, delta, as_node.as_deref())
                .await
                .map_err(|error| match error {
                    GraphError::UnknownNode { node, .. } => {
                        ApiError::invalid_body(format!("as_node: no node \"{node}\" in this graph"))
                    }
                    other => ApiError::graph(other),
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use state_core::{AgentState, Messages, State};
    use state_graph::{END, START, StateGraph};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    struct Chat {
        #[reducer(add_messages)]
        messages: Messages,
        turns: u32,
    }

    fn graph() -> CompiledGraph<Chat> {
        let mut g = StateGraph::<Chat>::new();
        g.add_node("agent", |s: &Chat| Chat::delta().turns(s.turns + 1));
        g.add_node("tools", |s: &Chat| Chat::delta().turns(s.turns + 1));
        g.add_edge(START, "agent");
        g.add_edge("agent", "tools");
        g.add_edge("tools", END);
        g.compile().expect("compiles")
    }

    #[tokio::test]
    async fn states_history_and_edits_are_langgraphs_thread_states() {
        let store = Store::memory();
        let app = graph().with_store(store.clone());
        app.invoke_thread(
            "t",
            Chat::delta().messages(vec![state_core::Message::human("hi")]),
        )
        .await
        .expect("runs");
        let served = serve(graph(), store);

        let latest = served.state("t".into(), None).await.expect("the state");
        assert_eq!(latest["values"]["turns"], json!(2));
        assert_eq!(latest["next"], json!([]));
        assert_eq!(latest["checkpoint"]["thread_id"], json!("t"));
        let seq = checkpoint::parse(latest["checkpoint_id"].as_str().unwrap()).unwrap();
        assert_eq!(latest["metadata"]["step"], json!(seq));
        assert_eq!(
            latest["parent_checkpoint_id"],
            json!(checkpoint::id(seq - 1))
        );

        let earlier = served
            .state("t".into(), Some(seq - 1))
            .await
            .expect("a checkpoint");
        assert_eq!(earlier["values"]["turns"], json!(1));
        assert_eq!(earlier["next"], json!(["tools"]));
        assert_eq!(earlier["tasks"][0]["name"], json!("tools"));
        assert_eq!(
            earlier["tasks"][0]["path"],
            json!(["__pregel_pull", "tools"])
        );
        let missing = served.state("t".into(), Some(seq + 5)).await.unwrap_err();
        assert_eq!(missing.status(), 404);

        let history = served
            .history("t".into(), 10, None, None)
            .await
            .expect("history");
        assert_eq!(history.len() as u64, seq);
        assert_eq!(history[0], latest);
        assert_eq!(history[1], earlier);
        let older = served
            .history("t".into(), 1, Some(seq), None)
            .await
            .expect("history");
        assert_eq!(older, vec![earlier]);

        let edited = served
            .update_state(
                "t".into(),
                json!({"messages": [{"role": "user", "content": "more"}]}),
                Some("agent".into()),
            )
            .await
            .expect("an edit");
        assert_eq!(edited, seq + 1);
        let after = served.state("t".into(), None).await.expect("the state");
        assert_eq!(after["values"]["messages"][1]["content"], json!("more"));
        assert_eq!(after["values"]["messages"][1]["type"], json!("human"));
        assert_eq!(after["next"], json!(["tools"]));

        let bad = served
            .update_state("t".into(), json!({"turns": "many"}), None)
            .await
            .unwrap_err();
        assert_eq!(bad.status(), 422);
        assert!(bad.message().starts_with("values: "), "{}", bad.message());
        let unknown = served
            .update_state("t".into(), json!({}), Some("nope".into()))
            .await
            .unwrap_err();
        assert_eq!(unknown.message(), "as_node: no node \"nope\" in this graph");
        assert_eq!(
            served.state("t".into(), None).await.expect("the state"),
            after,
            "a refused edit changes nothing"
        );
    }
}
