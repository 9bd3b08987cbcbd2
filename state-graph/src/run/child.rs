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
use super::backing::{Backing, Child, Kept};
use super::cursor::LoggedRoutes;
use super::pending::{PendingBody, Prior, answer_interrupts};
use super::runner::{Position, Runner, Stop};
use crate::ctx::TaskScope;
use crate::error::{BoxError, GraphError};
use crate::graph_state::GraphState;
use crate::node::BoxFuture;
use crate::outcome::Resume;
use crate::plan::Cursor;
use crate::subgraph::{HandBack, SubCall, SubOutcome, SubgraphNode, SubgraphSnapshot};
use serde_json::Value;
use state_core::{Delta, State};
use state_store::{DeltasText, ObjectText, StepKind};
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
    fn snapshot(
        &self,
        node: &str,
        call: SubCall<S, C>,
    ) -> BoxFuture<Result<SubgraphSnapshot, GraphError>> {
        let child = self.child.clone();
        let node = node.to_owned();
        Box::pin(async move {
            let start = call.state.clone();
            child.child_snapshot(start, &node, call).await
        })
    }

    fn adopts(&self) -> bool {
        true
    }

    fn run(&self, call: SubCall<S, C>) -> BoxFuture<SubOutcome<S>> {
        let child = self.child.clone();
        Box::pin(async move {
            let start = call.state.clone();
            let (adopt, hand_back) = (call.adopt, call.hand_back);
            // Adopted, its final state is the parent's: its writes are not
            // composed to be applied again. Handed back, they are composed
            // to be streamed (or logged in a subgraph's step) in the
            // parent, not applied; or, logged in the parent's thread, kept
            // as it logged them.
            let kept = match (adopt, hand_back) {
                (true, _) => Kept::Nothing,
                (false, HandBack::Steps) => Kept::Steps(Vec::new()),
                (false, _) => Kept::Writes(None),
            };
            match child.run_child(start, kept, call).await {
                Ended::Done {
                    state,
                    kept,
                    handoff,
                } if adopt || hand_back != HandBack::No => {
                    let (update, steps) = kept.into_parts();
                    SubOutcome::Adopted {
                        state,
                        update,
                        steps,
                        handoff,
                    }
                }
                Ended::Done { kept, handoff, .. } => SubOutcome::Wrote {
                    update: kept.into_parts().0,
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
    fn snapshot(
        &self,
        node: &str,
        call: SubCall<S, C>,
    ) -> BoxFuture<Result<SubgraphSnapshot, GraphError>> {
        let child = self.child.clone();
        let node = node.to_owned();
        // The start recorded at the pause; older logs lack it, and then
        // `into_child` rebuilds it.
        let recorded = call
            .paused
            .as_ref()
            .and_then(|(body, _)| body.get("start"))
            .map(|start| T::from_json(start.clone()));
        let start = match recorded {
            Some(Ok(start)) => Ok(start),
            _ => mapped_start::<S, T>(&*self.into_child, &call.state),
        };
        Box::pin(async move { child.child_snapshot(Arc::new(start?), &node, call).await })
    }

    fn adopts(&self) -> bool {
        false
    }

    fn run(&self, call: SubCall<S, C>) -> BoxFuture<SubOutcome<S>> {
        let child = self.child.clone();
        let into_child = self.into_child.clone();
        let from_child = self.from_child.clone();
        Box::pin(async move {
            let start = match mapped_start::<S, T>(&*into_child, &call.state) {
                Ok(start) => start,
                Err(e) => return SubOutcome::Failed(Box::new(e)),
            };
            // Kept for a pause (the snapshot's start); sharing it costs the
            // child's first write one clone, less than writing it as JSON.
            let start = Arc::new(start);
            match child.run_child(start.clone(), Kept::Nothing, call).await {
                Ended::Done { state, handoff, .. } => SubOutcome::Wrote {
                    update: Some(from_child(&*state)),
                    handoff,
                },
                Ended::Paused(SubOutcome::Paused {
                    mut body,
                    interrupts,
                    failed,
                }) => {
                    if let (Some(object), Ok(start)) = (body.as_object_mut(), start.to_json()) {
                        object.insert("start".to_owned(), start);
                    }
                    SubOutcome::Paused {
                        body,
                        interrupts,
                        failed,
                    }
                }
                Ended::Paused(outcome) => outcome,
            }
        })
    }
}

/// How a subgraph's run ended (`P`: its parent's state type).
enum Ended<T: State, P: State> {
    Done {
        state: Arc<T>,
        /// What it kept of its steps' writes, as asked.
        kept: Kept<T::Delta>,
        handoff: Option<Vec<crate::command::Goto>>,
    },
    /// Paused or failed: what the parent gets.
    Paused(SubOutcome<P>),
}

impl<T, C> CompiledGraph<T, C>
where
    T: GraphState,
    C: Send + Sync + 'static,
{
    /// Where a subgraph task stands: its state from `start` and its steps
    /// logged since the root's last committed step, and its position (its
    /// pause, unless it logged steps after it; else its last step; else
    /// its start). Also the pause it stands at, if it does.
    async fn restore<P>(
        &self,
        start: Arc<T>,
        kept: Kept<T::Delta>,
        call: &SubCall<P, C>,
        paused: Option<(Value, Vec<(String, Value)>)>,
    ) -> Result<(Child<T>, Position<T::Delta>, Option<Value>), GraphError> {
        // Its steps' deltas are kept as logged only when they are logged.
        let kept = match kept {
            Kept::Steps(_) if call.log.is_none() => Kept::Writes(None),
            kept => kept,
        };
        let stored = call.store.is_some() && call.thread.is_some();
        // Its namespace as logged: read and written only with a store.
        let ns = if stored || call.log.is_some() {
            call.namespace.join("|")
        } else {
            String::new()
        };
        // Written once, copied as text into every step's metadata.
        let mut tags = None;
        if call.log.is_some() {
            let unwritable = |e: serde_json::Error| GraphError::Log {
                thread: call.thread.clone().unwrap_or_default(),
                seq: call.at,
                reason: format!("the subgraph's tags cannot be written: {e}"),
            };
            tags.insert(ObjectText::new())
                .field("ns", &ns)
                .and_then(|t| t.field("base", &call.base))
                .and_then(|t| t.field("at", &call.at))
                .map_err(unwritable)?;
        }
        let mut child = Child {
            state: start,
            log: call.log.clone(),
            tags,
            kept,
            steps: 0,
        };
        let thread = call.thread.as_deref().unwrap_or_default();
        let mut last = None;
        // A fresh run's subgraph has nothing logged to go on from: no read
        // (on SQL backends a round trip per subgraph task).
        if let (Some(store), Some(_), false) = (&call.store, &call.thread, call.fresh) {
            for step in store.history(thread, call.base.saturating_add(1)..).await? {
                if step.kind != StepKind::Subgraph
                    || step.metadata.get("ns").and_then(Value::as_str) != Some(ns.as_str())
                {
                    continue;
                }
                replay(&mut child, &step.body, thread, step.seq)?;
                last = Some(step);
            }
        }
        let after_pause = last.as_ref().is_some_and(|step| step.seq > call.at);
        let (position, stands) = match (paused, &last) {
            (Some((body, answers)), _) if !after_pause => (
                self.paused_position(body.clone(), answers, thread)?,
                Some(body),
            ),
            (_, Some(step)) => {
                let nodes: Vec<String> = step.nodes().iter().map(|n| (*n).to_owned()).collect();
                let cursor = LoggedRoutes::from_metadata(&step.metadata, &nodes)
                    .and_then(|routes| routes.cursor(&self.plan, &nodes))
                    .map_err(|reason| GraphError::Log {
                        thread: thread.to_owned(),
                        seq: step.seq,
                        reason,
                    })?;
                let position = Position {
                    cursor,
                    prior: Prior::default(),
                    past_breakpoint: false,
                };
                (position, None)
            }
            _ => {
                let position = Position {
                    cursor: Cursor::start(),
                    prior: Prior::default(),
                    past_breakpoint: false,
                };
                (position, None)
            }
        };
        Ok((child, position, stands))
    }

    /// Runs this graph as a subgraph task (or goes on with it), from
    /// `start`, keeping what its steps write as `kept` asks.
    async fn run_child<P: State>(
        &self,
        start: Arc<T>,
        kept: Kept<T::Delta>,
        mut call: SubCall<P, C>,
    ) -> Ended<T, P> {
        let failed = |error: GraphError| Ended::Paused(SubOutcome::Failed(Box::new(error)));
        let Some(context) = call.context.clone() else {
            return failed(GraphError::NoContext {
                context: std::any::type_name::<C>(),
            });
        };
        let paused = call.paused.take();
        let (child, position, _) = match self.restore(start, kept, &call, paused).await {
            Ok(restored) => restored,
            Err(e) => return failed(e),
        };
        let call_fresh = call.fresh;
        let SubCall {
            state,
            thread,
            store,
            namespace,
            base,
            at,
            events,
            ..
        } = call;
        // The parent's state is the child's start (or read into it): let
        // go, an adopted one is the child's alone to change in place.
        drop(state);
        let thread_name = thread.as_deref().unwrap_or_default();
        let sink = events
            .as_ref()
            .map(|nested| nested.sink::<T>(namespace.clone()));
        let (before, after) = self.breakpoints();
        let mut runner = Runner {
            plan: &self.plan,
            before,
            after,
            limit: self.limit,
            store: store.as_ref(),
            thread: thread.as_deref(),
            context,
            sink,
            scope: TaskScope::new(namespace, thread.clone()),
            base,
            at,
            fresh: call_fresh,
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
                kept: child.kept,
                state: child.state,
                handoff: None,
            },
            Stop::Handoff { goto } => Ended::Done {
                kept: child.kept,
                state: child.state,
                handoff: Some(goto),
            },
            Stop::Breakpoint { body, .. } => paused(&body, Vec::new(), None),
            Stop::Paused(p) => {
                let failed = p.failure.map(|e| Box::new(e) as BoxError);
                let mut interrupts = p.interrupts;
                for interrupt in &mut interrupts {
                    if interrupt.namespace.is_empty() {
                        interrupt.namespace = runner.scope.namespace.clone();
                    }
                }
                paused(&p.body, interrupts, failed)
            }
        }
    }

    /// The snapshot of this graph as a subgraph task paused inside (see
    /// [`SubgraphSnapshot`]), without running it.
    async fn child_snapshot<P>(
        &self,
        start: Arc<T>,
        node: &str,
        call: SubCall<P, C>,
    ) -> Result<SubgraphSnapshot, GraphError> {
        let paused = call.paused.clone();
        let (child, position, stands) = self.restore(start, Kept::Nothing, &call, paused).await?;
        let state = child.state.to_json().map_err(|source| GraphError::State {
            context: "the subgraph's state cannot be shown as JSON".to_owned(),
            source,
        })?;
        let (tasks, _) = self
            .plan
            .next(&position.cursor, &child.state, call.context.as_deref())?;
        let mut next: Vec<String> = Vec::new();
        for task in &tasks {
            let key = super::superstep::key(&self.plan, task);
            let name = &self.plan.nodes[task.node].name;
            if !position.prior.writes.contains_key(&key) && !next.contains(name) {
                next.push(name.clone());
            }
        }
        let body: Option<PendingBody> = stands.and_then(|b| serde_json::from_value(b).ok());
        let mut interrupts: Vec<_> = body
            .as_ref()
            .map(|b| b.all_interrupts().into_iter().map(|(_, i)| i).collect())
            .unwrap_or_default();
        for interrupt in &mut interrupts {
            if interrupt.namespace.is_empty() {
                interrupt.namespace = call.namespace.clone();
            }
        }
        let mut subgraphs = Vec::new();
        for inner in body.map(|b| b.children).unwrap_or_default() {
            let Some(index) = self.plan.node(&inner.task.node) else {
                continue;
            };
            if let crate::spec::Body::Subgraph(sub) = &self.plan.nodes[index].body {
                let inner_call = SubCall {
                    state: child.state.clone(),
                    context: call.context.clone(),
                    thread: call.thread.clone(),
                    store: call.store.clone(),
                    log: None,
                    namespace: inner.namespace.clone(),
                    base: call.base,
                    at: call.at,
                    fresh: false,
                    paused: Some((inner.body, Vec::new())),
                    events: None,
                    adopt: false,
                    hand_back: HandBack::No,
                };
                subgraphs.push(sub.snapshot(&inner.task.node, inner_call).await?);
            }
        }
        Ok(SubgraphSnapshot {
            node: node.to_owned(),
            namespace: call.namespace,
            state,
            next,
            interrupts,
            subgraphs,
        })
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
            past_breakpoint: body.breakpoint.is_some(),
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
    let deltas = deltas
        .iter()
        .map(|delta| T::Delta::from_json(delta.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(format!("a subgraph's delta does not fit its state: {e}")))?;
    if let Kept::Steps(steps) = &mut child.kept {
        let text = DeltasText::write(&deltas)
            .map_err(|e| err(format!("a subgraph's deltas cannot be written again: {e}")))?;
        steps.push(text);
    }
    let merged = T::Delta::merge_all(deltas)
        .map_err(|e| err(format!("a subgraph's superstep does not merge: {e}")))?;
    if child.kept.wants_writes() {
        child
            .kept
            .compose(merged.clone())
            .map_err(|e| err(format!("a subgraph's steps do not compose: {e}")))?;
    }
    Arc::make_mut(&mut child.state)
        .apply(merged)
        .map_err(|e| err(format!("a subgraph's step is refused by its reducers: {e}")))?;
    child.steps += 1;
    Ok(())
}

/// A mapped subgraph's start: `into_child` of the parent's state, applied
/// to a fresh state of its own.
fn mapped_start<S, T: State>(
    into_child: &(dyn Fn(&S) -> T::Delta + Send + Sync),
    parent: &S,
) -> Result<T, GraphError> {
    let mut start = T::default();
    start
        .apply(into_child(parent))
        .map_err(|source| GraphError::State {
            context: "the subgraph's input (into_child) was refused by its reducers".to_owned(),
            source,
        })?;
    Ok(start)
}
