//! Helpers shared by the state-graph integration tests: the state-store
//! suite's real backends (memory, a SQLite file, a PostgreSQL server the
//! tests start), reused as they are.
#![allow(dead_code)]

#[path = "../../../state-store/tests/support/backends.rs"]
pub mod backends;
#[path = "../../../state-store/tests/support/postgres.rs"]
pub mod postgres;
