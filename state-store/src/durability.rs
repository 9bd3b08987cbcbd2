//! When a thread's steps are durable: before the writer goes on, or while
//! it goes on (LangGraph's `durability` of a run).

/// When a [`Thread`](crate::Thread)'s steps are durable, relative to the
/// call that writes them (LangGraph's `durability` of a run: `"sync"` or
/// `"async"`).
///
/// Either way every step is committed durably (on SQLite with
/// `synchronous = FULL`, one `fsync` a commit, shared by the writes
/// committed together), in order, and a step is applied to the handle's
/// state only once it is stored. What differs is when the call returns:
///
/// - [`Sync`](Durability::Sync) (the default): once the step is durable.
/// - [`Async`](Durability::Async): once the step is written in the store's
///   open transaction, before its commit; the writer goes on (a graph run:
///   its next superstep) while the commit is made, and
///   [`Thread::sync`](crate::Thread::sync) waits for it. A commit that fails
///   fails the next write or `sync` with its error (a step written on top
///   of the lost one is refused: it is not on the thread's head), and the
///   handle reloads the thread before its next step. After a crash the
///   thread is what its durable
///   steps make: the last steps written may be missing, never a step in
///   the middle. Until they are durable, other readers (a load, the
///   history, another process) do not see them.
///
/// Only a store on a SQLite file commits this way; on PostgreSQL and in
/// memory every step is durable when its write returns, whatever this
/// says.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use state_core::{AgentState, State};
/// use state_store::{Durability, Store};
///
/// #[derive(AgentState, Debug, Clone, PartialEq)]
/// struct S {
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// let dir = tempfile::tempdir().unwrap();
/// let store = Store::sqlite(dir.path().join("t.db")).await?;
/// let mut t = store.thread::<S>("t").await?;
/// t.set_durability(Durability::Async);
/// t.apply(S::delta().log(vec!["one".into()])).await?;
/// t.apply(S::delta().log(vec!["two".into()])).await?;
/// t.sync().await?; // both durable
/// assert_eq!(store.thread::<S>("t").await?.state().log, ["one", "two"]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// A step's write returns once the step is durable.
    #[default]
    Sync,
    /// A step's write returns once the step is written, before it is
    /// durable; [`Thread::sync`](crate::Thread::sync) waits for it.
    Async,
}
