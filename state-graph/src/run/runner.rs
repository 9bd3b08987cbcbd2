//! The loop that runs a graph superstep by superstep, for a top-level run
//! and for a subgraph's run inside its parent's superstep alike: plan the
//! next tasks, stop at a breakpoint, run them, commit what they wrote, and
//! go on until no task is left, a node pauses or fails, or the recursion
//! limit. Where it stops is the caller's to record ([`Stop`]).

use super::backing::{Backing, unstorable_metadata};
use super::cursor::{LoggedRoutes, LoggedSend, step_metadata};
use super::out_of_line::out_of_line;
use super::pending::{
    Breakpoint, ChildPending, Failure, PendingBody, PendingInterrupt, PendingWrite, Prior,
    TaskAnswers,
};
use super::superstep::{self, Done, Env};
use crate::command::Goto;
use crate::ctx::{EmitFn, Emitted, TaskScope};
use crate::error::GraphError;
use crate::graph_state::GraphState;
use crate::outcome::Interrupt;
use crate::plan::{Cursor, Plan, Target, Task};
use crate::stream::{Event, MessageMetadata, Nested, Sink, StreamMode};
use crate::subgraph::HandBack;
use serde_json::Value;
use state_core::State;
use state_store::Store;
use std::sync::Arc;

/// Where a run's loop starts: what its next superstep is planned from,
/// what is pending in it, and whether a breakpoint before it was passed.
pub(crate) struct Position<D> {
    pub cursor: Cursor,
    pub prior: Prior<D>,
    pub past_breakpoint: bool,
}

/// How a run's loop stopped.
pub(crate) enum Stop {
    /// No task left: the graph reached `END`.
    Ended,
    /// A node paused or failed; nothing of the superstep was applied.
    Paused(Paused),
    /// A static breakpoint, before the superstep `body` plans.
    Breakpoint {
        body: PendingBody,
        next: Vec<String>,
    },
    /// A node of this subgraph routed in the parent graph
    /// (`Command::to_parent`), once its superstep was committed.
    Handoff { goto: Vec<Goto> },
}

/// A paused superstep: what to log, what to show.
pub(crate) struct Paused {
    pub body: PendingBody,
    pub interrupts: Vec<Interrupt>,
    /// The paused tasks' nodes, once each.
    pub next: Vec<String>,
    /// One name per task, as a superstep's step lists them.
    pub tasks: Vec<String>,
    /// The first failure, when a node failed rather than paused.
    pub failure: Option<GraphError>,
    /// Whether anything ran (a continue on a paused thread runs nothing:
    /// its pending step already says all there is).
    pub ran: bool,
}

/// What a run needs besides its state: its graph and where it runs.
pub(crate) struct Runner<'a, S: State, C> {
    pub plan: &'a Plan<S, C>,
    /// The nodes it pauses before and after (by node index): the plan's,
    /// or the run's own (`with_interrupt_before`).
    pub before: &'a [bool],
    pub after: &'a [bool],
    pub limit: usize,
    pub store: Option<&'a Store>,
    /// The thread; `None` in memory.
    pub thread: Option<&'a str>,
    pub context: Arc<C>,
    pub sink: Option<Sink<S>>,
    /// What its tasks share: the graph's namespace (empty at the top) and
    /// the thread.
    pub scope: Arc<TaskScope>,
    /// Where the root run stands: its last committed step, and the step its
    /// position was read from.
    pub base: u64,
    pub at: u64,
    /// Whether the thread has no step after `base` that this run did not
    /// write (see [`SubCall::fresh`](crate::subgraph::SubCall::fresh)): a
    /// top-level run that started from its input, or has committed a
    /// superstep since it loaded; a subgraph's, its parent's.
    pub fresh: bool,
    /// Where subgraph tasks send their events.
    pub nested: Option<Nested>,
    /// Supersteps taken so far (counted against `limit`).
    pub steps: usize,
}

impl<S, C> Runner<'_, S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    /// Runs from `position` until the run stops.
    pub async fn run(
        &mut self,
        backing: &mut Backing<S>,
        position: Position<S::Delta>,
    ) -> Result<Stop, GraphError> {
        let plan = self.plan;
        let Position {
            mut cursor,
            mut prior,
            mut past_breakpoint,
        } = position;
        let emit = self.sink.as_ref().and_then(emit_fn);
        let messages = self
            .sink
            .as_ref()
            .is_some_and(|s| s.modes.contains(StreamMode::MESSAGES));
        let scope = self.scope.clone();
        let top = scope.namespace.is_empty();
        let want_updates = self
            .sink
            .as_ref()
            .is_some_and(|s| s.modes.contains(StreamMode::UPDATES));
        loop {
            let state = backing.shared();
            let (tasks, joins) = plan.next(&cursor, &state, Some(&self.context))?;
            if tasks.is_empty() {
                return Ok(Stop::Ended);
            }
            if !past_breakpoint && prior.is_empty() && tasks.iter().any(|t| self.before[t.node]) {
                let mut body = self.planned(&cursor);
                body.breakpoint = Some(Breakpoint::Before);
                return Ok(Stop::Breakpoint {
                    body,
                    next: task_names(plan, &tasks),
                });
            }
            past_breakpoint = false;
            if self.steps == self.limit {
                return Err(GraphError::RecursionLimit { limit: self.limit });
            }
            self.steps += 1;
            // The superstep's number: the step it commits as in a thread,
            // its count in memory, its own count inside a subgraph.
            let step = match (top, self.thread) {
                (false, _) => backing.seq() + 1,
                (true, Some(_)) => self.base + 1,
                (true, None) => self.steps as u64,
            };
            let has_subgraphs = tasks
                .iter()
                .any(|t| matches!(plan.nodes[t.node].body, crate::spec::Body::Subgraph(_)));
            // A lone subgraph task of this state type runs on the
            // superstep's state (handed over, not copied) and hands back its
            // final state, when nothing reads what it wrote: its writes
            // applied again here would make that same state.
            let lone = matches!(&tasks[..], [task] if matches!(
                &plan.nodes[task.node].body,
                crate::spec::Body::Subgraph(sub) if sub.adopts()
            )) && prior.is_empty();
            let adopt = lone && !want_updates && !messages && backing.adoptable();
            // Otherwise its writes are logged or streamed here, but its
            // final state is what applying them would make: taken, not
            // made again. Logged only (in a thread), they are logged as the
            // subgraph logged its steps: neither composed nor written again.
            let hand_back = match (lone && !adopt, backing.is_thread()) {
                (false, _) => HandBack::No,
                (true, true) if !want_updates && !messages => HandBack::Steps,
                (true, _) => HandBack::Writes,
            };
            let state = if adopt {
                drop(state);
                backing.take_shared()
            } else {
                state
            };
            let log = if has_subgraphs { backing.lend() } else { None };
            let env = Env {
                thread: self.thread,
                store: self.store,
                context: &self.context,
                step,
                remaining: self.limit - self.steps,
                emit: emit.as_ref(),
                messages,
                namespace: &scope.namespace,
                scope: &scope,
                log,
                base: self.base,
                at: self.at,
                fresh: self.fresh,
                nested: self.nested.as_ref(),
                adopt,
                hand_back,
            };
            let (done, ran) = superstep::execute(plan, &tasks, state, &mut prior, &env).await;
            drop(env);
            backing.take_back()?;
            if let Some(key) = prior
                .writes
                .keys()
                .chain(prior.interrupts.iter().map(|i| &i.task))
                .chain(prior.children.keys())
                .next()
            {
                return Err(GraphError::Log {
                    thread: self.thread.unwrap_or_default().to_owned(),
                    seq: self.at,
                    reason: format!(
                        "the pending step names a run of \"{}\" that this graph does not schedule there; was the graph changed?",
                        key.node
                    ),
                });
            }
            let stopped = done.iter().any(|d| !d.finished());
            if stopped {
                return self.paused(&cursor, &tasks, done, prior, ran > 0);
            }
            // The answers were for this superstep's runs: a later visit to
            // the same node asks again.
            prior.answers.clear();
            let env = Env {
                thread: self.thread,
                store: self.store,
                context: &self.context,
                step,
                remaining: 0,
                emit: None,
                messages,
                namespace: &scope.namespace,
                scope: &scope,
                log: None,
                base: self.base,
                at: self.at,
                fresh: self.fresh,
                nested: None,
                adopt: false,
                hand_back: HandBack::No,
            };
            let mut next = Cursor::default();
            let mut nodes = Vec::with_capacity(tasks.len());
            let mut updates = Vec::new();
            let mut said = Vec::new();
            let mut handoff = None;
            let mut adopted = None;
            let mut steps = None;
            for (task, done) in tasks.iter().zip(done) {
                if !next.sources.contains(&Some(task.node)) {
                    next.sources.push(Some(task.node));
                }
                let (output, handed) = match done {
                    Done::Wrote(output) => (output, None),
                    Done::Adopted(handed, output) => (output, Some(*handed)),
                    _ => continue,
                };
                let name = plan.nodes[task.node].name.as_str();
                if output.parent {
                    if top {
                        return Err(GraphError::NoParent {
                            node: name.to_owned(),
                        });
                    }
                    handoff
                        .get_or_insert_with(Vec::new)
                        .extend(output.handoff.into_iter().flatten());
                }
                take_all(&mut next.goto, output.resolved.targets);
                next.sends
                    .extend(output.resolved.sends.into_iter().map(|s| (task.node, s)));
                if let Some(handed) = handed {
                    adopted = Some(handed.state);
                    // Adopted, it wrote nothing to log or stream; handed
                    // back as its logged steps, they are its write.
                    if adopt {
                        continue;
                    }
                    if let Some(logged) = handed.steps {
                        steps = Some((name, logged));
                        continue;
                    }
                }
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
            // Named for the log only: a run in memory never reads them.
            let routes = if backing.logs() {
                Some(step_metadata(plan, &next).map_err(unstorable_metadata)?)
            } else {
                None
            };
            // The messages the deltas write, streamed once committed.
            let mut written = Vec::new();
            if let Some(sink) = self.sink.as_ref().filter(|_| messages) {
                for (task, (_, delta)) in said.iter().zip(&nodes) {
                    sink.delta_messages(task, delta, &mut written);
                }
            }
            // The commit is polled out of line: inlined, a thread's whole
            // commit made this loop's code larger than the cache.
            match (adopted, adopt) {
                (Some(state), true) => backing.adopt(state)?,
                (Some(state), false) => match steps {
                    Some((node, steps)) => {
                        out_of_line(backing.commit_steps(node, steps, routes, state)).await?
                    }
                    None => out_of_line(backing.commit_adopted(nodes, routes, state)).await?,
                },
                (None, false) => out_of_line(backing.commit(nodes, routes)).await?,
                // Its state was handed over: its writes have nothing to
                // apply to.
                (None, true) => {
                    return Err(GraphError::Log {
                        thread: self.thread.unwrap_or_default().to_owned(),
                        seq: self.at,
                        reason: "a subgraph given the superstep's state did not hand it back"
                            .to_owned(),
                    });
                }
            }
            if top && self.thread.is_some() {
                self.base = backing.seq();
                self.at = self.base;
                self.fresh = true;
            }
            if let Some(sink) = &self.sink {
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
            if let Some(goto) = handoff {
                return Ok(Stop::Handoff { goto });
            }
            if tasks.iter().any(|t| self.after[t.node]) {
                let state = backing.shared();
                let (after, _) = plan.next(&cursor, &state, Some(&self.context))?;
                if !after.is_empty() {
                    let mut body = self.planned(&cursor);
                    body.breakpoint = Some(Breakpoint::After);
                    return Ok(Stop::Breakpoint {
                        body,
                        next: task_names(plan, &after),
                    });
                }
            }
        }
    }

    /// A pending body planned from `cursor`.
    pub fn planned(&self, cursor: &Cursor) -> PendingBody {
        let plan = self.plan;
        let mut body = PendingBody::planned(
            cursor
                .sources
                .iter()
                .map(|s| plan.source_name(*s).to_owned())
                .collect(),
            LoggedRoutes::of(plan, cursor),
        );
        if self.scope.namespace.is_empty() && self.thread.is_some() {
            body.base = Some(self.base);
        }
        body
    }

    /// A superstep in which a node failed or paused: nothing is applied;
    /// what finished, what waits and what failed, for the pending step.
    fn paused(
        &self,
        cursor: &Cursor,
        tasks: &[Task],
        done: Vec<Done<S>>,
        mut prior: Prior<S::Delta>,
        ran: bool,
    ) -> Result<Stop, GraphError> {
        let plan = self.plan;
        let mut body = self.planned(cursor);
        let mut failure = None;
        let mut interrupts = Vec::new();
        let mut next = Vec::new();
        for (task, done) in tasks.iter().zip(done) {
            let key = superstep::key(plan, task);
            // A task that paused or failed runs again: it keeps its answers.
            if !done.finished() {
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
                        .map(|(_, t)| match t {
                            Target::Node(n) => plan.nodes[*n].name.clone(),
                            Target::End => crate::END.to_owned(),
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
                        namespace: Vec::new(),
                    });
                    body.interrupts.push(PendingInterrupt {
                        id,
                        task: key,
                        value,
                    });
                }
                Done::Child {
                    namespace,
                    body: child,
                    interrupts: inner,
                    failed,
                } => {
                    interrupts.extend(inner);
                    if let (Some(error), None) = (failed, &failure) {
                        body.failed = Some(Failure {
                            task: key.clone(),
                            error: error.to_string(),
                        });
                        failure = Some(GraphError::Node {
                            node: key.node.clone(),
                            source: error,
                        });
                    }
                    body.children.push(ChildPending {
                        task: key,
                        namespace,
                        body: child,
                    });
                }
                // Only the lone task of a superstep that finished adopts.
                Done::Adopted(..) => {
                    return Err(GraphError::Log {
                        thread: self.thread.unwrap_or_default().to_owned(),
                        seq: self.at,
                        reason: "a paused superstep adopted a subgraph's state".to_owned(),
                    });
                }
                Done::Failed(error) => {
                    if failure.is_none() {
                        body.failed = Some(Failure {
                            task: key.clone(),
                            error: error.to_string(),
                        });
                        failure = Some(match error.downcast::<superstep::Refused>() {
                            // A command going where it may not: the graph's
                            // error, as it is.
                            Ok(refused) => refused.0,
                            Err(error) => GraphError::Node {
                                node: key.node,
                                source: error,
                            },
                        });
                    }
                }
            }
        }
        Ok(Stop::Paused(Paused {
            body,
            interrupts,
            next,
            tasks: tasks
                .iter()
                .map(|t| plan.nodes[t.node].name.clone())
                .collect(),
            failure,
            ran,
        }))
    }
}

/// The names of `tasks`' nodes, once each, in order.
pub(crate) fn task_names<S: State, C>(plan: &Plan<S, C>, tasks: &[Task]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(tasks.len());
    for task in tasks {
        let name = &plan.nodes[task.node].name;
        if !names.contains(name) {
            names.push(name.clone());
        }
    }
    names
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
    let sink = sink.clone();
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
                    sink.streamed
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
        sink.send(event);
    }))
}

/// Moves `more` to the end of `into`: the list itself when `into` is
/// empty (a superstep's one command: no copy, no allocation).
pub(crate) fn take_all<T>(into: &mut Vec<T>, mut more: Vec<T>) {
    if into.is_empty() {
        *into = more;
    } else {
        into.append(&mut more);
    }
}
