//! [`CompiledGraph`]: a checked graph, and the loop that runs it superstep
//! by superstep, in memory or on a store's thread.

mod backing;
mod branch;
mod breakpoints;
mod child;
mod cursor;
mod out_of_line;
mod pending;
mod position;
mod runner;
mod snapshot;
mod superstep;

use crate::ctx::TaskScope;
use crate::error::GraphError;
use crate::graph_state::GraphState;
use crate::outcome::{Interrupt, Outcome, Resume};
use crate::plan::{Cursor, Plan};
use crate::stream::{Event, RunStream, Sink, StreamMode};
use backing::Backing;
use futures::channel::mpsc;
use pending::{PendingBody, Prior, answer_interrupts};
use runner::{Position, Runner, Stop};
use serde_json::Value;
use state_core::State;
use state_store::{Durability, Store};
use std::sync::Arc;

pub(crate) use child::{Mapped, SameState};

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
    /// The runs' own breakpoints, when set (see `with_interrupt_before`):
    /// over the compiled ones.
    breakpoints: Option<Arc<breakpoints::Breakpoints>>,
    /// The step runs start from, when not their thread's latest (see
    /// `with_checkpoint`).
    checkpoint: Option<u64>,
    /// When a run's steps are durable (see `with_durability`).
    durability: Durability,
}

impl<S: State, C> Clone for CompiledGraph<S, C> {
    fn clone(&self) -> Self {
        CompiledGraph {
            plan: self.plan.clone(),
            store: self.store.clone(),
            limit: self.limit,
            context: self.context.clone(),
            breakpoints: self.breakpoints.clone(),
            checkpoint: self.checkpoint,
            durability: self.durability,
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
            breakpoints: None,
            checkpoint: None,
            durability: Durability::Sync,
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

    /// Whether a context is bound ([`with_context`](Self::with_context),
    /// or none needed: `C` is `()`); a graph without one refuses to run.
    ///
    /// ```
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    /// # #[derive(AgentState, Debug, Clone, PartialEq)]
    /// # struct Chat { turns: u32 }
    /// struct User { name: String }
    /// let mut g = StateGraph::<Chat, User>::new();
    /// g.add_node("a", |_: &Chat| Chat::delta());
    /// g.add_edge(START, "a");
    /// g.add_edge("a", END);
    /// let app = g.compile()?;
    /// assert!(!app.has_context());
    /// assert!(app.with_context(User { name: "Ada".into() }).has_context());
    /// # Ok::<(), state_graph::GraphError>(())
    /// ```
    pub fn has_context(&self) -> bool {
        self.context.is_some()
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

    /// This graph, its thread runs starting from step `seq` of their
    /// thread rather than its latest (LangGraph's run with a past
    /// `checkpoint_id`: replay and fork in place). Before the run, the
    /// thread is branched back to that step
    /// ([`Thread::branch`](state_store::Thread::branch), a `branch` step
    /// whose snapshot has `source` `"fork"`); the steps after it stay in
    /// the thread's history. Then [`invoke_thread`](Self::invoke_thread)
    /// applies its input to the state after `seq`,
    /// [`continue_thread`](Self::continue_thread) runs again what came after
    /// it (LangGraph's replay), and [`resume`](Self::resume) answers the
    /// interrupts pending there. A `seq` that is the thread's latest
    /// changes nothing. A cheap clone, as [`with_context`](Self::with_context).
    ///
    /// From a step inside a subgraph's run (one of its steps, a pause
    /// inside it), the branch goes back to the parent's last committed
    /// step and copies the subgraph's steps since: the run goes on inside
    /// the subgraph, and nothing it finished runs again. Refused, with
    /// nothing written ([`GraphError::Checkpoint`]): a `seq` past the
    /// thread's last step or compacted away, and for `resume` and
    /// `continue_thread` a step no graph run wrote.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("echo", |s: &S| S::delta().log(vec![format!("echo {}", s.log.len())]));
    /// g.add_edge(START, "echo").add_edge("echo", END);
    /// let app = g.compile()?.with_store(state_store::Store::memory());
    ///
    /// app.invoke_thread("t", S::delta().log(vec!["hi".into()])).await?; // steps 1, 2
    /// app.invoke_thread("t", S::delta().log(vec!["oops".into()])).await?; // steps 3, 4
    /// // Send another message instead of "oops": from step 2.
    /// let out = app.with_checkpoint(2).invoke_thread("t", S::delta().log(vec!["hello".into()])).await?;
    /// assert_eq!(out.state().log, ["hi", "echo 1", "hello", "echo 3"]);
    /// // The first branch is still in the history.
    /// assert_eq!(app.get_state_history("t").await?.len(), 7);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_checkpoint(&self, seq: u64) -> Self {
        let mut app = self.clone();
        app.checkpoint = Some(seq);
        app
    }

    /// This graph, its thread runs committing their steps with
    /// `durability` (LangGraph's `durability=` of a run;
    /// [`Durability::Sync`] by default): with [`Durability::Async`], on a
    /// SQLite file, each superstep's step is written and the next
    /// superstep starts while it is committed, instead of after; the run
    /// waits for its last commit before it returns (ended, paused or
    /// failed), so what it returns is durable either way. A crash may lose
    /// the last supersteps written before they were durable (a run that
    /// goes on runs them again), never one in the middle. Elsewhere (in
    /// memory, PostgreSQL) nothing changes. A cheap clone, as
    /// [`with_context`](Self::with_context).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    /// use state_store::{Durability, Store};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct S {
    ///     #[reducer(append)]
    ///     log: Vec<String>,
    /// }
    ///
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("a", |_: &S| S::delta().log(vec!["a".into()]));
    /// g.add_node("b", |_: &S| S::delta().log(vec!["b".into()]));
    /// g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END);
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::sqlite(dir.path().join("app.db")).await?;
    /// let app = g.compile()?.with_store(store.clone()).with_durability(Durability::Async);
    ///
    /// let out = app.invoke_thread("t", S::delta()).await?;
    /// // Returned, every step is durable: another handle reads them all.
    /// assert_eq!(store.thread::<S>("t").await?.state().log, out.state().log);
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_durability(&self, durability: Durability) -> Self {
        let mut app = self.clone();
        app.durability = durability;
        app
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
                .pending
                .map(|body| body.all_interrupts().into_iter().map(|(_, i)| i).collect())
                .unwrap_or_default()),
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

    /// [`continue_thread`](CompiledGraph::continue_thread) as a stream of
    /// events in `modes` (LangGraph's `stream(None, config)`).
    pub fn stream_continue(&self, thread: &str, modes: StreamMode) -> RunStream<S> {
        let thread = thread.to_owned();
        self.streamed(modes, move |graph, sink| {
            Box::pin(async move {
                let backing = graph.open_existing(&thread, "stream_continue").await?;
                graph
                    .drive(backing, &thread, Start::Continue, Some(&sink))
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
        // A run that cannot start writes nothing, not even its thread.
        self.context()?;
        Ok(Backing::Thread(self.thread_to_write(store, thread).await?))
    }

    /// The thread a run or an edit writes to: made if it is new, unless
    /// it starts from a past step (`with_checkpoint`), which needs it there.
    async fn thread_to_write(
        &self,
        store: &Store,
        thread: &str,
    ) -> Result<state_store::Thread<S>, state_store::StoreError> {
        match self.checkpoint {
            Some(seq) if seq > 0 => store.existing_thread::<S>(thread).await,
            _ => store.thread::<S>(thread).await,
        }
    }

    /// Opens a thread that must exist already: resuming or reading one
    /// never creates it.
    async fn open_existing(
        &self,
        thread: &str,
        method: &'static str,
    ) -> Result<Backing<S>, GraphError> {
        let store = self.store.as_ref().ok_or(GraphError::NoStore { method })?;
        self.context()?;
        Ok(Backing::Thread(store.existing_thread::<S>(thread).await?))
    }

    /// A top-level run: from its start, superstep by superstep, until it
    /// ends, pauses (logged as a pending step, with a store) or fails; its
    /// steps durable when it returns, whatever it returns.
    async fn drive(
        &self,
        mut backing: Backing<S>,
        thread: &str,
        start: Start<S::Delta>,
        sink: Option<&Sink<S>>,
    ) -> Result<Outcome<S>, GraphError> {
        backing.set_durability(self.durability);
        let ended = self.drive_on(&mut backing, thread, start, sink).await;
        // Written under `Durability::Async`, its last steps may still be
        // committing: a run answers once they are durable. Its own error
        // comes first.
        let synced = backing.sync().await;
        let (interrupts, next) = ended?;
        synced?;
        Ok(Outcome {
            thread: thread.to_owned(),
            seq: backing.seq(),
            interrupts,
            next,
            state: backing.into_state(),
        })
    }

    /// [`drive`](Self::drive)'s run on `backing`: the interrupts it paused
    /// on and the nodes that run next.
    async fn drive_on(
        &self,
        backing: &mut Backing<S>,
        thread: &str,
        start: Start<S::Delta>,
        sink: Option<&Sink<S>>,
    ) -> Result<(Vec<Interrupt>, Vec<String>), GraphError> {
        let context = self.context()?;
        // New input starts from START, on the state there; a run that
        // goes on must find where one stood.
        let method = match &start {
            Start::Input(_) => None,
            Start::Resume(_) => Some("resume"),
            Start::Continue => Some("continue_thread"),
        };
        match &mut *backing {
            Backing::Thread(handle) => {
                self.branch(handle, method).await?;
                // A run that goes on reads where it stands from the log,
                // the branch just written included.
                if method.is_some() {
                    handle.sync().await?;
                }
            }
            _ if self.checkpoint.is_some() => {
                return Err(GraphError::NoStore {
                    method: "with_checkpoint",
                });
            }
            _ => {}
        }
        let (position, base, at, fresh) = match start {
            Start::Input(input) => {
                backing.input(input).await?;
                if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::VALUES)) {
                    sink.send(Event::Values(backing.shared()));
                }
                let seq = backing.seq();
                let position = Position {
                    cursor: Cursor::start(),
                    prior: Prior::default(),
                    past_breakpoint: false,
                };
                // Its input is the thread's last step: nothing after it.
                (position, seq, seq, true)
            }
            Start::Resume(answer) => {
                let mut loaded = self.load(backing.seq(), thread, "resume").await?;
                let pending = loaded
                    .pending
                    .as_ref()
                    .map(PendingBody::all_interrupts)
                    .unwrap_or_default();
                match loaded.breakpoint {
                    // LangGraph's Command(resume=..) at a breakpoint goes on,
                    // as invoke(None) does: the answer has no question.
                    Some(_) if pending.is_empty() => {}
                    _ if pending.is_empty() => {
                        return Err(GraphError::Resume {
                            thread: thread.to_owned(),
                            reason: "no interrupt is pending".to_owned(),
                        });
                    }
                    _ => answer_interrupts(&mut loaded.position.prior, &pending, answer, thread)?,
                }
                (loaded.position, loaded.base, loaded.at, false)
            }
            Start::Continue => {
                let loaded = self.load(backing.seq(), thread, "continue_thread").await?;
                (loaded.position, loaded.base, loaded.at, false)
            }
        };
        let (before, after) = self.breakpoints();
        let mut runner = Runner {
            plan: &self.plan,
            before,
            after,
            limit: self.limit,
            store: self.store.as_ref(),
            thread: (!thread.is_empty()).then_some(thread),
            context,
            sink: sink.cloned(),
            scope: TaskScope::new(Vec::new(), (!thread.is_empty()).then(|| thread.to_owned())),
            base,
            at,
            fresh,
            nested: sink.and_then(Sink::nested),
            steps: 0,
        };
        let stop = runner.run(backing, position).await?;
        match stop {
            Stop::Ended => Ok((Vec::new(), Vec::new())),
            // Only a subgraph's run hands off.
            Stop::Handoff { .. } => Err(GraphError::NoParent {
                node: String::new(),
            }),
            Stop::Breakpoint { body, next } => {
                if let Backing::Memory(_) = backing {
                    return Err(GraphError::BreakpointWithoutStore {
                        node: next.join(", "),
                    });
                }
                let body = pending_json(&body, thread, backing.seq())?;
                backing.pending(next.clone(), body).await?;
                if let Some(sink) = sink {
                    sink.send(Event::Interrupt(Vec::new()));
                }
                Ok((Vec::new(), next))
            }
            Stop::Paused(paused) => {
                if let Backing::Memory(_) = backing {
                    return Err(paused.failure.unwrap_or_else(|| {
                        GraphError::InterruptWithoutStore {
                            node: paused
                                .interrupts
                                .first()
                                .map(|i| i.node.clone())
                                .unwrap_or_default(),
                        }
                    }));
                }
                let body = pending_json(&paused.body, thread, backing.seq())?;
                let logged = if paused.ran {
                    backing.pending(paused.tasks, body).await
                } else {
                    Ok(())
                };
                if let Some(failure) = paused.failure {
                    // The node's error comes first; a pending step that
                    // could not be logged only means the finished nodes run
                    // again.
                    return Err(failure);
                }
                logged?;
                if let Some(sink) = sink {
                    sink.send(Event::Interrupt(paused.interrupts.clone()));
                }
                Ok((paused.interrupts, paused.next))
            }
        }
    }
}

/// A pending body as the step's JSON.
fn pending_json(body: &PendingBody, thread: &str, seq: u64) -> Result<Value, GraphError> {
    serde_json::to_value(body).map_err(|e| GraphError::Log {
        thread: thread.to_owned(),
        seq,
        reason: format!("the pending step cannot be written: {e}"),
    })
}
