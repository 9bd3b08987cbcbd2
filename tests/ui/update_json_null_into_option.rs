// A JSON value for an `Option<Value>` field is not silently `Some`: a
// `null` could mean either; write `Some(..)` or `None`.
use serde_json::{json, Value};
use state_core::{AgentState, State};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Research {
    pub note: Option<Value>,
}

fn main() {
    let _ = Research::delta().note(json!(null));
}
