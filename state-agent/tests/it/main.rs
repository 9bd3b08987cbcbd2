//! state-agent's integration tests, in one binary (`cargo test -p
//! state-agent --test it`).

mod message_utils;
mod tokens;
