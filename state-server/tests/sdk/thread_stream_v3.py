"""The v3 thread protocol on our Agent Server API, driven by LangGraph's
official Python client (langgraph-sdk 0.4.14, `client.threads.stream`):
the recorded exchanges 55 (run.start, then the lifecycle), 56 (an
interrupt asked and answered with input.respond) and 59 (every channel),
then the wire checks the client cannot reach (errors, `since`, a stream
opened before its thread exists). Run by state-server's tests
`thread_stream_v3::*` with LANGGRAPH_URL set; any failed assertion exits
non-zero.
"""

import asyncio
import json
import os
import uuid

import httpx
from langgraph_sdk import get_client

PING = {"messages": [{"role": "user", "content": "ping"}]}
ALL = ["values", "updates", "messages", "tools", "lifecycle", "input", "checkpoints", "tasks",
       "custom"]


def check_envelope(event):
    """Every event as recorded: type, event_id, seq, method, params."""
    assert event["type"] == "event", event
    assert isinstance(event["event_id"], str) and event["event_id"], event
    assert isinstance(event["seq"], int) and event["seq"] > 0, event
    params = event["params"]
    assert isinstance(params["namespace"], list), event
    assert isinstance(params["timestamp"], int), event
    assert "data" in params, event


async def sse(http, thread_id, body, until, seconds=15.0):
    """The events of one stream, each with its SSE name and id, until
    `until(events)` holds (the stream itself stays open)."""
    events = []

    async def read():
        async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as r:
            assert r.status_code == 200, await r.aread()
            assert r.headers["content-type"].startswith("text/event-stream"), r.headers
            frame = {}
            async for line in r.aiter_lines():
                field, _, value = line.partition(": ")
                if line:
                    frame[field] = value
                    continue
                if "data" not in frame:
                    frame = {}
                    continue
                data = json.loads(frame["data"])
                # Each frame is named by its method, its id its seq.
                assert frame.get("event") == data["method"], frame
                assert frame.get("id") == str(data["seq"]), frame
                events.append(data)
                frame = {}
                if until(events):
                    return

    await asyncio.wait_for(read(), seconds)
    return events


def lifecycle(events):
    return [e["params"]["data"]["event"] for e in events
            if e["method"] == "lifecycle" and e["params"]["namespace"] == []]


def ended(count):
    """Until `count` runs have ended (completed or failed)."""
    return lambda events: sum(
        1 for e in events if e["method"] == "lifecycle" and e["params"]["namespace"] == []
        and e["params"]["data"]["event"] in ("completed", "failed")) >= count


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    client = get_client(url=url)

    # 55: a minted thread; run.start makes it; the output is the thread's.
    async with client.threads.stream(assistant_id="agent") as thread:
        started = await thread.run.start(input=PING)
        assert set(started) == {"run_id"}, started
        values = await thread.output.with_timeout(20)
        texts = [m["content"] for m in values["messages"]]
        assert texts == ["ping", "", "echo:ping", "The tool said: echo:ping"], texts
        assert thread.interrupted is False
    state = await client.threads.get_state(thread.thread_id)
    assert state["next"] == [] and len(state["values"]["messages"]) == 4, state

    async with httpx.AsyncClient(base_url=url, timeout=20) as http:
        # 55's events: lifecycle and input only; running, then completed.
        events = await sse(http, thread.thread_id, {"channels": ["lifecycle", "input"]}, ended(1))
        for event in events:
            check_envelope(event)
        assert lifecycle(events) == ["running", "completed"], events
        running = events[0]
        assert running["event_id"] == f"synth:{started['run_id']}:lc||running", running
        assert running["params"]["data"] == {"event": "running", "graph_name": "agent"}, running
        seqs = [e["seq"] for e in events]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs

        # 59: every channel; values as recorded (compact messages).
        events = await sse(http, thread.thread_id, {"channels": ALL}, ended(1))
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), events
        snapshots = [e["params"]["data"] for e in events if e["method"] == "values"]
        assert len(snapshots) == 4, snapshots
        last = snapshots[-1]["messages"]
        assert [m["type"] for m in last] == ["human", "ai", "tool", "ai"], last
        assert last[0] == {"type": "human", "content": "ping", "id": last[0]["id"]}, last[0]
        assert last[1]["tool_calls"] == [
            {"type": "tool_call", "name": "echo", "args": {"text": "ping"}, "id": "call_1"}], last
        assert last[2]["tool_call_id"] == "call_1" and last[2]["content"] == "echo:ping", last
        updates = [e for e in events if e["method"] == "updates"]
        assert [u["params"]["node"] for u in updates] == ["agent", "tools", "agent"], updates
        tools = [e["params"]["data"] for e in events if e["method"] == "tools"]
        assert [t["event"] for t in tools] == ["tool-started", "tool-finished"], tools
        assert tools[0]["tool_name"] == "echo" and tools[0]["input"] == {"text": "ping"}, tools
        assert tools[1]["output"]["content"] == "echo:ping", tools
        checkpoints = [e["params"]["data"] for e in events if e["method"] == "checkpoints"]
        assert checkpoints and all({"id", "step", "source"} <= set(c) for c in checkpoints)
        # `since`: only what came after.
        later = await sse(http, thread.thread_id, {"channels": ALL, "since": 5}, ended(1))
        assert [e["seq"] for e in later] == list(range(6, len(events) + 1)), later
        assert [e["event_id"] for e in later] == [e["event_id"] for e in events[5:]]

    # 56: an interrupt, asked on `input`, answered with input.respond.
    async with client.threads.stream(assistant_id="hitl") as thread:
        await thread.run.start(input={"answer": ""})
        for _ in range(100):
            if thread.interrupted:
                break
            await asyncio.sleep(0.1)
        assert thread.interrupted, "no interrupt reached the client"
        [asked] = thread.interrupts
        assert asked["namespace"] == [], asked
        answered = await thread.run.respond("Carol")
        assert answered == {}, answered
        values = await thread.output.with_timeout(20)
        assert values["answer"] == "Carol", values
    state = await client.threads.get_state(thread.thread_id)
    assert state["values"]["answer"] == "Carol" and state["interrupts"] == [], state

    async with httpx.AsyncClient(base_url=url, timeout=20) as http:
        events = await sse(http, thread.thread_id, {"channels": ["lifecycle", "input"]}, ended(1))
        assert lifecycle(events) == ["running", "interrupted", "running", "completed"], events
        [request] = [e for e in events if e["method"] == "input.requested"]
        assert request["params"]["data"] == {
            "interrupt_id": asked["interrupt_id"],
            "payload": {"question": "What is your name?"}}, request
        assert request["event_id"].endswith(f":input||{asked['interrupt_id']}"), request

        # A failing graph's run ends `failed`, with its error.
        failing = str(uuid.uuid4())
        start = {"id": 7, "method": "run.start", "params": {"assistant_id": "fail", "input": {}}}
        made = (await http.post(f"/threads/{failing}/commands", json=start)).json()
        assert made["type"] == "success" and made["id"] == 7, made
        events = await sse(http, failing, {"channels": ["lifecycle"]}, ended(1))
        assert lifecycle(events) == ["running", "failed"], events
        assert "boom" in events[-1]["params"]["data"]["error"], events[-1]

        # A stream opened before its thread exists sees the run that makes it.
        fresh = str(uuid.uuid4())
        reader = asyncio.create_task(sse(http, fresh, {"channels": ["lifecycle"]}, ended(1)))
        await asyncio.sleep(0.3)
        start["params"]["assistant_id"] = "agent"
        start["params"]["input"] = PING
        made = (await http.post(f"/threads/{fresh}/commands", json=start)).json()
        assert made["type"] == "success", made
        assert lifecycle(await reader) == ["running", "completed"]

        # Errors: each the protocol's envelope, or a 400 for no command.
        async def command(body, status=200, raw=None):
            response = await http.post(
                f"/threads/{fresh}/commands",
                content=raw if raw is not None else json.dumps(body),
                headers={"content-type": "application/json"})
            assert response.status_code == status, response.text
            return response.json()

        bad = await command(None, 400, raw=b"{not json")
        assert bad["detail"].startswith("Invalid JSON body"), bad
        bad = await command({"method": "run.start"}, 400)
        assert bad["type"] == "error" and bad["error"] == "invalid_argument", bad
        bad = await command({"id": 3, "method": "state.get", "params": {}})
        assert (bad["type"], bad["id"], bad["error"]) == ("error", 3, "unknown_command"), bad
        bad = await command({"id": 4, "method": "run.start", "params": {"input": PING}})
        assert bad["error"] == "invalid_argument" and "assistant_id" in bad["message"], bad
        bad = await command({"id": 5, "method": "run.start",
                             "params": {"assistant_id": "nope", "input": PING}})
        assert bad["type"] == "error" and "nope" in bad["message"], bad
        bad = await command({"id": 6, "method": "input.respond",
                             "params": {"interrupt_id": "x", "namespace": [], "response": 1}})
        assert bad["error"] == "no_such_interrupt", bad
        for channels in ([], ["values", "bogus"]):
            refused = await http.post(f"/threads/{fresh}/stream/events",
                                      json={"channels": channels})
            assert refused.status_code == 400 and "channels" in refused.json()["detail"], refused
    print("thread_stream_v3: ok")


asyncio.run(main())
