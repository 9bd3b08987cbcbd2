//! A thread's state as the Agent Server answers it (LangGraph's
//! `ThreadState`: `GET /threads/{id}/state`, each entry of the history):
//! the values, what runs next as `next` and `tasks`, the pending
//! interrupts, the step's metadata and its checkpoint ids.

use super::checkpoint;
use crate::error::ApiError;
use crate::json::rfc3339_micros;
use serde_json::{Map, Value, json};
use state_core::State;
use state_graph::{Interrupt, Snapshot, SubgraphSnapshot};
use uuid::Uuid;

/// The namespace of task ids: a task's id is `uuid5` of
/// `<thread>:<seq>:<node>`, the same on every read.
const TASKS: Uuid = Uuid::from_u128(0x1f0e6a5c_6d2e_5b4c_9a61_7e5f0c3d2b10);

/// `snapshot` of `thread` as a `ThreadState`. A task's `result` is not
/// kept (LangGraph shows the writes of a finished task there): `null`.
pub(crate) fn to_json<S: State>(snapshot: &Snapshot<S>, thread: &str) -> Result<Value, ApiError> {
    let seq = snapshot.seq();
    let values = snapshot
        .state()
        .to_json()
        .map_err(|error| ApiError::encode(thread, seq, &error))?;
    let tasks: Vec<Value> = snapshot
        .next()
        .iter()
        .map(|node| {
            task(
                thread,
                seq,
                node,
                snapshot.interrupts(),
                snapshot.subgraphs(),
            )
        })
        .collect();
    let mut metadata: Map<String, Value> = snapshot.metadata().clone();
    metadata.entry("step").or_insert(json!(seq));
    metadata.entry("thread_id").or_insert(json!(thread));
    metadata.entry("parents").or_insert(json!({}));
    let parent = snapshot.parent().map(checkpoint::id);
    Ok(json!({
        "values": values,
        "next": snapshot.next(),
        "tasks": tasks,
        "metadata": metadata,
        "created_at": snapshot.created_at().map(rfc3339_micros),
        "checkpoint": checkpoint_json(thread, Some(checkpoint::id(seq))),
        "parent_checkpoint": parent.clone().map(|id| checkpoint_json(thread, Some(id))),
        "interrupts": interrupts(snapshot.interrupts().iter()),
        "checkpoint_id": checkpoint::id(seq),
        "parent_checkpoint_id": parent,
    }))
}

/// `{checkpoint_id, thread_id, checkpoint_ns}`.
pub(crate) fn checkpoint_json(thread: &str, id: Option<String>) -> Value {
    json!({"checkpoint_id": id, "thread_id": thread, "checkpoint_ns": ""})
}

/// Interrupts as LangGraph lists them: `{id, value}`.
fn interrupts<'a>(list: impl Iterator<Item = &'a Interrupt>) -> Vec<Value> {
    list.map(|i| json!({"id": i.id, "value": i.value}))
        .collect()
}

/// The task of `node`, next after step `seq`: its interrupts, and the
/// checkpoint of the subgraph paused inside it, if one is.
fn task(
    thread: &str,
    seq: u64,
    node: &str,
    pending: &[Interrupt],
    subgraphs: &[SubgraphSnapshot],
) -> Value {
    let id = Uuid::new_v5(&TASKS, format!("{thread}:{seq}:{node}").as_bytes());
    let inside = subgraphs.iter().find(|s| s.node == node);
    json!({
        "id": id.to_string(),
        "name": node,
        "path": ["__pregel_pull", node],
        "error": null,
        "interrupts": interrupts(pending.iter().filter(|i| i.node == node)),
        "checkpoint": inside.map(|s| json!({
            "thread_id": thread,
            "checkpoint_ns": s.namespace.join("|"),
            "checkpoint_id": null,
        })),
        "state": null,
        "result": null,
    })
}
