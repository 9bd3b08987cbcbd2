//! Running the tasks of one superstep: all at once on the same state,
//! each with its retries, panics caught; what each did is reported in task
//! order, whichever finished first.

use crate::command::{Command, Goto};
use crate::ctx::{Ctx, CtxParts, EmitFn, TaskInfo, TaskScope};
use crate::error::{BoxError, GraphError, NodeError, Panicked};
use crate::node::Call;
use crate::outcome::Interrupt;
use crate::plan::{Plan, Resolved, Task};
use crate::run::pending::{ChildPrior, Prior, TaskKey};
use crate::spec::{Body, NodeSpec};
use crate::stream::Nested;
use crate::subgraph::{ChildLog, HandBack, SubCall, SubOutcome};
use futures::FutureExt;
use serde_json::Value;
use state_core::State;
use state_store::{DeltasText, Store};
use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// What a task that finished wrote: its update and where its command goes.
pub(crate) struct Output<D> {
    pub update: Option<D>,
    pub resolved: Resolved,
    /// Routed in the parent graph ([`Command::to_parent`]).
    pub parent: bool,
    /// Where, when routed in the parent (resolved there).
    pub handoff: Option<Vec<Goto>>,
}

/// What every task of a superstep shares.
pub(crate) struct Env<'a, C> {
    pub thread: Option<&'a str>,
    pub store: Option<&'a Store>,
    pub context: &'a Arc<C>,
    /// The superstep's number in its graph's run (the thread's step at the
    /// top, the subgraph's own count inside one).
    pub step: u64,
    /// Supersteps the run may take after this one.
    pub remaining: usize,
    pub emit: Option<&'a EmitFn>,
    pub messages: bool,
    /// The namespace of the graph the tasks run in.
    pub namespace: &'a [String],
    /// What the tasks' [`TaskInfo`]s share (the namespace, hashed).
    pub scope: &'a Arc<TaskScope>,
    /// Where subgraph tasks log their steps.
    pub log: Option<Arc<dyn ChildLog>>,
    /// Where the root run stands (see [`SubCall`]).
    pub base: u64,
    pub at: u64,
    /// Whether nothing was logged after `base` when the run began (see
    /// [`SubCall::fresh`]).
    pub fresh: bool,
    /// Where subgraph tasks send their events.
    pub nested: Option<&'a Nested>,
    /// Whether a subgraph task of the superstep's state type may run on
    /// the superstep's state and hand back its final state
    /// ([`Done::Adopted`]): it is the superstep's only task, and nothing
    /// reads its writes (no log, no stream of updates or messages, no
    /// parent composing them).
    pub adopt: bool,
    /// Whether (and how) a lone subgraph task of the superstep's state
    /// type hands back its final state along with what it wrote
    /// ([`Done::Adopted`] with an update or its steps): the superstep logs
    /// or streams the writes, and takes the state instead of applying them
    /// again.
    pub hand_back: HandBack,
}

impl<C> Env<'_, C> {
    /// Who `task` is, for its context and the stream.
    pub fn task_info<S: State>(&self, plan: &Plan<S, C>, task: &Task) -> TaskInfo {
        TaskInfo {
            node: plan.nodes[task.node].name.clone(),
            step: self.step,
            send: task.send.as_ref().map(|(i, _)| *i),
            scope: self.scope.clone(),
        }
    }
}

/// What one task of a superstep did.
pub(crate) enum Done<S: State> {
    /// It returned its output (or had one pending from before).
    Wrote(Output<S::Delta>),
    /// A subgraph task ran on the superstep's state (see [`Env::adopt`]
    /// and [`Env::hand_back`]): its final state is the state after the
    /// superstep; the output's update is empty when adopted, what it wrote
    /// when handed back, and its steps' deltas as logged are there instead
    /// with [`HandBack::Steps`]. Boxed: every task's `Done` is moved, few
    /// are this.
    Adopted(Box<HandedBack<S>>, Output<S::Delta>),
    /// It paused (or was still paused from before).
    Paused { id: String, value: Value },
    /// A subgraph task paused (or failed) inside: the subgraph's pending
    /// body, its interrupts.
    Child {
        namespace: Vec<String>,
        body: Value,
        interrupts: Vec<Interrupt>,
        failed: Option<BoxError>,
    },
    /// It failed.
    Failed(BoxError),
}

/// A subgraph's final state, and its steps' deltas as it logged them when
/// the superstep logs them as they are ([`HandBack::Steps`]).
pub(crate) struct HandedBack<S> {
    pub state: Arc<S>,
    pub steps: Option<Vec<DeltasText>>,
}

impl<S: State> Done<S> {
    /// Whether it finished (nothing paused or failed).
    pub fn finished(&self) -> bool {
        matches!(self, Done::Wrote(_) | Done::Adopted(..))
    }
}

pub(crate) fn key<S: State, C>(plan: &Plan<S, C>, task: &Task) -> TaskKey {
    TaskKey {
        node: plan.nodes[task.node].name.clone(),
        send: task.send.as_ref().map(|(i, _)| *i),
    }
}

/// Runs `tasks` on `state`; tasks with a write or an unanswered interrupt
/// in `prior` are not run again. Also returns how many tasks ran.
pub(crate) async fn execute<S: State + Send + Sync + 'static, C: Send + Sync + 'static>(
    plan: &Plan<S, C>,
    tasks: &[Task],
    state: Arc<S>,
    prior: &mut Prior<S::Delta>,
    env: &Env<'_, C>,
) -> (Vec<Done<S>>, usize)
where
    S::Delta: Send + 'static,
{
    let mut runs = Vec::with_capacity(tasks.len());
    let mut done: Vec<Option<Done<S>>> = Vec::with_capacity(tasks.len());
    for task in tasks {
        let mut answers = Vec::new();
        let mut child = None;
        // A task's key is only needed when something was pending.
        if !prior.is_empty() {
            let key = key(plan, task);
            if let Some(delta) = prior.writes.remove(&key) {
                done.push(Some(Done::Wrote(delta)));
                continue;
            }
            if let Some(interrupt) = prior.take_interrupt(&key) {
                done.push(Some(Done::Paused {
                    id: interrupt.id,
                    value: interrupt.value,
                }));
                continue;
            }
            // Answers belong to this superstep's run of the task only.
            answers = prior.answers.get(&key).cloned().unwrap_or_default();
            child = prior.children.remove(&key);
        }
        runs.push(run_task(plan, task, state.clone(), answers, child, env));
        done.push(None);
    }
    drop(state);
    let count = runs.len();
    // One run is awaited as it is: join_all would box and copy it.
    let ran = match (runs.pop(), runs.is_empty()) {
        (Some(run), true) => vec![run.await],
        (Some(last), false) => {
            runs.push(last);
            futures::future::join_all(runs).await
        }
        (None, _) => Vec::new(),
    };
    let mut ran = ran.into_iter();
    let done = done
        .into_iter()
        .map(|d| match d {
            Some(d) => d,
            // One run per task without a prior result, in order.
            None => ran
                .next()
                .unwrap_or_else(|| Done::Failed("task lost".into())),
        })
        .collect();
    (done, count)
}

/// One task: the node, retried as its policy says, or a subgraph.
async fn run_task<S: State + Send + Sync + 'static, C: Send + Sync + 'static>(
    plan: &Plan<S, C>,
    task: &Task,
    state: Arc<S>,
    answers: Vec<Value>,
    child: Option<ChildPrior>,
    env: &Env<'_, C>,
) -> Done<S>
where
    S::Delta: Send + 'static,
{
    let spec = &plan.nodes[task.node];
    if let Body::Subgraph(subgraph) = &spec.body {
        return run_subgraph(plan, task, subgraph.as_ref(), state, child, env).await;
    }
    let mut attempt = 1;
    loop {
        let parts = CtxParts {
            task: env.task_info(plan, task),
            store: env.store,
            remaining: env.remaining,
            answers: answers.clone(),
            events: env.emit.cloned(),
            messages: env.messages,
        };
        let ctx = Ctx::new(parts, env.context.clone());
        let result =
            crate::ctx::with_message_stream(&ctx, call(spec, task, state.clone(), ctx.clone()))
                .await;
        if let Some(value) = ctx.take_raised() {
            return Done::Paused {
                id: uuid::Uuid::new_v4().to_string(),
                value,
            };
        }
        match result {
            Ok(command) => return resolve(plan, task.node, command),
            Err(Failure::Panic(panic)) => return Done::Failed(Box::new(panic)),
            Err(Failure::Error(error)) => match &spec.retry {
                Some(policy) if policy.retries(attempt, &error) => {
                    tokio::time::sleep(policy.delay(attempt)).await;
                    attempt += 1;
                }
                _ => return Done::Failed(error.into_inner()),
            },
        }
    }
}

/// A subgraph task: the child graph run (or gone on with) inside this
/// superstep.
async fn run_subgraph<S: State + Send + Sync + 'static, C: Send + Sync + 'static>(
    plan: &Plan<S, C>,
    task: &Task,
    subgraph: &dyn crate::subgraph::SubgraphNode<S, C>,
    state: Arc<S>,
    child: Option<ChildPrior>,
    env: &Env<'_, C>,
) -> Done<S>
where
    S::Delta: Send + 'static,
{
    // Its segment is hashed from the scope directly: no `TaskInfo` made.
    let namespace = || {
        let mut namespace = Vec::with_capacity(env.namespace.len() + 1);
        namespace.extend_from_slice(env.namespace);
        namespace.push(env.scope.segment(
            env.step,
            &plan.nodes[task.node].name,
            task.send.as_ref().map(|(i, _)| *i),
        ));
        namespace
    };
    let call = SubCall {
        state,
        context: Some(env.context.clone()),
        thread: env.thread.map(str::to_owned),
        store: env.store.cloned(),
        log: env.log.clone(),
        namespace: namespace(),
        base: env.base,
        at: env.at,
        fresh: env.fresh,
        paused: child.map(|c| (c.body, c.answers)),
        events: env.nested.cloned(),
        adopt: env.adopt,
        hand_back: env.hand_back,
    };
    match AssertUnwindSafe(subgraph.run(call)).catch_unwind().await {
        Ok(SubOutcome::Wrote { update, handoff }) => subgraph_output(plan, task, update, handoff),
        Ok(SubOutcome::Adopted {
            state,
            update,
            steps,
            handoff,
        }) => match subgraph_output(plan, task, update, handoff) {
            Done::Wrote(output) => Done::Adopted(Box::new(HandedBack { state, steps }), output),
            other => other,
        },
        Ok(SubOutcome::Paused {
            body,
            interrupts,
            failed,
            ..
        }) => Done::Child {
            // Made again: a pause is rarer than a copy.
            namespace: namespace(),
            body,
            interrupts,
            failed,
        },
        // The child graph's own error (its recursion limit, a command it
        // refused), as it is.
        Ok(SubOutcome::Failed(error)) => match error.downcast::<GraphError>() {
            Ok(graph) => Done::Failed(Box::new(Refused(*graph))),
            Err(other) => Done::Failed(other),
        },
        Err(payload) => match panicked(payload) {
            Failure::Panic(panic) => Done::Failed(Box::new(panic)),
            Failure::Error(error) => Done::Failed(error.into_inner()),
        },
    }
}

/// What a subgraph task that reached its end wrote: `update`, and where a
/// node inside routed in this graph, if one did.
fn subgraph_output<S: State, C>(
    plan: &Plan<S, C>,
    task: &Task,
    update: Option<S::Delta>,
    handoff: Option<Vec<Goto>>,
) -> Done<S> {
    match handoff {
        // A node inside routed here: the subgraph node's command.
        Some(goto) => resolve(
            plan,
            task.node,
            Command {
                update,
                goto,
                parent: false,
            },
        ),
        None => Done::Wrote(Output {
            update,
            resolved: Resolved::default(),
            parent: false,
            handoff: None,
        }),
    }
}

/// A command's targets checked against the node's destinations: one that
/// goes elsewhere fails the task (not retried: the node did what it does).
/// A command for the parent graph is resolved there.
fn resolve<S: State, C>(plan: &Plan<S, C>, node: usize, command: Command<S::Delta>) -> Done<S> {
    let Command {
        update,
        goto,
        parent,
    } = command;
    if parent {
        return Done::Wrote(Output {
            update,
            resolved: Resolved::default(),
            parent,
            handoff: Some(goto),
        });
    }
    if goto.is_empty() {
        return Done::Wrote(Output {
            update,
            resolved: Resolved::default(),
            parent,
            handoff: None,
        });
    }
    match plan.resolve(node, goto) {
        Ok(resolved) => Done::Wrote(Output {
            update,
            resolved,
            parent,
            handoff: None,
        }),
        Err(error) => Done::Failed(Box::new(Refused(error))),
    }
}

/// A command its graph refused (an undeclared target): the graph's error
/// as it is, where a node's own error is wrapped with the node's name.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct Refused(pub GraphError);

enum Failure {
    Error(NodeError),
    Panic(Panicked),
}

async fn call<S: State + Send + Sync + 'static, C: Send + Sync + 'static>(
    spec: &NodeSpec<S, C>,
    task: &Task,
    state: Arc<S>,
    ctx: Ctx<C>,
) -> Result<Command<S::Delta>, Failure>
where
    S::Delta: Send + 'static,
{
    match (&spec.body, &task.send) {
        (Body::State(node), _) => call_node(&node.call, state, ctx).await,
        (Body::Worker(node), Some((_, input))) => call_node(&node.call, input.clone(), ctx).await,
        (Body::Worker(_), None) => Err(Failure::Error(NodeError::msg(
            "a worker ran without an input (a fan-out sends it one)",
        ))),
        // Run by `run_subgraph`, never called as a node.
        (Body::Subgraph(_), _) => Err(Failure::Error(NodeError::msg(
            "a subgraph was called as a plain node",
        ))),
    }
}

async fn call_node<X: ?Sized, C, D>(
    call: &Call<X, C, D>,
    input: Arc<X>,
    ctx: Ctx<C>,
) -> Result<Command<D>, Failure> {
    match call {
        Call::Sync(f) => std::panic::catch_unwind(AssertUnwindSafe(|| f(&input, &ctx)))
            .map_err(panicked)?
            .map_err(Failure::Error),
        Call::Async(f) => {
            let run =
                std::panic::catch_unwind(AssertUnwindSafe(|| f(input, ctx))).map_err(panicked)?;
            AssertUnwindSafe(run)
                .catch_unwind()
                .await
                .map_err(panicked)?
                .map_err(Failure::Error)
        }
    }
}

fn panicked(payload: Box<dyn Any + Send>) -> Failure {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a panic payload that is not a string)".to_owned());
    Failure::Panic(Panicked { message })
}
