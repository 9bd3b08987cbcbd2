//! state-graph's integration tests, in one binary: a binary per file
//! linked the whole dependency graph each time, most of the suite's build
//! time and disk. A test is named `module::test`
//! (`cargo test -p state-graph --test it faults::`).

mod support;

mod agent_conformance;
mod agents;
mod compile_checks;
mod conformance;
mod faults;
mod streaming;
mod supersteps;
mod threads;
