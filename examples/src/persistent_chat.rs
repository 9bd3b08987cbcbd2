//! A chat whose thread outlives the process: each run opens the thread in
//! a SQLite file, starts a turn, adds the user's message and a reply, and
//! leaves. The next run continues where the last one stopped.

use state_core::{AgentState, Message, Messages, State};
use state_store::{Store, StoreError};
use std::path::Path;

/// The state of the chat thread.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct ChatState {
    /// Conversation history, kept across runs.
    #[reducer(add_messages)]
    pub messages: Messages,
    /// How many runs have talked on this thread.
    #[reducer(with = count)]
    pub runs: u64,
    /// Where the graph routes next; back to "agent" at every turn.
    #[scope(turn)]
    #[default("agent")]
    pub next: String,
}

/// Adds runs.
fn count(total: &mut u64, more: u64) {
    *total += more;
}

/// What one run did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The thread's last step before this run (0: a new thread).
    pub resumed_at: u64,
    /// Its last step after this run.
    pub seq: u64,
    /// Which run this was on the thread (1 for the first).
    pub run: u64,
    /// The history after this run.
    pub messages: Vec<String>,
}

/// The thread every run continues.
pub const THREAD: &str = "demo";

/// One run: open the thread in the file at `path`, start a turn, talk once.
pub async fn run_once(path: &Path, user_says: &str) -> Result<RunSummary, StoreError> {
    let store = Store::sqlite(path).await?;
    let mut thread = store.thread::<ChatState>(THREAD).await?;
    let resumed_at = thread.seq();

    thread.begin_turn().await?;
    thread
        .apply(
            ChatState::delta()
                .messages(vec![Message::human(user_says)])
                .runs(1),
        )
        .await?;
    // The "agent" node: a canned reply that knows how long we have talked.
    let reply = format!(
        "This is run {} of our chat; I remember {} earlier messages.",
        thread.state().runs,
        thread.state().messages.len() - 1
    );
    thread
        .with_metadata(serde_json::json!({"node": "agent"}))
        .apply(
            ChatState::delta()
                .messages(vec![Message::ai(reply)])
                .next("end"),
        )
        .await?;

    let state = thread.state();
    Ok(RunSummary {
        resumed_at,
        seq: thread.seq(),
        run: state.runs,
        messages: state.messages.iter().map(|m| m.text()).collect(),
    })
}
