//! A served graph drawn on the thread page, as SVG made here (no script,
//! no library): LangGraph's `{nodes, edges}` (what
//! `GET /assistants/{id}/graph` answers) laid out top-down in layers, as
//! Mermaid's `graph TD` draws it. `__start__` and `__end__` are rounded,
//! plain edges solid, conditional edges dashed, an edge back up the graph
//! (a loop) drawn around the right side. Each node is a `<g data-node>`,
//! marked `active` when the selected step ran it.

use maud::{Markup, html};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt::Write;

const START: &str = "__start__";
const END: &str = "__end__";

/// The box of a node, in pixels.
const NODE_HEIGHT: f64 = 34.0;
const LAYER_GAP: f64 = 46.0;
const NODE_GAP: f64 = 28.0;
const MARGIN: f64 = 16.0;
/// How far right of the widest layer the loops go, and apart.
const LOOP_GAP: f64 = 22.0;

/// The most nodes drawn: a bigger graph is shown as its Mermaid text only.
const MAX_NODES: usize = 200;

/// One edge, by node index.
struct Edge {
    from: usize,
    to: usize,
    conditional: bool,
}

/// A graph's layout: per node its layer and its place in it.
struct Layout {
    names: Vec<String>,
    edges: Vec<Edge>,
    /// Per node: the centre of its box, and its width.
    x: Vec<f64>,
    y: Vec<f64>,
    width: Vec<f64>,
    /// The drawing's size.
    size: (f64, f64),
    /// The right edge of the widest layer (loops go right of it).
    right: f64,
}

/// The picture of `graph` (LangGraph's JSON) with the nodes in `marked`
/// highlighted; `None` when the JSON holds no node, or too many.
pub(crate) fn draw(graph: &Value, marked: &[String]) -> Option<Markup> {
    let layout = layout(graph)?;
    Some(svg(&layout, marked))
}

/// Reads the nodes and edges; an edge naming an unknown node is left out.
fn read(graph: &Value) -> Option<(Vec<String>, Vec<Edge>)> {
    let names: Vec<String> = graph
        .get("nodes")?
        .as_array()?
        .iter()
        .filter_map(|node| node.get("id")?.as_str().map(str::to_owned))
        .collect();
    if names.is_empty() || names.len() > MAX_NODES {
        return None;
    }
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i))
        .collect();
    let edges = graph
        .get("edges")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .filter_map(|edge| {
            let end = |key: &str| index.get(edge.get(key)?.as_str()?).copied();
            Some(Edge {
                from: end("source")?,
                to: end("target")?,
                conditional: edge.get("conditional").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect();
    Some((names, edges))
}

/// Which edges go back (close a cycle): found by a depth-first walk from
/// `__start__`, then from any node it did not reach, in their order.
fn back_edges(count: usize, edges: &[Edge]) -> Vec<bool> {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, edge) in edges.iter().enumerate() {
        out[edge.from].push(i);
    }
    // 0: not seen, 1: on the walk's path, 2: done.
    let mut seen = vec![0u8; count];
    let mut back = vec![false; edges.len()];
    for root in 0..count {
        if seen[root] != 0 {
            continue;
        }
        // Iterative, so a long chain cannot overflow the stack.
        let mut stack = vec![(root, 0usize)];
        seen[root] = 1;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            if let Some(&edge) = out[node].get(*next) {
                *next += 1;
                let to = edges[edge].to;
                match seen[to] {
                    0 => {
                        seen[to] = 1;
                        stack.push((to, 0));
                    }
                    1 => back[edge] = true,
                    _ => {}
                }
            } else {
                seen[node] = 2;
                stack.pop();
            }
        }
    }
    back
}

/// Layers (the longest path from a source over the forward edges;
/// `__end__` last), each ordered by where its nodes' parents are.
fn layout(graph: &Value) -> Option<Layout> {
    let (names, edges) = read(graph)?;
    // `__start__` walks first: it is the first node of LangGraph's JSON,
    // but make sure.
    let count = names.len();
    let start = names.iter().position(|n| n == START).unwrap_or(0);
    let order: Vec<usize> = std::iter::once(start)
        .chain((0..count).filter(|&i| i != start))
        .collect();
    let rank: Vec<usize> = {
        let mut rank = vec![0; count];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        rank
    };
    // Walk in that order: renumber, find the back edges, number back.
    let renumbered: Vec<Edge> = edges
        .iter()
        .map(|e| Edge {
            from: rank[e.from],
            to: rank[e.to],
            conditional: e.conditional,
        })
        .collect();
    let back = back_edges(count, &renumbered);

    // Longest path over the forward edges (Kahn's order).
    let mut layer = vec![0usize; count];
    let mut indegree = vec![0usize; count];
    for (edge, &is_back) in edges.iter().zip(&back) {
        if !is_back && edge.from != edge.to {
            indegree[edge.to] += 1;
        }
    }
    let mut ready: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&i| indegree[i] == 0)
        .collect();
    ready.reverse();
    while let Some(node) = ready.pop() {
        for (edge, &is_back) in edges.iter().zip(&back) {
            if edge.from == node && !is_back && edge.to != node {
                layer[edge.to] = layer[edge.to].max(layer[node] + 1);
                indegree[edge.to] -= 1;
                if indegree[edge.to] == 0 {
                    ready.push(edge.to);
                }
            }
        }
    }
    if let Some(end) = names.iter().position(|n| n == END) {
        let deepest = (0..count)
            .filter(|&i| i != end)
            .map(|i| layer[i])
            .max()
            .unwrap_or(0);
        layer[end] = layer[end].max(deepest + 1);
    }

    // Each layer in order: by the mean place of its parents above, then
    // as the JSON lists them.
    let layers = layer.iter().max().map_or(0, |&m| m + 1);
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for &i in &order {
        rows[layer[i]].push(i);
    }
    let mut place = vec![0.0f64; count];
    for row in &mut rows {
        let key = |i: usize| {
            let parents: Vec<f64> = edges
                .iter()
                .zip(&back)
                .filter(|(e, b)| e.to == i && !**b && e.from != i)
                .map(|(e, _)| place[e.from])
                .collect();
            if parents.is_empty() {
                f64::MAX
            } else {
                parents.iter().sum::<f64>() / parents.len() as f64
            }
        };
        let mut keyed: Vec<(f64, usize, usize)> =
            row.iter().map(|&i| (key(i), rank[i], i)).collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        *row = keyed.into_iter().map(|(_, _, i)| i).collect();
        for (p, &i) in row.iter().enumerate() {
            place[i] = p as f64;
        }
    }

    // Boxes: as wide as their names; each layer centred.
    let width: Vec<f64> = names
        .iter()
        .map(|n| (n.chars().count() as f64 * 8.0 + 28.0).max(72.0))
        .collect();
    let row_width = |row: &[usize]| {
        row.iter().map(|&i| width[i]).sum::<f64>() + NODE_GAP * row.len().saturating_sub(1) as f64
    };
    let widest = rows.iter().map(|r| row_width(r)).fold(0.0, f64::max);
    let (mut x, mut y) = (vec![0.0; count], vec![0.0; count]);
    for (l, row) in rows.iter().enumerate() {
        let mut left = MARGIN + (widest - row_width(row)) / 2.0;
        for &i in row {
            x[i] = left + width[i] / 2.0;
            y[i] = MARGIN + l as f64 * (NODE_HEIGHT + LAYER_GAP) + NODE_HEIGHT / 2.0;
            left += width[i] + NODE_GAP;
        }
    }
    let loops = back.iter().filter(|&&b| b).count() as f64;
    let right = MARGIN + widest;
    let size = (
        right + MARGIN + loops * LOOP_GAP,
        MARGIN * 2.0 + layers as f64 * NODE_HEIGHT + layers.saturating_sub(1) as f64 * LAYER_GAP,
    );
    Some(Layout {
        names,
        edges,
        x,
        y,
        width,
        size,
        right,
    })
}

/// A number for an SVG attribute: at most one decimal.
fn n(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

/// The path of edge `edge`; `nth_loop` counts the loops drawn before it.
fn path(layout: &Layout, edge: &Edge, nth_loop: &mut usize) -> String {
    let half = NODE_HEIGHT / 2.0;
    let (fx, fy) = (layout.x[edge.from], layout.y[edge.from]);
    let (tx, ty) = (layout.x[edge.to], layout.y[edge.to]);
    let mut d = String::new();
    if ty > fy {
        // Down: from the bottom of one box to the top of the other.
        let (y1, y2) = (fy + half, ty - half);
        let bend = (y2 - y1) / 2.0;
        let _ = write!(
            d,
            "M{} {} C{} {} {} {} {} {}",
            n(fx),
            n(y1),
            n(fx),
            n(y1 + bend),
            n(tx),
            n(y2 - bend),
            n(tx),
            n(y2)
        );
    } else if edge.from == edge.to {
        // A node to itself: a small loop on its right.
        let x1 = fx + layout.width[edge.from] / 2.0;
        let _ = write!(
            d,
            "M{} {} C{} {} {} {} {} {}",
            n(x1),
            n(fy - 6.0),
            n(x1 + 30.0),
            n(fy - 22.0),
            n(x1 + 30.0),
            n(fy + 22.0),
            n(x1),
            n(fy + 6.0)
        );
    } else {
        // Up or across (a loop): out of the right side, around the
        // drawing's right, into the target's right side.
        *nth_loop += 1;
        let out = layout.right + *nth_loop as f64 * LOOP_GAP;
        let x1 = fx + layout.width[edge.from] / 2.0;
        let x2 = tx + layout.width[edge.to] / 2.0;
        let _ = write!(
            d,
            "M{} {} C{} {} {} {} {} {}",
            n(x1),
            n(fy),
            n(out),
            n(fy),
            n(out),
            n(ty),
            n(x2),
            n(ty)
        );
    }
    d
}

fn svg(layout: &Layout, marked: &[String]) -> Markup {
    let (width, height) = layout.size;
    let mut loops = 0;
    let is_marked = |name: &str| marked.iter().any(|m| m == name);
    html! {
        svg.graph xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="graph-title"
            width=(n(width)) height=(n(height)) viewBox={ "0 0 " (n(width)) " " (n(height)) } {
            title #graph-title {
                "The graph: " (layout.names.len()) " nodes, " (layout.edges.len()) " edges"
                @if !marked.is_empty() { "; the selected step ran " (marked.join(", ")) }
            }
            defs {
                marker #graph-arrow viewBox="0 0 10 10" refX="9" refY="5"
                    markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                    path d="M0 0 L10 5 L0 10 z" {}
                }
            }
            g.edges {
                @for edge in &layout.edges {
                    path class={ "edge" @if edge.conditional { " conditional" } }
                        data-from=(layout.names[edge.from]) data-to=(layout.names[edge.to])
                        d=(path(layout, edge, &mut loops)) marker-end="url(#graph-arrow)" {}
                }
            }
            g.nodes {
                @for (i, name) in layout.names.iter().enumerate() {
                    @let terminal = name == START || name == END;
                    @let w = layout.width[i];
                    g class={ "gnode" @if name == START { " first" } @if name == END { " last" } @if is_marked(name) { " active" } }
                        data-node=(name) {
                        rect x=(n(layout.x[i] - w / 2.0)) y=(n(layout.y[i] - NODE_HEIGHT / 2.0))
                            width=(n(w)) height=(n(NODE_HEIGHT))
                            rx=(if terminal { n(NODE_HEIGHT / 2.0) } else { "6".to_owned() }) {}
                        text x=(n(layout.x[i])) y=(n(layout.y[i])) text-anchor="middle" dominant-baseline="central" { (name) }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The reference app's tool loop: start → agent, agent ⇢ tools | end,
    /// tools → agent.
    fn tool_loop() -> Value {
        json!({
            "nodes": [{"id": "__start__"}, {"id": "agent"}, {"id": "tools"}, {"id": "__end__"}],
            "edges": [
                {"source": "__start__", "target": "agent"},
                {"source": "agent", "target": "tools", "conditional": true},
                {"source": "agent", "target": "__end__", "conditional": true},
                {"source": "tools", "target": "agent"},
            ],
        })
    }

    #[test]
    fn layers_go_down_and_a_loop_goes_around() {
        let layout = layout(&tool_loop()).unwrap();
        let y = |name: &str| layout.y[layout.names.iter().position(|n| n == name).unwrap()];
        assert!(y("__start__") < y("agent"));
        assert!(y("agent") < y("tools"));
        assert!(y("tools") < y("__end__"), "the end is the last layer");
        // tools → agent goes up: around the right side.
        let html = draw(&tool_loop(), &[]).unwrap().into_string();
        assert_eq!(html.matches("class=\"edge conditional\"").count(), 2);
        assert_eq!(html.matches("class=\"edge\"").count(), 2);
        assert!(layout.size.0 > layout.right, "room for the loop");
    }

    #[test]
    fn the_marked_nodes_are_active() {
        let html = draw(&tool_loop(), &["tools".to_owned()])
            .unwrap()
            .into_string();
        assert!(html.contains(r#"<g class="gnode active" data-node="tools">"#));
        assert!(html.contains(r#"<g class="gnode" data-node="agent">"#));
        assert!(html.contains(r#"<g class="gnode first" data-node="__start__">"#));
        assert!(html.contains("the selected step ran tools"));
    }

    #[test]
    fn names_are_escaped_and_bad_json_draws_nothing() {
        let graph =
            json!({"nodes": [{"id": "<b>&"}], "edges": [{"source": "<b>&", "target": "nowhere"}]});
        let html = draw(&graph, &[]).unwrap().into_string();
        assert!(html.contains("&lt;b&gt;&amp;") && !html.contains("<b>"));
        assert!(
            !html.contains("<path class=\"edge"),
            "an edge to an unknown node is left out"
        );
        assert!(draw(&json!({"nodes": []}), &[]).is_none());
        assert!(draw(&json!("graph"), &[]).is_none());
        let cycle = json!({
            "nodes": [{"id": "a"}, {"id": "b"}],
            "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "a"}, {"source": "a", "target": "a"}],
        });
        assert!(
            draw(&cycle, &[]).is_some(),
            "a graph without a start still draws"
        );
    }
}
