//! state-agent's integration tests, in one binary (`cargo test -p
//! state-agent --test it`).

mod anthropic;
mod anthropic_server;
mod anthropic_vectors;
mod message_utils;
mod openai;
mod openai_vectors;
mod react;
mod schemas;
mod scripted;
mod server;
mod tokens;
mod tools;
