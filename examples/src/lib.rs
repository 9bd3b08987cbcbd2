//! Runnable examples for `state-core`; see the `*.rs` programs beside this crate.
