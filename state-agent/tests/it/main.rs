//! state-agent's integration tests, in one binary (`cargo test -p
//! state-agent --test it`).

mod anthropic;
mod anthropic_server;
mod anthropic_vectors;
mod tokens;
