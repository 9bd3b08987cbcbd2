//! state-agent's integration tests, in one binary (`cargo test -p
//! state-agent --test it`).

mod react;
mod schemas;
mod tokens;
mod tools;
