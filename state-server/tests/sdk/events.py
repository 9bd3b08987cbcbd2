"""The `events` stream mode on our Agent Server API, driven by LangGraph's
official Python client (langgraph-sdk 0.4.14), against the recorded
exchange 26 (`runs.stream(..., stream_mode="events")` on the tool loop):
LangChain's astream_events v2 dicts, in the recorded order. Run by
state-server's test `agent_sdk::stream_mode_events` with LANGGRAPH_URL set.
"""

import asyncio
import os

from langgraph_sdk import get_client

PING = {"messages": [{"role": "user", "content": "ping"}]}
KEYS = {"event", "data", "name", "tags", "run_id", "metadata", "parent_ids"}
TASK_METADATA = {
    "graph_id", "assistant_id", "run_attempt", "thread_id", "run_id", "ls_integration",
    "langgraph_step", "langgraph_node", "langgraph_triggers", "langgraph_path", "langgraph_checkpoint_ns",
}
# Exchange 26's sequence, less its router's `route` start and end (a
# conditional edge here is a closure without a name or an event).
RECORDED = [
    ("on_chain_start", "agent"),
    ("on_chain_start", "agent"), ("on_chain_stream", "agent"), ("on_chain_end", "agent"),
    ("on_chain_start", "tools"), ("on_chain_stream", "tools"), ("on_chain_end", "tools"),
    ("on_chain_start", "agent"), ("on_chain_stream", "agent"), ("on_chain_end", "agent"),
    ("on_chain_end", "agent"),
]


def kinds(events):
    return [(e["event"], e["name"]) for e in events]


def contents(messages):
    return [(m["type"], m["content"]) for m in messages]


async def main() -> None:
    client = get_client(url=os.environ["LANGGRAPH_URL"])

    # 26: the tool loop, as recorded.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    parts = [p async for p in client.runs.stream(tid, "agent", input=PING, stream_mode="events")]
    assert parts[0].event == "metadata", parts
    run_id = parts[0].data["run_id"]
    assert {p.event for p in parts[1:]} == {"events"}, parts
    events = [p.data for p in parts[1:]]
    assert kinds(events) == RECORDED, kinds(events)
    assert all(set(e) == KEYS for e in events), events
    graph, tasks, end = events[0], events[1:-1], events[-1]
    # The graph: the run's id, no parents, the request's input, no tags.
    assert graph["run_id"] == run_id and end["run_id"] == run_id, (graph, end)
    assert graph["parent_ids"] == [] and graph["tags"] == [], graph
    assert graph["data"] == {"input": PING}, graph
    meta = graph["metadata"]
    assert meta["graph_id"] == "agent" and meta["thread_id"] == tid and meta["run_id"] == run_id, meta
    assert meta["run_attempt"] == 1 and meta["ls_integration"] == "langgraph", meta
    assert meta["assistant_id"] == (await client.assistants.get("agent"))["assistant_id"], meta
    assert "langgraph_step" not in meta, meta
    assert set(end["data"]) == {"output"}, end
    assert contents(end["data"]["output"]["messages"]) == [
        ("human", "ping"), ("ai", ""), ("tool", "echo:ping"), ("ai", "The tool said: echo:ping"),
    ], end
    # Each task: start, stream, end under one run id, a child of the graph.
    steps = []
    for start, stream, stop in zip(tasks[0::3], tasks[1::3], tasks[2::3]):
        assert start["run_id"] == stream["run_id"] == stop["run_id"] != run_id, (start, stream, stop)
        assert all(e["parent_ids"] == [run_id] for e in (start, stream, stop)), start
        node = start["name"]
        meta = start["metadata"]
        assert TASK_METADATA <= set(meta), meta
        assert meta["langgraph_node"] == node and meta["langgraph_triggers"] == [f"branch:to:{node}"], meta
        assert meta["langgraph_path"] == ["__pregel_pull", node], meta
        assert meta["langgraph_checkpoint_ns"].startswith(f"{node}:"), meta
        assert start["tags"] == [f"graph:step:{meta['langgraph_step']}"], start
        assert stop["metadata"] == meta and stop["tags"] == start["tags"], stop
        assert set(start["data"]) == {"input"} and set(stream["data"]) == {"chunk"}, (start, stream)
        assert set(stop["data"]) == {"output", "input"}, stop
        assert stop["data"]["input"] == start["data"]["input"], stop
        assert stop["data"]["output"] == stream["data"]["chunk"], stop
        steps.append(meta["langgraph_step"])
    assert steps == [steps[0], steps[0] + 1, steps[0] + 2], steps
    # A task reads the state before it; it writes its messages.
    assert contents(tasks[0]["data"]["input"]["messages"]) == [("human", "ping")], tasks[0]
    assert contents(tasks[2]["data"]["output"]["messages"]) == [("ai", "")], tasks[2]
    assert tasks[2]["data"]["output"]["messages"][0]["tool_calls"][0]["args"] == {"text": "ping"}, tasks[2]
    assert contents(tasks[5]["data"]["output"]["messages"]) == [("tool", "echo:ping")], tasks[5]
    assert len(tasks[6]["data"]["input"]["messages"]) == 3, tasks[6]

    # With other modes: each in execution order, a node's end before its
    # update, a step's values before the next tasks start.
    thread = await client.threads.create()
    parts = [p async for p in client.runs.stream(
        thread["thread_id"], "agent", input=PING, stream_mode=["events", "updates", "values"])]
    names = [p.event if p.event != "events" else f"{p.data['event']} {p.data['name']}" for p in parts]
    assert names == [
        "metadata", "on_chain_start agent", "values",
        "on_chain_start agent", "on_chain_stream agent", "on_chain_end agent", "updates", "values",
        "on_chain_start tools", "on_chain_stream tools", "on_chain_end tools", "updates", "values",
        "on_chain_start agent", "on_chain_stream agent", "on_chain_end agent", "updates", "values",
        "on_chain_end agent",
    ], names
    # With stream_subgraphs: still `events` (LangGraph's server names no
    # namespace there).
    parts = [p async for p in client.runs.stream(
        thread["thread_id"], "agent", input=PING, stream_mode="events", stream_subgraphs=True)]
    assert kinds([p.data for p in parts[1:]]) == RECORDED, parts
    assert {p.event for p in parts[1:]} == {"events"}, parts

    # A pause: the interrupted task starts and never ends; the graph ends
    # with the state. The resume starts it again, and it ends.
    hitl = await client.threads.create()
    parts = [p async for p in client.runs.stream(hitl["thread_id"], "hitl", input={}, stream_mode="events")]
    events = [p.data for p in parts if p.event == "events"]
    assert kinds(events) == [("on_chain_start", "hitl"), ("on_chain_start", "ask"), ("on_chain_end", "hitl")], events
    assert events[-1]["data"]["output"] == {"answer": "", "approved": False}, events[-1]
    asked = events[1]["metadata"]["langgraph_step"]
    parts = [p async for p in client.runs.stream(
        hitl["thread_id"], "hitl", command={"resume": "Ada"}, stream_mode="events")]
    events = [p.data for p in parts if p.event == "events"]
    assert kinds(events) == [
        ("on_chain_start", "hitl"),
        ("on_chain_start", "ask"), ("on_chain_stream", "ask"), ("on_chain_end", "ask"),
        ("on_chain_start", "finish"), ("on_chain_stream", "finish"), ("on_chain_end", "finish"),
        ("on_chain_end", "hitl"),
    ], events
    assert events[0]["data"]["input"]["resume"] == "Ada", events[0]
    # Our steps are the thread's (as messages-tuple's): the pause took one.
    assert events[1]["metadata"]["langgraph_step"] == asked + 1, (asked, events[1])
    assert events[4]["metadata"]["langgraph_step"] == asked + 2, (asked, events[4])
    assert events[3]["data"]["output"] == {"answer": "Ada"}, events[3]
    assert events[-1]["data"]["output"] == {"answer": "Ada", "approved": True}, events[-1]

    # 33 in `events`: a resumable run's stored events, joined from the
    # start and after one of them.
    joined = await client.threads.create()
    run = await client.runs.create(
        joined["thread_id"], "agent", input=PING, stream_mode="events", stream_resumable=True)
    parts = [p async for p in client.runs.join_stream(joined["thread_id"], run["run_id"], last_event_id="-1")]
    assert parts[0].event == "metadata", parts
    assert kinds([p.data for p in parts[1:]]) == RECORDED, parts
    assert all(p.id for p in parts), parts
    rest = [p async for p in client.runs.join_stream(joined["thread_id"], run["run_id"], last_event_id=parts[4].id)]
    assert [(p.event, p.data) for p in rest] == [(p.event, p.data) for p in parts[5:]], rest

    # A model streaming its tokens in a node: a chat model run inside the
    # node's task, its chunks the final message.
    chat = await client.threads.create()
    parts = [p async for p in client.runs.stream(chat["thread_id"], "chat", input=PING, stream_mode="events")]
    events = [p.data for p in parts if p.event == "events"]
    names = [e["event"] for e in events]
    chunks = [e for e in events if e["event"] == "on_chat_model_stream"]
    assert len(chunks) > 3, names
    assert names == [
        "on_chain_start", "on_chain_start", "on_chat_model_start",
        *["on_chat_model_stream"] * len(chunks),
        "on_chat_model_end", "on_chain_stream", "on_chain_end", "on_chain_end",
    ], names
    task, model, model_end = events[1], events[2], events[-4]
    assert model["parent_ids"] == [events[0]["run_id"], task["run_id"]], model
    assert all(e["run_id"] == model["run_id"] for e in chunks + [model_end]), chunks
    assert model["metadata"]["langgraph_node"] == task["name"], model
    assert model["metadata"]["ls_integration"] == "langchain_chat_model", model
    assert model["data"]["input"]["messages"][0][0]["content"] == "ping", model
    text = "".join(c["data"]["chunk"]["content"] for c in chunks)
    assert text == "Hello from a streaming model!", chunks
    assert model_end["data"]["output"]["content"] == text and model_end["data"]["output"]["type"] == "ai", model_end
    assert events[-2]["data"]["output"]["messages"][0]["content"] == text, events[-2]


asyncio.run(main())
