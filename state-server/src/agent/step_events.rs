//! The stream modes made from a run's steps rather than sent by the
//! runner as they are: `checkpoints` (the thread's state after each step,
//! as a checkpoint), `tasks` (each node's start and result), `debug`
//! (both, wrapped as LangGraph's debug events) and the legacy `messages`
//! (`messages/metadata`, `messages/partial` for a model's tokens,
//! `messages/complete` for a finished message).
//!
//! A checkpoint is read back from the store: a `values` event follows
//! the step it shows (the input's, or a superstep's), which is the next
//! such step in the thread's log after the last one shown (subgraph, pause
//! and branch steps skipped), so its id is the one `get_state` and the history
//! give. A task's id is the one the previous checkpoint's `tasks` gave
//! it; its input is that checkpoint's values (LangGraph sends the
//! state the node read); its triggers are `branch:to:<node>`.
//!
//! The `events` mode (`run_events.rs`) is made here too: its tasks start
//! from the checkpoints read here.

use super::run_events::{RunContext, RunEvents, find_message};
use super::served::{RunRequest, Served, Streamed};
use super::step_runs;
use crate::error::ApiError;
use crate::json::rfc3339_micros;
use serde_json::{Map, Value, json};
use state_core::{Message, State};
use state_graph::{Event, Interrupt};
use state_store::{StepKind, Store, StoreError};
use std::collections::{HashMap, HashSet};
use std::time::SystemTime;

/// Which of these modes a run asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub tasks: bool,
    pub checkpoints: bool,
    pub debug: bool,
    pub messages: bool,
    pub events: bool,
}

impl Wanted {
    /// The modes of `modes` made here.
    pub(crate) fn of(modes: &[String]) -> Wanted {
        let has = |name: &str| modes.iter().any(|m| m == name);
        Wanted {
            tasks: has("tasks"),
            checkpoints: has("checkpoints"),
            debug: has("debug"),
            messages: has("messages"),
            events: has("events"),
        }
    }

    /// Whether any needs the steps (and so the runner's `values` and
    /// `updates`).
    pub(crate) fn steps(self) -> bool {
        self.tasks || self.checkpoints || self.debug || self.events
    }
}

/// One run's making of these modes.
pub(crate) struct StepEvents {
    wanted: Wanted,
    store: Store,
    served: Box<dyn Served>,
    thread: String,
    /// The last step shown as a checkpoint (the thread's head at the
    /// start).
    cursor: u64,
    /// The last checkpoint shown (`ThreadState`), for its tasks.
    previous: Option<Value>,
    /// This step's writes so far, by node.
    updates: Vec<(String, Value)>,
    /// Messages whose `messages/metadata` was sent.
    announced: HashSet<String>,
    /// Messages streamed as chunks, accumulated, by id, with their node.
    partial: HashMap<String, (String, Value)>,
    /// The `events` mode's making, when asked for.
    events: Option<RunEvents>,
    /// What goes after the runner's own event of the same step (a step's
    /// tasks start after its `values`).
    after: Vec<Streamed>,
    /// The run's keys in its checkpoints' metadata (`step_runs`).
    run_keys: Map<String, Value>,
}

impl StepEvents {
    /// Before the run starts: where the thread is.
    pub(crate) async fn start(
        wanted: Wanted,
        store: Store,
        served: Box<dyn Served>,
        thread: String,
        context: &RunContext,
    ) -> Result<StepEvents, ApiError> {
        let cursor = match store.thread_info(&thread).await {
            Ok(info) => info.seq,
            Err(StoreError::ThreadNotFound { .. }) => 0,
            Err(error) => return Err(error.into()),
        };
        let previous = match cursor {
            0 => None,
            seq if wanted.steps() => Some(served.state(thread.clone(), Some(seq)).await?),
            _ => None,
        };
        let events = wanted
            .events
            .then(|| RunEvents::new(context.clone(), &thread));
        let run_thread = thread.clone();
        Ok(StepEvents {
            wanted,
            store,
            served,
            thread,
            cursor,
            previous,
            updates: Vec::new(),
            announced: HashSet::new(),
            partial: HashMap::new(),
            events,
            after: Vec::new(),
            run_keys: step_runs::run_keys(
                &context.run_id,
                &run_thread,
                context.attempt,
                &context.metadata,
                context.owner.as_deref(),
            ),
        })
    }

    /// What comes before the graph's first event: in `events`, the
    /// graph's start and, for a run that goes on from the thread's state
    /// (a resume), the starts of the tasks it runs first.
    pub(crate) async fn opening(
        &mut self,
        request: &RunRequest,
    ) -> Result<Vec<Streamed>, ApiError> {
        let Some(events) = self.events.as_mut() else {
            return Ok(Vec::new());
        };
        let input = match (&request.input, &request.resume) {
            (Some(input), _) => input.clone(),
            // LangGraph's `Command`, as its server writes it.
            (None, Some(resume)) => {
                json!({"graph": null, "update": null, "resume": resume, "goto": []})
            }
            (None, None) => Value::Null,
        };
        let mut out = vec![events.graph_start(input)];
        if request.input.is_none() && self.cursor > 0 {
            let state = self.served.state(self.thread.clone(), None).await?;
            out.extend(events.tasks_start(&state));
        }
        Ok(out)
    }

    /// The graph's end in `events`, with the state it ended with.
    pub(crate) fn closing(&mut self, output: Value) -> Option<Streamed> {
        Some(self.events.as_mut()?.graph_end(output))
    }

    /// What goes after the runner's event just handled.
    pub(crate) fn take_after(&mut self) -> Vec<Streamed> {
        std::mem::take(&mut self.after)
    }

    /// What `event` adds to the stream in these modes.
    pub(crate) async fn on<S: State>(&mut self, event: &Event<S>) -> Result<Vec<Streamed>, ApiError>
    where
        S::Delta: serde::Serialize,
    {
        let mut out = Vec::new();
        match event {
            Event::Update { node, .. } => {
                let data = event
                    .data()
                    .map_err(|e| ApiError::unwritable(e.to_string()))?;
                let written = data.get(node).cloned().unwrap_or(Value::Null);
                if self.wanted.messages {
                    self.complete(node, &written, &mut out);
                }
                if let Some(events) = self.events.as_mut() {
                    out.extend(events.node_wrote(node, &written));
                }
                if self.wanted.steps() {
                    self.updates.push((node.clone(), written));
                }
            }
            Event::Message {
                node,
                chunk,
                metadata,
            } => {
                if self.wanted.messages {
                    self.message(chunk, metadata, &mut out);
                }
                if let Some(events) = self.events.as_mut().filter(|_| !metadata.returned)
                    && let Ok(chunk) = state_core::json::to_value(chunk)
                {
                    out.extend(events.model_chunk(node, chunk));
                }
            }
            Event::Nested {
                namespace,
                mode,
                data,
            } => {
                if let Some(events) = self.events.as_mut() {
                    match *mode {
                        "values" => events.nested_values(namespace, data.clone()),
                        "updates" => out.extend(events.nested_update(namespace, data)),
                        _ => {}
                    }
                }
            }
            Event::Values(_) if self.wanted.steps() => self.step(&mut out).await?,
            Event::Interrupt(interrupts) if self.wanted.steps() => {
                self.tasks_of_step(Some(interrupts), &mut out);
            }
            _ => {}
        }
        Ok(out)
    }

    /// A message event in the legacy mode.
    fn message(
        &mut self,
        chunk: &Message,
        metadata: &state_graph::MessageMetadata,
        out: &mut Vec<Streamed>,
    ) {
        let Ok(json) = state_core::json::to_value(chunk) else {
            return;
        };
        let id = json["id"].as_str().unwrap_or_default().to_owned();
        if self.announced.insert(id.clone()) {
            let mut map = Map::new();
            map.insert(id.clone(), json!({"metadata": metadata.to_json()}));
            out.push(Streamed::Event(
                "messages/metadata".into(),
                Value::Object(map),
            ));
        }
        if metadata.returned {
            self.partial.remove(&id);
            out.push(Streamed::Event("messages/complete".into(), json!([json])));
            return;
        }
        // A chunk: the message so far, its text the chunks' joined.
        let so_far = match self.partial.get_mut(&id) {
            None => {
                self.partial
                    .insert(id, (metadata.node.clone(), json.clone()));
                json
            }
            Some((_, so_far)) => {
                let text = format!(
                    "{}{}",
                    so_far["content"].as_str().unwrap_or_default(),
                    json["content"].as_str().unwrap_or_default()
                );
                if let Some(map) = so_far.as_object_mut() {
                    map.insert("content".into(), Value::String(text));
                }
                so_far.clone()
            }
        };
        out.push(Streamed::Event("messages/partial".into(), json!([so_far])));
    }

    /// `node` finished: its streamed messages are complete, as its delta
    /// holds them (or as accumulated).
    fn complete(&mut self, node: &str, written: &Value, out: &mut Vec<Streamed>) {
        let ids: Vec<String> = self
            .partial
            .iter()
            .filter(|(_, (of, _))| of == node)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let Some((_, so_far)) = self.partial.remove(&id) else {
                continue;
            };
            let last = find_message(written, &id).unwrap_or(so_far);
            out.push(Streamed::Event("messages/complete".into(), json!([last])));
        }
    }

    /// A step committed: its tasks, then its checkpoint.
    async fn step(&mut self, out: &mut Vec<Streamed>) -> Result<(), ApiError> {
        self.tasks_of_step(None, out);
        let Some(seq) = self.next_step().await? else {
            return Ok(());
        };
        self.cursor = seq;
        let mut state = self.served.state(self.thread.clone(), Some(seq)).await?;
        step_runs::join(&mut state, &self.run_keys);
        let payload = checkpoint_payload(&state);
        if self.wanted.checkpoints {
            out.push(Streamed::Event("checkpoints".into(), payload.clone()));
        }
        if self.wanted.debug {
            out.push(debug(&state["metadata"]["step"], "checkpoint", payload));
        }
        if let Some(events) = self.events.as_mut() {
            self.after.extend(events.tasks_start(&state));
        }
        self.previous = Some(state);
        Ok(())
    }

    /// The next step after the cursor that a `values` event shows.
    async fn next_step(&self) -> Result<Option<u64>, ApiError> {
        let steps = self
            .store
            .history(&self.thread, self.cursor + 1..=self.cursor + 256)
            .await?;
        Ok(steps
            .iter()
            // A branch back to a past step is written before the run's
            // first event: no event shows it.
            .find(|step| {
                !matches!(
                    step.kind,
                    StepKind::Subgraph | StepKind::Pending | StepKind::Branch
                )
            })
            .map(|step| step.seq))
    }

    /// The step's tasks, from the previous checkpoint's, each a start and
    /// a result (with the pending interrupts when the run paused in it).
    fn tasks_of_step(&mut self, paused: Option<&[Interrupt]>, out: &mut Vec<Streamed>) {
        let updates = std::mem::take(&mut self.updates);
        let Some(previous) = &self.previous else {
            return;
        };
        let step = previous["metadata"]["step"]
            .as_u64()
            .map_or(Value::Null, |s| json!(s + 1));
        let mut tasks: Vec<(String, String)> = previous["tasks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|task| {
                Some((
                    task["id"].as_str()?.to_owned(),
                    task["name"].as_str()?.to_owned(),
                ))
            })
            .collect();
        // Writers the checkpoint did not list (a worker's run).
        for (node, _) in &updates {
            if !tasks.iter().any(|(_, name)| name == node) {
                let id = uuid::Uuid::new_v4().to_string();
                tasks.push((id, node.clone()));
            }
        }
        let mut results = Vec::new();
        for (id, name) in &tasks {
            let start = json!({
                "id": id,
                "name": name,
                "input": previous["values"],
                "triggers": [format!("branch:to:{name}")],
                "metadata": {},
            });
            self.push_task(&step, "task", start, out);
            let written = updates.iter().find(|(node, _)| node == name);
            let interrupts: Vec<Value> = match (written, paused) {
                (None, Some(list)) => list
                    .iter()
                    .map(|i| json!({"value": i.value, "id": i.id}))
                    .collect(),
                _ => Vec::new(),
            };
            if written.is_none() && interrupts.is_empty() {
                // Neither written nor paused: not run in this step.
                continue;
            }
            results.push(json!({
                "id": id,
                "name": name,
                "error": null,
                "result": written.map_or(Value::Null, |(_, w)| w.clone()),
                "interrupts": interrupts,
            }));
        }
        for result in results {
            self.push_task(&step, "task_result", result, out);
        }
    }

    fn push_task(&self, step: &Value, kind: &str, payload: Value, out: &mut Vec<Streamed>) {
        if self.wanted.tasks {
            out.push(Streamed::Event("tasks".into(), payload.clone()));
        }
        if self.wanted.debug {
            out.push(debug(step, kind, payload));
        }
    }
}

/// A `ThreadState` as a `checkpoints` event: `{config, parent_config,
/// values, metadata, next, tasks}`.
fn checkpoint_payload(state: &Value) -> Value {
    let config = |checkpoint: &Value| match checkpoint {
        Value::Null => Value::Null,
        checkpoint => json!({"configurable": checkpoint}),
    };
    json!({
        "config": config(&state["checkpoint"]),
        "parent_config": config(&state["parent_checkpoint"]),
        "values": state["values"],
        "metadata": state["metadata"],
        "next": state["next"],
        "tasks": state["tasks"],
    })
}

/// A `debug` event.
fn debug(step: &Value, kind: &str, payload: Value) -> Streamed {
    Streamed::Event(
        "debug".into(),
        json!({
            "step": step,
            "timestamp": rfc3339_micros(SystemTime::now()),
            "type": kind,
            "payload": payload,
        }),
    )
}
