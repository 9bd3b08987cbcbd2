//! The agent half of the graph runner against LangGraph's recorded
//! behaviour (`tests/vectors/agent_graphs.json`: 106 graphs run by
//! langgraph 1.2.22 on an `InMemorySaver` thread; its `format` field and
//! `tests/vectors/README.md`, "Behaviour worth knowing (agent cases)", say
//! how each graph is built and what it pins). `conformance.rs` does the
//! same for `graphs.json`; what both use is in `support/lg.rs`.
//!
//! Each case's graph is built from its data with our API
//! (`StateGraph<Graph, Probe>`): a node returns its substituted update
//! template, or a [`Command`] (`Command::goto(..)`, `.update(..)`, a Send as
//! `worker.send(arg)`), after one `ctx.interrupt` per listed question; the
//! data's `destinations` are `.destinations([..])`; a Send target is a
//! worker (`add_worker`; a name both pulled and sent is a node plus a worker
//! `<name>@send`, as in conformance.rs); `[[a, b], c]` is a join edge
//! `add_edge(["a", "b"], "c")`; `compile`'s breakpoints are
//! `interrupt_before` / `interrupt_after` (`"*"`: every node, by name); a
//! `$remaining` token is `ctx.remaining_steps()`, and a router reading
//! `remaining_steps` reads what its node saw, through the run's context
//! (`fn(&S, &C)`: the `Probe`, which also records which node functions
//! ran). Each request runs on thread `"t"` of `Store::memory()` (a
//! handful of cases also on a SQLite file: [`representative_cases_on_sqlite`]):
//! - `input` / `resume` / `resume_map`: `stream_thread` / `stream_resume`
//!   in `updates | values | messages` mode; `input: null` (LangGraph's
//!   `invoke(None)`): `continue_thread`, which has no stream form. Compared
//!   as conformance.rs does (each committed superstep's tasks, updates and
//!   state, from the stream and from the log; the interrupts by node, value
//!   and id; the error by kind and what it names; the node functions that
//!   ran), plus: a breakpoint's `{"__interrupt__": []}` chunk (our empty
//!   `Event::Interrupt`), and `get_state()` afterwards (values, `next`,
//!   interrupts; `Outcome::next` is the same `next`).
//! - `update_state`: `app.update_state(thread, delta, as_node)`, its error
//!   by kind (`UnknownNode`, `AmbiguousUpdate`), then `get_state()`.
//! - `get_state_history`: the thread's snapshots (each one's state, `next`,
//!   interrupts, LangGraph's `source` and step; their order), see below.
//! - `messages_stream`: our `Event::Message`s, each message once (ids
//!   matched) with `langgraph_node`, `langgraph_path`,
//!   `langgraph_triggers`, `ls_integration`, `thread_id` equal to
//!   LangGraph's and `langgraph_checkpoint_ns` of the shape `node:<task
//!   id>`; our `langgraph_step` is the seq of the thread's step the task
//!   committed in (decided), checked as that.
//! - `draw_mermaid()` against the recorded `mermaid` text, verbatim
//!   ([`every_drawing_is_langgraphs_or_listed`]).
//!
//! Generated ids (`"<gen:N>"`) match our UUIDs, equal N for equal ids.
//!
//! # Subgraphs
//!
//! A `{"subgraph": GRAPH}` node is `add_subgraph(name, child.compile()?)`,
//! the child built by the same builder (any depth); a `{"call_subgraph":
//! GRAPH, "into", "from"}` node is `add_subgraph_mapped` of a child over
//! [`Notes`] (the `notes` schema), its `into_child` / `from_child` built
//! from the data's mappings (a key with no value is left out, as
//! LangGraph's `if pk in state`). A child's recursion limit is the case's
//! (LangGraph's config applies to every level; ours is the compiled
//! child's own), and the probe records a child node's calls (and remaining
//! steps) as `node|child-node`: a namespace without its task ids, as `Ctx`
//! shows a node no namespace. The subgraph cases stream with
//! `StreamMode::SUBGRAPHS` ([`passes`]; a case whose messages LangGraph
//! streamed without `subgraphs=True` is run a second time without it, for
//! them), and compare besides:
//! - each subgraph's committed supersteps (tasks, updates, state after
//!   each), from our `Event::Nested` updates and values, against the
//!   recording's `subgraphs` levels, namespaces matched as `node:<id>`
//!   segments with the ids as generated ids ([`compare_levels`]);
//! - what ran: the recorded `executed` of every level, a subgraph node
//!   itself left out (no function of ours runs for it);
//! - `subgraph_updates`: our updates chunks at every level as `(namespace,
//!   chunk)` pairs, put in LangGraph's recorded order ([`canonical`]), with
//!   our stream's known differences applied ([`compare_pairs`]);
//! - the messages' namespaces (`ns`, `checkpoint_ns`,
//!   `langgraph_checkpoint_ns`: task ids matched within the request, as
//!   LangGraph's is a run of its own), and inside a subgraph its own
//!   `langgraph_step`;
//! - an interrupt raised inside a subgraph as LangGraph's parent lists it:
//!   under the top-level task it runs in (our `Interrupt::node` is the
//!   child's node, with its `namespace`: [`lg_interrupt`]);
//! - the history without a subgraph's own steps (`StepKind::Subgraph`).
//!
//! # LangGraph's checkpoints and our steps
//!
//! LangGraph numbers its checkpoints by `metadata.step`; ours are the
//! thread's logged steps, by `seq`. Walking a thread's log oldest first
//! (`Session::lineage`), with `k` LangGraph's step so far (-2 on an empty
//! thread):
//! - our input step (`BeginTurn`, the input applied) is LangGraph's `loop`
//!   checkpoint `k + 2`; LangGraph's `input` checkpoint `k + 1` before it
//!   (the state before the input, next `[__start__]`) has no step of ours,
//!   and is left out of the comparison;
//! - a superstep is `k + 1`;
//! - an `update_state` step is `k + 1` (source `update`), or 0 as a
//!   thread's first step;
//! - a paused superstep (a `Pending` step: an interrupt or a breakpoint)
//!   is no checkpoint of LangGraph's: it is the pending writes of the
//!   checkpoint before, whose interrupts it gives. So LangGraph's step S is
//!   our committed step at S, and, if the run paused right after it, our
//!   pause step too.
//!
//! Replay and fork are `store.fork(thread, seq, new)` and then, on the new
//! thread, `continue_thread` (a replay) or `update_state` +
//! `continue_thread` (a fork); the requests after them go to the new
//! thread. The `seq` of LangGraph's step S is our pause step when there is
//! one (a fork at a pause is paused too: decided), else the committed step;
//! a replay of an `input` checkpoint (-1) forks our input step. LangGraph's
//! replay first writes a `fork` copy of the checkpoint (step S + 1; for an
//! input checkpoint, the copy and the input applied again: S + 2), which
//! has no step of ours: the new branch's steps are numbered from there, and
//! `fork` checkpoints are left out like `input` ones. LangGraph's history
//! lists every branch; ours (a thread's) one lineage: compared is
//! LangGraph's current lineage (from the thread's newest checkpoint by
//! parent links) against our fork's steps after the fork point and the
//! forked thread's up to it.
//!
//! # Differences
//!
//! Where we differ from LangGraph, the case is listed in [`DIFFERENCES`]
//! (or, for drawings, [`MERMAID`]) with the reason and a verdict:
//! deliberate (decided in issue 32 or our docs) or undecided (looks
//! unintended; reported). An entry asserts what we do instead: that
//! compile refuses the graph, our behaviour request by request (its
//! [`summary`]; `AGENT_CONFORMANCE_PRINT=1` prints ours), and/or that the
//! case built another way matches the recording. A listed case that comes
//! to match LangGraph fails the test (remove the entry), and a case that is
//! neither run nor listed fails it too.
//!
//! Known differences applied where they happen, as in conformance.rs: a
//! paused run's `get_state()` shows the committed state, where LangGraph's
//! applies the finished tasks' pending writes (checked: LangGraph's is ours
//! plus those writes); a task whose interrupt is still pending is not run
//! again (LangGraph re-runs it and raises the same interrupt); an update
//! LangGraph streams again as `cached` is streamed once.

use crate::support::lg::*;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use state_core::{AgentState, Delta, State};
use state_graph::{
    Command, CompiledGraph, Ctx, Destination, END, Event, GraphError, GraphState, Interrupt,
    NodeError, NodeOptions, Outcome, Resume, RunStream, START, StateGraph, StreamMode, Worker,
};
use state_store::{StepKind, StepRecord, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

const VECTORS: &str = include_str!("../vectors/agent_graphs.json");

/// Every case starts on this thread (the recording's `thread_id`).
const THREAD: &str = "t";

// ---------------------------------------------------------------------------
// The subgraph cases.
// ---------------------------------------------------------------------------

/// Whether a case has a subgraph: its group is about them, or a node is a
/// compiled child (`subgraph`) or calls one (`call_subgraph`). Its runs
/// stream with `StreamMode::SUBGRAPHS` (see [`passes`]).
fn involves_subgraph(case: &Value) -> bool {
    matches!(
        case["group"].as_str(),
        Some("subgraph" | "stream_subgraphs")
    ) || case["nodes"]
        .as_object()
        .expect("nodes")
        .values()
        .any(|spec| spec.get("subgraph").is_some() || spec.get("call_subgraph").is_some())
}

// ---------------------------------------------------------------------------
// Building a case's graph.
// ---------------------------------------------------------------------------

/// The run's context (`StateGraph<Graph, Probe>`): what the harness sees
/// of the nodes through `Ctx::context`, and the remaining steps a node saw,
/// for the routers that read them.
#[derive(Default)]
struct Probe {
    /// The node functions that ran, by LangGraph name, in call order.
    calls: Mutex<Vec<String>>,
    /// The `remaining_steps` each node saw in its latest run.
    remaining: Mutex<HashMap<String, usize>>,
}

type P = Arc<Probe>;
type App = CompiledGraph<Graph, P>;
type Workers = Arc<OnceLock<HashMap<String, Worker<Value>>>>;

/// How to build a case where our API or compile differs from LangGraph's.
#[derive(Debug, Clone, Copy, Default)]
struct Build {
    /// Nodes left out, with their edges: nodes no edge reaches, which our
    /// compile refuses and LangGraph keeps (never running them).
    drop: &'static [&'static str],
    /// A Command whose goto mixes node names and Sends (which our
    /// `Command::goto` cannot take: its list is of one kind) goes to the
    /// names, and its Sends become a fan-out of the node with the same
    /// inputs (sent in the same superstep, in the same order).
    mixed_goto_as_fan_out: bool,
    /// Every router also declares END (it never returns it), so that
    /// compile accepts a loop whose only exit is the recursion limit.
    declare_end: bool,
    /// A replay or fork of a checkpoint at which the run paused (an
    /// interrupt, a breakpoint) forks our step before the pause, not the
    /// pause itself.
    replay_before_pause: bool,
    /// Where `get_state_history` fails (on a fork: see DIFFERENCES), the
    /// history is read step by step instead: `get_state` of a fork at each
    /// step.
    history_stand_in: bool,
    /// A subgraph node's write is ours (what the child's steps wrote, not
    /// LangGraph's whole final child state: see DIFFERENCES), and so are
    /// the states from there on: the subgraph nodes' updates are compared
    /// by node only, and states (values, `get_state`'s, the history's) not
    /// at all; everything else is (tasks, the other updates, inside the
    /// subgraphs too, interrupts, next, what ran, the streams).
    subgraph_writes_ours: bool,
    /// A child node's `Command::to_parent`: ours commits its superstep (the
    /// child's last step, its update streamed in the child's namespace,
    /// see DIFFERENCES); LangGraph's child saves no step for it and
    /// streams no chunk. That step is compared by its tasks only, and our
    /// chunk of it is left out of `subgraph_updates`.
    handoff_step_ours: bool,
    /// `get_state`'s interrupts compared whatever their order (ours lists
    /// a paused subgraph's after the graph's own: see DIFFERENCES).
    pending_unordered: bool,
}

/// The Command spec of a node spec, if it returns one.
fn command_of(spec: &Value) -> Option<&Value> {
    spec.get("command")
        .or_else(|| spec.get("then").and_then(|t| t.get("command")))
}

/// The entries of a Command spec's goto.
fn goto_entries(command: &Value) -> Vec<Value> {
    match command.get("goto") {
        None => Vec::new(),
        Some(Value::Array(list)) => list.clone(),
        Some(one) => vec![one.clone()],
    }
}

/// Whether a goto mixes names and Sends.
fn mixed_goto(command: &Value) -> bool {
    let entries = goto_entries(command);
    entries.iter().any(Value::is_string) && entries.iter().any(Value::is_object)
}

/// What a case's graph is made of, by name.
struct Shape {
    /// Send targets (workers in ours).
    sent: BTreeSet<String>,
    /// Names run without a Send: edge, router and goto targets.
    pulled: BTreeSet<String>,
}

fn shape(case: &Value) -> Shape {
    let mut sent = BTreeSet::new();
    let mut pulled = BTreeSet::new();
    for edge in case["edges"].as_array().expect("edges") {
        pulled.insert(edge[1].as_str().expect("an edge target").to_owned());
    }
    for router in case["routers"].as_array().expect("routers") {
        if router.get("send_each").is_some() {
            sent.insert(router["to"].as_str().expect("a Send target").to_owned());
            pulled.extend(str_list(&router["plus"]));
        } else {
            for target in router["map"]
                .as_object()
                .into_iter()
                .flat_map(|m| m.values())
            {
                pulled.extend(names(target));
            }
            if let Some(default) = router.get("default") {
                pulled.extend(names(default));
            }
        }
    }
    for spec in case["nodes"].as_object().expect("nodes").values() {
        for entry in command_of(spec).map(goto_entries).unwrap_or_default() {
            match entry {
                Value::String(name) if !name.starts_with('$') => {
                    pulled.insert(name);
                }
                Value::Object(send) => {
                    sent.insert(send["send"].as_str().expect("a Send target").to_owned());
                }
                _ => {}
            }
        }
    }
    // A goto from a template (`$answer`): its destinations, given by hand.
    for (node, list) in case["destinations"].as_object().expect("destinations") {
        let templated = command_of(&case["nodes"][node])
            .map(goto_entries)
            .unwrap_or_default()
            .iter()
            .any(|e| e.as_str().is_some_and(|s| s.starts_with('$')));
        if templated {
            pulled.extend(str_list(list));
        }
    }
    pulled.remove(END);
    Shape { sent, pulled }
}

impl Shape {
    /// Whether `name` is a node of ours (a worker only when only sent).
    fn is_node(&self, name: &str) -> bool {
        !self.sent.contains(name) || self.pulled.contains(name)
    }

    /// Our name of the worker standing for `name`'s Send half.
    fn worker_name(&self, name: &str) -> String {
        if self.is_node(name) {
            format!("{name}{SEND_SUFFIX}")
        } else {
            name.to_owned()
        }
    }
}

/// One run of a node or worker: its interrupts, then its update or Command.
fn run_node<S: Schema>(
    name: &str,
    spec: &Value,
    item: Option<&Value>,
    remaining: Option<usize>,
    ctx: &Ctx<P>,
    workers: &Workers,
    how: Build,
) -> Result<Command<S::Delta>, NodeError> {
    let probe = ctx.context();
    probe.calls.lock().unwrap().push(name.to_owned());
    if let Some(remaining) = remaining {
        probe
            .remaining
            .lock()
            .unwrap()
            .insert(name.to_owned(), remaining);
    }
    let remaining = remaining.map(|r| json!(r));
    let (questions, then) = match spec.get("interrupt") {
        Some(Value::Array(questions)) => (questions.as_slice(), &spec["then"]),
        _ => (&[][..], spec),
    };
    let mut answers = Vec::new();
    for question in questions {
        let vars = Vars {
            item,
            answers: &answers,
            remaining: remaining.as_ref(),
        };
        let question = substitute_vars(question, &vars);
        answers.push(ctx.interrupt(question)?);
    }
    let vars = Vars {
        item,
        answers: &answers,
        remaining: remaining.as_ref(),
    };
    let Some(spec) = then.get("command") else {
        return match substitute_vars(then, &vars) {
            // A node returning None writes nothing.
            Value::Null => Ok(Command::default().update(S::delta())),
            update => Ok(Command::default().update(S::Delta::from_json(update)?)),
        };
    };
    let goto = substitute_vars(&spec.get("goto").cloned().unwrap_or(Value::Null), &vars);
    let mut command = match goto {
        Value::Null => Command::default(),
        Value::String(name) => Command::goto(name),
        Value::Array(list) => {
            let workers = workers.get().expect("the workers are added");
            let (mut targets, mut sends) = (Vec::new(), Vec::new());
            for entry in list {
                match entry {
                    Value::String(name) => targets.push(name),
                    Value::Object(send) => {
                        let to = send["send"].as_str().expect("a Send target");
                        sends.push(workers[to].send(send["arg"].clone()));
                    }
                    other => panic!("{name}: goto entry {other}"),
                }
            }
            match (targets.is_empty(), sends.is_empty()) {
                (_, true) => Command::goto(targets),
                (true, false) => Command::goto(sends),
                // The Sends go out by the fan-out `build` added.
                (false, false) if how.mixed_goto_as_fan_out => Command::goto(targets),
                (false, false) => panic!(
                    "{name}: a goto of names and Sends, which Command::goto cannot take: list the case"
                ),
            }
        }
        other => panic!("{name}: goto {other}"),
    };
    if let Some(update) = spec.get("update") {
        command = command.update(S::Delta::from_json(substitute_vars(update, &vars))?);
    }
    if spec.get("graph").is_some() {
        command = command.to_parent();
    }
    Ok(command)
}

/// `[key, ...]` of the compile spec: a list, or `"*"` for every node.
fn breakpoint_list(value: &Value, all: &[String]) -> Vec<String> {
    match value {
        Value::String(star) if star == "*" => all.to_vec(),
        other => str_list(other),
    }
}

/// Keys of a JSON object, in the file's order.
struct Keys(Vec<String>);

impl<'de> serde::Deserialize<'de> for Keys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Keys, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Keys;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                let mut keys = Vec::new();
                while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    keys.push(key);
                }
                Ok(Keys(keys))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Each case's node names in the order the file gives them (LangGraph's
/// `add_node` order, which its drawing keeps): this build's
/// `serde_json::Map` sorts its keys.
fn node_order(case: &str) -> &'static [String] {
    #[derive(serde::Deserialize)]
    struct File {
        cases: Vec<Case>,
    }
    #[derive(serde::Deserialize)]
    struct Case {
        name: String,
        nodes: Keys,
    }
    static ORDER: OnceLock<HashMap<String, Vec<String>>> = OnceLock::new();
    ORDER.get_or_init(|| {
        let file: File = serde_json::from_str(VECTORS).expect("the vectors are JSON");
        file.cases
            .into_iter()
            .map(|c| (c.name, c.nodes.0))
            .collect()
    })[case]
        .as_slice()
}

/// The case's graph with our API, on `store`.
fn build(case: &Value, how: Build, store: Store) -> Result<(App, P), GraphError> {
    let limit = case
        .pointer("/config/recursion_limit")
        .map(|limit| limit.as_u64().expect("a limit") as usize);
    let order = node_order(case["name"].as_str().expect("a name"));
    let g = build_graph::<Graph>(case, order, "", how, limit)?;
    let probe = P::default();
    let app = g.compile()?.with_store(store).with_context(probe.clone());
    let app = match limit {
        Some(limit) => app.with_recursion_limit(limit),
        None => app,
    };
    Ok((app, probe))
}

/// `name` inside the graph at `path` (the node names of the subgraph
/// tasks it runs in, joined by `|`, as a namespace without its task ids):
/// how the probe records a node's calls and remaining steps.
fn qualified(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}|{name}")
    }
}

/// The names of a GRAPH's nodes: in `order` at the top (the file's), in
/// the map's order inside (a child's node order is drawn nowhere).
fn graph_nodes(graph: &Value, order: &[String]) -> Vec<String> {
    if order.is_empty() {
        graph["nodes"]
            .as_object()
            .expect("nodes")
            .keys()
            .cloned()
            .collect()
    } else {
        order.to_vec()
    }
}

/// Where the `Command(graph=PARENT)`s of a child GRAPH's nodes go: the
/// subgraph node's destinations in its parent (which LangGraph's data
/// leaves out: its destinations are of the child's own graph).
fn parent_gotos(child: &Value) -> Vec<String> {
    let mut targets = Vec::new();
    for spec in child["nodes"].as_object().expect("nodes").values() {
        let Some(command) = command_of(spec).filter(|c| c.get("graph").is_some()) else {
            continue;
        };
        for entry in goto_entries(command) {
            if let Some(name) = entry.as_str()
                && !targets.iter().any(|t| t == name)
            {
                targets.push(name.to_owned());
            }
        }
    }
    targets
}

/// A GRAPH of the data (a case, or a `subgraph` / `call_subgraph` value)
/// with our API, its nodes' calls recorded as `path|node`. A child's
/// recursion limit is the case's (LangGraph's config applies to every
/// level; ours is the compiled child's own).
fn build_graph<S: Schema>(
    graph: &Value,
    order: &[String],
    path: &str,
    how: Build,
    limit: Option<usize>,
) -> Result<StateGraph<S, P>, GraphError> {
    let managed = graph["managed"]
        .as_array()
        .expect("managed")
        .iter()
        .any(|m| m == "remaining_steps");
    let shape = shape(graph);
    let order = graph_nodes(graph, order);
    let nodes: Vec<(&String, &Value)> = order
        .iter()
        .filter(|n| !how.drop.contains(&n.as_str()))
        .map(|n| (n, &graph["nodes"][n.as_str()]))
        .collect();
    let kept = |name: &str| !how.drop.contains(&name);
    let destinations = graph["destinations"].as_object().expect("destinations");
    let workers: Workers = Arc::default();
    let mut added: HashMap<String, Worker<Value>> = HashMap::new();
    let mut ours: Vec<String> = Vec::new();
    let mut g = StateGraph::<S, P>::new();

    let add_worker = |g: &mut StateGraph<S, P>,
                      added: &mut HashMap<String, Worker<Value>>,
                      ours: &mut Vec<String>,
                      name: &str|
     -> Result<(), GraphError> {
        if added.contains_key(name) {
            return Ok(());
        }
        let spec = graph["nodes"][name].clone();
        let (lg, workers) = (qualified(path, name), workers.clone());
        let our_name = shape.worker_name(name);
        ours.push(our_name.clone());
        let worker = if let Some(child) = spec.get("subgraph") {
            // A Send to a subgraph node: no worker of ours is a subgraph
            // (see DIFFERENCES): the child run in memory from the Send arg,
            // its steps' writes one after the other, stands in.
            let child = build_graph::<S>(child, &[], &lg, how, limit)?.compile()?;
            let child = match limit {
                Some(limit) => child.with_recursion_limit(limit),
                None => child,
            };
            g.add_worker(our_name, move |arg: Arc<Value>, ctx: Ctx<P>| {
                let child = child.with_context(ctx.context().clone());
                async move { child_writes(&child, &arg).await }
            })
        } else {
            // A Send's input is its arg (`{"item": v}`): the worker reads
            // `v`. It has no `remaining_steps` (LangGraph's managed value is
            // a key of the state, which a Send arg is not).
            g.add_worker(
                our_name,
                move |arg: &Value, ctx: &Ctx<P>| -> Result<Command<S::Delta>, NodeError> {
                    run_node::<S>(&lg, &spec, arg.get("item"), None, ctx, &workers, how)
                },
            )
        };
        added.insert(name.to_owned(), worker);
        Ok(())
    };

    for (node, spec) in &nodes {
        let node = node.as_str();
        let mut declared: Vec<String> = destinations
            .get(node)
            .map(str_list)
            .unwrap_or_default()
            .into_iter()
            .filter(|d| kept(d))
            .collect();
        // A Command's worker destination is the worker's handle: the
        // worker is added first.
        let mixed = how.mixed_goto_as_fan_out && command_of(spec).is_some_and(mixed_goto);
        for d in &declared {
            if shape.sent.contains(d) && !mixed {
                add_worker(&mut g, &mut added, &mut ours, d)?;
            }
        }
        if shape.is_node(node) {
            ours.push(node.to_owned());
            let lg = qualified(path, node);
            let options = if let Some(child) = spec.get("subgraph") {
                declared.extend(parent_gotos(child));
                let child = build_graph::<S>(child, &[], &lg, how, limit)?.compile()?;
                let child = match limit {
                    Some(limit) => child.with_recursion_limit(limit),
                    None => child,
                };
                g.add_subgraph(node, child)
            } else if spec.get("call_subgraph").is_some() {
                S::add_call(&mut g, node, spec, &lg, how, limit)?
            } else {
                let (spec, workers) = ((*spec).clone(), workers.clone());
                g.add_node(
                    node,
                    move |_: &S, ctx: &Ctx<P>| -> Result<Command<S::Delta>, NodeError> {
                        let remaining = managed.then(|| ctx.remaining_steps());
                        run_node::<S>(&lg, &spec, None, remaining, ctx, &workers, how)
                    },
                )
            };
            let mut list: Vec<Destination> = Vec::new();
            for d in &declared {
                if d == END || shape.is_node(d) {
                    list.push(d.as_str().into());
                }
                if shape.sent.contains(d) && !mixed {
                    list.push(Destination::from(&added[d.as_str()]));
                }
            }
            if !list.is_empty() {
                options.destinations(list);
            }
        }
        if shape.sent.contains(node) {
            add_worker(&mut g, &mut added, &mut ours, node)?;
        }
    }

    for edge in graph["edges"].as_array().expect("edges") {
        let to = edge[1].as_str().expect("an edge target");
        let froms = match &edge[0] {
            Value::String(from) => vec![from.clone()],
            list => str_list(list),
        };
        if !kept(to) || froms.iter().any(|f| !kept(f)) {
            continue;
        }
        if froms.len() == 1 {
            let from = &froms[0];
            if shape.is_node(from) || from == START {
                g.add_edge(from.as_str(), to);
            }
            // The worker standing for a Send half leaves by the node's edges.
            if shape.sent.contains(from) {
                g.add_edge(shape.worker_name(from), to);
            }
        } else {
            g.add_edge(froms, to);
        }
    }
    for router in graph["routers"].as_array().expect("routers") {
        let from = router["from"].as_str().expect("a router source").to_owned();
        if let Some(key) = router.get("send_each") {
            let key = key.as_str().expect("a state key").to_owned();
            let to = router["to"].as_str().expect("a Send target");
            let plus = str_list(&router["plus"]);
            if !plus.is_empty() {
                let declared = plus.clone();
                g.add_conditional_edges(from.as_str(), move |_: &S| plus.clone(), declared);
            }
            g.add_fan_out(from.as_str(), &added[to], move |s: &S| -> Vec<Value> {
                state_field(s, &key)
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| json!({ "item": v }))
                    .collect()
            });
        } else {
            let by = router["by"].as_str().expect("a routing key").to_owned();
            let map = router["map"].as_object().cloned().unwrap_or_default();
            let default = router.get("default").cloned();
            let mut targets = str_list(&router["targets"]);
            if how.declare_end && !targets.iter().any(|t| t == END) {
                targets.push(END.to_owned());
            }
            let node = qualified(path, &from);
            g.add_conditional_edges(
                from.as_str(),
                move |s: &S, probe: &P| -> Vec<String> {
                    // LangGraph's router reads `remaining_steps` from its
                    // node's input state: ours, what the node saw.
                    let value = if by == "remaining_steps" {
                        probe
                            .remaining
                            .lock()
                            .unwrap()
                            .get(&node)
                            .map(ToString::to_string)
                    } else {
                        state_routing_value(s, &by)
                    };
                    let picked = value
                        .and_then(|value| map.get(&value))
                        .or(default.as_ref())
                        .expect("no case routes to a missing default");
                    names(picked)
                },
                targets,
            );
        }
    }
    // The Sends of a mixed goto, as a fan-out (see `Build`).
    if how.mixed_goto_as_fan_out {
        for (node, spec) in &nodes {
            let Some(command) = command_of(spec).filter(|c| mixed_goto(c)) else {
                continue;
            };
            let mut by_worker: BTreeMap<String, Vec<Value>> = BTreeMap::new();
            for entry in goto_entries(command) {
                if let Value::Object(send) = entry {
                    by_worker
                        .entry(send["send"].as_str().expect("a worker").to_owned())
                        .or_default()
                        .push(send["arg"].clone());
                }
            }
            for (worker, args) in by_worker {
                if !added.contains_key(&worker) {
                    add_worker(&mut g, &mut added, &mut ours, &worker)?;
                }
                g.add_fan_out(node.as_str(), &added[&worker], move |_: &S| args.clone());
            }
        }
    }
    let compile = &graph["compile"];
    if let Some(before) = compile.get("interrupt_before") {
        g.interrupt_before(breakpoint_list(before, &ours));
    }
    if let Some(after) = compile.get("interrupt_after") {
        g.interrupt_after(breakpoint_list(after, &ours));
    }
    workers
        .set(added)
        .unwrap_or_else(|_| unreachable!("set once"));
    Ok(g)
}

/// What a child graph run in memory from `arg` wrote: its supersteps'
/// deltas, each step's merged, one step after the other (our subgraph
/// node's write), as a Send worker's update.
async fn child_writes<S: Schema>(
    child: &CompiledGraph<S, P>,
    arg: &Value,
) -> Result<Command<S::Delta>, NodeError> {
    let input = S::Delta::from_json(arg.clone())?;
    let mut stream = child.stream(input, StreamMode::UPDATES | StreamMode::VALUES);
    let (mut step, mut writes): (Option<S::Delta>, Option<S::Delta>) = (None, None);
    while let Some(event) = stream.next().await {
        match event.map_err(|e| NodeError::msg(e.to_string()))? {
            Event::Update { delta, .. } => {
                step = Some(match step.take() {
                    Some(before) => before.merge(delta)?,
                    None => delta,
                });
            }
            Event::Values(_) => {
                if let Some(step) = step.take() {
                    writes = Some(match writes.take() {
                        Some(before) => before.then(step)?,
                        None => step,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(Command::default().update(writes.unwrap_or_default()))
}

/// `state[key]`, as a router reads it.
fn state_field<S: State>(state: &S, key: &str) -> Value {
    state.to_json().expect("the state is JSON")[key].clone()
}

/// [`routing_value`] for either schema.
fn state_routing_value<S: State>(state: &S, by: &str) -> Option<String> {
    if let Some(key) = by.strip_prefix("len(").and_then(|r| r.strip_suffix(')')) {
        let len = match state_field(state, key) {
            Value::Array(list) => list.len(),
            Value::Object(object) => object.len(),
            Value::String(text) => text.chars().count(),
            other => panic!("len({key}) of {other}"),
        };
        Some(len.to_string())
    } else {
        state_field(state, by).as_str().map(str::to_owned)
    }
}

/// The `notes` schema: `notes: Annotated[list, operator.add]`, `topic: str`
/// (LastValue), of the children a node calls (`call_subgraph`).
#[derive(AgentState, Debug, Clone, PartialEq)]
struct Notes {
    #[reducer(append)]
    notes: Vec<Value>,
    topic: Option<String>,
}

/// A GRAPH's state: `Graph` (schema `state`) or `Notes` (schema `notes`).
trait Schema: GraphState {
    /// Adds a `call_subgraph` node named `name` (its child's calls
    /// recorded under `path`).
    fn add_call<'g>(
        g: &'g mut StateGraph<Self, P>,
        name: &str,
        spec: &Value,
        path: &str,
        how: Build,
        limit: Option<usize>,
    ) -> Result<NodeOptions<'g, Self, P>, GraphError>;
}

/// A state as LangGraph's dict: the keys that have a value (a LastValue
/// key never written has none).
fn present<S: State>(state: &S) -> Map<String, Value> {
    let mut map = match state.to_json().expect("the state is JSON") {
        Value::Object(map) => map,
        other => panic!("a state is an object: {other}"),
    };
    map.retain(|_, v| !v.is_null());
    map
}

/// `{to: from_state[from]}` for each `(to, from)` of `mapping` whose `from`
/// has a value: LangGraph's `{ck: state[pk] for ck, pk in into if pk in
/// state}`.
fn mapped(mapping: &Value, from_state: &Map<String, Value>) -> Value {
    Value::Object(
        mapping
            .as_object()
            .expect("a mapping")
            .iter()
            .filter_map(|(to, from)| {
                let from = from.as_str().expect("a key");
                from_state.get(from).map(|v| (to.clone(), v.clone()))
            })
            .collect(),
    )
}

impl Schema for Graph {
    fn add_call<'g>(
        g: &'g mut StateGraph<Graph, P>,
        name: &str,
        spec: &Value,
        path: &str,
        how: Build,
        limit: Option<usize>,
    ) -> Result<NodeOptions<'g, Graph, P>, GraphError> {
        let child = &spec["call_subgraph"];
        assert_eq!(child["schema"], "notes", "{name}: a call_subgraph child");
        let child = build_graph::<Notes>(child, &[], path, how, limit)?.compile()?;
        let child = match limit {
            Some(limit) => child.with_recursion_limit(limit),
            None => child,
        };
        let (into, from) = (spec["into"].clone(), spec["from"].clone());
        Ok(g.add_subgraph_mapped(
            name,
            child,
            move |s: &Graph| {
                NotesDelta::from_json(mapped(&into, &present(s))).expect("the child's input")
            },
            move |n: &Notes| {
                GraphDelta::from_json(mapped(&from, &present(n))).expect("the child's output")
            },
        ))
    }
}

impl Schema for Notes {
    fn add_call<'g>(
        _: &'g mut StateGraph<Notes, P>,
        name: &str,
        _: &Value,
        _: &str,
        _: Build,
        _: Option<usize>,
    ) -> Result<NodeOptions<'g, Notes, P>, GraphError> {
        panic!("{name}: no notes graph calls a subgraph in the data")
    }
}

// ---------------------------------------------------------------------------
// Running a request and observing it.
// ---------------------------------------------------------------------------

/// One committed superstep as we report it.
#[derive(Debug)]
struct Step {
    /// The tasks' nodes, in write order (LangGraph's names).
    nodes: Vec<String>,
    /// One `{node: delta}` per task, in write order.
    updates: Vec<Value>,
    /// The state after it.
    values: Value,
}

/// A `messages` event: the message and its metadata.
#[derive(Debug)]
struct Said {
    /// The namespace it came from (empty at the top).
    namespace: Vec<String>,
    node: String,
    message: Value,
    metadata: Value,
}

/// The supersteps a subgraph committed in one run, as its `Nested` events
/// showed them.
#[derive(Debug, Default)]
struct Level {
    /// Its namespace, `node:task-id` segments.
    namespace: Vec<String>,
    steps: Vec<Step>,
    /// The updates of its superstep not closed yet by a values event.
    nodes: Vec<String>,
    updates: Vec<Value>,
}

#[derive(Debug, Default)]
struct Streamed {
    /// The `values` event after the input.
    input_values: Option<Value>,
    steps: Vec<Step>,
    /// The `Interrupt` events.
    interrupts: Vec<Value>,
    messages: Vec<Said>,
    /// With `StreamMode::SUBGRAPHS`: each subgraph's steps, by namespace,
    /// in the order they first showed.
    levels: Vec<Level>,
    /// The `updates` chunks at every level, in stream order, as
    /// `(namespace, chunk)` (LangGraph's `subgraph_updates`).
    pairs: Vec<(Vec<String>, Value)>,
}

/// What one request did, and the thread afterwards.
#[derive(Debug)]
struct Observed {
    /// A run's outcome (`None` for a request that is not a run).
    result: Option<Result<Outcome<Graph>, GraphError>>,
    /// `update_state`'s answer.
    updated: Option<Result<u64, GraphError>>,
    /// `get_state_history`'s answer, in LangGraph's view (see [`View`]).
    history: Option<Result<Vec<View>, String>>,
    /// What the stream showed (none for `continue_thread`).
    streamed: Option<Streamed>,
    /// The supersteps this run logged.
    logged: Vec<Step>,
    /// The node functions that ran (a subgraph's as `node|child-node`).
    executed: Vec<String>,
    /// `get_state` afterwards: its state, next and interrupts.
    state: Value,
    next: Vec<String>,
    pending: Vec<Value>,
    /// The seqs of the supersteps this run committed.
    committed_seqs: Vec<u64>,
}

/// An interrupt as LangGraph's parent graph lists it: one raised inside a
/// subgraph under the top-level task it runs in (the first segment of its
/// namespace), as LangGraph's `get_state().interrupts` and a run's
/// `__interrupt__` name the subgraph node.
fn lg_interrupt(i: &Interrupt) -> Value {
    let node = match i.namespace.first() {
        Some(segment) => segment.split(':').next().unwrap_or_default().to_owned(),
        None => lg_name(&i.node),
    };
    json!({"node": node, "value": i.value, "id": i.id})
}

async fn collect(mut stream: RunStream<Graph>) -> (Result<Outcome<Graph>, GraphError>, Streamed) {
    let mut streamed = Streamed::default();
    let (mut nodes, mut updates) = (Vec::new(), Vec::new());
    let mut result = None;
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => event,
            Err(error) => {
                result = Some(Err(error));
                continue;
            }
        };
        if let Event::End(outcome) = event {
            result = Some(Ok(outcome));
            continue;
        }
        let data = event.data().expect("an event is JSON");
        match &event {
            Event::Update { node, .. } => {
                nodes.push(lg_name(node));
                let chunk = json!({ lg_name(node): data[node.as_str()] });
                updates.push(chunk.clone());
                streamed.pairs.push((Vec::new(), chunk));
            }
            Event::Values(_) => {
                let values = strip_unwritten_last(data);
                if nodes.is_empty() {
                    assert!(
                        streamed.input_values.is_none() && streamed.steps.is_empty(),
                        "a values event with no superstep before it, after the input's"
                    );
                    streamed.input_values = Some(values);
                } else {
                    streamed.steps.push(Step {
                        nodes: std::mem::take(&mut nodes),
                        updates: std::mem::take(&mut updates),
                        values,
                    });
                }
            }
            Event::Interrupt(list) => {
                let chunk = json!({"__interrupt__": list
                    .iter()
                    .map(|i| json!({"value": i.value, "id": i.id}))
                    .collect::<Vec<_>>()});
                streamed.pairs.push((Vec::new(), chunk));
                streamed
                    .interrupts
                    .push(Value::Array(list.iter().map(lg_interrupt).collect()));
            }
            Event::Message { node, .. } => streamed.messages.push(Said {
                namespace: Vec::new(),
                node: node.clone(),
                message: data[0].clone(),
                metadata: data[1].clone(),
            }),
            Event::Nested {
                namespace, mode, ..
            } => {
                let at = match streamed
                    .levels
                    .iter()
                    .position(|l| &l.namespace == namespace)
                {
                    Some(at) => at,
                    None => {
                        streamed.levels.push(Level {
                            namespace: namespace.clone(),
                            ..Level::default()
                        });
                        streamed.levels.len() - 1
                    }
                };
                let level = &mut streamed.levels[at];
                match *mode {
                    "updates" => {
                        let (node, _) = data
                            .as_object()
                            .and_then(|o| o.iter().next())
                            .expect("an update chunk");
                        level.nodes.push(node.clone());
                        level.updates.push(data.clone());
                        streamed.pairs.push((namespace.clone(), data));
                    }
                    "values" => {
                        // Values with no update before them: the subgraph's
                        // input.
                        if !level.nodes.is_empty() {
                            let step = Step {
                                nodes: std::mem::take(&mut level.nodes),
                                updates: std::mem::take(&mut level.updates),
                                values: strip_nulls(data),
                            };
                            level.steps.push(step);
                        }
                    }
                    "messages" => streamed.messages.push(Said {
                        namespace: namespace.clone(),
                        node: data[1]["langgraph_node"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                        message: data[0].clone(),
                        metadata: data[1].clone(),
                    }),
                    other => panic!("a nested event of a mode not asked for: {other}"),
                }
            }
            other => panic!("an event of a mode not asked for: {other:?}"),
        }
    }
    assert!(
        nodes.is_empty(),
        "updates {updates:?} with no values event after them"
    );
    (
        result.expect("the stream ends with the run's outcome"),
        streamed,
    )
}

/// The thread's last step; `None` when the thread does not exist.
async fn head(store: &Store, thread: &str) -> Option<u64> {
    match store.thread_info(thread).await {
        Ok(info) => Some(info.seq),
        Err(StoreError::ThreadNotFound { .. }) => None,
        Err(e) => panic!("thread_info: {e}"),
    }
}

/// Whether a logged step is a graph's superstep (not an input, a pause or
/// an `update_state` edit).
fn is_superstep(record: &StepRecord) -> bool {
    record.kind == StepKind::Superstep && record.metadata.get("source").is_none()
}

/// The supersteps logged on `thread` after step `after`.
async fn logged_steps(store: &Store, thread: &str, after: u64) -> (Vec<Step>, Vec<u64>) {
    let (mut steps, mut seqs) = (Vec::new(), Vec::new());
    let Some(head) = head(store, thread).await else {
        return (steps, seqs);
    };
    if head <= after {
        return (steps, seqs);
    }
    // The last step that changed the state (a pause or a subgraph's step
    // does not): a superstep's number is the one after it.
    let mut base = 0;
    for record in store.history(thread, ..).await.expect("history") {
        if record.seq <= after {
            if !matches!(record.kind, StepKind::Pending | StepKind::Subgraph) {
                base = record.seq;
            }
            continue;
        }
        if !is_superstep(&record) {
            if !matches!(record.kind, StepKind::Pending | StepKind::Subgraph) {
                base = record.seq;
            }
            continue;
        }
        let nodes: Vec<String> = record.nodes().iter().map(|n| lg_name(n)).collect();
        let deltas = record
            .body
            .as_array()
            .expect("a superstep's body is its deltas");
        assert_eq!(nodes.len(), deltas.len(), "one node name per delta");
        let updates = nodes
            .iter()
            .zip(deltas)
            .map(|(node, delta)| json!({ node.as_str(): delta }))
            .collect();
        let state = store
            .state_at::<Graph>(thread, record.seq)
            .await
            .expect("state_at");
        seqs.push(base + 1);
        base = record.seq;
        steps.push(Step {
            nodes,
            updates,
            values: lg_json(&state),
        });
    }
    (steps, seqs)
}

/// One entry of a thread's history as LangGraph lists it (a checkpoint),
/// made from our steps; see the file's doc for the mapping.
#[derive(Debug, Clone)]
struct View {
    /// LangGraph's metadata step.
    lg_step: i64,
    /// Our step: the committed one (its state).
    seq: u64,
    /// Our step that paused right after it (an interrupt or a breakpoint),
    /// if any: what LangGraph keeps as the checkpoint's pending writes.
    pause: Option<u64>,
    /// LangGraph's `source`.
    source: &'static str,
    values: Value,
    next: Vec<String>,
    interrupts: Vec<Value>,
}

/// Where the current thread's lineage comes from: a fork of an earlier
/// thread at one of its steps.
#[derive(Debug, Clone)]
struct Origin {
    /// The older part of the lineage, oldest first, the fork's step
    /// included.
    base: Vec<View>,
    /// The seq the fork was made at.
    seq: u64,
    /// LangGraph's steps between that checkpoint and the next step of the
    /// new branch: 1 (the `fork` copy a replay writes), 2 for a replay of
    /// an input checkpoint (the copy, then the input applied again), 0 for
    /// a fork (`update_state` at the checkpoint).
    bump: i64,
}

/// A case's thread, its graph, and what is known across its requests.
struct Session {
    how: Build,
    /// The stream modes of its runs.
    modes: StreamMode,
    /// The subgraph nodes of the case, by path (see [`subgraph_nodes`]).
    subgraph_nodes: BTreeSet<String>,
    /// With `Build::subgraph_writes_ours`, the nodes whose writes are not
    /// compared: the subgraph nodes (any level: a name is a name).
    ours_writes: Option<BTreeSet<String>>,
    /// With `Build::handoff_step_ours`, the nodes (by path) that hand off
    /// to their parent graph.
    handoffs: Option<BTreeSet<String>>,
    app: App,
    probe: P,
    store: Store,
    /// The thread the requests go to (a replay or fork moves to a new one).
    thread: String,
    origin: Option<Origin>,
    forks: usize,
    /// `<gen:N>` -> our id.
    ids: HashMap<String, String>,
    /// The placeholders of the interrupts pending before the next run.
    pending_before: Vec<String>,
    /// LangGraph's committed state after the previous request (its JSON).
    committed: Value,
}

impl Session {
    fn new(
        case: &Value,
        how: Build,
        modes: StreamMode,
        store: Store,
    ) -> Result<Session, GraphError> {
        let (app, probe) = build(case, how, store.clone())?;
        let mut subgraphs = BTreeSet::new();
        subgraph_nodes(case, "", &mut subgraphs);
        Ok(Session {
            how,
            modes,
            ours_writes: how.subgraph_writes_ours.then(|| {
                subgraphs
                    .iter()
                    .map(|path| path.rsplit('|').next().unwrap_or_default().to_owned())
                    .collect()
            }),
            subgraph_nodes: subgraphs,
            handoffs: how.handoff_step_ours.then(|| {
                let mut handoffs = BTreeSet::new();
                handoff_nodes(case, "", &mut handoffs);
                handoffs
            }),
            app,
            probe,
            store,
            thread: THREAD.to_owned(),
            origin: None,
            forks: 0,
            ids: HashMap::new(),
            pending_before: Vec::new(),
            committed: json!({"items": [], "meta": {}, "messages": []}),
        })
    }

    /// The current thread's lineage in LangGraph's view, oldest first (an
    /// error of `get_state_history` as its text).
    async fn lineage(&self) -> Result<Vec<View>, String> {
        let thread = self.thread.as_str();
        let (mut views, after, bump) = match &self.origin {
            Some(origin) => (origin.base.clone(), origin.seq, origin.bump),
            None => (Vec::new(), 0, 0),
        };
        if head(&self.store, thread).await.is_none() {
            return Ok(views);
        }
        // A subgraph's own steps are no checkpoints of the thread's
        // history (LangGraph lists the top-level namespace only).
        let mut records = self.store.history(thread, ..).await.expect("history");
        records.retain(|r| r.kind != StepKind::Subgraph);
        let mut snapshots = match self.app.get_state_history(thread).await {
            Ok(snapshots) => snapshots,
            Err(e) if self.how.history_stand_in => {
                let _ = e;
                let mut snapshots = Vec::new();
                for record in &records {
                    let at = format!("{thread}-at{}", record.seq);
                    self.store
                        .fork::<Graph>(thread, record.seq, &at)
                        .await
                        .expect("a fork at the step");
                    snapshots.push(self.app.get_state(&at).await.expect("get_state"));
                    self.store.delete_thread(&at).await.expect("delete");
                }
                snapshots.reverse();
                snapshots
            }
            Err(e) => return Err(format!("get_state_history: {}", error_text(&e))),
        };
        snapshots.reverse();
        assert_eq!(
            records.iter().map(|r| r.seq).collect::<Vec<_>>(),
            snapshots.iter().map(|s| s.seq()).collect::<Vec<_>>(),
            "one snapshot per logged step"
        );
        // The steps LangGraph writes between the fork's checkpoint and the
        // new branch's first step (see `Origin::bump`).
        let mut bump = bump;
        for (record, snapshot) in records.iter().zip(&snapshots) {
            if record.seq <= after {
                continue;
            }
            let k = views.last().map_or(-2, |v| v.lg_step) + bump;
            let interrupts: Vec<Value> = snapshot.interrupts().iter().map(lg_interrupt).collect();
            let source = record.metadata.get("source").and_then(Value::as_str);
            let (lg_step, source) = match (source, record.kind) {
                (Some("update"), _) if views.is_empty() => (0, "update"),
                (Some("update"), _) => (k + 1, "update"),
                (_, StepKind::Pending) => {
                    // A pause: LangGraph keeps it as the pending writes of
                    // the checkpoint before (right after a replay, of its
                    // `fork` copy, which is not compared).
                    if bump == 0 {
                        let last = views.last_mut().expect("a pause after a step");
                        last.interrupts = interrupts;
                        last.pause = Some(record.seq);
                    }
                    continue;
                }
                (_, StepKind::BeginTurn) => (k + 2, "loop"),
                _ => (k + 1, "loop"),
            };
            bump = 0;
            views.push(View {
                lg_step,
                seq: record.seq,
                pause: None,
                source,
                values: lg_json(snapshot.state()),
                next: snapshot.next().to_vec(),
                interrupts,
            });
        }
        Ok(views)
    }

    /// Our step standing for LangGraph's checkpoint at `step` on the
    /// current lineage, and whether that checkpoint is an input one.
    async fn seq_of(&self, step: i64) -> (View, bool) {
        let lineage = self.lineage().await.expect("the lineage");
        if let Some(view) = lineage.iter().rev().find(|v| v.lg_step == step) {
            return (view.clone(), false);
        }
        // An input checkpoint: ours is the step after it (the input applied).
        let view = lineage
            .iter()
            .rev()
            .find(|v| v.lg_step == step + 1)
            .unwrap_or_else(|| panic!("no step of ours stands for LangGraph's step {step}"));
        (view.clone(), true)
    }

    /// Moves to a fork of the current thread at LangGraph's checkpoint
    /// `view`: at our step that paused after it, if any (unless `how` says
    /// `replay_before_pause`), else at its step. `bump`: see [`Origin`].
    async fn fork_at(&mut self, view: &View, bump: i64) -> u64 {
        self.forks += 1;
        let new = format!("{THREAD}-fork{}", self.forks);
        let seq = match view.pause {
            Some(pause) if !self.how.replay_before_pause => pause,
            _ => view.seq,
        };
        let mut base: Vec<View> = self
            .lineage()
            .await
            .expect("the lineage")
            .into_iter()
            .filter(|v| v.seq <= view.seq)
            .collect();
        let mut bump = bump;
        if bump == 2 {
            // A replay of an input checkpoint: LangGraph's new branch applies
            // the input again (a `loop` checkpoint at step + 2), which our
            // step after the input stands for.
            let last = base.last_mut().expect("a step");
            last.lg_step += 1;
            bump = 0;
        }
        self.store
            .fork::<Graph>(&self.thread, seq, &new)
            .await
            .expect("fork");
        self.origin = Some(Origin { base, seq, bump });
        self.thread = new;
        seq
    }

    /// Runs one recorded request.
    async fn request(&mut self, run: &Value) -> Observed {
        let modes = self.modes;
        let mut seq_before = head(&self.store, &self.thread).await.unwrap_or(0);
        self.probe.calls.lock().unwrap().clear();
        let (mut result, mut updated, mut history, mut streamed) = (None, None, None, None);
        if let Some(input) = run.get("input") {
            if input.is_null() {
                // LangGraph's invoke(None): go on from the log.
                result = Some(self.app.continue_thread(&self.thread).await);
            } else {
                let delta = GraphDelta::from_json(input.clone()).expect("the input is a delta");
                let (r, s) = collect(self.app.stream_thread(&self.thread, delta, modes)).await;
                (result, streamed) = (Some(r), Some(s));
            }
        } else if let Some(answer) = run.get("resume") {
            let (r, s) = collect(self.app.stream_resume(&self.thread, answer.clone(), modes)).await;
            (result, streamed) = (Some(r), Some(s));
        } else if let Some(map) = run.get("resume_map").and_then(Value::as_object) {
            let answers: Vec<(String, Value)> = map
                .iter()
                .map(|(placeholder, value)| {
                    let id = self.ids.get(placeholder).unwrap_or_else(|| {
                        panic!("{placeholder} is resumed before our run raised it")
                    });
                    (id.clone(), value.clone())
                })
                .collect();
            let (r, s) = collect(self.app.stream_resume(
                &self.thread,
                Resume::by_id(answers),
                modes,
            ))
            .await;
            (result, streamed) = (Some(r), Some(s));
        } else if let Some(delta) = run.get("update_state") {
            let delta = GraphDelta::from_json(delta.clone()).expect("an update is a delta");
            let as_node = run["as_node"].as_str();
            updated = Some(self.app.update_state(&self.thread, delta, as_node).await);
        } else if run.get("get_state_history").is_some() {
            history = Some(self.lineage().await);
        } else if let Some(replay) = run.get("replay") {
            let step = replay["step"].as_i64().expect("a step");
            let (view, input) = self.seq_of(step).await;
            seq_before = self.fork_at(&view, if input { 2 } else { 1 }).await;
            result = Some(self.app.continue_thread(&self.thread).await);
        } else if let Some(fork) = run.get("fork") {
            let step = fork["step"].as_i64().expect("a step");
            let (view, input) = self.seq_of(step).await;
            assert!(!input, "a fork of an input checkpoint");
            self.fork_at(&view, 0).await;
            let delta = GraphDelta::from_json(fork["update"].clone()).expect("a delta");
            let seq = self
                .app
                .update_state(&self.thread, delta, fork["as_node"].as_str())
                .await;
            seq_before = *seq.as_ref().expect("the fork's update_state");
            updated = Some(seq);
            result = Some(self.app.continue_thread(&self.thread).await);
        } else {
            panic!("a request of no known kind: {run}");
        }
        let executed = std::mem::take(&mut *self.probe.calls.lock().unwrap());
        let (logged, committed_seqs) = if result.is_some() {
            logged_steps(&self.store, &self.thread, seq_before).await
        } else {
            (Vec::new(), Vec::new())
        };
        let snapshot = self.app.get_state(&self.thread).await.expect("get_state");
        Observed {
            result,
            updated,
            history,
            streamed,
            logged,
            executed,
            state: lg_json(snapshot.state()),
            next: snapshot.next().to_vec(),
            pending: snapshot.interrupts().iter().map(lg_interrupt).collect(),
            committed_seqs,
        }
    }
}

// ---------------------------------------------------------------------------
// Comparing a request with the recording.
// ---------------------------------------------------------------------------

impl Session {
    /// Our ids of the interrupts pending before this request.
    fn pending_ids(&self) -> Vec<String> {
        self.pending_before
            .iter()
            .filter_map(|p| self.ids.get(p).cloned())
            .collect()
    }

    /// Compares what we did with the recorded request `lg`.
    fn compare(&mut self, what: &str, lg: &Value, ours: &Observed) -> Result<(), String> {
        if let Some(history) = &ours.history {
            let history = history.as_ref().map_err(|e| format!("{what}: {e}"))?;
            return self.compare_history(what, lg, history);
        }
        if let Some(updated) = &ours.updated {
            self.compare_update(what, lg, updated)?;
            if ours.result.is_none() {
                return self.compare_after(what, &lg["after"], ours, None);
            }
        }
        self.compare_run(what, lg, ours)
    }

    /// An `update_state` (alone, or a fork's).
    fn compare_update(
        &mut self,
        what: &str,
        lg: &Value,
        updated: &Result<u64, GraphError>,
    ) -> Result<(), String> {
        match (lg.get("error").and_then(Value::as_str), updated) {
            (Some(expected), Err(error)) => check_error(what, expected, error, None, &[]),
            (Some(expected), Ok(seq)) => Err(format!(
                "{what}: LangGraph refused the update ({expected}); ours wrote step {seq}"
            )),
            (None, Err(error)) => Err(format!(
                "{what}: LangGraph took the update; ours refused it: {error:?}"
            )),
            (None, Ok(_)) => Ok(()),
        }
    }

    /// `get_state` after a request: values, next, interrupts.
    fn compare_after(
        &mut self,
        what: &str,
        after: &Value,
        ours: &Observed,
        values: Option<Value>,
    ) -> Result<(), String> {
        let values = values.unwrap_or_else(|| after["values"].clone());
        if self.ours_writes.is_none() {
            matches(
                &format!("{what}: get_state values"),
                &values,
                &ours.state,
                &mut self.ids,
            )?;
        }
        let next = str_list(&after["next"]);
        if next != ours.next {
            return Err(format!(
                "{what}: get_state next: LangGraph {next:?}, ours {:?}",
                ours.next
            ));
        }
        let pending = after["interrupts"].clone();
        let mut ours_pending = ours.pending.clone();
        let mut expected = pending.clone();
        if self.how.pending_unordered {
            let by = |i: &Value| (i["node"].to_string(), i["value"].to_string());
            ours_pending.sort_by_key(by);
            if let Some(list) = expected.as_array_mut() {
                list.sort_by_key(by);
            }
        }
        matches(
            &format!("{what}: get_state interrupts"),
            &expected,
            &raw(&ours_pending),
            &mut self.ids,
        )?;
        self.pending_before = pending
            .as_array()
            .expect("interrupts")
            .iter()
            .map(|p| p["id"].as_str().expect("an id").to_owned())
            .collect();
        self.committed = ours.state.clone();
        Ok(())
    }

    /// `get_state_history`: LangGraph's current lineage, newest first, its
    /// input and fork checkpoints left out, against ours.
    fn compare_history(&mut self, what: &str, lg: &Value, ours: &[View]) -> Result<(), String> {
        let list = lg["history"].as_array().expect("history");
        let request = &lg["get_state_history"];
        // The current lineage: from the newest checkpoint the thread is at,
        // by parent links (a replay or fork lists its branch, then the
        // original's checkpoints).
        let by_id: HashMap<&str, &Value> = list
            .iter()
            .map(|h| (h["checkpoint_id"].as_str().expect("an id"), h))
            .collect();
        let filtered = request.get("filter").is_some() || request.get("limit").is_some();
        let mut lineage: Vec<&Value> = Vec::new();
        if filtered {
            lineage.extend(list);
        } else {
            let mut at = list.first();
            while let Some(h) = at {
                lineage.push(h);
                at = h["parent_checkpoint_id"]
                    .as_str()
                    .and_then(|p| by_id.get(p).copied());
            }
        }
        let dropped = lineage
            .iter()
            .filter(|h| matches!(h["source"].as_str(), Some("input" | "fork")))
            .count();
        let expected: Vec<&Value> = lineage
            .into_iter()
            .filter(|h| !matches!(h["source"].as_str(), Some("input" | "fork")))
            .collect();
        let mut ours: Vec<&View> = ours.iter().rev().collect();
        if let Some(filter) = request.get("filter").and_then(Value::as_object) {
            ours.retain(|v| {
                filter.iter().all(|(k, want)| match k.as_str() {
                    "step" => json!(v.lg_step) == *want,
                    "source" => json!(v.source) == *want,
                    other => panic!("a filter on {other}"),
                })
            });
        }
        if let Some(limit) = request.get("limit").and_then(Value::as_u64) {
            ours.truncate(limit as usize - dropped);
        }
        let summary = |v: &[&View]| {
            v.iter()
                .map(|v| (v.lg_step, v.next.clone()))
                .collect::<Vec<_>>()
        };
        let lg_summary: Vec<(i64, Vec<String>)> = expected
            .iter()
            .map(|h| (h["step"].as_i64().expect("a step"), str_list(&h["next"])))
            .collect();
        if lg_summary != summary(&ours) {
            return Err(format!(
                "{what}: history (step, next): LangGraph {lg_summary:?}, ours {:?}",
                summary(&ours)
            ));
        }
        for (h, v) in expected.iter().zip(&ours) {
            let at = format!("{what}: history at LangGraph's step {}", v.lg_step);
            if h["source"].as_str() != Some(v.source) {
                return Err(format!("{at}: source {} != {}", h["source"], v.source));
            }
            if self.ours_writes.is_none() {
                matches(
                    &format!("{at}: values"),
                    &h["values"],
                    &v.values,
                    &mut self.ids,
                )?;
            }
            matches(
                &format!("{at}: interrupts"),
                &h["interrupts"],
                &raw(&v.interrupts),
                &mut self.ids,
            )?;
        }
        Ok(())
    }

    /// A run: input, resume, continue, replay or fork.
    fn compare_run(&mut self, what: &str, lg: &Value, ours: &Observed) -> Result<(), String> {
        let result = ours.result.as_ref().expect("a run");
        let steps: Vec<&Value> = lg["supersteps"]
            .as_array()
            .expect("supersteps")
            .iter()
            .collect();
        let committed: Vec<&Value> = steps
            .iter()
            .copied()
            .take_while(|s| !s["values"].is_null())
            .collect();
        // The step that stopped the run (an interrupt or an error), if any.
        let stopped = steps.get(committed.len()).copied();
        if steps.len() > committed.len() + 1 {
            return Err(format!(
                "{what}: a step after an unsaved one in the recording"
            ));
        }
        let interrupted = stopped
            .and_then(|s| s.get("interrupts"))
            .filter(|_| lg.get("error").is_none());
        let breakpoint = lg.get("breakpoint_updates").is_some();

        // The committed supersteps, as streamed and as logged.
        if let Some(streamed) = &ours.streamed {
            compare_steps(
                &format!("{what} (stream)"),
                &committed,
                &streamed.steps,
                self.ours_writes.as_ref(),
                &mut self.ids,
            )?;
        }
        compare_steps(
            &format!("{what} (log)"),
            &committed,
            &ours.logged,
            self.ours_writes.as_ref(),
            &mut self.ids,
        )?;

        // The state after the input.
        if let (Some(Value::Object(input)), Some(streamed)) = (lg.get("input"), &ours.streamed)
            && !input.is_empty()
            && self.ours_writes.is_none()
        {
            let ours_values = streamed
                .input_values
                .as_ref()
                .ok_or(format!("{what}: no values event after the input"))?;
            matches(
                &format!("{what}: values after the input"),
                &lg["values_stream"][0],
                ours_values,
                &mut self.ids,
            )?;
        }

        // The outcome.
        match (lg.get("error").and_then(Value::as_str), result) {
            (Some(expected), Err(error)) => {
                check_error(what, expected, error, stopped, &self.pending_ids())?;
            }
            (Some(expected), Ok(outcome)) => {
                return Err(format!(
                    "{what}: LangGraph failed ({expected}) but we ended with {}",
                    lg_json(outcome.state())
                ));
            }
            (None, Err(error)) => {
                return Err(format!(
                    "{what}: LangGraph succeeded but we failed: {error:?}"
                ));
            }
            (None, Ok(outcome)) => {
                let raised = Value::Array(outcome.interrupts().iter().map(lg_interrupt).collect());
                let expected = interrupted.cloned().unwrap_or(json!([]));
                matches(
                    &format!("{what}: interrupts"),
                    &expected,
                    &raised,
                    &mut self.ids,
                )?;
                let expected = lg["result"]
                    .get("__interrupt__")
                    .cloned()
                    .unwrap_or(json!([]));
                let raised = Value::Array(
                    outcome
                        .interrupts()
                        .iter()
                        .map(|i| json!({"value": i.value, "id": i.id}))
                        .collect(),
                );
                matches(
                    &format!("{what}: result.__interrupt__"),
                    &expected,
                    &raised,
                    &mut self.ids,
                )?;
                if let Some(streamed) = &ours.streamed {
                    // A breakpoint streams `{"__interrupt__": []}`, as
                    // LangGraph's `breakpoint_updates`.
                    let events = if interrupted.is_some() || breakpoint {
                        vec![raw(&outcome
                            .interrupts()
                            .iter()
                            .map(lg_interrupt)
                            .collect::<Vec<_>>())]
                    } else {
                        Vec::new()
                    };
                    if streamed.interrupts != events {
                        return Err(format!(
                            "{what}: interrupt events {:?}, expected {events:?}",
                            streamed.interrupts
                        ));
                    }
                }
                if outcome.next() != ours.next.as_slice() {
                    return Err(format!(
                        "{what}: the outcome's next {:?} is not get_state's {:?}",
                        outcome.next(),
                        ours.next
                    ));
                }
                let state = lg_json(outcome.state());
                if state != ours.state {
                    return Err(format!(
                        "{what}: the outcome's state {state} is not the thread's {}",
                        ours.state
                    ));
                }
            }
        }

        // Which node functions ran: the top level's and, under
        // `node|child-node`, each subgraph level's (a subgraph node is no
        // function of ours: its run shows as its child's nodes).
        let mut expected = Vec::new();
        expected_calls(
            what,
            &steps,
            "",
            &self.pending_before,
            &self.subgraph_nodes,
            &mut expected,
        )?;
        let mut ran = ours.executed.clone();
        expected.sort();
        ran.sort();
        if expected != ran {
            return Err(format!(
                "{what}: node functions run: LangGraph {expected:?}, ours {ran:?}"
            ));
        }

        // Inside the subgraphs: each one's committed supersteps, and the
        // namespaced updates stream.
        if let Some(streamed) = ours.streamed.as_ref()
            && self.modes.contains(StreamMode::SUBGRAPHS)
        {
            let (ours_writes, handoffs) = (self.ours_writes.as_ref(), self.handoffs.as_ref());
            compare_levels(
                what,
                &steps,
                &streamed.levels,
                ours_writes,
                handoffs.is_some(),
                &mut self.ids,
            )?;
            if let Some(pairs) = lg.get("subgraph_updates") {
                let stopped = stopped.map(|s| s["updates"].clone());
                let ours: Vec<(Vec<String>, Value)> = streamed
                    .pairs
                    .iter()
                    .filter(|(ns, chunk)| {
                        let node = chunk.as_object().and_then(|o| o.keys().next());
                        let path = ns_path(&ns.join("|"));
                        !(handoffs.is_some_and(|h| {
                            node.is_some_and(|n| !ns.is_empty() && h.contains(&qualified(&path, n)))
                        }))
                    })
                    .cloned()
                    .collect();
                compare_pairs(what, pairs, stopped, &ours, ours_writes, &mut self.ids)?;
            }
        }

        // The messages stream (LangGraph's is a run of its own, with
        // subgraphs=True or not: compared on our pass with the same).
        if let (Some(said), Some(streamed)) = (lg.get("messages_stream"), &ours.streamed)
            && nested_messages(said) == self.modes.contains(StreamMode::SUBGRAPHS)
        {
            self.compare_messages(what, said, &streamed.messages, &ours.committed_seqs)?;
        }

        // The thread afterwards.
        let after = &lg["after"];
        let state = if interrupted.is_some() {
            // Known difference (as in conformance.rs): LangGraph's
            // get_state() of a paused run applies the finished tasks'
            // pending writes; ours is the state after the last committed
            // superstep (they are applied when it commits). Expected: the
            // state LangGraph streamed with the interrupt, and LangGraph's
            // after.values is exactly that plus the finished tasks' updates.
            let before = lg["values_stream"]
                .as_array()
                .expect("values_stream")
                .iter()
                .rev()
                .find(|chunk| chunk.get("__interrupt__").is_some())
                .ok_or(format!("{what}: no values chunk with the interrupt"))?;
            let mut before = before.clone();
            before
                .as_object_mut()
                .expect("an object")
                .remove("__interrupt__");
            let stopped = stopped.expect("an interrupted step");
            if self.ours_writes.is_none() {
                let with_pending =
                    apply_updates(&resolve(&before, &self.ids), &stopped["updates"], &self.ids)
                        .map_err(|e| format!("{what}: {e}"))?;
                matches(
                    &format!("{what}: LangGraph's state = committed + pending writes"),
                    &after["values"],
                    &with_pending,
                    &mut self.ids,
                )?;
            }
            before
        } else if lg.get("error").is_some() {
            // A failed step: the state before it.
            match committed.last() {
                Some(last) => last["values"].clone(),
                None => after["values"].clone(),
            }
        } else {
            after["values"].clone()
        };
        self.compare_after(what, after, ours, Some(state))
    }

    /// The `messages` stream: each message once, from the node that wrote
    /// it, with LangGraph's metadata.
    fn compare_messages(
        &mut self,
        what: &str,
        lg: &Value,
        ours: &[Said],
        committed_seqs: &[u64],
    ) -> Result<(), String> {
        let lg = lg.as_array().expect("messages_stream");
        let mut task_ids = HashMap::new();
        if lg.len() != ours.len() {
            return Err(format!(
                "{what}: messages: LangGraph streamed {}, ours {}: {ours:?}",
                lg.len(),
                ours.len()
            ));
        }
        for (i, (e, o)) in lg.iter().zip(ours).enumerate() {
            let at = format!("{what}: message {i}");
            matches(
                &format!("{at}: message"),
                &e["message"],
                &o.message,
                &mut self.ids,
            )?;
            let (em, om) = (&e["metadata"], &o.metadata);
            for key in [
                "langgraph_node",
                "langgraph_path",
                "langgraph_triggers",
                "ls_integration",
                "thread_id",
            ] {
                if em[key] != om[key] {
                    return Err(format!(
                        "{at}: {key}: LangGraph {}, ours {}",
                        em[key], om[key]
                    ));
                }
            }
            if o.node != om["langgraph_node"] {
                return Err(format!(
                    "{at}: the event's node {} is not its metadata's",
                    o.node
                ));
            }
            // `node:<task id>` segments: the nodes, and ids (equal ids for
            // equal tasks of this run: LangGraph's is a run of its own).
            for key in ["langgraph_checkpoint_ns", "checkpoint_ns"] {
                if let (Some(e_ns), Some(o_ns)) = (em[key].as_str(), om[key].as_str()) {
                    namespace_matches(&format!("{at}: {key}"), e_ns, o_ns, &mut task_ids)?;
                }
            }
            let e_path: Vec<String> = str_list(&e["ns"]);
            let o_path = o.namespace.join("|");
            if e.get("ns").is_some() || !o.namespace.is_empty() {
                namespace_matches(
                    &format!("{at}: ns"),
                    &e_path.join("|"),
                    &o_path,
                    &mut task_ids,
                )?;
            }
            let step = om["langgraph_step"].as_u64().unwrap_or_default();
            if !o.namespace.is_empty() {
                // Inside a subgraph: the subgraph's own step, as LangGraph's.
                if em["langgraph_step"] != json!(step) {
                    return Err(format!(
                        "{at}: langgraph_step: LangGraph {}, ours {step}",
                        em["langgraph_step"]
                    ));
                }
            } else if !committed_seqs.contains(&step) {
                // Known difference (decided): our langgraph_step is the
                // superstep's number in the thread: one after its last
                // committed step (a pause in between does not count), the
                // seq it commits as when it did not pause.
                return Err(format!(
                    "{at}: langgraph_step {step} is not a step this run committed ({committed_seqs:?})"
                ));
            }
            let keys = |m: &Value| {
                m.as_object()
                    .map(|m| m.keys().cloned().collect::<BTreeSet<_>>())
                    .unwrap_or_default()
            };
            if keys(em) != keys(om) {
                return Err(format!(
                    "{at}: metadata keys {:?}, ours {:?}",
                    keys(em),
                    keys(om)
                ));
            }
        }
        Ok(())
    }
}

/// A state's JSON without its null keys (a LastValue key never written,
/// which LangGraph's values do not show).
fn strip_nulls(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        object.retain(|_, v| !v.is_null());
    }
    value
}

/// A namespace's path: its node names without the task ids
/// (`"mid:<id>|inner:<id>"` -> `"mid|inner"`), as the probe records calls.
fn ns_path(namespace: &str) -> String {
    namespace
        .split('|')
        .map(|segment| segment.split(':').next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("|")
}

/// Matches LangGraph's namespace (`node:<gen:N>` segments joined by `|`)
/// against ours: the same nodes, the ids as generated ids.
fn namespace_matches(
    at: &str,
    expected: &str,
    ours: &str,
    ids: &mut HashMap<String, String>,
) -> Result<(), String> {
    let split = |ns: &str| -> Vec<(String, String)> {
        if ns.is_empty() {
            return Vec::new();
        }
        ns.split('|')
            .map(|segment| {
                let (node, id) = segment.split_once(':').unwrap_or((segment, ""));
                (node.to_owned(), id.to_owned())
            })
            .collect()
    };
    let (e, o) = (split(expected), split(ours));
    if e.len() != o.len() || e.iter().zip(&o).any(|(e, o)| e.0 != o.0) {
        return Err(format!("{at}: namespace {expected:?}, ours {ours:?}"));
    }
    let e_ids: Vec<Value> = e.iter().map(|(_, id)| json!(id)).collect();
    let o_ids: Vec<Value> = o.iter().map(|(_, id)| json!(id)).collect();
    matches(
        &format!("{at}: the namespace's task ids"),
        &Value::Array(e_ids),
        &Value::Array(o_ids),
        ids,
    )
}

/// Whether a recorded messages stream is of `subgraphs=True` (each entry
/// has its namespace).
fn nested_messages(said: &Value) -> bool {
    said.as_array()
        .and_then(|l| l.first())
        .is_some_and(|m| m.get("ns").is_some())
}

/// The subgraph nodes of a GRAPH and of its children, by path
/// (`node`, `node|inner`).
fn subgraph_nodes(graph: &Value, path: &str, out: &mut BTreeSet<String>) {
    for (name, spec) in graph["nodes"].as_object().expect("nodes") {
        if let Some(child) = spec.get("subgraph").or_else(|| spec.get("call_subgraph")) {
            let name = qualified(path, name);
            subgraph_nodes(child, &name, out);
            out.insert(name);
        }
    }
}

/// The node functions LangGraph ran in `steps` (of the graph at `path`)
/// and in their subgraph levels, as our probe records them: a subgraph
/// node left out (it is no function of ours), a subgraph's nodes as
/// `path|node`.
fn expected_calls(
    what: &str,
    steps: &[&Value],
    path: &str,
    pending: &[String],
    subgraphs: &BTreeSet<String>,
    out: &mut Vec<String>,
) -> Result<(), String> {
    for step in steps {
        let mut names: Vec<String> = str_list(&step["executed"])
            .iter()
            .map(|n| qualified(path, n))
            .collect();
        // Known difference (as in conformance.rs): LangGraph re-runs a task
        // whose interrupt is still pending (invoke(None), a partial
        // resume), raising the same interrupt again; ours keeps it pending.
        for raised in step["interrupts"].as_array().into_iter().flatten() {
            let id = raised["id"].as_str().expect("an id");
            let node = qualified(path, raised["node"].as_str().expect("a node"));
            if !pending.iter().any(|p| p == id) || subgraphs.contains(&node) {
                continue;
            }
            let at = names
                .iter()
                .position(|n| *n == node)
                .ok_or(format!("{what}: {node} re-raised without running"))?;
            names.remove(at);
        }
        names.retain(|n| !subgraphs.contains(n));
        out.extend(names);
        for level in step["subgraphs"].as_array().into_iter().flatten() {
            let inner: Vec<&Value> = level["supersteps"]
                .as_array()
                .expect("supersteps")
                .iter()
                .collect();
            let path = ns_path(level["ns"].as_str().expect("a namespace"));
            expected_calls(what, &inner, &path, pending, subgraphs, out)?;
        }
    }
    Ok(())
}

/// The nodes (by path) whose Command goes to the parent graph.
fn handoff_nodes(graph: &Value, path: &str, out: &mut BTreeSet<String>) {
    for (name, spec) in graph["nodes"].as_object().expect("nodes") {
        let name = qualified(path, name);
        if command_of(spec).is_some_and(|c| c.get("graph").is_some()) {
            out.insert(name.clone());
        }
        if let Some(child) = spec.get("subgraph").or_else(|| spec.get("call_subgraph")) {
            handoff_nodes(child, &name, out);
        }
    }
}

/// A subgraph level of the recording: its namespace, its committed
/// supersteps, and the superstep that handed off to the parent (saved by
/// no checkpoint: no values, no chunk), if asked for.
type Recorded<'v> = (&'v str, Vec<&'v Value>, Option<&'v Value>);

/// The subgraph levels of `steps`, and of theirs, in the recording's order,
/// those that committed a superstep (or handed off, with `handoffs`).
fn recorded_levels<'v>(steps: &[&'v Value], handoffs: bool, out: &mut Vec<Recorded<'v>>) {
    for step in steps {
        for level in step["subgraphs"].as_array().into_iter().flatten() {
            let inner: Vec<&Value> = level["supersteps"]
                .as_array()
                .expect("supersteps")
                .iter()
                .collect();
            let committed: Vec<&Value> = inner
                .iter()
                .copied()
                .filter(|s| !s["values"].is_null())
                .collect();
            let handoff = inner.last().copied().filter(|last| {
                handoffs
                    && last["values"].is_null()
                    && last.get("interrupts").is_none()
                    && last["updates"].as_array().is_some_and(Vec::is_empty)
            });
            if !committed.is_empty() || handoff.is_some() {
                out.push((
                    level["ns"].as_str().expect("a namespace"),
                    committed,
                    handoff,
                ));
            }
            recorded_levels(&inner, handoffs, out);
        }
    }
}

/// Each subgraph's committed supersteps (tasks, updates, values after
/// each) against ours, a recorded namespace matched to the first of ours
/// with the same nodes whose ids fit.
fn compare_levels(
    what: &str,
    steps: &[&Value],
    ours: &[Level],
    ours_writes: Option<&BTreeSet<String>>,
    handoffs: bool,
    ids: &mut HashMap<String, String>,
) -> Result<(), String> {
    let mut expected = Vec::new();
    recorded_levels(steps, handoffs, &mut expected);
    let ours: Vec<&Level> = ours.iter().filter(|l| !l.steps.is_empty()).collect();
    let names = |e: &[Recorded], o: &[&Level]| {
        (
            e.iter().map(|(ns, ..)| ns.to_string()).collect::<Vec<_>>(),
            o.iter().map(|l| l.namespace.join("|")).collect::<Vec<_>>(),
        )
    };
    if expected.len() != ours.len() {
        let (e, o) = names(&expected, &ours);
        return Err(format!(
            "{what}: subgraph levels with a committed step: LangGraph {e:?}, ours {o:?}"
        ));
    }
    let mut used = vec![false; ours.len()];
    for (ns, committed, handoff) in &expected {
        let found = ours.iter().enumerate().position(|(i, level)| {
            let mut bound = ids.clone();
            !used[i] && namespace_matches("", ns, &level.namespace.join("|"), &mut bound).is_ok()
        });
        let Some(i) = found else {
            let (e, o) = names(&expected, &ours);
            return Err(format!(
                "{what}: no subgraph of ours stands for {ns}: LangGraph {e:?}, ours {o:?}"
            ));
        };
        used[i] = true;
        namespace_matches(what, ns, &ours[i].namespace.join("|"), ids)?;
        let at = format!("{what} (subgraph {ns})");
        let mut steps = ours[i].steps.as_slice();
        if let Some(handoff) = handoff {
            // Ours committed it: its tasks are LangGraph's.
            let last = steps.last().filter(|_| steps.len() == committed.len() + 1);
            let tasks = str_list(&handoff["tasks"]);
            if last.is_none_or(|last| last.nodes != tasks) {
                return Err(format!(
                    "{at}: the handoff's superstep {tasks:?} is not our last: {:?}",
                    steps.iter().map(|s| &s.nodes).collect::<Vec<_>>()
                ));
            }
            steps = &steps[..committed.len()];
        }
        compare_steps(&at, committed, steps, ours_writes, ids)?;
    }
    Ok(())
}

/// Our `(namespace, chunk)` updates in LangGraph's recorded order: per
/// top-level chunk, first the chunks from inside its task's subgraph
/// (ours stream as they happen, so parallel subgraphs interleave), then
/// its own; what is left before a top-level interrupt (a subgraph that
/// paused) comes before it.
fn canonical(pairs: &[(Vec<String>, Value)]) -> Vec<Value> {
    let mut out = Vec::new();
    // The nested chunks not placed yet, by their top-level task segment,
    // in the order they showed.
    let mut held: Vec<(String, Vec<Value>)> = Vec::new();
    let pair = |ns: &[String], chunk: &Value| json!([ns_json(ns), chunk]);
    for (ns, chunk) in pairs {
        match ns.first() {
            Some(top) => match held.iter_mut().find(|(t, _)| t == top) {
                Some((_, list)) => list.push(pair(ns, chunk)),
                None => held.push((top.clone(), vec![pair(ns, chunk)])),
            },
            None => {
                let node = chunk
                    .as_object()
                    .and_then(|o| o.keys().next())
                    .cloned()
                    .unwrap_or_default();
                if node == "__interrupt__" {
                    for (_, list) in held.drain(..) {
                        out.extend(list);
                    }
                } else if let Some(at) = held
                    .iter()
                    .position(|(t, _)| t.split(':').next() == Some(node.as_str()))
                {
                    out.extend(held.remove(at).1);
                }
                out.push(pair(ns, chunk));
            }
        }
    }
    for (_, list) in held {
        out.extend(list);
    }
    out
}

/// A stream's namespace as `[[node, task id], ...]`, so that the ids
/// match as generated ids.
fn ns_json(namespace: &[String]) -> Value {
    namespace
        .iter()
        .map(|segment| {
            let (node, id) = segment.split_once(':').unwrap_or((segment, ""));
            json!([node, id])
        })
        .collect()
}

/// LangGraph's `subgraph_updates` against ours, with the known
/// differences of our stream (stream.rs's `Event` docs) applied: a
/// subgraph's interrupt is streamed once, by the root
/// (`{"__interrupt__": ..}` at the top), not also in the subgraph's
/// namespace; a paused superstep streams one interrupt chunk listing them
/// all, and no updates (LangGraph's pending writes: `stopped`, that step's
/// updates); a cached update is streamed as any.
fn compare_pairs(
    what: &str,
    expected: &Value,
    stopped: Option<Value>,
    ours: &[(Vec<String>, Value)],
    ours_writes: Option<&BTreeSet<String>>,
    ids: &mut HashMap<String, String>,
) -> Result<(), String> {
    // The updates of the step that paused (LangGraph's pending writes).
    let unsaved: Vec<Value> = stopped
        .and_then(|u| u.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|u| u.get("__interrupt__").is_none())
        .collect();
    let mut list: Vec<Value> = Vec::new();
    for p in expected.as_array().expect("subgraph_updates") {
        let nested = p[0].as_array().is_some_and(|ns| !ns.is_empty());
        let interrupt = p[1].get("__interrupt__");
        if nested && interrupt.is_some() {
            continue;
        }
        if !nested && interrupt.is_none() && unsaved.contains(&p[1]) {
            continue;
        }
        // One `{"__interrupt__": [..]}` for a paused superstep, listing
        // every interrupt (LangGraph streams one per task).
        if let (Some(Value::Array(more)), Some(last)) = (interrupt, list.last_mut())
            && last[0] == json!([])
            && let Some(Value::Array(before)) = last[1].get_mut("__interrupt__")
            && !before.is_empty()
        {
            before.extend(more.iter().cloned());
            continue;
        }
        let chunk = unwritten(&normalize_update(&p[1]), ours_writes);
        list.push(json!([ns_json(&str_list(&p[0])), chunk]));
    }
    let ours: Vec<Value> = canonical(ours)
        .into_iter()
        .map(|p| json!([p[0], unwritten(&p[1], ours_writes)]))
        .collect();
    matches(
        &format!("{what}: subgraph_updates"),
        &Value::Array(list),
        &Value::Array(ours),
        ids,
    )
}

/// An update chunk `{node: delta}` with the delta left out when `node`'s
/// writes are ours (see `Build::subgraph_writes_ours`).
fn unwritten(chunk: &Value, ours_writes: Option<&BTreeSet<String>>) -> Value {
    match (chunk.as_object(), ours_writes) {
        (Some(map), Some(nodes)) => Value::Object(
            map.iter()
                .map(|(node, delta)| {
                    let delta = if nodes.contains(node) {
                        json!("(ours)")
                    } else {
                        delta.clone()
                    };
                    (node.clone(), delta)
                })
                .collect(),
        ),
        _ => chunk.clone(),
    }
}

fn compare_steps(
    what: &str,
    expected: &[&Value],
    ours: &[Step],
    ours_writes: Option<&BTreeSet<String>>,
    ids: &mut HashMap<String, String>,
) -> Result<(), String> {
    let tasks = |s: &Value| str_list(&s["tasks"]);
    if expected.len() != ours.len() {
        return Err(format!(
            "{what}: committed supersteps: LangGraph {:?}, ours {:?}",
            expected.iter().map(|s| tasks(s)).collect::<Vec<_>>(),
            ours.iter().map(|s| &s.nodes).collect::<Vec<_>>()
        ));
    }
    for (i, (e, o)) in expected.iter().zip(ours).enumerate() {
        if tasks(e) != o.nodes {
            return Err(format!(
                "{what}, superstep {i}: tasks {:?}, ours {:?}",
                tasks(e),
                o.nodes
            ));
        }
        let updates = Value::Array(
            e["updates"]
                .as_array()
                .expect("updates")
                .iter()
                .map(|u| unwritten(&normalize_update(u), ours_writes))
                .collect(),
        );
        let ours_updates: Vec<Value> = o
            .updates
            .iter()
            .map(|u| unwritten(u, ours_writes))
            .collect();
        matches(
            &format!("{what}, superstep {i}: updates"),
            &updates,
            &raw(&ours_updates),
            ids,
        )?;
        if ours_writes.is_none() {
            matches(
                &format!("{what}, superstep {i}: values"),
                &e["values"],
                &o.values,
                ids,
            )?;
        }
    }
    Ok(())
}

/// `state` (LangGraph's JSON) with the non-interrupt updates of a step
/// applied by our reducers, in the step's order.
fn apply_updates(
    state: &Value,
    updates: &Value,
    ids: &HashMap<String, String>,
) -> Result<Value, String> {
    let mut graph = Graph::from_json(state.clone()).map_err(|e| e.to_string())?;
    let mut deltas = Vec::new();
    for chunk in updates.as_array().expect("updates") {
        for (node, update) in chunk.as_object().expect("a chunk") {
            if node.starts_with("__") || update.is_null() {
                continue;
            }
            deltas.push(GraphDelta::from_json(resolve(update, ids)).map_err(|e| e.to_string())?);
        }
    }
    graph.apply_all(deltas).map_err(|e| e.to_string())?;
    Ok(lg_json(&graph))
}

/// Asserts that our error is the one LangGraph raised: same kind, naming
/// the same things.
fn check_error(
    what: &str,
    langgraph: &str,
    ours: &GraphError,
    stopped: Option<&Value>,
    pending: &[String],
) -> Result<(), String> {
    let fits = if let Some(rest) = langgraph.strip_prefix("InvalidUpdateError: At key '") {
        let key = rest.split('\'').next().unwrap_or_default();
        let writers: Vec<String> = stopped
            .map(|s| s["updates"].as_array().expect("updates").as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|chunk| {
                let (node, update) = chunk.as_object()?.iter().next()?;
                update.get(key).map(|_| node.clone())
            })
            .collect();
        writers.len() >= 2
            && matches!(ours, GraphError::ConcurrentWrite { field, first, second }
                if field == key && *first == writers[0] && *second == writers[1])
    } else if let Some(rest) = langgraph.strip_prefix("GraphRecursionError: Recursion limit of ") {
        let limit: usize = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        matches!(ours, GraphError::RecursionLimit { limit: l } if *l == limit)
    } else if let Some(rest) = langgraph.strip_prefix("InvalidUpdateError: Node ") {
        let name = rest.strip_suffix(" does not exist").unwrap_or_default();
        matches!(ours, GraphError::UnknownNode { method: "update_state", node } if node == name)
    } else if langgraph == "InvalidUpdateError: Ambiguous update, specify as_node" {
        matches!(ours, GraphError::AmbiguousUpdate { thread, nodes }
            if thread.starts_with(THREAD) && nodes.len() >= 2)
    } else if langgraph.starts_with(
        "RuntimeError: When there are multiple pending interrupts, you must specify the interrupt id",
    ) {
        matches!(ours, GraphError::Resume { reason, .. }
            if pending.len() >= 2 && pending.iter().all(|id| reason.contains(id.as_str())))
    } else {
        return Err(format!(
            "{what}: teach this test LangGraph's error {langgraph:?}, or list the case"
        ));
    };
    if fits {
        Ok(())
    } else {
        Err(format!(
            "{what}: LangGraph raised {langgraph:?}; ours does not fit it: {ours:?}"
        ))
    }
}

// ---------------------------------------------------------------------------
// Cases run as they are.
// ---------------------------------------------------------------------------

fn runs(case: &Value) -> &[Value] {
    case["runs"].as_array().expect("runs")
}

/// The stream modes a case is run with, one pass each: `updates | values
/// | messages`, with `SUBGRAPHS` for a case with subgraphs (LangGraph's
/// recording is of `subgraphs=True`); a case whose messages LangGraph
/// streamed without it is run again without it, for them.
fn passes(case: &Value) -> Vec<StreamMode> {
    let plain = StreamMode::UPDATES | StreamMode::VALUES | StreamMode::MESSAGES;
    if !involves_subgraph(case) {
        return vec![plain];
    }
    let plain_messages = runs(case)
        .iter()
        .filter_map(|run| run.get("messages_stream"))
        .any(|said| !said.as_array().expect("messages").is_empty() && !nested_messages(said));
    if plain_messages {
        vec![plain | StreamMode::SUBGRAPHS, plain]
    } else {
        vec![plain | StreamMode::SUBGRAPHS]
    }
}

/// Runs every recorded request of `case` on a fresh thread of `store` and
/// compares.
async fn run_case(
    name: &str,
    case: &Value,
    how: Build,
    modes: StreamMode,
    store: Store,
) -> Result<(), String> {
    let mut session = Session::new(case, how, modes, store).map_err(|e| format!("{name}: {e}"))?;
    for (i, run) in runs(case).iter().enumerate() {
        let ours = session.request(run).await;
        session.compare(&format!("{name}, request {i}"), run, &ours)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// What we do where we differ: a summary of our behaviour.
// ---------------------------------------------------------------------------

/// `text` with every UUID replaced by `<id>`.
fn scrub(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 36 <= chars.len() {
            let candidate: String = chars[i..i + 36].iter().collect();
            if uuid::Uuid::parse_str(&candidate).is_ok() && candidate.chars().nth(8) == Some('-') {
                out.push_str("<id>");
                i += 36;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// A state without its empty keys, ids scrubbed.
fn compact(state: &Value) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    state.retain(|_, v| match v {
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    });
    serde_json::from_str(&scrub(&Value::Object(state).to_string())).expect("JSON")
}

fn pairs(interrupts: &[Value]) -> Value {
    interrupts
        .iter()
        .map(|i| json!([i["node"], i["value"]]))
        .collect()
}

fn error_text(error: &GraphError) -> String {
    scrub(&error.to_string())
}

/// What one request of ours did, in short: the supersteps it committed,
/// the node functions that ran, its outcome, and the thread afterwards.
fn summary(ours: &Observed) -> Value {
    let mut s = serde_json::Map::new();
    if let Some(history) = &ours.history {
        s.insert(
            "history".into(),
            match history {
                Ok(history) => history
                    .iter()
                    .rev()
                    .map(|v| {
                        json!([
                            v.lg_step,
                            v.seq,
                            compact(&v.values),
                            v.next,
                            pairs(&v.interrupts)
                        ])
                    })
                    .collect(),
                Err(e) => json!(e),
            },
        );
        return Value::Object(s);
    }
    if let Some(updated) = &ours.updated {
        s.insert(
            "update".into(),
            match updated {
                Ok(_) => json!("ok"),
                Err(e) => json!(error_text(e)),
            },
        );
    }
    if let Some(result) = &ours.result {
        let steps: Vec<&Vec<String>> = ours.logged.iter().map(|s| &s.nodes).collect();
        s.insert("steps".into(), json!(steps));
        let mut ran = ours.executed.clone();
        ran.sort();
        s.insert("ran".into(), json!(ran));
        s.insert(
            "outcome".into(),
            match result {
                Ok(o) if o.interrupts().is_empty() => json!("ok"),
                Ok(o) => json!({"interrupts": pairs(&o.interrupts().iter().map(lg_interrupt).collect::<Vec<_>>())}),
                Err(e) => json!({"error": error_text(e)}),
            },
        );
        if let Some(streamed) = &ours.streamed
            && streamed.levels.iter().any(|l| !l.steps.is_empty())
        {
            // Each subgraph's supersteps, by its path (ids left out).
            s.insert(
                "sub".into(),
                streamed
                    .levels
                    .iter()
                    .filter(|l| !l.steps.is_empty())
                    .map(|l| {
                        let steps: Vec<&Vec<String>> = l.steps.iter().map(|s| &s.nodes).collect();
                        json!([ns_path(&l.namespace.join("|")), steps])
                    })
                    .collect(),
            );
        }
        if let Some(streamed) = &ours.streamed
            && !streamed.messages.is_empty()
        {
            s.insert(
                "messages".into(),
                streamed
                    .messages
                    .iter()
                    .map(|m| json!([m.node, scrub(&m.message["content"].to_string())]))
                    .collect(),
            );
        }
    }
    s.insert("state".into(), compact(&ours.state));
    s.insert("next".into(), json!(ours.next));
    s.insert("interrupts".into(), pairs(&ours.pending));
    Value::Object(s)
}

/// Our behaviour on every request of `case`, summarized.
async fn summarize(case: &Value, how: Build, store: Store) -> Result<Value, String> {
    let modes = passes(case)[0];
    let mut session = Session::new(case, how, modes, store).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for run in runs(case) {
        let ours = session.request(run).await;
        out.push(summary(&ours));
        // The ids of the interrupts pending now, for a later resume by id:
        // LangGraph's placeholders bound to ours by node and value.
        for expected in run["after"]["interrupts"].as_array().into_iter().flatten() {
            let placeholder = expected["id"].as_str().expect("an id");
            if session.ids.contains_key(placeholder) {
                continue;
            }
            let found = ours.pending.iter().find(|i| {
                i["node"] == expected["node"]
                    && i["value"] == expected["value"]
                    && !session.ids.values().any(|id| i["id"] == json!(id))
            });
            if let Some(id) = found.and_then(|i| i["id"].as_str()) {
                session.ids.insert(placeholder.to_owned(), id.to_owned());
            }
        }
    }
    Ok(Value::Array(out))
}

// ---------------------------------------------------------------------------
// Cases where we differ, with the reason and what we do instead.
// ---------------------------------------------------------------------------

/// Whether a difference is ours on purpose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Decided: the docs (or issue 32) say why.
    Deliberate,
    /// Not decided: it looks unintended, and is reported. The entry asserts
    /// what we do now, so a change shows.
    Undecided,
}

struct Listed {
    name: &'static str,
    verdict: Verdict,
    reason: &'static str,
    /// Built as the data says, compile refuses the graph with a message
    /// holding this.
    refused: Option<&'static str>,
    /// The recording does not match us; this is what we do (the summary
    /// of each request, see [`summary`]; print them with
    /// `AGENT_CONFORMANCE_PRINT=1`).
    ours: Option<&'static str>,
    /// Built this way, the case matches LangGraph's recording.
    matches_when: Option<Build>,
}

const DIFFERENCES: &[Listed] = &[
    // --- compile ---------------------------------------------------------
    Listed {
        name: "command_goto_single",
        verdict: Verdict::Deliberate,
        reason: "c has no edge in and no Command names it: our compile refuses a node no edge \
                 reaches (StateGraph::compile's docs), where LangGraph keeps it and never runs it. \
                 Asserted: that refusal naming c; without c, the case matches the recording",
        refused: Some("no edge reaches node \"c\""),
        ours: None,
        matches_when: Some(Build {
            drop: &["c"],
            ..NONE
        }),
    },
    Listed {
        name: "interrupt_after_command_node",
        verdict: Verdict::Deliberate,
        reason: "b has no edge in (a's Command goes to c): our compile refuses a node no edge \
                 reaches. Asserted: that refusal naming b; without b, the case matches the recording \
                 (the breakpoint after a, next = the Command's goto c, then c)",
        refused: Some("no edge reaches node \"b\""),
        ours: None,
        matches_when: Some(Build {
            drop: &["b"],
            ..NONE
        }),
    },
    // --- Command ---------------------------------------------------------
    Listed {
        name: "command_goto_names_and_sends_mixed",
        verdict: Verdict::Undecided,
        reason: "a's goto is [Send(w, x), \"zz\", Send(w, y)]: our Command::goto takes names or \
                 Dispatches, not both in one list (IntoGoto is implemented for Vec<T> of one T, and \
                 Goto is not public), so the node cannot say it. Asserted: with goto zz and the two \
                 sends as a fan-out of a (same superstep, same order), the case matches the recording",
        refused: None,
        ours: None,
        matches_when: Some(Build {
            mixed_goto_as_fan_out: true,
            ..NONE
        }),
    },
    Listed {
        name: "command_goto_self_send_same_node_twice",
        verdict: Verdict::Undecided,
        reason: "a's goto is [Send(w, 1), \"w\"]: a mixed list, as in \
                 command_goto_names_and_sends_mixed (and w is both a node and a Send target: node w \
                 plus worker w@send, as conformance.rs's node_pulled_and_sent_same_step). Asserted: \
                 with goto w and the send as a fan-out, w runs twice and the case matches",
        refused: None,
        ours: None,
        matches_when: Some(Build {
            mixed_goto_as_fan_out: true,
            ..NONE
        }),
    },
    // --- RemainingSteps and the recursion limit --------------------------
    Listed {
        name: "remaining_steps_default_limit",
        verdict: Verdict::Deliberate,
        reason: "our default recursion limit stays 25 (DEFAULT_RECURSION_LIMIT), LangGraph 1.2's is \
                 10007: a and b see 24 and 23 where LangGraph's see 10006 and 10005",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b"],"state":{"items":[24,23]},"steps":[["a"],["b"]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "remaining_steps_after_resume",
        verdict: Verdict::Deliberate,
        reason: "our recursion limit counts the supersteps of this run: the resumed a sees 3 \
                 (limit 4 - 1) and b 2, where LangGraph's resumed step sees limit + 1 (a5, b4)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b"],"state":{"items":["a3","b2"]},"steps":[["a"],["b"]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "recursion_limit_count_with_remaining_steps",
        verdict: Verdict::Deliberate,
        reason: "a graph that needs exactly limit (3) supersteps ends normally in ours (as \
                 conformance.rs's recursion_limit_exactly_reached); a, b, c see 2, 1, 0 as in \
                 LangGraph's, which then raises GraphRecursionError",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a2","b1","c0"]},"steps":[["a"],["b"],["c"]]}
        ]"#,
        ),
        matches_when: None,
    },
    // --- routers ---------------------------------------------------------
    Listed {
        name: "router_sees_own_command_update_not_siblings",
        verdict: Verdict::Deliberate,
        reason: "our router sees the whole superstep applied (items has a and b: len 2, branch two); \
                 LangGraph's sees a's Command update alone (len 1, branch one)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","two"],"state":{"items":["a","b"],"last":"two"},"steps":[["a","b"],["two"]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "command_goto_and_router_see_different_states",
        verdict: Verdict::Deliberate,
        reason: "a's Command goes to b in both; a's router sees the whole superstep in ours (a and s: \
                 two), only a's write in LangGraph's (one)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","s","two"],"state":{"items":["a","s","b"],"last":"two"},"steps":[["a","s"],["b","two"]]}
        ]"#,
        ),
        matches_when: None,
    },
    // --- resume with nothing pending -------------------------------------
    Listed {
        name: "update_state_paused_as_paused_node",
        verdict: Verdict::Deliberate,
        reason: "update_state as the paused node a counts a as done (as LangGraph's), so nothing is \
                 pending; the later resume(\"late\") is then GraphError::Resume (nothing pending), \
                 where LangGraph goes on (b, c). The update itself matches (next b, no interrupt)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[],"next":["b"],"state":{"items":["u"]},"update":"ok"},
            {"interrupts":[],"next":["b"],"outcome":{"error":"cannot resume thread \"t\": no interrupt is pending"},"ran":[],"state":{"items":["u"]},"steps":[]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "resume_on_finished_thread",
        verdict: Verdict::Deliberate,
        reason: "resume on a finished thread is GraphError::Resume (nothing pending), where \
                 LangGraph runs nothing and returns the state; invoke(None) (continue_thread) matches",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a","b","c"]},"steps":[["a"],["b"],["c"]]},
            {"interrupts":[],"next":[],"outcome":{"error":"cannot resume thread \"t\": no interrupt is pending"},"ran":[],"state":{"items":["a","b","c"]},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":[],"state":{"items":["a","b","c"]},"steps":[]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "resume_map_after_answered",
        verdict: Verdict::Deliberate,
        reason: "the second resume finds nothing pending: GraphError::Resume, where LangGraph runs \
                 nothing",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a:A","b","c"]},"steps":[["a"],["b"],["c"]]},
            {"interrupts":[],"next":[],"outcome":{"error":"cannot resume thread \"t\": no interrupt is pending"},"ran":[],"state":{"items":["a:A","b","c"]},"steps":[]}
        ]"#,
        ),
        matches_when: None,
    },
    // --- update_state on a paused thread ---------------------------------
    Listed {
        name: "update_state_paused_as_other_node",
        verdict: Verdict::Deliberate,
        reason: "update_state as b on a thread paused in a keeps a's interrupt pending (next [a]), \
                 where LangGraph drops it and goes on from b (next [c]); continue_thread then keeps \
                 the interrupt pending and runs nothing",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[["a","q"]],"next":["a"],"state":{"items":["u"]},"update":"ok"},
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":[],"state":{"items":["u"]},"steps":[]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "update_state_paused_no_as_node",
        verdict: Verdict::Deliberate,
        reason: "update_state with as_node None on a paused thread keeps the interrupt pending \
                 (LangGraph drops it and re-runs a, whose first interrupt() then takes the resume \
                 value): the resume answers it; the end state is the same",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[["a","q"]],"next":["a"],"state":{"items":["u"]},"update":"ok"},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["u","a:A","b","c"]},"steps":[["a"],["b"],["c"]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "update_state_paused_with_sibling_pending_writes",
        verdict: Verdict::Deliberate,
        reason: "update_state on a paused thread keeps the interrupt and s's pending write: next \
                 [a] (LangGraph: [a, s], both run again); on resume only a runs; the end state is \
                 the same",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a","s"],"state":{},"steps":[]},
            {"interrupts":[["a","q"]],"next":["a"],"state":{"last":"u"},"update":"ok"},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","c"],"state":{"items":["a:A","s","c"],"last":"u"},"steps":[["a","s"],["c"]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "update_state_paused_sibling_as_paused_node",
        verdict: Verdict::Deliberate,
        reason: "as_node = the paused a counts a as done with that write (as LangGraph's), and ours \
                 keeps s's finished write: the paused superstep commits (items [s]) and the join \
                 [a, s] -> c fires, so continue_thread runs c; LangGraph drops s's write, the join \
                 never fires and nothing runs",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a","s"],"state":{},"steps":[]},
            {"interrupts":[],"next":["c"],"state":{"items":["s"],"last":"u"},"update":"ok"},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["c"],"state":{"items":["s","c"],"last":"u"},"steps":[["c"]]}
        ]"#,
        ),
        matches_when: None,
    },
    // --- joins -----------------------------------------------------------
    Listed {
        name: "join_barrier_persists_across_inputs",
        verdict: Verdict::Deliberate,
        reason: "a join resets at each new run (input): what a run saw of it does not count in the \
                 next, so the second run (only b) does not fire c; LangGraph keeps the half-seen join \
                 across runs and fires c",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a"],"state":{"items":["a"],"last":"A"},"steps":[["a"]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["b"],"state":{"items":["a","b"],"last":"B"},"steps":[["b"]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["b"],"state":{"items":["a","b","b"],"last":"B"},"steps":[["b"]]}
        ]"#,
        ),
        matches_when: None,
    },
    // --- replay and fork -------------------------------------------------
    Listed {
        name: "replay_at_interrupted_step",
        verdict: Verdict::Deliberate,
        reason: "replay = fork + continue_thread, and a fork at a pause is paused too: forked at the \
                 pause after step 0, ours keeps a's interrupt pending (same id; the resume answers \
                 it), where LangGraph's replay re-runs a, which asks again under a new id. Asserted \
                 too: forked at the step before the pause, ours is LangGraph's replay",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a:A","b","c"]},"steps":[["a"],["b"],["c"]]},
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":[],"state":{},"steps":[]},
            {"history":[[0,1,{},["a"],[["a","q"]]]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a:B","b","c"]},"steps":[["a"],["b"],["c"]]}
        ]"#,
        ),
        matches_when: Some(Build {
            replay_before_pause: true,
            history_stand_in: true,
            ..NONE
        }),
    },
    Listed {
        name: "replay_before_step_with_pending_writes",
        verdict: Verdict::Deliberate,
        reason: "as replay_at_interrupted_step: the fork at the pause keeps a's interrupt and s's \
                 finished write (s does not run again); LangGraph's replay runs a and s again. Forked \
                 at the step before the pause, ours is LangGraph's replay",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a","s"],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","c"],"state":{"items":["a:A","s","c"]},"steps":[["a","s"],["c"]]},
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":[],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","c"],"state":{"items":["a:B","s","c"]},"steps":[["a","s"],["c"]]},
            {"history":[[3,4,{"items":["a:B","s","c"]},[],[]],[2,3,{"items":["a:B","s"]},["c"],[]],[0,1,{},["a","s"],[["a","q"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            replay_before_pause: true,
            history_stand_in: true,
            ..NONE
        }),
    },
    Listed {
        name: "replay_while_paused",
        verdict: Verdict::Deliberate,
        reason: "as replay_before_step_with_pending_writes, on a thread still paused",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a","s"],"state":{},"steps":[]},
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":[],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","c"],"state":{"items":["a:A","s","c"]},"steps":[["a","s"],["c"]]}
        ]"#,
        ),
        matches_when: Some(Build {
            replay_before_pause: true,
            history_stand_in: true,
            ..NONE
        }),
    },
    Listed {
        name: "fork_at_interrupted_step",
        verdict: Verdict::Deliberate,
        reason: "a fork at the pause is paused, and update_state (as_node None) on it keeps the \
                 interrupt: the resume answers it (same id), where LangGraph's update_state drops \
                 it and a asks again under a new id. Forked at the step before the pause, ours is \
                 LangGraph's fork",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":["a"],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a:A","b","c"]},"steps":[["a"],["b"],["c"]]},
            {"interrupts":[["a","q"]],"next":["a"],"outcome":{"interrupts":[["a","q"]]},"ran":[],"state":{"last":"f"},"steps":[],"update":"ok"},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","b","c"],"state":{"items":["a:B","b","c"],"last":"f"},"steps":[["a"],["b"],["c"]]},
            {"history":[[4,6,{"items":["a:B","b","c"],"last":"f"},[],[]],[3,5,{"items":["a:B","b"],"last":"f"},["c"],[]],[2,4,{"items":["a:B"],"last":"f"},["b"],[]],[1,3,{"last":"f"},["a"],[["a","q"]]],[0,1,{},["a"],[["a","q"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            replay_before_pause: true,
            history_stand_in: true,
            ..NONE
        }),
    },
    // --- messages --------------------------------------------------------
    Listed {
        name: "messages_all_types_and_generated_ids",
        verdict: Verdict::Undecided,
        reason: "a returned message without an id is streamed with the id it is stored under; \
                 LangGraph's messages stream gives it another generated id than the one in the \
                 state (<gen:5> streamed, <gen:0> stored). Everything else matches (types, order, \
                 the replaced h-a not streamed again, metadata)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"messages":[["a","\"human from a\""],["a","\"ai without id\""],["a","\"tool out\""],["a","\"system\""]],"next":[],"outcome":"ok","ran":["a","b"],"state":{"messages":[{"content":"input without id","id":"<id>","type":"human"},{"content":"replaces human","id":"h-a","type":"ai"},{"content":"ai without id","id":"<id>","type":"ai"},{"content":"tool out","id":"t-a","tool_call_id":"call1","type":"tool"},{"content":"system","id":"s-a","type":"system"}]},"steps":[["a"],["b"]]}
        ]"#,
        ),
        matches_when: None,
    },
    // --- subgraphs ---------------------------------------------------------
    Listed {
        name: "subgraph_child_order_in_parent_step",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): child writes items [ca, cb] (LangGraph: [in, ca, cb], \
                 so items is [in, in, ca, cb, p]). Asserted too: with the subgraph nodes' writes \
                 (and so the states) left out, everything else matches the recording (tasks, the \
                 other updates, each child's supersteps and updates, interrupts, next, what ran, \
                 the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|ca","child|cb","p","z"],"state":{"items":["in","ca","cb","p","z"]},"steps":[["child","p"],["z"]],"sub":[["child",[["ca"],["cb"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_lastvalue_two_child_steps",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): child writes only last, its final value (LangGraph: the \
                 child's whole state, items and the input included). Asserted too: with the \
                 subgraph nodes' writes (and so the states) left out, everything else matches the \
                 recording (tasks, the other updates, each child's supersteps and updates, \
                 interrupts, next, what ran, the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|c1","child|c2","z"],"state":{"items":["z:$item"],"last":"c2"},"steps":[["child"],["z"]],"sub":[["child",[["c1"],["c2"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_three_levels",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): each level writes what its steps wrote, so nothing the \
                 parent passed down comes back twice. Asserted too: with the subgraph nodes' \
                 writes (and so the states) left out, everything else matches the recording \
                 (tasks, the other updates, each child's supersteps and updates, interrupts, next, \
                 what ran, the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["fin","mid|inner|i1","mid|inner|i2","mid|m1","mid|m2","top"],"state":{"items":["top","m1","i1","m2","fin"],"last":"i2"},"steps":[["top"],["mid"],["fin"]],"sub":[["mid",[["m1"],["inner"],["m2"]]],["mid|inner",[["i1"],["i2"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_interrupt_in_child",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): on resume the child goes on at cb (ca does not run \
                 again, as LangGraph's) and writes [ca, cb:A] and last, not the whole child state. \
                 Asserted too: with the subgraph nodes' writes (and so the states) left out, \
                 everything else matches the recording (tasks, the other updates, each child's \
                 supersteps and updates, interrupts, next, what ran, the namespaced updates \
                 stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["child","q"]],"next":["child"],"outcome":{"interrupts":[["child","q"]]},"ran":["a","child|ca","child|cb"],"state":{"items":["a"]},"steps":[["a"]],"sub":[["child",[["ca"]]]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|cb","child|cc","z"],"state":{"items":["a","ca","cb:A","z"],"last":"cc"},"steps":[["child"],["z"]],"sub":[["child",[["cb"],["cc"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_interrupt_two_levels_deep",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): the pause two levels down is resumed inside (as \
                 LangGraph's); each level writes what its steps wrote. Asserted too: with the \
                 subgraph nodes' writes (and so the states) left out, everything else matches the \
                 recording (tasks, the other updates, each child's supersteps and updates, \
                 interrupts, next, what ran, the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["mid","deep?"]],"next":["mid"],"outcome":{"interrupts":[["mid","deep?"]]},"ran":["mid|inner|i1","mid|inner|i2","mid|m1"],"state":{},"steps":[],"sub":[["mid",[["m1"]]],["mid|inner",[["i1"]]]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["fin","mid|inner|i2","mid|m2"],"state":{"items":["m1","i1","m2","fin"],"last":"D"},"steps":[["mid"],["fin"]],"sub":[["mid|inner",[["i2"]]],["mid",[["inner"],["m2"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_breakpoint_inside_child",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): the child's interrupt_before pauses the parent and \
                 continue_thread goes on inside the child (as LangGraph's); the child's write is \
                 its steps'. Asserted too: with the subgraph nodes' writes (and so the states) \
                 left out, everything else matches the recording (tasks, the other updates, each \
                 child's supersteps and updates, interrupts, next, what ran, the namespaced \
                 updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":["child"],"outcome":"ok","ran":["child|ca"],"state":{},"steps":[],"sub":[["child",[["ca"]]]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|cb","z"],"state":{"items":["ca","cb","z"]},"steps":[["child"],["z"]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "remaining_steps_inside_subgraph",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): the child counts its own steps against its own limit \
                 (the case's recursion limit, given to the compiled child) and sees 5 then 4, as \
                 LangGraph's. Asserted too: with the subgraph nodes' writes (and so the states) \
                 left out, everything else matches the recording (tasks, the other updates, each \
                 child's supersteps and updates, interrupts, next, what ran, the namespaced \
                 updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","child|c1","child|c2","z"],"state":{"items":["a5","c15","c24","z3"]},"steps":[["a"],["child"],["z"]],"sub":[["child",[["c1"],["c2"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "history_with_subgraph",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): the history lists the parent's steps only (a subgraph's \
                 own steps skipped, as LangGraph's top-level namespace), with our states. Asserted \
                 too: with the subgraph nodes' writes (and so the states) left out, everything \
                 else matches the recording (tasks, the other updates, each child's supersteps and \
                 updates, interrupts, next, what ran, the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|ca","child|cb","z"],"state":{"items":["ca","cb","z"]},"steps":[["child"],["z"]],"sub":[["child",[["ca"],["cb"]]]]},
            {"history":[[2,5,{"items":["ca","cb","z"]},[],[]],[1,4,{"items":["ca","cb"]},["z"],[]],[0,1,{},["child"],[]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "replay_with_subgraph",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): the replay runs the child again in a new namespace (the \
                 fork's thread), as LangGraph's. Asserted too: with the subgraph nodes' writes \
                 (and so the states) left out, everything else matches the recording (tasks, the \
                 other updates, each child's supersteps and updates, interrupts, next, what ran, \
                 the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","child|ca","child|cb","z"],"state":{"items":["a","ca","cb","z"]},"steps":[["a"],["child"],["z"]],"sub":[["child",[["ca"],["cb"]]]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|ca","child|cb","z"],"state":{"items":["a","ca","cb","z"]},"steps":[["child"],["z"]]},
            {"history":[[4,6,{"items":["a","ca","cb","z"]},[],[]],[3,5,{"items":["a","ca","cb"]},["z"],[]],[1,2,{"items":["a"]},["child"],[]],[0,1,{},["a"],[]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "stream_parallel_subgraphs",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): two subgraphs in one superstep, each in its own \
                 namespace; ours stream their chunks as they run (compared in LangGraph's recorded \
                 order). Asserted too: with the subgraph nodes' writes (and so the states) left \
                 out, everything else matches the recording (tasks, the other updates, each \
                 child's supersteps and updates, interrupts, next, what ran, the namespaced \
                 updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["left|l1","left|l2","right|r1","z"],"state":{"items":["l1","l2","r1","z"]},"steps":[["left","right"],["z"]],"sub":[["left",[["l1"],["l2"]]],["right",[["r1"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "stream_subgraph_with_parallel_child_tasks",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): the child's parallel tasks are one child superstep, as \
                 LangGraph's. Asserted too: with the subgraph nodes' writes (and so the states) \
                 left out, everything else matches the recording (tasks, the other updates, each \
                 child's supersteps and updates, interrupts, next, what ran, the namespaced \
                 updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|x","child|y"],"state":{"items":["x","y"]},"steps":[["child"]],"sub":[["child",[["x","y"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "stream_subgraph_returns_nothing_new",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): a child that writes nothing writes nothing in the \
                 parent (an empty update; LangGraph: the child's whole state, appended again). \
                 Asserted too: with the subgraph nodes' writes (and so the states) left out, \
                 everything else matches the recording (tasks, the other updates, each child's \
                 supersteps and updates, interrupts, next, what ran, the namespaced updates \
                 stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|c"],"state":{"items":["i"],"last":"in"},"steps":[["child"]],"sub":[["child",[["c"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "messages_from_subgraph",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): with StreamMode::SUBGRAPHS the child's message comes as \
                 Event::Nested with the child's namespace and metadata, and not again when the \
                 parent commits (as LangGraph's). Asserted too: with the subgraph nodes' writes \
                 (and so the states) left out, everything else matches the recording (tasks, the \
                 other updates, each child's supersteps and updates, interrupts, next, what ran, \
                 the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"messages":[["a","\"top\""],["c1","\"child\""]],"next":[],"outcome":"ok","ran":["a","child|c1"],"state":{"messages":[{"content":"top","id":"m-a","type":"ai"},{"content":"child","id":"m-c1","type":"ai"}]},"steps":[["a"],["child"]],"sub":[["child",[["c1"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "messages_from_subgraph_without_subgraphs_flag",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other \
                 (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received): without StreamMode::SUBGRAPHS the child's message \
                 reaches the messages stream when the parent commits the subgraph node's write, \
                 with the parent task's metadata (as LangGraph's). Asserted too: with the subgraph \
                 nodes' writes (and so the states) left out, everything else matches the recording \
                 (tasks, the other updates, each child's supersteps and updates, interrupts, next, \
                 what ran, the namespaced updates stream)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"messages":[["a","\"top\""],["c1","\"child\""]],"next":[],"outcome":"ok","ran":["a","child|c1"],"state":{"messages":[{"content":"top","id":"m-a","type":"ai"},{"content":"child","id":"m-c1","type":"ai"}]},"steps":[["a"],["child"]],"sub":[["child",[["c1"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_command_parent_handoff",
        verdict: Verdict::Deliberate,
        reason: "Command::to_parent from a child node: the child's superstep holding it is \
                 committed (its update applied as the child's last step), then the child ends and \
                 the parent routes to the goto targets (through the subgraph node's destinations) \
                 and the subgraph node's own edges; LangGraph drops what the earlier child steps \
                 wrote and applies the command's update alone to the parent, saving no child step \
                 for it. And a subgraph node's write is what the child's steps wrote, one after \
                 the other (Delta::then; add_subgraph's docs), not LangGraph's whole final child \
                 state written back through the parent's reducers (which appends again the list \
                 entries the child only received): child writes last (h's update), and y and z \
                 both run, as LangGraph's. Asserted too: with the subgraph nodes' writes (and the \
                 states) left out and the handoff's child step compared by its tasks, everything \
                 else matches the recording",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|h","y","z"],"state":{"items":["h","y","z"],"last":"handoff"},"steps":[["child"],["y","z"]],"sub":[["child",[["h"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            handoff_step_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_handoff_after_child_step",
        verdict: Verdict::Deliberate,
        reason: "Command::to_parent from a child node: the child's superstep holding it is \
                 committed (its update applied as the child's last step), then the child ends and \
                 the parent routes to the goto targets (through the subgraph node's destinations) \
                 and the subgraph node's own edges; LangGraph drops what the earlier child steps \
                 wrote and applies the command's update alone to the parent, saving no child step \
                 for it. And a subgraph node's write is what the child's steps wrote, one after \
                 the other (Delta::then; add_subgraph's docs), not LangGraph's whole final child \
                 state written back through the parent's reducers (which appends again the list \
                 entries the child only received): child writes items [c1] and last (LangGraph: \
                 last alone, c1's write lost). Asserted too: with the subgraph nodes' writes (and \
                 the states) left out and the handoff's child step compared by its tasks, \
                 everything else matches the recording",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|c1","child|h","z"],"state":{"items":["in","c1","z"],"last":"handoff"},"steps":[["child"],["z"]],"sub":[["child",[["c1"],["h"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            handoff_step_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_handoff_from_two_levels_deep",
        verdict: Verdict::Deliberate,
        reason: "Command::to_parent from a child node: the child's superstep holding it is \
                 committed (its update applied as the child's last step), then the child ends and \
                 the parent routes to the goto targets (through the subgraph node's destinations) \
                 and the subgraph node's own edges; LangGraph drops what the earlier child steps \
                 wrote and applies the command's update alone to the parent, saving no child step \
                 for it. And a subgraph node's write is what the child's steps wrote, one after \
                 the other (Delta::then; add_subgraph's docs), not LangGraph's whole final child \
                 state written back through the parent's reducers (which appends again the list \
                 entries the child only received): inner hands off to mid's m2 (one level up, as \
                 LangGraph's); mid writes what its steps wrote. Asserted too: with the subgraph \
                 nodes' writes (and the states) left out and the handoff's child step compared by \
                 its tasks, everything else matches the recording",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["mid|inner|h","mid|m2","z"],"state":{"items":["m2","z"],"last":"up-one"},"steps":[["mid"],["z"]],"sub":[["mid|inner",[["h"]]],["mid",[["inner"],["m2"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            handoff_step_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "stream_subgraph_command_inside_child",
        verdict: Verdict::Deliberate,
        reason: "the child's c2 has no edge in (c1's Command goes to c3): our compile refuses a \
                 node no edge reaches (as command_goto_single), here the child's compile. \
                 Asserted: that refusal naming c2; without c2 and with the subgraph node's write \
                 ours (a subgraph node's write is what the child's steps wrote, one after the \
                 other (Delta::then; add_subgraph's docs), not LangGraph's whole final child state \
                 written back through the parent's reducers (which appends again the list entries \
                 the child only received)), the case matches the recording",
        refused: Some("no edge reaches node \"c2\""),
        ours: None,
        matches_when: Some(Build {
            drop: &["c2"],
            subgraph_writes_ours: true,
            ..NONE
        }),
    },
    Listed {
        name: "router_after_subgraph_sees_child_output",
        verdict: Verdict::Deliberate,
        reason: "our router sees the whole superstep applied (the child's write and p's: items has \
                 p, branch y); LangGraph's router of a subgraph node sees the pre-step state plus \
                 the child's returned state only (items empty, branch x), as \
                 router_sees_own_command_update_not_siblings",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|c","p","y"],"state":{"items":["p","y"],"last":"from-child"},"steps":[["child","p"],["y"]],"sub":[["child",[["c"]]]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "update_state_paused_in_subgraph_no_as_node",
        verdict: Verdict::Deliberate,
        reason: "update_state (as_node None) on a thread paused inside a subgraph keeps the pause and the \
                 child's progress (as update_state_paused_no_as_node keeps a node's): the interrupt \
                 stays pending (same id) and the resume answers it inside the child, which goes on \
                 at cb with what ca wrote, where LangGraph's drops the child's progress and runs \
                 the child from its start in a new namespace, its fresh interrupt() taking the \
                 resume value",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["child","q"]],"next":["child"],"outcome":{"interrupts":[["child","q"]]},"ran":["a","child|ca","child|cb"],"state":{"items":["a"]},"steps":[["a"]],"sub":[["child",[["ca"]]]]},
            {"interrupts":[["child","q"]],"next":["child"],"state":{"items":["a"],"last":"u"},"update":"ok"},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|cb","z"],"state":{"items":["a","ca","cb:A","z"],"last":"u"},"steps":[["child"],["z"]],"sub":[["child",[["cb"]]]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "subgraph_interrupt_with_parent_sibling",
        verdict: Verdict::Deliberate,
        reason: "a subgraph node's write is what the child's steps wrote, one after the other (Delta::then; \
                 add_subgraph's docs), not LangGraph's whole final child state written back \
                 through the parent's reducers (which appends again the list entries the child only \
                 received). Asserted: with the subgraph node's write ours, the case matches the \
                 recording (the first resume by id answers only the child, p stays paused)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["child","qc"],["p","qp"]],"next":["child","p"],"outcome":{"interrupts":[["child","qc"],["p","qp"]]},"ran":["child|ca","child|cb","p","s"],"state":{},"steps":[],"sub":[["child",[["ca"]]]]},
            {"interrupts":[["p","qp"]],"next":["p"],"outcome":{"interrupts":[["p","qp"]]},"ran":["child|cb"],"state":{},"steps":[],"sub":[["child",[["cb"]]]]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["p","z"],"state":{"items":["ca","cb:C","p:P","s","z"]},"steps":[["child","p","s"],["z"]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            pending_unordered: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_resume_both_by_id",
        verdict: Verdict::Deliberate,
        reason: "as subgraph_interrupt_with_parent_sibling: the subgraph node's write is what the child's \
                 steps wrote. Asserted: with it ours, the case matches the recording",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[["child","qc"],["p","qp"]],"next":["child","p"],"outcome":{"interrupts":[["child","qc"],["p","qp"]]},"ran":["child|cb","p"],"state":{},"steps":[]},
            {"interrupts":[],"next":[],"outcome":"ok","ran":["child|cb","p"],"state":{"items":["cb:C","p:P"]},"steps":[["child","p"]],"sub":[["child",[["cb"]]]]}
        ]"#,
        ),
        matches_when: Some(Build {
            subgraph_writes_ours: true,
            pending_unordered: true,
            ..NONE
        }),
    },
    Listed {
        name: "subgraph_sent_twice_parallel_namespaces",
        verdict: Verdict::Undecided,
        reason: "a Send cannot go to a subgraph: Command::goto and add_fan_out send to a Worker, \
                 and add_worker takes a function (there is no subgraph worker), so the case cannot \
                 be built. Asserted: with the child run in memory from the Send arg in a worker, \
                 its steps' writes one after the other as the worker's update (what add_subgraph \
                 would write), each instance writes items [c] (no namespaced events: the stand-in \
                 is no subgraph of the run)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","child|c","child|c","z"],"state":{"items":["c","c","z"]},"steps":[["a"],["child","child"],["z"]]}
        ]"#,
        ),
        matches_when: None,
    },
    Listed {
        name: "subgraph_sent_twice_lastvalue_conflict",
        verdict: Verdict::Undecided,
        reason: "a Send cannot go to a subgraph: Command::goto and add_fan_out send to a Worker, \
                 and add_worker takes a function (there is no subgraph worker), so the case cannot \
                 be built. Asserted: with the child run in memory from the Send arg in a worker, \
                 its steps' writes one after the other as the worker's update (what add_subgraph \
                 would write), each instance writes items [c] only, so the two do not conflict on \
                 last (LangGraph's write the whole child state, last included, and conflict)",
        refused: None,
        ours: Some(
            r#"[
            {"interrupts":[],"next":[],"outcome":"ok","ran":["a","child|c","child|c","z"],"state":{"items":["c","c","z"]},"steps":[["a"],["child","child"],["z"]]}
        ]"#,
        ),
        matches_when: None,
    },
];

/// No adjustment.
const NONE: Build = Build {
    drop: &[],
    mixed_goto_as_fan_out: false,
    declare_end: false,
    replay_before_pause: false,
    history_stand_in: false,
    subgraph_writes_ours: false,
    handoff_step_ours: false,
    pending_unordered: false,
};

fn listed(name: &str) -> Option<&'static Listed> {
    DIFFERENCES.iter().find(|l| l.name == name)
}

/// Where a case's threads are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Memory,
    /// A SQLite file in a temporary directory.
    Sqlite,
}

impl Backend {
    /// A fresh store, and what keeps its file alive.
    async fn store(self) -> (Store, Option<tempfile::TempDir>) {
        match self {
            Backend::Memory => (Store::memory(), None),
            Backend::Sqlite => {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let store = Store::sqlite(dir.path().join("store.db"))
                    .await
                    .expect("a SQLite store");
                (store, Some(dir))
            }
        }
    }
}

/// Runs `case` on a fresh store of `backend` and compares.
async fn run_on(name: &str, case: &Value, how: Build, backend: Backend) -> Result<(), String> {
    for modes in passes(case) {
        let (store, _dir) = backend.store().await;
        run_case(name, case, how, modes, store).await?;
    }
    Ok(())
}

/// Asserts a listed case: what we do instead.
async fn check_listed(case: &Value, listed: &Listed, backend: Backend) -> Result<(), String> {
    let name = listed.name;
    if listed.ours.is_none() && listed.matches_when.is_none() {
        return Err(format!("{name}: a listed case asserts what we do"));
    }
    if let Some(refused) = listed.refused {
        match build(case, Build::default(), Store::memory()) {
            Err(GraphError::Invalid(message)) if message.contains(refused) => {}
            other => {
                return Err(format!(
                    "{name}: expected compile to refuse it ({refused:?}), got {:?}",
                    other.map(|_| ())
                ));
            }
        }
    }
    if let Some(expected) = listed.ours {
        if run_on(name, case, Build::default(), Backend::Memory)
            .await
            .is_ok()
        {
            return Err(format!(
                "{name}: listed as a difference, but it now matches LangGraph: remove it from DIFFERENCES"
            ));
        }
        let (store, _dir) = backend.store().await;
        let ours = summarize(case, Build::default(), store).await?;
        let expected: Value = serde_json::from_str(expected)
            .map_err(|e| format!("{name}: the listed summary is not JSON: {e}"))?;
        if ours != expected {
            return Err(format!(
                "{name}: ours changed:\n  listed {expected}\n  now    {ours}"
            ));
        }
    }
    if let Some(how) = listed.matches_when {
        run_on(&format!("{name} (built {how:?})"), case, how, backend).await?;
    }
    Ok(())
}

fn cases() -> Vec<Value> {
    let file: Value = serde_json::from_str(VECTORS).expect("the vectors are JSON");
    let list = file["cases"].as_array().expect("cases").clone();
    assert_eq!(file["count"], json!(list.len()));
    list
}

fn case(name: &str) -> Value {
    cases()
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

// ---------------------------------------------------------------------------
// The tests.
// ---------------------------------------------------------------------------

#[tokio::test]
async fn every_agent_case_is_run_or_listed() {
    let list = cases();
    let mut names = BTreeSet::new();
    for case in &list {
        assert!(
            names.insert(case["name"].as_str().expect("a name")),
            "a case appears twice"
        );
    }
    for listed in DIFFERENCES {
        assert!(
            names.contains(listed.name),
            "{} is listed but not in the file",
            listed.name
        );
        assert!(!listed.reason.is_empty());
    }
    let print = std::env::var_os("AGENT_CONFORMANCE_PRINT").is_some();
    let (mut matched, mut differences, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    for case in &list {
        let name = case["name"].as_str().expect("a name");
        let result = match listed(name) {
            Some(listed) => {
                differences.push(name);
                check_listed(case, listed, Backend::Memory).await
            }
            None => {
                matched.push(name);
                run_on(name, case, Build::default(), Backend::Memory).await
            }
        };
        if print && (result.is_err() || listed(name).is_some()) {
            let failure = result.as_ref().err().cloned().unwrap_or_default();
            let ours = summarize(case, Build::default(), Store::memory()).await;
            println!(
                "{name}: {failure}\n  ours: {}\n",
                ours.unwrap_or_else(Value::String)
            );
        }
        if let Err(failure) = result {
            failures.push(failure);
        }
    }
    for verdict in [Verdict::Deliberate, Verdict::Undecided] {
        let names: Vec<&str> = DIFFERENCES
            .iter()
            .filter(|l| l.verdict == verdict)
            .map(|l| l.name)
            .collect();
        println!("{verdict:?} ({}): {names:?}", names.len());
    }
    println!(
        "run and matched ({}): {matched:?}\nlisted differences ({}): {differences:?}",
        matched.len(),
        differences.len(),
    );
    assert_eq!(matched.len() + differences.len(), list.len());
    assert!(
        failures.is_empty(),
        "{} case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The lines of `ours` not in `theirs`, and of `theirs` not in `ours`.
fn line_diff<'a>(ours: &'a str, theirs: &'a str) -> (Vec<&'a str>, Vec<&'a str>) {
    let (o, t): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    (
        o.iter().filter(|l| !t.contains(l)).copied().collect(),
        t.iter().filter(|l| !o.contains(l)).copied().collect(),
    )
}

/// The graph a case draws: as the data says, or, where compile refuses
/// that, as its DIFFERENCES entry builds it.
fn drawn(case: &Value) -> String {
    let name = case["name"].as_str().expect("a name");
    let how = match build(case, Build::default(), Store::memory()) {
        Ok((app, _)) => return app.draw_mermaid(),
        Err(_) => listed(name)
            .and_then(|l| l.matches_when)
            .unwrap_or_else(|| panic!("{name}: compile refuses it and no entry builds it")),
    };
    build(case, how, Store::memory())
        .expect("the listed build compiles")
        .0
        .draw_mermaid()
}

/// `draw_mermaid()` text with its node lines and its edge lines each
/// sorted: what is drawn, whatever the order.
fn unordered(text: &str) -> Vec<String> {
    let mut head = Vec::new();
    let (mut nodes, mut edges) = (Vec::new(), Vec::new());
    for line in text.lines() {
        if line.contains(" --> ") || line.contains(" -.-> ") {
            edges.push(line.to_owned());
        } else if line.starts_with('\t') && !line.contains("classDef") {
            nodes.push(line.to_owned());
        } else {
            head.push(line.to_owned());
        }
    }
    nodes.sort();
    edges.sort();
    head.into_iter().chain(nodes).chain(edges).collect()
}

/// The drawing's order: ours writes the edges sorted as (source, target)
/// (run/mermaid.rs: "LangGraph sorts its edges as tuples"); LangGraph
/// 1.2.22 (langchain-core 1.7.2) writes them as the graph has them, mostly
/// grouped by source in node order (`tools --> b;` before `b --> __end__;`).
/// And a node that sends to a worker by Command is added after the worker
/// here (`Destination::from(&worker)` needs its handle), so the worker is
/// drawn first. Where only the order differs, the drawing is the same.
const MERMAID_ORDER: (Verdict, &str) = (
    Verdict::Deliberate,
    "node order only: a node that sends to a worker by Command is added after the worker \
     (Destination::from(&worker) needs its handle), so it is listed after it",
);

/// Drawings that differ in what they draw, with the lines only ours has
/// and the lines only LangGraph's has.
struct Drawn {
    name: &'static str,
    verdict: Verdict,
    reason: &'static str,
    ours_only: &'static [&'static str],
    theirs_only: &'static [&'static str],
}

const MERMAID: &[Drawn] = &[
    Drawn {
        name: "command_goto_single",
        verdict: Verdict::Deliberate,
        reason: "c is left out (compile refuses a node no edge reaches: see DIFFERENCES); LangGraph \
                 draws it and, with a node it cannot reach, drops the first/last styles of \
                 __start__ and __end__",
        ours_only: &[
            "\t__start__([<p>__start__</p>]):::first",
            "\t__end__([<p>__end__</p>]):::last",
        ],
        theirs_only: &[
            "\t__start__(<p>__start__</p>)",
            "\tc(c)",
            "\t__end__(<p>__end__</p>)",
        ],
    },
    Drawn {
        name: "interrupt_after_command_node",
        verdict: Verdict::Deliberate,
        reason: "as command_goto_single, with b",
        ours_only: &[
            "\t__start__([<p>__start__</p>]):::first",
            "\t__end__([<p>__end__</p>]):::last",
        ],
        theirs_only: &[
            "\t__start__(<p>__start__</p>)",
            "\tb(b)",
            "\t__end__(<p>__end__</p>)",
        ],
    },
    Drawn {
        name: "command_goto_self_send_same_node_twice",
        verdict: Verdict::Deliberate,
        reason: "w is a node and a Send target: ours is node w and worker w@send (see DIFFERENCES), \
                 drawn as two nodes",
        ours_only: &[
            "\tw\\40send(w@send)",
            "\ta -.-> w\\40send;",
            "\tw\\40send --> __end__;",
        ],
        theirs_only: &[],
    },
    Drawn {
        name: "remaining_steps_in_send_worker",
        verdict: Verdict::Undecided,
        reason: "a's Send router (no path map) is drawn by LangGraph as a --> __end__, w unreached \
                 (so without the first/last styles); ours draws the fan-out a -.-> w and w's edge \
                 to END, what the graph does",
        ours_only: &[
            "\t__start__([<p>__start__</p>]):::first",
            "\t__end__([<p>__end__</p>]):::last",
            "\ta -.-> w;",
            "\tw --> __end__;",
        ],
        theirs_only: &[
            "\t__start__(<p>__start__</p>)",
            "\t__end__(<p>__end__</p>)",
            "\ta --> __end__;",
        ],
    },
    Drawn {
        name: "interrupt_before_all_nodes",
        verdict: Verdict::Deliberate,
        reason: "interrupt_before=\"*\" has no counterpart in ours: the nodes are named, so each is \
                 drawn with its breakpoint; LangGraph's drawing marks none for \"*\"",
        ours_only: &[
            "\ta(a<hr/><small><em>__interrupt = before</em></small>)",
            "\ttools(tools<hr/><small><em>__interrupt = before</em></small>)",
            "\tb(b<hr/><small><em>__interrupt = before</em></small>)",
        ],
        theirs_only: &["\ta(a)", "\ttools(tools)", "\tb(b)"],
    },
    Drawn {
        name: "subgraph_command_parent_handoff",
        verdict: Verdict::Deliberate,
        reason: "the child's Command::to_parent goes to z through the subgraph node's destinations \
                 (add_subgraph's docs), drawn as child -.-> z; LangGraph's child node declares none \
                 (its destinations name nodes of its own graph), so z is drawn unreached (and \
                 __start__ / __end__ without their first/last styles)",
        ours_only: &[
            "\t__start__([<p>__start__</p>]):::first",
            "\t__end__([<p>__end__</p>]):::last",
            "\tchild -.-> z;",
            "\tz --> __end__;",
        ],
        theirs_only: &["\t__start__(<p>__start__</p>)", "\t__end__(<p>__end__</p>)"],
    },
    Drawn {
        name: "subgraph_handoff_after_child_step",
        verdict: Verdict::Deliberate,
        reason: "as subgraph_command_parent_handoff (child -.-> z, its destination); LangGraph also \
                 draws child --> __end__ for the node with no edge out",
        ours_only: &[
            "\t__start__([<p>__start__</p>]):::first",
            "\t__end__([<p>__end__</p>]):::last",
            "\tchild -.-> z;",
            "\tz --> __end__;",
        ],
        theirs_only: &[
            "\t__start__(<p>__start__</p>)",
            "\t__end__(<p>__end__</p>)",
            "\tchild --> __end__;",
        ],
    },
];

/// `draw_mermaid()` against each recorded `mermaid`, verbatim.
#[test]
fn every_drawing_is_langgraphs_or_listed() {
    let (mut verbatim, mut order_only, mut failures) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = BTreeSet::new();
    let all = cases();
    for case in &all {
        let name = case["name"].as_str().expect("a name");
        let ours = drawn(case);
        let theirs = case["mermaid"].as_str().expect("mermaid");
        let listed = MERMAID.iter().find(|d| d.name == name);
        let (o, t) = line_diff(&ours, theirs);
        match listed {
            Some(d) => {
                seen.insert(name);
                assert!(!d.reason.is_empty());
                println!("{name} ({:?}): {}", d.verdict, d.reason);
                if (o.as_slice(), t.as_slice()) != (d.ours_only, d.theirs_only) {
                    failures.push(format!(
                        "{name}: the drawing changed: ours only {o:?}, LangGraph's only {t:?}"
                    ));
                }
            }
            None if ours == theirs => verbatim.push(name),
            None if unordered(&ours) == unordered(theirs) => order_only.push(name),
            None => failures.push(format!(
                "{name}: ours only {o:?}, LangGraph's only {t:?}\nours:\n{ours}\nLangGraph's:\n{theirs}"
            )),
        }
    }
    assert_eq!(seen.len(), MERMAID.len(), "a listed drawing is not a case");
    println!(
        "verbatim ({}): {verbatim:?}\n{} ({}): {order_only:?}",
        verbatim.len(),
        MERMAID_ORDER.1,
        order_only.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Behaviour does not depend on the backend: representative cases (a
/// Command's sends, an interrupt and its answer, RemainingSteps on resume,
/// a breakpoint and an edit, history, a join across a pause, messages, a
/// fork, subgraphs: an interrupt in a child and its resume, two and three
/// levels, a mapped child paused and resumed; and listed differences) on a
/// SQLite file give what they give in memory (a subgraph's steps are
/// logged, and replayed on resume, as on any store).
#[tokio::test]
async fn representative_cases_on_sqlite() {
    const ON_SQLITE: [&str; 16] = [
        "command_goto_send",
        "command_goto_from_interrupt_answer",
        "remaining_steps_after_resume",
        "interrupt_before_then_continue",
        "update_state_after_breakpoint_edit_then_continue",
        "update_state_paused_with_sibling_pending_writes",
        "history_with_interrupt_and_resume",
        "join_across_interrupt",
        "messages_after_resume",
        "fork_as_other_node_skips",
        "replay_before_step_with_pending_writes",
        "replay_finished_step",
        "subgraph_interrupt_in_child",
        "subgraph_interrupt_two_levels_deep",
        "subgraph_three_levels",
        "call_subgraph_interrupt_resume",
    ];
    let mut failures = Vec::new();
    for name in ON_SQLITE {
        let case = case(name);
        let result = match listed(name) {
            Some(listed) => check_listed(&case, listed, Backend::Sqlite).await,
            None => run_on(name, &case, Build::default(), Backend::Sqlite).await,
        };
        if let Err(failure) = result {
            failures.push(failure);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The comparison is not vacuous: a recording changed in any of the ways
/// it checks no longer matches.
#[tokio::test]
async fn a_wrong_recording_is_caught() {
    type Edit = (&'static str, &'static str, fn(&mut Value));
    let edits: [Edit; 15] = [
        ("command_goto_list_fan_out", "a goto's tasks", |c| {
            c["runs"][0]["supersteps"][1]["tasks"] = json!(["c", "b"]);
        }),
        (
            "remaining_steps_with_recursion_limit",
            "a remaining_steps value",
            |c| {
                c["runs"][0]["supersteps"][1]["updates"][0]["b"]["items"][0] = json!(4);
            },
        ),
        (
            "interrupt_before_then_continue",
            "next at a breakpoint",
            |c| {
                c["runs"][0]["after"]["next"] = json!(["b"]);
            },
        ),
        (
            "interrupt_before_then_continue",
            "a breakpoint's chunk",
            |c| {
                c["runs"][0]
                    .as_object_mut()
                    .expect("a run")
                    .remove("breakpoint_updates");
            },
        ),
        (
            "update_state_finished_as_middle_node",
            "next after update_state",
            |c| {
                c["runs"][1]["after"]["next"] = json!(["c"]);
            },
        ),
        (
            "update_state_unknown_node_error",
            "the node an error names",
            |c| {
                c["runs"][1]["error"] = json!("InvalidUpdateError: Node other does not exist");
            },
        ),
        ("history_linear_finished", "a history entry's next", |c| {
            c["runs"][1]["history"][1]["next"] = json!(["a"]);
        }),
        ("join_uneven_branches", "when a join fires", |c| {
            c["runs"][0]["supersteps"][2]["tasks"] = json!(["b3", "c"]);
        }),
        ("messages_parallel_nodes", "a message's node", |c| {
            c["runs"][0]["messages_stream"][0]["metadata"]["langgraph_node"] = json!("b");
        }),
        ("fork_as_other_node_skips", "what a fork runs", |c| {
            c["runs"][1]["supersteps"][0]["tasks"] = json!(["b"]);
        }),
        ("call_subgraph_other_schema", "a child's update", |c| {
            c["runs"][0]["supersteps"][0]["subgraphs"][0]["supersteps"][0]["updates"][0]["n1"]["notes"] =
                json!(["n0"]);
        }),
        ("call_subgraph_other_schema", "a child's state", |c| {
            c["runs"][0]["supersteps"][0]["subgraphs"][0]["supersteps"][1]["values"]["topic"] =
                json!("T");
        }),
        (
            "call_subgraph_interrupt_resume",
            "what runs in a child",
            |c| {
                c["runs"][1]["supersteps"][0]["subgraphs"][0]["supersteps"][0]["executed"] =
                    json!(["n1", "n2"]);
            },
        ),
        (
            "call_subgraph_interrupt_resume",
            "a child's namespace in the stream",
            |c| {
                c["runs"][1]["subgraph_updates"][0][0] = json!(["call:<gen:7>"]);
            },
        ),
        (
            "recursion_limit_in_subgraph",
            "a child's recursion limit",
            |c| {
                c["config"]["recursion_limit"] = json!(5);
            },
        ),
    ];
    for (name, what, edit) in edits {
        let mut edited = case(name);
        run_on(name, &edited, Build::default(), Backend::Memory)
            .await
            .unwrap_or_else(|e| panic!("{name} before the edit: {e}"));
        edit(&mut edited);
        let caught = run_on(name, &edited, Build::default(), Backend::Memory).await;
        assert!(caught.is_err(), "{name}: a wrong {what} was not caught");
    }
}
