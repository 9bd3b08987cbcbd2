//! Version 1 of a state, as an older program wrote it: the checked-in
//! fixture `tests/fixtures/profile_v1.db` was written with it (by
//! `cargo run -p state-store --example write_fixture_v1`).

use state_core::{AgentState, Messages};

/// The state as version 1 declared it: `user_name` (renamed `name` in v2),
/// `score` as text (a number in v2), no `level` (added in v2).
#[derive(AgentState, Debug, Clone, PartialEq)]
pub struct Profile {
    #[reducer(add_messages)]
    pub messages: Messages,
    pub user_name: String,
    pub score: String,
    #[reducer(append)]
    pub tags: Vec<String>,
    #[scope(turn)]
    pub mood: Option<String>,
}
