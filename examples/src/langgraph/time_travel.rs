//! LangGraph's "How to view and update past graph state" (time travel): a
//! tool-calling agent plays a song; its thread's history is browsed
//! (`get_state_history`), a past step is replayed (the run goes on from
//! it again), and branches are taken off it (the same step with another
//! tool call, or with no call at all). The Python original heads
//! `examples/langgraph/time_travel.rs`; [`build_graph`] is its `workflow`.
//!
//! LangGraph's calls and ours:
//! - `app.get_state_history(config)`, newest first:
//!   `app.get_state_history(thread).await?`, newest first; `all_states[2]`
//!   is the same snapshot in both (the step after the model's tool call).
//! - A snapshot's `config` (the thread and its `checkpoint_id`) is the
//!   thread and the snapshot's [`seq`](state_graph::Snapshot::seq).
//! - Replay, `app.stream(None, to_replay.config)`: [`replay`], a fork of
//!   the thread at that step (`store.fork`) and `app.continue_thread` on
//!   the fork.
//! - Branch, `app.update_state(to_replay.config, {"messages": [..]})` then
//!   `app.stream(None, branch_config)`: [`branch`], the fork, then
//!   `app.update_state(fork, delta, None)` (as the step's node, the model,
//!   as LangGraph picks it), then `continue_thread`.
//!
//! Where the port differs:
//! - LangGraph appends a replay or a branch to the same thread, the
//!   checkpoint it starts from as its parent, and the thread's latest
//!   state is then the branch's. A fork of ours is a thread of its own,
//!   named by the caller: the original thread is untouched, its history
//!   and its head as they were, and each branch is read under its own id.
//! - `should_continue` returns `"continue"` or `"end"`, which a map in
//!   `add_conditional_edges` turns into `"action"` or `END`; our routers
//!   return the node, so it returns `"action"` or `END`.
//! - The model is canned ([`call_model`]): asked to play a song it calls
//!   `play_song_on_apple` for "Anti-Hero" (one call at a time, as
//!   `parallel_tool_calls=False`), and it reports what the tool says. Its
//!   messages get ids from the conversation's length, and the tools'
//!   answers from the call they answer, so replays repeat (LangGraph draws
//!   random ones).
//! - `ToolNode(tools)` is LangGraph's prebuilt; [`tool_node`] is its loop
//!   over the last message's tool calls.

use serde_json::json;
use state_core::{Message, MessageKind, MessagesState, MessagesStateDelta, State, ToolCall};
use state_graph::{CompiledGraph, END, GraphError, Outcome, START, StateGraph};
use state_store::Store;

/// Play a song on Spotify (a tool).
pub fn play_song_on_spotify(song: &str) -> String {
    format!("Successfully played {song} on Spotify!")
}

/// Play a song on Apple Music (a tool).
pub fn play_song_on_apple(song: &str) -> String {
    format!("Successfully played {song} on Apple Music!")
}

/// A tool: what it returns for the song asked.
pub type Tool = fn(&str) -> String;

/// The tools, by name (`tools = [play_song_on_apple, play_song_on_spotify]`).
pub const TOOLS: [(&str, Tool); 2] = [
    ("play_song_on_apple", play_song_on_apple),
    ("play_song_on_spotify", play_song_on_spotify),
];

/// The song the canned model picks.
pub const SONG: &str = "Anti-Hero";

/// The model with the tools bound, canned (`model.invoke(messages)`): a
/// request to play something gets a `play_song_on_apple` call for
/// [`SONG`]; a tool's answer gets a report of it; anything else a reply
/// that it can only play music.
pub fn call_model(messages: &[Message]) -> Message {
    let n = messages.len();
    let reply = match messages.last() {
        Some(last) if last.kind() == MessageKind::Tool => {
            let said = last.text();
            let service = said.rsplit(" on ").next().unwrap_or("your player");
            let service = service.trim_end_matches('!');
            Message::ai(format!(
                "I've started playing \"{SONG}\" by Taylor Swift on {service}. Enjoy!"
            ))
        }
        Some(last) if last.text().to_lowercase().contains("play") => Message::ai("")
            .with_tool_calls([ToolCall::new("play_song_on_apple", json!({"song": SONG}))
                .with_id(format!("call_{n}"))]),
        _ => Message::ai("I can play songs for you on Spotify or Apple Music."),
    };
    reply.with_id(format!("ai-{n}"))
}

/// The function that calls the model (node `agent`).
pub fn call_agent(state: &MessagesState) -> MessagesStateDelta {
    let response = call_model(state.messages.as_slice());
    // A list, because this will get added to the existing list.
    MessagesState::delta().messages(vec![response])
}

/// `ToolNode(tools)` (node `action`): runs each tool call of the last
/// message; a tool that does not exist answers with an error the model
/// can read, as LangGraph's does.
pub fn tool_node(state: &MessagesState) -> MessagesStateDelta {
    let calls = state.messages.last().map_or(&[][..], Message::tool_calls);
    let results: Vec<Message> = calls
        .iter()
        .map(|call| {
            let song = call.args["song"].as_str().unwrap_or_default();
            let out = match TOOLS.iter().find(|(name, _)| *name == call.name) {
                Some((_, tool)) => tool(song),
                None => format!(
                    "Error: {} is not a valid tool, try one of the tools.",
                    call.name
                ),
            };
            let id = format!("tool-{}", call.id.as_deref().unwrap_or_default());
            Message::tool_result(call, out).with_id(id)
        })
        .collect();
    MessagesState::delta().messages(results)
}

/// Whether to continue (`should_continue`): no tool call, the run ends;
/// otherwise the tools run.
pub fn should_continue(state: &MessagesState) -> &'static str {
    match state.messages.last() {
        Some(last) if !last.tool_calls().is_empty() => "action",
        _ => END,
    }
}

/// The how-to's graph (Python: `workflow`, compiled with
/// `checkpointer=memory`), its threads in `store`:
///
/// ```text
/// START -> agent -?-> action | END
/// action -> agent
/// ```
pub fn build_graph(store: Store) -> Result<CompiledGraph<MessagesState>, GraphError> {
    let mut workflow = StateGraph::<MessagesState>::new();
    // The two nodes we cycle between.
    workflow.add_node("agent", call_agent);
    workflow.add_node("action", tool_node);
    workflow.add_edge(START, "agent");
    workflow.add_conditional_edges("agent", should_continue, ["action", END]);
    workflow.add_edge("action", "agent");
    Ok(workflow.compile()?.with_store(store))
}

/// The graph's store: a fork is made there.
fn store_of(app: &CompiledGraph<MessagesState>) -> Result<&Store, GraphError> {
    app.store().ok_or(GraphError::NoStore { method: "fork" })
}

/// Replays `thread` from step `seq` (Python: `app.stream(None,
/// to_replay.config)`): a fork of the thread at that step, named `to`, on
/// which the run goes on from there. The original thread is untouched.
///
/// # Errors
///
/// When `to` exists, `seq` is not a step of `thread`, or the run fails.
pub async fn replay(
    app: &CompiledGraph<MessagesState>,
    thread: &str,
    seq: u64,
    to: &str,
) -> Result<Outcome<MessagesState>, GraphError> {
    store_of(app)?
        .fork::<MessagesState>(thread, seq, to)
        .await?;
    app.continue_thread(to).await
}

/// Branches off `thread` at step `seq` with `update` (Python:
/// `branch_config = app.update_state(to_replay.config, update)`): a fork
/// named `to`, edited as the step's node would have written `update`.
/// Returns the edit's step; `app.continue_thread(to)` runs the branch on.
///
/// # Errors
///
/// When `to` exists, `seq` is not a step of `thread`, or the reducers
/// refuse `update`.
pub async fn branch(
    app: &CompiledGraph<MessagesState>,
    thread: &str,
    seq: u64,
    to: &str,
    update: MessagesStateDelta,
) -> Result<u64, GraphError> {
    store_of(app)?
        .fork::<MessagesState>(thread, seq, to)
        .await?;
    app.update_state(to, update, None).await
}

/// The how-to's first branch: `last_message` with its tool call renamed to
/// `tool` (`last_message.tool_calls[0]["name"] = "play_song_on_spotify"`),
/// same id, same arguments.
pub fn with_tool(last_message: &Message, tool: &str) -> Message {
    let calls: Vec<ToolCall> = last_message
        .tool_calls()
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let mut call = call.clone();
            if i == 0 {
                call.name = tool.to_owned();
            }
            call
        })
        .collect();
    last_message.clone().with_tool_calls(calls)
}

/// The request the how-to makes.
pub const REQUEST: &str = "Can you play Taylor Swift's most popular song?";

/// The how-to's second branch's reply, instead of any tool call.
pub const QUIET_HOURS: &str = "It's quiet hours so I can't play any music right now!";
