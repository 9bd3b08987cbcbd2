#!/usr/bin/env python3
"""LangGraph's side of the agent benchmarks (BENCHMARKS.md, "Agents:
Command, subgraphs, get_state"; issue 32): the workloads of
state-graph/benches/agents.rs, with the same graphs and the same data.

- handoff: a supervisor loop of 10 handoffs. The state is `messages`
  (`add_messages`), `count` (an int) and `next` (a str). `supervisor`
  appends one AIMessage with an id (`s{count}`) and hands off to `worker`
  while `count < 10`, else ends; `worker` appends one AIMessage (`w{count}`,
  the loop's text) and increments `count`; an edge goes from `worker` back
  to `supervisor`: 21 supersteps per run. Two ways to hand off:
  `command`: `supervisor` returns `Command(goto=next, update={...})`,
  added with `destinations=("worker", END)`; `router`: it returns
  `{"messages": [...], "next": next}` and a conditional edge routes on
  `state["next"]`. One run is one `invoke` (per run), without a
  checkpointer and with `InMemorySaver` (a new thread per run, deleted
  untimed after it).
- subgraph/N: graph_bench.py's two-node loop of N supersteps (N = 10, 100)
  run `direct` (the loop is the graph), as a `subgraph` (the compiled loop
  added as the node `inner` of a parent START -> inner -> END over the same
  state), or `mapped` (the node `inner` is a function that invokes the loop
  compiled over another TypedDict with the parent's messages and count, and
  returns the messages it added and its count: LangGraph's subgraph of
  another state type). Per superstep of the loop (a run's time / N).
  Without a checkpointer and with `InMemorySaver` (the child runs under the
  parent's checkpointer, as LangGraph does by default).
- get_state/N: a thread on which the loop ran once with N = 100 or 1,000
  supersteps on `InMemorySaver`; `graph.get_state(config)` on it, per call.
  Beside it, for reference, `saver.get_tuple(config)` (the checkpointer
  loading the thread's last checkpoint, what get_state builds on).

Usage (make the venv once with run.sh, or by hand as run.sh does):
    benches/langgraph/.venv/bin/python benches/langgraph/agent_bench.py
    ... agent_bench.py --quick                   # fewer runs
    ... agent_bench.py --only handoff            # one workload
    ... agent_bench.py --criterion DIR           # ours from criterion's output
    ... agent_bench.py --reuse                   # LangGraph's rows from the last results file
Prints LangGraph beside ours (criterion's estimates from
`cargo bench -p state-graph --bench agents`, in target/criterion by default,
and target/state-graph-agents-paired.json, its interleaved runs) with the
ratios and the targets, and writes agent_results.json next to this file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph.message import add_messages

sys.path.insert(0, str(Path(__file__).resolve().parent))
from graph_bench import (  # noqa: E402  (the loop, the timing, the formatting)
    LoopState,
    build_loop,
    criterion_estimate,
    fmt_s,
    loop_input,
    stats,
    time_runs,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
HANDOFFS = 10
HANDOFF_STEPS = 2 * HANDOFFS + 1
SUB_SIZES = [10, 100]
THREAD_SIZES = [100, 1_000]
SAVERS = ["none", "memory"]


class Team(TypedDict):
    messages: Annotated[list, add_messages]
    count: int
    next: str


class Inner(TypedDict):
    messages: Annotated[list, add_messages]
    count: int


def team_input():
    from langchain_core.messages import HumanMessage

    return {"messages": [HumanMessage(content="run the team", id="h0")], "count": 0}


def build_handoff(variant, checkpointer):
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command

    def choice(state):
        return "worker" if state["count"] < HANDOFFS else END

    def message(state):
        c = state["count"]
        return AIMessage(content=f"supervisor {c}: the worker goes next.", id=f"s{c}")

    def supervisor_command(state):
        return Command(goto=choice(state), update={"messages": [message(state)]})

    def supervisor_router(state):
        return {"messages": [message(state)], "next": choice(state)}

    def worker(state):
        c = state["count"]
        return {
            "messages": [
                AIMessage(content=f"step {c}: the beam line is nominal, current 500 mA.",
                          id=f"w{c}")
            ],
            "count": c + 1,
        }

    builder = StateGraph(Team)
    if variant == "command":
        builder.add_node("supervisor", supervisor_command, destinations=("worker", END))
    else:
        builder.add_node("supervisor", supervisor_router)
        builder.add_conditional_edges("supervisor", lambda s: s["next"], ["worker", END])
    builder.add_node("worker", worker)
    builder.add_edge(START, "supervisor")
    builder.add_edge("worker", "supervisor")
    return builder.compile(checkpointer=checkpointer)


def build_inner(n):
    """The loop over `Inner` (graph_bench.py's build_loop, another state)."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import END, START, StateGraph

    def agent(state):
        c = state["count"]
        return {
            "messages": [
                AIMessage(content=f"step {c}: the beam line is nominal, current 500 mA.",
                          id=f"a{c}")
            ]
        }

    def count(state):
        return {"count": state["count"] + 1}

    def again(state):
        return "agent" if state["count"] * 2 < n else END

    builder = StateGraph(Inner)
    builder.add_node("agent", agent)
    builder.add_node("count", count)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "count")
    builder.add_conditional_edges("count", again, ["agent", END])
    return builder.compile()


def build_sub(variant, n, checkpointer):
    from langgraph.graph import END, START, StateGraph

    if variant == "direct":
        return build_loop(n, checkpointer)
    builder = StateGraph(LoopState)
    if variant == "subgraph":
        # The compiled loop as a node; it runs under the parent's checkpointer.
        builder.add_node("inner", build_loop(n, None))
    else:
        inner = build_inner(n)

        def call_inner(state, config):
            out = inner.invoke({"messages": state["messages"], "count": state["count"]},
                               config)
            return {"messages": out["messages"][len(state["messages"]):],
                    "count": out["count"]}

        builder.add_node("inner", call_inner)
    builder.add_edge(START, "inner")
    builder.add_edge("inner", END)
    return builder.compile(checkpointer=checkpointer)


class Saver:
    """No checkpointer, or an InMemorySaver, with a new thread per run."""

    def __init__(self, kind):
        self.kind = kind
        if kind == "none":
            self.saver = None
        else:
            from langgraph.checkpoint.memory import InMemorySaver

            self.saver = InMemorySaver()
        self.threads = 0

    def config(self, extra=None):
        config = dict(extra or {})
        if self.saver is not None:
            self.threads += 1
            config["configurable"] = {"thread_id": f"{self.kind}-{self.threads}"}
        return config

    def drop(self, config):
        if self.saver is not None:
            self.saver.delete_thread(config["configurable"]["thread_id"])


def report(row, label, what):
    print(f"  LangGraph {label:<34} {fmt_s(row['mean_s']):>9} {what} "
          f"(median {fmt_s(row['median_s'])}, {row['runs']} runs)", flush=True)


def bench_handoff(savers, quick):
    rows = []
    for kind in savers:
        saver = Saver(kind)
        for variant in ("command", "router"):
            graph = build_handoff(variant, saver.saver)

            def run():
                config = saver.config({"recursion_limit": HANDOFF_STEPS + 10})
                inp = team_input()
                start = time.perf_counter()
                out = graph.invoke(inp, config)
                elapsed = time.perf_counter() - start
                assert out["count"] == HANDOFFS, out["count"]
                assert len(out["messages"]) == HANDOFF_STEPS + 1
                assert out["messages"][-1].id == "s10"
                saver.drop(config)
                return elapsed

            times = time_runs(run, 10 if quick else 30, 2_000, 1.0 if quick else 4.0)
            row = {"workload": "handoff", "variant": variant, "checkpointer": kind,
                   **stats(times)}
            report(row, f"handoff {variant} {kind}", "per run")
            rows.append(row)
    return rows


def bench_subgraph(sizes, savers, quick):
    rows = []
    for kind in savers:
        saver = Saver(kind)
        for n in sizes:
            for variant in ("direct", "subgraph", "mapped"):
                graph = build_sub(variant, n, saver.saver)

                def run():
                    config = saver.config({"recursion_limit": n + 10})
                    inp = loop_input()
                    start = time.perf_counter()
                    out = graph.invoke(inp, config)
                    elapsed = time.perf_counter() - start
                    assert out["count"] == n // 2, out["count"]
                    assert len(out["messages"]) == n // 2 + 1, len(out["messages"])
                    saver.drop(config)
                    return elapsed

                budget = (1.0 if quick else 4.0) if n <= 10 else (2.0 if quick else 6.0)
                times = time_runs(run, 5 if quick else 10, 2_000, budget)
                row = {"workload": "subgraph", "variant": variant, "n": n,
                       "checkpointer": kind, **stats(times, per=n)}
                report(row, f"subgraph/{n} {variant} {kind}", "per superstep")
                rows.append(row)
    return rows


def bench_get_state(sizes, quick):
    rows = []
    saver = Saver("memory")
    for n in sizes:
        graph = build_loop(n, saver.saver)
        config = saver.config({"recursion_limit": n + 10})
        out = graph.invoke(loop_input(), config)
        assert out["count"] == n // 2

        def get_state():
            start = time.perf_counter()
            snap = graph.get_state(config)
            elapsed = time.perf_counter() - start
            assert snap.values["count"] == n // 2 and not snap.next
            assert len(snap.values["messages"]) == n // 2 + 1
            return elapsed

        def get_tuple():
            start = time.perf_counter()
            saved = saver.saver.get_tuple(config)
            elapsed = time.perf_counter() - start
            assert saved.checkpoint["channel_values"]["count"] == n // 2
            return elapsed

        for side, run in (("get_state", get_state), ("get_tuple", get_tuple)):
            times = time_runs(run, 20 if quick else 50, 20_000, 1.0 if quick else 3.0)
            row = {"workload": "get_state", "variant": side, "n": n,
                   "checkpointer": "memory", **stats(times)}
            report(row, f"{side}/{n} memory", "per call")
            rows.append(row)
        saver.drop(config)
    return rows


def read_ours(criterion_dir, paired_json):
    """Criterion's estimates (seconds: per run for handoff, per superstep
    for subgraph, per call for get_state), and under "paired" the
    interleaved runs that agents.rs writes after criterion's."""
    names = (
        [f"handoff/{b}/{v}" for b in ("no_store", "memory") for v in ("command", "router")]
        + [f"subgraph_{b}/{v}/{n}" for b in ("no_store", "memory", "sqlite")
           for v in ("direct", "subgraph", "mapped") for n in SUB_SIZES]
        + [f"get_state_{b}/{s}/{n}" for b in ("memory", "sqlite")
           for s in ("get_state", "load") for n in THREAD_SIZES]
    )
    ours = {}
    for name in names:
        est = criterion_estimate(Path(criterion_dir) / name / "new" / "estimates.json")
        if est is not None:
            ours[name] = est * 1e-9
    try:
        ours["paired"] = json.loads(Path(paired_json).read_text())
    except (OSError, ValueError):
        pass
    return ours


def side_by_side(theirs, ours):
    def lg(workload, variant, checkpointer, n=None):
        for r in theirs:
            if (r["workload"] == workload and r["variant"] == variant
                    and r["checkpointer"] == checkpointer and r.get("n") == n):
                return r["mean_s"]
        return None

    paired = {row["label"]: row for row in ours.get("paired", [])}
    lines = []

    def line(label, us, them, target=None, floor=None):
        ratio = f"{them / us:,.0f}x" if us and them else "-"
        verdict = ""
        if floor is not None and us and them:
            verdict = "  met" if them / us >= floor else "  NOT MET"
        lines.append(f"{label:<48} {fmt_s(us):>9} {fmt_s(them):>9} {ratio:>9}   "
                     f"{target or '(no target)'}{verdict}")

    def ratio_line(label, key, limit):
        p = paired.get(key)
        if not p:
            return
        # Judged on the median of the pairs (BENCHMARKS.md section 11): a
        # slow round on either side moves the means, not the median.
        judged = p["median_pair_ratio"]
        lines.append(f"{label:<48} {p['ratio_of_means']:.3f}x of the means, "
                     f"{p['median_pair_ratio']:.3f}x median pair "
                     f"({fmt_s(p['a_mean_s'])} vs {fmt_s(p['b_mean_s'])}, {p['rounds']} rounds, "
                     f"load {p['load_average']})  target <= {limit}x  "
                     + ("met" if judged <= limit else "NOT MET"))

    print()
    print(f"{'workload (ours / LangGraph)':<48} {'ours':>9} {'LangGraph':>9} {'LG/ours':>9}   target")
    for backend, kind in (("no_store", "none"), ("memory", "memory")):
        saver = "no checkpointer" if kind == "none" else "InMemorySaver"
        for variant in ("command", "router"):
            target = ">= 100x" if (kind == "memory" and variant == "command") else None
            line(f"10 handoffs, {variant}, {backend} / {saver}",
                 ours.get(f"handoff/{backend}/{variant}"), lg("handoff", variant, kind),
                 target, 100 if target else None)
        ratio_line(f"  ours: command / router, {backend} (paired)",
                   f"handoff/{backend}", 1.05)
    for backend, kind in (("no_store", "none"), ("memory", "memory"), ("sqlite", None)):
        saver = {"none": "no checkpointer", "memory": "InMemorySaver", None: "-"}[kind]
        for n in SUB_SIZES:
            for variant in ("direct", "subgraph", "mapped"):
                us = ours.get(f"subgraph_{backend}/{variant}/{n}")
                them = lg("subgraph", variant, kind, n) if kind else None
                target = (">= 100x" if (kind == "memory" and variant != "direct") else None)
                line(f"loop/{n} {variant}, {backend} / {saver}, per superstep", us, them,
                     target, 100 if target else None)
            for variant in ("subgraph", "mapped"):
                ratio_line(f"  ours: {variant} / direct, {backend}, {n} (paired)",
                           f"subgraph/{backend}/{variant}/{n}", 1.2)
    for n in THREAD_SIZES:
        line(f"get_state, {n} steps, memory / InMemorySaver",
             ours.get(f"get_state_memory/get_state/{n}"), lg("get_state", "get_state", "memory", n),
             ">= 100x", 100)
        line(f"  load, {n} steps, memory / get_tuple",
             ours.get(f"get_state_memory/load/{n}"), lg("get_state", "get_tuple", "memory", n))
        for backend in ("memory", "sqlite"):
            g = ours.get(f"get_state_{backend}/get_state/{n}")
            ld = ours.get(f"get_state_{backend}/load/{n}")
            if g and ld:
                lines.append(f"{f'  ours: get_state / load, {backend}, {n} (criterion)':<48} "
                             f"{g / ld:.3f}x ({fmt_s(g)} vs {fmt_s(ld)})")
            ratio_line(f"  ours: get_state / load, {backend}, {n} (paired)",
                       f"get_state/{backend}/{n}", 1.0)
    print("\n".join(lines))
    if not any(k != "paired" for k in ours):
        print("(no criterion results found: run `cargo bench -p state-graph --bench agents` first)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["handoff", "subgraph", "get_state"])
    parser.add_argument("--savers", default=",".join(SAVERS),
                        help="checkpointers for handoff and subgraph: none,memory")
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--criterion", help="criterion output dir (default target/criterion)")
    parser.add_argument("--out", default=str(HERE / "agent_results.json"))
    parser.add_argument("--reuse", action="store_true",
                        help="take LangGraph's rows from --out instead of running them "
                             "(to print them beside new criterion results)")
    args = parser.parse_args()
    savers = [s for s in args.savers.split(",") if s.strip()]

    import langchain_core
    from importlib.metadata import version

    versions = {name: version(name) for name in ("langgraph", "langgraph-checkpoint")}
    versions["langchain-core"] = langchain_core.__version__
    print(", ".join(f"{k} {v}" for k, v in versions.items()) +
          f", Python {platform.python_version()}; load average "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)

    if args.reuse:
        previous = json.loads(Path(args.out).read_text())
        theirs = previous["langgraph"]
        versions = previous["versions"]
        load = previous.get("load_average")
    else:
        theirs = []
        if args.only in (None, "handoff"):
            theirs += bench_handoff(savers, args.quick)
        if args.only in (None, "subgraph"):
            theirs += bench_subgraph(SUB_SIZES, savers, args.quick)
        if args.only in (None, "get_state"):
            theirs += bench_get_state(THREAD_SIZES, args.quick)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())

    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    criterion_dir = Path(args.criterion) if args.criterion else target / "criterion"
    ours = read_ours(criterion_dir, target / "state-graph-agents-paired.json")
    side_by_side(theirs, ours)

    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "versions": versions,
        "load_average": load,
        "workloads": "see agent_bench.py's docstring and state-graph/benches/agents.rs; "
                     "seconds; handoff per run, subgraph per superstep of the loop, "
                     "get_state per call (ours: criterion's estimates, and the paired runs)",
        "langgraph": theirs,
        "ours": ours,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
