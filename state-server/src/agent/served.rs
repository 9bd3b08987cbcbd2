//! [`Served`]: a compiled graph behind plain JSON in and out, so that the
//! server holds graphs of any state type side by side (one table of
//! boxed functions per graph, made once when it is given to the server).

use super::run_events::RunContext;
use super::run_options::RunBreakpoints;
use super::step_events::{StepEvents, Wanted};
use super::{checkpoint, thread_state};
use crate::error::ApiError;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::{Map, Value, json};
use state_graph::{CompiledGraph, Event, GraphError, GraphState, Interrupt, Resume, StreamMode};
use state_store::{Durability, Store};
use std::collections::VecDeque;
use std::sync::Arc;

/// Decodes a run's JSON context into the graph's `C` (an error names the
/// field and what was expected).
pub(crate) type Decode<C> = Arc<dyn Fn(Value) -> Result<C, String> + Send + Sync>;

/// What a run asks of its graph (from `RunCreateStateful`).
#[derive(Debug, Clone, Default)]
pub(crate) struct RunRequest {
    /// The input, a delta's JSON; none with a command or to go on.
    pub input: Option<Value>,
    /// `command.resume`: the answer to the pending interrupt (or a map of
    /// interrupt id to answer).
    pub resume: Option<Value>,
    /// The stream modes asked for, checked (`stream_mode::modes`).
    pub modes: Vec<String>,
    /// `stream_subgraphs`: events from inside subgraphs too, their names
    /// `<mode>|<namespace>`.
    pub subgraphs: bool,
    /// The run's context (its own merged over its assistant's), for the
    /// graph's typed context; none: the context bound in code.
    pub graph_context: Option<Map<String, Value>>,
    /// The run's own breakpoints (`interrupt_before`, `interrupt_after`).
    pub breakpoints: RunBreakpoints,
    /// The step it starts from, when not its thread's latest
    /// (`config.configurable.checkpoint_id`): the thread is branched back
    /// there first (`CompiledGraph::with_checkpoint`).
    pub checkpoint: Option<u64>,
    /// When its supersteps are durable (`durability`: `"sync"`, or
    /// `"async"`, LangGraph's default, which `"exit"` is here too; see
    /// `CompiledGraph::with_durability`).
    pub durability: Durability,
    /// Who and what the run is (the `events` mode's metadata).
    pub context: RunContext,
    /// Whether a wait of this process asks for the run's result: it comes
    /// as [`Streamed::Result`] before the end.
    pub result: bool,
}

/// What a run streams: events under the Agent Server's names, then how it
/// ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Streamed {
    /// An event: its SSE name and data.
    Event(String, Value),
    /// The run's result, when [`RunRequest::result`] asks for it: the
    /// state's values, with the pending interrupts under `__interrupt__`
    /// when it paused at any (what a wait answers).
    Result(Value),
    /// The run paused at interrupts.
    Paused,
    /// The run reached its end.
    Done,
}

/// The modes a run streams: every one the Agent Server names.
pub(crate) const RUN_MODES: [&str; 9] = [
    "values",
    "updates",
    "custom",
    "messages-tuple",
    "messages",
    "tasks",
    "checkpoints",
    "debug",
    "events",
];

/// What the Agent Server's thread routes ask of a graph, in JSON.
pub(crate) trait Served: Send + Sync {
    /// The thread's state (`ThreadState`) after step `at`, or its latest.
    fn state(&self, thread: String, at: Option<u64>)
    -> BoxFuture<'static, Result<Value, ApiError>>;

    /// Up to `limit` states, newest first, from before step `before`,
    /// whose metadata contains `filter`.
    fn history(
        &self,
        thread: String,
        limit: usize,
        before: Option<u64>,
        filter: Option<Value>,
    ) -> BoxFuture<'static, Result<Vec<Value>, ApiError>>;

    /// Applies `values` (a delta's JSON) as written by `as_node`; the
    /// step's seq.
    fn update_state(
        &self,
        thread: String,
        values: Value,
        as_node: Option<String>,
        checkpoint: Option<u64>,
    ) -> BoxFuture<'static, Result<u64, ApiError>>;

    /// Whether a run with `context` can start: it decodes into the graph's
    /// context type, or is empty (the context bound in code). Checked
    /// before a run is created, so a bad one writes nothing.
    fn check_context(&self, context: &Map<String, Value>) -> Result<(), ApiError>;

    /// Whether a run's breakpoints name nodes of the graph (checked before
    /// the run is created, as its context).
    fn check_breakpoints(&self, breakpoints: &RunBreakpoints) -> Result<(), ApiError>;

    /// Runs the graph on `thread`, streaming what `request` asks for (a
    /// stateless run gets a thread of its own, as LangGraph's).
    fn run(
        &self,
        thread: String,
        request: RunRequest,
    ) -> BoxStream<'static, Result<Streamed, ApiError>>;
}

/// `graph`, run on `store`, its runs' contexts decoded by `decode` (none:
/// a run cannot give one).
pub(crate) fn serve<S, C>(
    graph: CompiledGraph<S, C>,
    decode: Option<Decode<C>>,
    store: Store,
) -> impl Served
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    Graph(graph.with_store(store.clone()), store, decode)
}

/// A graph, run on its store (which the step-made stream modes read),
/// with its runs' context decoder.
struct Graph<S: GraphState, C>(CompiledGraph<S, C>, Store, Option<Decode<C>>);

impl<S: GraphState, C: Send + Sync + 'static> Clone for Graph<S, C> {
    fn clone(&self) -> Self {
        Graph(self.0.clone(), self.1.clone(), self.2.clone())
    }
}

impl<S, C> Graph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// The graph with a run's context bound: decoded from `context` when
    /// it has keys; when it has none, the context bound in code, or else
    /// `{}` decoded (a context type whose fields all have defaults).
    fn bound(&self, context: Option<&Map<String, Value>>) -> Result<CompiledGraph<S, C>, ApiError> {
        let given = context.filter(|c| !c.is_empty());
        match (&self.2, given) {
            (None, None) => Ok(self.0.clone()),
            (None, Some(_)) => Err(ApiError::invalid_body(
                "context: this graph takes no context from a run: it is served with its \
                 context bound in code (serve it as `ServedGraph::new(graph).context_from_json()` \
                 for a run's context to reach it)",
            )),
            (Some(_), None) if self.0.has_context() => Ok(self.0.clone()),
            (Some(decode), given) => {
                let json = Value::Object(given.cloned().unwrap_or_default());
                let context = decode(json).map_err(ApiError::invalid_body)?;
                Ok(self.0.with_context(context))
            }
        }
    }
}

impl<S, C> Served for Graph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    fn check_context(&self, context: &Map<String, Value>) -> Result<(), ApiError> {
        self.bound(Some(context)).map(|_| ())
    }

    fn check_breakpoints(&self, breakpoints: &RunBreakpoints) -> Result<(), ApiError> {
        with_breakpoints(self.0.clone(), breakpoints).map(|_| ())
    }

    fn state(
        &self,
        thread: String,
        at: Option<u64>,
    ) -> BoxFuture<'static, Result<Value, ApiError>> {
        let graph = self.0.clone();
        Box::pin(async move {
            let snapshot = match at {
                None => graph.get_state(&thread).await.map_err(ApiError::graph)?,
                Some(seq) => graph
                    .get_state_history(&thread)
                    .before(seq.saturating_add(1))
                    .limit(1)
                    .await
                    .map_err(ApiError::graph)?
                    .pop()
                    .filter(|snapshot| snapshot.seq() == seq)
                    .ok_or_else(|| {
                        ApiError::missing(format!("Checkpoint {} not found", checkpoint::id(seq)))
                    })?,
            };
            thread_state::to_json(&snapshot, &thread)
        })
    }

    fn history(
        &self,
        thread: String,
        limit: usize,
        before: Option<u64>,
        filter: Option<Value>,
    ) -> BoxFuture<'static, Result<Vec<Value>, ApiError>> {
        let graph = self.0.clone();
        Box::pin(async move {
            let mut history = graph.get_state_history(&thread).limit(limit);
            if let Some(seq) = before {
                history = history.before(seq);
            }
            if let Some(filter) = filter {
                history = history.filter(filter);
            }
            let snapshots = history.await.map_err(ApiError::graph)?;
            snapshots
                .iter()
                .map(|snapshot| thread_state::to_json(snapshot, &thread))
                .collect()
        })
    }

    fn update_state(
        &self,
        thread: String,
        values: Value,
        as_node: Option<String>,
        checkpoint: Option<u64>,
    ) -> BoxFuture<'static, Result<u64, ApiError>> {
        let graph = match checkpoint {
            Some(seq) => self.0.with_checkpoint(seq),
            None => self.0.clone(),
        };
        Box::pin(async move {
            let delta = <S::Delta as state_core::Delta>::from_json(values)
                .map_err(|error| ApiError::invalid_body(format!("values: {error}")))?;
            graph
                .update_state(&thread, delta, as_node.as_deref())
                .await
                .map_err(|error| match error {
                    GraphError::UnknownNode { node, .. } => {
                        ApiError::invalid_body(format!("as_node: no node \"{node}\" in this graph"))
                    }
                    other => ApiError::graph(other),
                })
        })
    }

    fn run(
        &self,
        thread: String,
        request: RunRequest,
    ) -> BoxStream<'static, Result<Streamed, ApiError>> {
        let graph = self.clone();
        let started = async move {
            let wanted = Wanted::of(&request.modes);
            let fail = |error| futures::stream::iter(vec![Err(error)]).boxed();
            let mut opening = Vec::new();
            let steps = if wanted.steps() || wanted.messages {
                let served = Box::new(graph.clone());
                let context = &request.context;
                match StepEvents::start(wanted, graph.1.clone(), served, thread.clone(), context)
                    .await
                {
                    Ok(mut steps) => match steps.opening(&request).await {
                        Ok(list) => {
                            opening = list;
                            Some(steps)
                        }
                        Err(error) => return fail(error),
                    },
                    Err(error) => return fail(error),
                }
            } else {
                None
            };
            let base = request.context.metadata(&thread);
            let events = match graph.start(thread, &request).await {
                Ok(events) => events,
                Err(error) => return fail(error),
            };
            let queue: VecDeque<_> = opening.into_iter().map(Ok).collect();
            let start = (events, steps, request, queue, base);
            futures::stream::unfold(
                start,
                |(mut events, mut steps, request, mut queue, base)| async move {
                    loop {
                        if let Some(item) = queue.pop_front() {
                            return Some((item, (events, steps, request, queue, base)));
                        }
                        match events.next().await? {
                            Ok(event) => {
                                // The graph's end (`events`), before the
                                // run says how it ended.
                                let closing = match (&event, steps.as_mut()) {
                                    (Event::End(outcome), Some(steps)) => {
                                        match outcome.state().to_json() {
                                            Ok(output) => steps.closing(output),
                                            Err(error) => {
                                                queue.push_back(Err(ApiError::unwritable(
                                                    error.to_string(),
                                                )));
                                                None
                                            }
                                        }
                                    }
                                    _ => None,
                                };
                                if let Some(steps) = steps.as_mut() {
                                    match steps.on(&event).await {
                                        Ok(list) => queue.extend(list.into_iter().map(Ok)),
                                        Err(error) => queue.push_back(Err(error)),
                                    }
                                }
                                match translate(event, &request, &base) {
                                    Ok(mut list) => {
                                        if let Some(closing) = closing {
                                            let at = list.len().saturating_sub(1);
                                            list.insert(at, closing);
                                        }
                                        queue.extend(list.into_iter().map(Ok));
                                    }
                                    Err(error) => queue.push_back(Err(error)),
                                }
                                if let Some(steps) = steps.as_mut() {
                                    queue.extend(steps.take_after().into_iter().map(Ok));
                                }
                            }
                            Err(error) => queue.push_back(Err(ApiError::graph(error))),
                        }
                    }
                },
            )
            .boxed()
        };
        futures::stream::once(started).flatten().boxed()
    }
}

/// The graph's stream modes for the Agent Server's.
fn stream_mode(request: &RunRequest) -> Result<StreamMode, ApiError> {
    let mut modes = StreamMode::UPDATES; // interrupts arrive as updates
    for mode in &request.modes {
        modes = modes
            | match mode.as_str() {
                "values" => StreamMode::VALUES,
                "updates" => StreamMode::UPDATES,
                "custom" => StreamMode::CUSTOM,
                "messages-tuple" | "messages" => StreamMode::MESSAGES,
                // Made from the steps (`step_events.rs`).
                "tasks" | "checkpoints" | "debug" => StreamMode::VALUES | StreamMode::UPDATES,
                // Made from the steps, the tokens and the subgraphs' steps
                // (`run_events.rs`).
                "events" => {
                    StreamMode::VALUES
                        | StreamMode::UPDATES
                        | StreamMode::MESSAGES
                        | StreamMode::SUBGRAPHS
                }
                other => {
                    return Err(ApiError::invalid_body(format!(
                        "stream_mode: \"{other}\" is not one of {RUN_MODES:?}"
                    )));
                }
            };
    }
    if request.subgraphs {
        modes = modes | StreamMode::SUBGRAPHS;
    }
    Ok(modes)
}

/// One interrupt as the Agent Server sends it in a stream or a wait's
/// `__interrupt__`.
pub(crate) fn interrupt_json(id: &impl serde::Serialize, value: &Value) -> Value {
    json!({"value": value, "id": id, "response_schema": null})
}

/// What a wait answers for a thread's `state` (a `ThreadState`): its
/// values, with its pending interrupts under `__interrupt__` when there
/// are any. (A run's worker makes the same from its graph's end:
/// [`Streamed::Result`].)
pub(crate) fn wait_answer(state: &Value) -> Value {
    let mut values = state["values"].clone();
    let pending: Vec<Value> = state["interrupts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| interrupt_json(&i["id"], &i["value"]))
        .collect();
    if let (Value::Object(map), false) = (&mut values, pending.is_empty()) {
        map.insert("__interrupt__".into(), Value::Array(pending));
    }
    values
}

/// Interrupts as the Agent Server streams them.
fn interrupts_json(list: &[Interrupt]) -> Value {
    Value::Array(
        list.iter()
            .map(|i| interrupt_json(&i.id, &i.value))
            .collect(),
    )
}

/// The state a run ended with, its pending interrupts under
/// `__interrupt__`: always (`values` at a pause, an empty list at a
/// breakpoint), or only when there are any (a wait's answer).
fn with_interrupts<S: GraphState>(
    outcome: &state_graph::Outcome<S>,
    always: bool,
) -> Result<Value, ApiError> {
    let mut values = outcome
        .state()
        .to_json()
        .map_err(|error| ApiError::unwritable(error.to_string()))?;
    if let (Value::Object(map), true) = (&mut values, always || !outcome.interrupts().is_empty()) {
        map.insert(
            "__interrupt__".into(),
            interrupts_json(outcome.interrupts()),
        );
    }
    Ok(values)
}

/// How the graph's events become the Agent Server's: the modes asked for
/// by name (`messages-tuple` as `messages`), a subgraph's as
/// `<mode>|<namespace>`; at a pause, `updates` carries the interrupts and
/// `values` the state with them under `__interrupt__`, as LangGraph's; a
/// message's metadata has the run's `base` keys too (its ids, graph,
/// attempt), under the node's own.
fn translate<S: GraphState>(
    event: Event<S>,
    request: &RunRequest,
    base: &Map<String, Value>,
) -> Result<Vec<Streamed>, ApiError> {
    let wants = |mode: &str| request.modes.iter().any(|m| m == mode);
    let encode = |error: state_core::StateError| ApiError::unwritable(error.to_string());
    // A subgraph's events, asked for by `events` alone.
    if !request.subgraphs && !event.namespace().is_empty() {
        return Ok(Vec::new());
    }
    Ok(match event {
        Event::End(outcome) => {
            let mut out = Vec::new();
            if request.result {
                // What `wait_answer` makes of the thread's state.
                out.push(Streamed::Result(with_interrupts(&outcome, false)?));
            }
            if !outcome.is_interrupted() {
                out.push(Streamed::Done);
                return Ok(out);
            }
            if wants("values") {
                out.push(Streamed::Event(
                    "values".into(),
                    with_interrupts(&outcome, true)?,
                ));
            }
            out.push(Streamed::Paused);
            out
        }
        Event::Interrupt(list) => {
            if !wants("updates") {
                return Ok(Vec::new());
            }
            // With subgraphs, a subgraph's interrupts come first in its
            // namespace, then all of them in the parent's, as LangGraph's
            // `stream(subgraphs=True)` sends them.
            let mut out = Vec::new();
            if request.subgraphs {
                let mut spaces: Vec<&Vec<String>> = Vec::new();
                for interrupt in list.iter().filter(|i| !i.namespace.is_empty()) {
                    if !spaces.contains(&&interrupt.namespace) {
                        spaces.push(&interrupt.namespace);
                    }
                }
                for space in spaces {
                    let inside: Vec<Interrupt> = list
                        .iter()
                        .filter(|i| &i.namespace == space)
                        .cloned()
                        .collect();
                    let name = format!("updates|{}", space.join("|"));
                    let data = json!({"__interrupt__": interrupts_json(&inside)});
                    out.push(Streamed::Event(name, data));
                }
            }
            let data = json!({"__interrupt__": interrupts_json(&list)});
            out.push(Streamed::Event("updates".into(), data));
            out
        }
        event => {
            let asked = match event.mode() {
                "messages" => "messages-tuple",
                mode => mode,
            };
            if !wants(asked) {
                return Ok(Vec::new());
            }
            let mut name = event.mode().to_owned();
            for segment in event.namespace() {
                name.push('|');
                name.push_str(segment);
            }
            let mut data = event.data().map_err(encode)?;
            if asked == "messages-tuple"
                && let Some(Value::Object(metadata)) = data.get_mut(1)
            {
                let mut merged = base.clone();
                merged.append(metadata);
                *metadata = merged;
            }
            vec![Streamed::Event(name, data)]
        }
    })
}

/// `graph` with a run's own breakpoints; a name that is not a node is the
/// field's 422.
fn with_breakpoints<S, C>(
    mut graph: CompiledGraph<S, C>,
    breakpoints: &RunBreakpoints,
) -> Result<CompiledGraph<S, C>, ApiError>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    let named = |field: &'static str| {
        move |error: GraphError| match error {
            GraphError::UnknownNode { node, .. } => {
                ApiError::invalid_body(format!("{field}: no node \"{node}\" in this graph"))
            }
            other => ApiError::graph(other),
        }
    };
    if let Some(nodes) = &breakpoints.before {
        graph = graph
            .with_interrupt_before(nodes)
            .map_err(named("interrupt_before"))?;
    }
    if let Some(nodes) = &breakpoints.after {
        graph = graph
            .with_interrupt_after(nodes)
            .map_err(named("interrupt_after"))?;
    }
    Ok(graph)
}

/// `command.resume` as the graph's answer: a map whose keys are all ids
/// of pending interrupts answers each by id (LangGraph's
/// `Command(resume={id: value})`); anything else answers the one pending.
fn resume_of(value: Value, pending: &[Interrupt]) -> Resume {
    match &value {
        Value::Object(map)
            if !map.is_empty() && map.keys().all(|k| pending.iter().any(|i| &i.id == k)) =>
        {
            Resume::by_id(map.clone())
        }
        _ => Resume::from(value),
    }
}

impl<S, C> Graph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// The graph's event stream for `request`.
    async fn start(
        &self,
        thread: String,
        request: &RunRequest,
    ) -> Result<state_graph::RunStream<S>, ApiError> {
        let modes = stream_mode(request)?;
        let delta = |input: Value| {
            <S::Delta as state_core::Delta>::from_json(input)
                .map_err(|error| ApiError::invalid_body(format!("input: {error}")))
        };
        let mut graph = with_breakpoints(
            self.bound(request.graph_context.as_ref())?,
            &request.breakpoints,
        )?;
        if let Some(seq) = request.checkpoint {
            graph = graph.with_checkpoint(seq);
        }
        // The modes made from the steps read each one back from the store
        // as it is streamed: committed before the next superstep.
        let durability = match super::step_events::Wanted::of(&request.modes).steps() {
            true => Durability::Sync,
            false => request.durability,
        };
        let graph = &graph.with_durability(durability);
        Ok(match (request.resume.clone(), request.input.clone()) {
            (Some(answer), _) => {
                let pending = graph
                    .pending_interrupts(&thread)
                    .await
                    .map_err(ApiError::graph)?;
                graph.stream_resume(&thread, resume_of(answer, &pending), modes)
            }
            (None, Some(input)) => graph.stream_thread(&thread, delta(input)?, modes),
            (None, None) => graph.stream_continue(&thread, modes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use state_core::{AgentState, Messages, State};
    use state_graph::{END, START, StateGraph};

    #[derive(AgentState, Debug, Clone, PartialEq)]
    struct Chat {
        #[reducer(add_messages)]
        messages: Messages,
        turns: u32,
    }

    fn graph() -> CompiledGraph<Chat> {
        let mut g = StateGraph::<Chat>::new();
        g.add_node("agent", |s: &Chat| Chat::delta().turns(s.turns + 1));
        g.add_node("tools", |s: &Chat| Chat::delta().turns(s.turns + 1));
        g.add_edge(START, "agent");
        g.add_edge("agent", "tools");
        g.add_edge("tools", END);
        g.compile().expect("compiles")
    }

    #[derive(AgentState, Debug, Clone, PartialEq)]
    struct Ask {
        answer: String,
        done: bool,
    }

    fn hitl() -> CompiledGraph<Ask> {
        let mut g = StateGraph::<Ask>::new();
        g.add_node("ask", |_: &Ask, ctx: &state_graph::Ctx| {
            let answer = ctx.interrupt(json!({"question": "name?"}))?;
            Ok::<_, state_graph::NodeError>(
                Ask::delta().answer(answer.as_str().unwrap_or("").to_owned()),
            )
        });
        g.add_node("finish", |_: &Ask| Ask::delta().done(true));
        g.add_edge(START, "ask");
        g.add_edge("ask", "finish");
        g.add_edge("finish", END);
        g.compile().expect("compiles")
    }

    async fn collect(stream: BoxStream<'static, Result<Streamed, ApiError>>) -> Vec<Streamed> {
        stream
            .map(|item| item.unwrap_or_else(|e| panic!("{}", e.message())))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_subgraphs_interrupt_comes_in_its_namespace_then_the_parents() {
        let mut parent = StateGraph::<Ask>::new();
        parent.add_subgraph("inner", hitl());
        parent.add_edge(START, "inner");
        parent.add_edge("inner", END);
        let served = serve(parent.compile().expect("compiles"), None, Store::memory());
        let request = RunRequest {
            input: Some(json!({})),
            modes: vec!["updates".into()],
            subgraphs: true,
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), request.clone())).await;
        let asked: Vec<(&str, &Value)> = events
            .iter()
            .filter_map(|event| match event {
                Streamed::Event(name, data) if data.get("__interrupt__").is_some() => {
                    Some((name.as_str(), &data["__interrupt__"][0]["id"]))
                }
                _ => None,
            })
            .collect();
        assert_eq!(asked.len(), 2, "{events:?}");
        assert!(asked[0].0.starts_with("updates|inner:"), "{asked:?}");
        assert_eq!(asked[1].0, "updates");
        assert_eq!(asked[0].1, asked[1].1);
        // Without subgraphs, the parent's alone.
        let plain = RunRequest {
            subgraphs: false,
            ..request
        };
        let events = collect(served.run("u".into(), plain)).await;
        let names: Vec<&str> = events
            .iter()
            .filter_map(|event| match event {
                Streamed::Event(name, _) => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["updates"], "{events:?}");
    }

    /// The result a run's worker hands to a wait (`Streamed::Result`):
    /// what the wait would answer from the thread read back, at a pause
    /// (inside a subgraph too), at a breakpoint and at the end.
    #[tokio::test]
    async fn a_runs_result_is_what_a_wait_reads_back() {
        let mut parent = StateGraph::<Ask>::new();
        parent.add_subgraph("inner", hitl());
        parent.add_node("check", |_: &Ask| Ask::delta().done(true));
        parent.add_edge(START, "inner");
        parent.add_edge("inner", "check");
        parent.add_edge("check", END);
        let nested = parent.compile().expect("compiles");
        let cases: Vec<(Box<dyn Served>, RunRequest, &str)> = vec![
            (
                Box::new(serve(hitl(), None, Store::memory())),
                RunRequest::default(),
                "a pause",
            ),
            (
                Box::new(serve(nested, None, Store::memory())),
                RunRequest::default(),
                "a pause in a subgraph",
            ),
            (
                Box::new(serve(graph(), None, Store::memory())),
                RunRequest {
                    breakpoints: RunBreakpoints {
                        before: Some(vec!["tools".into()]),
                        after: None,
                    },
                    ..RunRequest::default()
                },
                "a breakpoint",
            ),
        ];
        for (served, request, case) in cases {
            let first = RunRequest {
                input: Some(json!({})),
                modes: vec!["values".into()],
                result: true,
                ..request
            };
            let then = RunRequest {
                resume: (case != "a breakpoint").then(|| json!("Ada")),
                modes: vec!["updates".into()],
                result: true,
                ..RunRequest::default()
            };
            for (step, request) in [("paused", first), ("ended", then)] {
                let events = collect(served.run(format!("t-{case}"), request)).await;
                let results: Vec<&Value> = events
                    .iter()
                    .filter_map(|e| match e {
                        Streamed::Result(value) => Some(value),
                        _ => None,
                    })
                    .collect();
                let state = served
                    .state(format!("t-{case}"), None)
                    .await
                    .expect("a state");
                assert_eq!(
                    results,
                    [&wait_answer(&state)],
                    "{case}, {step}: {events:?}"
                );
                let paused = results[0].get("__interrupt__").is_some();
                assert_eq!(
                    paused,
                    step == "paused" && case != "a breakpoint",
                    "{case}, {step}"
                );
            }
        }
        // Not asked for, none.
        let served = serve(graph(), None, Store::memory());
        let request = RunRequest {
            input: Some(json!({})),
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), request)).await;
        assert!(
            !events.iter().any(|e| matches!(e, Streamed::Result(_))),
            "{events:?}"
        );
    }

    #[tokio::test]
    async fn a_run_streams_the_agent_servers_events_and_pauses() {
        let served = serve(hitl(), None, Store::memory());
        let request = RunRequest {
            input: Some(json!({})),
            modes: vec!["updates".into(), "values".into()],
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), request.clone())).await;
        assert_eq!(events.last(), Some(&Streamed::Paused), "{events:?}");
        let Some(Streamed::Event(name, update)) = events
            .iter()
            .find(|e| matches!(e, Streamed::Event(n, _) if n == "updates"))
        else {
            panic!("no updates event: {events:?}");
        };
        assert_eq!(name, "updates");
        let interrupt = &update["__interrupt__"][0];
        assert_eq!(interrupt["value"], json!({"question": "name?"}));
        assert_eq!(interrupt["response_schema"], json!(null));
        let Streamed::Event(_, values) = &events[events.len() - 2] else {
            panic!("{events:?}");
        };
        assert_eq!(values["__interrupt__"][0]["id"], interrupt["id"]);
        assert_eq!(values["done"], json!(false));

        let resume = RunRequest {
            resume: Some(json!("Bob")),
            modes: vec!["updates".into()],
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), resume)).await;
        assert_eq!(
            events,
            vec![
                Streamed::Event("updates".into(), json!({"ask": {"answer": "Bob"}})),
                Streamed::Event("updates".into(), json!({"finish": {"done": true}})),
                Streamed::Done,
            ]
        );

        let bad = served
            .run(
                "u".into(),
                RunRequest {
                    input: Some(json!({"done": "yes"})),
                    ..RunRequest::default()
                },
            )
            .next()
            .await
            .expect("an item")
            .unwrap_err();
        assert!(bad.message().starts_with("input: "), "{}", bad.message());
    }

    /// (event, name) of each `events` event, and the others by name.
    fn kinds(events: &[Streamed]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                Streamed::Event(name, data) if name == "events" => format!(
                    "{} {}",
                    data["event"].as_str().unwrap_or_default(),
                    data["name"].as_str().unwrap_or_default()
                ),
                Streamed::Event(name, _) => name.clone(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[tokio::test]
    async fn events_pause_without_the_tasks_end_and_resume_it() {
        let served = serve(hitl(), None, Store::memory());
        let context = RunContext {
            run_id: "r1".into(),
            graph_id: "hitl".into(),
            ..RunContext::default()
        };
        let request = RunRequest {
            input: Some(json!({})),
            modes: vec!["events".into(), "updates".into()],
            context: context.clone(),
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), request)).await;
        assert_eq!(
            kinds(&events),
            [
                "on_chain_start hitl",
                "on_chain_start ask",
                "updates",
                "on_chain_end hitl",
                "Paused"
            ]
        );
        let Streamed::Event(_, end) = &events[3] else {
            unreachable!()
        };
        assert_eq!(end["data"]["output"], json!({"answer": "", "done": false}));
        assert_eq!(end["run_id"], json!("r1"));

        let resume = RunRequest {
            resume: Some(json!("Bob")),
            modes: vec!["events".into()],
            context: RunContext {
                run_id: "r2".into(),
                ..context
            },
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), resume)).await;
        assert_eq!(
            kinds(&events),
            [
                "on_chain_start hitl",
                "on_chain_start ask",
                "on_chain_stream ask",
                "on_chain_end ask",
                "on_chain_start finish",
                "on_chain_stream finish",
                "on_chain_end finish",
                "on_chain_end hitl",
                "Done"
            ]
        );
        let Streamed::Event(_, start) = &events[0] else {
            unreachable!()
        };
        assert_eq!(start["data"]["input"]["resume"], json!("Bob"));
        let Streamed::Event(_, ask) = &events[3] else {
            unreachable!()
        };
        assert_eq!(ask["data"]["output"], json!({"answer": "Bob"}));
        assert_eq!(ask["parent_ids"], json!(["r2"]));
        let Streamed::Event(_, finish) = &events[4] else {
            unreachable!()
        };
        let (ask_step, finish_step) = (
            ask["metadata"]["langgraph_step"].as_u64().unwrap(),
            finish["metadata"]["langgraph_step"].as_u64().unwrap(),
        );
        assert_eq!(finish_step, ask_step + 1);
        assert_eq!(finish["data"]["input"]["answer"], json!("Bob"));
    }

    #[tokio::test]
    async fn a_subgraphs_nodes_are_events_inside_its_task_with_or_without_stream_subgraphs() {
        let mut inner = StateGraph::<Chat>::new();
        inner.add_node("leaf", |s: &Chat| Chat::delta().turns(s.turns + 10));
        inner.add_edge(START, "leaf");
        inner.add_edge("leaf", END);
        let mut outer = StateGraph::<Chat>::new();
        outer.add_subgraph("inner", inner.compile().expect("compiles"));
        outer.add_edge(START, "inner");
        outer.add_edge("inner", END);
        let served = serve(outer.compile().expect("compiles"), None, Store::memory());
        for (thread, subgraphs) in [("a", false), ("b", true)] {
            let request = RunRequest {
                input: Some(json!({})),
                modes: vec!["events".into(), "updates".into()],
                subgraphs,
                context: RunContext {
                    run_id: "r".into(),
                    graph_id: "outer".into(),
                    ..RunContext::default()
                },
                ..RunRequest::default()
            };
            let events = collect(served.run(thread.into(), request)).await;
            let mut expected = vec![
                "on_chain_start outer",
                "on_chain_start inner",
                "on_chain_start leaf",
                "on_chain_stream leaf",
                "on_chain_end leaf",
                "on_chain_stream inner",
                "on_chain_end inner",
                "updates",
                "on_chain_end outer",
                "Done",
            ];
            if subgraphs {
                // The subgraph's own update, named by its namespace.
                expected.insert(5, "updates|inner");
            }
            let kinds = kinds(&events);
            assert_eq!(kinds.len(), expected.len(), "{kinds:?}");
            for (kind, expected) in kinds.iter().zip(&expected) {
                assert!(kind.starts_with(expected), "{kinds:?}");
            }
            let Streamed::Event(_, inner) = &events[1] else {
                unreachable!()
            };
            let Streamed::Event(_, leaf) = &events[4] else {
                unreachable!()
            };
            assert_eq!(leaf["parent_ids"], json!(["r", inner["run_id"]]));
            assert_eq!(leaf["data"]["output"], json!({"turns": 10}));
        }
    }

    #[tokio::test]
    async fn states_history_and_edits_are_langgraphs_thread_states() {
        let store = Store::memory();
        let app = graph().with_store(store.clone());
        app.invoke_thread(
            "t",
            Chat::delta().messages(vec![state_core::Message::human("hi")]),
        )
        .await
        .expect("runs");
        let served = serve(graph(), None, store);

        let latest = served.state("t".into(), None).await.expect("the state");
        assert_eq!(latest["values"]["turns"], json!(2));
        assert_eq!(latest["next"], json!([]));
        assert_eq!(latest["checkpoint"]["thread_id"], json!("t"));
        let seq = checkpoint::parse(latest["checkpoint_id"].as_str().unwrap()).unwrap();
        assert_eq!(latest["metadata"]["step"], json!(seq));
        assert_eq!(
            latest["parent_checkpoint_id"],
            json!(checkpoint::id(seq - 1))
        );

        let earlier = served
            .state("t".into(), Some(seq - 1))
            .await
            .expect("a checkpoint");
        assert_eq!(earlier["values"]["turns"], json!(1));
        assert_eq!(earlier["next"], json!(["tools"]));
        assert_eq!(earlier["tasks"][0]["name"], json!("tools"));
        assert_eq!(
            earlier["tasks"][0]["path"],
            json!(["__pregel_pull", "tools"])
        );
        let missing = served.state("t".into(), Some(seq + 5)).await.unwrap_err();
        assert_eq!(missing.status(), 404);

        let history = served
            .history("t".into(), 10, None, None)
            .await
            .expect("history");
        assert_eq!(history.len() as u64, seq);
        assert_eq!(history[0], latest);
        assert_eq!(history[1], earlier);
        let older = served
            .history("t".into(), 1, Some(seq), None)
            .await
            .expect("history");
        assert_eq!(older, vec![earlier]);

        let edited = served
            .update_state(
                "t".into(),
                json!({"messages": [{"role": "user", "content": "more"}]}),
                Some("agent".into()),
                None,
            )
            .await
            .expect("an edit");
        assert_eq!(edited, seq + 1);
        let after = served.state("t".into(), None).await.expect("the state");
        assert_eq!(after["values"]["messages"][1]["content"], json!("more"));
        assert_eq!(after["values"]["messages"][1]["type"], json!("human"));
        assert_eq!(after["next"], json!(["tools"]));

        let bad = served
            .update_state("t".into(), json!({"turns": "many"}), None, None)
            .await
            .unwrap_err();
        assert_eq!(bad.status(), 422);
        assert!(bad.message().starts_with("values: "), "{}", bad.message());
        let unknown = served
            .update_state("t".into(), json!({}), Some("nope".into()), None)
            .await
            .unwrap_err();
        assert_eq!(unknown.message(), "as_node: no node \"nope\" in this graph");
        assert_eq!(
            served.state("t".into(), None).await.expect("the state"),
            after,
            "a refused edit changes nothing"
        );
    }

    #[derive(serde::Deserialize)]
    struct Visitor {
        name: String,
    }

    #[tokio::test]
    async fn a_runs_json_context_reaches_the_node_or_is_refused_by_name() {
        let mut g = StateGraph::<Ask, Visitor>::new();
        g.add_node("greet", |_: &Ask, ctx: &state_graph::Ctx<Visitor>| {
            Ask::delta().answer(ctx.context().name.clone())
        });
        g.add_edge(START, "greet");
        g.add_edge("greet", END);
        let graph = g.compile().expect("compiles");
        let served = super::super::ServedGraph::new(graph.clone()).context_from_json();
        let served = serve(served.graph, served.decode, Store::memory());
        let context = |v: Value| v.as_object().cloned().expect("an object");
        assert!(
            served
                .check_context(&context(json!({"name": "Ada"})))
                .is_ok()
        );
        let missing = served.check_context(&Map::new()).unwrap_err();
        assert_eq!(missing.message(), "context: missing field `name`");
        let wrong = served
            .check_context(&context(json!({"name": 5})))
            .unwrap_err();
        assert_eq!(wrong.status(), 422);
        assert!(
            wrong
                .message()
                .starts_with("context.name: invalid type: integer `5`"),
            "{}",
            wrong.message()
        );
        let request = RunRequest {
            input: Some(json!({})),
            modes: vec!["values".into()],
            graph_context: Some(context(json!({"name": "Ada"}))),
            ..RunRequest::default()
        };
        let events = collect(served.run("t".into(), request)).await;
        assert!(
            events.contains(&Streamed::Event(
                "values".into(),
                json!({"answer": "Ada", "done": false})
            )),
            "{events:?}"
        );

        // Served as is, with a context bound in code: that one, and a
        // run's context is refused, not ignored.
        let bound = graph.with_context(Visitor { name: "Bo".into() });
        let plain = serve(bound, None, Store::memory());
        assert!(plain.check_context(&Map::new()).is_ok());
        let refused = plain
            .check_context(&context(json!({"name": "Cy"})))
            .unwrap_err();
        assert!(
            refused
                .message()
                .starts_with("context: this graph takes no context from a run"),
            "{}",
            refused.message()
        );
        let request = RunRequest {
            input: Some(json!({})),
            modes: vec!["values".into()],
            ..RunRequest::default()
        };
        let events = collect(plain.run("u".into(), request)).await;
        assert!(
            events.contains(&Streamed::Event(
                "values".into(),
                json!({"answer": "Bo", "done": false})
            )),
            "{events:?}"
        );
    }
}
