// A tool cannot change the state: `&mut` is refused at the parameter.
use state_agent::tool;
use state_core::MessagesState;

/// Clears the conversation.
#[tool]
fn clear(state: &mut MessagesState) -> String {
    let _ = state;
    "cleared".into()
}

fn main() {}
