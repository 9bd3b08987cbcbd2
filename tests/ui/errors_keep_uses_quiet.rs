// A macro error comes with stub impls: code using the state, its delta and
// the setters reports nothing more.
use state_core::{AgentState, Delta, State};

#[derive(AgentState, Debug)]
pub struct S {
    #[reducer(apend)]
    pub items: Vec<String>,
    #[default("start")]
    pub next: String,
    #[reducer(merge)]
    pub meta: std::collections::BTreeMap<String, i64>,
}

fn main() {
    let mut state = S::default();
    let delta = S::delta()
        .items(vec!["a".to_string()])
        .next("tools")
        .overwrite_meta(std::collections::BTreeMap::new());
    assert!(!delta.is_empty());
    state.apply(delta).unwrap();
    state.apply_all([S::delta(), S::delta()]).unwrap();
    state.begin_turn();
    let _ = state.get("next");
    let _ = state.to_json().unwrap();
    let _ = S::from_json(serde_json::json!({})).unwrap();
    let _ = state.field_ref::<String>("next");
    let _ = serde_json::to_string(&state);
    let _: Option<SDelta> = serde_json::from_str("{}").ok();
}
