//! A paused superstep, as the runner logs it in a `pending` step: what its
//! finished nodes wrote, the interrupts waiting for a person, the answers
//! given so far. Each pending step holds the whole of it, so resuming reads
//! only the thread's last step.

use crate::error::GraphError;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use state_core::Delta;
use std::collections::HashMap;

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
    /// input): the runner plans it again from them.
    pub from: Vec<String>,
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
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PendingWrite {
    pub task: TaskKey,
    pub delta: Value,
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
#[derive(Debug)]
pub(crate) struct Prior<D> {
    pub writes: HashMap<TaskKey, D>,
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
}

impl<D: Delta> Prior<D> {
    /// Decodes a pending body; `log` makes the error for a bad one.
    pub fn decode(
        body: PendingBody,
        log: impl Fn(String) -> GraphError,
    ) -> Result<(Vec<String>, Prior<D>), GraphError> {
        let mut prior = Prior::default();
        for write in body.writes {
            let delta = D::from_json(write.delta).map_err(|e| {
                log(format!(
                    "the pending write of \"{}\" does not fit the state: {e}",
                    write.task.node
                ))
            })?;
            prior.writes.insert(write.task, delta);
        }
        prior.interrupts = body.interrupts;
        for answers in body.answers {
            prior.answers.insert(answers.task, answers.values);
        }
        Ok((body.from, prior))
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty() && self.interrupts.is_empty() && self.answers.is_empty()
    }
}
