#!/usr/bin/env python3
"""LangGraph's side of the ReAct benchmarks (BENCHMARKS.md, section 15,
"ReAct step, streamed tokens"; issue 33): the workloads of
state-agent/benches/react.rs, with the same messages and the same tool.

- react: one ReAct step of `langgraph.prebuilt.create_react_agent`: the
  model answers the human's question ("What are 2 + 3 and 4 + 5?", id
  `h`) with two tool calls (`add(a=2, b=3)` id `c1`, `add(a=4, b=5)` id
  `c2`; the AI message's id `r1`), the tool node runs them (an `@tool def
  add(a: int, b: int) -> int`), the model answers with text (id `r2`), the
  run ends: one `invoke`, five messages. The model is langchain-core's
  `GenericFakeChatModel` cycling through the two replies, subclassed with
  a `bind_tools` that returns the model itself, as LangGraph's own tests'
  fake model does (`create_react_agent` binds the tools; the fake one has
  no `bind_tools`). Without a checkpointer, and with `InMemorySaver` (a
  new thread per run, deleted untimed after it). The agent is built once.
- stream: for reference (the target is ours alone): the same fake model,
  its `_stream` giving 1,000 chunks of one token each (" t000", ...) then
  a last empty one, called with `invoke` in the one node of a StateGraph
  streamed with `stream_mode="messages"` (every chunk read), against its
  own `stream` read directly and the chunks added up; per token.

Usage (make the venv once with run.sh, or by hand as run.sh does):
    benches/langgraph/.venv/bin/python benches/langgraph/react_bench.py --run-cargo
    ... react_bench.py --criterion DIR     # ours from criterion's output
    ... react_bench.py --quick             # fewer runs
With --run-cargo, LangGraph's runs are split in two halves, one before
`cargo bench -p state-agent --bench react` and one after (so that both
sides see the machine's load of the same minutes). Prints LangGraph beside
ours (criterion's estimates in target/criterion, and
target/state-agent-react-paired.json, react.rs's interleaved runs) with the
ratios and the targets, and writes react_results.json next to this file.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from graph_bench import criterion_estimate, fmt_s, stats, time_runs  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
QUESTION = "What are 2 + 3 and 4 + 5?"
ANSWER = "2 + 3 = 5 and 4 + 5 = 9."
TOKENS = 1_000
SAVERS = ["none", "memory"]

# create_react_agent is deprecated in LangGraph 1.x in favour of
# langchain's create_agent; it is still LangGraph's prebuilt agent.
warnings.filterwarnings("ignore")


def fake_models():
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessageChunk
    from langchain_core.outputs import ChatGenerationChunk

    class FakeToolModel(GenericFakeChatModel):
        """GenericFakeChatModel that accepts tools (LangGraph's tests'
        FakeToolCallingModel binds them the same way: it returns itself)."""

        def bind_tools(self, tools, **kwargs):
            return self

    class TokenModel(FakeToolModel):
        """Streams TOKENS chunks of one token each, then a last empty one."""

        def _stream(self, messages, stop=None, run_manager=None, **kwargs):
            for i in range(TOKENS):
                token = f" t{i % 1000:03}"
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
                if run_manager:
                    run_manager.on_llm_new_token(token, chunk=chunk)
                yield chunk
            last = ChatGenerationChunk(
                message=AIMessageChunk(content="", chunk_position="last"))
            if run_manager:
                run_manager.on_llm_new_token("", chunk=last)
            yield last

    return FakeToolModel, TokenModel


def replies():
    from langchain_core.messages import AIMessage

    return [
        AIMessage("", id="r1", tool_calls=[
            {"name": "add", "args": {"a": 2, "b": 3}, "id": "c1"},
            {"name": "add", "args": {"a": 4, "b": 5}, "id": "c2"},
        ]),
        AIMessage(ANSWER, id="r2"),
    ]


def react_input():
    from langchain_core.messages import HumanMessage

    return {"messages": [HumanMessage(QUESTION, id="h")]}


def build_react(checkpointer):
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent

    @tool
    def add(a: int, b: int) -> int:
        """Adds two numbers."""
        return a + b

    FakeToolModel, _ = fake_models()
    model = FakeToolModel(messages=itertools.cycle(replies()))
    return create_react_agent(model, [add], checkpointer=checkpointer)


def check_react(out):
    m = out["messages"]
    assert len(m) == 5, m
    assert [x.content for x in m[2:4]] == ["5", "9"], m
    assert m[3].tool_call_id == "c2" and m[4].content == ANSWER, m


def bench_react(savers, quick, share=1.0):
    rows = []
    for kind in savers:
        if kind == "none":
            saver = None
        else:
            from langgraph.checkpoint.memory import InMemorySaver

            saver = InMemorySaver()
        graph = build_react(saver)
        threads = itertools.count()

        def run():
            config = {}
            if saver is not None:
                config["configurable"] = {"thread_id": f"run-{next(threads)}"}
            inp = react_input()
            start = time.perf_counter()
            out = graph.invoke(inp, config)
            elapsed = time.perf_counter() - start
            check_react(out)
            if saver is not None:
                saver.delete_thread(config["configurable"]["thread_id"])
            return elapsed

        budget = (1.0 if quick else 4.0) * share
        times = time_runs(run, 10 if quick else 30, 2_000, budget)
        row = {"workload": "react_step", "checkpointer": kind, **stats(times), "times": times}
        rows.append(row)
    return rows


def bench_stream(quick, share=1.0):
    from langchain_core.messages import HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    _, TokenModel = fake_models()
    model = TokenModel(messages=itertools.repeat(ANSWER))

    def agent(state):
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    graph = builder.compile()
    history = [HumanMessage("Tell me a long story.", id="h")]

    def graph_run():
        start = time.perf_counter()
        n = sum(1 for _ in graph.stream({"messages": list(history)}, stream_mode="messages"))
        elapsed = time.perf_counter() - start
        assert n == TOKENS + 1, n
        return elapsed

    def direct_run():
        start = time.perf_counter()
        reply = None
        for chunk in model.stream(history):
            reply = chunk if reply is None else reply + chunk
        elapsed = time.perf_counter() - start
        assert len(reply.content) == 5 * TOKENS
        return elapsed

    # In turn (ABBA), a run of each a round.
    graph_run(), direct_run()
    a, b = [], []
    budget = (2.0 if quick else 6.0) * share
    spent, i = 0.0, 0
    while i < 4 or spent < budget:
        if i % 2 == 0:
            ga = graph_run()
            db = direct_run()
        else:
            db = direct_run()
            ga = graph_run()
        a.append(ga)
        b.append(db)
        spent += ga + db
        i += 1
    return [{"workload": "stream", "variant": "graph", **stats(a), "times": a},
            {"workload": "stream", "variant": "direct", **stats(b), "times": b}]


def merge(halves):
    """Rows of the same workload from several halves, as one."""
    merged = {}
    for rows in halves:
        for row in rows:
            key = (row["workload"], row.get("checkpointer"), row.get("variant"))
            merged.setdefault(key, {k: v for k, v in row.items() if k != "times"} | {"times": []})
            merged[key]["times"] += row["times"]
    out = []
    for row in merged.values():
        times = row.pop("times")
        out.append(row | stats(times))
    return out


def read_ours(criterion_dir, paired_json):
    names = ["react_step/no_store", "react_step/memory"] + [
        f"stream_tokens/{v}/{TOKENS}" for v in ("graph", "direct", "graph_json")]
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
    def lg(workload, checkpointer=None, variant=None):
        for r in theirs:
            if (r["workload"] == workload and r.get("checkpointer") == checkpointer
                    and r.get("variant") == variant):
                return r
        return None

    print()
    print(f"{'workload (ours / LangGraph)':<46} {'ours':>9} {'LangGraph':>9} {'LG/ours':>9}   target")
    for backend, kind, saver in (("no_store", "none", "no checkpointer"),
                                 ("memory", "memory", "InMemorySaver")):
        us = ours.get(f"react_step/{backend}")
        row = lg("react_step", kind)
        them = row["mean_s"] if row else None
        ratio = f"{them / us:,.0f}x" if us and them else "-"
        target = ">= 100x" if kind == "none" else "(no target)"
        verdict = ""
        if us and them and kind == "none":
            verdict = "  met" if them / us >= 100 else "  NOT MET"
        median = f" (LangGraph's median {fmt_s(row['median_s'])}: {row['median_s'] / us:,.0f}x)" \
            if us and row else ""
        print(f"{f'ReAct step, {backend} / {saver}':<46} {fmt_s(us):>9} {fmt_s(them):>9} "
              f"{ratio:>9}   {target}{verdict}{median}")
    g, d = ours.get(f"stream_tokens/graph/{TOKENS}"), ours.get(f"stream_tokens/direct/{TOKENS}")
    if g and d:
        print(f"{'per token, graph - direct (criterion)':<46} {fmt_s((g - d) / TOKENS):>9}"
              f"   ({fmt_s(g)} vs {fmt_s(d)} a run of {TOKENS} tokens)  target < 5 µs  "
              + ("met" if (g - d) / TOKENS < 5e-6 else "NOT MET"))
    p = ours.get("paired")
    if p:
        judged = p["per_token_s_median_pair"]
        print(f"{'per token, graph - direct (paired)':<46} {fmt_s(judged):>9}"
              f"   median of the pairs' differences; {fmt_s(p['per_token_s_of_means'])} from the "
              f"means ({p['rounds']} rounds, load {p['load_average']})  target < 5 µs  "
              + ("met" if judged < 5e-6 else "NOT MET"))
    lg_g, lg_d = lg("stream", variant="graph"), lg("stream", variant="direct")
    if lg_g and lg_d:
        per = (lg_g["mean_s"] - lg_d["mean_s"]) / TOKENS
        print(f"{'LangGraph: per token, graph - direct':<46} {fmt_s(per):>9}"
              f"   ({fmt_s(lg_g['mean_s'])} vs {fmt_s(lg_d['mean_s'])} a run; "
              f"direct alone {fmt_s(lg_d['mean_s'] / TOKENS)} a token)")
    if not any(k != "paired" for k in ours):
        print("(no criterion results found: run `cargo bench -p state-agent --bench react` first)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["react", "stream"])
    parser.add_argument("--savers", default=",".join(SAVERS), help="none,memory")
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--run-cargo", action="store_true",
                        help="run `cargo bench -p state-agent --bench react` between two halves")
    parser.add_argument("--criterion", help="criterion output dir (default target/criterion)")
    parser.add_argument("--out", default=str(HERE / "react_results.json"))
    args = parser.parse_args()
    savers = [s for s in args.savers.split(",") if s.strip()]

    import langchain_core
    from importlib.metadata import version

    versions = {"langgraph": version("langgraph"), "langchain-core": langchain_core.__version__}
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(", ".join(f"{k} {v}" for k, v in versions.items()) +
          f", Python {platform.python_version()}; load average {load_start}", flush=True)

    def langgraph_half(share):
        rows = []
        if args.only in (None, "react"):
            rows += bench_react(savers, args.quick, share)
        if args.only in (None, "stream"):
            rows += bench_stream(args.quick, share)
        return rows

    halves = []
    if args.run_cargo:
        halves.append(langgraph_half(0.5))
        subprocess.run(["cargo", "bench", "-p", "state-agent", "--bench", "react"],
                       cwd=REPO, check=True)
        halves.append(langgraph_half(0.5))
    else:
        halves.append(langgraph_half(1.0))
    theirs = merge(halves)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    for row in theirs:
        label = f"{row['workload']} {row.get('checkpointer') or row.get('variant')}"
        print(f"  LangGraph {label:<24} {fmt_s(row['mean_s']):>9} per run "
              f"(median {fmt_s(row['median_s'])}, {row['runs']} runs)")

    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    criterion_dir = Path(args.criterion) if args.criterion else target / "criterion"
    ours = read_ours(criterion_dir, target / "state-agent-react-paired.json")
    side_by_side(theirs, ours)

    result = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "versions": versions,
        "load_average": {"start": load_start, "end": load},
        "workloads": "see react_bench.py's docstring and state-agent/benches/react.rs; "
                     "seconds per run (ours: criterion's estimates, and the paired runs)",
        "langgraph": theirs,
        "ours": ours,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
