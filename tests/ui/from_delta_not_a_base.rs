// A delta converts into the delta of a state that flattens its state, and
// into no other.
use state_core::{AgentState, MessagesState, State};

#[derive(AgentState)]
pub struct Notes {
    pub text: String,
}

#[derive(AgentState)]
pub struct Chat {
    #[state(flatten)]
    pub base: MessagesState,
    pub topic: String,
}

fn main() {
    let _ok: ChatDelta = MessagesState::delta().into();
    let _wrong: ChatDelta = Notes::delta().text("x").into();
}
