#!/usr/bin/env python3
"""langchain-core's side of the message utilities' benchmark (BENCHMARKS.md,
"Message utilities"): the workloads of state-agent/benches/messages.rs, on
the same messages.

- trim_messages/last_10000: `trim_messages(history, max_tokens=4000,
  strategy="last", token_counter="approximate", start_on="human",
  include_system=True)`;
- trim_messages/first_10000: `strategy="first"`, `end_on="ai"`;
- count_tokens_approximately/10000: the whole history.

The history: a system message, then 10,000 messages in turns of four (a
human question, an AI message with one tool call, the tool's result, the
AI's answer), as `history` in messages.rs builds it. The script checks that
LangChain keeps as many messages as ours says it does (messages.rs prints
its counts on stderr).

Usage (make the venv once with run.sh, or by hand as run.sh does):
    benches/langgraph/.venv/bin/python benches/langgraph/messages_bench.py --run-cargo
    ... messages_bench.py --criterion DIR     # ours from criterion's output
    ... messages_bench.py --quick             # fewer runs
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

from langchain_core import __version__ as langchain_core_version
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately, trim_messages

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SIZE = 10_000
MAX_TOKENS = 4_000


def history(n):
    messages = [SystemMessage("You are a beam line assistant. Answer briefly.", id="sys")]
    for i in range(n):
        call = f"call_{i // 4}"
        kind = i % 4
        if kind == 0:
            m = HumanMessage(f"question number {i}: what is the status of the beam line?")
        elif kind == 1:
            m = AIMessage(
                "",
                tool_calls=[{"name": "beam_status", "args": {"line": i % 7, "detail": "full"}, "id": call}],
            )
        elif kind == 2:
            m = ToolMessage(
                f"line {i % 7}: nominal, current 500 mA", tool_call_id=call, name="beam_status"
            )
        else:
            m = AIMessage(f"answer number {i}: the beam line is nominal, current 500 mA.")
        m.id = f"m{i}"
        messages.append(m)
    return messages


def workloads(messages):
    return {
        f"trim_messages/last/{SIZE}": lambda: trim_messages(
            messages, max_tokens=MAX_TOKENS, strategy="last", token_counter="approximate",
            start_on="human", include_system=True,
        ),
        f"trim_messages/first/{SIZE}": lambda: trim_messages(
            messages, max_tokens=MAX_TOKENS, strategy="first", token_counter="approximate",
            end_on="ai",
        ),
        f"count_tokens_approximately/{SIZE}": lambda: count_tokens_approximately(messages),
    }


def time_runs(fn, min_runs, budget_s):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < budget_s:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def criterion_estimate(path):
    """Criterion's headline estimate in ns (slope if sampled linearly, else mean)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    for key in ("slope", "mean"):
        value = data.get(key)
        if isinstance(value, dict) and "point_estimate" in value:
            return float(value["point_estimate"])
    return None


def fmt_s(seconds):
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--criterion", help="criterion's output directory")
    parser.add_argument("--run-cargo", action="store_true", help="run `cargo bench` first")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    criterion_dir = Path(args.criterion) if args.criterion else target / "criterion"
    if args.run_cargo:
        subprocess.run(
            ["cargo", "bench", "-p", "state-agent", "--bench", "messages"], cwd=REPO, check=True
        )

    messages = history(SIZE)
    last = workloads(messages)[f"trim_messages/last/{SIZE}"]()
    first = workloads(messages)[f"trim_messages/first/{SIZE}"]()
    print(f"langchain-core {langchain_core_version}, Python {platform.python_version()}: "
          f"trim_messages last: {len(last)} kept, {last[1].id} .. {last[-1].id}; "
          f"first: {len(first)} kept; count {count_tokens_approximately(messages)}")
    results = {}
    print(f"{'workload':<36} {'langchain-core':>14} {'ours':>10} {'ratio':>9}")
    for name, fn in workloads(messages).items():
        times = time_runs(fn, 3 if args.quick else 10, 1.0 if args.quick else 5.0)
        theirs = statistics.mean(times)
        ours_ns = criterion_estimate(criterion_dir / name / "new" / "estimates.json")
        ours = ours_ns * 1e-9 if ours_ns is not None else None
        ratio = f"{theirs / ours:,.0f}x" if ours else "-"
        print(f"{name:<36} {fmt_s(theirs):>14} {fmt_s(ours):>10} {ratio:>9}  "
              f"(median {fmt_s(statistics.median(times))}, {len(times)} runs)")
        results[name] = {"langchain_core_s": theirs, "ours_s": ours, "runs": len(times)}
    (HERE / "messages_results.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
