//! The v3 thread protocol (`client.threads.stream`): LangGraph's Python
//! client drives `tests/sdk/v3_stream.py` (checked against LangGraph's own
//! server) against our server on each backend.

use crate::agent_sdk::{Chat, run_script, server, sqlite_store};
use crate::support::serve;
use state_store::Store;

#[tokio::test]
async fn v3_stream() {
    let addr = serve(server(Store::memory()).router::<Chat>()).await;
    run_script("v3_stream.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn v3_stream_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("v3_stream.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn v3_stream_on_postgres() {
    let db = crate::support::postgres::shared().fresh_database("sdk_v3_stream");
    let store = Store::postgres(&db.url).await.expect("a PostgreSQL store");
    let addr = serve(server(store).router::<Chat>()).await;
    run_script("v3_stream.py", &format!("http://{addr}")).await;
}

/// [`server`]'s graphs, a model that streams its tokens (`chat`), a
/// graph with a subgraph (`nested`), and one whose subgraph pauses
/// (`nested_hitl`).
fn with_channels(store: Store) -> state_server::Server {
    use crate::agent_sdk::Review;
    use state_agent::{FakeChatModel, react_agent};
    use state_core::{Message, State};
    use state_graph::{END, START, StateGraph};
    let model = FakeChatModel::new([Message::ai("Hello from a streaming model!")]).chunk_size(3);
    let chat = react_agent(model, [])
        .compile()
        .expect("the agent compiles");
    let mut child = StateGraph::<Review>::new();
    child.add_node("inner", |_: &Review| {
        Review::delta().answer("inside".to_owned())
    });
    child.add_edge(START, "inner");
    child.add_edge("inner", END);
    let mut nested = StateGraph::<Review>::new();
    nested.add_subgraph("child", child.compile().expect("the child compiles"));
    nested.add_edge(START, "child");
    nested.add_edge("child", END);
    // An interrupt inside a subgraph.
    let mut asking = StateGraph::<Review>::new();
    asking.add_node("ask", |_: &Review, ctx: &state_graph::Ctx| {
        let answer = ctx.interrupt(serde_json::json!({"question": "Who asks?"}))?;
        let name = answer.as_str().unwrap_or_default().to_owned();
        Ok::<_, state_graph::NodeError>(Review::delta().answer(name))
    });
    asking.add_edge(START, "ask");
    asking.add_edge("ask", END);
    let mut nested_hitl = StateGraph::<Review>::new();
    nested_hitl.add_subgraph("asking", asking.compile().expect("asking compiles"));
    nested_hitl.add_edge(START, "asking");
    nested_hitl.add_edge("asking", END);
    server(store)
        .assistant("chat", chat)
        .assistant("nested", nested.compile().expect("nested compiles"))
        .assistant(
            "nested_hitl",
            nested_hitl.compile().expect("nested_hitl compiles"),
        )
}

#[tokio::test]
async fn channels() {
    let addr = serve(with_channels(Store::memory()).router::<Chat>()).await;
    run_script("v3_channels.py", &format!("http://{addr}")).await;
}

#[tokio::test]
async fn channels_on_sqlite() {
    let (store, _dir) = sqlite_store().await;
    let addr = serve(with_channels(store).router::<Chat>()).await;
    run_script("v3_channels.py", &format!("http://{addr}")).await;
}
