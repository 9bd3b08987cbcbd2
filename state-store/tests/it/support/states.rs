//! The states the store tests persist: every reducer, a turn scope, a
//! fallible custom reducer and a nested group.

use state_core::{AgentState, Messages};
use std::collections::BTreeMap;

/// Refuses to spend more than is left.
pub fn spend(budget: &mut i64, cost: i64) -> Result<(), String> {
    if cost > *budget {
        return Err(format!("cost {cost} exceeds the budget left ({budget})"));
    }
    *budget -= cost;
    Ok(())
}

/// A group of fields with its own scopes.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Progress {
    #[scope(turn)]
    #[default("idle")]
    pub stage: String,
    #[reducer(append)]
    pub done: Vec<String>,
}

/// A chat state with one field per kind of reducer.
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Chat {
    #[reducer(add_messages)]
    pub messages: Messages,
    #[reducer(append)]
    pub transcript: Vec<String>,
    #[reducer(merge)]
    pub diagnostics: BTreeMap<String, f64>,
    #[scope(turn)]
    #[default("supervisor")]
    pub next: String,
    #[reducer(with = spend)]
    #[default(100)]
    pub budget: i64,
    #[reducer(merge)]
    pub progress: Progress,
    pub note: Option<String>,
}
