// `Default` in the same derive list as `AgentState` is invisible to the macro
// (rustc removes it from the item before expanding); rustc itself reports
// the two conflicting impls. A separate `#[derive(Default)]` gets our error.
use state_core::AgentState;

#[derive(Default, AgentState)]
pub struct S {
    pub next: String,
}

fn main() {}
