// A JSON array for a `Vec<Value>` field is not silently one item: the
// setter takes the list (`vec![..]`), and `push_items` one item.
use serde_json::{json, Value};
use state_core::{AgentState, State};

#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Research {
    #[reducer(append)]
    pub items: Vec<Value>,
}

fn main() {
    let _ = Research::delta().items(json!([1, 2, 3]));
}
