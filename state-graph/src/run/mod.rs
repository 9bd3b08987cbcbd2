//! [`CompiledGraph`]: a checked graph, and the loop that runs it superstep
//! by superstep, in memory or on a store's thread.

mod backing;
mod cursor;
mod pending;
mod snapshot;
mod superstep;

use crate::ctx::{EmitFn, Emitted};
use crate::error::GraphError;
use crate::graph_state::GraphState;
use crate::outcome::{Interrupt, Outcome, Resume};
use crate::plan::{Cursor, Plan, Task};
use crate::stream::{Event, MessageMetadata, RunStream, Sink, StreamMode};
use backing::Backing;
use cursor::{LoggedRoutes, LoggedSend};
use futures::channel::mpsc;
use pending::{
    Breakpoint, Failure, PendingBody, PendingInterrupt, PendingWrite, Prior, TaskAnswers, TaskKey,
};
use serde_json::Value;
use state_core::State;
use state_store::{StepKind, Store};
use std::sync::Arc;
use superstep::{Done, Env};

pub use snapshot::{History, Snapshot};

/// Supersteps a run may take before it is stopped: LangGraph's default.
pub const DEFAULT_RECURSION_LIMIT: usize = 25;

/// A graph that [`compile`](crate::StateGraph::compile) checked: run it in
/// memory ([`invoke`](CompiledGraph::invoke)), or, [`with_store`], on a
/// thread that can pause and resume in any process
/// ([`invoke_thread`](CompiledGraph::invoke_thread),
/// [`resume`](CompiledGraph::resume)).
///
/// Cheap to clone (the graph is shared); `Send + Sync`, and every run's
/// future is `Send`, so runs can be spawned on tokio and called from an
/// axum handler.
///
/// [`with_store`]: CompiledGraph::with_store
pub struct CompiledGraph<S: State, C = ()> {
    pub(crate) plan: Arc<Plan<S, C>>,
    store: Option<Store>,
    limit: usize,
    /// The context runs are given (see `with_context`).
    context: Option<Arc<C>>,
}

impl<S: State, C> Clone for CompiledGraph<S, C> {
    fn clone(&self) -> Self {
        CompiledGraph {
            plan: self.plan.clone(),
            store: self.store.clone(),
            limit: self.limit,
            context: self.context.clone(),
        }
    }
}

impl<S: State, C> std::fmt::Debug for CompiledGraph<S, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field(
                "nodes",
                &self.plan.nodes.iter().map(|n| &n.name).collect::<Vec<_>>(),
            )
            .field("store", &self.store.is_some())
            .field("recursion_limit", &self.limit)
            .field("context", &self.context.is_some())
            .finish()
    }
}

/// How a run begins.
enum Start<D> {
    /// New input: a turn begins.
    Input(D),
    /// Answers to pending interrupts.
    Resume(Resume),
    /// Go on from the log.
    Continue,
}

impl<S, C> CompiledGraph<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    pub(crate) fn new(plan: Plan<S, C>) -> Self {
        // A graph without a context type runs with `()`, never missing.
        let unit: Arc<dyn std::any::Any + Send + Sync> = Arc::new(());
        CompiledGraph {
            plan: Arc::new(plan),
            store: None,
            limit: DEFAULT_RECURSION_LIMIT,
            context: unit.downcast::<C>().ok(),
        }
    }

    /// This graph, giving `context` to the runs started from it
    /// (LangGraph's `context=`, or `config["configurable"]`): the user, the
    /// time zone, a client. Nodes read it as [`Ctx::context`](crate::Ctx::context)
    /// and routers as their second argument, typed as the graph's `C`. A
    /// cheap clone of the graph: bind one per request.
    ///
    /// The context is not stored in the thread: [`resume`](Self::resume)
    /// and [`continue_thread`](Self::continue_thread) take it the same way,
    /// from the graph they are called on. A graph whose `C` is not `()`
    /// refuses to run without one ([`GraphError::NoContext`]).
    pub fn with_context(&self, context: C) -> Self {
        let mut app = self.clone();
        app.context = Some(Arc::new(context));
        app
    }

    /// The context runs are given.
    fn context(&self) -> Result<Arc<C>, GraphError> {
        self.context.clone().ok_or(GraphError::NoContext {
            context: std::any::type_name::<C>(),
        })
    }

    /// This graph, running its threads in `store`: each superstep one
    /// logged step, interrupts and pending writes stored on the thread.
    pub fn with_store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// This graph, stopping a run after `limit` supersteps
    /// ([`DEFAULT_RECURSION_LIMIT`] by default) with
    /// [`GraphError::RecursionLimit`].
    pub fn with_recursion_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// The store threads run in, if any.
    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Runs the graph in memory on a fresh state: `input` is applied
    /// through the reducers, then nodes run until `END`. Returns the final
    /// state. Interrupts need a store ([`invoke_thread`]).
    ///
    /// [`invoke_thread`]: CompiledGraph::invoke_thread
    pub async fn invoke(&self, input: S::Delta) -> Result<S, GraphError> {
        self.invoke_on(S::default(), input).await
    }

    /// [`invoke`](CompiledGraph::invoke) on a given state: a turn begins
    /// (turn-scoped fields reset), `input` is applied, nodes run.
    pub async fn invoke_on(&self, state: S, input: S::Delta) -> Result<S, GraphError> {
        let backing = Backing::Memory(Arc::new(state));
        let out = self.drive(backing, "", Start::Input(input), None).await?;
        Ok(out.state)
    }

    /// Runs the graph on thread `thread` of the store (created if new): a
    /// turn begins (`begin_turn`), `input` is applied as a step, and each
    /// superstep is one logged step, its node names in the metadata. Ends
    /// at `END` or paused by interrupts ([`Outcome::is_interrupted`]).
    ///
    /// New input on a thread with pending interrupts starts a new run from
    /// `START`, leaving them unanswered, as LangGraph does.
    pub async fn invoke_thread(
        &self,
        thread: &str,
        input: S::Delta,
    ) -> Result<Outcome<S>, GraphError> {
        let backing = self.open(thread, "invoke_thread").await?;
        self.drive(backing, thread, Start::Input(input), None).await
    }

    /// Answers the pending interrupt(s) of `thread` (LangGraph's
    /// `Command(resume=...)`) and runs on: each answered node runs again
    /// from its start, where its `ctx.interrupt` call returns the answer;
    /// the nodes of its superstep that had finished are not run again. Any
    /// process with the same store can resume.
    ///
    /// An error when nothing is pending, when one answer is given for
    /// several interrupts, or when an id is not pending.
    pub async fn resume(
        &self,
        thread: &str,
        answer: impl Into<Resume>,
    ) -> Result<Outcome<S>, GraphError> {
        let backing = self.open_existing(thread, "resume").await?;
        self.drive(backing, thread, Start::Resume(answer.into()), None)
            .await
    }

    /// Continues the run of `thread` from its last committed superstep
    /// (LangGraph's `invoke(None, config)`): after a failure or a crash.
    /// Nodes whose writes were kept as pending are not run again; pending
    /// interrupts stay pending (the outcome lists them). A thread whose run
    /// ended continues to an outcome at once.
    pub async fn continue_thread(&self, thread: &str) -> Result<Outcome<S>, GraphError> {
        let backing = self.open_existing(thread, "continue_thread").await?;
        self.drive(backing, thread, Start::Continue, None).await
    }

    /// The interrupts pending on `thread`, empty when none (a thread that
    /// does not exist has none, and is not created); reads the thread's
    /// last step only, not its state.
    pub async fn pending_interrupts(&self, thread: &str) -> Result<Vec<Interrupt>, GraphError> {
        let store = self.store.as_ref().ok_or(GraphError::NoStore {
            method: "pending_interrupts",
        })?;
        let seq = match store.thread_info(thread).await {
            Ok(info) => info.seq,
            Err(state_store::StoreError::ThreadNotFound { .. }) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        match self.load(seq, thread, "pending_interrupts").await {
            Ok(loaded) => Ok(loaded
                .prior
                .interrupts
                .into_iter()
                .map(|i| Interrupt {
                    id: i.id,
                    node: i.task.node,
                    value: i.value,
                })
                .collect()),
            Err(GraphError::Continue { .. }) => Ok(Vec::new()),
            Err(e) => Err(e),
        }
    }

    /// [`invoke`](CompiledGraph::invoke) as a stream of events in `modes`,
    /// ending with [`Event::End`].
    pub fn stream(&self, input: S::Delta, modes: StreamMode) -> RunStream<S> {
        self.streamed(modes, move |graph, sink| {
            Box::pin(async move {
                let backing = Backing::Memory(Arc::new(S::default()));
                graph
                    .drive(backing, "", Start::Input(input), Some(&sink))
                    .await
            })
        })
    }

    /// [`invoke_thread`](CompiledGraph::invoke_thread) as a stream of events
    /// in `modes`, ending with [`Event::End`] (its outcome).
    pub fn stream_thread(&self, thread: &str, input: S::Delta, modes: StreamMode) -> RunStream<S> {
        let thread = thread.to_owned();
        self.streamed(modes, move |graph, sink| {
            Box::pin(async move {
                let backing = graph.open(&thread, "stream_thread").await?;
                graph
                    .drive(backing, &thread, Start::Input(input), Some(&sink))
                    .await
            })
        })
    }

    /// [`resume`](CompiledGraph::resume) as a stream of events in `modes`.
    pub fn stream_resume(
        &self,
        thread: &str,
        answer: impl Into<Resume>,
        modes: StreamMode,
    ) -> RunStream<S> {
        let thread = thread.to_owned();
        let answer = answer.into();
        self.streamed(modes, move |graph, sink| {
            Box::pin(async move {
                let backing = graph.open_existing(&thread, "stream_resume").await?;
                graph
                    .drive(backing, &thread, Start::Resume(answer), Some(&sink))
                    .await
            })
        })
    }

    fn streamed(
        &self,
        modes: StreamMode,
        run: impl FnOnce(
            CompiledGraph<S, C>,
            Sink<S>,
        ) -> crate::node::BoxFuture<Result<Outcome<S>, GraphError>>,
    ) -> RunStream<S> {
        let (tx, rx) = mpsc::unbounded();
        RunStream::new(rx, run(self.clone(), Sink::new(tx, modes)))
    }

    async fn open(&self, thread: &str, method: &'static str) -> Result<Backing<S>, GraphError> {
        let store = self.store.as_ref().ok_or(GraphError::NoStore { method })?;
        Ok(Backing::Thread(store.thread::<S>(thread).await?))
    }

    /// Opens a thread that must exist already: resuming or reading one
    /// never creates it.
    async fn open_existing(
        &self,
        thread: &str,
        method: &'static str,
    ) -> Result<Backing<S>, GraphError> {
        let store = self.store.as_ref().ok_or(GraphError::NoStore { method })?;
        store.thread_info(thread).await?;
        self.open(thread, method).await
    }

    /// The run: from its start, superstep by superstep, until no task is
    /// left, a node pauses or fails, a breakpoint, or the recursion limit.
    async fn drive(
        &self,
        mut backing: Backing<S>,
        thread: &str,
        start: Start<S::Delta>,
        sink: Option<&Sink<S>>,
    ) -> Result<Outcome<S>, GraphError> {
        let plan = &*self.plan;
        let context = self.context()?;
        let emit = sink.and_then(emit_fn);
        let (mut cursor, mut prior, mut past_breakpoint) = match start {
            Start::Input(input) => {
                backing.input(input).await?;
                if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::VALUES)) {
                    sink.send(Event::Values(backing.shared()));
                }
                (Cursor::start(), Prior::default(), false)
            }
            Start::Resume(answer) => {
                let mut loaded = self.load(backing.seq(), thread, "resume").await?;
                match loaded.breakpoint {
                    // LangGraph's Command(resume=..) at a breakpoint goes on,
                    // as invoke(None) does: the answer has no question.
                    Some(at) if loaded.prior.interrupts.is_empty() => {
                        (loaded.cursor, loaded.prior, at == Breakpoint::Before)
                    }
                    _ if loaded.prior.interrupts.is_empty() => {
                        return Err(GraphError::Resume {
                            thread: thread.to_owned(),
                            reason: "no interrupt is pending".to_owned(),
                        });
                    }
                    _ => {
                        answer_interrupts(&mut loaded.prior, answer, thread)?;
                        (loaded.cursor, loaded.prior, false)
                    }
                }
            }
            Start::Continue => {
                let loaded = self.load(backing.seq(), thread, "continue_thread").await?;
                let past = loaded.breakpoint == Some(Breakpoint::Before);
                (loaded.cursor, loaded.prior, past)
            }
        };
        let on = (!thread.is_empty()).then_some(thread);
        let messages = sink.is_some_and(|s| s.modes.contains(StreamMode::MESSAGES));
        let mut steps = 0;
        loop {
            let state = backing.shared();
            let (tasks, joins) = plan.next(&cursor, &state, &context)?;
            if tasks.is_empty() {
                break;
            }
            if !past_breakpoint && prior.is_empty() && tasks.iter().any(|t| plan.before[t.node]) {
                drop(state);
                return self
                    .breakpoint(backing, thread, &cursor, &tasks, Breakpoint::Before, sink)
                    .await;
            }
            past_breakpoint = false;
            if steps == self.limit {
                return Err(GraphError::RecursionLimit { limit: self.limit });
            }
            steps += 1;
            let env = Env {
                thread: on,
                store: self.store.as_ref(),
                context: &context,
                step: if on.is_some() {
                    backing.seq() + 1
                } else {
                    steps as u64
                },
                remaining: self.limit - steps,
                emit: emit.as_ref(),
                messages,
            };
            let (done, ran) = superstep::execute(plan, &tasks, state, &mut prior, &env).await;
            if let Some(key) = prior
                .writes
                .keys()
                .chain(prior.interrupts.iter().map(|i| &i.task))
                .next()
            {
                return Err(GraphError::Log {
                    thread: thread.to_owned(),
                    seq: backing.seq(),
                    reason: format!(
                        "the pending step names a run of \"{}\" that this graph does not schedule there; was the graph changed?",
                        key.node
                    ),
                });
            }
            let stopped = done
                .iter()
                .any(|d| matches!(d, Done::Failed(_) | Done::Paused { .. }));
            if stopped {
                // Nothing ran (a continue on a paused thread): the pending
                // step already says all there is.
                let log = ran > 0;
                return self
                    .pause(backing, thread, &cursor, &tasks, done, prior, sink, log)
                    .await;
            }
            // The answers were for this superstep's runs: a later visit to
            // the same node asks again.
            prior.answers.clear();
            let mut next = Cursor::default();
            let mut nodes = Vec::with_capacity(tasks.len());
            let mut updates = Vec::new();
            let mut said = Vec::new();
            let want_updates = sink.is_some_and(|s| s.modes.contains(StreamMode::UPDATES));
            for (task, done) in tasks.iter().zip(done) {
                if !next.sources.contains(&Some(task.node)) {
                    next.sources.push(Some(task.node));
                }
                let Done::Wrote(output) = done else { continue };
                let name = plan.nodes[task.node].name.as_str();
                if output.parent {
                    return Err(GraphError::NoParent {
                        node: name.to_owned(),
                    });
                }
                next.goto
                    .extend(output.resolved.targets.into_iter().map(|t| (task.node, t)));
                next.sends
                    .extend(output.resolved.sends.into_iter().map(|s| (task.node, s)));
                let delta = output.update.unwrap_or_default();
                if want_updates {
                    updates.push((name.to_owned(), delta.clone()));
                }
                if messages {
                    said.push(env.task_info(plan, task));
                }
                nodes.push((name, delta));
            }
            let ran: Vec<usize> = tasks.iter().map(|t| t.node).collect();
            next.joins = plan.mark_joins(joins, &ran);
            let routes = LoggedRoutes::of(plan, &next).into_metadata();
            // The messages the deltas write, streamed once committed.
            let mut written = Vec::new();
            if let Some(sink) = sink.filter(|_| messages) {
                for (task, (_, delta)) in said.iter().zip(&nodes) {
                    sink.delta_messages(task, delta, &mut written);
                }
            }
            backing.commit(nodes, routes).await?;
            if let Some(sink) = sink {
                for event in written {
                    sink.send(event);
                }
                for (node, delta) in updates {
                    sink.send(Event::Update { node, delta });
                }
                if sink.modes.contains(StreamMode::VALUES) {
                    sink.send(Event::Values(backing.shared()));
                }
            }
            cursor = next;
            if tasks.iter().any(|t| plan.after[t.node]) {
                let state = backing.shared();
                let (after, _) = plan.next(&cursor, &state, &context)?;
                drop(state);
                if !after.is_empty() {
                    return self
                        .breakpoint(backing, thread, &cursor, &after, Breakpoint::After, sink)
                        .await;
                }
            }
        }
        Ok(Outcome {
            thread: thread.to_owned(),
            seq: backing.seq(),
            interrupts: Vec::new(),
            next: Vec::new(),
            state: backing.into_state(),
        })
    }

    /// A run stopped by a static breakpoint, before `tasks` run: with a
    /// store, logged as a pending step that says so (so `continue_thread`
    /// runs them without pausing again).
    async fn breakpoint(
        &self,
        mut backing: Backing<S>,
        thread: &str,
        cursor: &Cursor,
        tasks: &[Task],
        at: Breakpoint,
        sink: Option<&Sink<S>>,
    ) -> Result<Outcome<S>, GraphError> {
        let plan = &*self.plan;
        let next = task_names(plan, tasks);
        if let Backing::Memory(_) = backing {
            return Err(GraphError::BreakpointWithoutStore {
                node: next.join(", "),
            });
        }
        let mut body = self.planned(cursor);
        body.breakpoint = Some(at);
        let body = serde_json::to_value(&body).map_err(|e| GraphError::Log {
            thread: thread.to_owned(),
            seq: backing.seq(),
            reason: format!("the pending step cannot be written: {e}"),
        })?;
        backing.pending(next.clone(), body).await?;
        if let Some(sink) = sink {
            sink.send(Event::Interrupt(Vec::new()));
        }
        Ok(Outcome {
            thread: thread.to_owned(),
            seq: backing.seq(),
            interrupts: Vec::new(),
            next,
            state: backing.into_state(),
        })
    }

    /// A pending body planned from `cursor`.
    fn planned(&self, cursor: &Cursor) -> PendingBody {
        let plan = &*self.plan;
        PendingBody::planned(
            cursor
                .sources
                .iter()
                .map(|s| plan.source_name(*s).to_owned())
                .collect(),
            LoggedRoutes::of(plan, cursor),
        )
    }

    /// A superstep in which a node failed or paused: nothing is applied;
    /// with a store, what finished is kept as a pending step.
    #[allow(clippy::too_many_arguments)]
    async fn pause(
        &self,
        mut backing: Backing<S>,
        thread: &str,
        cursor: &Cursor,
        tasks: &[Task],
        done: Vec<Done<S::Delta>>,
        mut prior: Prior<S::Delta>,
        sink: Option<&Sink<S>>,
        log: bool,
    ) -> Result<Outcome<S>, GraphError> {
        let plan = &*self.plan;
        let mut body = self.planned(cursor);
        let mut failure = None;
        let mut interrupts = Vec::new();
        let mut next = Vec::new();
        for (task, done) in tasks.iter().zip(done) {
            let key = superstep::key(plan, task);
            // A task that paused or failed runs again: it keeps its answers.
            if !matches!(done, Done::Wrote(_)) {
                if !next.contains(&key.node) {
                    next.push(key.node.clone());
                }
                if let Some(values) = prior.answers.remove(&key) {
                    body.answers.push(TaskAnswers {
                        task: key.clone(),
                        values,
                    });
                }
            }
            match done {
                Done::Wrote(output) => {
                    let unstorable = |e: String| GraphError::State {
                        context: format!("the delta of \"{}\" cannot be stored", key.node),
                        source: state_core::StateError::Serialize {
                            field: key.node.clone(),
                            message: e,
                        },
                    };
                    let delta = match &output.update {
                        Some(delta) => state_core::json::to_value(delta)
                            .map_err(|e| unstorable(e.to_string()))?,
                        None => Value::Null,
                    };
                    let goto = output
                        .resolved
                        .targets
                        .iter()
                        .map(|t| match t {
                            crate::plan::Target::Node(n) => plan.nodes[*n].name.clone(),
                            crate::plan::Target::End => crate::END.to_owned(),
                        })
                        .collect();
                    let sends = output
                        .resolved
                        .sends
                        .iter()
                        .map(|s| LoggedSend {
                            from: key.node.clone(),
                            to: plan.nodes[s.worker].name.clone(),
                            input: s.logged.clone(),
                        })
                        .collect();
                    body.writes.push(PendingWrite {
                        task: key,
                        delta,
                        goto,
                        sends,
                    });
                }
                Done::Paused { id, value } => {
                    interrupts.push(Interrupt {
                        id: id.clone(),
                        node: key.node.clone(),
                        value: value.clone(),
                    });
                    body.interrupts.push(PendingInterrupt {
                        id,
                        task: key,
                        value,
                    });
                }
                Done::Failed(error) => {
                    if failure.is_none() {
                        body.failed = Some(Failure {
                            task: key.clone(),
                            error: error.to_string(),
                        });
                        failure = Some(match error.downcast::<GraphError>() {
                            // A command going where it may not: the graph's
                            // error, as it is.
                            Ok(graph) => *graph,
                            Err(error) => GraphError::Node {
                                node: key.node,
                                source: error,
                            },
                        });
                    }
                }
            }
        }
        if let Backing::Memory(_) = backing {
            return Err(
                failure.unwrap_or_else(|| GraphError::InterruptWithoutStore {
                    node: interrupts
                        .first()
                        .map(|i| i.node.clone())
                        .unwrap_or_default(),
                }),
            );
        }
        let body = serde_json::to_value(&body).map_err(|e| GraphError::Log {
            thread: thread.to_owned(),
            seq: backing.seq(),
            reason: format!("the pending step cannot be written: {e}"),
        })?;
        let logged = if log {
            // One name per task, as a superstep lists them.
            let names = tasks
                .iter()
                .map(|t| plan.nodes[t.node].name.clone())
                .collect();
            backing.pending(names, body).await
        } else {
            Ok(())
        };
        if let Some(failure) = failure {
            // The node's error comes first; a pending step that could not
            // be logged only means the finished nodes run again.
            return Err(failure);
        }
        logged?;
        if let Some(sink) = sink {
            sink.send(Event::Interrupt(interrupts.clone()));
        }
        Ok(Outcome {
            thread: thread.to_owned(),
            seq: backing.seq(),
            interrupts,
            next,
            state: backing.into_state(),
        })
    }

    /// Where the run of `thread` stands after its step `seq`: what its next
    /// superstep is planned from, and what is pending in it.
    async fn load(
        &self,
        seq: u64,
        thread: &str,
        method: &'static str,
    ) -> Result<Loaded<S::Delta>, GraphError> {
        let log = |reason: String| GraphError::Log {
            thread: thread.to_owned(),
            seq,
            reason,
        };
        let Some(store) = &self.store else {
            return Err(GraphError::NoStore { method });
        };
        if seq == 0 {
            let reason = "the thread has no run yet: start one with invoke_thread".to_owned();
            let thread = thread.to_owned();
            return Err(match method {
                "resume" => GraphError::Resume { thread, reason },
                _ => GraphError::Continue {
                    method,
                    thread,
                    reason,
                },
            });
        }
        let Some(last) = store.history(thread, seq..=seq).await?.pop() else {
            return Err(log(
                "the thread's last step was compacted away; start a new run with invoke_thread"
                    .to_owned(),
            ));
        };
        self.position(thread, last, method)
    }

    /// Where a run stands after the logged step `step`.
    fn position(
        &self,
        thread: &str,
        step: state_store::StepRecord,
        method: &'static str,
    ) -> Result<Loaded<S::Delta>, GraphError> {
        let seq = step.seq;
        let log = |reason: String| GraphError::Log {
            thread: thread.to_owned(),
            seq,
            reason,
        };
        // A pending step, or an edit (update_state) that kept one.
        let pending = if step.kind == StepKind::Pending {
            Some(step.body)
        } else {
            step.metadata.get("pending").cloned()
        };
        if let Some(body) = pending {
            let mut body: PendingBody = serde_json::from_value(body)
                .map_err(|e| log(format!("not a pending step of a graph run: {e}")))?;
            let prior = Prior::decode(&mut body, &self.plan, log)?;
            let cursor = body.routes().cursor(&self.plan, &body.from).map_err(log)?;
            return Ok(Loaded {
                cursor,
                prior,
                breakpoint: body.breakpoint,
                pending: true,
            });
        }
        let names = match step.metadata.get("nodes") {
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>(),
            _ => None,
        };
        let Some(names) = names else {
            return Err(GraphError::Continue {
                method,
                thread: thread.to_owned(),
                reason: format!(
                    "its last step ({seq}, {}) was not written by a graph run; write edits with update_state",
                    step.kind
                ),
            });
        };
        let cursor = LoggedRoutes::from_metadata(&step.metadata)
            .and_then(|routes| routes.cursor(&self.plan, &names))
            .map_err(log)?;
        // An edit of a thread paused at a breakpoint keeps it passed.
        let passed = step.metadata.get("breakpoint").and_then(Value::as_str) == Some("before");
        Ok(Loaded {
            cursor,
            prior: Prior::default(),
            breakpoint: passed.then_some(Breakpoint::Before),
            pending: false,
        })
    }
}

/// Where a stored run stands: see `CompiledGraph::load`.
struct Loaded<D> {
    cursor: Cursor,
    prior: Prior<D>,
    /// A breakpoint stopped it there.
    breakpoint: Option<Breakpoint>,
    /// Its position is a pending (paused) superstep's.
    pending: bool,
}

/// The names of `tasks`' nodes, once each, in order.
fn task_names<S: State, C>(plan: &Plan<S, C>, tasks: &[Task]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(tasks.len());
    for task in tasks {
        let name = &plan.nodes[task.node].name;
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
}

/// Gives each answered interrupt's task its answer; answered interrupts are
/// no longer pending.
fn answer_interrupts<D>(
    prior: &mut Prior<D>,
    answer: Resume,
    thread: &str,
) -> Result<(), GraphError> {
    let refuse = |reason: String| GraphError::Resume {
        thread: thread.to_owned(),
        reason,
    };
    let pending_ids = |prior: &Prior<D>| {
        let ids: Vec<String> = prior
            .interrupts
            .iter()
            .map(|i| format!("\"{}\" ({})", i.id, i.task.node))
            .collect();
        ids.join(", ")
    };
    let answers: Vec<(TaskKey, Value)> = match answer {
        Resume::One(value) => {
            if prior.interrupts.len() != 1 {
                return Err(refuse(format!(
                    "{} interrupts are pending ({}); answer them by id with Resume::by_id",
                    prior.interrupts.len(),
                    pending_ids(prior)
                )));
            }
            prior
                .interrupts
                .iter()
                .map(|i| (i.task.clone(), value.clone()))
                .collect()
        }
        Resume::ById(list) => {
            if list.is_empty() {
                return Err(refuse("no answer given".to_owned()));
            }
            let mut answers = Vec::new();
            for (id, value) in list {
                let Some(key) = prior
                    .interrupts
                    .iter()
                    .find(|i| i.id == id)
                    .map(|i| i.task.clone())
                else {
                    return Err(refuse(format!(
                        "no pending interrupt has id \"{id}\" (pending: {})",
                        pending_ids(prior)
                    )));
                };
                if answers.iter().any(|(k, _)| *k == key) {
                    return Err(refuse(format!("interrupt \"{id}\" is answered twice")));
                }
                answers.push((key, value));
            }
            answers
        }
    };
    for (key, value) in answers {
        prior.take_interrupt(&key);
        prior.answers.entry(key).or_default().push(value);
    }
    Ok(())
}

/// Where nodes' custom data and message chunks go, when streamed.
fn emit_fn<S>(sink: &Sink<S>) -> Option<EmitFn>
where
    S: State + Send + Sync + 'static,
    S::Delta: Send,
{
    let modes = sink.modes;
    if !modes.contains(StreamMode::CUSTOM) && !modes.contains(StreamMode::MESSAGES) {
        return None;
    }
    let tx = sink.tx.clone();
    let streamed = sink.streamed.clone();
    Some(Arc::new(move |emitted| {
        let event = match emitted {
            Emitted::Custom { task, value } if modes.contains(StreamMode::CUSTOM) => {
                Event::Custom {
                    node: task.node,
                    value,
                }
            }
            Emitted::Message { task, chunk } if modes.contains(StreamMode::MESSAGES) => {
                if let Some(id) = chunk.id() {
                    streamed
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id.to_owned());
                }
                Event::Message {
                    metadata: Box::new(MessageMetadata::of(&task)),
                    node: task.node,
                    chunk,
                }
            }
            _ => return,
        };
        let _ = tx.unbounded_send(event);
    }))
}
