//! A compiled graph run as a node of another ([`SameState`] for a child of
//! the parent's state type, [`Mapped`] for another): its supersteps run
//! inside the parent's superstep, one after the other, on a state of its
//! own; with a store, each is logged as a subgraph step under the root
//! thread (tagged with the subgraph's namespace), so a crash inside goes on
//! from the last one; a pause inside is the parent's pause.
//!
//! A subgraph task that runs again (resumed, or continued after a crash)
//! rebuilds where it stood: its state from its start (the parent's state,
//! or `into_child` of it) and its logged steps since the root's last
//! committed step; its position from its last logged step, or from its
//! pause (nested in the root's pending step) when nothing was logged after.

use super::CompiledGraph;
use super::backing::{Backing, Child};
use super::cursor::LoggedRoutes;
use super::pending::{PendingBody, Prior, answer_interrupts};
use super::runner::{Position, Runner, Stop};
use crate::error::{BoxError, GraphError};
use crate::graph_state::GraphState;
use crate::node::BoxFuture;
use crate::outcome::Resume;
use crate::plan::Cursor;
use crate::subgraph::{SubCall, SubOutcome, SubgraphNode};
use serde_json::{Map, Value, json};
use state_core::{Delta, State};
use state_store::StepKind;
use std::sync::Arc;

/// A child graph of the parent's state type (`add_subgraph`): it starts on
/// the parent's state, and what its steps wrote, one after the other, is
/// the task's write in the parent's superstep.
pub(crate) struct SameState<S: State, C> {
    pub child: CompiledGraph<S, C>,
}

/// A child graph of another state type (`add_subgraph_mapped`): it starts
/// on `into_child` of the parent's state (applied to a fresh state), and
/// `from_child` of its final state is the task's write.
pub(crate) struct Mapped<S: State, T: State, C> {
    pub child: CompiledGraph<T, C>,
    pub into_child: MapFn<S, T::Delta>,
    pub from_child: MapFn<T, S::Delta>,
}

/// `into_child` / `from_child`: a state to the other graph's delta.
pub(crate) type MapFn<X, D> = Arc<dyn Fn(&X) -> D + Send + Sync>;

impl<S, C> SubgraphNode<S, C> for SameState<S, C>
where
    S: GraphState,
    C: Send + Sync + 'static,
{
    fn run(&self, call: SubCall<S, C>) -> BoxFuture<SubOutcome<S::Delta>> {
        let child = self.child.clone();
        Box::pin(async move {
            let start = call.state.clone();
            match child.run_child(start, true, call).await {
                Ended::Done {
                    writes, handoff, ..
                } => SubOutcome::Wrote {
                    update: writes,
                    handoff,
                },
                Ended::Paused(outcome) => outcome,
            }
        })
    }
}

impl<S, T, C> SubgraphNode<S, C> for Mapped<S, T, C>
where
    S: GraphState,
    T: GraphState,
    C: Send + Sync + 'static,
{
    fn run(&self, call: SubCall<S, C>) -> BoxFuture<SubOutcome<S::Delta>> {
        let child = self.child.clone();
        let into_child = self.into_child.clone();
        let from_child = self.from_child.clone();
        Box::pin(async move {
            let mut start = T::default();
            if let Err(source) = start.apply(into_child(&call.state)) {
                return SubOutcome::Failed(Box::new(GraphError::State {
                    context: "the subgraph's input (into_child) was refused by its reducers"
                        .to_owned(),
                    source,
                }));
            }
            match child.run_child(Arc::new(start), false, call).await {
                Ended::Done { state, handoff, .. } => SubOutcome::Wrote {
                    update: Some(from_child(&state)),
                    handoff,
                },
                Ended::Paused(outcome) => outcome,
            }
        })
    }
}

/// How a subgraph's run ended.
enum Ended<T: State, D> {
    Done {
        state: T,
        /// What its steps wrote, one after the other (when kept).
        writes: Option<T::Delta>,
        handoff: Option<Vec<crate::command::Goto>>,
    },
    /// Paused or failed: what the parent gets.
    Paused(SubOutcome<D>),
}

impl<T, C> CompiledGraph<T, C>
where
    T: GraphState,
    C: Send + Sync + 'static,
{
    /// Runs this graph as a subgraph task (or goes on with it), from
    /// `start`, keeping what its steps write when `keep_writes`.
    async fn run_child<P, D>(
        &self,
        start: Arc<T>,
        keep_writes: bool,
        call: SubCall<P, C>,
    ) -> Ended<T, D> {
        let failed = |error: GraphError| Ended::Paused(SubOutcome::Failed(Box::new(error)));
        let SubCall {
            context,
            thread,
            store,
            log,
            namespace,
            base,
            at,
            paused,
            events,
            ..
        } = call;
        let ns = namespace.join("|");
        let mut child = Child {
            state: start,
            log: log.clone(),
            tags: {
                let mut tags = Map::new();
                tags.insert("ns".to_owned(), json!(ns));
                tags.insert("base".to_owned(), json!(base));
                tags.insert("at".to_owned(), json!(at));
                tags
            },
            writes: None,
            keep_writes,
            steps: 0,
        };
        // Its own steps logged since the root's last committed step.
        let mut last = None;
        if let (Some(store), Some(thread), Some(_)) = (&store, &thread, &log) {
            let steps = match store.history(thread, base.saturating_add(1)..).await {
                Ok(steps) => steps,
                Err(e) => return failed(e.into()),
            };
            for step in steps {
                if step.kind != StepKind::Subgraph
                    || step.metadata.get("ns").and_then(Value::as_str) != Some(ns.as_str())
                {
                    continue;
                }
                if let Err(e) = replay(&mut child, &step.body, thread, step.seq) {
                    return failed(e);
                }
                last = Some(step);
            }
        }
        // Where it stands: its pause, unless it logged steps after it.
        let after_pause = last.as_ref().is_some_and(|step| step.seq > at);
        let thread_name = thread.as_deref().unwrap_or_default();
        let position = match (paused, &last) {
            (Some((body, answers)), _) if !after_pause => {
                match self.paused_position(body, answers, thread_name) {
                    Ok(position) => position,
                    Err(e) => return failed(e),
                }
            }
            (_, Some(step)) => {
                let nodes: Vec<String> = step.nodes().iter().map(|n| (*n).to_owned()).collect();
                let cursor = LoggedRoutes::from_metadata(&step.metadata)
                    .and_then(|routes| routes.cursor(&self.plan, &nodes));
                match cursor {
                    Ok(cursor) => Position {
                        cursor,
                        prior: Prior::default(),
                        past_breakpoint: false,
                    },
                    Err(reason) => {
                        return failed(GraphError::Log {
                            thread: thread_name.to_owned(),
                            seq: step.seq,
                            reason,
                        });
                    }
                }
            }
            _ => Position {
                cursor: Cursor::start(),
                prior: Prior::default(),
                past_breakpoint: false,
            },
        };
        let mut runner = Runner {
            plan: &self.plan,
            limit: self.limit,
            store: store.as_ref(),
            thread: thread.as_deref(),
            context,
            sink: events
                .as_ref()
                .map(|nested| nested.sink::<T>(namespace.clone())),
            namespace: namespace.clone(),
            base,
            at,
            nested: events.clone(),
            steps: child.steps as usize,
        };
        let mut backing = Backing::Child(child);
        let stop = match runner.run(&mut backing, position).await {
            Ok(stop) => stop,
            Err(e) => return failed(e),
        };
        let Backing::Child(child) = backing else {
            return failed(GraphError::Log {
                thread: thread_name.to_owned(),
                seq: at,
                reason: "a subgraph's run lost its state".to_owned(),
            });
        };
        let paused =
            |body: &PendingBody, interrupts, failed: Option<BoxError>| match serde_json::to_value(
                body,
            ) {
                Ok(body) => Ended::Paused(SubOutcome::Paused {
                    body,
                    interrupts,
                    failed,
                }),
                Err(e) => Ended::Paused(SubOutcome::Failed(Box::new(GraphError::Log {
                    thread: thread_name.to_owned(),
                    seq: at,
                    reason: format!("the subgraph's pause cannot be written: {e}"),
                }))),
            };
        match stop {
            Stop::Ended => Ended::Done {
                writes: child.writes,
                state: unshare(child.state),
                handoff: None,
            },
            Stop::Handoff { goto } => Ended::Done {
                writes: child.writes,
                state: unshare(child.state),
                handoff: Some(goto),
            },
            Stop::Breakpoint { body, .. } => paused(&body, Vec::new(), None),
            Stop::Paused(p) => {
                let failed = p.failure.map(|e| Box::new(e) as BoxError);
                let mut interrupts = p.interrupts;
                for interrupt in &mut interrupts {
                    if interrupt.namespace.is_empty() {
                        interrupt.namespace = namespace.clone();
                    }
                }
                paused(&p.body, interrupts, failed)
            }
        }
    }

    /// A subgraph's position from its pause, with the answers given to it.
    fn paused_position(
        &self,
        body: Value,
        answers: Vec<(String, Value)>,
        thread: &str,
    ) -> Result<Position<T::Delta>, GraphError> {
        let err = |reason: String| GraphError::Log {
            thread: thread.to_owned(),
            seq: 0,
            reason: format!("a paused subgraph: {reason}"),
        };
        let mut body: PendingBody = serde_json::from_value(body)
            .map_err(|e| err(format!("not a pending step of a graph run: {e}")))?;
        let pending = body.all_interrupts();
        let mut prior = Prior::decode(&mut body, &self.plan, err)?;
        if !answers.is_empty() {
            answer_interrupts(&mut prior, &pending, Resume::ById(answers), thread)?;
        }
        let cursor = body.routes().cursor(&self.plan, &body.from).map_err(err)?;
        Ok(Position {
            cursor,
            past_breakpoint: body.breakpoint == Some(super::pending::Breakpoint::Before),
            prior,
        })
    }
}

/// A logged subgraph step applied again to the subgraph's run.
fn replay<T: GraphState>(
    child: &mut Child<T>,
    body: &Value,
    thread: &str,
    seq: u64,
) -> Result<(), GraphError> {
    let err = |reason: String| GraphError::Log {
        thread: thread.to_owned(),
        seq,
        reason,
    };
    let deltas = body
        .get("deltas")
        .and_then(Value::as_array)
        .ok_or_else(|| err("a subgraph step without its deltas".to_owned()))?;
    let mut merged = T::Delta::default();
    for delta in deltas {
        let delta = T::Delta::from_json(delta.clone())
            .map_err(|e| err(format!("a subgraph's delta does not fit its state: {e}")))?;
        merged = merged
            .merge(delta)
            .map_err(|e| err(format!("a subgraph's superstep does not merge: {e}")))?;
    }
    if child.keep_writes {
        let kept = merged.clone();
        child.writes = Some(match child.writes.take() {
            Some(before) => before
                .then(kept)
                .map_err(|e| err(format!("a subgraph's steps do not compose: {e}")))?,
            None => kept,
        });
    }
    Arc::make_mut(&mut child.state)
        .apply(merged)
        .map_err(|e| err(format!("a subgraph's step is refused by its reducers: {e}")))?;
    child.steps += 1;
    Ok(())
}

fn unshare<T: Clone>(state: Arc<T>) -> T {
    Arc::try_unwrap(state).unwrap_or_else(|s| (*s).clone())
}
