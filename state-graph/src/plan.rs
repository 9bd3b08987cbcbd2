//! [`Plan`]: a checked graph, with names resolved to indices, and the one
//! question the runner asks of it: which tasks come next.

use crate::command::Goto;
use crate::error::GraphError;
use crate::route::{AnyInput, FanOutFn, RouterFn};
use crate::spec::{DecodeFn, NodeSpec, START};
use state_core::State;
use std::collections::HashMap;
use std::sync::Arc;

/// Where an edge leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    Node(usize),
    End,
}

/// Where an edge starts: `START` or a node.
pub(crate) type Source = Option<usize>;

pub(crate) struct Branch<S, C> {
    pub router: RouterFn<S, C>,
    pub targets: Vec<(String, Target)>,
}

pub(crate) struct FanOut<S> {
    pub router: FanOutFn<S>,
    pub worker: usize,
}

/// A join edge: `target` runs once every one of `sources` ran.
#[derive(Debug)]
pub(crate) struct Join {
    pub sources: Vec<usize>,
    pub target: usize,
    /// How it is named in the log: LangGraph's channel name, `a+b:c`.
    pub key: String,
}

/// The edges out of one source.
pub(crate) struct Out<S, C> {
    pub edges: Vec<Target>,
    pub branches: Vec<Branch<S, C>>,
    pub fan_outs: Vec<FanOut<S>>,
    /// The joins this node is a source of.
    pub joins: Vec<usize>,
}

impl<S, C> Default for Out<S, C> {
    fn default() -> Self {
        Out {
            edges: Vec::new(),
            branches: Vec::new(),
            fan_outs: Vec::new(),
            joins: Vec::new(),
        }
    }
}

/// A node's declared [`Command`](crate::Command) targets, resolved.
#[derive(Default)]
pub(crate) struct Destinations {
    pub targets: Vec<(String, Target)>,
    /// Workers it may send to, with their inputs' decoders.
    pub workers: Vec<(usize, DecodeFn)>,
}

/// One run of a node in a superstep.
#[derive(Clone)]
pub(crate) struct Task {
    pub node: usize,
    /// For a worker: its place among the sends to it in this superstep,
    /// and its input.
    pub send: Option<(usize, Arc<AnyInput>)>,
}

/// A worker run a [`Command`](crate::Command) asked for, with its input as
/// logged.
#[derive(Clone)]
pub(crate) struct Sent {
    pub worker: usize,
    pub input: Arc<AnyInput>,
    pub logged: serde_json::Value,
}

/// What the superstep after a step is planned from: the step's nodes, the
/// targets their commands chose, and the joins' progress. Logged with
/// every step (see `run/cursor.rs`), so any process plans the same.
#[derive(Clone, Default)]
pub(crate) struct Cursor {
    /// The nodes (`None`: START) that ran, once each, in task order.
    pub sources: Vec<Source>,
    /// Targets chosen by commands: (the node that chose, the target).
    pub goto: Vec<(usize, Target)>,
    /// Workers sent to by commands, in order: (the sender, the run).
    pub sends: Vec<(usize, Sent)>,
    /// Per join of the plan: which of its sources ran since it last fired.
    pub joins: Vec<Vec<bool>>,
}

impl Cursor {
    /// The cursor of a run's input step.
    pub fn start() -> Cursor {
        Cursor {
            sources: vec![None],
            ..Cursor::default()
        }
    }
}

/// A checked graph.
pub(crate) struct Plan<S: State, C> {
    pub nodes: Vec<NodeSpec<S, C>>,
    pub by_name: HashMap<String, usize>,
    /// Each node's place in code-point order of the names: the order in
    /// which a superstep's deltas apply (LangGraph's).
    pub rank: Vec<usize>,
    pub start: Out<S, C>,
    pub out: Vec<Out<S, C>>,
    pub joins: Vec<Join>,
    pub destinations: Vec<Destinations>,
    /// Static breakpoints, per node.
    pub before: Vec<bool>,
    pub after: Vec<bool>,
}

impl<S: State, C> Plan<S, C> {
    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The target named `name`, as logged: `END` or a node.
    pub fn target(&self, name: &str) -> Option<Target> {
        if name == crate::END {
            Some(Target::End)
        } else {
            self.node(name).map(Target::Node)
        }
    }

    /// A source's name, as logged.
    pub fn source_name(&self, source: Source) -> &str {
        match source {
            None => START,
            Some(i) => &self.nodes[i].name,
        }
    }

    /// The targets of `node`'s command, checked against its declared
    /// destinations.
    pub fn resolve(&self, node: usize, goto: Vec<Goto>) -> Result<Resolved, GraphError> {
        let declared = &self.destinations[node];
        let undeclared = |target: &str| GraphError::UndeclaredDestination {
            node: self.nodes[node].name.clone(),
            target: target.to_owned(),
            declared: declared
                .targets
                .iter()
                .map(|t| t.0.clone())
                .chain(
                    declared
                        .workers
                        .iter()
                        .map(|(w, _)| self.nodes[*w].name.clone()),
                )
                .collect(),
        };
        // Sized once: a handoff's one target makes one small list.
        let mut resolved = Resolved {
            targets: Vec::with_capacity(goto.len()),
            sends: Vec::new(),
        };
        for target in goto {
            match target {
                Goto::Node(name) => match declared.targets.iter().find(|(n, _)| *n == name) {
                    Some((_, target)) => resolved.targets.push((node, *target)),
                    None => return Err(undeclared(&name)),
                },
                Goto::Dispatch(dispatch) => {
                    let Some(&(worker, _)) = declared
                        .workers
                        .iter()
                        .find(|(w, _)| self.nodes[*w].name == dispatch.node)
                    else {
                        return Err(undeclared(&dispatch.node));
                    };
                    let logged = dispatch.encoded().map_err(|e| GraphError::Node {
                        node: self.nodes[node].name.clone(),
                        source: format!(
                            "its send to \"{}\" has an input that cannot be logged: {e}",
                            dispatch.node
                        )
                        .into(),
                    })?;
                    resolved.sends.push(Sent {
                        worker,
                        input: dispatch.input,
                        logged,
                    });
                }
            }
        }
        Ok(resolved)
    }

    /// The tasks of the superstep after the step `cursor` describes, on
    /// `state` (that step applied): ordinary nodes once each, in name
    /// order, then the sends of each source (its command's, then its
    /// fan-outs'), in order. Also returns the joins' progress once those
    /// that fire are reset.
    pub fn next(
        &self,
        cursor: &Cursor,
        state: &S,
        context: Option<&C>,
    ) -> Result<(Vec<Task>, Vec<Vec<bool>>), GraphError> {
        let mut pulls: Vec<Task> = Vec::new();
        let mut pushes = Vec::new();
        let mut sent: Vec<usize> = Vec::new();
        let mut push = |pushes: &mut Vec<Task>, worker: usize, input: Arc<AnyInput>| {
            if sent.is_empty() {
                sent = vec![0usize; self.nodes.len()];
            }
            let index = sent[worker];
            sent[worker] += 1;
            pushes.push(Task {
                node: worker,
                send: Some((index, input)),
            });
        };
        for &source in &cursor.sources {
            let out = match source {
                None => &self.start,
                Some(i) => &self.out[i],
            };
            for target in &out.edges {
                if let Target::Node(n) = *target {
                    pulls.push(Task {
                        node: n,
                        send: None,
                    });
                }
            }
            for branch in &out.branches {
                let mut undeclared = None;
                let routed = (branch.router)(state, context, &mut |name: &str| match branch
                    .targets
                    .iter()
                    .find(|(declared, _)| declared == name)
                {
                    Some((_, Target::Node(n))) => {
                        pulls.push(Task {
                            node: *n,
                            send: None,
                        });
                    }
                    Some((_, Target::End)) => {}
                    None => {
                        undeclared.get_or_insert_with(|| name.to_owned());
                    }
                });
                if !routed {
                    return Err(GraphError::NoContext {
                        context: std::any::type_name::<C>(),
                    });
                }
                if let Some(target) = undeclared {
                    return Err(GraphError::UndeclaredTarget {
                        from: self.source_name(source).to_owned(),
                        target,
                        declared: branch.targets.iter().map(|t| t.0.clone()).collect(),
                    });
                }
            }
            if let Some(node) = source {
                for (_, target) in cursor.goto.iter().filter(|(from, _)| *from == node) {
                    if let Target::Node(n) = *target {
                        pulls.push(Task {
                            node: n,
                            send: None,
                        });
                    }
                }
                for (_, sent) in cursor.sends.iter().filter(|(from, _)| *from == node) {
                    push(&mut pushes, sent.worker, sent.input.clone());
                }
            }
            for fan_out in &out.fan_outs {
                for input in (fan_out.router)(state) {
                    push(&mut pushes, fan_out.worker, input);
                }
            }
        }
        let mut joins = cursor.joins.clone();
        for (join, seen) in self.joins.iter().zip(&mut joins) {
            if !seen.is_empty() && seen.iter().all(|s| *s) {
                pulls.push(Task {
                    node: join.target,
                    send: None,
                });
                seen.iter_mut().for_each(|s| *s = false);
            }
        }
        let mut tasks = pulls;
        tasks.sort_unstable_by_key(|t| self.rank[t.node]);
        tasks.dedup_by_key(|t| t.node);
        tasks.extend(pushes);
        Ok((tasks, joins))
    }

    /// The joins' progress after a step whose tasks ran `nodes`, from
    /// `before` (their progress once the step's own joins fired).
    pub fn mark_joins(&self, mut before: Vec<Vec<bool>>, nodes: &[usize]) -> Vec<Vec<bool>> {
        if self.joins.is_empty() {
            return Vec::new();
        }
        before.resize_with(self.joins.len(), Vec::new);
        for (join, seen) in self.joins.iter().zip(&mut before) {
            if seen.len() != join.sources.len() {
                *seen = vec![false; join.sources.len()];
            }
            for (place, source) in join.sources.iter().enumerate() {
                if nodes.contains(source) {
                    seen[place] = true;
                }
            }
        }
        before
    }
}

/// A command's targets, resolved against the node's destinations.
#[derive(Default)]
pub(crate) struct Resolved {
    /// (the node whose command chose it, the target): the cursor's own
    /// form, so the runner takes a lone command's list as it is.
    pub targets: Vec<(usize, Target)>,
    pub sends: Vec<Sent>,
}
