//! state-store's integration tests, in one binary: a binary per file
//! linked the whole dependency graph each time, most of the suite's build
//! time and disk. A test is named `module::test`
//! (`cargo test -p state-store --test it watch::`).

mod support;

mod assistants;
mod concurrency;
mod corrupt;
mod crash;
mod crons;
mod durability;
mod items;
mod postgres_faults;
mod rewind;
mod runs;
mod schema_evolution;
mod threads;
mod watch;
