//! GAIA's long-term memory in the store its graph compiles with
//! (`builder.compile(checkpointer=checkpointer, store=store)`, LangGraph's
//! `BaseStore`): each user's memories are items under
//! `["memories", user_id]`, shared by every thread of that user and by no
//! other user. GAIA keeps them in Mem0; its calls map to the store's:
//!
//! | GAIA (Mem0) | here (the store's items) |
//! |---|---|
//! | `memory_service.search_memories(query=.., user_id=.., limit=5)` | [`search_memories`]: `store.search_items(&["memories", user]).query(q).limit(5)` |
//! | `store_user_message_memory(user_id, message, conversation_id)` | [`store_user_message_memory`]: `store.put_item(&["memories", user], key, {"text", "conversation_id"})` |
//!
//! The search ranks by meaning with the store's index
//! ([`embedding::index`]), and keeps what shares something with the query
//! (a score above 0), as Mem0 returns relevant memories only. A memory's
//! key is a hash of its text, so saying the same thing twice keeps one
//! memory (the put replaces it and keeps its `created_at`), as Mem0
//! updates a memory it already has instead of adding it again.
//!
//! The user is the run's, `config["configurable"]["user_id"]`
//! (`ctx.context()` in the graph's nodes): a thread's memories cannot be
//! read by a run for another user. A user id must be a valid namespace
//! label (no `.`); an empty one has no memories, and nothing is stored
//! for it, as GAIA stores nothing without a user.

use super::embedding::{self, TEXT, fnv1a};
use super::{GaiaState, GaiaStateDelta, MEMORY_LIMIT, RunnableConfig};
use serde_json::json;
use state_core::{Message, State};
use state_store::{Store, StoreError};

/// The first label of every memory's namespace.
pub const NAMESPACE: &str = "memories";

/// The namespace of `user_id`'s memories: `["memories", user_id]`.
pub fn namespace(user_id: &str) -> [&str; 2] {
    [NAMESPACE, user_id]
}

/// The key of a memory: its text's hash, in hex.
pub fn key(text: &str) -> String {
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// `user_id`'s memories relevant to `query`, most relevant first (ties:
/// the newest first), at most `limit` (`memory_service.search_memories`).
/// The store needs the index ([`embedding::index`]).
///
/// # Errors
///
/// The store's: a store without an index, a user id that is not a
/// namespace label, a backend failure.
pub async fn search_memories(
    store: &Store,
    user_id: &str,
    query: &str,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    if user_id.is_empty() {
        return Ok(Vec::new());
    }
    let found = store
        .search_items(&namespace(user_id))
        .query(query)
        .limit(limit)
        .await?;
    Ok(found
        .into_iter()
        .filter(|hit| hit.score.is_some_and(|score| score > 0.0))
        .filter_map(|hit| Some(hit.value.get(TEXT)?.as_str()?.to_owned()))
        .collect())
}

/// Remembers `message` for `user_id`, from `conversation_id`
/// (`store_user_message_memory`): one item, embedded by the store's index.
/// Nothing is stored without a user or a message.
///
/// # Errors
///
/// The store's: a user id that is not a namespace label, a failed
/// embedding, a backend failure.
pub async fn store_user_message_memory(
    store: &Store,
    user_id: &str,
    message: &str,
    conversation_id: &str,
) -> Result<(), StoreError> {
    if user_id.is_empty() || message.is_empty() {
        return Ok(());
    }
    let value = json!({TEXT: message, "conversation_id": conversation_id});
    store
        .put_item(&namespace(user_id), &key(message), value)
        .await?;
    Ok(())
}

/// The node that searches the memories (the document's `my_node`):
/// `user_id`'s memories for the query, in `memories`, and a system message
/// saying how many it found, its id `id`.
///
/// # Errors
///
/// As [`search_memories`].
pub async fn memory_retrieval(
    store: &Store,
    state: &GaiaState,
    config: &RunnableConfig,
    id: String,
) -> Result<GaiaStateDelta, StoreError> {
    let user_id = &config.configurable.user_id;
    let memories = search_memories(store, user_id, &state.query, MEMORY_LIMIT).await?;
    let note = format!("Found {} relevant memories", memories.len());
    Ok(GaiaState::delta()
        .messages(vec![Message::system(note).with_id(id)])
        .memories(memories))
}

/// The node that stores the user's message and raises the turn's flag (a
/// background task in GAIA, a node here so that the run is deterministic).
///
/// # Errors
///
/// As [`store_user_message_memory`].
pub async fn store_memory(
    store: &Store,
    state: &GaiaState,
    config: &RunnableConfig,
) -> Result<GaiaStateDelta, StoreError> {
    let conversation = state.conversation_id.as_deref().unwrap_or_default();
    store_user_message_memory(
        store,
        &config.configurable.user_id,
        &state.query,
        conversation,
    )
    .await?;
    Ok(GaiaState::delta().memories_stored(true))
}

/// A store for GAIA's graph: `store`, indexing memories for search by
/// meaning ([`embedding::index`]), as GAIA's store is created with its
/// `index=`.
pub fn indexed(store: Store) -> Store {
    store.with_index(embedding::index())
}
