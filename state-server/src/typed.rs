//! What the typed router knows that the untyped one does not: the state
//! type, as a table of plain functions (no generic handler per page), so
//! the inspector can rebuild a state, fork a thread and name each field's
//! reducer.

use crate::error::ApiError;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use state_core::{Schema, State};
use state_store::Store;

/// A store operation's answer, later.
type Answer<T> = BoxFuture<'static, Result<T, ApiError>>;

/// The state type's operations, for the inspector.
#[derive(Clone, Copy)]
pub(crate) struct Typed {
    /// The state's fields and their reducers.
    pub schema: &'static Schema,
    /// The state of thread `.1` right after step `.2` (0: before any
    /// step, the default state), as JSON.
    pub state: fn(Store, String, u64) -> Answer<Value>,
    /// Forks thread `.1` after step `.2` into a new thread `.3`.
    pub fork: fn(Store, String, u64, String) -> Answer<()>,
}

impl Typed {
    /// The table for state `S`.
    pub(crate) fn of<S>() -> Typed
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        Typed {
            schema: S::schema(),
            state: |store, id, seq| Box::pin(state_json::<S>(store, id, seq)),
            fork: |store, from, seq, to| {
                Box::pin(async move {
                    store.fork::<S>(&from, seq, &to).await?;
                    Ok(())
                })
            },
        }
    }
}

async fn state_json<S>(store: Store, id: String, seq: u64) -> Result<Value, ApiError>
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    let state = if seq == 0 {
        // Checked to exist, as a later step would be.
        store.thread_info(&id).await?;
        S::default()
    } else {
        store.state_at::<S>(&id, seq).await?
    };
    state
        .to_json()
        .map_err(|error| ApiError::encode(&id, seq, &error))
}
