//! What the typed router knows that the untyped one does not: the state
//! type, as a table of plain functions (no generic handler per page), so
//! the inspector can rebuild a state and name each field's reducer.

use crate::error::ApiError;
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;
use state_core::{Schema, State};
use state_store::Store;

/// The state type's operations, for the inspector.
#[derive(Clone, Copy)]
pub(crate) struct Typed {
    /// The state's fields and their reducers.
    pub schema: &'static Schema,
    /// The states of thread `.1` right after steps `.2` and `.3` (0:
    /// before any step, the default state), as JSON, each or why not.
    pub states: fn(Store, String, u64, u64) -> BoxFuture<'static, Pair>,
}

/// A state as JSON, or why it could not be rebuilt.
pub(crate) type Rebuilt = Result<Value, ApiError>;

/// Two states, in the order asked for.
pub(crate) type Pair = (Rebuilt, Rebuilt);

/// How far apart two steps may be for the later state to be replayed
/// from the earlier one rather than rebuilt from its own snapshot.
const REPLAY_GAP: u64 = 64;

impl Typed {
    /// The table for state `S`.
    pub(crate) fn of<S>() -> Typed
    where
        S: State + Serialize + Send + 'static,
        S::Delta: Serialize + Send,
    {
        Typed {
            schema: S::schema(),
            states: |store, id, first, second| Box::pin(states::<S>(store, id, first, second)),
        }
    }
}

/// The states after `first` and `second`. When `second` follows `first`
/// closely (the usual "what did this step change"), one rebuild: the
/// state after `first`, then the steps up to `second` replayed onto it, as
/// loading does; otherwise each from its own snapshot.
async fn states<S>(store: Store, id: String, first: u64, second: u64) -> Pair
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    if first < second && second - first <= REPLAY_GAP {
        let mut state = match state_at::<S>(&store, &id, first).await {
            Ok(state) => state,
            Err(error) => {
                let second = state_json::<S>(&store, &id, second).await;
                return (Err(error), second);
            }
        };
        let before = to_json(&state, &id, first);
        let replayed = match store.history(&id, first + 1..=second).await {
            Ok(steps) if steps.len() as u64 == second - first => steps
                .iter()
                .try_for_each(|step| step.replay_onto(&id, &mut state))
                .is_ok(),
            _ => false,
        };
        let after = if replayed {
            to_json(&state, &id, second)
        } else {
            // Compacted, refused: the store rebuilds it, and has the last
            // word on an error.
            state_json::<S>(&store, &id, second).await
        };
        return (before, after);
    }
    futures::join!(
        state_json::<S>(&store, &id, first),
        state_json::<S>(&store, &id, second)
    )
}

async fn state_at<S>(store: &Store, id: &str, seq: u64) -> Result<S, ApiError>
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    if seq == 0 {
        // Checked to exist, as a later step would be.
        store.thread_info(id).await?;
        Ok(S::default())
    } else {
        Ok(store.state_at::<S>(id, seq).await?)
    }
}

/// The state after step `seq` (0: the default state of an existing
/// thread) as JSON: `GET /threads/{id}/state` and the inspector's panel.
pub(crate) async fn state_json<S>(store: &Store, id: &str, seq: u64) -> Rebuilt
where
    S: State + Serialize + Send + 'static,
    S::Delta: Serialize + Send,
{
    to_json(&state_at::<S>(store, id, seq).await?, id, seq)
}

fn to_json<S: State>(state: &S, id: &str, seq: u64) -> Rebuilt {
    state
        .to_json()
        .map_err(|error| ApiError::encode(id, seq, &error))
}
