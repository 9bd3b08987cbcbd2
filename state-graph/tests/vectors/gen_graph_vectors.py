"""Generate graph-runner conformance vectors (graphs.json) by running real LangGraph.

Usage (with a venv made from benches/langgraph/requirements.txt):
    python state-graph/tests/vectors/gen_graph_vectors.py
Writes graphs.json next to this file. Nothing in the output is hand-written:
every recorded outcome is what the installed langgraph did. Two runs give
byte-identical output (generated ids become "<gen:N>", stream chunks that
LangGraph emits in thread-completion order are put in write-application order).

Every case is also replayed a second time on a fresh saver with plain
`invoke()` and its return value/error is checked against the `result`/`error`
recorded from the stream, so `result` really is what `invoke` returns.

The encoding is described in FORMAT below (also copied into graphs.json).
"""

from __future__ import annotations

import json
import operator
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.graph.message import add_messages
from langgraph.pregel._algo import task_path_str
from langgraph.types import Command, Interrupt, Send, interrupt

HERE = Path(__file__).resolve().parent
OUT = HERE / "graphs.json"
THREAD = "t"

FORMAT = """\
State schema: the four keys of `schema` (same as /work/shared/langgraph/supersteps.json).
Messages are encoded as there: {"type": "human"|"ai"|"system"|"tool"|"remove", "id": str|null, "content": ...}.

GRAPH (rebuildable from data alone)
- nodes: name -> spec, added in this order (add_node order does not affect behaviour). A spec is
  * null: the node returns None (no writes);
  * a JSON object without the key "interrupt": an update TEMPLATE; the node returns the template
    after placeholder substitution (see TEMPLATES), with message dicts under "messages" decoded
    to message objects. Keys that are not state keys are dropped by LangGraph;
  * {"interrupt": [q0, q1, ...], "then": T}: the node calls interrupt(subst(q0)), then
    interrupt(subst(q1)), ... in order (the i-th call gets the i-th resume answer), and then
    returns subst(T) (T may be null = return None). The list always has one entry per call.
- edges: [from, to] = add_edge(from, to); from may be a list = join edge add_edge([..], to)
  (to waits for all of them). "__start__"/"__end__" are START/END.
- routers: add_conditional_edges(from, fn, path_map) with fn given as data:
  * {"from": A, "by": K, "map": {value: target | [targets]}, "default": target | [targets],
     "targets": [...]}: the router reads the state it is given (see below). If K is a state key,
    the routing value is state[K] when it is a string, else missing; if K is "len(KEY)", the
    routing value is the decimal string of len(state[KEY]). map[value] is returned if present,
    else "default" (a missing default would raise KeyError; no case relies on that). A list
    return means: go to all of them (fan-out). "targets" (= path_map passed as a list) is every
    name the router can return, in first-appearance order of map values then default.
  * {"from": A, "send_each": K, "to": W, ["plus": [names]], "targets": [...]}: the router returns
    plus + [Send(W, {"item": v}) for v in state[K]] (plus first; may be empty; path_map=None).
  The state given to a router is the state before the step plus only the writes of the node
  `from` itself (LangGraph's fresh read), not those of parallel nodes of the same step.
- TEMPLATES: in every string of a template (object keys included, recursively), the tokens
  `$item`, `$answer` and `$answer<N>` (regex \\$(item|answer[0-9]*), greedy digits) are replaced:
  `$item` by the "item" of the task input when the task was started by a Send (its input is
  {"item": v}); `$answer<N>` by the answer of the N-th interrupt call (0-based) and `$answer` by
  the answer of the most recent call. A string that is exactly one token becomes the value
  itself (any JSON); otherwise each token is replaced by the value's text (a string as-is, other
  values as compact JSON). Tokens with no value in the invocation stay literally (e.g. a pull
  task of a worker template keeps "$item"). Interrupt values q_i are substituted the same way
  (with $item and the answers of calls before i).
- config: extra RunnableConfig keys (recursion_limit), besides configurable.thread_id = "t".

RUNS: every case compiles the graph with InMemorySaver and runs `runs` one after the other on the
same thread, each with graph.stream(X, config, stream_mode=["updates", "values", "debug"]) where
X is given by the run's request:
  {"input": V}                   -> X = V (null = None)
  {"resume": V}                  -> X = Command(resume=V)
  {"resume_map": {"<gen:N>": V}} -> X = Command(resume={interrupt_id: V, ...}); <gen:N> is the
                                    placeholder of an interrupt id recorded earlier in the case.
Recorded per run:
- supersteps: one entry per superstep that had tasks in this run (the hidden __start__ task that
  applies the input, step 0, is not listed; its effect is the first values_stream chunk):
  * step: LangGraph's step number (checkpoint metadata step). On a fresh thread the input
    checkpoint is -1, START's writes are step 0 and the first nodes run in step 1; a new input on
    a used thread continues the numbering (input checkpoint = last saved step + 1); a resumed
    step keeps its number;
  * tasks: node names of all tasks of the step, in the order LangGraph applies their writes
    (sorted by task path: pull tasks "~__pregel_pull, <name>" by code point of the name, then
    Send (push) tasks "~__pregel_push, <10-digit index>, False" in Send order);
  * send_args: (only if the step has Send tasks) the Send inputs of the push tasks, in that order
    (push tasks are always the last len(send_args) entries of tasks);
  * executed: the tasks (same order) whose node function actually ran in THIS run (counted in
    the node function). On resume, a task whose writes were saved before is not re-run;
  * updates: the stream "updates" chunks of the step, one per task in the tasks order (LangGraph
    emits them in completion order): {name: update-or-null}; an interrupting task gives
    {"__interrupt__": [{"value", "id"}]}; a task not re-run on resume gives its saved update with
    "__metadata__": {"cached": true}; a task that errors gives none;
  * interrupts: (only if any) [{"node", "value", "id"}] raised in the step, in tasks order;
  * values: the state saved after the step (checkpoint values), null if the step was not saved
    (interrupted or failed).
- values_stream: the stream "values" chunks in order, except that chunks LangGraph emits when a
  task interrupts (state before the step + "__interrupt__": [that task's interrupts]) are put in
  tasks order within their step. On resume / input None LangGraph first emits the saved state.
  When a run stops on an interrupt and some task of that step did write, LangGraph emits one
  last chunk with those writes applied (they are kept as pending writes, not checkpointed).
- checkpoints: [{"step", "source", "next"}] of the checkpoints the run emitted (debug stream), in
  order; on resume / input None the first one is the saved checkpoint the run starts from. "next"
  is LangGraph's StateSnapshot.next order (Send tasks first), not the write order.
- result: what invoke() returns for the same request: the last values chunk, plus
  "__interrupt__": [all interrupts of the run] when any (checked with a real invoke()); or
- error: "<ExceptionClass>: <message>" raised by stream/invoke (then no result).
- after: thread state after the run, from get_state(): {"values", "next", "interrupts":
  [{"node", "value", "id"}]}; or {"error": "..."} if get_state() raised.
Generated ids (interrupt ids: 32 lowercase hex digits; message ids: uuid4) -> "<gen:N>", N
numbered by first appearance in the case, in file order (equal N = equal id).
"""

# --------------------------------------------------------------------------------------------
# Schema (same as supersteps.json)
# --------------------------------------------------------------------------------------------


def merge_dicts(a, b):
    return {**a, **b}


class State(TypedDict, total=False):
    last: str
    items: Annotated[list, operator.add]
    meta: Annotated[dict, merge_dicts]
    messages: Annotated[list, add_messages]


SCHEMA = {
    "last": "str, no reducer (LastValue)",
    "items": "Annotated[list, operator.add]",
    "meta": "Annotated[dict, merge_dicts] where merge_dicts(a, b) = {**a, **b}",
    "messages": "Annotated[list, add_messages]",
}

# --------------------------------------------------------------------------------------------
# Encoding helpers
# --------------------------------------------------------------------------------------------


def dec_msg(d: dict) -> BaseMessage:
    t = d["type"]
    kw: dict[str, Any] = {"content": d.get("content", ""), "id": d.get("id")}
    if d.get("name") is not None:
        kw["name"] = d["name"]
    if t == "human":
        return HumanMessage(**kw)
    if t == "ai":
        return AIMessage(**kw)
    if t == "system":
        return SystemMessage(**kw)
    if t == "tool":
        return ToolMessage(tool_call_id=d["tool_call_id"], **kw)
    if t == "remove":
        return RemoveMessage(id=d["id"])
    raise ValueError(f"unknown message type {t!r}")


def dec_update(u: Any) -> Any:
    if isinstance(u, dict) and isinstance(u.get("messages"), list):
        u = dict(u)
        u["messages"] = [dec_msg(m) if isinstance(m, dict) else m for m in u["messages"]]
    return u


def dec_input(v: Any) -> Any:
    return dec_update(v)


def enc(v: Any) -> Any:
    if isinstance(v, BaseMessage):
        d = {"type": v.type, "id": v.id, "content": v.content}
        if getattr(v, "name", None) is not None:
            d["name"] = v.name
        if getattr(v, "tool_call_id", None) is not None:
            d["tool_call_id"] = v.tool_call_id
        return d
    if isinstance(v, Interrupt):
        return {"value": enc(v.value), "id": v.id}
    if isinstance(v, Send):
        return {"send": v.node, "arg": enc(v.arg)}
    if isinstance(v, dict):
        return {str(k): enc(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [enc(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    raise TypeError(f"cannot encode {type(v).__name__}: {v!r}")


def err_str(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------------------------
# Templates
# --------------------------------------------------------------------------------------------

TOKEN = re.compile(r"\$(item|answer[0-9]*)")


def subst(t: Any, env: dict[str, Any], token: re.Pattern = TOKEN) -> Any:
    """Substitutes the tokens of `env` in template `t` (see TEMPLATES in FORMAT). `token` is the
    token regex; gen_agent_vectors.py passes one that also knows `$remaining`."""
    if isinstance(t, str):
        m = token.fullmatch(t)
        if m and m.group(0) in env:
            return json.loads(json.dumps(env[m.group(0)]))  # a copy

        def rep(mm: re.Match) -> str:
            tok = mm.group(0)
            if tok not in env:
                return tok
            val = env[tok]
            return val if isinstance(val, str) else json.dumps(val, separators=(",", ":"))

        return token.sub(rep, t)
    if isinstance(t, dict):
        return {subst(k, env, token): subst(x, env, token) for k, x in t.items()}
    if isinstance(t, list):
        return [subst(x, env, token) for x in t]
    return t


# --------------------------------------------------------------------------------------------
# Building a graph from data
# --------------------------------------------------------------------------------------------


def make_node(name: str, spec: Any, log: list):
    def node(state, config):
        md = config["metadata"]
        task_id = md["langgraph_checkpoint_ns"].rsplit(":", 1)[1]
        log.append((task_id, name, tuple(md["langgraph_path"])))
        env: dict[str, Any] = {}
        if isinstance(state, dict) and "item" in state:
            env["$item"] = state["item"]
        if spec is None:
            return None
        if isinstance(spec, dict) and "interrupt" in spec:
            for i, q in enumerate(spec["interrupt"]):
                ans = interrupt(subst(q, env))
                env[f"$answer{i}"] = ans
                env["$answer"] = ans
            return dec_update(subst(spec["then"], env))
        return dec_update(subst(spec, env))

    node.__name__ = f"node_{name}"
    return node


LEN_RE = re.compile(r"len\((\w+)\)")


def router_targets(r: dict) -> list:
    out: list = []

    def add(x):
        for y in x if isinstance(x, list) else [x]:
            if y not in out:
                out.append(y)

    if "send_each" in r:
        add(r.get("plus", []))
        add(r["to"])
    else:
        for v in r["map"].values():
            add(v)
        if "default" in r:
            add(r["default"])
    return out


def make_router(r: dict):
    if "send_each" in r:

        def route(state):
            return list(r.get("plus", [])) + [
                Send(r["to"], {"item": v}) for v in state.get(r["send_each"], [])
            ]

        return route, None

    by = r["by"]

    def route(state):
        m = LEN_RE.fullmatch(by)
        if m:
            key = str(len(state.get(m.group(1), [])))
        else:
            v = state.get(by)
            key = v if isinstance(v, str) else None
        if key is not None and key in r["map"]:
            return r["map"][key]
        if "default" in r:
            return r["default"]
        raise KeyError(f"router from {r['from']!r}: no route for {key!r}")

    return route, router_targets(r)


def build(case: dict, log: list):
    g = StateGraph(State)
    for name, spec in case["nodes"].items():
        g.add_node(name, make_node(name, spec, log))
    for src, dst in case.get("edges", []):
        g.add_edge(src, dst)
    for r in case.get("routers", []):
        fn, path_map = make_router(r)
        fn.__name__ = f"route_from_{r['from']}"
        g.add_conditional_edges(r["from"], fn, path_map)
    return g.compile(checkpointer=InMemorySaver())


def make_config(case: dict) -> dict:
    return {"configurable": {"thread_id": THREAD}, **case.get("config", {})}


def resolve_request(app, cfg, req: dict):
    """Returns (python input, recorded request)."""
    if "input" in req:
        return dec_input(req["input"]), {"input": req["input"]}
    if "resume" in req:
        return Command(resume=req["resume"]), {"resume": req["resume"]}
    if "resume_by_value" in req:
        # the spec names interrupts by their (unique) value; the file records their ids
        pending = app.get_state(cfg).interrupts
        by_value = {}
        for i in pending:
            assert i.value not in by_value, "interrupt values must be unique to resume by value"
            by_value[i.value] = i.id
        mapping = {by_value[k]: v for k, v in req["resume_by_value"].items()}
        return Command(resume=mapping), {"resume_map": dict(mapping)}
    raise ValueError(req)


# --------------------------------------------------------------------------------------------
# Recording one run
# --------------------------------------------------------------------------------------------


def sort_key(path: tuple) -> str:
    return task_path_str(path)


def interrupts_of_state(st) -> list:
    out = []
    for t in sorted(st.tasks, key=lambda t: sort_key(t.path)):
        for i in t.interrupts:
            out.append({"node": t.name, "value": enc(i.value), "id": i.id})
    return out


def record_run(app, cfg, pyinput, log: list) -> dict:
    events = []
    error = None
    start = len(log)
    try:
        for ch in app.stream(pyinput, cfg, stream_mode=["updates", "values", "debug"]):
            events.append(ch)
    except Exception as e:  # noqa: BLE001 - recorded
        error = err_str(e)
    executed_now = {tid for tid, _, _ in log[start:]}
    paths = {tid: path for tid, _, path in log}
    # saved results (for tasks not re-run on resume) and paths of tasks never run
    saved_results: dict[str, Any] = {}
    try:
        for snap in app.get_state_history(cfg):
            for t in snap.tasks:
                paths.setdefault(t.id, tuple(t.path))
                if t.result is not None:
                    saved_results.setdefault(t.id, t.result)
    except Exception:  # noqa: BLE001
        pass

    steps: dict[int, dict] = {}
    step_order: list[int] = []
    checkpoints = []
    values_chunks = []  # (chunk, step-or-None)
    ckpt_values: dict[int, Any] = {}
    cur = None
    for mode, data in events:
        if mode == "debug":
            typ = data["type"]
            if typ == "checkpoint":
                p = data["payload"]
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
                p = data["payload"]
                if typ == "task":
                    steps[s]["tasks"][p["id"]] = p
                else:
                    steps[s]["results"][p["id"]] = p
        elif mode == "updates":
            assert cur is not None, data
            steps[cur]["updates"].append(data)
        elif mode == "values":
            values_chunks.append((data, cur))
        else:
            raise AssertionError(mode)

    interrupt_task: dict[str, str] = {}  # interrupt id -> task id
    supersteps = []
    all_interrupts = []
    for s in step_order:
        st = steps[s]
        ordered = sorted(st["tasks"].values(), key=lambda p: sort_key(paths[p["id"]]))
        rec: dict[str, Any] = {"step": s, "tasks": [p["name"] for p in ordered]}
        push = [p for p in ordered if paths[p["id"]][0] == "__pregel_push"]
        if push:
            rec["send_args"] = [enc(p["input"]) for p in push]
        ran = [p for p in ordered if p["id"] in executed_now]
        rec["executed"] = [p["name"] for p in ran]
        with_result = {tid for tid in st["results"]}
        assert with_result == {p["id"] for p in ran}, (s, with_result, rec)
        # match update chunks to tasks
        remaining = list(st["updates"])
        upd = []
        step_ints = []
        for p in ordered:
            tid, name = p["id"], p["name"]
            res = st["results"].get(tid)
            if res is not None:
                if res["interrupts"]:
                    ids = [i["id"] for i in res["interrupts"]]
                    want = lambda c: "__interrupt__" in c and [i.id for i in c["__interrupt__"]] == ids  # noqa: E731
                    for i in res["interrupts"]:
                        interrupt_task[i["id"]] = tid
                        step_ints.append({"node": name, "value": enc(i["value"]), "id": i["id"]})
                elif res["error"]:
                    continue
                else:
                    exp = enc(res["result"]) or None
                    want = lambda c, name=name, exp=exp: (  # noqa: E731
                        set(c) == {name} and enc(c[name]) == exp
                    )
            else:
                exp = enc(saved_results.get(tid)) or None
                want = lambda c, name=name, exp=exp: (  # noqa: E731
                    set(c) == {name, "__metadata__"} and enc(c[name]) == exp
                )
            for k, c in enumerate(remaining):
                if want(c):
                    upd.append(enc(c))
                    del remaining[k]
                    break
            else:
                raise AssertionError(f"no updates chunk for task {name} in step {s}: {st['updates']}")
        assert not remaining, (s, remaining)
        rec["updates"] = upd
        if step_ints:
            rec["interrupts"] = step_ints
            all_interrupts.extend(step_ints)
        rec["values"] = enc(ckpt_values.get(s))
        supersteps.append(rec)

    # values stream: put interrupt chunks of one step in task order
    canon = []
    i = 0
    while i < len(values_chunks):
        c, s = values_chunks[i]
        if "__interrupt__" not in c:
            canon.append(c)
            i += 1
            continue
        j = i
        group = []
        while j < len(values_chunks) and "__interrupt__" in values_chunks[j][0]:
            group.append(values_chunks[j][0])
            j += 1
        group.sort(key=lambda c: sort_key(paths[interrupt_task[c["__interrupt__"][0].id]]))
        canon.extend(group)
        i = j
    values_stream = [enc(c) for c in canon]

    out: dict[str, Any] = {"supersteps": supersteps, "values_stream": values_stream,
                           "checkpoints": checkpoints}
    if error is not None:
        out["error"] = error
    else:
        latest = values_stream[-1] if values_stream else None
        if all_interrupts:
            ints = [{"value": x["value"], "id": x["id"]} for x in all_interrupts]
            latest = {**latest, "__interrupt__": ints} if isinstance(latest, dict) else {"__interrupt__": ints}
        out["result"] = latest
    try:
        st = app.get_state(cfg)
        out["after"] = {"values": enc(st.values), "next": list(st.next),
                        "interrupts": interrupts_of_state(st)}
    except Exception as e:  # noqa: BLE001
        out["after"] = {"error": err_str(e)}
    return out


# --------------------------------------------------------------------------------------------
# Placeholders for generated ids
# --------------------------------------------------------------------------------------------

GEN_RE = re.compile(
    r"(?<![0-9a-f-])([0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9a-f-])"
)


class Gen:
    def __init__(self):
        self.table: dict[str, str] = {}

    def s(self, x: str) -> str:
        def rep(m):
            v = m.group(1)
            if v not in self.table:
                self.table[v] = f"<gen:{len(self.table)}>"
            return self.table[v]

        return GEN_RE.sub(rep, x)

    def walk(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.s(v)
        if isinstance(v, dict):
            return {self.s(k): self.walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [self.walk(x) for x in v]
        return v


def normalize_ids(v: Any) -> Any:
    """For comparing two executions: every generated id -> '<id>'."""
    if isinstance(v, str):
        return GEN_RE.sub("<id>", v)
    if isinstance(v, dict):
        return {normalize_ids(k): normalize_ids(x) for k, x in v.items()}
    if isinstance(v, list):
        return [normalize_ids(x) for x in v]
    return v


# --------------------------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------------------------


def run_case(case: dict) -> dict:
    log: list = []
    app = build(case, log)
    cfg = make_config(case)
    runs = []
    for req in case["runs"]:
        pyinput, recorded_req = resolve_request(app, cfg, req)
        rec = record_run(app, cfg, pyinput, log)
        runs.append({**recorded_req, **rec})

    # cross-check `result` / `error` against plain invoke() on a fresh saver
    log2: list = []
    app2 = build(case, log2)
    for req, rec in zip(case["runs"], runs):
        pyinput, _ = resolve_request(app2, cfg, req)
        try:
            got = {"result": enc(app2.invoke(pyinput, cfg))}
        except Exception as e:  # noqa: BLE001
            got = {"error": err_str(e)}
        want = {k: rec[k] for k in ("result", "error") if k in rec}
        if normalize_ids(got) != normalize_ids(want):
            raise AssertionError(f"{case['name']}: invoke gave {got}, stream recorded {want}")

    out: dict[str, Any] = {"name": case["name"], "group": case["group"]}
    out["nodes"] = case["nodes"]
    out["edges"] = case.get("edges", [])
    routers = []
    for r in case.get("routers", []):
        routers.append({**r, "targets": router_targets(r)})
    out["routers"] = routers
    if "config" in case:
        out["config"] = case["config"]
    out["runs"] = runs
    if "note" in case:
        out["note"] = case["note"]
    return Gen().walk(out)


# --------------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------------

S, E = "__start__", "__end__"


def chain(*names):
    return [[a, b] for a, b in zip(names, names[1:])]


def I(x):  # noqa: E743 - a run with input x
    return {"input": x}


CASES: list[dict] = []


def case(group, name, nodes, edges=(), routers=(), runs=None, config=None, note=None):
    c = {"group": group, "name": name, "nodes": nodes, "edges": [list(e) for e in edges],
         "routers": list(routers), "runs": runs if runs is not None else [I({})]}
    if config:
        c["config"] = config
    if note:
        c["note"] = note
    CASES.append(c)


# 1. superstep order ------------------------------------------------------------------------

case("order", "linear_chain",
     {"a": {"items": ["a"], "last": "a"}, "b": {"items": ["b"]}, "c": {"items": ["c"], "last": "c"}},
     chain(S, "a", "b", "c", E), runs=[I({"items": ["in"]})])

case("order", "start_fan_out_three",
     {"a": {"items": ["a"], "meta": {"a": 1}}, "b": {"items": ["b"], "meta": {"b": 1}},
      "c": {"items": ["c"], "meta": {"c": 1}}},
     [[S, "c"], [S, "a"], [S, "b"], ["a", E], ["b", E], ["c", E]])

case("order", "write_order_is_code_point_order_of_names",
     {"b": {"items": ["b"], "meta": {"k": "b"}}, "a": {"items": ["a"], "meta": {"k": "a"}},
      "_u": {"items": ["_u"], "meta": {"k": "_u"}}, "Z": {"items": ["Z"], "meta": {"k": "Z"}}},
     [[S, "b"], [S, "a"], [S, "_u"], [S, "Z"], ["b", E], ["a", E], ["_u", E], ["Z", E]],
     note="add_node order b, a, _u, Z; writes applied Z, _u, a, b (code points 0x5A < 0x5F < 0x61)")

case("order", "two_edges_same_target_runs_once",
     {"a": {"items": ["a"]}, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], [S, "b"], ["a", "c"], ["b", "c"], ["c", E]])

case("order", "join_edge_waits_for_slower_branch",
     {"a": {"items": ["a"]}, "b": {"items": ["b"]}, "x": {"items": ["x"]}, "y": {"items": ["y"]},
      "d": {"items": ["d"]}},
     [[S, "a"], ["a", "b"], ["a", "x"], ["x", "y"], [["b", "y"], "d"], ["d", E]],
     note="b finishes in step 2, y in step 3; the join target d runs once, in step 4")

case("order", "plain_edges_from_uneven_branches_run_target_twice",
     {"a": {"items": ["a"]}, "b": {"items": ["b"]}, "x": {"items": ["x"]}, "y": {"items": ["y"]},
      "d": {"items": ["d"]}},
     [[S, "a"], ["a", "b"], ["a", "x"], ["x", "y"], ["b", "d"], ["y", "d"], ["d", E]],
     note="same graph as join_edge_waits_for_slower_branch with two plain edges instead of the join")

case("order", "node_returns_none_and_empty",
     {"a": None, "b": {}, "c": {"items": ["c"]}},
     chain(S, "a", "b", "c", E), runs=[I({"last": "in"})],
     note="steps whose tasks write nothing emit no values chunk but are still checkpointed")

case("order", "node_returns_only_unknown_key",
     {"a": {"nope": 1}, "b": {"last": "b"}},
     chain(S, "a", "b", E))

case("order", "empty_input_nothing_written",
     {"a": None},
     chain(S, "a", E),
     note="invoke returns None: no values chunk is ever emitted")

case("order", "fan_in_after_fan_out_with_messages",
     {"a": {"messages": [{"type": "ai", "id": None, "content": "from a"}]},
      "b": {"messages": [{"type": "ai", "id": "b1", "content": "from b"}]},
      "c": {"messages": [{"type": "ai", "id": "b1", "content": "c replaces b1"}]}},
     [[S, "b"], [S, "a"], ["a", "c"], ["b", "c"], ["c", E]],
     runs=[I({"messages": [{"type": "human", "id": "h1", "content": "hi"}]})])

# 2. conditional routing ------------------------------------------------------------------

case("routing", "router_by_last_picks_branch",
     {"a": {"last": "x"}, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], ["b", E], ["c", E]],
     [{"from": "a", "by": "last", "map": {"x": "b", "y": "c"}, "default": "c"}])

case("routing", "router_default_branch",
     {"a": {"last": "zzz"}, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], ["b", E], ["c", E]],
     [{"from": "a", "by": "last", "map": {"x": "b", "y": "c"}, "default": "c"}])

case("routing", "router_reads_input_value",
     {"a": None, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], ["b", E], ["c", E]],
     [{"from": "a", "by": "last", "map": {"x": "b", "y": "c"}, "default": "__end__"}],
     runs=[I({"last": "y"})],
     note="a writes nothing; the router reads last = 'y' from the input")

case("routing", "router_returns_end",
     {"a": {"last": "stop", "items": ["a"]}, "b": {"items": ["b"]}},
     [[S, "a"], ["b", E]],
     [{"from": "a", "by": "last", "map": {"stop": "__end__", "go": "b"}}])

case("routing", "router_loop_three_times",
     {"a": {"items": ["a"]}, "done": {"last": "done"}},
     [[S, "a"], ["done", E]],
     [{"from": "a", "by": "len(items)", "map": {"3": "done"}, "default": "a"}])

case("routing", "router_returns_list_fan_out",
     {"a": {"last": "both"}, "b": {"items": ["b"]}, "c": {"items": ["c"]}, "d": {"items": ["d"]}},
     [[S, "a"], ["b", E], ["c", E], ["d", E]],
     [{"from": "a", "by": "last", "map": {"both": ["c", "b"], "one": "d"}, "default": "d"}])

case("routing", "router_list_with_duplicate_target",
     {"a": {"last": "dup"}, "b": {"items": ["b"]}},
     [[S, "a"], ["b", E]],
     [{"from": "a", "by": "last", "map": {"dup": ["b", "b"]}, "default": "__end__"}])

case("routing", "router_and_plain_edge_from_same_node",
     {"a": {"last": "x"}, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], ["a", "b"], ["b", E], ["c", E]],
     [{"from": "a", "by": "last", "map": {"x": "c"}, "default": "__end__"}])

case("routing", "router_sees_own_writes_not_parallel_siblings",
     {"a": {"items": ["a"]}, "b": {"items": ["b"]}, "one": {"last": "one"}, "two": {"last": "two"}},
     [[S, "a"], [S, "b"], ["b", E], ["one", E], ["two", E]],
     [{"from": "a", "by": "len(items)", "map": {"1": "one", "2": "two"}, "default": "__end__"}],
     note="after step 1 items has 2 entries, but the router of a sees the pre-step state plus a's own write")

# 3. Send ----------------------------------------------------------------------------------

for n, items in [(0, []), (1, ["x"]), (3, ["3", "1", "2"]), (5, ["e", "d", "c", "b", "a"])]:
    case("send", f"send_fan_out_{n}",
         {"a": {"last": "a"}, "w": {"items": ["done-$item"]}},
         [[S, "a"], ["w", E]],
         [{"from": "a", "send_each": "items", "to": "w"}],
         runs=[I({"items": items})])

case("send", "send_worker_meta_template",
     {"a": None, "w": {"meta": {"$item": "$item"}}},
     [[S, "a"], ["w", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["k1", "k2", "k1"]})])

case("send", "send_workers_and_plain_edge_same_step",
     {"a": {"last": "a"}, "zz": {"items": ["zz"]}, "w": {"items": ["w-$item"]}},
     [[S, "a"], ["a", "zz"], ["zz", E], ["w", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["1", "2", "3"]})],
     note="pull task zz is applied before the Send tasks although 'zz' > 'w'")

case("send", "send_router_with_plus_names",
     {"a": {"last": "a"}, "zz": {"items": ["zz"]}, "w": {"items": ["w-$item"]}},
     [[S, "a"], ["zz", E], ["w", E]],
     [{"from": "a", "send_each": "items", "to": "w", "plus": ["zz"]}],
     runs=[I({"items": ["1", "2"]})])

case("send", "send_workers_then_join_node",
     {"a": None, "w": {"items": ["w-$item"]}, "collect": {"items": ["collect"], "last": "collected"}},
     [[S, "a"], ["w", "collect"], ["collect", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["1", "2", "3"]})],
     note="collect runs once, in the step after all workers")

case("send", "send_from_two_nodes_same_step",
     {"y": None, "x": None, "wy": {"items": ["y-$item"]}, "wx": {"items": ["x-$item"]}},
     [[S, "y"], [S, "x"], ["wy", E], ["wx", E]],
     [{"from": "y", "send_each": "items", "to": "wy"}, {"from": "x", "send_each": "items", "to": "wx"}],
     runs=[I({"items": ["1", "2"]})],
     note="Send order = order the emitting tasks' writes are applied (x before y), then emit order")

case("send", "node_pulled_and_sent_same_step",
     {"a": None, "w": {"items": ["w-$item"]}},
     [[S, "a"], ["a", "w"], ["w", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["1"]})],
     note="w runs twice in step 2: as a pull task (no $item: the template stays literal) and as a Send task")

# 4. concurrent writes to a LastValue key ------------------------------------------------------

case("concurrent", "parallel_lastvalue_conflict",
     {"a": {"last": "a", "items": ["a"]}, "b": {"last": "b"}},
     [[S, "a"], [S, "b"], ["a", E], ["b", E]])

case("concurrent", "lastvalue_conflict_in_second_step",
     {"a": {"last": "a"}, "b": {"last": "b"}, "c": {"last": "c"}},
     [[S, "a"], ["a", "b"], ["a", "c"], ["b", E], ["c", E]])

case("concurrent", "send_workers_lastvalue_conflict",
     {"a": None, "w": {"last": "$item"}},
     [[S, "a"], ["w", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["1", "2"]})])

case("concurrent", "single_send_worker_lastvalue_ok",
     {"a": None, "w": {"last": "$item"}},
     [[S, "a"], ["w", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["1"]})])

# 5. interrupts ----------------------------------------------------------------------------

ASK = {"interrupt": ["what?"], "then": {"last": "$answer", "items": ["a:$answer"]}}

case("interrupt", "interrupt_then_resume",
     {"a": ASK, "b": {"items": ["b"]}},
     chain(S, "a", "b", E),
     runs=[I({"items": ["in"]}), {"resume": "yes"}])

case("interrupt", "interrupt_resume_with_object_value",
     {"a": {"interrupt": [{"question": "meta?", "n": 1}], "then": {"meta": "$answer"}}},
     chain(S, "a", E),
     runs=[I({"meta": {"k": 0}}), {"resume": {"k": 1, "j": [1, 2]}}])

case("interrupt", "interrupt_twice_in_one_node",
     {"a": {"interrupt": ["q1", "q2"], "then": {"items": ["$answer0", "$answer1"], "last": "$answer"}},
      "b": {"items": ["b"]}},
     chain(S, "a", "b", E),
     runs=[I({}), {"resume": "A"}, {"resume": "B"}],
     note="each resume re-runs a from the start; the i-th interrupt() call returns the i-th answer")

case("interrupt", "interrupt_with_sibling_that_finished",
     {"a": ASK, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], [S, "b"], ["a", "c"], ["b", "c"], ["c", E]],
     runs=[I({}), {"resume": "A"}],
     note="on resume b is not re-run (executed lists only a); its saved update is streamed with cached: true")

case("interrupt", "two_parallel_interrupts_resume_by_id",
     {"a": {"interrupt": ["qa"], "then": {"items": ["a:$answer"]}},
      "b": {"interrupt": ["qb"], "then": {"items": ["b:$answer"]}}},
     [[S, "a"], [S, "b"], ["a", E], ["b", E]],
     runs=[I({}), {"resume_by_value": {"qa": "A", "qb": "B"}}])

case("interrupt", "two_parallel_interrupts_resume_one_at_a_time",
     {"a": {"interrupt": ["qa"], "then": {"items": ["a:$answer"]}},
      "b": {"interrupt": ["qb"], "then": {"items": ["b:$answer"]}}},
     [[S, "a"], [S, "b"], ["a", E], ["b", E]],
     runs=[I({}), {"resume_by_value": {"qb": "B"}}, {"resume_by_value": {"qa": "A"}}])

case("interrupt", "two_parallel_interrupts_single_resume_value_error",
     {"a": {"interrupt": ["qa"], "then": {"items": ["a:$answer"]}},
      "b": {"interrupt": ["qb"], "then": {"items": ["b:$answer"]}}},
     [[S, "a"], [S, "b"], ["a", E], ["b", E]],
     runs=[I({}), {"resume": "X"}])

case("interrupt", "send_workers_interrupt_resume_by_id",
     {"a": None, "w": {"interrupt": ["q-$item"], "then": {"items": ["$item=$answer"]}},
      "collect": {"last": "collected"}},
     [[S, "a"], ["w", "collect"], ["collect", E]],
     [{"from": "a", "send_each": "items", "to": "w"}],
     runs=[I({"items": ["1", "2"]}), {"resume_by_value": {"q-2": "B", "q-1": "A"}}])

case("interrupt", "resume_after_graph_finished",
     {"a": {"items": ["a"]}},
     chain(S, "a", E),
     runs=[I({}), {"resume": "late"}, I(None)])

case("interrupt", "resume_on_fresh_thread",
     {"a": {"items": ["a"]}},
     chain(S, "a", E),
     runs=[{"resume": "x"}])

case("interrupt", "resume_on_fresh_thread_reaches_interrupt",
     {"a": ASK, "b": {"items": ["b"]}},
     chain(S, "a", "b", E),
     runs=[{"resume": "early"}, {"resume": "A"}],
     note="on a thread with no checkpoint, Command(resume=...) is taken as the graph input (written to __start__)")

case("interrupt", "input_none_while_interrupted",
     {"a": ASK, "b": {"items": ["b"]}},
     chain(S, "a", "b", E),
     runs=[I({}), I(None), {"resume": "A"}],
     note="invoke(None) re-runs the interrupted node without an answer: it interrupts again")

case("interrupt", "new_input_while_interrupted",
     {"a": ASK, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], [S, "b"], ["a", "c"], ["b", "c"], ["c", E]],
     runs=[I({"items": ["t1"]}), I({"items": ["t2"]}), {"resume": "A"}],
     note="the second input starts a new run from START on the saved state")

# 6. recursion limit ------------------------------------------------------------------------

case("recursion", "recursion_limit_infinite_loop",
     {"a": {"items": ["a"]}},
     [[S, "a"]],
     [{"from": "a", "by": "last", "map": {}, "default": "a"}],
     config={"recursion_limit": 5})

case("recursion", "recursion_limit_one_under_ok",
     {"a": {"items": ["a"]}},
     [[S, "a"]],
     [{"from": "a", "by": "len(items)", "map": {"4": "__end__"}, "default": "a"}],
     config={"recursion_limit": 5},
     note="4 node steps with recursion_limit 5")

case("recursion", "recursion_limit_exactly_reached",
     {"a": {"items": ["a"]}},
     [[S, "a"]],
     [{"from": "a", "by": "len(items)", "map": {"5": "__end__"}, "default": "a"}],
     config={"recursion_limit": 5},
     note="5 node steps with recursion_limit 5: the graph is done (next is empty) but the limit check comes first")

case("recursion", "recursion_limit_one_step_over",
     {"a": {"items": ["a"]}},
     [[S, "a"]],
     [{"from": "a", "by": "len(items)", "map": {"6": "__end__"}, "default": "a"}],
     config={"recursion_limit": 5},
     note="6 node steps needed with recursion_limit 5")

case("recursion", "recursion_limit_counts_supersteps_not_tasks",
     {"a": {"items": ["a"]}, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     [[S, "a"], [S, "b"], [S, "c"], ["b", E], ["c", E]],
     [{"from": "a", "by": "len(items)", "map": {"5": "__end__"}, "default": "a"}],
     config={"recursion_limit": 3},
     note="3 tasks in step 1, then a alone; items grows by 3 then 1 per step")


case("recursion", "recursion_limit_after_resume",
     {"a": ASK, "b": {"items": ["b"]}},
     [[S, "a"], ["a", "b"]],
     [{"from": "b", "by": "last", "map": {}, "default": "b"}],
     config={"recursion_limit": 3},
     runs=[I({}), {"resume": "A"}],
     note="the limit counts from the step the run starts at; a resumed run re-runs the interrupted step")

case("recursion", "recursion_limit_second_input_on_thread",
     {"a": {"items": ["a"]}, "b": {"items": ["b"]}, "c": {"items": ["c"]}},
     chain(S, "a", "b", "c", E),
     config={"recursion_limit": 3},
     runs=[I({}), I({"items": ["again"]})],
     note="3 node steps per run with recursion_limit 3: both runs fail the same way; the second starts at the saved step")


# --------------------------------------------------------------------------------------------


def versions() -> dict:
    v = {"python": ".".join(map(str, sys.version_info[:3]))}
    for pkg in ("langgraph", "langchain-core", "langgraph-checkpoint", "pydantic"):
        v[pkg] = metadata.version(pkg)
    return v


def main() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"
    cases = [run_case(c) for c in CASES]
    groups: dict[str, int] = {}
    for c in cases:
        groups[c["group"]] = groups.get(c["group"], 0) + 1
    doc = {
        "generator": "gen_graph_vectors.py (runs real compiled StateGraphs with InMemorySaver)",
        "versions": versions(),
        "schema": SCHEMA,
        "format": FORMAT,
        "count": len(cases),
        "groups": groups,
        "cases": cases,
    }
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({len(cases)} cases: {groups})")


if __name__ == "__main__":
    main()
