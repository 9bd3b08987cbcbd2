#!/usr/bin/env python3
"""LangGraph's side of the graph runner's benchmarks (BENCHMARKS.md, "The
graph runner"): the workloads of state-graph/benches/runner.rs, with the
same graphs and the same data.

- loop/N: a two-node loop. The state is `messages` (`add_messages`) and
  `count` (an int); node `agent` appends one AIMessage with an id
  (`a{count}`, the same text as the Rust bench), node `count` increments the
  counter, and a conditional edge after `count` goes back to `agent` while
  `count * 2 < N`, else to END: N supersteps per run (N = 100, 1,000). The
  input is one HumanMessage (id `h0`) and `count = 0`. One run is one
  `graph.invoke(input, config)`; the figure is the run's time divided by N
  (per superstep), as criterion's for ours. Checkpointers: none,
  `InMemorySaver`, `SqliteSaver` (a file in a temporary directory, WAL,
  synchronous=FULL, as saver_bench.py opens it); with a checkpointer, each
  run is on a new thread id, deleted (untimed) after the run. The savers
  run with LangGraph's default durability (`"async"`: the checkpoint of
  superstep k is written in the background while superstep k+1 runs) and
  with `durability="sync"` (each checkpoint written before the next
  superstep, as our store does).
- interrupt_resume: START -> `approve` -> END, where `approve` calls
  `interrupt({"question": "run the plan?"})`, on `InMemorySaver`: one
  `invoke(input, config)` that pauses plus one
  `invoke(Command(resume="yes"), config)` that finishes, on a new thread.
- fan_out_64: a conditional edge from START returns
  `[Send("joke", {"subject": s}) for s in subjects]` for 64 subjects; the
  worker `joke` returns `{"jokes": [f"a joke about {subject}"]}`
  (`operator.add`), then END. One `invoke({"subjects": [...]})`; without a
  checkpointer and with `InMemorySaver`.

Usage (make the venv once with run.sh, or by hand as run.sh does):
    benches/langgraph/.venv/bin/python benches/langgraph/graph_bench.py
    ... graph_bench.py --quick                     # fewer runs
    ... graph_bench.py --only loop --sizes 100     # one workload
    ... graph_bench.py --criterion DIR             # ours from criterion's output
Prints LangGraph beside ours (criterion's estimates from
`cargo bench -p state-graph --bench runner`, in target/criterion by
default, and target/state-graph-runner-paired.json, its interleaved SQLite
runs) with the ratios and the targets, and writes graph_results.json next
to this file.
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph.message import add_messages

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SIZES = [100, 1_000]
WORKERS = 64
SAVERS = ["none", "memory", "sqlite"]
DURABILITIES = ["async", "sync"]


class LoopState(TypedDict):
    messages: Annotated[list, add_messages]
    count: int


class Jokes(TypedDict):
    subjects: list
    jokes: Annotated[list, operator.add]


def loop_input():
    from langchain_core.messages import HumanMessage

    return {"messages": [HumanMessage(content="start the loop", id="h0")], "count": 0}


def build_loop(n, checkpointer):
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

    builder = StateGraph(LoopState)
    builder.add_node("agent", agent)
    builder.add_node("count", count)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "count")
    builder.add_conditional_edges("count", again, ["agent", END])
    return builder.compile(checkpointer=checkpointer)


def build_interrupt(checkpointer):
    from langchain_core.messages import HumanMessage
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def approve(state):
        answer = interrupt({"question": "run the plan?"})
        return {"messages": [HumanMessage(content=answer, id="r1")],
                "count": state["count"] + 1}

    builder = StateGraph(LoopState)
    builder.add_node("approve", approve)
    builder.add_edge(START, "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=checkpointer)


def build_fan_out(checkpointer):
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    def fan(state):
        return [Send("joke", {"subject": s}) for s in state["subjects"]]

    def joke(inp):
        return {"jokes": [f"a joke about {inp['subject']}"]}

    builder = StateGraph(Jokes)
    builder.add_node("joke", joke)
    builder.add_conditional_edges(START, fan, ["joke"])
    builder.add_edge("joke", END)
    return builder.compile(checkpointer=checkpointer)


def subjects():
    return [f"subject {i}" for i in range(WORKERS)]


class Saver:
    """A checkpointer of a kind, with a way to drop a thread after a run."""

    def __init__(self, kind, tmp):
        self.kind = kind
        self.conn = None
        if kind == "none":
            self.saver = None
        elif kind == "memory":
            from langgraph.checkpoint.memory import InMemorySaver

            self.saver = InMemorySaver()
        elif kind == "sqlite":
            from langgraph.checkpoint.sqlite import SqliteSaver

            self.conn = sqlite3.connect(str(Path(tmp) / "graph.db"), check_same_thread=False)
            self.saver = SqliteSaver(self.conn)
            self.saver.setup()
        else:
            raise ValueError(kind)
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

    def close(self):
        if self.conn is not None:
            self.conn.close()


def time_runs(run, min_runs, max_runs, budget_s):
    """Times `run()` (which returns its own timed seconds) after one
    untimed warm-up: at least min_runs, then until budget_s or max_runs."""
    run()
    times = []
    spent = 0.0
    while len(times) < min_runs or (spent < budget_s and len(times) < max_runs):
        t = run()
        times.append(t)
        spent += t
    return times


def stats(times, per=1):
    return {
        "runs": len(times),
        "mean_s": statistics.mean(times) / per,
        "median_s": statistics.median(times) / per,
        "min_s": min(times) / per,
        "max_s": max(times) / per,
    }


def bench_loop(sizes, savers, durabilities, quick, tmp):
    rows = []
    for kind in savers:
        saver = Saver(kind, tmp)
        modes = [None] if kind == "none" else durabilities
        for n in sizes:
            graph = build_loop(n, saver.saver)
            for durability in modes:
                def run():
                    config = saver.config({"recursion_limit": n + 10})
                    inp = loop_input()
                    kwargs = {} if durability is None else {"durability": durability}
                    start = time.perf_counter()
                    out = graph.invoke(inp, config, **kwargs)
                    elapsed = time.perf_counter() - start
                    assert out["count"] == n // 2, out["count"]
                    assert len(out["messages"]) == n // 2 + 1
                    saver.drop(config)
                    return elapsed

                # A run at 1,000 with a saver takes seconds.
                budget = (1.0 if quick else 4.0) if n <= 100 else (2.0 if quick else 8.0)
                min_runs = 3 if quick else 5
                if kind != "none" and n >= 1_000:
                    min_runs = 2 if quick else 3
                times = time_runs(run, min_runs, 200, budget)
                row = {"workload": "loop", "n": n, "checkpointer": kind,
                       "durability": durability, **stats(times, per=n)}
                report(row, f"loop/{n} {kind}" + (f" ({durability})" if durability else ""),
                       "per superstep")
                rows.append(row)
        saver.close()
    return rows


def bench_interrupt(quick, tmp):
    from langgraph.types import Command

    saver = Saver("memory", tmp)
    graph = build_interrupt(saver.saver)

    def run():
        config = saver.config()
        inp = loop_input()
        start = time.perf_counter()
        paused = graph.invoke(inp, config)
        done = graph.invoke(Command(resume="yes"), config)
        elapsed = time.perf_counter() - start
        assert "__interrupt__" in paused, paused
        assert done["count"] == 1 and "__interrupt__" not in done
        saver.drop(config)
        return elapsed

    times = time_runs(run, 10 if quick else 30, 2_000, 1.0 if quick else 4.0)
    row = {"workload": "interrupt_resume", "checkpointer": "memory", **stats(times)}
    report(row, "interrupt_resume memory", "per round trip")
    return [row]


def bench_fan_out(savers, quick, tmp):
    rows = []
    for kind in [k for k in savers if k in ("none", "memory")]:
        saver = Saver(kind, tmp)
        graph = build_fan_out(saver.saver)

        def run():
            config = saver.config()
            inp = {"subjects": subjects()}
            start = time.perf_counter()
            out = graph.invoke(inp, config)
            elapsed = time.perf_counter() - start
            assert len(out["jokes"]) == WORKERS
            saver.drop(config)
            return elapsed

        times = time_runs(run, 5 if quick else 20, 1_000, 1.0 if quick else 4.0)
        row = {"workload": "fan_out_64", "checkpointer": kind, **stats(times)}
        report(row, f"fan_out_64 {kind}", "per run")
        rows.append(row)
        saver.close()
    return rows


def fmt_s(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def report(row, label, what):
    print(f"  LangGraph {label:<28} {fmt_s(row['mean_s']):>9} {what} "
          f"(median {fmt_s(row['median_s'])}, {row['runs']} runs)", flush=True)


def criterion_estimate(path):
    """Criterion's headline estimate in ns (slope if sampled linearly, else
    mean), as bench.py reads it."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for key in ("slope", "mean"):
        value = data.get(key)
        if isinstance(value, dict) and "point_estimate" in value:
            return float(value["point_estimate"])
    return None


OURS = (
    [f"loop_{b}/{f}/{n}" for b, f in (("no_store", "runner"), ("no_store", "hand_written"),
                                       ("memory", "runner"), ("memory", "apply_nodes"),
                                       ("sqlite", "runner"), ("sqlite", "apply_nodes"))
     for n in (100, 1_000)]
    + ["interrupt_resume/memory/runner", "fan_out_64/no_store/runner",
       "fan_out_64/no_store/hand_written", "fan_out_64/memory/runner"]
)


def read_ours(criterion_dir, paired_json):
    """Criterion's estimates (seconds: per superstep for loop_*, per run for
    the others), and under "paired" the interleaved SQLite runs that
    runner.rs writes after criterion's."""
    ours = {}
    for name in OURS:
        est = criterion_estimate(Path(criterion_dir) / name / "new" / "estimates.json")
        if est is not None:
            ours[name] = est * 1e-9
    try:
        ours["paired"] = json.loads(Path(paired_json).read_text())
    except (OSError, ValueError):
        pass
    return ours


def side_by_side(theirs, ours):
    def lg(workload, checkpointer="none", n=None, durability=None):
        for r in theirs:
            if (r["workload"] == workload and r["checkpointer"] == checkpointer
                    and r.get("n") == n and r.get("durability") == durability):
                return r["mean_s"]
        return None

    lines = []

    def line(label, us, them, target, met):
        ratio = f"{them / us:,.0f}x" if us and them else "-"
        lines.append(f"{label:<44} {fmt_s(us):>9} {fmt_s(them):>9} {ratio:>9}   {target}"
                     + ("" if met is None else ("  met" if met else "  NOT MET")))

    print()
    print(f"{'workload (ours / LangGraph)':<44} {'ours':>9} {'LangGraph':>9} {'LG/ours':>9}   target")
    for n in (100, 1_000):
        us = ours.get(f"loop_no_store/runner/{n}")
        them = lg("loop", "none", n)
        line(f"loop/{n} per superstep, no store", us, them, ">= 100x",
             us and them and them / us >= 100)
    a, b = ours.get("loop_no_store/runner/100"), ours.get("loop_no_store/runner/1000")
    if a and b:
        lines.append(f"{'  ours 1,000 / 100 (flat)':<44} {b / a:.2f}x  target <= 1.5x  "
                     + ("met" if b / a <= 1.5 else "NOT MET"))
    for n in (100, 1_000):
        us = ours.get(f"loop_no_store/runner/{n}")
        hand = ours.get(f"loop_no_store/hand_written/{n}")
        if us and hand:
            lines.append(f"{f'  runner / hand-written, {n}':<44} {us / hand:.2f}x "
                         f"({fmt_s(us)} vs {fmt_s(hand)})")
    for n in (100, 1_000):
        us = ours.get(f"loop_memory/runner/{n}")
        them = lg("loop", "memory", n, "async")
        line(f"loop/{n} per superstep, memory / InMemorySaver", us, them, ">= 100x",
             us and them and them / us >= 100)
        sync = lg("loop", "memory", n, "sync")
        if us and sync:
            lines.append(f"{'  (InMemorySaver, durability=sync)':<44} {fmt_s(us):>9} "
                         f"{fmt_s(sync):>9} {sync / us:>8,.0f}x")
        ap = ours.get(f"loop_memory/apply_nodes/{n}")
        if us and ap:
            lines.append(f"{f'  runner / apply_nodes (memory), {n}':<44} {us / ap:.2f}x "
                         f"({fmt_s(us)} vs {fmt_s(ap)})")
    paired = {row["n"]: row for row in ours.get("paired", [])}
    for n in (100, 1_000):
        us = ours.get(f"loop_sqlite/runner/{n}")
        ap = ours.get(f"loop_sqlite/apply_nodes/{n}")
        if us and ap:
            lines.append(f"{f'loop/{n} SQLite, criterion (runs apart)':<44} {us / ap:.2f}x "
                         f"({fmt_s(us)} vs {fmt_s(ap)})")
        p = paired.get(n)
        if p:
            worst = max(p["ratio_of_means"], p["median_pair_ratio"])
            lines.append(f"{f'loop/{n} SQLite, paired: runner / apply_nodes':<44} "
                         f"{p['ratio_of_means']:.2f}x of the means, {p['median_pair_ratio']:.2f}x "
                         f"median pair ({fmt_s(p['runner_mean_s'])} vs "
                         f"{fmt_s(p['apply_nodes_mean_s'])}, {p['pairs']} pairs)  target <= 1.2x  "
                         + ("met" if worst <= 1.2 else "NOT MET"))
        for d in ("async", "sync"):
            them = lg("loop", "sqlite", n, d)
            line(f"  SqliteSaver ({d}), {n}", us, them, "(no target)", None)
    us = ours.get("interrupt_resume/memory/runner")
    them = lg("interrupt_resume", "memory")
    line("interrupt + resume, memory / InMemorySaver", us, them, ">= 100x",
         us and them and them / us >= 100)
    us = ours.get("fan_out_64/no_store/runner")
    them = lg("fan_out_64", "none")
    line("fan-out to 64 workers, no store", us, them, ">= 100x",
         us and them and them / us >= 100)
    us = ours.get("fan_out_64/memory/runner")
    them = lg("fan_out_64", "memory")
    line("fan-out to 64, memory / InMemorySaver", us, them, "(no target)", None)
    print("\n".join(lines))
    if not any(k != "paired" for k in ours):
        print("(no criterion results found: run `cargo bench -p state-graph --bench runner` first)")


def run_langgraph(args, sizes, savers, durabilities):
    theirs = []
    with tempfile.TemporaryDirectory(prefix="graph-bench-") as tmp:
        if args.only in (None, "loop"):
            theirs += bench_loop(sizes, savers, durabilities, args.quick, tmp)
        if args.only in (None, "interrupt"):
            theirs += bench_interrupt(args.quick, tmp)
        if args.only in (None, "fan_out"):
            theirs += bench_fan_out(savers, args.quick, tmp)
    return theirs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="supersteps per loop run, comma-separated (default 100,1000)")
    parser.add_argument("--savers", default=",".join(SAVERS),
                        help="checkpointers for the loop: none,memory,sqlite")
    parser.add_argument("--durability", default=",".join(DURABILITIES),
                        help="durability modes with a saver (default async,sync)")
    parser.add_argument("--only", choices=["loop", "interrupt", "fan_out"])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--criterion", help="criterion output dir (default target/criterion)")
    parser.add_argument("--out", default=str(HERE / "graph_results.json"))
    parser.add_argument("--reuse", action="store_true",
                        help="take LangGraph's rows from --out instead of running them "
                             "(to print them beside new criterion results)")
    args = parser.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    savers = [s for s in args.savers.split(",") if s.strip()]
    durabilities = [d for d in args.durability.split(",") if d.strip()]

    import langchain_core
    from importlib.metadata import version

    versions = {name: version(name) for name in
                ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite")}
    versions["langchain-core"] = langchain_core.__version__
    versions["sqlite"] = sqlite3.sqlite_version
    print(", ".join(f"{k} {v}" for k, v in versions.items()) +
          f", Python {platform.python_version()}", flush=True)

    if args.reuse:
        previous = json.loads(Path(args.out).read_text())
        theirs = previous["langgraph"]
        versions = previous["versions"]
    else:
        theirs = run_langgraph(args, sizes, savers, durabilities)

    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    criterion_dir = Path(args.criterion) if args.criterion else target / "criterion"
    ours = read_ours(criterion_dir, target / "state-graph-runner-paired.json")
    side_by_side(theirs, ours)

    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "versions": versions,
        "workloads": "see graph_bench.py's docstring and state-graph/benches/runner.rs; "
                     "seconds; loop rows per superstep, the others per run "
                     "(ours: criterion's estimates, and the paired SQLite runs)",
        "langgraph": theirs,
        "ours": ours,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
