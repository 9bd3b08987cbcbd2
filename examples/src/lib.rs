//! The seed systems' states and node logic, shared by the runnable
//! programs beside this crate (`cargo run --example NAME`, which print a
//! walk through the turns) and by the integration tests (which assert the
//! transitions). One module per system; [`agent_server`] serves them all
//! to LangGraph's clients.

// Generated items carry docs: a crate that denies missing docs compiles.
#![deny(missing_docs)]

pub mod agent_server;
pub mod agentflow;
pub mod alpha_berkeley;
pub mod gaia;
pub mod langgraph;
pub mod logged;
pub mod ohmind;
pub mod persistent_agent;
pub mod persistent_chat;
pub mod scripted;
pub mod therapy;
