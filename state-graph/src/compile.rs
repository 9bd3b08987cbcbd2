//! Checking a graph as built ([`Spec`]) and resolving it into a [`Plan`]:
//! every problem is collected, so `compile` names them all at once.

use crate::error::GraphError;
use crate::plan::{Branch, Destinations, FanOut, Join, Out, Plan, Source, Target};
use crate::spec::{Body, END, NodeSpec, START, Spec};
use state_core::State;
use std::collections::HashMap;

impl<S: State, C> Plan<S, C> {
    pub fn build(spec: Spec<S, C>) -> Result<Plan<S, C>, GraphError> {
        let Spec {
            nodes,
            edges,
            branches,
            fan_outs,
            interrupt_before,
            interrupt_after,
        } = spec;
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
        let names = Names {
            nodes: &nodes,
            by_name: &by_name,
        };

        let mut start = Out::default();
        let mut out: Vec<Out<S, C>> = nodes.iter().map(|_| Out::default()).collect();
        let mut joins = Vec::new();
        for edge in &edges {
            let what = format!("edge {:?} -> \"{}\"", edge.from, edge.to);
            let what = if edge.from.len() == 1 {
                format!("edge \"{}\" -> \"{}\"", edge.from[0], edge.to)
            } else {
                what
            };
            let dst = names.target(&edge.to, &mut problems, &what);
            match edge.from.as_slice() {
                [] => problems.push(format!("{what} has no source")),
                [from] => {
                    let (Some(src), Some(dst)) = (names.source(from, &mut problems, &what), dst)
                    else {
                        continue;
                    };
                    let o = out_of(&mut start, &mut out, src);
                    if !o.edges.contains(&dst) {
                        o.edges.push(dst);
                    }
                }
                many => {
                    let mut sources = Vec::new();
                    for from in many {
                        match names.source(from, &mut problems, &what) {
                            Some(Some(i)) if !sources.contains(&i) => sources.push(i),
                            Some(Some(_)) => {
                                problems.push(format!("{what} names \"{from}\" twice"))
                            }
                            Some(None) => problems.push(format!(
                                "{what} waits for START, which is never waited for; start the branches from START instead"
                            )),
                            None => {}
                        }
                    }
                    match dst {
                        Some(Target::Node(target)) if sources.len() == many.len() => {
                            let index = joins.len();
                            for &source in &sources {
                                out[source].joins.push(index);
                            }
                            let key = format!(
                                "{}:{}",
                                sources
                                    .iter()
                                    .map(|&s| nodes[s].name.as_str())
                                    .collect::<Vec<_>>()
                                    .join("+"),
                                nodes[target].name
                            );
                            joins.push(Join {
                                sources,
                                target,
                                key,
                            });
                        }
                        Some(Target::End) => problems.push(format!(
                            "{what} leads to END; join the branches in a node, or give each an edge to END"
                        )),
                        _ => {}
                    }
                }
            }
        }
        for branch in branches {
            let what = format!("the conditional edges of \"{}\"", branch.from);
            let src = names.source(&branch.from, &mut problems, &what);
            if branch.targets.is_empty() {
                problems.push(format!(
                    "{what} declare no target: list every name the router may return"
                ));
            }
            let mut targets = Vec::new();
            for name in &branch.targets {
                if let Some(t) = names.target(name, &mut problems, &what) {
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
            let src = names.source(&fan_out.from, &mut problems, &what);
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
        let destinations = resolve_destinations(&names, &mut problems);
        let before = breakpoints(&names, &interrupt_before, "interrupt_before", &mut problems);
        let after = breakpoints(&names, &interrupt_after, "interrupt_after", &mut problems);

        if problems.is_empty() {
            check_paths(&nodes, &start, &out, &joins, &destinations, &mut problems);
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
            joins,
            destinations,
            before,
            after,
        })
    }
}

/// Name lookups with the errors `compile` reports.
struct Names<'a, S: State, C> {
    nodes: &'a [NodeSpec<S, C>],
    by_name: &'a HashMap<String, usize>,
}

impl<S: State, C> Names<'_, S, C> {
    fn unknown(&self, name: &str, role: &str) -> String {
        let mut message = format!("{role} \"{name}\" is not a node");
        if let Some(close) = self
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .filter(|n| strsim::jaro_winkler(n, name) > 0.8)
            .max_by(|a, b| strsim::jaro_winkler(a, name).total_cmp(&strsim::jaro_winkler(b, name)))
        {
            message.push_str(&format!(" (did you mean \"{close}\"?)"));
        }
        message
    }

    fn source(&self, name: &str, problems: &mut Vec<String>, what: &str) -> Option<Source> {
        if name == START {
            Some(None)
        } else if name == END {
            problems.push(format!("{what} starts at END, which has no way out"));
            None
        } else if let Some(&i) = self.by_name.get(name) {
            Some(Some(i))
        } else {
            problems.push(self.unknown(name, &format!("the source of {what}")));
            None
        }
    }

    fn target(&self, name: &str, problems: &mut Vec<String>, what: &str) -> Option<Target> {
        if name == END {
            Some(Target::End)
        } else if name == START {
            problems.push(format!("{what} leads to START, which no edge may enter"));
            None
        } else if let Some(&i) = self.by_name.get(name) {
            if matches!(self.nodes[i].body, Body::Worker(_)) {
                problems.push(format!(
                    "{what} leads to worker \"{name}\", which runs only on the inputs a fan-out or a command sends it; use add_fan_out or Worker::send"
                ));
                return None;
            }
            Some(Target::Node(i))
        } else {
            problems.push(self.unknown(name, &format!("the target of {what}")));
            None
        }
    }
}

/// Each node's declared command targets, resolved.
fn resolve_destinations<S: State, C>(
    names: &Names<'_, S, C>,
    problems: &mut Vec<String>,
) -> Vec<Destinations> {
    names
        .nodes
        .iter()
        .map(|node| {
            let mut resolved = Destinations::default();
            let what = format!("the destinations of \"{}\"", node.name);
            for destination in node.destinations.iter().flatten() {
                let name = destination.name.as_str();
                match names.by_name.get(name) {
                    Some(&i) if matches!(names.nodes[i].body, Body::Worker(_)) => {
                        match destination.decode {
                            Some(decode) => resolved.workers.push((i, decode)),
                            None => problems.push(format!(
                                "{what} name worker \"{name}\" by name: declare it as Destination::from(&worker), so the inputs sent to it can be read back from the log"
                            )),
                        }
                    }
                    _ => {
                        if let Some(target) = names.target(name, problems, &what)
                            && !resolved.targets.iter().any(|(n, _)| n == name)
                        {
                            resolved.targets.push((name.to_owned(), target));
                        }
                    }
                }
            }
            resolved
        })
        .collect()
}

/// One flag per node: whether `listed` names it.
fn breakpoints<S: State, C>(
    names: &Names<'_, S, C>,
    listed: &[String],
    what: &str,
    problems: &mut Vec<String>,
) -> Vec<bool> {
    let mut flags = vec![false; names.nodes.len()];
    for name in listed {
        // LangGraph's `"*"`: every node.
        if name == "*" {
            flags.fill(true);
            continue;
        }
        match names.by_name.get(name) {
            Some(&i) => flags[i] = true,
            None => problems.push(names.unknown(name, what)),
        }
    }
    flags
}

/// The edges out of `source`, while they are being built.
fn out_of<'a, S, C>(
    start: &'a mut Out<S, C>,
    out: &'a mut [Out<S, C>],
    source: Source,
) -> &'a mut Out<S, C> {
    match source {
        None => start,
        Some(i) => &mut out[i],
    }
}

/// Every target a source may lead to (a join's target counts as reached
/// from each of its sources).
fn reach<'a, S, C>(
    out: &'a Out<S, C>,
    joins: &'a [Join],
    destinations: Option<&'a Destinations>,
) -> impl Iterator<Item = Target> + 'a {
    out.edges
        .iter()
        .copied()
        .chain(
            out.branches
                .iter()
                .flat_map(|b| b.targets.iter().map(|t| t.1)),
        )
        .chain(out.fan_outs.iter().map(|f| Target::Node(f.worker)))
        .chain(out.joins.iter().map(|&j| Target::Node(joins[j].target)))
        .chain(destinations.into_iter().flat_map(|d| {
            d.targets
                .iter()
                .map(|t| t.1)
                .chain(d.workers.iter().map(|(w, _)| Target::Node(*w)))
        }))
}

/// Every node is reached from START, has a way out, and can reach END.
fn check_paths<S: State, C>(
    nodes: &[NodeSpec<S, C>],
    start: &Out<S, C>,
    out: &[Out<S, C>],
    joins: &[Join],
    destinations: &[Destinations],
    problems: &mut Vec<String>,
) {
    if reach(start, joins, None).next().is_none() {
        problems.push("no edge leaves START: add g.add_edge(START, \"first node\")".to_owned());
        return;
    }
    let way_out = |n: usize| {
        reach(&out[n], joins, Some(&destinations[n]))
            .next()
            .is_some()
    };
    for (n, node) in nodes.iter().enumerate() {
        if !way_out(n) {
            problems.push(format!(
                "node \"{}\" has no edge out: add g.add_edge(\"{0}\", END) to end there",
                node.name
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
    for t in reach(start, joins, None) {
        visit(t, &mut reached, &mut todo);
    }
    while let Some(n) = todo.pop() {
        for t in reach(&out[n], joins, Some(&destinations[n])) {
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
                && reach(&out[n], joins, Some(&destinations[n])).any(|t| match t {
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
        .filter(|&n| reached[n] && !ends[n] && way_out(n))
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
