//! [`CompiledGraph::draw_mermaid`]: the graph as Mermaid text, as
//! LangGraph's `get_graph().draw_mermaid()` writes it (langchain-core's
//! `graph_mermaid.py`): the same header, node shapes, edge order, dashed
//! conditional edges and class definitions, so a picture made from either
//! looks the same.

use crate::graph_state::GraphState;
use crate::plan::{Plan, Target};
use crate::run::CompiledGraph;
use crate::spec::{END, START};
use state_core::State;
use std::fmt::Write;

/// One edge of the picture: (source, target, conditional).
type Edge<'a> = (&'a str, &'a str, bool);

impl<S: GraphState, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// The graph as Mermaid text (LangGraph's
    /// `app.get_graph().draw_mermaid()`): `START` and `END` as rounded
    /// nodes, each node by name, plain edges solid, conditional edges (a
    /// router's targets, a command's destinations, a fan-out's worker)
    /// dashed, and breakpoints noted on their nodes. Paste it into any
    /// Mermaid renderer (GitHub's Markdown, the inspector page).
    ///
    /// ```
    /// # fn main() -> Result<(), state_graph::GraphError> {
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct S { n: u32 }
    ///
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("agent", |_: &S| S::delta());
    /// g.add_node("tools", |_: &S| S::delta());
    /// g.add_edge(START, "agent");
    /// g.add_conditional_edges("agent", |s: &S| if s.n > 0 { "tools" } else { END }, ["tools", END]);
    /// g.add_edge("tools", "agent");
    /// let picture = g.compile()?.draw_mermaid();
    /// assert!(picture.contains("\tagent -.-> tools;\n"));
    /// assert!(picture.contains("\ttools --> agent;\n"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn draw_mermaid(&self) -> String {
        draw(&self.plan)
    }

    /// The graph as LangGraph's `app.get_graph().to_json()` writes it (what
    /// the Agent Server answers at `GET /assistants/{id}/graph`): `nodes`
    /// (`START`, each node, `END` when an edge reaches it; a node with
    /// breakpoints carries them as `metadata`), `edges` in the order of
    /// [`draw_mermaid`](CompiledGraph::draw_mermaid), conditional ones
    /// marked `"conditional": true`.
    ///
    /// ```
    /// # fn main() -> Result<(), state_graph::GraphError> {
    /// use serde_json::json;
    /// use state_core::{AgentState, State};
    /// use state_graph::{END, START, StateGraph};
    ///
    /// #[derive(AgentState, Debug, Clone)]
    /// struct S { n: u32 }
    ///
    /// let mut g = StateGraph::<S>::new();
    /// g.add_node("agent", |_: &S| S::delta());
    /// g.add_edge(START, "agent");
    /// g.add_edge("agent", END);
    /// let graph = g.compile()?.graph_json();
    /// assert_eq!(graph["edges"], json!([
    ///     {"source": "__start__", "target": "agent"},
    ///     {"source": "agent", "target": "__end__"},
    /// ]));
    /// assert_eq!(graph["nodes"][1], json!({"id": "agent", "type": "runnable", "data": {"name": "agent"}}));
    /// # Ok(())
    /// # }
    /// ```
    pub fn graph_json(&self) -> serde_json::Value {
        to_json(&self.plan)
    }
}

fn to_json<S: State, C>(plan: &Plan<S, C>) -> serde_json::Value {
    use serde_json::{Value, json};
    let edges = edges(plan);
    let runnable = |name: &str| json!({"id": name, "type": "runnable", "data": {"name": name}});
    let mut nodes = vec![runnable(START)];
    for (i, node) in plan.nodes.iter().enumerate() {
        let mut json = runnable(&node.name);
        if let Some(when) = breakpoints(plan, i) {
            json["metadata"] = json!({ "__interrupt": when });
        }
        nodes.push(json);
    }
    if edges.iter().any(|e| e.1 == END) {
        // LangGraph's END carries no data.
        nodes.push(json!({ "id": END }));
    }
    let edges: Vec<Value> = edges
        .into_iter()
        .map(|(source, target, conditional)| {
            let mut edge = json!({"source": source, "target": target});
            if conditional {
                edge["conditional"] = Value::Bool(true);
            }
            edge
        })
        .collect();
    json!({ "nodes": nodes, "edges": edges })
}

/// Node `i`'s breakpoints as LangGraph notes them, if any.
fn breakpoints<S: State, C>(plan: &Plan<S, C>, i: usize) -> Option<&'static str> {
    match (plan.before[i], plan.after[i]) {
        (true, true) => Some("before,after"),
        (true, false) => Some("before"),
        (false, true) => Some("after"),
        (false, false) => None,
    }
}

fn draw<S: State, C>(plan: &Plan<S, C>) -> String {
    let unique = edges(plan);
    let mut out = String::from("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n");
    let _ = writeln!(out, "\t{}([{}]):::first", safe_id(START), label(START, &[]));
    for (i, node) in plan.nodes.iter().enumerate() {
        let interrupt = breakpoints(plan, i).map(|when| format!("__interrupt = {when}"));
        let metadata: Vec<&str> = interrupt.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "\t{}({})",
            safe_id(&node.name),
            label(&node.name, &metadata)
        );
    }
    if unique.iter().any(|e| e.1 == END) {
        let _ = writeln!(out, "\t{}([{}]):::last", safe_id(END), label(END, &[]));
    }
    for (from, to, conditional) in unique {
        let arrow = if conditional { " -.-> " } else { " --> " };
        let _ = writeln!(out, "\t{}{arrow}{};", safe_id(from), safe_id(to));
    }
    out.push_str("\tclassDef default fill:#f2f0ff,line-height:1.2\n");
    out.push_str("\tclassDef first fill-opacity:0\n");
    out.push_str("\tclassDef last fill:#bfb6fc\n");
    out
}

/// The graph's edges in LangGraph's order, one per pair of nodes.
fn edges<S: State, C>(plan: &Plan<S, C>) -> Vec<Edge<'_>> {
    let name = |target: Target| match target {
        Target::Node(n) => plan.nodes[n].name.as_str(),
        Target::End => END,
    };
    let mut edges: Vec<Edge<'_>> = Vec::new();
    let sources = std::iter::once((START, &plan.start, None)).chain(
        plan.out
            .iter()
            .enumerate()
            .map(|(i, out)| (plan.nodes[i].name.as_str(), out, Some(i))),
    );
    for (from, out, node) in sources {
        for &to in &out.edges {
            edges.push((from, name(to), false));
        }
        for branch in &out.branches {
            for (_, to) in &branch.targets {
                edges.push((from, name(*to), true));
            }
        }
        for fan_out in &out.fan_outs {
            edges.push((from, &plan.nodes[fan_out.worker].name, true));
        }
        for &join in &out.joins {
            edges.push((from, &plan.nodes[plan.joins[join].target].name, false));
        }
        if let Some(node) = node {
            let declared = &plan.destinations[node];
            for (_, to) in &declared.targets {
                edges.push((from, name(*to), true));
            }
            for (worker, _) in &declared.workers {
                edges.push((from, &plan.nodes[*worker].name, true));
            }
        }
    }
    // LangGraph's order: the edges it discovers by running the graph
    // (every edge but a plain one to END), sorted as tuples, one per pair
    // (its `add_edge` keeps the first); then a plain edge to END from each
    // node with no other way out, by name.
    let (to_end, mut found): (Vec<Edge<'_>>, Vec<Edge<'_>>) =
        edges.into_iter().partition(|e| e.1 == END && !e.2);
    found.sort();
    let mut unique: Vec<Edge<'_>> = Vec::with_capacity(found.len() + to_end.len());
    for edge in found {
        if !unique.iter().any(|e| (e.0, e.1) == (edge.0, edge.1)) {
            unique.push(edge);
        }
    }
    let mut termini: Vec<Edge<'_>> = to_end
        .into_iter()
        .filter(|e| !unique.iter().any(|u| u.0 == e.0))
        .collect();
    termini.sort();
    termini.dedup();
    unique.extend(termini);
    unique
}

/// A node's label: in `<p>` when it starts and ends with a Markdown
/// character (Mermaid would format it), then its metadata lines.
fn label(name: &str, metadata: &[&str]) -> String {
    const MARKDOWN: [char; 3] = ['*', '_', '`'];
    let mut label = if name.starts_with(MARKDOWN) && name.ends_with(MARKDOWN) {
        format!("<p>{name}</p>")
    } else {
        name.to_owned()
    };
    if !metadata.is_empty() {
        let lines: Vec<String> = metadata.iter().map(|l| escape(l)).collect();
        label.push_str("<hr/><small><em>");
        label.push_str(&lines.join("\n"));
        label.push_str("</em></small>");
    }
    label
}

/// Mermaid's entities for the characters a label cannot hold.
fn escape(text: &str) -> String {
    let mut out = text.replace('#', "#35;");
    for (c, entity) in [
        ('[', "#91;"),
        (']', "#93;"),
        ('(', "#40;"),
        (')', "#41;"),
        ('{', "#123;"),
        ('}', "#125;"),
        ('"', "#quot;"),
        ('<', "#60;"),
        ('>', "#62;"),
        ('|', "#124;"),
    ] {
        out = out.replace(c, entity);
    }
    out
}

/// A Mermaid-safe node id: `[A-Za-z0-9_-]` kept, anything else as a
/// backslash and its code point in hex (langchain-core's `_to_safe_id`).
fn safe_id(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            let _ = write!(out, "\\{:x}", c as u32);
        }
    }
    out
}
