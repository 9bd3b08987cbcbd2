//! One run's stored events as the v3 thread protocol's events (LangGraph's
//! `EventStreamingSession`): what a run streams in the Agent Server's
//! modes becomes events on the protocol's channels.
//!
//! - `lifecycle`: `running` when the run starts; `interrupted` at its
//!   first interrupt; `completed`, `failed` (with its error) or
//!   `interrupted` (cancelled) when it ends. A subgraph's namespace is
//!   `started` at its first event and `completed` when its parent's node
//!   has written (or the run ends).
//! - `values`, `updates`: the state payloads in the protocol's form
//!   ([`protocol_state`](super::protocol_state)); an update names its
//!   node (`params.node`).
//! - `input.requested`: each interrupt (`{interrupt_id, payload}`), from
//!   the `__interrupt__` of `values` or `updates`, once.
//! - `messages`: a model's message as content-block events
//!   (`message-start`, `content-block-start`, `content-block-delta` with
//!   each new piece of text, `content-block-finish`, `message-finish`),
//!   from the `messages` mode's partial and complete messages; a tool
//!   call is a `tool_call` block.
//! - `tools`: `tool-started` then `tool-finished` (its output the tool's
//!   message) when a node writes a tool's message. LangGraph's tool
//!   handler sends `tool-started` when the tool begins; here a node is
//!   one step, so both come when it is done.
//! - `checkpoints` (`{id, parent_id, step, source}`), `tasks`, `custom`
//!   (`{payload}`).
//!
//! Event ids: an event made from a stored one is that event's id
//! (`<ms>-<seq>`), with `.1`, `.2`... for the others it makes; the events
//! only the session makes (lifecycle, input) get LangGraph's
//! `synth:<run>:<kind>|<namespace>|<what>` ids. Both are the same
//! whenever the run is streamed again, so a client drops what it saw.

use super::follow::{EventKey, event_id, key_of};
use super::protocol_state;
use serde_json::{Map, Value, json};
use state_store::{RunEvent, RunStatus};
use std::collections::{HashMap, HashSet};

/// One protocol event, before its connection gives it a `seq`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shaped {
    /// The event's method: its channel, `input.requested` for `input`.
    pub method: &'static str,
    pub namespace: Vec<String>,
    pub data: Value,
    /// The node an update (or a tool's event) comes from.
    pub node: Option<String>,
    pub event_id: String,
    /// Milliseconds since the epoch.
    pub timestamp: u64,
}

/// One run's protocol events, made as its stored events are read.
pub(crate) struct RunShaper {
    run_id: String,
    graph_name: String,
    /// Each namespace's lifecycle status sent (the root's under `[]`).
    namespaces: Vec<(Vec<String>, &'static str)>,
    /// The interrupts sent on `input`.
    interrupts: HashSet<String>,
    /// Whether the root's terminal lifecycle is sent.
    ended: bool,
    /// Messages started on `messages` and not finished, by id: the text
    /// sent so far.
    streaming: HashMap<String, String>,
    /// The messages' metadata (`messages/metadata`), by id.
    metadata: HashMap<String, Value>,
    /// Tool calls seen in AI messages: their name and arguments, by id.
    calls: HashMap<String, (String, Value)>,
    /// The checkpoints sent, by namespace and id.
    checkpoints: HashSet<(Vec<String>, String)>,
    /// The id of the stored event being shaped and how many events it
    /// made so far (the events only the session makes have ids of their
    /// own).
    source: (String, usize),
    /// The time of the event being shaped.
    now: u64,
}

impl RunShaper {
    /// The events of run `run_id` of graph `graph_name`, which started at
    /// `started` (ms): the first, its `running`.
    pub(crate) fn start(run_id: &str, graph_name: &str, started: u64) -> (RunShaper, Shaped) {
        let mut shaper = RunShaper {
            run_id: run_id.to_owned(),
            graph_name: graph_name.to_owned(),
            namespaces: Vec::new(),
            interrupts: HashSet::new(),
            ended: false,
            streaming: HashMap::new(),
            metadata: HashMap::new(),
            calls: HashMap::new(),
            checkpoints: HashSet::new(),
            source: (String::new(), 0),
            now: started,
        };
        let mut out = Vec::new();
        shaper.lifecycle(&[], "running", None, &mut out);
        let running = out.pop().expect("a new run's lifecycle is sent");
        (shaper, running)
    }

    /// The protocol events of stored event `event`.
    pub(crate) fn shape(&mut self, event: &RunEvent, out: &mut Vec<Shaped>) {
        self.shape_stored(&event.event, &event.data, key_of(event), out);
    }

    /// The protocol events of the stored event named `name` with `data`,
    /// at `key`.
    fn shape_stored(&mut self, name: &str, data: &Value, key: EventKey, out: &mut Vec<Shaped>) {
        self.now = key.0;
        self.source = (event_id(key), 0);
        let mut parts = name.split('|');
        let mode = parts.next().unwrap_or_default();
        let namespace: Vec<String> = parts.map(str::to_owned).collect();
        if !namespace.is_empty() && mode != "error" && mode != "metadata" {
            self.enter(&namespace, out);
        }
        match mode {
            "values" => {
                self.interrupts_in(&namespace, data.get("__interrupt__"), out);
                if data.is_object() {
                    let values = protocol_state::state(data);
                    self.push("values", &namespace, values, None, out);
                }
            }
            "updates" => self.update(&namespace, data, out),
            "messages/metadata" => {
                if let Value::Object(map) = data {
                    for (id, entry) in map {
                        let metadata = entry.get("metadata").cloned().unwrap_or(Value::Null);
                        self.metadata.insert(id.clone(), metadata);
                    }
                }
            }
            "messages/partial" => {
                for message in data.as_array().into_iter().flatten() {
                    self.message(&namespace, message, false, out);
                }
            }
            "messages/complete" => {
                for message in data.as_array().into_iter().flatten() {
                    self.message(&namespace, message, true, out);
                }
            }
            "custom" => self.push("custom", &namespace, json!({"payload": data}), None, out),
            "tasks" => self.push("tasks", &namespace, data.clone(), None, out),
            "checkpoints" => self.checkpoint(&namespace, data, out),
            "error" => {
                let message = data
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| data.to_string());
                self.finish("failed", Some(message), out);
            }
            // `metadata`, and the modes the protocol has no channel for
            // (`debug`, `events`, `messages-tuple`'s `messages`).
            _ => {}
        }
    }

    /// The events that end the run, which ended with `status` (at `at`
    /// ms), if they were not sent already: each open subgraph
    /// `completed`, then the root's end.
    pub(crate) fn end(&mut self, status: RunStatus, at: u64, out: &mut Vec<Shaped>) {
        self.now = at;
        match status {
            RunStatus::Success => self.finish("completed", None, out),
            RunStatus::Interrupted => self.finish("interrupted", None, out),
            RunStatus::Error => self.finish("failed", Some("the run failed".into()), out),
            RunStatus::Timeout => self.finish("failed", Some("the run timed out".into()), out),
            // Not ended (its row was deleted): nothing to say.
            RunStatus::Pending | RunStatus::Running => {}
        }
    }

    /// A node's update: its interrupts on `input`, the rest on
    /// `updates`, a tool's message on `tools`.
    fn update(&mut self, namespace: &[String], data: &Value, out: &mut Vec<Shaped>) {
        let Value::Object(map) = data else {
            return;
        };
        if let Some(interrupts) = map.get("__interrupt__") {
            self.interrupts_in(namespace, Some(interrupts), out);
            if map.len() == 1 {
                return;
            }
        }
        let mut entries = map.iter().filter(|(node, _)| *node != "__interrupt__");
        let (node, values) = match (entries.next(), entries.next()) {
            (Some((node, values)), None) => (Some(node.clone()), values),
            _ => (None, data),
        };
        let values = match values {
            Value::Object(_) => protocol_state::state(values),
            other => json!({"value": other}),
        };
        // A tool ran inside the node: its events come before the node's
        // update, as LangGraph's tool callbacks send them.
        if let Some(node) = &node {
            self.tools_in(namespace, node, &data[node.as_str()], out);
        }
        self.push("updates", namespace, values, node.clone(), out);
        if let Some(node) = &node {
            self.leave_children_of(namespace, node, out);
        }
    }

    /// `tool-started` and `tool-finished` for each tool message in a
    /// node's update; the tool calls of its AI messages, remembered.
    fn tools_in(
        &mut self,
        namespace: &[String],
        node: &str,
        update: &Value,
        out: &mut Vec<Shaped>,
    ) {
        let messages = update
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for message in messages {
            match protocol_state::message_type(message) {
                Some("ai") => {
                    for call in protocol_state::tool_calls(message) {
                        if let Some(id) = call["id"].as_str() {
                            let name = call["name"].as_str().unwrap_or_default().to_owned();
                            self.calls
                                .insert(id.to_owned(), (name, call["args"].clone()));
                        }
                    }
                }
                Some("tool") => {
                    let Some(id) = message.get("tool_call_id").and_then(Value::as_str) else {
                        continue;
                    };
                    let (name, input) = self.calls.get(id).cloned().unwrap_or_else(|| {
                        let name = message.get("name").and_then(Value::as_str);
                        (name.unwrap_or_default().to_owned(), Value::Null)
                    });
                    let started = json!({"event": "tool-started", "tool_call_id": id,
                                         "tool_name": name, "input": input});
                    let node = Some(node.to_owned());
                    self.push("tools", namespace, started, node.clone(), out);
                    let output = protocol_state::message(message);
                    let finished = if message.get("status") == Some(&json!("error")) {
                        let text = protocol_state::text_of(message);
                        json!({"event": "tool-error", "tool_call_id": id, "message": text})
                    } else {
                        json!({"event": "tool-finished", "tool_call_id": id, "output": output})
                    };
                    self.push("tools", namespace, finished, node, out);
                }
                _ => {}
            }
        }
    }

    /// A model's message, partial (the text so far) or complete, as
    /// content-block events.
    fn message(
        &mut self,
        namespace: &[String],
        message: &Value,
        complete: bool,
        out: &mut Vec<Shaped>,
    ) {
        let role = match protocol_state::message_type(message) {
            Some(role @ ("ai" | "human" | "system")) => role,
            // A tool's message goes on `tools` (from its node's update).
            _ => return,
        };
        let Some(id) = message.get("id").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        if !self.streaming.contains_key(&id) {
            let mut start = json!({"event": "message-start", "role": role, "id": id});
            if let Some(metadata) = self.metadata.get(&id).filter(|m| m.is_object()) {
                start["metadata"] = metadata.clone();
            }
            self.push("messages", namespace, start, None, out);
            let block = json!({"event": "content-block-start", "message_id": id, "index": 0,
                               "content": {"type": "text", "text": ""}});
            self.push("messages", namespace, block, None, out);
            self.streaming.insert(id.clone(), String::new());
        }
        let text = protocol_state::text_of(message);
        let sent = self.streaming.get(&id).map_or("", String::as_str);
        // Each new piece of text; a text that does not go on from what was
        // sent is left to the finish, which carries it whole.
        let piece = text.strip_prefix(sent).filter(|p| !p.is_empty());
        if let Some(piece) = piece {
            let delta = json!({"event": "content-block-delta", "message_id": id, "index": 0,
                               "delta": {"type": "text-delta", "text": piece}});
            self.push("messages", namespace, delta, None, out);
            if let Some(sent) = self.streaming.get_mut(&id) {
                sent.clone_from(&text);
            }
        }
        if !complete {
            return;
        }
        self.streaming.remove(&id);
        let finish = json!({"event": "content-block-finish", "message_id": id, "index": 0,
                            "content": {"type": "text", "text": text}});
        self.push("messages", namespace, finish, None, out);
        for (index, call) in protocol_state::tool_calls(message).into_iter().enumerate() {
            // The call whole at its finish; its start names it.
            let chunk = json!({"type": "tool_call_chunk", "id": call["id"], "name": call["name"],
                               "args": ""});
            let start = json!({"event": "content-block-start", "message_id": id,
                               "index": index + 1, "content": chunk});
            self.push("messages", namespace, start, None, out);
            let finish = json!({"event": "content-block-finish", "message_id": id,
                                "index": index + 1, "content": call});
            self.push("messages", namespace, finish, None, out);
        }
        let mut end = json!({"event": "message-finish", "message_id": id});
        if let Some(usage) = message.get("usage_metadata").filter(|u| u.is_object()) {
            let mut info = Map::new();
            for key in ["input_tokens", "output_tokens", "total_tokens"] {
                if let Some(n) = usage.get(key).filter(|n| n.is_u64()) {
                    info.insert(key.into(), n.clone());
                }
            }
            end["usage"] = Value::Object(info);
        }
        self.push("messages", namespace, end, None, out);
    }

    /// A checkpoint (LangGraph's `{config, parent_config, metadata, ..}`)
    /// as the protocol's `{id, parent_id, step, source}`, once.
    fn checkpoint(&mut self, namespace: &[String], data: &Value, out: &mut Vec<Shaped>) {
        let id_of = |config: &Value| {
            config["configurable"]["checkpoint_id"]
                .as_str()
                .map(str::to_owned)
        };
        let Some(id) = id_of(&data["config"]) else {
            return;
        };
        if !self.checkpoints.insert((namespace.to_vec(), id.clone())) {
            return;
        }
        let mut envelope = json!({"id": id, "step": data["metadata"]["step"],
                                  "source": data["metadata"]["source"]});
        if let Some(parent) = id_of(&data["parent_config"]) {
            envelope["parent_id"] = json!(parent);
        }
        self.push("checkpoints", namespace, envelope, None, out);
    }

    /// `input.requested` for each interrupt of `interrupts` not sent yet;
    /// the first makes the run `interrupted`.
    fn interrupts_in(
        &mut self,
        namespace: &[String],
        interrupts: Option<&Value>,
        out: &mut Vec<Shaped>,
    ) {
        let mut any = false;
        for interrupt in interrupts.and_then(Value::as_array).into_iter().flatten() {
            let Some(id) = interrupt.get("id").and_then(Value::as_str) else {
                continue;
            };
            if !self.interrupts.insert(id.to_owned()) {
                continue;
            }
            let mut data = json!({"interrupt_id": id});
            if let Some(payload) = interrupt.get("value") {
                data["payload"] = payload.clone();
            }
            let event_id = self.synth_id("input", namespace, id);
            self.push_as("input.requested", namespace, data, None, event_id, out);
            any = true;
        }
        if any {
            self.finish("interrupted", None, out);
        }
    }

    /// The root's end, `status`, once: each open subgraph completed first
    /// when the run completed.
    fn finish(&mut self, status: &'static str, error: Option<String>, out: &mut Vec<Shaped>) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        // A run that completed completed its subgraphs; one that paused or
        // failed leaves them as they were (a paused one is resumed inside
        // its subgraph), as LangGraph's session does.
        if status != "completed" {
            self.lifecycle(&[], status, error, out);
            return;
        }
        let open: Vec<Vec<String>> = self
            .namespaces
            .iter()
            .filter(|(ns, status)| !ns.is_empty() && *status == "started")
            .map(|(ns, _)| ns.clone())
            .collect();
        for namespace in open.iter().rev() {
            self.lifecycle(namespace, "completed", None, out);
        }
        self.lifecycle(&[], status, error, out);
    }

    /// `started` for `namespace` and each namespace above it not seen yet.
    fn enter(&mut self, namespace: &[String], out: &mut Vec<Shaped>) {
        for depth in 1..=namespace.len() {
            let prefix = &namespace[..depth];
            if !self.namespaces.iter().any(|(ns, _)| ns == prefix) {
                self.lifecycle(prefix, "started", None, out);
            }
        }
    }

    /// `completed` for the subgraphs node `node` ran in `namespace`
    /// (its write is in, so they are done).
    fn leave_children_of(&mut self, namespace: &[String], node: &str, out: &mut Vec<Shaped>) {
        let done: Vec<Vec<String>> = self
            .namespaces
            .iter()
            .filter(|(ns, status)| {
                *status == "started"
                    && ns.len() > namespace.len()
                    && ns.starts_with(namespace)
                    && ns[namespace.len()].split(':').next() == Some(node)
            })
            .map(|(ns, _)| ns.clone())
            .collect();
        for namespace in done.iter().rev() {
            self.lifecycle(namespace, "completed", None, out);
        }
    }

    /// A lifecycle event for `namespace`, unless it is in that status.
    fn lifecycle(
        &mut self,
        namespace: &[String],
        status: &'static str,
        error: Option<String>,
        out: &mut Vec<Shaped>,
    ) {
        match self.namespaces.iter_mut().find(|(ns, _)| ns == namespace) {
            Some((_, current)) if *current == status => return,
            Some((_, current)) => *current = status,
            None => self.namespaces.push((namespace.to_vec(), status)),
        }
        let graph_name = match namespace.last() {
            None => self.graph_name.clone(),
            Some(segment) => segment.split(':').next().unwrap_or_default().to_owned(),
        };
        let mut data = json!({"event": status, "graph_name": graph_name});
        if let Some(error) = error {
            data["error"] = json!(error);
        }
        let event_id = self.synth_id("lc", namespace, status);
        self.push_as("lifecycle", namespace, data, None, event_id, out);
    }

    /// LangGraph's id for an event only the session makes.
    fn synth_id(&self, kind: &str, namespace: &[String], what: &str) -> String {
        format!(
            "synth:{}:{kind}|{}|{what}",
            self.run_id,
            namespace.join("\0")
        )
    }

    /// An event made from the stored event being shaped.
    fn push(
        &mut self,
        method: &'static str,
        namespace: &[String],
        data: Value,
        node: Option<String>,
        out: &mut Vec<Shaped>,
    ) {
        let (id, made) = &mut self.source;
        *made += 1;
        let event_id = match *made {
            1 => id.clone(),
            n => format!("{id}.{}", n - 1),
        };
        self.push_as(method, namespace, data, node, event_id, out);
    }

    fn push_as(
        &mut self,
        method: &'static str,
        namespace: &[String],
        data: Value,
        node: Option<String>,
        event_id: String,
        out: &mut Vec<Shaped>,
    ) {
        out.push(Shaped {
            method,
            namespace: namespace.to_vec(),
            data,
            node,
            event_id,
            timestamp: self.now,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events a run of stored events `stored` makes, ended `status`.
    fn shaped(stored: &[(&str, Value)], status: RunStatus) -> Vec<Shaped> {
        let (mut shaper, running) = RunShaper::start("r", "g", 1);
        let mut out = vec![running];
        for (n, (name, data)) in stored.iter().enumerate() {
            shaper.shape_stored(name, data, (10, n as u64 + 1), &mut out);
        }
        shaper.end(status, 99, &mut out);
        out
    }

    /// Each event as `method namespace data`, for short assertions (the
    /// data's keys sorted: serde_json keeps their order or not, by the
    /// features a build unifies).
    fn lines(events: &[Shaped]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                let data: std::collections::BTreeMap<String, Value> = match &e.data {
                    Value::Object(map) => map.clone().into_iter().collect(),
                    other => [("".to_owned(), other.clone())].into(),
                };
                let data = serde_json::to_string(&data).unwrap_or_default();
                format!("{} {} {data}", e.method, e.namespace.join("/"))
            })
            .collect()
    }

    #[test]
    fn an_interrupt_is_asked_once_and_pauses_the_run() {
        let interrupt = json!([{"value": {"question": "name?"}, "id": "i1"}]);
        let events = shaped(
            &[
                ("values", json!({"answer": ""})),
                ("updates", json!({"__interrupt__": interrupt})),
                ("values", json!({"answer": "", "__interrupt__": interrupt})),
            ],
            RunStatus::Success,
        );
        assert_eq!(
            lines(&events),
            [
                r#"lifecycle  {"event":"running","graph_name":"g"}"#,
                r#"values  {"answer":""}"#,
                r#"input.requested  {"interrupt_id":"i1","payload":{"question":"name?"}}"#,
                r#"lifecycle  {"event":"interrupted","graph_name":"g"}"#,
                r#"values  {"answer":""}"#,
            ]
        );
        // LangGraph's ids: the stored event's, the session's own.
        assert_eq!(events[0].event_id, "synth:r:lc||running");
        assert_eq!(events[1].event_id, "10-1");
        assert_eq!(events[2].event_id, "synth:r:input||i1");
        assert_eq!(events[4].event_id, "10-3");
        assert_eq!((events[0].timestamp, events[1].timestamp), (1, 10));
    }

    #[test]
    fn a_failed_run_ends_failed_with_its_error() {
        let error = json!({"error": "NodeError", "message": "boom"});
        let events = shaped(&[("error", error)], RunStatus::Error);
        assert_eq!(
            lines(&events)[1..],
            [r#"lifecycle  {"error":"boom","event":"failed","graph_name":"g"}"#]
        );
        let timed_out = shaped(&[], RunStatus::Timeout);
        assert_eq!(timed_out[1].data["error"], "the run timed out");
    }

    #[test]
    fn updates_name_their_node_and_tools_are_told_from_their_messages() {
        let call = json!({"name": "echo", "args": {"text": "hi"}, "id": "c1", "type": "tool_call"});
        let events = shaped(
            &[
                (
                    "updates",
                    json!({"agent": {"messages": [
                    {"type": "ai", "content": "", "id": "a1", "tool_calls": [call]}]}}),
                ),
                (
                    "updates",
                    json!({"tools": {"messages": [
                    {"type": "tool", "content": "echo:hi", "id": "t1", "tool_call_id": "c1",
                     "name": "echo", "status": "success"}]}}),
                ),
                (
                    "updates",
                    json!({"tools": {"messages": [
                    {"type": "tool", "content": "no such tool", "id": "t2", "tool_call_id": "c9",
                     "name": "nope", "status": "error"}]}}),
                ),
                ("custom", json!({"progress": 1})),
            ],
            RunStatus::Success,
        );
        let tools: Vec<&Shaped> = events.iter().filter(|e| e.method == "tools").collect();
        assert_eq!(tools.len(), 4);
        assert_eq!(
            tools[0].data,
            json!({"event": "tool-started", "tool_call_id": "c1", "tool_name": "echo",
                   "input": {"text": "hi"}})
        );
        assert_eq!(tools[1].data["event"], "tool-finished");
        assert_eq!(tools[1].data["output"]["content"], "echo:hi");
        assert_eq!(tools[1].node.as_deref(), Some("tools"));
        // A call not seen: named by its message, no input.
        assert_eq!(tools[2].data["tool_name"], "nope");
        assert_eq!(
            tools[3].data,
            json!({"event": "tool-error", "tool_call_id": "c9", "message": "no such tool"})
        );
        let update = events.iter().find(|e| e.method == "updates").unwrap();
        assert_eq!(update.node.as_deref(), Some("agent"));
        assert_eq!(update.data["messages"][0]["tool_calls"][0]["name"], "echo");
        let custom = events.iter().find(|e| e.method == "custom").unwrap();
        assert_eq!(custom.data, json!({"payload": {"progress": 1}}));
        assert_eq!(events.last().unwrap().data["event"], "completed");
    }

    #[test]
    fn a_models_message_streams_as_content_blocks() {
        let partial = |text: &str| json!([{"type": "AIMessageChunk", "content": text, "id": "m"}]);
        let complete = json!([{"type": "ai", "content": "Hello!", "id": "m",
            "tool_calls": [{"name": "f", "args": {"x": 1}, "id": "c"}],
            "usage_metadata": {"input_tokens": 2, "output_tokens": 3, "total_tokens": 5}}]);
        let events = shaped(
            &[
                (
                    "messages/metadata",
                    json!({"m": {"metadata": {"langgraph_node": "agent"}}}),
                ),
                ("messages/partial", partial("Hel")),
                (
                    "messages/partial",
                    json!([{"type": "ai", "content": "Hel", "id": "m"}]),
                ),
                (
                    "messages/partial",
                    json!([{"type": "ai", "content": "Hello", "id": "m"}]),
                ),
                ("messages/complete", complete),
            ],
            RunStatus::Success,
        );
        let data: Vec<&Value> = events
            .iter()
            .filter(|e| e.method == "messages")
            .map(|e| &e.data)
            .collect();
        let kinds: Vec<&str> = data.iter().map(|d| d["event"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message-start",
                "content-block-start",
                "content-block-delta",
                "content-block-delta",
                "content-block-delta",
                "content-block-finish",
                "content-block-start",
                "content-block-finish",
                "message-finish"
            ]
        );
        assert_eq!(data[0]["metadata"]["langgraph_node"], "agent");
        assert_eq!(data[0]["role"], "ai");
        // Each new piece once (the partial that said nothing new sent none).
        let pieces: Vec<&Value> = data[2..5].iter().map(|d| &d["delta"]["text"]).collect();
        assert_eq!(pieces, [&json!("Hel"), &json!("lo"), &json!("!")]);
        assert_eq!(
            data[5]["content"],
            json!({"type": "text", "text": "Hello!"})
        );
        assert_eq!(
            data[7]["content"],
            json!({"type": "tool_call", "name": "f", "args": {"x": 1}, "id": "c"})
        );
        assert_eq!(data[8]["usage"]["total_tokens"], 5);
    }

    #[test]
    fn an_interrupt_in_a_subgraph_is_asked_there_and_leaves_it_open() {
        let interrupt = json!([{"value": "name?", "id": "i2"}]);
        let events = shaped(
            &[
                ("updates|child:1", json!({"__interrupt__": interrupt})),
                ("updates", json!({"__interrupt__": interrupt})),
            ],
            RunStatus::Success,
        );
        assert_eq!(
            lines(&events),
            [
                r#"lifecycle  {"event":"running","graph_name":"g"}"#,
                r#"lifecycle child:1 {"event":"started","graph_name":"child"}"#,
                r#"input.requested child:1 {"interrupt_id":"i2","payload":"name?"}"#,
                r#"lifecycle  {"event":"interrupted","graph_name":"g"}"#,
            ]
        );
    }

    #[test]
    fn subgraphs_start_and_complete_and_checkpoints_are_sent_once() {
        let checkpoint = json!({"config": {"configurable": {"checkpoint_id": "c2"}},
            "parent_config": {"configurable": {"checkpoint_id": "c1"}},
            "metadata": {"step": 1, "source": "loop"}});
        let events = shaped(
            &[
                ("values|child:1|inner:2", json!({"n": 1})),
                ("checkpoints", checkpoint.clone()),
                ("checkpoints", checkpoint),
                ("updates|child:1", json!({"inner": {"n": 2}})),
                ("updates", json!({"child": {"n": 2}})),
                ("values|other:3", json!({"n": 3})),
            ],
            RunStatus::Success,
        );
        assert_eq!(
            lines(&events),
            [
                r#"lifecycle  {"event":"running","graph_name":"g"}"#,
                r#"lifecycle child:1 {"event":"started","graph_name":"child"}"#,
                r#"lifecycle child:1/inner:2 {"event":"started","graph_name":"inner"}"#,
                r#"values child:1/inner:2 {"n":1}"#,
                r#"checkpoints  {"id":"c2","parent_id":"c1","source":"loop","step":1}"#,
                r#"updates child:1 {"n":2}"#,
                r#"lifecycle child:1/inner:2 {"event":"completed","graph_name":"inner"}"#,
                r#"updates  {"n":2}"#,
                r#"lifecycle child:1 {"event":"completed","graph_name":"child"}"#,
                r#"lifecycle other:3 {"event":"started","graph_name":"other"}"#,
                r#"values other:3 {"n":3}"#,
                r#"lifecycle other:3 {"event":"completed","graph_name":"other"}"#,
                r#"lifecycle  {"event":"completed","graph_name":"g"}"#,
            ]
        );
    }
}
