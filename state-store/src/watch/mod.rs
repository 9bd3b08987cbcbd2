//! [`Store::watch`](crate::Store::watch): a thread's steps as a stream, the
//! backlog first, then each step as it is committed.
//!
//! The log is the truth; notices are only hints. A watcher subscribes to
//! its thread's notices first, then reads the log from the step after the
//! last one it delivered, and waits for a notice only when it has read
//! everything: a notice sent while it reads makes it read again, so the
//! switch from backlog to live steps has no gap, and since it always reads
//! from its own position, no duplicate. A lost, late or coalesced notice
//! costs a read, never a step.
//!
//! Notices come from three places, all into one hub per store (`hub.rs`,
//! shared by its clones and its watchers):
//! - this store's own commits (every backend): `Thread::write`,
//!   `Store::delete_thread` and `Store::fork` call `Hub::announce` after
//!   the commit, which only flips a `tokio::sync::watch` flag: the writer
//!   never waits for a watcher;
//! - PostgreSQL: one `LISTEN` connection per store, started with its first
//!   watcher and stopped with its last (`postgres.rs`);
//! - SQLite: a poll of `PRAGMA data_version` per database file, every
//!   25 ms while there are watchers (`sqlite.rs`).
//!
//! The files: `hub.rs` keeps the watchers and wakes them, `stream.rs` is
//! one watcher, `sqlite.rs` and `postgres.rs` make the hubs of those
//! backends with the pumps that hear other processes. Each uses `hub.rs`;
//! none uses another.

mod hub;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod stream;

pub(crate) use hub::Hub;
#[cfg(feature = "postgres")]
pub(crate) use postgres::hub_for as postgres_hub;
#[cfg(feature = "sqlite")]
pub(crate) use sqlite::hub_for;
pub use stream::StepStream;
pub(crate) use stream::watch;
