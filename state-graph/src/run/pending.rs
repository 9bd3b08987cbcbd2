//! A paused superstep, as the runner logs it in a `pending` step: what its
//! finished nodes wrote, the interrupts waiting for a person, the answers
//! given so far. Each pending step holds the whole of it, so resuming reads
//! only the thread's last step.

use crate::error::GraphError;
use crate::plan::{Plan, Resolved, Sent, Target};
use crate::run::cursor::{LoggedRoutes, LoggedSend};
use crate::run::superstep::Output;
use crate::spec::END;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use state_core::{Delta, State};
use std::collections::{BTreeMap, HashMap};

/// One run of a node in a superstep, by name: the node, and for a worker
/// its place among the sends to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct TaskKey {
    pub node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<usize>,
}

/// The body of a `pending` step.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingBody {
    /// The nodes whose edges scheduled the superstep (`__start__`: the
    /// input): the runner plans it again from them, with the routes below.
    pub from: Vec<String>,
    /// The routes of the step before (see `cursor.rs`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub goto: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends: Vec<LoggedSend>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub joins: BTreeMap<String, Vec<String>>,
    /// The deltas of the nodes that finished, not to be computed again.
    #[serde(default)]
    pub writes: Vec<PendingWrite>,
    /// Interrupts waiting for an answer.
    #[serde(default)]
    pub interrupts: Vec<PendingInterrupt>,
    /// Answers given so far, per task, in call order.
    #[serde(default)]
    pub answers: Vec<TaskAnswers>,
    /// The node that failed, when a failure (not an interrupt) paused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Failure>,
    /// A static breakpoint paused the run: `"before"` the superstep (which
    /// then runs when the thread goes on) or `"after"` the step before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint: Option<Breakpoint>,
}

/// Where a static breakpoint paused a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Breakpoint {
    Before,
    After,
}

impl PendingBody {
    /// A body planned from `from` with `routes`.
    pub fn planned(from: Vec<String>, routes: LoggedRoutes) -> PendingBody {
        PendingBody {
            from,
            goto: routes.goto,
            sends: routes.sends,
            joins: routes.joins,
            ..PendingBody::default()
        }
    }

    /// The routes it was planned with.
    pub fn routes(&self) -> LoggedRoutes {
        LoggedRoutes {
            goto: self.goto.clone(),
            sends: self.sends.clone(),
            joins: self.joins.clone(),
        }
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingWrite {
    pub task: TaskKey,
    /// Its update (`null`: a command without one).
    pub delta: Value,
    /// Where its command went (`END` listed too: a pending write's
    /// command is replayed whole).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub goto: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sends: Vec<LoggedSend>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingInterrupt {
    pub id: String,
    pub task: TaskKey,
    pub value: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskAnswers {
    pub task: TaskKey,
    pub values: Vec<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Failure {
    pub task: TaskKey,
    pub error: String,
}

/// What a superstep starts with when it was paused before: decoded.
pub(crate) struct Prior<D> {
    pub writes: HashMap<TaskKey, Output<D>>,
    /// In the superstep's task order.
    pub interrupts: Vec<PendingInterrupt>,
    pub answers: HashMap<TaskKey, Vec<Value>>,
}

impl<D> Default for Prior<D> {
    fn default() -> Self {
        Prior {
            writes: HashMap::new(),
            interrupts: Vec::new(),
            answers: HashMap::new(),
        }
    }
}

impl<D> Prior<D> {
    /// Takes the pending interrupt of `task`, if any.
    pub fn take_interrupt(&mut self, task: &TaskKey) -> Option<PendingInterrupt> {
        let at = self.interrupts.iter().position(|i| i.task == *task)?;
        Some(self.interrupts.remove(at))
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.interrupts.is_empty() && self.answers.is_empty()
    }
}

impl<D: Delta> Prior<D> {
    /// Decodes a pending body's writes, interrupts and answers; `log`
    /// makes the error for a bad one.
    pub fn decode<S: State<Delta = D>, C>(
        body: &mut PendingBody,
        plan: &Plan<S, C>,
        log: impl Fn(String) -> GraphError,
    ) -> Result<Prior<D>, GraphError> {
        let mut prior = Prior::default();
        for write in std::mem::take(&mut body.writes) {
            let update = if write.delta.is_null() {
                None
            } else {
                Some(D::from_json(write.delta).map_err(|e| {
                    log(format!(
                        "the pending write of \"{}\" does not fit the state: {e}",
                        write.task.node
                    ))
                })?)
            };
            let from = plan.node(&write.task.node).ok_or_else(|| {
                log(format!(
                    "the pending write names node \"{}\", which this graph does not have",
                    write.task.node
                ))
            })?;
            let routes = LoggedRoutes {
                goto: BTreeMap::new(),
                sends: write.sends,
                joins: BTreeMap::new(),
            };
            let cursor = routes.cursor(plan, &[]).map_err(&log)?;
            let mut resolved = Resolved {
                targets: Vec::new(),
                sends: cursor
                    .sends
                    .into_iter()
                    .map(|(_, sent)| sent)
                    .collect::<Vec<Sent>>(),
            };
            for to in &write.goto {
                resolved.targets.push(if to == END {
                    Target::End
                } else {
                    Target::Node(plan.node(to).ok_or_else(|| {
                        log(format!(
                            "the pending write of \"{}\" goes to \"{to}\", which this graph does not have",
                            write.task.node
                        ))
                    })?)
                });
            }
            let _ = from;
            prior.writes.insert(
                write.task,
                Output {
                    update,
                    resolved,
                    parent: false,
                },
            );
        }
        prior.interrupts = std::mem::take(&mut body.interrupts);
        for answers in std::mem::take(&mut body.answers) {
            prior.answers.insert(answers.task, answers.values);
        }
        Ok(prior)
    }
}
