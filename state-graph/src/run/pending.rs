//! A paused superstep, as the runner logs it in a `pending` step: what its
//! finished nodes wrote, the interrupts waiting for a person, the answers
//! given so far, and, for a subgraph task paused inside, the subgraph's own
//! pending superstep, nested. Each pending step holds the whole of it, so
//! resuming reads only the thread's last step (and a paused subgraph's
//! steps since its parent's superstep began).

use crate::error::GraphError;
use crate::outcome::{Interrupt, Resume};
use crate::plan::{Plan, Resolved};
use crate::run::cursor::{LoggedRoutes, LoggedSend};
use crate::run::superstep::Output;
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
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
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
    /// Subgraph tasks paused inside: each subgraph's own pending body.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildPending>,
    /// A mapped subgraph's start (what `into_child` gave when it paused),
    /// so that reading a snapshot does not call the user's mapping again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Value>,
    /// The root run's last committed step when it paused (a subgraph's
    /// steps are those logged after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<u64>,
}

/// Where a static breakpoint paused a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Breakpoint {
    Before,
    After,
}

/// A subgraph task paused inside: its key here, and the subgraph's pending
/// body (its own state type's, so kept as JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChildPending {
    pub task: TaskKey,
    /// The subgraph's namespace, as its steps are logged.
    pub namespace: Vec<String>,
    pub body: Value,
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

    /// Every interrupt pending in it, its subgraphs' included, as
    /// [`Interrupt`]s (a subgraph's with its namespace), each with the task
    /// of this body it belongs to.
    pub fn all_interrupts(&self) -> Vec<(TaskKey, Interrupt)> {
        let mut all: Vec<(TaskKey, Interrupt)> = self
            .interrupts
            .iter()
            .map(|i| {
                (
                    i.task.clone(),
                    Interrupt {
                        id: i.id.clone(),
                        node: i.task.node.clone(),
                        value: i.value.clone(),
                        namespace: Vec::new(),
                    },
                )
            })
            .collect();
        for child in &self.children {
            let Ok(body) = serde_json::from_value::<PendingBody>(child.body.clone()) else {
                continue;
            };
            for (_, mut interrupt) in body.all_interrupts() {
                if interrupt.namespace.is_empty() {
                    interrupt.namespace = child.namespace.clone();
                }
                all.push((child.task.clone(), interrupt));
            }
        }
        // In the superstep's task order: nodes by name, then the runs
        // sent to workers (in the order they were listed).
        all.sort_by(|(a, _), (b, _)| match (a.send, b.send) {
            (None, None) => a.node.cmp(&b.node),
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(_), Some(_)) => std::cmp::Ordering::Equal,
        });
        all
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskAnswers {
    pub task: TaskKey,
    pub values: Vec<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Failure {
    pub task: TaskKey,
    pub error: String,
}

/// A subgraph task's pause, for its next run: its body, and the answers
/// given to its interrupts, by id.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChildPrior {
    pub body: Value,
    pub answers: Vec<(String, Value)>,
}

/// What a superstep starts with when it was paused before: decoded.
pub(crate) struct Prior<D> {
    pub writes: HashMap<TaskKey, Output<D>>,
    /// In the superstep's task order.
    pub interrupts: Vec<PendingInterrupt>,
    pub answers: HashMap<TaskKey, Vec<Value>>,
    /// Subgraph tasks paused inside.
    pub children: HashMap<TaskKey, ChildPrior>,
}

impl<D> Default for Prior<D> {
    fn default() -> Self {
        Prior {
            writes: HashMap::new(),
            interrupts: Vec::new(),
            answers: HashMap::new(),
            children: HashMap::new(),
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
        self.writes.is_empty()
            && self.interrupts.is_empty()
            && self.answers.is_empty()
            && self.children.is_empty()
    }
}

impl<D: Delta> Prior<D> {
    /// Decodes a pending body's writes, interrupts, answers and paused
    /// subgraphs; `log` makes the error for a bad one.
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
            let routes = LoggedRoutes {
                goto: BTreeMap::new(),
                sends: write.sends,
                joins: BTreeMap::new(),
            };
            let cursor = routes.cursor(plan, &[]).map_err(&log)?;
            let mut resolved = Resolved {
                targets: Vec::new(),
                sends: cursor.sends.into_iter().map(|(_, sent)| sent).collect(),
            };
            if !write.goto.is_empty() {
                // The node whose command chose them: the task's.
                let chooser = plan.node(&write.task.node).ok_or_else(|| {
                    log(format!(
                        "a pending write of \"{}\", a node this graph does not have",
                        write.task.node
                    ))
                })?;
                for to in &write.goto {
                    let target = plan.target(to).ok_or_else(|| {
                        log(format!(
                            "the pending write of \"{}\" goes to \"{to}\", which this graph does not have",
                            write.task.node
                        ))
                    })?;
                    resolved.targets.push((chooser, target));
                }
            }
            prior.writes.insert(
                write.task,
                Output {
                    update,
                    resolved,
                    parent: false,
                    handoff: None,
                },
            );
        }
        prior.interrupts = std::mem::take(&mut body.interrupts);
        for answers in std::mem::take(&mut body.answers) {
            prior.answers.insert(answers.task, answers.values);
        }
        for child in std::mem::take(&mut body.children) {
            prior.children.insert(
                child.task,
                ChildPrior {
                    body: child.body,
                    answers: Vec::new(),
                },
            );
        }
        Ok(prior)
    }
}

/// Gives each answered interrupt's task its answer; answered interrupts
/// are no longer pending. An interrupt inside a paused subgraph is
/// answered by passing the answer down, by id, to the subgraph's run.
pub(crate) fn answer_interrupts<D>(
    prior: &mut Prior<D>,
    pending: &[(TaskKey, Interrupt)],
    answer: Resume,
    thread: &str,
) -> Result<(), GraphError> {
    let refuse = |reason: String| GraphError::Resume {
        thread: thread.to_owned(),
        reason,
    };
    let pending_ids = || {
        let ids: Vec<String> = pending
            .iter()
            .map(|(_, i)| format!("\"{}\" ({})", i.id, i.node))
            .collect();
        ids.join(", ")
    };
    let answers: Vec<(String, Value)> = match answer {
        Resume::One(value) => {
            if pending.len() != 1 {
                return Err(refuse(format!(
                    "{} interrupts are pending ({}); answer them by id with Resume::by_id",
                    pending.len(),
                    pending_ids()
                )));
            }
            vec![(pending[0].1.id.clone(), value)]
        }
        Resume::ById(list) => {
            if list.is_empty() {
                return Err(refuse("no answer given".to_owned()));
            }
            list
        }
    };
    let mut answered: Vec<&str> = Vec::new();
    for (id, value) in answers {
        let Some((task, interrupt)) = pending.iter().find(|(_, i)| i.id == id) else {
            return Err(refuse(format!(
                "no pending interrupt has id \"{id}\" (pending: {})",
                pending_ids()
            )));
        };
        if answered.contains(&interrupt.id.as_str()) {
            return Err(refuse(format!("interrupt \"{id}\" is answered twice")));
        }
        answered.push(&interrupt.id);
        if let Some(child) = prior.children.get_mut(task) {
            child.answers.push((id, value));
        } else if prior.take_interrupt(task).is_some() {
            prior.answers.entry(task.clone()).or_default().push(value);
        } else {
            return Err(refuse(format!("interrupt \"{id}\" is answered twice")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Target;
    use crate::{Command, END, START, StateGraph};

    #[derive(state_core::AgentState, Debug, Clone, PartialEq)]
    struct S {
        n: u64,
    }

    fn plan() -> std::sync::Arc<Plan<S, ()>> {
        let mut g = StateGraph::<S>::new();
        g.add_node("a", |_: &S| Command::goto("x").update(S::delta().n(1)))
            .destinations(["x", END]);
        g.add_node("x", |_: &S| S::delta());
        g.add_edge(START, "a");
        g.add_edge("x", END);
        g.compile().expect("compiles").plan
    }

    /// A pending body whose one write is `write` (JSON).
    fn decode(write: Value) -> Result<Prior<SDelta>, GraphError> {
        let mut body: PendingBody = serde_json::from_value(serde_json::json!({
            "from": ["__start__"],
            "writes": [write],
        }))
        .expect("a pending body");
        Prior::decode(&mut body, &plan(), |reason| GraphError::Log {
            thread: "t".to_owned(),
            seq: 1,
            reason,
        })
    }

    /// A finished task's command is replayed with its node as the
    /// chooser of its targets; a target or a task this graph does not
    /// have is the log's error, naming it.
    #[test]
    fn a_pending_writes_targets_name_their_chooser() {
        let plan = plan();
        let (a, x) = (plan.node("a").expect("a"), plan.node("x").expect("x"));
        let write = |node: &str, goto: &[&str]| serde_json::json!({"task": {"node": node}, "delta": {"n": 1}, "goto": goto});
        let prior = decode(write("a", &["x", END])).expect("decodes");
        let key = TaskKey {
            node: "a".to_owned(),
            send: None,
        };
        assert_eq!(
            prior.writes[&key].resolved.targets,
            [(a, Target::Node(x)), (a, Target::End)]
        );
        let unknown_target = decode(write("a", &["z"])).err().expect("refused");
        assert!(
            unknown_target.to_string().contains(
                "the pending write of \"a\" goes to \"z\", which this graph does not have"
            ),
            "{unknown_target}"
        );
        let unknown_task = decode(write("gone", &["x"])).err().expect("refused");
        assert!(
            unknown_task
                .to_string()
                .contains("a pending write of \"gone\", a node this graph does not have"),
            "{unknown_task}"
        );
        // Without targets, no node is looked up (as before).
        let quiet = serde_json::json!({"task": {"node": "gone"}, "delta": {"n": 1}});
        assert!(decode(quiet).is_ok());
    }
}
