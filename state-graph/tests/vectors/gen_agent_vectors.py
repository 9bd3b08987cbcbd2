"""Generate the agent-half conformance vectors (agent_graphs.json) by running real LangGraph.

Usage (with the venv of README.md):
    python state-graph/tests/vectors/gen_agent_vectors.py
Writes agent_graphs.json next to this file. Nothing in the output is hand-written: every
recorded outcome is what the installed langgraph did. Two runs give byte-identical output.

It extends gen_graph_vectors.py (whose building blocks it imports: the four-key state schema,
message encoding, update templates, routers, generated-id placeholders) with Command returns,
subgraphs, managed values (RemainingSteps), static breakpoints, update_state, state history,
replay and fork, streaming with subgraphs=True and the `messages` stream mode. The encoding is
described in FORMAT below (also copied into agent_graphs.json).

Every case is run several times on fresh savers:
  1. recorded: stream(X, config, stream_mode=["updates", "values", "debug"], subgraphs=True);
  2. invoke(): its return value / error must match the recorded `result` / `error`;
  3. (cases with a subgraph) stream(X, config, stream_mode="updates", subgraphs=True): its
     (namespace, chunk) pairs must be, as a multiset, the recorded `subgraph_updates`;
  4. (cases with "messages") stream(X, config, stream_mode="messages"), recorded.
"""

from __future__ import annotations

import json
import operator
import re
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_graph_vectors as base  # noqa: E402
from gen_graph_vectors import (  # noqa: E402
    SCHEMA,
    Gen,
    State,
    dec_update,
    enc,
    err_str,
    normalize_ids,
    router_targets,
    sort_key,
    subst,
    versions,
)
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.graph import StateGraph  # noqa: E402
from langgraph.managed import RemainingSteps  # noqa: E402
from langgraph.pregel._algo import task_path_str  # noqa: E402
from langgraph.types import Command, Send, StateSnapshot, interrupt  # noqa: E402

OUT = HERE / "agent_graphs.json"
THREAD = "t"
S, E = "__start__", "__end__"

FORMAT = r"""This file extends graphs.json (gen_graph_vectors.py): everything its `format` says about the
state schema, message encoding, node update templates, routers, supersteps, updates, values_stream,
checkpoints, result/error and "<gen:N>" placeholders holds here too, with the additions below.
A reader needs both texts; this one says only what is new or different.

SCHEMAS (`schemas`)
- "state": the four keys of graphs.json (last, items, meta, messages).
- "notes": {"notes": Annotated[list, operator.add], "topic": str (LastValue)}, used by children
  that a node invokes itself ("call_subgraph").
- A GRAPH whose "managed" is ["remaining_steps"] adds `remaining_steps: RemainingSteps` to its
  schema (langgraph.managed). It is not a channel: never saved, never in values, updates or
  get_state; a node (and a router) reads it from its input state. Its value is
  scratchpad.stop - scratchpad.step, where stop = (the step the run starts from) + recursion_limit + 1
  and the step a run starts from is the saved checkpoint's step + 1 (-1 on an empty thread, so a
  fresh run's first node step 1 sees recursion_limit - 1). A child graph counts its own steps.
  Without "recursion_limit" in the config LangGraph's default applies (10007 in 1.2.22).

GRAPH (every case's top level, and every "subgraph"/"call_subgraph" value) has all these keys:
- schema: "state" | "notes".
- managed: [] | ["remaining_steps"].
- nodes: name -> node spec, added in this order.
- edges, routers: as in graphs.json ("targets" filled in). A router may start at "__start__"
  (add_conditional_edges(START, ...)). Router "by": K where the state value of K is an integer
  (remaining_steps) routes by its decimal string (e.g. "2"); a string value as before.
- destinations: {node: [names]} passed as add_node(name, ..., destinations=tuple(names)); only
  for nodes listed. It only changes the drawing (mermaid); routing comes from the Command. It is
  filled in from the node's Command specs: every literal goto name and every Send target, in
  first-appearance order (a goto that is a template such as "$answer" has its destinations given
  by hand); Commands with graph PARENT give none (destinations must be nodes of the same graph).
- compile: {} or {"interrupt_before": [names] | "*", "interrupt_after": [names] | "*"} passed to
  compile(). The top-level graph is compiled with an InMemorySaver; a child is compiled without a
  checkpointer (it inherits the parent's and checkpoints under its own namespace).

NODE SPECS (besides null / update template / {"interrupt": [...], "then": T} of graphs.json)
- {"command": C}: the node returns Command(**kw) built from C:
  * "goto" (optional): a name | "__end__" | a list whose entries are names or
    {"send": W, "arg": A} (= Send(W, A)); substituted as a template first, so "$answer" can be
    the goto. Absent = no goto (Command's default ()).
  * "update" (optional): an update template (substituted, messages decoded), the Command's update.
  * "graph": "PARENT" (optional): Command(graph=Command.PARENT, ...): the update and goto are
    applied in the parent graph, as a write of the parent's task that runs this child.
- {"interrupt": [q...], "then": {"command": C}}: interrupts as before, then returns the Command
  (templates see the answers). "then" may be any node spec that is not itself an interrupt.
- {"subgraph": GRAPH}: add_node(name, compile(GRAPH)) - a compiled graph as the node. The child
  gets the parent's state (or the Send arg when the task is a Send) as its input and the task's
  update is the child's whole final state (every key of its schema that has a value; a reducer key
  is therefore added to again: items entries the child received come back and are appended).
- {"call_subgraph": GRAPH, "into": {child_key: parent_key}, "from": {parent_key: child_key}}:
  a node function that builds child_input = {ck: state[pk] for ck, pk in into if pk in state},
  calls compile(GRAPH).invoke(child_input) (no config passed: LangGraph makes it a subgraph of the
  running task, namespace "<node>:<task id>"), and returns {pk: out[ck] for pk, ck in from if ck in
  out}. The child usually has the "notes" schema. When the child interrupts, the node function is
  re-run from its start on resume and the child resumes from its own checkpoint.

TEMPLATES: the tokens of graphs.json plus `$remaining` (regex \$(item|answer[0-9]*|remaining)):
the node's remaining_steps (only when its GRAPH has managed remaining_steps; otherwise literal).
A string that is exactly "$remaining" becomes the integer, "a$remaining" the text "a5".

CONFIG: "config" as before (recursion_limit), thread_id "t". A run started from a past checkpoint
adds configurable.checkpoint_id (see replay/fork).

RUNS: requests applied in order on the thread. Run requests ({"input"}, {"resume"},
{"resume_map"}, "replay", "fork") are recorded with
graph.stream(X, config, stream_mode=["updates", "values", "debug"], subgraphs=True); the other
requests call the API named. Requests:
  {"input": V} / {"resume": V} / {"resume_map": {"<gen:N>": V}}: as in graphs.json.
  {"update_state": V, "as_node": N | null}: graph.update_state(thread config, V, as_node=N) (N
      null = not passed: LangGraph infers it). Recorded: "checkpoint" (the checkpoint the call
      returned, CKPT below) or "error", then "after".
  {"get_state_history": {"limit"?: n, "filter"?: {...}}}: list(graph.get_state_history(thread
      config, limit=n, filter=...)), newest first. Recorded: "history": [HIST].
  {"replay": {"step": S}}: the checkpoint is chosen on the current lineage: start at the thread's
      latest checkpoint (get_state(thread config)) and follow parent links; the first (newest)
      whose metadata step is S. Then stream(None, {thread_id: "t", checkpoint_id: that id, ...config}).
      Recorded: "from" (CKPT of the chosen checkpoint), then the run record.
  {"fork": {"step": S, "update": V, "as_node": N | null}}: the checkpoint is chosen as for replay;
      new = graph.update_state(that checkpoint's config, V, as_node=N); then stream(None, new config).
      Recorded: "from" (CKPT chosen), "checkpoint" (CKPT of the update_state result), then the run
      record.
"get_state" in a record ("after") is always of the thread (its latest checkpoint), never of the
checkpoint a replay/fork started from.

RUN RECORD (per run request), as in graphs.json with these changes:
- supersteps: the top-level graph's supersteps (as before), each possibly with
  * "subgraphs": [LEVEL + {"task": name, "ns": NS}] for every task of the step whose child graph
    streamed anything in this run (subgraph nodes and call_subgraph nodes), in the step's task
    order. NS is the child's checkpoint namespace: "<node>:<task id>", nested levels joined by "|"
    ("mid:<gen:1>|inner:<gen:2>"). A LEVEL is {"supersteps", "values_stream", "checkpoints",
    "breakpoint_updates"?} of that child, built exactly like the top level from the events of that
    namespace (steps are the child's own step numbers), recursively.
  * executed: a task counts as executed in this run if its node function started (also when it
    then interrupted, raised, or bubbled a Command.PARENT up), or, for a subgraph node, if its child
    streamed anything or the task reported a result. Child nodes are listed in the child LEVEL's
    own supersteps: on resume the child's finished nodes do not appear there again.
  * updates: as before; a child node that returned Command(graph=PARENT) gives no chunk in the
    child (its update is the parent task's chunk). A task with no chunk is simply absent.
- breakpoint_updates: (only if any) the updates chunks that belong to no task: the
  {"__interrupt__": []} chunk LangGraph streams when it stops at a static breakpoint
  (interrupt_before / interrupt_after, at any level: a child's breakpoint shows at the top level
  only). A breakpoint stop is not an interrupt: result has no "__interrupt__" key and "after" has
  no interrupts, but next is not empty.
- result: as before; the "__interrupt__" list is in task order (invoke() gives them in completion
  order; the check compares them as a set).
- after: get_state(thread config, subgraphs=True) as SNAP.
- subgraph_updates: (cases with a subgraph or call_subgraph node) the (namespace, chunk) pairs of
  stream(X, config, stream_mode="updates", subgraphs=True) as [[ns elements...], chunk], namespace
  [] for the top level, elements like "child:<gen:3>". Order: per top-level superstep, per task in
  write order: first the pairs of that task's child namespace (the same rule applied to the child's
  supersteps), then the task's own chunk; breakpoint chunks last. This equals LangGraph's emission
  order when nothing runs in parallel; a separate run in that exact stream mode must give the same
  multiset of pairs (checked).
- messages_stream: (cases with "messages") the pairs of a separate run of
  stream(X, config, stream_mode="messages") (subgraphs=True when the case says "subgraphs"):
  {"ns"?: [...], "message": MSG, "metadata": {all metadata keys, sorted}}. Keys seen:
  langgraph_step, langgraph_node, langgraph_triggers, langgraph_path, langgraph_checkpoint_ns,
  checkpoint_ns (only inside a subgraph: the child's namespace), thread_id ("t"), ls_integration
  ("langgraph"). No key was dropped; generated ids are "<gen:N>". Entries of one (parent namespace,
  langgraph_step) are stable-sorted by task path (parallel nodes finish in any order).

SNAP (a StateSnapshot): {"values", "next", "tasks": [TASK], "interrupts": [{"node", "value", "id"}],
  "metadata": {checkpoint metadata, keys sorted: "source", "step", "parents" ({parent ns: checkpoint
  id}, {} at the top level)}, "checkpoint_ns" ("" at the top level), "checkpoint_id",
  "parent_checkpoint_id" (null for the first checkpoint)}. created_at is dropped (a timestamp).
  TASK: {"name", "interrupts": [{"value", "id"}], "result"? (the task's saved writes when it
  finished in a step that is not committed: a sibling interrupted), "state"? (SNAP of the child
  when the task is a subgraph with a saved child checkpoint, i.e. paused inside)}. tasks are in
  write order (task path); "interrupts" lists them in that order with the task name.
CKPT: {"step", "source", "next", "metadata", "checkpoint_id", "parent_checkpoint_id"} of one
  checkpoint (get_state(its config)). source is "input" | "loop" | "update" | "fork".
HIST: {"step", "source", "next", "values", "interrupts": [{"node", "value", "id"}], "tasks":
  [names], "checkpoint_id", "parent_checkpoint_id", "parent_step" (the step of the parent
  checkpoint, null for the first)}. History snapshots do not apply pending writes (unlike get_state).

OTHER CASE KEYS
- mermaid: graph.get_graph().draw_mermaid(), verbatim. mermaid_xray: get_graph(xray=True) for
  cases with a subgraph or call_subgraph node.
- messages: "plain" | "subgraphs" when messages_stream is recorded.

Checkpoint ids (uuid6), interrupt ids, task ids inside namespaces and generated message ids are all
"<gen:N>", numbered by first appearance in the case in file order (equal N = equal id). Every case
is also run with invoke() on a fresh saver: its return value / error must match result / error.
"""

# --------------------------------------------------------------------------------------------
# Schemas
# --------------------------------------------------------------------------------------------


class StateRS(State, total=False):
    remaining_steps: RemainingSteps


class Notes(TypedDict, total=False):
    notes: Annotated[list, operator.add]
    topic: str


class NotesRS(Notes, total=False):
    remaining_steps: RemainingSteps


SCHEMAS = {
    ("state", ()): State,
    ("state", ("remaining_steps",)): StateRS,
    ("notes", ()): Notes,
    ("notes", ("remaining_steps",)): NotesRS,
}

AGENT_SCHEMAS = {
    "state": SCHEMA,
    "notes": {"notes": "Annotated[list, operator.add]", "topic": "str, no reducer (LastValue)"},
    "managed": {"remaining_steps": "RemainingSteps (langgraph.managed): not a channel, never saved"},
}

# --------------------------------------------------------------------------------------------
# Templates: the tokens of gen_graph_vectors.py plus $remaining
# --------------------------------------------------------------------------------------------

TOKEN = re.compile(r"\$(item|answer[0-9]*|remaining)")


def sub(t: Any, env: dict) -> Any:
    return subst(t, env, TOKEN)


def make_command(c: dict, env: dict) -> Command:
    kw: dict[str, Any] = {}
    if "goto" in c:
        g = sub(c["goto"], env)
        if isinstance(g, list):
            g = [Send(x["send"], x["arg"]) if isinstance(x, dict) else x for x in g]
        kw["goto"] = g
    if "update" in c:
        kw["update"] = dec_update(sub(c["update"], env))
    if c.get("graph") == "PARENT":
        kw["graph"] = Command.PARENT
    return Command(**kw)


def run_spec(spec: Any, env: dict) -> Any:
    if spec is None:
        return None
    if isinstance(spec, dict) and "interrupt" in spec:
        for i, q in enumerate(spec["interrupt"]):
            ans = interrupt(sub(q, env))
            env[f"$answer{i}"] = ans
            env["$answer"] = ans
        return run_spec(spec["then"], env)
    if isinstance(spec, dict) and "command" in spec:
        return make_command(spec["command"], env)
    return dec_update(sub(spec, env))


# --------------------------------------------------------------------------------------------
# Building a graph from data
# --------------------------------------------------------------------------------------------


def log_entry(name: str, config: dict) -> dict:
    md = config["metadata"]
    ns = md["langgraph_checkpoint_ns"]
    return {"id": ns.split("|")[-1].rsplit(":", 1)[1], "name": name,
            "path": tuple(md["langgraph_path"]), "ns": ns}


def node_env(state: Any) -> dict:
    env: dict[str, Any] = {}
    if isinstance(state, dict):
        if "item" in state:
            env["$item"] = state["item"]
        if "remaining_steps" in state:
            env["$remaining"] = state["remaining_steps"]
    return env


def make_node(name: str, spec: Any, log: list):
    def node(state, config):
        log.append(log_entry(name, config))
        return run_spec(spec, node_env(state))

    node.__name__ = f"node_{name}"
    return node


def make_call_node(name: str, spec: dict, log: list):
    child = compile_graph(spec["call_subgraph"], log, top=False)

    def node(state, config):
        log.append(log_entry(name, config))
        inp = {ck: state[pk] for ck, pk in spec["into"].items() if pk in state}
        out = child.invoke(inp)
        return {pk: out[ck] for pk, ck in spec["from"].items() if ck in out}

    node.__name__ = f"node_{name}"
    return node


def make_router(r: dict):
    if "send_each" in r:
        return base.make_router(r)
    by = r["by"]

    def route(state):
        m = base.LEN_RE.fullmatch(by)
        if m:
            key = str(len(state.get(m.group(1), [])))
        else:
            v = state.get(by)
            key = v if isinstance(v, str) else (str(v) if isinstance(v, int) and not isinstance(v, bool) else None)
        if key is not None and key in r["map"]:
            return r["map"][key]
        if "default" in r:
            return r["default"]
        raise KeyError(f"router from {r['from']!r}: no route for {key!r}")

    return route, router_targets(r)


def compile_graph(G: dict, log: list, top: bool):
    schema = SCHEMAS[(G.get("schema", "state"), tuple(G.get("managed", [])))]
    g = StateGraph(schema)
    dests = G["destinations"] if "destinations" in G else auto_destinations(G["nodes"])
    for name, spec in G["nodes"].items():
        kw = {"destinations": tuple(dests[name])} if name in dests else {}
        if isinstance(spec, dict) and "subgraph" in spec:
            g.add_node(name, compile_graph(spec["subgraph"], log, top=False), **kw)
        elif isinstance(spec, dict) and "call_subgraph" in spec:
            g.add_node(name, make_call_node(name, spec, log), **kw)
        else:
            g.add_node(name, make_node(name, spec, log), **kw)
    for src, dst in G.get("edges", []):
        g.add_edge(src, dst)
    for r in G.get("routers", []):
        fn, path_map = make_router(r)
        fn.__name__ = f"route_from_{r['from']}"
        g.add_conditional_edges(r["from"], fn, path_map)
    opts = dict(G.get("compile", {}))
    if top:
        return g.compile(checkpointer=InMemorySaver(), **opts)
    return g.compile(**opts)


def command_specs(spec: Any) -> list:
    """The Command specs a node spec can return (directly or after its interrupts)."""
    if isinstance(spec, dict) and "interrupt" in spec:
        return command_specs(spec["then"])
    if isinstance(spec, dict) and "command" in spec:
        return [spec["command"]]
    return []


def auto_destinations(nodes: dict) -> dict:
    out = {}
    for name, spec in nodes.items():
        names: list = []
        for c in command_specs(spec):
            if c.get("graph") == "PARENT" or "goto" not in c:
                continue
            g = c["goto"]
            for x in g if isinstance(g, list) else [g]:
                t = x["send"] if isinstance(x, dict) else x
                if t not in names and "$" not in t:
                    names.append(t)
        if names:
            out[name] = names
    return out


def norm_graph(G: dict) -> dict:
    """The GRAPH as recorded: every key present, router targets and destinations filled in."""
    nodes = {}
    for name, spec in G["nodes"].items():
        if isinstance(spec, dict) and "subgraph" in spec:
            spec = {**spec, "subgraph": norm_graph(spec["subgraph"])}
        elif isinstance(spec, dict) and "call_subgraph" in spec:
            spec = {**spec, "call_subgraph": norm_graph(spec["call_subgraph"])}
        nodes[name] = spec
    out = {"schema": G.get("schema", "state"), "managed": list(G.get("managed", [])), "nodes": nodes,
           "edges": [list(e) for e in G.get("edges", [])],
           "routers": [{**r, "targets": router_targets(r)} for r in G.get("routers", [])],
           "destinations": G.get("destinations", auto_destinations(G["nodes"])),
           "compile": dict(G.get("compile", {}))}
    return out


def has_subgraph(G: dict) -> bool:
    for spec in G["nodes"].values():
        if isinstance(spec, dict) and ("subgraph" in spec or "call_subgraph" in spec):
            return True
    return False


# --------------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------------


def enc_interrupts(ints) -> list:
    return [{"value": enc(i.value), "id": i.id} for i in ints]


def task_sort(t) -> str:
    return sort_key(tuple(t.path))


def enc_metadata(md: dict) -> dict:
    return {k: enc(v) for k, v in sorted(md.items())}


def snap_rec(st: StateSnapshot) -> dict:
    """A StateSnapshot (get_state(config, subgraphs=True)) as recorded."""
    tasks = []
    flat = []
    for t in sorted(st.tasks, key=task_sort):
        tr: dict[str, Any] = {"name": t.name, "interrupts": enc_interrupts(t.interrupts)}
        if t.result is not None:
            tr["result"] = enc(t.result)
        if isinstance(t.state, StateSnapshot):
            tr["state"] = snap_rec(t.state)
        tasks.append(tr)
        for i in t.interrupts:
            flat.append({"node": t.name, "value": enc(i.value), "id": i.id})
    conf = st.config["configurable"] if st.config else {}
    pconf = st.parent_config["configurable"] if st.parent_config else {}
    return {"values": enc(st.values), "next": list(st.next), "tasks": tasks, "interrupts": flat,
            "metadata": enc_metadata(st.metadata or {}),
            "checkpoint_ns": conf.get("checkpoint_ns"), "checkpoint_id": conf.get("checkpoint_id"),
            "parent_checkpoint_id": pconf.get("checkpoint_id")}


def after_rec(app, cfg) -> dict:
    try:
        return snap_rec(app.get_state(cfg, subgraphs=True))
    except Exception as e:  # noqa: BLE001
        return {"error": err_str(e)}


class Level:
    """The events of one namespace of one run."""

    def __init__(self):
        self.events: list = []  # (mode, data)


def build_level(ns: tuple, levels: dict, ctx: dict) -> dict:
    evs = levels[ns].events if ns in levels else []
    log_now = ctx["log_now"]
    steps: dict[int, dict] = {}
    step_order: list[int] = []
    checkpoints = []
    values_chunks = []
    ckpt_values: dict[int, Any] = {}
    cur = None
    loose_updates = []  # updates chunks emitted while no step is open (breakpoints)
    for mode, data in evs:
        if mode == "debug":
            typ = data["type"]
            p = data["payload"]
            if typ == "checkpoint":
                checkpoints.append(
                    {"step": data["step"], "source": p["metadata"]["source"], "next": list(p["next"])}
                )
                if cur is not None and data["step"] == cur and cur not in ckpt_values:
                    ckpt_values[cur] = p["values"]
            else:
                s = data["step"]
                if s not in steps:
                    steps[s] = {"tasks": {}, "results": {}, "updates": []}
                    step_order.append(s)
                cur = s
                if typ == "task":
                    steps[s]["tasks"][p["id"]] = p
                else:
                    steps[s]["results"][p["id"]] = p
        elif mode == "updates":
            if cur is None:
                loose_updates.append(data)
            else:
                steps[cur]["updates"].append(data)
        elif mode == "values":
            values_chunks.append((data, cur))
        else:
            raise AssertionError(mode)

    paths = ctx["paths"]

    def path_of(p) -> tuple:
        if p["id"] in paths:
            return paths[p["id"]]
        assert "__pregel_push" not in p["triggers"], p
        return ("__pregel_pull", p["name"])

    interrupt_task: dict[str, tuple] = {}
    supersteps = []
    all_interrupts = []
    for s in step_order:
        st = steps[s]
        ordered = sorted(st["tasks"].values(), key=lambda p: sort_key(path_of(p)))
        rec: dict[str, Any] = {"step": s, "tasks": [p["name"] for p in ordered]}
        push = [p for p in ordered if path_of(p)[0] == "__pregel_push"]
        if push:
            rec["send_args"] = [enc(p["input"]) for p in push]
        child_segs = {cns[-1] for cns in levels if len(cns) == len(ns) + 1 and cns[: len(ns)] == ns}
        ran_ids = set(st["results"]) | {p["id"] for p in ordered if p["id"] in log_now
                                        or f"{p['name']}:{p['id']}" in child_segs}
        rec["executed"] = [p["name"] for p in ordered if p["id"] in ran_ids]
        remaining = list(st["updates"])
        upd = []
        step_ints = []
        for p in ordered:
            tid, name = p["id"], p["name"]
            res = st["results"].get(tid)
            if res is not None:
                if res["interrupts"]:
                    ids = [i["id"] for i in res["interrupts"]]
                    want = lambda c, ids=ids: "__interrupt__" in c and [i.id for i in c["__interrupt__"]] == ids  # noqa: E731
                    for i in res["interrupts"]:
                        interrupt_task[i["id"]] = path_of(p)
                        step_ints.append({"node": name, "value": enc(i["value"]), "id": i["id"]})
                elif res["error"]:
                    continue
                else:
                    exp = enc(res["result"]) or None
                    want = lambda c, name=name, exp=exp: (  # noqa: E731
                        set(c) == {name} and enc(c[name]) == exp
                    )
            elif tid in ran_ids:
                continue  # ran but bubbled up (Command.PARENT): no chunk at this level
            else:
                exp = ctx["saved_results"].get(tid)
                want = lambda c, name=name, exp=exp: (  # noqa: E731
                    set(c) == {name, "__metadata__"} and (exp is None or enc(c[name]) == enc(exp))
                )
            for k, c in enumerate(remaining):
                if want(c):
                    upd.append((tid, c))
                    del remaining[k]
                    break
            else:
                raise AssertionError(f"no updates chunk for task {name} in step {s} of {ns}: {st['updates']} {res}")
        rest = [c for c in remaining if set(c) == {"__interrupt__"} and not c["__interrupt__"]]
        assert len(rest) == len(remaining), (ns, s, remaining)
        loose_updates.extend(rest)
        rec["updates"] = [enc(c) for _, c in upd]
        if step_ints:
            rec["interrupts"] = step_ints
            all_interrupts.extend(step_ints)
        rec["values"] = enc(ckpt_values.get(s))
        # child namespaces started by this step's tasks
        subs = []
        for p in ordered:
            seg = f"{p['name']}:{p['id']}"
            for cns in sorted(levels):
                if len(cns) == len(ns) + 1 and cns[: len(ns)] == ns and cns[-1] == seg:
                    child = build_level(cns, levels, ctx)
                    subs.append({"task": p["name"], "ns": "|".join(cns), **child})
        if subs:
            rec["subgraphs"] = subs
        rec["@upd"] = upd
        rec["@tids"] = [p["id"] for p in ordered]
        supersteps.append(rec)

    # values stream: interrupt chunks of one step in task order
    canon = []
    i = 0
    while i < len(values_chunks):
        c, _ = values_chunks[i]
        if not (isinstance(c, dict) and c.get("__interrupt__")):
            canon.append(c)
            i += 1
            continue
        j = i
        group = []
        while j < len(values_chunks) and isinstance(values_chunks[j][0], dict) and values_chunks[j][0].get("__interrupt__"):
            group.append(values_chunks[j][0])
            j += 1
        group.sort(key=lambda c: sort_key(interrupt_task[c["__interrupt__"][0].id]))
        canon.extend(group)
        i = j
    out = {"supersteps": supersteps, "values_stream": [enc(c) for c in canon], "checkpoints": checkpoints,
           "@interrupts": all_interrupts}
    if loose_updates:
        out["breakpoint_updates"] = [enc(c) for c in loose_updates]
    return out


def pairs_of(level: dict, ns: list) -> list:
    """(namespace, chunk) pairs of stream_mode="updates", subgraphs=True in the canonical order:
    per superstep, per task in write order, the pairs of the task's child namespace (same rule,
    recursively) and then the task's own chunk; the level's breakpoint chunks last."""
    out = []
    for s in level["supersteps"]:
        subs = {x["ns"].split("|")[-1].rsplit(":", 1)[1]: x for x in s.get("subgraphs", [])}
        chunks = dict(s["@upd"])
        for tid in s["@tids"]:
            if tid in subs:
                x = subs[tid]
                out.extend(pairs_of(x, x["ns"].split("|")))
            if tid in chunks:
                out.append([list(ns), enc(chunks[tid])])
    for c in level.get("breakpoint_updates", []):
        out.append([list(ns), c])
    return out


def strip_private(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: strip_private(x) for k, x in v.items() if not k.startswith("@")}
    if isinstance(v, list):
        return [strip_private(x) for x in v]
    return v


def record_run(app, run_cfg, thread_cfg, pyinput, log: list) -> dict:
    events = []
    error = None
    start = len(log)
    try:
        for ev in app.stream(pyinput, run_cfg, stream_mode=["updates", "values", "debug"], subgraphs=True):
            events.append(ev)
    except Exception as e:  # noqa: BLE001 - recorded
        error = err_str(e)
    log_now = {x["id"] for x in log[start:]}
    paths = {x["id"]: x["path"] for x in log}
    saved_results: dict[str, Any] = {}
    try:
        for snap in app.get_state_history(thread_cfg):
            for t in snap.tasks:
                paths.setdefault(t.id, tuple(t.path))
                if t.result is not None:
                    saved_results.setdefault(t.id, t.result)
    except Exception:  # noqa: BLE001
        pass
    levels: dict[tuple, Level] = {}
    for ns, mode, data in events:
        levels.setdefault(tuple(ns), Level()).events.append((mode, data))
    ctx = {"log_now": log_now, "paths": paths, "saved_results": saved_results}
    root = build_level((), levels, ctx)
    out: dict[str, Any] = {"supersteps": root["supersteps"], "values_stream": root["values_stream"],
                           "checkpoints": root["checkpoints"]}
    if "breakpoint_updates" in root:
        out["breakpoint_updates"] = root["breakpoint_updates"]
    if error is not None:
        out["error"] = error
    else:
        vs = root["values_stream"]
        latest = vs[-1] if vs else None
        ints = root["@interrupts"]
        if ints:
            iv = [{"value": x["value"], "id": x["id"]} for x in ints]
            latest = {**latest, "__interrupt__": iv} if isinstance(latest, dict) else {"__interrupt__": iv}
        out["result"] = latest
    out["@pairs"] = pairs_of(root, [])
    out["after"] = after_rec(app, thread_cfg)
    return out


# --------------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------------


def lineage_checkpoint(app, thread_cfg, step: int) -> dict:
    """The checkpoint chosen for {"replay"/"fork": {"step": S}}: from the thread's latest
    checkpoint, follow parent links; the first (newest) whose metadata step is S."""
    st = app.get_state(thread_cfg)
    while st is not None:
        if st.metadata["step"] == step:
            return st.config
        if st.parent_config is None:
            break
        st = app.get_state(st.parent_config)
    raise AssertionError(f"no checkpoint with step {step} on the lineage")


def ckpt_rec(app, c: dict) -> dict:
    st = app.get_state(c)
    conf = st.config["configurable"]
    return {"step": st.metadata["step"], "source": st.metadata["source"], "next": list(st.next),
            "metadata": enc_metadata(st.metadata), "checkpoint_id": conf["checkpoint_id"],
            "parent_checkpoint_id": st.parent_config["configurable"]["checkpoint_id"] if st.parent_config else None}


def history_rec(app, thread_cfg, spec: dict) -> list:
    kw = {}
    if "limit" in spec:
        kw["limit"] = spec["limit"]
    if "filter" in spec:
        kw["filter"] = spec["filter"]
    all_steps = {h.config["configurable"]["checkpoint_id"]: h.metadata["step"] for h in app.get_state_history(thread_cfg)}
    out = []
    for h in app.get_state_history(thread_cfg, **kw):
        pid = h.parent_config["configurable"]["checkpoint_id"] if h.parent_config else None
        ints = []
        for t in sorted(h.tasks, key=task_sort):
            for i in t.interrupts:
                ints.append({"node": t.name, "value": enc(i.value), "id": i.id})
        out.append({"step": h.metadata["step"], "source": h.metadata["source"], "next": list(h.next),
                    "values": enc(h.values), "interrupts": ints,
                    "tasks": [t.name for t in sorted(h.tasks, key=task_sort)],
                    "checkpoint_id": h.config["configurable"]["checkpoint_id"], "parent_checkpoint_id": pid,
                    "parent_step": all_steps.get(pid)})
    return out


def run_input(app, cfg, req: dict):
    """(python input for a stream/invoke, config to run with, recorded request) of a run request;
    None for requests that are not runs."""
    if "input" in req:
        return dec_update(req["input"]), cfg, {"input": req["input"]}
    if "resume" in req:
        return Command(resume=req["resume"]), cfg, {"resume": req["resume"]}
    if "resume_by_value" in req:
        by_value = {}
        for i in app.get_state(cfg).interrupts:
            assert i.value not in by_value, "interrupt values must be unique to resume by value"
            by_value[i.value] = i.id
        mapping = {by_value[k]: v for k, v in req["resume_by_value"].items()}
        return Command(resume=mapping), cfg, {"resume_map": dict(mapping)}
    return None


def apply_request(app, cfg, req: dict, log: list, record: bool) -> dict:
    """Applies one request; returns its record (record=False: only what the cross-checks need)."""
    r = run_input(app, cfg, req)
    if r is not None:
        pyinput, run_cfg, recorded = r
        if not record:
            return {"run": (pyinput, run_cfg)}
        return {**recorded, **record_run(app, run_cfg, cfg, pyinput, log)}
    if "update_state" in req:
        rec: dict[str, Any] = {"update_state": req["update_state"], "as_node": req.get("as_node")}
        try:
            nc = app.update_state(cfg, dec_update(req["update_state"]), as_node=req.get("as_node"))
            rec["checkpoint"] = ckpt_rec(app, nc)
        except Exception as e:  # noqa: BLE001
            rec["error"] = err_str(e)
        rec["after"] = after_rec(app, cfg)
        return rec
    if "get_state_history" in req:
        spec = req["get_state_history"]
        return {"get_state_history": spec, "history": history_rec(app, cfg, spec)}
    if "replay" in req:
        step = req["replay"]["step"]
        c = lineage_checkpoint(app, cfg, step)
        run_cfg = {**cfg, "configurable": {**cfg["configurable"], **c["configurable"]}}
        if not record:
            return {"run": (None, run_cfg)}
        rec = {"replay": req["replay"], "from": ckpt_rec(app, c)}
        return {**rec, **record_run(app, run_cfg, cfg, None, log)}
    if "fork" in req:
        f = req["fork"]
        c = lineage_checkpoint(app, cfg, f["step"])
        rec = {"fork": f, "from": ckpt_rec(app, c)}
        nc = app.update_state(c, dec_update(f.get("update")), as_node=f.get("as_node"))
        run_cfg = {**cfg, "configurable": {**cfg["configurable"], **nc["configurable"]}}
        if not record:
            return {"run": (None, run_cfg)}
        rec["checkpoint"] = ckpt_rec(app, nc)
        return {**rec, **record_run(app, run_cfg, cfg, None, log)}
    raise ValueError(req)


# --------------------------------------------------------------------------------------------
# Extra passes: invoke(), updates with subgraphs, messages
# --------------------------------------------------------------------------------------------


def check_invoke(case: dict, runs: list) -> None:
    log: list = []
    app = compile_graph(case["graph"], log, top=True)
    cfg = make_config(case)
    for req, rec in zip(case["runs"], runs):
        r = apply_request(app, cfg, req, log, record=False)
        if "run" not in r:
            continue
        pyinput, run_cfg = r["run"]
        try:
            got = {"result": enc(app.invoke(pyinput, run_cfg))}
        except Exception as e:  # noqa: BLE001
            got = {"error": err_str(e)}
        want = {k: rec[k] for k in ("result", "error") if k in rec}
        if unordered_interrupts(got) != unordered_interrupts(want):
            raise AssertionError(f"{case['name']}: invoke gave {got}, stream recorded {want}")


def unordered_interrupts(v: dict) -> Any:
    """invoke() lists the interrupts of parallel tasks in completion order: compare them as a set."""
    v = normalize_ids(v)
    r = v.get("result")
    if isinstance(r, dict) and "__interrupt__" in r:
        v["result"] = {**r, "__interrupt__": sorted(r["__interrupt__"], key=canon)}
    return v


def canon(v: Any) -> str:
    return json.dumps(normalize_ids(v), sort_keys=True)


def check_updates_pairs(case: dict, runs: list) -> None:
    log: list = []
    app = compile_graph(case["graph"], log, top=True)
    cfg = make_config(case)
    for req, rec in zip(case["runs"], runs):
        r = apply_request(app, cfg, req, log, record=False)
        if "run" not in r:
            continue
        pyinput, run_cfg = r["run"]
        got = []
        try:
            for ns, chunk in app.stream(pyinput, run_cfg, stream_mode="updates", subgraphs=True):
                got.append([list(ns), enc(chunk)])
        except Exception:  # noqa: BLE001
            pass
        a = sorted(canon(x) for x in got)
        b = sorted(canon(x) for x in rec["@pairs"])
        if a != b:
            raise AssertionError(f"{case['name']}: updates pairs differ:\n{got}\n{rec['_pairs']}")


def messages_pass(case: dict) -> list:
    log: list = []
    app = compile_graph(case["graph"], log, top=True)
    cfg = make_config(case)
    subgraphs = case["messages"] == "subgraphs"
    out = []
    for req in case["runs"]:
        r = apply_request(app, cfg, req, log, record=False)
        if "run" not in r:
            out.append(None)
            continue
        pyinput, run_cfg = r["run"]
        got = []
        try:
            for ev in app.stream(pyinput, run_cfg, stream_mode="messages", subgraphs=subgraphs):
                ns, (msg, md) = ev if subgraphs else ((), ev)
                rec = {"message": enc(msg), "metadata": {k: enc(md[k]) for k in sorted(md)}}
                if subgraphs:
                    rec = {"ns": list(ns), **rec}
                got.append(rec)
        except Exception as e:  # noqa: BLE001
            got.append({"error": err_str(e)})
        # messages of parallel tasks of one step come in completion order: stable-sort each run of
        # entries of the same (parent namespace, step) by the task path
        def grp(x):
            m = x.get("metadata", {})
            return (m.get("langgraph_checkpoint_ns", "").rsplit("|", 1)[0] if "|" in m.get("langgraph_checkpoint_ns", "") else "",
                    m.get("langgraph_step"))
        res = []
        i = 0
        while i < len(got):
            j = i
            while j < len(got) and grp(got[j]) == grp(got[i]):
                j += 1
            res.extend(sorted(got[i:j], key=lambda x: task_path_str(tuple(x["metadata"].get("langgraph_path", ())))))
            i = j
        out.append(res)
    return out


# --------------------------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------------------------


def make_config(case: dict) -> dict:
    return {"configurable": {"thread_id": THREAD}, **case.get("config", {})}


def run_case(case: dict) -> dict:
    log: list = []
    app = compile_graph(case["graph"], log, top=True)
    cfg = make_config(case)
    runs = [apply_request(app, cfg, req, log, record=True) for req in case["runs"]]
    check_invoke(case, runs)
    sub = has_subgraph(case["graph"])
    if sub:
        check_updates_pairs(case, runs)
    out: dict[str, Any] = {"name": case["name"], "group": case["group"]}
    out.update(norm_graph(case["graph"]))
    if "config" in case:
        out["config"] = case["config"]
    for r in runs:
        if sub and "@pairs" in r:
            r["subgraph_updates"] = r["@pairs"]
    if case.get("messages"):
        for r, m in zip(runs, messages_pass(case)):
            if m is not None:
                r["messages_stream"] = m
    out["runs"] = strip_private(runs)
    out["mermaid"] = app.get_graph().draw_mermaid()
    if sub:
        out["mermaid_xray"] = app.get_graph(xray=True).draw_mermaid()
    if "note" in case:
        out["note"] = case["note"]
    return Gen().walk(out)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

CASES: list[dict] = []


def chain(*names):
    return [[a, b] for a, b in zip(names, names[1:])]


def I(x):  # noqa: E743 - a run with input x
    return {"input": x}


def G(nodes, edges=(), routers=(), **kw) -> dict:
    return {"nodes": nodes, "edges": [list(e) for e in edges], "routers": list(routers), **kw}


def case(group, name, graph, runs=None, config=None, note=None, messages=None):
    c = {"group": group, "name": name, "graph": graph, "runs": runs if runs is not None else [I({})]}
    if config:
        c["config"] = config
    if note:
        c["note"] = note
    if messages:
        c["messages"] = messages
    CASES.append(c)


def U(name):  # the usual update template: append the node's name to items
    return {"items": [name]}


def CMD(goto=None, update=None, parent=False):
    c: dict = {}
    if goto is not None:
        c["goto"] = goto
    if update is not None:
        c["update"] = update
    if parent:
        c["graph"] = "PARENT"
    return {"command": c}


def ASK(q, then):
    return {"interrupt": [q], "then": then}


def SUB(graph):
    return {"subgraph": graph}


def SEND(w, item):
    return {"send": w, "arg": {"item": item}}


def AI(id_, text):
    return {"type": "ai", "id": id_, "content": text}


HIST = {"get_state_history": {}}

# 1. Command --------------------------------------------------------------------------------

case("command", "command_goto_single",
     G({"a": CMD("b", U("a")), "b": U("b"), "c": U("c")}, [[S, "a"], ["b", E], ["c", E]]),
     note="a has no outgoing edge: only its Command routes; c is never reached")

case("command", "command_goto_list_fan_out",
     G({"a": CMD(["c", "b"], {"last": "a"}), "b": U("b"), "c": U("c")}, [[S, "a"], ["b", E], ["c", E]]),
     note="goto order c, b; the step's writes are applied b, c (code point order)")

case("command", "command_goto_end_with_static_edge",
     G({"a": CMD(E, U("a")), "b": U("b")}, chain(S, "a", "b", E)),
     note="Command(goto=END) does not cancel the static edge a -> b: b still runs")

case("command", "command_update_only_no_goto",
     G({"a": CMD(update={"last": "a", "items": ["a"]}), "b": U("b")}, chain(S, "a", "b", E)))

case("command", "command_goto_send",
     G({"a": CMD([SEND("w", "1"), SEND("w", "2")], {"last": "a"}), "w": {"items": ["w-$item"]}},
       [[S, "a"], ["w", E]]))

case("command", "command_goto_names_and_sends_mixed",
     G({"a": CMD([SEND("w", "x"), "zz", SEND("w", "y")]), "zz": U("zz"), "w": {"items": ["w-$item"]}},
       [[S, "a"], ["zz", E], ["w", E]]),
     note="pull task zz is applied before the Send tasks, which keep their goto order")

case("command", "command_and_router_from_same_node",
     G({"a": CMD("b", {"last": "x"}), "b": U("b"), "c": U("c")}, [[S, "a"], ["b", E], ["c", E]],
       [{"from": "a", "by": "last", "map": {"x": "c"}, "default": E}]),
     note="both the Command's goto (b) and the conditional edge (c, reading the Command's update) apply")

case("command", "command_goto_from_interrupt_answer",
     G({"a": ASK("route?", CMD("$answer", {"last": "$answer"})), "b": U("b"), "c": U("c")},
       [[S, "a"], ["b", E], ["c", E]], destinations={"a": ["b", "c"]}),
     runs=[I({}), {"resume": "c"}],
     note="the human picks the route: goto is the resume value")

case("command", "command_loop_until_len",
     G({"a": CMD("b", U("a")), "b": U("b")}, [[S, "a"]],
       [{"from": "b", "by": "len(items)", "map": {"6": E}, "default": "a"}]),
     note="a -> b by Command, b -> a by router until items has 6 entries")

case("command", "command_goto_self_send_same_node_twice",
     G({"a": CMD([SEND("w", "1"), "w"]), "w": {"items": ["w-$item"]}}, [[S, "a"], ["w", E]]),
     note="w is both pulled (goto 'w', no $item) and sent in one step: it runs twice")

case("command", "command_parallel_nodes_both_goto_same",
     G({"a": CMD("c", U("a")), "b": CMD("c", U("b")), "c": U("c")}, [[S, "a"], [S, "b"], ["c", E]]),
     note="two Commands to the same node in one step: c runs once")

# 2. Subgraphs ------------------------------------------------------------------------------

CHILD2 = G({"ca": U("ca"), "cb": U("cb")}, chain(S, "ca", "cb", E))

case("subgraph", "subgraph_child_order_in_parent_step",
     G({"child": SUB(CHILD2), "p": U("p"), "z": U("z")},
       [[S, "child"], [S, "p"], [["child", "p"], "z"], ["z", E]]),
     runs=[I({"items": ["in"]})],
     note="the child's two supersteps run inside parent step 1, beside p; the child returns its whole "
          "state, so the parent's items reducer appends the child's copy of the input too")

case("subgraph", "subgraph_lastvalue_two_child_steps",
     G({"child": SUB(G({"c1": {"last": "c1"}, "c2": {"last": "c2"}}, chain(S, "c1", "c2", E))),
        "z": {"items": ["z:$item"]}},
       chain(S, "child", "z", E)),
     runs=[I({"last": "in"})],
     note="the child writes last in two consecutive steps: no conflict; the parent gets the child's final value")

case("subgraph", "subgraph_three_levels",
     G({"top": U("top"),
        "mid": SUB(G({"m1": U("m1"),
                      "inner": SUB(G({"i1": U("i1"), "i2": {"last": "i2"}}, chain(S, "i1", "i2", E))),
                      "m2": U("m2")}, chain(S, "m1", "inner", "m2", E))),
        "fin": U("fin")},
       chain(S, "top", "mid", "fin", E)))

case("subgraph", "subgraph_command_parent_handoff",
     G({"child": SUB(G({"h": CMD("z", {"last": "handoff", "items": ["h"]}, parent=True), "h2": U("h2")},
                       chain(S, "h", "h2", E))),
        "y": U("y"), "z": U("z")},
       [[S, "child"], ["child", "y"], ["y", E], ["z", E]]),
     note="the child stops at h (h2 never runs); the parent applies h's update as the child task's "
          "write and runs both z (goto) and y (the child's static edge)")

case("subgraph", "subgraph_handoff_after_child_step",
     G({"child": SUB(G({"c1": U("c1"), "h": CMD("z", {"last": "handoff"}, parent=True)},
                       chain(S, "c1", "h", E))),
        "z": U("z")},
       [[S, "child"], ["z", E]]),
     runs=[I({"items": ["in"]})],
     note="what c1 wrote inside the child is lost: the parent only gets the Command's update")

case("subgraph", "subgraph_interrupt_in_child",
     G({"a": U("a"),
        "child": SUB(G({"ca": U("ca"), "cb": ASK("q", {"items": ["cb:$answer"]}), "cc": {"last": "cc"}},
                       chain(S, "ca", "cb", "cc", E))),
        "z": U("z")},
       chain(S, "a", "child", "z", E)),
     runs=[I({}), {"resume": "A"}],
     note="resume on the parent thread answers the child's interrupt; ca does not run again")

case("subgraph", "subgraph_interrupt_two_levels_deep",
     G({"mid": SUB(G({"m1": U("m1"),
                      "inner": SUB(G({"i1": U("i1"), "i2": ASK("deep?", {"last": "$answer"})}, chain(S, "i1", "i2", E))),
                      "m2": U("m2")}, chain(S, "m1", "inner", "m2", E))),
        "fin": U("fin")},
       chain(S, "mid", "fin", E)),
     runs=[I({}), {"resume": "D"}])

case("subgraph", "subgraph_interrupt_with_parent_sibling",
     G({"child": SUB(G({"ca": U("ca"), "cb": ASK("qc", {"items": ["cb:$answer"]})}, chain(S, "ca", "cb", E))),
        "p": ASK("qp", {"items": ["p:$answer"]}), "s": U("s"), "z": U("z")},
       [[S, "child"], [S, "p"], [S, "s"], [["child", "p", "s"], "z"], ["z", E]]),
     runs=[I({}), {"resume_by_value": {"qc": "C"}}, {"resume_by_value": {"qp": "P"}}],
     note="resume by id in a child: the first resume answers only the child; p interrupts again with the same id")

case("subgraph", "subgraph_resume_both_by_id",
     G({"child": SUB(G({"cb": ASK("qc", {"items": ["cb:$answer"]})}, chain(S, "cb", E))),
        "p": ASK("qp", {"items": ["p:$answer"]})},
       [[S, "child"], [S, "p"], ["child", E], ["p", E]]),
     runs=[I({}), {"resume_by_value": {"qp": "P", "qc": "C"}}])

case("subgraph", "subgraph_sent_twice_parallel_namespaces",
     G({"a": CMD([{"send": "child", "arg": {"items": ["s1"]}}, {"send": "child", "arg": {"items": ["s2"]}}]),
        "child": SUB(G({"c": {"items": ["c"]}}, chain(S, "c", E))), "z": U("z")},
       [[S, "a"], ["child", "z"], ["z", E]]),
     note="two instances of the same subgraph in one step, each with its own namespace (task id); "
          "each child starts from its Send arg, not from the parent state")

case("subgraph", "subgraph_sent_twice_lastvalue_conflict",
     G({"a": CMD([{"send": "child", "arg": {"last": "s1"}}, {"send": "child", "arg": {"last": "s2"}}]),
        "child": SUB(G({"c": {"items": ["c"]}}, chain(S, "c", E))), "z": U("z")},
       [[S, "a"], ["child", "z"], ["z", E]]),
     note="each child returns its whole state, last included: two writes to last in one step")

case("subgraph", "subgraph_breakpoint_inside_child",
     G({"child": SUB(G({"ca": U("ca"), "cb": U("cb")}, chain(S, "ca", "cb", E), compile={"interrupt_before": ["cb"]})),
        "z": U("z")},
       chain(S, "child", "z", E)),
     runs=[I({}), I(None)],
     note="a child compiled with interrupt_before pauses the parent too; invoke(None) continues it")

case("subgraph", "call_subgraph_other_schema",
     G({"research": {"call_subgraph": G({"n1": {"notes": ["n1"]}, "n2": {"notes": ["n2"], "topic": "done"}},
                                         chain(S, "n1", "n2", E), schema="notes"),
                     "into": {"topic": "last", "notes": "items"}, "from": {"items": "notes", "last": "topic"}}},
       chain(S, "research", E)),
     runs=[I({"last": "T", "items": ["i"]})],
     note="the node maps last->topic and items->notes into the child, and notes->items, topic->last out "
          "(items is then appended to: the input entry appears twice)")

case("subgraph", "call_subgraph_interrupt_resume",
     G({"call": {"call_subgraph": G({"n1": {"notes": ["n1"]}, "n2": ASK("nq", {"notes": ["n2:$answer"]})},
                                    chain(S, "n1", "n2", E), schema="notes"),
                 "into": {"topic": "last"}, "from": {"items": "notes"}}},
       chain(S, "call", E)),
     runs=[I({"last": "T"}), {"resume": "R"}],
     note="on resume the calling node runs again from its start, the child resumes at n2 (n1 is not re-run)")

case("subgraph", "subgraph_handoff_from_two_levels_deep",
     G({"mid": SUB(G({"inner": SUB(G({"h": CMD("m2", {"last": "up-one"}, parent=True)}, chain(S, "h", E))),
                      "m2": U("m2")}, [[S, "inner"], ["m2", E]])),
        "z": U("z")},
       chain(S, "mid", "z", E)),
     note="Command.PARENT goes one level up: to mid's node m2, not to the top graph")

# 3. Managed values (RemainingSteps) -----------------------------------------------------------

LOOP_RS = G({"a": {"items": ["a$remaining"]}}, [[S, "a"]],
            [{"from": "a", "by": "remaining_steps", "map": {"2": E}, "default": "a"}],
            managed=["remaining_steps"])

case("managed", "remaining_steps_default_limit",
     G({"a": {"items": ["$remaining"]}, "b": {"items": ["$remaining"]}}, chain(S, "a", "b", E),
       managed=["remaining_steps"]),
     note="no recursion_limit in the config: LangGraph's default (10007 in 1.2.22)")

case("managed", "remaining_steps_with_recursion_limit",
     G({"a": {"items": ["$remaining"]}, "b": {"items": ["$remaining"]}, "c": {"items": ["$remaining"]}},
       chain(S, "a", "b", "c", E), managed=["remaining_steps"]),
     config={"recursion_limit": 5})

case("managed", "remaining_steps_router_stops_loop",
     LOOP_RS, config={"recursion_limit": 6},
     note="the router reads remaining_steps (as a decimal string) and ends the loop at 2")

case("managed", "remaining_steps_parallel_same_value",
     G({"a": {"items": ["a$remaining"]}, "b": {"items": ["b$remaining"]}}, [[S, "a"], [S, "b"], ["a", E], ["b", E]],
       managed=["remaining_steps"]),
     config={"recursion_limit": 4})

case("managed", "remaining_steps_after_resume",
     G({"a": ASK("q", {"items": ["a$remaining"]}), "b": {"items": ["b$remaining"]}}, chain(S, "a", "b", E),
       managed=["remaining_steps"]),
     config={"recursion_limit": 4}, runs=[I({}), {"resume": "x"}])

case("managed", "remaining_steps_second_input",
     G({"a": {"items": ["a$remaining"]}}, chain(S, "a", E), managed=["remaining_steps"]),
     config={"recursion_limit": 4}, runs=[I({}), I({}), I(None)])

case("managed", "remaining_steps_inside_subgraph",
     G({"a": {"items": ["a$remaining"]},
        "child": SUB(G({"c1": {"items": ["c1$remaining"]}, "c2": {"items": ["c2$remaining"]}}, chain(S, "c1", "c2", E),
                       managed=["remaining_steps"])),
        "z": {"items": ["z$remaining"]}},
       chain(S, "a", "child", "z", E), managed=["remaining_steps"]),
     config={"recursion_limit": 6},
     note="the child counts its own steps against the same recursion_limit")

case("managed", "remaining_steps_in_command_update",
     G({"a": CMD("b", {"meta": {"a": "$remaining"}}), "b": {"meta": {"b": "$remaining"}}}, [[S, "a"], ["b", E]],
       managed=["remaining_steps"]),
     config={"recursion_limit": 3},
     note="a whole-string token keeps the integer: meta values are numbers")

case("managed", "remaining_steps_in_send_worker",
     G({"a": {"items": ["a$remaining"]}, "w": {"items": ["w-$item-$remaining"]}}, [[S, "a"], ["w", E]],
       [{"from": "a", "send_each": "items", "to": "w"}], managed=["remaining_steps"]),
     config={"recursion_limit": 5},
     note="a Send worker's input is the Send arg: does it see remaining_steps?")

# 4. Static breakpoints ------------------------------------------------------------------------

TOOLS = G({"a": U("a"), "tools": U("tools"), "b": U("b")}, chain(S, "a", "tools", "b", E))

case("breakpoint", "interrupt_before_then_continue",
     {**TOOLS, "compile": {"interrupt_before": ["tools"]}},
     runs=[I({}), I(None)])

case("breakpoint", "interrupt_after_then_continue",
     {**TOOLS, "compile": {"interrupt_after": ["a"]}},
     runs=[I({}), I(None)])

case("breakpoint", "interrupt_before_and_after_same_node",
     {**TOOLS, "compile": {"interrupt_before": ["tools"], "interrupt_after": ["tools"]}},
     runs=[I({}), I(None), I(None)])

case("breakpoint", "interrupt_before_first_node",
     {**TOOLS, "compile": {"interrupt_before": ["a"]}},
     runs=[I({"items": ["in"]}), I(None)])

case("breakpoint", "interrupt_before_all_nodes",
     {**TOOLS, "compile": {"interrupt_before": "*"}},
     runs=[I({}), I(None), I(None), I(None)])

case("breakpoint", "interrupt_before_parallel_step",
     G({"a": U("a"), "b": U("b"), "c": U("c")}, [[S, "a"], [S, "b"], ["a", "c"], ["b", "c"], ["c", E]],
       compile={"interrupt_before": ["b"]}),
     runs=[I({}), I(None)],
     note="a breakpoint on b pauses the whole step: a does not run either")

case("breakpoint", "interrupt_after_parallel_step",
     G({"a": U("a"), "b": U("b"), "c": U("c")}, [[S, "a"], [S, "b"], ["a", "c"], ["b", "c"], ["c", E]],
       compile={"interrupt_after": ["b"]}),
     runs=[I({}), I(None)])

case("breakpoint", "interrupt_after_command_node",
     G({"a": CMD("c", U("a")), "b": U("b"), "c": U("c")}, [[S, "a"], ["b", E], ["c", E]],
       compile={"interrupt_after": ["a"]}),
     runs=[I({}), I(None)],
     note="next after the breakpoint is the Command's goto target")

case("breakpoint", "breakpoint_new_input_restarts",
     {**TOOLS, "compile": {"interrupt_before": ["tools"]}},
     runs=[I({}), I({"items": ["again"]}), I(None)])

case("breakpoint", "breakpoint_and_dynamic_interrupt",
     G({"a": ASK("q", U("a:$answer")), "b": U("b")}, chain(S, "a", "b", E), compile={"interrupt_after": ["a"]}),
     runs=[I({}), {"resume": "A"}, I(None)])

case("breakpoint", "interrupt_after_then_before_next",
     {**TOOLS, "compile": {"interrupt_after": ["a"], "interrupt_before": ["tools"]}},
     runs=[I({}), I(None)],
     note="paused after a, the thread goes on through tools: nothing was written since the pause")

case("breakpoint", "interrupt_after_edit_then_before_next",
     {**TOOLS, "compile": {"interrupt_after": ["a"], "interrupt_before": ["tools"]}},
     runs=[I({}), {"update_state": {"items": ["edit"]}, "as_node": None}, I(None)],
     note="an edit of the paused thread does not make the breakpoint before tools stop it")

# 5. update_state ------------------------------------------------------------------------------

PAUSE = G({"a": ASK("q", {"items": ["a:$answer"]}), "b": U("b"), "c": U("c")}, chain(S, "a", "b", "c", E))
PAUSE_SIB = G({"a": ASK("q", {"items": ["a:$answer"]}), "s": U("s"), "c": U("c")},
              [[S, "a"], [S, "s"], [["a", "s"], "c"], ["c", E]])
FIN = G({"a": U("a"), "b": U("b"), "c": U("c")}, chain(S, "a", "b", "c", E))

case("update_state", "update_state_finished_no_as_node",
     FIN, runs=[I({}), {"update_state": {"items": ["u"], "last": "u"}, "as_node": None}, I(None)],
     note="as_node is inferred as the last node that wrote (c); c's successor is END: nothing runs")

case("update_state", "update_state_finished_as_middle_node",
     FIN, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": "a"}, I(None)],
     note="as if a had written again: next is b, and invoke(None) runs b and c again")

case("update_state", "update_state_finished_as_start",
     FIN, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": S}, I(None)])

case("update_state", "update_state_finished_as_end",
     FIN, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": E}, I(None)])

case("update_state", "update_state_paused_as_paused_node",
     PAUSE, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": "a"}, {"resume": "late"}],
     note="writing as the interrupted node a completes a's step: the interrupt is gone and next is b")

case("update_state", "update_state_paused_as_other_node",
     PAUSE, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": "b"}, I(None)])

case("update_state", "update_state_paused_no_as_node",
     PAUSE, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": None}, {"resume": "A"}])

case("update_state", "update_state_paused_with_sibling_pending_writes",
     PAUSE_SIB, runs=[I({}), {"update_state": {"last": "u"}, "as_node": None}, {"resume": "A"}],
     note="does s's pending write survive an update_state on the paused thread?")

case("update_state", "update_state_paused_sibling_as_paused_node",
     PAUSE_SIB, runs=[I({}), {"update_state": {"last": "u"}, "as_node": "a"}, I(None)])

CHILD_ASK = G({"a": U("a"),
               "child": SUB(G({"ca": U("ca"), "cb": ASK("q", {"items": ["cb:$answer"]})}, chain(S, "ca", "cb", E))),
               "z": U("z")},
              chain(S, "a", "child", "z", E))

case("update_state", "update_state_paused_in_subgraph_no_as_node",
     CHILD_ASK, runs=[I({}), {"update_state": {"last": "u"}, "as_node": None}, {"resume": "A"}],
     note="the parent is paused on the child task; what happens to the child's saved progress?")

case("update_state", "update_state_paused_in_subgraph_as_subgraph_node",
     CHILD_ASK, runs=[I({}), {"update_state": {"items": ["as-child"]}, "as_node": "child"}, I(None)])

case("update_state", "update_state_after_breakpoint_edit_then_continue",
     {**TOOLS, "compile": {"interrupt_before": ["tools"]}},
     runs=[I({}), {"update_state": {"items": ["edited"]}, "as_node": None}, I(None)],
     note="the 'edit then continue' pattern: next stays tools, the continue runs tools on the edited state")

case("update_state", "update_state_after_breakpoint_as_skipped_node",
     {**TOOLS, "compile": {"interrupt_before": ["tools"]}},
     runs=[I({}), {"update_state": {"items": ["tool-result"]}, "as_node": "tools"}, I(None)],
     note="writing as tools stands in for running it: next is b, tools never runs")

case("update_state", "update_state_ambiguous_after_parallel_step",
     G({"a": U("a"), "b": U("b")}, [[S, "a"], [S, "b"], ["a", E], ["b", E]]),
     runs=[I({}), {"update_state": {"last": "u"}, "as_node": None}, {"update_state": {"last": "u"}, "as_node": "b"}])

case("update_state", "update_state_fresh_thread",
     FIN, runs=[{"update_state": {"items": ["u"]}, "as_node": None}, {"update_state": {"items": ["v"]}, "as_node": "a"},
                I(None)])

case("update_state", "update_state_as_node_with_router",
     G({"a": U("a"), "b": U("b"), "c": U("c")}, [[S, "a"], ["b", E], ["c", E]],
       [{"from": "a", "by": "last", "map": {"go-b": "b"}, "default": "c"}]),
     runs=[I({}), {"update_state": {"last": "go-b"}, "as_node": "a"}, I(None)],
     note="the router of as_node runs on the updated state and picks next")

case("update_state", "update_state_lastvalue_and_messages",
     G({"a": {"last": "a", "messages": [AI("m1", "first")]}}, chain(S, "a", E)),
     runs=[I({}), {"update_state": {"last": "u", "messages": [AI("m1", "replaced"), AI("m2", "new")]}, "as_node": "a"}],
     note="update_state goes through the reducers: message m1 is replaced by id, last overwritten")

case("update_state", "update_state_unknown_node_error",
     FIN, runs=[I({}), {"update_state": {"items": ["u"]}, "as_node": "nope"}])

# 6. get_state_history ---------------------------------------------------------------------------

case("history", "history_linear_finished",
     FIN, runs=[I({}), HIST, {"get_state_history": {"limit": 2}}, {"get_state_history": {"filter": {"source": "loop"}}},
                {"get_state_history": {"filter": {"step": 1}}}])

case("history", "history_with_interrupt_and_resume",
     PAUSE_SIB, runs=[I({}), HIST, {"resume": "A"}, HIST])

case("history", "history_two_inputs_and_update",
     G({"a": U("a")}, chain(S, "a", E)),
     runs=[I({"items": ["1"]}), I({"items": ["2"]}), {"update_state": {"last": "u"}, "as_node": "a"}, HIST,
           {"get_state_history": {"filter": {"source": "input"}}}])

case("history", "history_with_subgraph",
     G({"child": SUB(CHILD2), "z": U("z")}, chain(S, "child", "z", E)),
     runs=[I({}), HIST],
     note="the parent's history lists only the parent's checkpoints")

# 7. Replay and fork -------------------------------------------------------------------------------

case("replay_fork", "replay_finished_step",
     FIN, runs=[I({}), HIST, {"replay": {"step": 1}}, HIST],
     note="replay from the checkpoint saved after step 1 (next b): b and c run again; the old "
          "checkpoints are kept, the new ones hang off a copy of the chosen one")

case("replay_fork", "replay_input_checkpoint",
     FIN, runs=[I({"items": ["in"]}), {"replay": {"step": -1}}, HIST])

case("replay_fork", "replay_last_checkpoint",
     FIN, runs=[I({}), {"replay": {"step": 3}}, HIST])

case("replay_fork", "replay_at_interrupted_step",
     PAUSE, runs=[I({}), {"resume": "A"}, {"replay": {"step": 0}}, HIST, {"resume": "B"}],
     note="replaying the checkpoint where a interrupted runs a again: it interrupts again")

case("replay_fork", "replay_before_step_with_pending_writes",
     PAUSE_SIB, runs=[I({}), {"resume": "A"}, {"replay": {"step": 0}}, {"resume": "B"}, HIST],
     note="step 0's checkpoint had s's write as a pending write when a interrupted")

case("replay_fork", "replay_while_paused",
     PAUSE_SIB, runs=[I({}), {"replay": {"step": 0}}, {"resume": "A"}])

case("replay_fork", "fork_update_then_run",
     FIN, runs=[I({}), HIST, {"fork": {"step": 1, "update": {"last": "forked"}, "as_node": "a"}}, HIST],
     note="fork = update_state on the past checkpoint, then invoke(None) from the returned config")

case("replay_fork", "fork_without_as_node",
     FIN, runs=[I({}), {"fork": {"step": 2, "update": {"last": "forked"}, "as_node": None}}, HIST])

case("replay_fork", "fork_as_other_node_skips",
     FIN, runs=[I({}), {"fork": {"step": 1, "update": {"items": ["as-b"]}, "as_node": "b"}}])

case("replay_fork", "fork_at_interrupted_step",
     PAUSE, runs=[I({}), {"resume": "A"}, {"fork": {"step": 0, "update": {"last": "f"}, "as_node": None}},
                  {"resume": "B"}, HIST])

case("replay_fork", "replay_with_subgraph",
     G({"a": U("a"), "child": SUB(CHILD2), "z": U("z")}, chain(S, "a", "child", "z", E)),
     runs=[I({}), {"replay": {"step": 1}}, HIST])

case("replay_fork", "replay_after_breakpoint_step",
     {**TOOLS, "compile": {"interrupt_before": ["tools"]}},
     runs=[I({}), I(None), {"replay": {"step": 1}}, HIST],
     note="replaying the checkpoint a breakpoint stopped at does not stop at the breakpoint again")

# 8. Join edges ---------------------------------------------------------------------------------------

case("join", "join_uneven_branches",
     G({"a": U("a"), "b1": U("b1"), "b2": U("b2"), "b3": U("b3"), "x": U("x"), "c": U("c")},
       [[S, "a"], [S, "b1"], ["b1", "b2"], ["b2", "b3"], ["a", "x"], [["x", "b3"], "c"], ["c", E]]),
     note="branch lengths 2 and 3: c runs once, in the step after b3")

case("join", "join_across_interrupt",
     G({"a": U("a"), "b": ASK("q", {"items": ["b:$answer"]}), "b2": U("b2"), "c": U("c")},
       [[S, "a"], [S, "b"], ["b", "b2"], [["a", "b2"], "c"], ["c", E]]),
     runs=[I({}), {"resume": "B"}])

case("join", "join_branch_skipped_by_router",
     G({"a": {"last": "skip"}, "b": U("b"), "x": U("x"), "c": U("c")},
       [[S, "a"], [S, "x"], [["b", "x"], "c"], ["c", E]],
       [{"from": "a", "by": "last", "map": {"go": "b"}, "default": E}]),
     runs=[I({}), HIST],
     note="b never runs, so the join never fires: c does not run and the run ends")

case("join", "join_branch_taken_by_router",
     G({"a": {"last": "go"}, "b": U("b"), "x": U("x"), "c": U("c")},
       [[S, "a"], [S, "x"], [["b", "x"], "c"], ["c", E]],
       [{"from": "a", "by": "last", "map": {"go": "b"}, "default": E}]))

case("join", "join_with_command_branch",
     G({"a": CMD("b", U("a")), "b": U("b"), "x": U("x"), "c": U("c")},
       [[S, "a"], [S, "x"], [["b", "x"], "c"], ["c", E]]))

case("join", "join_fires_again_in_loop",
     G({"a": U("a"), "b": U("b"), "c": U("c")},
       [[S, "a"], [S, "b"], [["a", "b"], "c"]],
       [{"from": "c", "by": "len(items)", "map": {"3": ["a", "b"]}, "default": E}]),
     note="after c, the router sends both branches again; the join fires a second time")

case("join", "join_barrier_persists_across_inputs",
     G({"a": U("a"), "b": U("b"), "c": U("c")}, [[["a", "b"], "c"], ["c", E]],
       [{"from": S, "by": "last", "map": {"A": "a", "B": "b"}, "default": E}]),
     runs=[I({"last": "A"}), I({"last": "B"}), I({"last": "B"})],
     note="the first run only reaches a (the join has seen a); the second only b, and c fires: the "
          "join's progress is thread state and survives between runs")

case("join", "join_pending_branch_then_new_input",
     G({"a": U("a"), "b": ASK("q", U("b")), "c": U("c")}, [[S, "a"], [S, "b"], [["a", "b"], "c"], ["c", E]]),
     runs=[I({}), I({"items": ["new"]}), {"resume": "B"}])

# 9. Streaming with subgraphs ----------------------------------------------------------------------------

case("stream_subgraphs", "stream_parallel_subgraphs",
     G({"left": SUB(G({"l1": U("l1"), "l2": U("l2")}, chain(S, "l1", "l2", E))),
        "right": SUB(G({"r1": U("r1")}, chain(S, "r1", E))), "z": U("z")},
       [[S, "left"], [S, "right"], [["left", "right"], "z"], ["z", E]]),
     note="pairs of parallel subgraphs are recorded in task write order (left before right)")

case("stream_subgraphs", "stream_subgraph_with_parallel_child_tasks",
     G({"child": SUB(G({"x": U("x"), "y": U("y")}, [[S, "y"], [S, "x"], ["x", E], ["y", E]]))},
       chain(S, "child", E)))

case("stream_subgraphs", "stream_subgraph_command_inside_child",
     G({"child": SUB(G({"c1": CMD("c3", U("c1")), "c2": U("c2"), "c3": U("c3")}, [[S, "c1"], ["c2", E], ["c3", E]]))},
       chain(S, "child", E)))

case("stream_subgraphs", "stream_subgraph_returns_nothing_new",
     G({"child": SUB(G({"c": None}, chain(S, "c", E)))}, chain(S, "child", E)),
     runs=[I({"last": "in", "items": ["i"]})],
     note="a child that writes nothing still returns its whole state as the task's update")

# 10. messages stream mode ---------------------------------------------------------------------------------

case("messages_metadata", "messages_from_node_updates",
     G({"a": {"messages": [AI("m-a", "from a")]}, "b": {"messages": [AI("m-b1", "b one"), AI("m-b2", "b two")]}},
       chain(S, "a", "b", E)),
     runs=[I({"messages": [{"type": "human", "id": "h1", "content": "hi"}]})], messages="plain",
     note="the input's human message is not streamed; each AI message a node returns is")

case("messages_metadata", "messages_parallel_nodes",
     G({"a": {"messages": [AI("m-a", "from a")]}, "b": {"messages": [AI("m-b", "from b")]}},
       [[S, "b"], [S, "a"], ["a", E], ["b", E]]),
     messages="plain")

case("messages_metadata", "messages_from_command_update",
     G({"a": CMD("b", {"messages": [AI("m-a", "cmd")]}), "b": {"messages": [AI("m-b", "b")]}}, [[S, "a"], ["b", E]]),
     messages="plain")

case("messages_metadata", "messages_from_subgraph",
     G({"a": {"messages": [AI("m-a", "top")]},
        "child": SUB(G({"c1": {"messages": [AI("m-c1", "child")]}}, chain(S, "c1", E)))},
       chain(S, "a", "child", E)),
     messages="subgraphs",
     note="stream(..., stream_mode='messages', subgraphs=True)")

case("messages_metadata", "messages_from_subgraph_without_subgraphs_flag",
     G({"a": {"messages": [AI("m-a", "top")]},
        "child": SUB(G({"c1": {"messages": [AI("m-c1", "child")]}}, chain(S, "c1", E)))},
       chain(S, "a", "child", E)),
     messages="plain",
     note="stream(..., stream_mode='messages') without subgraphs=True")

case("messages_metadata", "messages_all_types_and_generated_ids",
     G({"a": {"messages": [{"type": "human", "id": "h-a", "content": "human from a"},
                           {"type": "ai", "id": None, "content": "ai without id"},
                           {"type": "tool", "id": "t-a", "content": "tool out", "tool_call_id": "call1"},
                           {"type": "system", "id": "s-a", "content": "system"}]},
        "b": {"messages": [{"type": "ai", "id": "h-a", "content": "replaces human"}]}},
       chain(S, "a", "b", E)),
     runs=[I({"messages": [{"type": "human", "id": None, "content": "input without id"}]})], messages="plain",
     note="which message types are streamed; ids LangGraph generates appear as <gen:N>")

case("messages_metadata", "messages_after_resume",
     G({"a": {"messages": [AI("m-a", "before")]}, "b": ASK("q", {"messages": [AI("m-b", "$answer")]})},
       chain(S, "a", "b", E)),
     runs=[I({}), {"resume": "answered"}], messages="plain")

# 11. Recorded differences ---------------------------------------------------------------------------------

case("differences", "router_sees_own_command_update_not_siblings",
     G({"a": CMD(update={"items": ["a"]}), "b": U("b"), "one": {"last": "one"}, "two": {"last": "two"}},
       [[S, "a"], [S, "b"], ["b", E], ["one", E], ["two", E]],
       [{"from": "a", "by": "len(items)", "map": {"1": "one", "2": "two"}, "default": E}]),
     note="a's router sees a's Command update on top of the pre-step state, not b's write")

case("differences", "command_goto_and_router_see_different_states",
     G({"a": CMD("b", U("a")), "s": U("s"), "b": U("b"), "one": {"last": "one"}, "two": {"last": "two"}},
       [[S, "a"], [S, "s"], ["s", E], ["b", E], ["one", E], ["two", E]],
       [{"from": "a", "by": "len(items)", "map": {"1": "one", "2": "two"}, "default": E}]),
     note="a's Command goes to b whatever the state; its router counts only a's own item (1 -> one), not s's")

case("differences", "router_after_subgraph_sees_child_output",
     G({"child": SUB(G({"c": {"last": "from-child"}}, chain(S, "c", E))), "p": U("p"),
        "x": U("x"), "y": U("y")},
       [[S, "child"], [S, "p"], ["p", E], ["x", E], ["y", E]],
       [{"from": "child", "by": "len(items)", "map": {"0": "x", "1": "y"}, "default": E}]),
     note="the router of a subgraph node sees the child's returned state on top of the pre-step state "
          "(items still empty), not p's parallel write")

case("differences", "recursion_limit_count_with_remaining_steps",
     G({"a": {"items": ["a$remaining"]}, "b": {"items": ["b$remaining"]}, "c": {"items": ["c$remaining"]}},
       chain(S, "a", "b", "c", E), managed=["remaining_steps"]),
     config={"recursion_limit": 3},
     note="3 node steps with recursion_limit 3: c's remaining_steps is 0, then GraphRecursionError although the graph is done")

case("differences", "recursion_limit_in_subgraph",
     G({"child": SUB(G({"c": U("c")}, [[S, "c"]], [{"from": "c", "by": "len(items)", "map": {"4": E}, "default": "c"}]))},
       chain(S, "child", E)),
     config={"recursion_limit": 3},
     note="the child's loop needs 4 child steps: the child's own step count hits the limit")

case("differences", "resume_on_finished_thread",
     FIN, runs=[I({}), {"resume": "nothing"}, I(None)])

case("differences", "resume_at_breakpoint",
     {**TOOLS, "compile": {"interrupt_before": ["tools"]}},
     runs=[I({}), {"resume": "x"}],
     note="Command(resume=...) with no pending interrupt but a pending breakpoint")

case("differences", "resume_map_after_answered",
     PAUSE, runs=[I({}), {"resume": "A"}, {"resume": "again"}])


# --------------------------------------------------------------------------------------------




def main() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    only = set(sys.argv[1:])
    cases = [run_case(c) for c in CASES if not only or c["name"] in only]
    groups: dict[str, int] = {}
    for c in cases:
        groups[c["group"]] = groups.get(c["group"], 0) + 1
    doc = {
        "generator": "gen_agent_vectors.py (runs real compiled StateGraphs with InMemorySaver)",
        "versions": versions(),
        "schemas": AGENT_SCHEMAS,
        "format": FORMAT,
        "count": len(cases),
        "groups": groups,
        "cases": cases,
    }
    out = OUT if not only else Path("/tmp/agent_partial.json")
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out} ({len(cases)} cases: {groups})")


if __name__ == "__main__":
    main()
