#!/usr/bin/env python3
"""LangGraph's checkpoint savers on BENCHMARKS.md section 7's workload.

A one-node graph appends one message per step to a history: the state is
LangGraph's MessagesState (`messages` with `add_messages`); a step is one
`graph.invoke({"messages": [HumanMessage(...)]}, config)` on a thread's
config, the graph START -> "chat" -> END, the node writing nothing (the
message is the input, as a user's turn). LangGraph saves three checkpoints
per invoke (the input, after START's writes, after the node) and, with
SqliteSaver, each one holds the whole state; PostgresSaver stores a new blob
of a channel only when the channel changed (once per step here). The
history is prefilled with one invoke of N messages (ids `m{i}`, human and
AI alternating, as bench.py and state-store/benches/common/mod.rs), then K
steps are timed one by one; each step's message is `step_message(i)`, the
same text and id scheme as the Rust bench.

Measured per backend and size N:
- seconds per step (mean and median of the K steps);
- bytes written per step: SqliteSaver, growth of the database file (the WAL
  checkpointed into it with RESTART before and after; the WAL grown first by
  a 40,000-message invoke on another thread, as in the Rust bench) and the
  bytes this process passed to write/pwrite (/proc/self/io wchar); PostgresSaver,
  growth of pg_total_relation_size of its tables (checkpoints,
  checkpoint_blobs, checkpoint_writes) and the WAL the server wrote;
- loading the thread: `saver.get_tuple(config)` (median of a few).

Also, as LangGraph's lower bound, `graph.update_state(config, {"messages":
[msg]})` per step (one checkpoint, no node run): `--update-state`.

Both savers run with LangGraph's defaults: SqliteSaver on a file (WAL
journal, synchronous=FULL as printed), PostgresSaver with psycopg's
autocommit connection on the server given by --pg-url (run.sh --savers
starts a throwaway PostgreSQL like the Rust bench's, fsync on).

Usage (through run.sh, which makes the venv):
    run.sh --savers                         # start PostgreSQL, run both savers
    run.sh --savers --sizes 10000 --steps 5
    python3 saver_bench.py --pg-url postgres://postgres@127.0.0.1:PORT/postgres
Prints LangGraph beside ours (criterion's append_step/load estimates and
target/state-store-bytes.json from `cargo bench -p state-store`) and writes
saver_results.json next to this file.
"""

from __future__ import annotations

import argparse
import json
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
SIZES = [100, 1_000, 10_000]
# Steps timed per size: LangGraph's step grows with the history.
DEFAULT_STEPS = {100: 50, 1_000: 30, 10_000: 20, 100_000: 3}
LOADS = 5
# Messages of a first invoke that grows SQLite's WAL past its automatic
# checkpoint, as state-store/benches/bytes.rs does.
WAL_WARM_UP = 40_000
PG_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations"]


def history(n):
    from langchain_core.messages import AIMessage, HumanMessage

    return [
        HumanMessage(
            content=f"question number {i}: what is the status of the beam line?", id=f"m{i}"
        )
        if i % 2 == 0
        else AIMessage(
            content=f"answer number {i}: the beam line is nominal, current 500 mA.", id=f"m{i}"
        )
        for i in range(n)
    ]


def step_message(i):
    from langchain_core.messages import HumanMessage

    return HumanMessage(
        content=f"question number {i}: what is the status of the beam line?", id=f"step{i}"
    )


class State(TypedDict):
    """LangGraph's MessagesState."""

    messages: Annotated[list, add_messages]


def build_graph(checkpointer):
    from langgraph.graph import END, START, StateGraph

    def chat(state):
        return None  # the step's message came in as the input

    builder = StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)
    return builder.compile(checkpointer=checkpointer)


def wchar():
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("wchar:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


class Counter:
    """Numbers step messages and threads, unique in this run."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n


def run_steps(graph, config, k, counter, mode):
    times = []
    for _ in range(k):
        msg = step_message(counter())
        start = time.perf_counter()
        if mode == "invoke":
            graph.invoke({"messages": [msg]}, config)
        else:
            graph.update_state(config, {"messages": [msg]})
        times.append(time.perf_counter() - start)
    return times


def time_loads(saver, config):
    times = []
    for _ in range(LOADS):
        start = time.perf_counter()
        tup = saver.get_tuple(config)
        times.append(time.perf_counter() - start)
        assert tup is not None
    return statistics.median(times)


def summary(times, k, n, extra):
    out = {
        "n": n,
        "steps": k,
        "mean_step_s": statistics.mean(times),
        "median_step_s": statistics.median(times),
        "min_step_s": min(times),
        "max_step_s": max(times),
    }
    out.update(extra)
    return out


def bench_sqlite(sizes, steps_for, counter, mode):
    from langgraph.checkpoint.sqlite import SqliteSaver

    out = []
    with tempfile.TemporaryDirectory(prefix="saver-bench-") as tmp:
        path = Path(tmp) / "langgraph.db"
        conn = sqlite3.connect(str(path), check_same_thread=False)
        saver = SqliteSaver(conn)
        graph = build_graph(saver)
        saver.setup()
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = conn.execute("PRAGMA synchronous").fetchone()[0]

        def storage():
            """The database file's size, the WAL checkpointed into it (the
            WAL file keeps its size and is reused, as in steady state)."""
            for _ in range(100):
                busy = conn.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()[0]
                if busy == 0:
                    break
                time.sleep(0.01)
            return path.stat().st_size

        # Steady state, as the Rust bench: a WAL grown past its automatic
        # checkpoint (1,000 pages) before anything is measured.
        graph.invoke({"messages": history(WAL_WARM_UP)},
                     {"configurable": {"thread_id": "wal-warm-up"}})

        for n in sizes:
            k = steps_for(n)
            config = {"configurable": {"thread_id": f"sqlite-{n}-{counter()}"}}
            graph.invoke({"messages": history(n)}, config)
            run_steps(graph, config, 1, counter, mode)  # warm-up, unmeasured
            before, io_before = storage(), wchar()
            times = run_steps(graph, config, k, counter, mode)
            after = storage()
            io_after = wchar()
            row = summary(times, k, n, {
                "backend": "sqlite",
                "mode": mode,
                "storage_growth_per_step": (after - before) / k,
                "io_bytes_per_step": (io_after - io_before) / k if io_before is not None else None,
                "io_kind": "process wchar (WAL + checkpoints)",
                "load_s": time_loads(saver, config),
                "journal_mode": journal,
                "synchronous": synchronous,
            })
            report(row)
            out.append(row)
        conn.close()
    return out


def bench_postgres(sizes, steps_for, counter, mode, url):
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    out = []
    with PostgresSaver.from_conn_string(url) as saver, psycopg.connect(url, autocommit=True) as side:
        saver.setup()
        graph = build_graph(saver)
        version = side.execute("SHOW server_version").fetchone()[0]
        fsync = side.execute("SHOW fsync").fetchone()[0]
        sync_commit = side.execute("SHOW synchronous_commit").fetchone()[0]
        sizes_sql = " + ".join(f"pg_total_relation_size('{t}')" for t in PG_TABLES)

        def storage():
            return side.execute(f"SELECT ({sizes_sql})::bigint").fetchone()[0]

        def wal():
            return side.execute(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
            ).fetchone()[0]

        for n in sizes:
            k = steps_for(n)
            config = {"configurable": {"thread_id": f"postgres-{n}-{counter()}"}}
            graph.invoke({"messages": history(n)}, config)
            run_steps(graph, config, 1, counter, mode)  # warm-up, unmeasured
            before, wal_before = storage(), wal()
            times = run_steps(graph, config, k, counter, mode)
            after, wal_after = storage(), wal()
            row = summary(times, k, n, {
                "backend": "postgres",
                "mode": mode,
                "storage_growth_per_step": (after - before) / k,
                "io_bytes_per_step": (wal_after - wal_before) / k,
                "io_kind": "server WAL",
                "load_s": time_loads(saver, config),
                "server_version": version,
                "fsync": fsync,
                "synchronous_commit": sync_commit,
            })
            report(row)
            out.append(row)
    return out


def report(row):
    io = row["io_bytes_per_step"]
    print(
        f"  LangGraph {row['backend']:<8} {row['mode']:<12} n={row['n']:>7}: "
        f"{fmt_s(row['mean_step_s'])}/step (median {fmt_s(row['median_step_s'])}, "
        f"{row['steps']} steps), storage +{row['storage_growth_per_step']:,.0f} B/step, "
        f"I/O {io:,.0f} B/step, load {fmt_s(row['load_s'])}",
        flush=True,
    )


def fmt_s(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def fmt_b(b):
    return "-" if b is None else f"{b:,.0f}"


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


def read_ours(criterion_dir, bytes_json):
    ours = {"criterion": {}, "bytes": []}
    root = Path(criterion_dir)
    for backend in ("memory", "sqlite", "postgres"):
        for n in (100, 1_000, 10_000, 100_000):
            est = criterion_estimate(root / "append_step" / backend / str(n) / "new" / "estimates.json")
            if est is not None:
                ours["criterion"][f"append_step/{backend}/{n}"] = est
        est = criterion_estimate(root / "load" / backend / "10000_steps" / "new" / "estimates.json")
        if est is not None:
            ours["criterion"][f"load/{backend}/10000_steps"] = est
    for backend in ("postgres", "sqlite"):
        est = criterion_estimate(root / "workers8" / backend / "new" / "estimates.json")
        if est is not None:
            ours["criterion"][f"workers8/{backend}"] = est
    try:
        ours["bytes"] = json.loads(Path(bytes_json).read_text())
    except (OSError, ValueError):
        pass
    return ours


def side_by_side(theirs, ours):
    crit = ours["criterion"]
    cycles = {(r["backend"], r["n"]): r for r in ours["bytes"]}
    print()
    print(f"{'step (invoke) at N':<22} {'LangGraph':>11} {'ours':>10} {'ratio':>8}   "
          f"{'LG storage B':>13} {'ours B':>8} {'ratio':>8}   "
          f"{'LG I/O B':>12} {'ours I/O B':>10} {'ratio':>7}")
    for row in theirs:
        if row["mode"] != "invoke":
            continue
        b, n = row["backend"], row["n"]
        ns = crit.get(f"append_step/{b}/{n}")
        cyc = cycles.get((b, n))
        t_lg = row["mean_step_s"] * 1e9
        t_ratio = f"{t_lg / ns:,.0f}x" if ns else "-"
        ours_b = cyc["logical_bytes_per_step"] if cyc else None
        s_ratio = f"{row['storage_growth_per_step'] / cyc['storage_growth_per_step']:,.0f}x" \
            if cyc and cyc["storage_growth_per_step"] > 0 else "-"
        ours_io = cyc["io_bytes_per_step"] if cyc else None
        io_ratio = f"{row['io_bytes_per_step'] / ours_io:,.0f}x" if ours_io else "-"
        print(f"{b + '/' + str(n):<22} {fmt_s(row['mean_step_s']):>11} "
              f"{fmt_s(ns / 1e9) if ns else '-':>10} {t_ratio:>8}   "
              f"{fmt_b(row['storage_growth_per_step']):>13} "
              f"{fmt_b(cyc['storage_growth_per_step'] if cyc else None):>8} {s_ratio:>8}   "
              f"{fmt_b(row['io_bytes_per_step']):>12} {fmt_b(ours_io):>10} {io_ratio:>7}")
        if cyc:
            print(f"{'':<22} (ours: logical {fmt_b(ours_b)} B/step, mean over a snapshot "
                  f"cycle {fmt_s(cyc['mean_step_ns'] / 1e9)}/step)")
    for row in theirs:
        if row["n"] != 10_000 or row["mode"] != "invoke":
            continue
        ns = crit.get(f"load/{row['backend']}/10000_steps")
        ratio = f"{row['load_s'] * 1e9 / ns:,.1f}x" if ns else "-"
        print(f"load {row['backend']:<8} LangGraph get_tuple at 10,000 messages "
              f"{fmt_s(row['load_s'])}; ours (10,000 steps) "
              f"{fmt_s(ns / 1e9) if ns else '-'} ({ratio})")
    if not crit:
        print("(no criterion results found: run `cargo bench -p state-store` first)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="history sizes, comma-separated (default 100,1000,10000)")
    parser.add_argument("--steps", type=int, help="steps timed per size (default: 50/30/20/3)")
    parser.add_argument("--pg-url", help="PostgreSQL URL (run.sh --savers starts a server)")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--update-state", action="store_true",
                        help="also time update_state steps (one checkpoint per step)")
    parser.add_argument("--criterion", help="criterion output dir (default target/criterion)")
    parser.add_argument("--bytes-json", help="default target/state-store-bytes.json")
    parser.add_argument("--out", default=str(HERE / "saver_results.json"))
    args = parser.parse_args()

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    def steps_for(n):
        return args.steps or DEFAULT_STEPS.get(n, 5)

    import langchain_core
    from importlib.metadata import version

    versions = {
        name: version(name)
        for name in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-sqlite",
                     "langgraph-checkpoint-postgres", "psycopg")
    }
    versions["langchain-core"] = langchain_core.__version__
    versions["sqlite"] = sqlite3.sqlite_version
    print(", ".join(f"{k} {v}" for k, v in versions.items()) +
          f", Python {platform.python_version()}", flush=True)

    counter = Counter()
    modes = ["invoke", "update_state"] if args.update_state else ["invoke"]
    theirs = []
    for mode in modes:
        if args.only in (None, "sqlite"):
            theirs += bench_sqlite(sizes, steps_for, counter, mode)
        if args.only in (None, "postgres"):
            if args.pg_url:
                theirs += bench_postgres(sizes, steps_for, counter, mode, args.pg_url)
            else:
                print("  (no --pg-url: PostgresSaver skipped; run.sh --savers starts a server)")

    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    criterion_dir = Path(args.criterion) if args.criterion else target / "criterion"
    bytes_json = Path(args.bytes_json) if args.bytes_json else target / "state-store-bytes.json"
    ours = read_ours(criterion_dir, bytes_json)
    side_by_side(theirs, ours)

    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
        "versions": versions,
        "workload": "one-node graph, one human message per step (invoke); "
                    "update_state rows: one checkpoint per step",
        "langgraph": theirs,
        "ours": ours,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
