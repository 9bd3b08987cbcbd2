"""The v3 thread protocol's channels beyond `lifecycle`, `values` and
`input` on our Agent Server API (LangGraph's 0.16.7 server sends only
those three for the reference graphs, so `v3_stream.py`, checked against
it, does not look further): `updates` naming their node, `tools`,
`checkpoints`, `tasks`, a streaming model's `messages` as content blocks
(read through LangGraph's Python client, `thread.messages`), and a
subgraph's namespace with its lifecycle and the namespace filters. Run by
state-server's tests `v3_stream::channels*` with LANGGRAPH_URL set; any
failed assertion exits non-zero.
"""

import asyncio
import contextlib
import json
import os
import uuid

import httpx
import websockets
from langgraph_sdk import get_client
from protocol_sse import sse

PING = {"messages": [{"role": "user", "content": "ping"}]}
ALL = ["values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks",
       "custom"]
REPLY = "Hello from a streaming model!"


async def read(http, thread_id, body):
    """The events of the thread's first run, to its end."""
    async def first_run(events):
        seen = []
        async for event in events:
            seen.append(event)
            data = event["params"]["data"]
            if (event["method"] == "lifecycle" and event["params"]["namespace"] == []
                    and data["event"] in ("completed", "failed")):
                return seen
        raise AssertionError(f"the stream closed: {seen}")

    async with contextlib.aclosing(sse(http, thread_id, body)) as events:
        return await asyncio.wait_for(first_run(events), 20)


def of(events, method, namespace=None):
    return [e for e in events if e["method"] == method
            and (namespace is None or e["params"]["namespace"] == namespace)]


async def start(http, thread_id, assistant, input):
    command = {"id": 1, "method": "run.start", "params": {"assistant_id": assistant,
                                                          "input": input}}
    made = (await http.post(f"/threads/{thread_id}/commands", json=command)).json()
    assert made["type"] == "success", made
    return made["result"]["run_id"]


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    client = get_client(url=url)
    http = httpx.AsyncClient(base_url=url, timeout=30)

    # The tool loop on every channel.
    tool_loop = str(uuid.uuid4())
    await start(http, tool_loop, "agent", PING)
    events = await read(http, tool_loop, {"channels": ALL})
    updates = of(events, "updates")
    assert [u["params"]["node"] for u in updates] == ["agent", "tools", "agent"], updates
    assert updates[1]["params"]["data"]["messages"][0]["content"] == "echo:ping", updates[1]
    started, finished = [e["params"]["data"] for e in of(events, "tools")]
    assert started == {"event": "tool-started", "tool_call_id": "call_1", "tool_name": "echo",
                       "input": {"text": "ping"}}, started
    assert finished["event"] == "tool-finished" and finished["tool_call_id"] == "call_1"
    assert finished["output"]["content"] == "echo:ping", finished
    # The tool's events come before the update that carries its message.
    order = [e["method"] for e in events if e["method"] in ("tools", "updates")]
    assert order == ["updates", "tools", "tools", "updates", "updates"], order
    # Checkpoints chain: each names the one before.
    checkpoints = [e["params"]["data"] for e in of(events, "checkpoints")]
    assert len(checkpoints) >= 4, checkpoints
    for before, after in zip(checkpoints, checkpoints[1:]):
        assert after["parent_id"] == before["id"] and after["step"] == before["step"] + 1
    assert {c["source"] for c in checkpoints} <= {"input", "loop", "update"}, checkpoints
    # Tasks: each started (with its input) and ended (with its result).
    tasks = [e["params"]["data"] for e in of(events, "tasks")]
    begun = {t["id"]: t["name"] for t in tasks if "input" in t}
    ended = {t["id"]: t["name"] for t in tasks if "result" in t}
    assert begun == ended and sorted(begun.values()) == ["agent", "agent", "tools"], tasks
    # A node's AI messages on `messages`, as complete messages.
    kinds = [e["params"]["data"]["event"] for e in of(events, "messages")]
    assert kinds.count("message-start") == kinds.count("message-finish") == 2, kinds

    # A streaming model's tokens, through the client's `thread.messages`.
    async with client.threads.stream(assistant_id="chat") as thread:
        streams = []

        async def messages():
            # Each message's text is read as the projection goes on (it
            # feeds the streams): to the run's end.
            async for stream in thread.messages:
                streams.append(asyncio.ensure_future(stream.text))

        reading = asyncio.create_task(messages())
        await asyncio.sleep(0.3)
        await thread.run.start(input={"messages": [{"role": "user", "content": "hi"}]})
        output = await thread.output.with_timeout(20)
        await asyncio.wait_for(reading, 20)
        assert [await text for text in streams] == [REPLY], streams
        assert output["messages"][-1]["content"] == REPLY, output
    events = await read(http, thread.thread_id, {"channels": ["messages", "lifecycle"],
                                                 "namespaces": [[]], "depth": 0})
    data = [e["params"]["data"] for e in of(events, "messages")]
    assert data[0]["event"] == "message-start" and data[0]["role"] == "ai", data[0]
    assert data[0]["metadata"]["langgraph_node"] == "agent", data[0]
    pieces = [d["delta"]["text"] for d in data if d["event"] == "content-block-delta"]
    assert len(pieces) > 1 and "".join(pieces) == REPLY, pieces
    finish = [d for d in data if d["event"] == "content-block-finish"]
    assert finish[0]["content"] == {"type": "text", "text": REPLY}, finish
    assert data[-1]["event"] == "message-finish", data[-1]

    # A subgraph: its namespace started and completed, inside the run.
    nested = str(uuid.uuid4())
    await start(http, nested, "nested", {"answer": ""})
    events = await read(http, nested, {"channels": ["lifecycle", "values"]})
    spaces = {tuple(e["params"]["namespace"]) for e in events}
    [child] = [ns for ns in spaces if ns]
    assert len(child) == 1 and child[0].startswith("child:"), spaces
    lifecycle = [(e["params"]["namespace"], e["params"]["data"]["event"])
                 for e in of(events, "lifecycle")]
    assert lifecycle == [([], "running"), (list(child), "started"), (list(child), "completed"),
                         ([], "completed")], lifecycle
    assert of(events, "lifecycle")[1]["params"]["data"]["graph_name"] == "child"
    assert of(events, "values", list(child)), events
    # Filters: the child's namespace by its name, or the root's only.
    inside = await sse_until_quiet(http, nested, {"channels": ["values"],
                                                  "namespaces": [["child"]]})
    assert inside and all(e["params"]["namespace"] == list(child) for e in inside), inside
    root = await read(http, nested, {"channels": ["lifecycle", "values"], "namespaces": [[]],
                                     "depth": 0})
    assert all(e["params"]["namespace"] == [] for e in root), root
    # An interrupt inside a subgraph: asked in its namespace, answered
    # through the client, the run going on inside the subgraph.
    async with client.threads.stream(assistant_id="nested_hitl") as thread:
        await thread.run.start(input={"answer": ""})
        for _ in range(200):
            if thread.interrupted:
                break
            await asyncio.sleep(0.05)
        assert thread.interrupted, "no interrupt from the subgraph"
        [asked] = thread.interrupts
        assert len(asked["namespace"]) == 1, asked
        assert asked["namespace"][0].startswith("asking:"), asked
        assert await thread.run.respond("Eve") == {}
    for _ in range(200):
        state = await client.threads.get_state(thread.thread_id)
        if state["values"].get("answer") == "Eve" and not state["next"]:
            break
        await asyncio.sleep(0.05)
    assert state["values"]["answer"] == "Eve" and state["interrupts"] == [], state
    events = await read(http, thread.thread_id, {"channels": ["lifecycle", "input"]})
    [request] = of(events, "input.requested")
    assert request["params"]["data"] == {"interrupt_id": asked["interrupt_id"],
                                         "payload": {"question": "Who asks?"}}, request
    # Paused inside it, the subgraph was left open, then completed by the resume.
    lifecycle = [(e["params"]["namespace"][:1], e["params"]["data"]["event"])
                 for e in of(events, "lifecycle")]
    assert lifecycle[:3] == [([], "running"), ([asked["namespace"][0]], "started"),
                             ([], "interrupted")], lifecycle
    assert lifecycle[-1] == ([], "completed"), lifecycle

    # Over the WebSocket, agent.getTree: the run's namespaces and their ends.
    ws_url = url.replace("http://", "ws://", 1) + f"/threads/{nested}/stream/events"
    # A page of another site may not open one (browsers do not ask first);
    # this server's own pages may.
    try:
        async with websockets.connect(ws_url, origin="http://elsewhere.example"):
            raise AssertionError("a cross-site WebSocket was accepted")
    except websockets.exceptions.InvalidStatus as refused:
        assert refused.response.status_code == 403, refused
        assert b"another site" in refused.response.body, refused.response.body
    host = url.split("://", 1)[1]
    async with websockets.connect(ws_url, origin=f"http://{host}"):
        pass
    async with websockets.connect(ws_url) as socket:
        await socket.send(json.dumps({"id": 1, "method": "subscription.subscribe",
                                      "params": {"channels": ["lifecycle"], "namespaces": [[]],
                                                 "depth": 0}}))
        while True:
            message = json.loads(await asyncio.wait_for(socket.recv(), 10))
            if message["type"] == "event" and message["params"]["data"]["event"] == "completed":
                break
        await socket.send(json.dumps({"id": 2, "method": "agent.getTree", "params": {}}))
        while True:
            answer = json.loads(await asyncio.wait_for(socket.recv(), 10))
            if answer.get("id") == 2:
                break
        assert answer["result"]["tree"] == {
            "namespace": [], "status": "completed", "graph_name": "nested",
            "children": [{"namespace": list(child), "status": "completed",
                          "graph_name": "child"}]}, answer
        # Hostile frames: each answered with an error envelope, the socket open.
        hostile = [b"\xff\xfe", "[]", "3", "{}", '{"id": -1, "method": "run.start"}',
                   '{"id": 7, "method": "subscription.subscribe", "params": [1]}',
                   '{"id": 8, "method": "subscription.subscribe", "params": {"channels": "values"}}',
                   '{"id": 9, "method": "subscription.unsubscribe", "params": {}}',
                   '{"id": 10, "method": "run.start", "params": {"assistant_id": 5}}',
                   "[" * 10000 + "]" * 10000]
        for frame in hostile:
            await socket.send(frame)
            while True:
                answer = json.loads(await asyncio.wait_for(socket.recv(), 10))
                if answer["type"] != "event":
                    break
            assert answer["type"] == "error" and answer["error"] == "invalid_argument", (
                frame[:40], answer)
            assert isinstance(answer["message"], str) and answer["message"], answer
    assert (await http.get("/ok")).status_code == 200
    await http.aclose()
    print("v3_channels: ok")


async def sse_until_quiet(http, thread_id, body, quiet=1.0):
    """The events of a stream until it has been silent for `quiet` seconds
    (a filtered stream may never show the run's end)."""
    seen = []
    async with contextlib.aclosing(sse(http, thread_id, body)) as events:
        while True:
            try:
                seen.append(await asyncio.wait_for(anext(events), quiet))
            except asyncio.TimeoutError:
                return seen


asyncio.run(main())
