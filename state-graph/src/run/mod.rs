//! [`CompiledGraph`]: a checked graph, and the loop that runs it superstep
//! by superstep, in memory or on a store's thread.

mod backing;
mod pending;
mod superstep;

use crate::compile::{Plan, Source};
use crate::ctx::{EmitFn, Emitted};
use crate::error::GraphError;
use crate::outcome::{Interrupt, Outcome, Resume};
use crate::stream::{Event, RunStream, Sink, StreamMode};
use backing::Backing;
use futures::channel::mpsc;
use pending::{Failure, PendingBody, PendingInterrupt, PendingWrite, Prior, TaskAnswers, TaskKey};
use serde::Serialize;
use serde_json::Value;
use state_core::State;
use state_store::{StepKind, Store};
use std::sync::Arc;
use superstep::Done;

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
pub struct CompiledGraph<S: State> {
    plan: Arc<Plan<S>>,
    store: Option<Store>,
    limit: usize,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        CompiledGraph {
            plan: self.plan.clone(),
            store: self.store.clone(),
            limit: self.limit,
        }
    }
}

impl<S: State> std::fmt::Debug for CompiledGraph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field(
                "nodes",
                &self.plan.nodes.iter().map(|n| &n.name).collect::<Vec<_>>(),
            )
            .field("store", &self.store.is_some())
            .field("recursion_limit", &self.limit)
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

impl<S> CompiledGraph<S>
where
    S: State + Clone + Serialize + Send + Sync + 'static,
    S::Delta: Serialize + Clone + Send + Sync + 'static,
{
    pub(crate) fn new(plan: Plan<S>) -> Self {
        CompiledGraph {
            plan: Arc::new(plan),
            store: None,
            limit: DEFAULT_RECURSION_LIMIT,
        }
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
        match self.load(seq, thread, false).await {
            Ok((_, prior)) => Ok(prior
                .interrupts
                .into_iter()
                .map(|i| Interrupt {
                    id: i.id,
                    node: i.task.node,
                    value: i.value,
                })
                .collect()),
            Err(GraphError::Resume { .. }) => Ok(Vec::new()),
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
            CompiledGraph<S>,
            Sink<S>,
        ) -> crate::node::BoxFuture<Result<Outcome<S>, GraphError>>,
    ) -> RunStream<S> {
        let (tx, rx) = mpsc::unbounded();
        RunStream::new(rx, run(self.clone(), Sink { tx, modes }))
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
    /// left, a node pauses or fails, or the recursion limit.
    async fn drive(
        &self,
        mut backing: Backing<S>,
        thread: &str,
        start: Start<S::Delta>,
        sink: Option<&Sink<S>>,
    ) -> Result<Outcome<S>, GraphError> {
        let plan = &*self.plan;
        let emit = sink.and_then(emit_fn);
        let (mut sources, mut prior) = match start {
            Start::Input(input) => {
                backing.input(input).await?;
                if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::VALUES)) {
                    sink.send(Event::Values(backing.shared()));
                }
                (vec![None], Prior::default())
            }
            Start::Resume(answer) => {
                let (sources, mut prior) = self.load(backing.seq(), thread, true).await?;
                answer_interrupts(&mut prior, answer, thread)?;
                (sources, prior)
            }
            Start::Continue => self.load(backing.seq(), thread, false).await?,
        };
        let mut steps = 0;
        loop {
            let state = backing.shared();
            let tasks = plan.next(&sources, &state)?;
            if tasks.is_empty() {
                break;
            }
            if steps == self.limit {
                return Err(GraphError::RecursionLimit { limit: self.limit });
            }
            steps += 1;
            let on = (!thread.is_empty()).then_some(thread);
            let (done, ran) =
                superstep::execute(plan, &tasks, state, &mut prior, on, emit.as_ref()).await;
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
                    .pause(backing, thread, &sources, &tasks, done, prior, sink, log)
                    .await;
            }
            // The answers were for this superstep's runs: a later visit to
            // the same node asks again.
            prior.answers.clear();
            let mut nodes = Vec::with_capacity(tasks.len());
            let mut updates = Vec::new();
            let want_updates = sink.is_some_and(|s| s.modes.contains(StreamMode::UPDATES));
            for (task, done) in tasks.iter().zip(done) {
                if let Done::Wrote(delta) = done {
                    let name = plan.nodes[task.node].name.as_str();
                    if want_updates {
                        updates.push((name.to_owned(), delta.clone()));
                    }
                    nodes.push((name, delta));
                }
            }
            backing.commit(nodes).await?;
            if let Some(sink) = sink {
                for (node, delta) in updates {
                    sink.send(Event::Update { node, delta });
                }
                if sink.modes.contains(StreamMode::VALUES) {
                    sink.send(Event::Values(backing.shared()));
                }
            }
            sources.clear();
            for task in &tasks {
                if !sources.contains(&Some(task.node)) {
                    sources.push(Some(task.node));
                }
            }
        }
        Ok(Outcome {
            thread: thread.to_owned(),
            seq: backing.seq(),
            interrupts: Vec::new(),
            state: backing.into_state(),
        })
    }

    /// A superstep in which a node failed or paused: nothing is applied;
    /// with a store, what finished is kept as a pending step.
    #[allow(clippy::too_many_arguments)]
    async fn pause(
        &self,
        mut backing: Backing<S>,
        thread: &str,
        sources: &[Source],
        tasks: &[crate::compile::Task],
        done: Vec<Done<S::Delta>>,
        mut prior: Prior<S::Delta>,
        sink: Option<&Sink<S>>,
        log: bool,
    ) -> Result<Outcome<S>, GraphError> {
        let plan = &*self.plan;
        let mut body = PendingBody {
            from: sources
                .iter()
                .map(|s| plan.source_name(*s).to_owned())
                .collect(),
            ..PendingBody::default()
        };
        let mut failure = None;
        let mut interrupts = Vec::new();
        for (task, done) in tasks.iter().zip(done) {
            let key = superstep::key(plan, task);
            // A task that paused or failed runs again: it keeps its answers.
            if !matches!(done, Done::Wrote(_))
                && let Some(values) = prior.answers.remove(&key)
            {
                body.answers.push(TaskAnswers {
                    task: key.clone(),
                    values,
                });
            }
            match done {
                Done::Wrote(delta) => {
                    let delta =
                        state_core::json::to_value(&delta).map_err(|e| GraphError::State {
                            context: format!("the delta of \"{}\" cannot be stored", key.node),
                            source: state_core::StateError::Serialize {
                                field: key.node.clone(),
                                message: e.to_string(),
                            },
                        })?;
                    body.writes.push(PendingWrite { task: key, delta });
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
                        failure = Some(GraphError::Node {
                            node: key.node,
                            source: error,
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
            let nodes = tasks
                .iter()
                .map(|t| plan.nodes[t.node].name.clone())
                .collect();
            backing.pending(nodes, body).await
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
            state: backing.into_state(),
        })
    }

    /// Where the run of `thread` stands: the sources of its next superstep
    /// and what is pending in it. With `resume`, something must be pending.
    async fn load(
        &self,
        seq: u64,
        thread: &str,
        resume: bool,
    ) -> Result<(Vec<Source>, Prior<S::Delta>), GraphError> {
        let nothing = |reason: &str| GraphError::Resume {
            thread: thread.to_owned(),
            reason: reason.to_owned(),
        };
        let log = |reason: String| GraphError::Log {
            thread: thread.to_owned(),
            seq,
            reason,
        };
        let Some(store) = &self.store else {
            return Err(GraphError::NoStore { method: "resume" });
        };
        if seq == 0 {
            return Err(nothing("the thread has no run yet"));
        }
        let Some(last) = store.history(thread, seq..=seq).await?.pop() else {
            return Err(log(
                "the thread's last step was compacted away; start a new run with invoke_thread"
                    .to_owned(),
            ));
        };
        let (names, prior) = if last.kind == StepKind::Pending {
            let body: PendingBody = serde_json::from_value(last.body)
                .map_err(|e| log(format!("not a pending step of a graph run: {e}")))?;
            let (names, prior) = Prior::decode(body, log)?;
            if resume && prior.interrupts.is_empty() {
                return Err(nothing("no interrupt is pending"));
            }
            (names, prior)
        } else {
            if resume {
                return Err(nothing("no interrupt is pending"));
            }
            let names = match last.metadata.get("nodes") {
                Some(Value::Array(names)) => names
                    .iter()
                    .map(|n| n.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>(),
                _ => None,
            };
            let Some(names) = names else {
                return Err(nothing(&format!(
                    "its last step ({seq}, {}) was not written by a graph run",
                    last.kind
                )));
            };
            (names, Prior::default())
        };
        let mut sources = Vec::new();
        for name in names {
            let source = if name == crate::START {
                None
            } else {
                Some(self.plan.node(&name).ok_or_else(|| {
                    log(format!(
                        "the log names node \"{name}\", which this graph does not have"
                    ))
                })?)
            };
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
        Ok((sources, prior))
    }
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
    Some(Arc::new(move |emitted| {
        let event = match emitted {
            Emitted::Custom { node, value } if modes.contains(StreamMode::CUSTOM) => {
                Event::Custom { node, value }
            }
            Emitted::Message { node, chunk } if modes.contains(StreamMode::MESSAGES) => {
                Event::Message { node, chunk }
            }
            _ => return,
        };
        let _ = tx.unbounded_send(event);
    }))
}
