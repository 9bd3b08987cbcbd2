//! The examples' integration tests, in one binary: a binary per file
//! linked the whole dependency graph each time, most of the suite's build
//! time and disk. A test is named `module::test`
//! (`cargo test -p state-examples --test it graph_gaia::`).

mod agent_server;
mod anthropic_server;
mod common;
#[macro_use]
mod stores;

mod graph_agentflow;
mod graph_alpha_berkeley;
mod graph_gaia;
mod graph_ohmind;
mod graph_therapy;
mod langgraph_customer_support;
mod langgraph_map_reduce;
mod langgraph_plan_and_execute;
mod langgraph_react_agent;
mod langgraph_review_tool_calls;
mod langgraph_subgraph_interrupt;
mod langgraph_summary_bot;
mod langgraph_supervisor;
mod langgraph_time_travel;
mod openai_server;
mod persistent_agent;
mod persistent_chat;
