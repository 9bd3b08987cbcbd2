//! [`Plan`]: a checked graph, with names resolved to indices, and the one
//! question the runner asks of it: which tasks come next.

use crate::error::GraphError;
use crate::graph::{Body, END, NodeSpec, START, StateGraph};
use crate::route::{AnyInput, FanOutFn, RouterFn};
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

struct Branch<S> {
    router: RouterFn<S>,
    targets: Vec<(String, Target)>,
}

struct FanOut<S> {
    router: FanOutFn<S>,
    worker: usize,
}

/// The edges out of one source.
struct Out<S> {
    edges: Vec<Target>,
    branches: Vec<Branch<S>>,
    fan_outs: Vec<FanOut<S>>,
}

impl<S> Default for Out<S> {
    fn default() -> Self {
        Out {
            edges: Vec::new(),
            branches: Vec::new(),
            fan_outs: Vec::new(),
        }
    }
}

impl<S> Out<S> {
    fn is_empty(&self) -> bool {
        self.edges.is_empty() && self.branches.is_empty() && self.fan_outs.is_empty()
    }

    /// Every target this source may lead to.
    fn reach(&self) -> impl Iterator<Item = Target> + '_ {
        self.edges
            .iter()
            .copied()
            .chain(
                self.branches
                    .iter()
                    .flat_map(|b| b.targets.iter().map(|t| t.1)),
            )
            .chain(self.fan_outs.iter().map(|f| Target::Node(f.worker)))
    }
}

/// One run of a node in a superstep.
#[derive(Clone)]
pub(crate) struct Task {
    pub node: usize,
    /// For a worker: its place among the sends to it in this superstep,
    /// and its input.
    pub send: Option<(usize, Arc<AnyInput>)>,
}

/// A checked graph.
pub(crate) struct Plan<S: State> {
    pub nodes: Vec<NodeSpec<S>>,
    by_name: HashMap<String, usize>,
    /// Each node's place in code-point order of the names: the order in
    /// which a superstep's deltas apply (LangGraph's).
    rank: Vec<usize>,
    start: Out<S>,
    out: Vec<Out<S>>,
}

impl<S: State> Plan<S> {
    pub fn build(graph: StateGraph<S>) -> Result<Plan<S>, GraphError> {
        let StateGraph {
            nodes,
            edges,
            branches,
            fan_outs,
        } = graph;
        let mut problems = Vec::new();
        let mut by_name = HashMap::new();
        for (i, node) in nodes.iter().enumerate() {
            if node.name == START || node.name == END {
                problems.push(format!(
                    "\"{}\" is reserved (START/END) and cannot name a node",
                    node.name
                ));
            } else if node.name.is_empty() {
                problems.push("a node's name cannot be empty".to_owned());
            } else if by_name.insert(node.name.clone(), i).is_some() {
                problems.push(format!("two nodes are named \"{}\"", node.name));
            }
        }
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        let unknown = |name: &str, role: &str| -> String {
            let mut message = format!("{role} \"{name}\" is not a node");
            if let Some(close) = names
                .iter()
                .filter(|n| strsim::jaro_winkler(n, name) > 0.8)
                .max_by(|a, b| {
                    strsim::jaro_winkler(a, name).total_cmp(&strsim::jaro_winkler(b, name))
                })
            {
                message.push_str(&format!(" (did you mean \"{close}\"?)"));
            }
            message
        };
        let source = |name: &str, problems: &mut Vec<String>, what: &str| -> Option<Source> {
            if name == START {
                Some(None)
            } else if name == END {
                problems.push(format!("{what} starts at END, which has no way out"));
                None
            } else if let Some(&i) = by_name.get(name) {
                Some(Some(i))
            } else {
                problems.push(unknown(name, &format!("the source of {what}")));
                None
            }
        };
        let target = |name: &str, problems: &mut Vec<String>, what: &str| -> Option<Target> {
            if name == END {
                Some(Target::End)
            } else if name == START {
                problems.push(format!("{what} leads to START, which no edge may enter"));
                None
            } else if let Some(&i) = by_name.get(name) {
                if matches!(nodes[i].body, Body::Worker(_)) {
                    problems.push(format!(
                        "{what} leads to worker \"{name}\", which runs only on the inputs a fan-out sends it; use add_fan_out"
                    ));
                    return None;
                }
                Some(Target::Node(i))
            } else {
                problems.push(unknown(name, &format!("the target of {what}")));
                None
            }
        };

        let mut start = Out::default();
        let mut out: Vec<Out<S>> = nodes.iter().map(|_| Out::default()).collect();
        for (from, to) in &edges {
            let what = format!("edge \"{from}\" -> \"{to}\"");
            let (Some(src), Some(dst)) = (
                source(from, &mut problems, &what),
                target(to, &mut problems, &what),
            ) else {
                continue;
            };
            let o = out_of(&mut start, &mut out, src);
            if !o.edges.contains(&dst) {
                o.edges.push(dst);
            }
        }
        for branch in branches {
            let what = format!("the conditional edges of \"{}\"", branch.from);
            let src = source(&branch.from, &mut problems, &what);
            if branch.targets.is_empty() {
                problems.push(format!(
                    "{what} declare no target: list every name the router may return"
                ));
            }
            let mut targets = Vec::new();
            for name in &branch.targets {
                if let Some(t) = target(name, &mut problems, &what) {
                    targets.push((name.clone(), t));
                }
            }
            if let Some(src) = src {
                out_of(&mut start, &mut out, src).branches.push(Branch {
                    router: branch.router,
                    targets,
                });
            }
        }
        for fan_out in fan_outs {
            let what = format!("the fan-out of \"{}\"", fan_out.from);
            let src = source(&fan_out.from, &mut problems, &what);
            let worker = match by_name.get(&fan_out.worker) {
                Some(&i) if matches!(nodes[i].body, Body::Worker(_)) => Some(i),
                _ => {
                    problems.push(format!(
                        "{what} sends to \"{}\", which is not a worker of this graph",
                        fan_out.worker
                    ));
                    None
                }
            };
            if let (Some(src), Some(worker)) = (src, worker) {
                out_of(&mut start, &mut out, src).fan_outs.push(FanOut {
                    router: fan_out.router,
                    worker,
                });
            }
        }

        if problems.is_empty() {
            check_paths(&nodes, &start, &out, &mut problems);
        }
        if !problems.is_empty() {
            return Err(GraphError::Invalid(problems.join("; ")));
        }
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.sort_by(|&a, &b| nodes[a].name.cmp(&nodes[b].name));
        let mut rank = vec![0; nodes.len()];
        for (place, &node) in order.iter().enumerate() {
            rank[node] = place;
        }
        Ok(Plan {
            nodes,
            by_name,
            rank,
            start,
            out,
        })
    }

    /// The node named `name`.
    pub fn node(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The tasks of the superstep after `sources` ran, on `state` (their
    /// superstep applied): ordinary nodes once each, in name order, then
    /// the sends of each source's fan-outs in order.
    pub fn next(&self, sources: &[Source], state: &S) -> Result<Vec<Task>, GraphError> {
        let mut pulls: Vec<Task> = Vec::new();
        let mut pushes = Vec::new();
        let mut sent: Vec<usize> = Vec::new();
        for &source in sources {
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
                (branch.router)(state, &mut |name: &str| match branch
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
                if let Some(target) = undeclared {
                    return Err(GraphError::UndeclaredTarget {
                        from: self.source_name(source).to_owned(),
                        target,
                        declared: branch.targets.iter().map(|t| t.0.clone()).collect(),
                    });
                }
            }
            for fan_out in &out.fan_outs {
                if sent.is_empty() {
                    sent = vec![0usize; self.nodes.len()];
                }
                for input in (fan_out.router)(state) {
                    let index = sent[fan_out.worker];
                    sent[fan_out.worker] += 1;
                    pushes.push(Task {
                        node: fan_out.worker,
                        send: Some((index, input)),
                    });
                }
            }
        }
        let mut tasks = pulls;
        tasks.sort_unstable_by_key(|t| self.rank[t.node]);
        tasks.dedup_by_key(|t| t.node);
        tasks.extend(pushes);
        Ok(tasks)
    }

    /// A source's name, as logged.
    pub fn source_name(&self, source: Source) -> &str {
        match source {
            None => START,
            Some(i) => &self.nodes[i].name,
        }
    }
}

/// The edges out of `source`, while they are being built.
fn out_of<'a, S>(start: &'a mut Out<S>, out: &'a mut [Out<S>], source: Source) -> &'a mut Out<S> {
    match source {
        None => start,
        Some(i) => &mut out[i],
    }
}

/// Every node is reached from START, has a way out, and can reach END.
fn check_paths<S: State>(
    nodes: &[NodeSpec<S>],
    start: &Out<S>,
    out: &[Out<S>],
    problems: &mut Vec<String>,
) {
    if start.is_empty() {
        problems.push("no edge leaves START: add g.add_edge(START, \"first node\")".to_owned());
        return;
    }
    for (i, o) in out.iter().enumerate() {
        if o.is_empty() {
            problems.push(format!(
                "node \"{}\" has no edge out: add g.add_edge(\"{0}\", END) to end there",
                nodes[i].name
            ));
        }
    }
    // Forward from START.
    let mut reached = vec![false; nodes.len()];
    let mut todo: Vec<usize> = Vec::new();
    let visit = |t: Target, reached: &mut Vec<bool>, todo: &mut Vec<usize>| {
        if let Target::Node(n) = t
            && !reached[n]
        {
            reached[n] = true;
            todo.push(n);
        }
    };
    for t in start.reach() {
        visit(t, &mut reached, &mut todo);
    }
    while let Some(n) = todo.pop() {
        for t in out[n].reach() {
            visit(t, &mut reached, &mut todo);
        }
    }
    let unreached: Vec<&str> = (0..nodes.len())
        .filter(|&n| !reached[n])
        .map(|n| nodes[n].name.as_str())
        .collect();
    if !unreached.is_empty() {
        problems.push(format!(
            "no edge reaches {}: connect {} or remove {}",
            quoted(&unreached),
            if unreached.len() == 1 { "it" } else { "them" },
            if unreached.len() == 1 { "it" } else { "them" },
        ));
    }
    // Backward from END, over nodes that have a way out.
    let mut ends = vec![false; nodes.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for n in 0..nodes.len() {
            if !ends[n]
                && out[n].reach().any(|t| match t {
                    Target::End => true,
                    Target::Node(m) => ends[m],
                })
            {
                ends[n] = true;
                changed = true;
            }
        }
    }
    let stuck: Vec<&str> = (0..nodes.len())
        .filter(|&n| reached[n] && !ends[n] && !out[n].is_empty())
        .map(|n| nodes[n].name.as_str())
        .collect();
    if !stuck.is_empty() {
        problems.push(format!(
            "{} can never reach END (a loop with no exit): give the loop a conditional edge to END",
            quoted(&stuck)
        ));
    }
}

fn quoted(names: &[&str]) -> String {
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    match list.len() {
        1 => format!("node {}", list[0]),
        _ => format!("nodes {}", list.join(", ")),
    }
}
