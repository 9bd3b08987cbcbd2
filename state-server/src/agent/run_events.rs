//! The `events` stream mode: LangChain's `astream_events` v2 dicts, as the
//! Agent Server sends them (recorded exchange 26), made from a run's graph
//! events and the checkpoints `step_events.rs` reads.
//!
//! What a run sends, in order:
//! - `on_chain_start` of the graph (named by its graph id, `run_id` the
//!   run's, no parents), its input the request's (a resume's as
//!   LangGraph's `Command`: `{graph, update, resume, goto}`);
//! - for each task of each superstep, `on_chain_start` (named by its node,
//!   tagged `graph:step:N`, a child of the graph's run, its input the state
//!   the task reads), when the step before it is committed;
//! - for a model that streams its tokens in a node, `on_chat_model_start`
//!   at its first chunk, `on_chat_model_stream` per chunk and
//!   `on_chat_model_end` (the message as the node wrote it) when the node
//!   ends, children of the node's run, tagged `seq:step:1`;
//! - `on_chain_stream` then `on_chain_end` of a task when its node's write
//!   arrives (`chunk` and `output` the write, `input` the task's);
//! - a subgraph's nodes (a namespaced `updates`) as start, stream and end
//!   at once, children of the task they run in;
//! - `on_chain_end` of the graph, `output` the state at the end.
//!
//! A task that pauses at an interrupt gets no end (LangGraph's raises
//! inside it), and the graph ends with its state without the interrupts;
//! a resume starts the paused task again. The event name is always
//! `events`, with or without `stream_subgraphs`: LangGraph's server sends
//! every `astream_events` dict, a subgraph's too, under that name.
//!
//! What we cannot give, and why:
//! - the metadata keys naming the Python server that ran the graph
//!   (`langgraph_version`, `langgraph_api_version`, `langgraph_plan`,
//!   `langgraph_host`, `langgraph_api_url`): there is none;
//! - the assistant's own metadata (`created_by`): a run carries the
//!   assistant's id, not its metadata;
//! - the routers' `on_chain_start`/`on_chain_end` (a conditional edge's
//!   function, named by it in Python): a router here is a closure with no
//!   name, run inside the superstep without an event;
//! - a chat model's class name and `lc_versions`: a chunk says its
//!   provider (`response_metadata.model_provider`), not its class, so the
//!   name is `ChatOpenAI`, `ChatAnthropic` or `ChatModel`; its input is
//!   the task's messages (what a react agent sends, less its prompt);
//! - ids: ours (uuid v7), not LangChain's; a task's is the one the
//!   thread's checkpoints give it;
//! - a model's tokens inside a subgraph: a subgraph's nodes are made from
//!   its updates, which come once each node is done;
//! - LangGraph's step numbers: `langgraph_step` (and the `graph:step:N`
//!   tag) is the thread's step the task commits as, as in the
//!   `messages-tuple` metadata; a pause is a step of the thread, so a
//!   resumed task's is one more than when it paused (LangGraph's is the
//!   same).

use super::served::Streamed;
use serde_json::{Map, Value, json};

/// Who and what a run is, for the events' metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RunContext {
    /// The run's id: the graph's `run_id`, every event's `metadata.run_id`.
    pub run_id: String,
    /// The graph the assistant serves, the graph's event name.
    pub graph_id: String,
    /// The assistant's id.
    pub assistant_id: String,
    /// Which claim of the run this is (1, then 2 after a takeover...).
    pub attempt: u32,
    /// The run's metadata (an object; other values are left out).
    pub metadata: Value,
    /// Who created the run (the auth hook's identity).
    pub owner: Option<String>,
}

/// A node's run, started and not ended.
#[derive(Debug, Clone)]
struct Task {
    run_id: String,
    name: String,
    tags: Value,
    input: Value,
    metadata: Map<String, Value>,
    /// The namespace segment of its subgraph's events: `node:task-id`.
    segment: String,
}

/// A chat model's run inside a task, started and not ended.
#[derive(Debug, Clone)]
struct Model {
    run_id: String,
    name: String,
    node: String,
    message_id: String,
    input: Value,
    metadata: Map<String, Value>,
    parents: Vec<String>,
    /// The chunks so far, their text joined.
    so_far: Value,
}

/// One run's `events`: the runs started and not ended, and the metadata
/// every event carries.
#[derive(Debug)]
pub(crate) struct RunEvents {
    context: RunContext,
    base: Map<String, Value>,
    tasks: Vec<Task>,
    models: Vec<Model>,
    /// A subgraph's latest state, by namespace (`|`-joined): the input of
    /// its next nodes.
    nested: Vec<(String, Value)>,
}

impl RunContext {
    /// The metadata every event of the run on `thread` carries (`events`,
    /// `messages-tuple`): the run's own, then who runs it.
    pub(crate) fn metadata(&self, thread: &str) -> Map<String, Value> {
        let mut base = Map::new();
        if let Value::Object(metadata) = &self.metadata {
            base.extend(metadata.clone());
        }
        base.insert("graph_id".into(), json!(self.graph_id));
        base.insert("assistant_id".into(), json!(self.assistant_id));
        base.insert("run_attempt".into(), json!(self.attempt));
        base.insert("thread_id".into(), json!(thread));
        base.insert("run_id".into(), json!(self.run_id));
        base.insert("ls_integration".into(), json!("langgraph"));
        base
    }
}

impl RunEvents {
    /// The events of the run `context` on `thread`.
    pub(crate) fn new(context: RunContext, thread: &str) -> RunEvents {
        let base = context.metadata(thread);
        RunEvents {
            context,
            base,
            tasks: Vec::new(),
            models: Vec::new(),
            nested: Vec::new(),
        }
    }

    /// The graph's start, `input` what the run was given.
    pub(crate) fn graph_start(&self, input: Value) -> Streamed {
        event(
            "on_chain_start",
            json!({"input": input}),
            &self.context.graph_id,
            json!([]),
            &self.context.run_id,
            &self.base,
            &[],
        )
    }

    /// The graph's end with the state `output`; a task still open (paused)
    /// ends without an event.
    pub(crate) fn graph_end(&mut self, output: Value) -> Streamed {
        self.tasks.clear();
        self.models.clear();
        event(
            "on_chain_end",
            json!({"output": output}),
            &self.context.graph_id,
            json!([]),
            &self.context.run_id,
            &self.base,
            &[],
        )
    }

    /// The tasks a checkpoint (a `ThreadState`) says run next: each
    /// one's start.
    pub(crate) fn tasks_start(&mut self, checkpoint: &Value) -> Vec<Streamed> {
        let step = checkpoint["metadata"]["step"].as_u64().map_or(0, |s| s + 1);
        let mut out = Vec::new();
        for task in checkpoint["tasks"].as_array().into_iter().flatten() {
            let (Some(id), Some(name)) = (task["id"].as_str(), task["name"].as_str()) else {
                continue;
            };
            let path = match &task["path"] {
                Value::Null => json!(["__pregel_pull", name]),
                path => path.clone(),
            };
            let (start, _) = self.start_task(name, id, step, path, checkpoint["values"].clone());
            out.push(start);
        }
        out
    }

    /// Opens the task of `name`: its start, and the task.
    fn start_task(
        &mut self,
        name: &str,
        id: &str,
        step: u64,
        path: Value,
        input: Value,
    ) -> (Streamed, Task) {
        let segment = format!("{name}:{id}");
        let mut metadata = self.base.clone();
        metadata.insert("langgraph_step".into(), json!(step));
        metadata.insert("langgraph_node".into(), json!(name));
        metadata.insert(
            "langgraph_triggers".into(),
            json!([format!("branch:to:{name}")]),
        );
        metadata.insert("langgraph_path".into(), path);
        metadata.insert("langgraph_checkpoint_ns".into(), json!(segment));
        let task = Task {
            run_id: new_id(),
            name: name.to_owned(),
            tags: json!([format!("graph:step:{step}")]),
            input,
            metadata,
            segment,
        };
        let start = event(
            "on_chain_start",
            json!({"input": task.input}),
            &task.name,
            task.tags.clone(),
            &task.run_id,
            &task.metadata,
            std::slice::from_ref(&self.context.run_id),
        );
        self.tasks.push(task.clone());
        (start, task)
    }

    /// The open task of `node`, opened now (its input unknown) if none
    /// is: a worker's run, which no checkpoint lists.
    fn task_of(&mut self, node: &str, out: &mut Vec<Streamed>) -> Task {
        if let Some(task) = self.tasks.iter().find(|t| t.name == node) {
            return task.clone();
        }
        let step = self.tasks.first().map_or(0, |t| {
            t.metadata["langgraph_step"].as_u64().unwrap_or_default()
        });
        let id = new_id();
        let (start, task) =
            self.start_task(node, &id, step, json!(["__pregel_push", 0]), Value::Null);
        out.push(start);
        task
    }

    /// A message chunk `node` streamed while it ran (a model's tokens).
    pub(crate) fn model_chunk(&mut self, node: &str, chunk: Value) -> Vec<Streamed> {
        let mut out = Vec::new();
        let id = chunk["id"].as_str().unwrap_or_default().to_owned();
        let at = match self
            .models
            .iter()
            .position(|m| m.node == node && m.message_id == id)
        {
            Some(at) => {
                let so_far = &mut self.models[at].so_far;
                let text = format!(
                    "{}{}",
                    so_far["content"].as_str().unwrap_or_default(),
                    chunk["content"].as_str().unwrap_or_default()
                );
                if let Some(map) = so_far.as_object_mut() {
                    map.insert("content".into(), Value::String(text));
                }
                at
            }
            None => {
                let task = self.task_of(node, &mut out);
                let provider = chunk["response_metadata"]["model_provider"]
                    .as_str()
                    .map(str::to_owned);
                let mut metadata = task.metadata.clone();
                metadata.insert("ls_integration".into(), json!("langchain_chat_model"));
                metadata.insert("checkpoint_ns".into(), json!(task.segment));
                if let Some(provider) = &provider {
                    metadata.insert("ls_provider".into(), json!(provider));
                }
                metadata.insert("ls_model_type".into(), json!("chat"));
                let messages = match &task.input["messages"] {
                    Value::Array(list) => json!([list]),
                    _ => json!([[]]),
                };
                let model = Model {
                    run_id: new_id(),
                    name: model_name(provider.as_deref()).to_owned(),
                    node: node.to_owned(),
                    message_id: id,
                    input: json!({"messages": messages}),
                    metadata,
                    parents: vec![self.context.run_id.clone(), task.run_id.clone()],
                    so_far: chunk.clone(),
                };
                out.push(event(
                    "on_chat_model_start",
                    json!({"input": model.input}),
                    &model.name,
                    json!(["seq:step:1"]),
                    &model.run_id,
                    &model.metadata,
                    &model.parents,
                ));
                self.models.push(model);
                self.models.len() - 1
            }
        };
        let model = &self.models[at];
        out.push(event(
            "on_chat_model_stream",
            json!({"chunk": chunk}),
            &model.name,
            json!(["seq:step:1"]),
            &model.run_id,
            &model.metadata,
            &model.parents,
        ));
        out
    }

    /// `node` wrote `written` (its delta's JSON): its models' ends, then
    /// its stream and end.
    pub(crate) fn node_wrote(&mut self, node: &str, written: &Value) -> Vec<Streamed> {
        let mut out = Vec::new();
        let (models, others): (Vec<Model>, Vec<Model>) = std::mem::take(&mut self.models)
            .into_iter()
            .partition(|m| m.node == node);
        self.models = others;
        for model in models {
            // The message as the node wrote it, else its chunks joined.
            let mut output = find_message(written, &model.message_id).unwrap_or(model.so_far);
            if output["type"] == json!("AIMessageChunk") {
                output["type"] = json!("ai");
            }
            out.push(event(
                "on_chat_model_end",
                json!({"output": output, "input": model.input}),
                &model.name,
                json!(["seq:step:1"]),
                &model.run_id,
                &model.metadata,
                &model.parents,
            ));
        }
        let task = self.task_of(node, &mut out);
        self.tasks.retain(|t| t.run_id != task.run_id);
        let parents = [self.context.run_id.clone()];
        out.push(event(
            "on_chain_stream",
            json!({"chunk": written}),
            &task.name,
            task.tags.clone(),
            &task.run_id,
            &task.metadata,
            &parents,
        ));
        out.push(event(
            "on_chain_end",
            json!({"output": written, "input": task.input}),
            &task.name,
            task.tags,
            &task.run_id,
            &task.metadata,
            &parents,
        ));
        out
    }

    /// A subgraph's state (a namespaced `values`): the input of its next
    /// nodes.
    pub(crate) fn nested_values(&mut self, namespace: &[String], values: Value) {
        let key = namespace.join("|");
        match self.nested.iter_mut().find(|(ns, _)| *ns == key) {
            Some((_, latest)) => *latest = values,
            None => self.nested.push((key, values)),
        }
    }

    /// A subgraph's nodes wrote (a namespaced `updates`, `{node: write}`):
    /// each one's start, stream and end, children of the task the
    /// subgraph runs in.
    pub(crate) fn nested_update(&mut self, namespace: &[String], data: &Value) -> Vec<Streamed> {
        let Value::Object(writes) = data else {
            return Vec::new();
        };
        let key = namespace.join("|");
        let input = self
            .nested
            .iter()
            .find(|(ns, _)| *ns == key)
            .map_or(Value::Null, |(_, v)| v.clone());
        // Its parents: the graph, then the task it runs in (the outermost
        // segment's node).
        let outer = namespace
            .first()
            .and_then(|s| s.split(':').next())
            .unwrap_or_default();
        let mut parents = vec![self.context.run_id.clone()];
        let mut metadata = self.base.clone();
        if let Some(task) = self.tasks.iter().find(|t| t.name == outer) {
            parents.push(task.run_id.clone());
            metadata = task.metadata.clone();
        }
        let mut out = Vec::new();
        for (node, written) in writes {
            if node == "__interrupt__" {
                continue;
            }
            let step = metadata["langgraph_step"].clone();
            let mut metadata = metadata.clone();
            metadata.insert("langgraph_node".into(), json!(node));
            metadata.insert(
                "langgraph_triggers".into(),
                json!([format!("branch:to:{node}")]),
            );
            metadata.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
            metadata.insert(
                "langgraph_checkpoint_ns".into(),
                json!(format!("{key}|{node}:{}", new_id())),
            );
            metadata.insert("checkpoint_ns".into(), json!(key));
            let tags = match step.as_u64() {
                Some(step) => json!([format!("graph:step:{step}")]),
                None => json!([]),
            };
            let run_id = new_id();
            for (kind, data) in [
                ("on_chain_start", json!({"input": input})),
                ("on_chain_stream", json!({"chunk": written})),
                ("on_chain_end", json!({"output": written, "input": input})),
            ] {
                out.push(event(
                    kind,
                    data,
                    node,
                    tags.clone(),
                    &run_id,
                    &metadata,
                    &parents,
                ));
            }
        }
        out
    }
}

/// One `events` event: an `astream_events` v2 dict.
fn event(
    kind: &str,
    data: Value,
    name: &str,
    tags: Value,
    run_id: &str,
    metadata: &Map<String, Value>,
    parents: &[String],
) -> Streamed {
    Streamed::Event(
        "events".into(),
        json!({
            "event": kind,
            "data": data,
            "name": name,
            "tags": tags,
            "run_id": run_id,
            "metadata": metadata,
            "parent_ids": parents,
        }),
    )
}

/// A new run id (time-ordered, as LangChain's).
fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// A chat model's LangChain class, by its provider.
fn model_name(provider: Option<&str>) -> &'static str {
    match provider {
        Some("openai") => "ChatOpenAI",
        Some("anthropic") => "ChatAnthropic",
        _ => "ChatModel",
    }
}

/// The message with this id in what a node wrote, wherever a message
/// list holds it.
pub(crate) fn find_message(written: &Value, id: &str) -> Option<Value> {
    match written {
        Value::Object(map) if map.get("id").and_then(Value::as_str) == Some(id) => {
            Some(written.clone())
        }
        Value::Object(map) => map.values().find_map(|v| find_message(v, id)),
        Value::Array(list) => list.iter().find_map(|v| find_message(v, id)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> RunContext {
        RunContext {
            run_id: "run".into(),
            graph_id: "agent".into(),
            assistant_id: "asst".into(),
            attempt: 1,
            metadata: json!({"from": "me"}),
            owner: None,
        }
    }

    /// (event, name, run_id, parent_ids, data's keys sorted) of each.
    fn shapes(list: &[Streamed]) -> Vec<(String, String, String, Value, Vec<String>)> {
        list.iter()
            .map(|item| {
                let Streamed::Event(name, data) = item else {
                    panic!("not an event: {item:?}");
                };
                assert_eq!(name, "events");
                (
                    data["event"].as_str().unwrap().to_owned(),
                    data["name"].as_str().unwrap().to_owned(),
                    data["run_id"].as_str().unwrap().to_owned(),
                    data["parent_ids"].clone(),
                    {
                        // Sorted: the order depends on serde_json's features.
                        let mut keys: Vec<String> =
                            data["data"].as_object().unwrap().keys().cloned().collect();
                        keys.sort();
                        keys
                    },
                )
            })
            .collect()
    }

    fn checkpoint(step: u64, tasks: &[&str], values: Value) -> Value {
        let tasks: Vec<Value> = tasks
            .iter()
            .map(|n| json!({"id": format!("id-{n}"), "name": n, "path": ["__pregel_pull", n]}))
            .collect();
        json!({"metadata": {"step": step}, "tasks": tasks, "values": values})
    }

    #[test]
    fn a_run_is_the_graph_around_its_tasks() {
        let mut events = RunEvents::new(context(), "t");
        let mut out = vec![events.graph_start(json!({"messages": []}))];
        let state = json!({"messages": [{"type": "human", "content": "ping"}]});
        out.extend(events.tasks_start(&checkpoint(1, &["agent"], state.clone())));
        let write = json!({"messages": [{"type": "ai", "content": "pong", "id": "m"}]});
        out.extend(events.node_wrote("agent", &write));
        out.push(events.graph_end(json!({"messages": ["all"]})));
        let shapes = shapes(&out);
        let task = shapes[1].2.clone();
        assert_eq!(
            shapes,
            vec![
                (
                    "on_chain_start".into(),
                    "agent".into(),
                    "run".into(),
                    json!([]),
                    vec!["input".into()]
                ),
                (
                    "on_chain_start".into(),
                    "agent".into(),
                    task.clone(),
                    json!(["run"]),
                    vec!["input".into()]
                ),
                (
                    "on_chain_stream".into(),
                    "agent".into(),
                    task.clone(),
                    json!(["run"]),
                    vec!["chunk".into()]
                ),
                (
                    "on_chain_end".into(),
                    "agent".into(),
                    task,
                    json!(["run"]),
                    vec!["input".into(), "output".into()]
                ),
                (
                    "on_chain_end".into(),
                    "agent".into(),
                    "run".into(),
                    json!([]),
                    vec!["output".into()]
                ),
            ]
        );
        let Streamed::Event(_, start) = &out[1] else {
            unreachable!()
        };
        assert_eq!(start["tags"], json!(["graph:step:2"]));
        assert_eq!(start["data"]["input"], state);
        let metadata = &start["metadata"];
        assert_eq!(metadata["langgraph_step"], json!(2));
        assert_eq!(metadata["langgraph_node"], json!("agent"));
        assert_eq!(metadata["langgraph_triggers"], json!(["branch:to:agent"]));
        assert_eq!(
            metadata["langgraph_path"],
            json!(["__pregel_pull", "agent"])
        );
        assert_eq!(metadata["langgraph_checkpoint_ns"], json!("agent:id-agent"));
        assert_eq!(metadata["thread_id"], json!("t"));
        assert_eq!(metadata["run_id"], json!("run"));
        assert_eq!(metadata["assistant_id"], json!("asst"));
        assert_eq!(metadata["graph_id"], json!("agent"));
        assert_eq!(metadata["run_attempt"], json!(1));
        assert_eq!(metadata["from"], json!("me"), "the run's metadata");
        let Streamed::Event(_, end) = &out[3] else {
            unreachable!()
        };
        assert_eq!(end["data"]["output"], write);
        assert_eq!(end["data"]["input"], state);
        let Streamed::Event(_, graph) = &out[0] else {
            unreachable!()
        };
        assert!(graph["metadata"].get("langgraph_step").is_none(), "{graph}");
    }

    #[test]
    fn a_models_tokens_are_a_chat_model_run_inside_the_task() {
        let mut events = RunEvents::new(context(), "t");
        let state = json!({"messages": [{"type": "human", "content": "hi"}]});
        let starts = events.tasks_start(&checkpoint(0, &["model"], state));
        let chunk = |text: &str| {
            json!({"type": "AIMessageChunk", "content": text, "id": "m",
                   "response_metadata": {"model_provider": "openai"}})
        };
        let mut out = events.model_chunk("model", chunk("Hel"));
        out.extend(events.model_chunk("model", chunk("lo")));
        let write = json!({"messages": [{"type": "ai", "content": "Hello", "id": "m"}]});
        out.extend(events.node_wrote("model", &write));
        let task = shapes(&starts)[0].2.clone();
        let shapes = shapes(&out);
        let kinds: Vec<&str> = shapes.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "on_chat_model_start",
                "on_chat_model_stream",
                "on_chat_model_stream",
                "on_chat_model_end",
                "on_chain_stream",
                "on_chain_end"
            ]
        );
        assert_eq!(shapes[0].1, "ChatOpenAI");
        assert_eq!(shapes[0].3, json!(["run", task]));
        assert!(
            shapes[..4].iter().all(|s| s.2 == shapes[0].2),
            "one model run"
        );
        let Streamed::Event(_, start) = &out[0] else {
            unreachable!()
        };
        assert_eq!(
            start["data"]["input"]["messages"][0][0]["content"],
            json!("hi")
        );
        assert_eq!(
            start["metadata"]["ls_integration"],
            json!("langchain_chat_model")
        );
        assert_eq!(start["metadata"]["ls_provider"], json!("openai"));
        assert_eq!(start["metadata"]["langgraph_node"], json!("model"));
        let Streamed::Event(_, end) = &out[3] else {
            unreachable!()
        };
        assert_eq!(end["data"]["output"]["content"], json!("Hello"));
        assert_eq!(end["data"]["output"]["type"], json!("ai"));
    }

    #[test]
    fn a_paused_task_has_no_end_and_a_worker_gets_a_task_of_its_own() {
        let mut events = RunEvents::new(context(), "t");
        let starts = events.tasks_start(&checkpoint(3, &["ask", "other"], json!({})));
        assert_eq!(starts.len(), 2);
        // `other` wrote, `ask` paused: the graph ends.
        assert_eq!(events.node_wrote("other", &json!({})).len(), 2);
        let end = events.graph_end(json!({"answer": ""}));
        assert_eq!(shapes(&[end])[0].0, "on_chain_end");
        assert!(events.tasks.is_empty());
        // A node no checkpoint listed (a worker's): started when it writes.
        let out = events.node_wrote("worker", &json!({"n": 1}));
        let kinds: Vec<String> = shapes(&out).into_iter().map(|s| s.0).collect();
        assert_eq!(kinds, ["on_chain_start", "on_chain_stream", "on_chain_end"]);
    }

    #[test]
    fn a_subgraphs_nodes_are_children_of_its_task() {
        let mut events = RunEvents::new(context(), "t");
        let starts = events.tasks_start(&checkpoint(1, &["inner"], json!({})));
        let task = shapes(&starts)[0].2.clone();
        let namespace = vec!["inner:abc".to_owned()];
        events.nested_values(&namespace, json!({"x": 1}));
        let out = events.nested_update(&namespace, &json!({"leaf": {"x": 2}}));
        let shapes = shapes(&out);
        assert_eq!(shapes.len(), 3);
        assert!(
            shapes
                .iter()
                .all(|s| s.1 == "leaf" && s.3 == json!(["run", task]))
        );
        let Streamed::Event(_, end) = &out[2] else {
            unreachable!()
        };
        assert_eq!(end["data"], json!({"output": {"x": 2}, "input": {"x": 1}}));
        assert_eq!(end["metadata"]["checkpoint_ns"], json!("inner:abc"));
        assert!(
            end["metadata"]["langgraph_checkpoint_ns"]
                .as_str()
                .unwrap()
                .starts_with("inner:abc|leaf:")
        );
    }
}
