#!/usr/bin/env python3
"""LangGraph's side of BENCHMARKS.md, with the same data as the Rust benches.

Workloads (names match the criterion groups of state-core's benches):

- add_messages_append/N: LangGraph's `add_messages(history, [new AI message])`
  on a history of N messages (N = 100 ... 100,000);
- add_messages_update/N: `add_messages(history, [message with the id of the
  middle one])`;
- apply_all (superstep): one superstep of 4 parallel nodes on the 40-field
  Alpha Berkeley state with a 10,000-message history, through LangGraph's own
  `apply_writes` and channels (BinaryOperatorAggregate with `add_messages` for
  `messages`, with the context merge for `capability_context_data`,
  LastValue for the 38 other fields). Each node writes one message, one
  context entry and one field of its own, as `parallel_deltas` in
  state-core/benches/common/mod.rs.

Messages are built exactly as `history_message`/`new_message` there: ids
`m{i}` and `new{i}`, human/AI alternating, the same content strings.

Usage:
    python3 bench.py                      # LangGraph only
    python3 bench.py --criterion DIR      # and ours, from criterion's output
    python3 bench.py --run-cargo          # run `cargo bench` first, then both
    python3 bench.py --quick              # fewer sizes and repeats
Writes results.json next to this file (read by scripts/plot_add_messages.py).
Run through ./run.sh, which makes the venv and installs langgraph.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SIZES = [100, 1_000, 10_000, 100_000]
SUPERSTEP_HISTORY = 10_000


def human(i):
    from langchain_core.messages import HumanMessage

    return HumanMessage(
        content=f"question number {i}: what is the status of the beam line?", id=f"m{i}"
    )


def ai(i):
    from langchain_core.messages import AIMessage

    return AIMessage(
        content=f"answer number {i}: the beam line is nominal, current 500 mA.", id=f"m{i}"
    )


def history(n):
    return [human(i) if i % 2 == 0 else ai(i) for i in range(n)]


def new_message(i):
    from langchain_core.messages import AIMessage

    return AIMessage(
        content="the orbit correction finished; 3 correctors moved.", id=f"new{i}"
    )


def edited_message(msg_id):
    from langchain_core.messages import AIMessage

    return AIMessage(content="edited: the beam line is nominal.", id=msg_id)


def per_call_ns(fn, repeats, budget_s):
    """Median over `repeats` runs of the mean time of one call, in ns. Each
    run makes as many calls as fit in `budget_s` (at least one)."""
    start = time.perf_counter_ns()
    fn()
    once = max(time.perf_counter_ns() - start, 1)
    number = max(1, int(budget_s * 1e9 / once))
    results = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(number):
            fn()
        results.append((time.perf_counter_ns() - start) / number)
    return statistics.median(results)


def bench_add_messages(sizes, repeats, budget):
    from langgraph.graph.message import add_messages

    out = {}
    for n in sizes:
        hist = history(n)
        append = [new_message(0)]
        update = [edited_message(f"m{n // 2}")]
        # add_messages returns a new list; `hist` is never changed.
        out[f"add_messages_append/{n}"] = per_call_ns(
            lambda: add_messages(hist, append), repeats, budget
        )
        out[f"add_messages_update/{n}"] = per_call_ns(
            lambda: add_messages(hist, update), repeats, budget
        )
        print(
            f"  LangGraph n={n:>7}: append {fmt(out[f'add_messages_append/{n}'])}, "
            f"update {fmt(out[f'add_messages_update/{n}'])}",
            flush=True,
        )
    return out


# The 40 fields of the bench state (state-core/benches/common/mod.rs).
FIELDS = """messages capability_context_data session_id agent_control status_updates
progress_events task_current_task task_depends_on_chat_history task_depends_on_user_memory
task_custom_message planning_active_capabilities planning_execution_plan
planning_current_step_index execution_step_results execution_last_result
execution_pending_approvals execution_start_time execution_total_time approval_approved
approved_payload control_needs_reclassification control_reclassification_reason
control_reclassification_count control_plans_created_count control_current_step_retry_count
control_retry_count control_has_error control_error_info control_last_error
control_max_retries control_is_killed control_kill_reason control_is_awaiting_validation
control_validation_context control_validation_timestamp ui_notebook_links
ui_captured_figures ui_agent_context runtime_checkpoint_metadata runtime_info""".split()
assert len(FIELDS) == 40


def merge_capability_context_data(existing, new):
    """The Alpha Berkeley reducer, without the seed's deepcopy (which would
    only make LangGraph slower): new types added, new keys added, a key's
    record replaced whole. Copies the two outer levels, as a LangGraph
    reducer must not change the stored value."""
    result = dict(existing)
    for context_type, contexts in new.items():
        merged = dict(result.get(context_type, {}))
        merged.update(contexts)
        result[context_type] = merged
    return result


def step_result():
    return {
        "success": True,
        "data": {"pv": "SR:C01-BI{BPM:1}Pos:X-I", "value": 0.0132},
        "error": None,
        "execution_time": 0.84,
    }


def context(kind, key):
    return {kind: {key: {"value": key}}}


def bench_superstep(repeats, budget, n=SUPERSTEP_HISTORY):
    from langgraph.channels import BinaryOperatorAggregate, LastValue
    from langgraph.graph.message import add_messages

    try:  # LangGraph's own superstep; internal API, so keep a fallback.
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.pregel._algo import PregelTaskWrites, apply_writes
    except ImportError:
        from collections import namedtuple

        PregelTaskWrites = namedtuple("PregelTaskWrites", "path name writes triggers")
        apply_writes = None
        print("  (langgraph.pregel._algo.apply_writes not found: updating the "
              "channels directly, as apply_writes does)", flush=True)

    base_history = history(n)
    channels = {}
    for name in FIELDS:
        if name == "messages":
            channels[name] = BinaryOperatorAggregate(list, add_messages)
        elif name == "capability_context_data":
            channels[name] = BinaryOperatorAggregate(dict, merge_capability_context_data)
        else:
            channels[name] = LastValue(object, name)
    tasks = [
        PregelTaskWrites(
            ("__pregel_pull", "cap_a"),
            "cap_a",
            [
                ("messages", [new_message(0)]),
                ("capability_context_data", context("PV_ADDRESSES", "a")),
                ("execution_last_result", step_result()),
            ],
            ("branch:to:cap_a",),
        ),
        PregelTaskWrites(
            ("__pregel_pull", "cap_b"),
            "cap_b",
            [
                ("messages", [new_message(1)]),
                ("capability_context_data", context("PV_VALUES", "b")),
                ("ui_notebook_links", ["notebook.ipynb"]),
            ],
            ("branch:to:cap_b",),
        ),
        PregelTaskWrites(
            ("__pregel_pull", "cap_c"),
            "cap_c",
            [
                ("messages", [new_message(2)]),
                ("capability_context_data", context("TIME_RANGE", "c")),
                ("control_retry_count", 1),
            ],
            ("branch:to:cap_c",),
        ),
        PregelTaskWrites(
            ("__pregel_pull", "cap_d"),
            "cap_d",
            [
                ("messages", [new_message(3)]),
                ("capability_context_data", context("ARCHIVER_DATA", "d")),
                ("execution_start_time", 1.0e9),
            ],
            ("branch:to:cap_d",),
        ),
    ]
    checkpoint = empty_checkpoint() if apply_writes else None

    def next_version(current, _channel):
        return (current or 0) + 1

    def by_hand():
        pending = {}
        for task in tasks:
            for chan, value in task.writes:
                pending.setdefault(chan, []).append(value)
        for chan, values in pending.items():
            channels[chan].update(values)

    def superstep():
        # Back to the same starting state, O(1): channel values are replaced,
        # never mutated, by LangGraph's reducers.
        channels["messages"].value = base_history
        channels["capability_context_data"].value = {}
        if apply_writes:
            apply_writes(checkpoint, channels, tasks, next_version, {})
        else:
            by_hand()

    superstep()
    assert len(channels["messages"].value) == n + 4
    t = per_call_ns(superstep, repeats, budget)
    print(f"  LangGraph superstep (4 nodes, {n} messages): {fmt(t)}", flush=True)
    return {"apply_all": t}


def fmt(ns):
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def criterion_estimate(path):
    """Criterion's headline estimate in ns: the slope when it sampled
    linearly, else the mean (what its console prints in the middle)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for key in ("slope", "mean"):
        value = data.get(key)
        if isinstance(value, dict) and "point_estimate" in value:
            return float(value["point_estimate"])
    return None


def read_ours(criterion_dir, sizes):
    root = Path(criterion_dir)
    ours = {}
    for group in ("add_messages_append", "add_messages_update"):
        for kind in ("Messages", "Vec"):
            for n in sizes:
                est = criterion_estimate(root / group / kind / str(n) / "new" / "estimates.json")
                if est is not None:
                    ours[f"{group}/{kind}/{n}"] = est
    for group in ("apply_all", "apply", "begin_turn"):
        for impl in ("generated", "hand_written"):
            est = criterion_estimate(root / group / impl / "new" / "estimates.json")
            if est is not None:
                ours[f"{group}/{impl}"] = est
    return ours


def default_criterion_dir():
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    return Path(target) / "criterion"


def run_cargo():
    cmd = [
        "cargo", "bench", "-p", "state-core",
        "--bench", "add_messages", "--bench", "apply",
    ]
    print("running:", " ".join(cmd), flush=True)
    subprocess.run(cmd, cwd=REPO, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--criterion", help="criterion output dir (target/criterion)")
    parser.add_argument("--run-cargo", action="store_true", help="run cargo bench first")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = parser.parse_args()

    sizes = SIZES[:3] if args.quick else SIZES
    repeats, budget = (3, 0.1) if args.quick else (7, 0.3)

    if args.run_cargo:
        run_cargo()
    criterion_dir = Path(args.criterion) if args.criterion else default_criterion_dir()

    import langgraph
    import langchain_core

    lg_version = getattr(langgraph, "__version__", None)
    if lg_version is None:
        from importlib.metadata import version

        lg_version = version("langgraph")
    print(
        f"LangGraph {lg_version}, langchain-core {langchain_core.__version__}, "
        f"Python {platform.python_version()}",
        flush=True,
    )
    theirs = {}
    theirs.update(bench_add_messages(sizes, repeats, budget))
    theirs.update(bench_superstep(repeats, budget))

    ours = read_ours(criterion_dir, SIZES) if criterion_dir.is_dir() else {}
    if not ours:
        print(f"(no criterion results under {criterion_dir}: LangGraph times only)")

    rows = []
    for group in ("add_messages_append", "add_messages_update"):
        for n in sizes:
            lg = theirs.get(f"{group}/{n}")
            m = ours.get(f"{group}/Messages/{n}")
            v = ours.get(f"{group}/Vec/{n}")
            rows.append((f"{group}/{n}", m, v, lg))
    rows.append((f"apply_all (superstep, {SUPERSTEP_HISTORY} msgs)",
                 ours.get("apply_all/generated"), ours.get("apply_all/hand_written"),
                 theirs.get("apply_all")))

    print()
    print(f"{'workload':<42} {'ours: Messages':>15} {'Vec / hand':>12} "
          f"{'LangGraph':>12} {'LangGraph / ours':>17}")
    for name, m, v, lg in rows:
        ratio = f"{lg / m:,.0f}x" if (lg and m) else "-"
        print(f"{name:<42} {fmt(m):>15} {fmt(v):>12} {fmt(lg):>12} {ratio:>17}")
    print("(superstep row: 'ours' = derived apply_all, second column = hand-written)")

    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "langgraph": lg_version,
            "langchain_core": langchain_core.__version__,
        },
        "unit": "ns per call",
        "langgraph": theirs,
        "ours": ours,
        "criterion_dir": str(criterion_dir),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
