//! The seed systems' states and node logic, shared by the runnable
//! programs beside this crate (`cargo run --example NAME`, which print a
//! walk through the turns) and by the integration tests (which assert the
//! transitions). One module per system.

pub mod agentflow;
pub mod alpha_berkeley;
pub mod gaia;
pub mod ohmind;
pub mod therapy;
