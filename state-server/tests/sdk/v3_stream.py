"""The v3 thread protocol (`client.threads.stream`) on our Agent Server API,
driven by LangGraph's official Python client (langgraph-sdk 0.4.14) as a
user drives it: the recorded exchanges 55 (run.start, the run's output), 56
(an interrupt asked and answered with input.respond) and 59 (every channel,
the stream opened before the thread exists), a failing run, then raw checks
of the wire the client cannot reach (`since`, replays, every error). Checked
against LangGraph's own server (`langgraph dev` on the reference app); run
by state-server's tests `v3_stream::*` with LANGGRAPH_URL set. Any failed
assertion exits non-zero.
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
TEXTS = ["ping", "", "echo:ping", "The tool said: echo:ping"]
QUESTION = {"question": "What is your name?"}
ENVELOPE = {"type", "event_id", "seq", "method", "params"}


def check(events):
    """Every event as recorded; seqs rising, event ids unique."""
    for event in events:
        assert set(event) == ENVELOPE and event["type"] == "event", event
        assert isinstance(event["event_id"], str) and event["event_id"], event
        assert isinstance(event["seq"], int) and event["seq"] > 0, event
        params = event["params"]
        assert {"namespace", "timestamp", "data"} <= set(params), event
        assert isinstance(params["namespace"], list) and isinstance(params["timestamp"], int), event
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs)), seqs
    ids = [e["event_id"] for e in events]
    assert len(set(ids)) == len(ids), ids


def root_lifecycle(events):
    return [e["params"]["data"]["event"] for e in events
            if e["method"] == "lifecycle" and e["params"]["namespace"] == []]


def ends(event):
    """A run's end: the root's lifecycle completed or failed (not interrupted)."""
    return (event["method"] == "lifecycle" and event["params"]["namespace"] == []
            and event["params"]["data"]["event"] in ("completed", "failed"))


async def until_end(events, runs=1):
    """The events of an open stream up to the end of its `runs`-th run (the
    server keeps a thread's stream open for later runs)."""
    seen = []
    async for event in events:
        seen.append(event)
        if sum(map(ends, seen)) == runs:
            return seen
    raise AssertionError(f"the stream closed before {runs} run(s) ended: {seen}")


async def interrupted(thread):
    """Waits (10 s at most) for the client to see the thread paused."""
    for _ in range(200):
        if thread.interrupted:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no interrupt reached the client")


async def read(http, thread_id, body, runs=1):
    async with contextlib.aclosing(sse(http, thread_id, body)) as events:
        return await asyncio.wait_for(until_end(events, runs), 20)


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    client = get_client(url=url)
    http = httpx.AsyncClient(base_url=url, timeout=30)

    # 55: a minted thread, made by run.start; projections opened after the
    # start still see the whole run (the server replays the thread).
    async with client.threads.stream(assistant_id="agent") as thread:
        started = await thread.run.start(input=PING)
        assert set(started) == {"run_id"} and started["run_id"], started

        async def snapshots():
            return [values async for values in thread.values]

        async def subscribed():
            return [event async for event in thread.subscribe(["lifecycle", "values"])]

        projections = asyncio.gather(snapshots(), subscribed())
        output = await thread.output.with_timeout(20)
        values, events = await asyncio.wait_for(projections, 20)
        assert [m["content"] for m in output["messages"]] == TEXTS, output
        assert thread.interrupted is False and thread.interrupts == []
    # `values`: the thread's state (GET .../state) first, then each
    # snapshot of the run, until the run ended.
    assert [m["content"] for m in values[-1]["messages"]] == TEXTS, values
    assert [len(v["messages"]) for v in values[1:]] == [1, 2, 3, 4], values
    check(events)
    assert {e["method"] for e in events} == {"lifecycle", "values"}, events
    assert root_lifecycle(events) == ["running", "completed"], events
    assert events[0]["params"]["data"] == {"event": "running", "graph_name": "agent"}, events[0]
    assert events[-1]["params"]["data"] == {"event": "completed", "graph_name": "agent"}, events
    state = await client.threads.get_state(thread.thread_id)
    assert state["values"]["messages"] == output["messages"], state
    assert state["next"] == [] and state["interrupts"] == [], state
    agent_thread = thread.thread_id

    # Reattached by its id after the run, a stream's output is the state.
    async with client.threads.stream(agent_thread, assistant_id="agent") as reattached:
        assert await reattached.output.with_timeout(20) == output

    # 59: a thread id of the caller's, every channel opened before the
    # thread exists, then the run.
    chosen = str(uuid.uuid4())
    async with client.threads.stream(chosen, assistant_id="agent") as thread:
        everything = thread.events
        await asyncio.sleep(0.3)  # the stream is open before run.start
        run_id = (await thread.run.start(input=PING))["run_id"]
        events = await asyncio.wait_for(until_end(everything), 20)
        assert [m["content"] for m in (await thread.output.with_timeout(20))["messages"]] == TEXTS
    check(events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), events
    assert root_lifecycle(events) == ["running", "completed"], events
    assert events[0]["method"] == "lifecycle" and ends(events[-1]), events
    states = [e["params"]["data"] for e in events if e["method"] == "values"]
    assert [len(s["messages"]) for s in states] == [1, 2, 3, 4], states
    last = states[-1]["messages"]
    assert [(m["type"], m["content"]) for m in last] == list(
        zip(["human", "ai", "tool", "ai"], TEXTS)), last
    # Messages as recorded: compact, each with its id.
    assert last[0] == {"type": "human", "content": "ping", "id": last[0]["id"]}, last[0]
    assert last[1]["tool_calls"] == [
        {"type": "tool_call", "name": "echo", "args": {"text": "ping"}, "id": "call_1"}], last[1]
    assert last[2]["tool_call_id"] == "call_1" and last[2]["name"] == "echo", last[2]
    assert all(isinstance(m["id"], str) for m in last), last
    runs = await client.runs.list(chosen)
    assert [r["run_id"] for r in runs] == [run_id] and runs[0]["status"] == "success", runs

    # Replays: each stream replays the thread from its start, the same
    # event ids each time; `since` keeps only the events after a seq.
    again = await read(http, chosen, {"channels": ALL})
    assert [e["event_id"] for e in again] == [e["event_id"] for e in events], again
    assert [e["seq"] for e in again] == [e["seq"] for e in events], again
    middle = events[len(events) // 2]["seq"]
    later = await read(http, chosen, {"channels": ALL, "since": middle})
    assert [e["event_id"] for e in later] == [e["event_id"] for e in events if e["seq"] > middle]
    only = await read(http, chosen, {"channels": ["lifecycle"], "since": events[0]["seq"]})
    assert root_lifecycle(only) == ["completed"], only
    # The root's namespace only, as the client's projections ask.
    root = await read(http, chosen, {"channels": ["lifecycle", "values"], "namespaces": [[]],
                                     "depth": 0})
    # (LangGraph stamps its lifecycle events anew on each replay.)
    assert [(e["event_id"], e["params"]["data"]) for e in root] == [
        (e["event_id"], e["params"]["data"]) for e in events
        if e["method"] in ("lifecycle", "values")], root

    # 56: an interrupt, asked on `input`, answered with input.respond.
    async with client.threads.stream(assistant_id="hitl") as thread:
        await thread.run.start(input={"answer": ""})
        await interrupted(thread)
        # (The client reads the interrupt's `value`; the wire, as LangGraph
        # sends it, names it `payload`: its value is None on both.)
        [asked] = thread.interrupts
        assert set(asked) == {"interrupt_id", "value", "namespace"}, asked
        assert isinstance(asked["interrupt_id"], str) and asked["namespace"] == [], asked
        assert await thread.run.respond("Carol") == {}
        final = await thread.output.with_timeout(20)
        assert final["answer"] == "Carol", final
        assert thread.interrupted is False and thread.interrupts == []
    state = await client.threads.get_state(thread.thread_id)
    assert state["values"]["answer"] == "Carol", state
    assert state["next"] == [] and state["interrupts"] == [], state
    events = await read(http, thread.thread_id, {"channels": ["lifecycle", "input"]})
    check(events)
    assert [e["method"] for e in events] == [
        "lifecycle", "input.requested", "lifecycle", "lifecycle", "lifecycle"], events
    assert root_lifecycle(events) == ["running", "interrupted", "running", "completed"], events
    assert events[1]["params"]["data"] == {
        "interrupt_id": asked["interrupt_id"], "payload": QUESTION}, events[1]
    assert {e["params"]["data"]["graph_name"] for e in events if e["method"] == "lifecycle"} == {
        "hitl"}, events
    # The interrupt, answered, is gone: answering it again is refused.
    respond = {"id": 9, "method": "input.respond", "params": {
        "interrupt_id": asked["interrupt_id"], "namespace": [], "response": "Dave"}}
    twice = (await http.post(f"/threads/{thread.thread_id}/commands", json=respond)).json()
    assert (twice["type"], twice["id"], twice["error"]) == ("error", 9, "no_such_interrupt"), twice

    # A failing run ends `failed`, with its error (on a stream open as it
    # fails: LangGraph's replays drop the message); the client raises.
    async with client.threads.stream(assistant_id="fail") as thread:
        live = asyncio.create_task(read(http, thread.thread_id, {"channels": ["lifecycle"]}))
        await asyncio.sleep(0.3)
        await thread.run.start(input={})
        try:
            await thread.output.with_timeout(20)
        except RuntimeError as error:
            assert str(error).startswith("Run errored"), error
        else:
            raise AssertionError("the failed run's output did not raise")
    events = await live
    assert root_lifecycle(events) == ["running", "failed"], events
    failed = events[-1]["params"]["data"]
    assert failed["graph_name"] == "fail" and "boom" in failed["error"], failed
    events = await read(http, thread.thread_id, {"channels": ["lifecycle"]})
    assert root_lifecycle(events) == ["running", "failed"], events

    # A raw stream opened before its thread exists sees the run that makes it.
    fresh = str(uuid.uuid4())
    reader = asyncio.create_task(read(http, fresh, {"channels": ["lifecycle", "values"]}))
    await asyncio.sleep(0.3)
    assert not reader.done(), "the stream on a thread to come closed"
    start = {"id": 1, "method": "run.start", "params": {"assistant_id": "agent", "input": PING}}
    made = (await http.post(f"/threads/{fresh}/commands", json=start)).json()
    assert set(made) == {"type", "id", "result", "meta"}, made
    assert made["type"] == "success" and made["id"] == 1 and set(made["result"]) == {"run_id"}, made
    assert isinstance(made["meta"]["applied_through_seq"], int), made
    seen = await reader
    check(seen)
    assert root_lifecycle(seen) == ["running", "completed"], seen

    await over_websocket(client, url)
    await refusals(http, agent_thread)
    await http.aclose()
    print("v3_stream: ok")


async def over_websocket(client, url):
    """55 and 56 again with the client's WebSocket transport, then its
    commands on a raw socket."""
    async with client.threads.stream(assistant_id="agent", transport="websocket") as thread:
        await thread.run.start(input=PING)
        output = await thread.output.with_timeout(20)
        assert [m["content"] for m in output["messages"]] == TEXTS, output
    done = thread.thread_id
    async with client.threads.stream(assistant_id="hitl", transport="websocket") as thread:
        await thread.run.start(input={"answer": ""})
        await interrupted(thread)
        assert await thread.run.respond("Carol") == {}
        assert (await thread.output.with_timeout(20))["answer"] == "Carol"

    ws_url = url.replace("http://", "ws://", 1) + f"/threads/{done}/stream/events"
    async with websockets.connect(ws_url) as socket:
        async def answer(command):
            await socket.send(command if isinstance(command, str) else json.dumps(command))
            while True:
                reply = json.loads(await asyncio.wait_for(socket.recv(), 10))
                if reply.get("type") != "event":
                    return reply

        bad = await answer("{not json")
        assert (bad["type"], bad["id"], bad["error"]) == ("error", None, "invalid_argument"), bad
        bad = await answer({"id": 1, "method": "subscription.subscribe",
                            "params": {"channels": ["bogus"]}})
        assert (bad["id"], bad["error"]) == (1, "invalid_argument"), bad
        # A subscription gets the run's events it asks for: replayed before
        # its answer, or fed after it.
        await socket.send(json.dumps({"id": 2, "method": "subscription.subscribe",
                                      "params": {"channels": ["lifecycle"]}}))
        made, seen = None, []
        while made is None or len(seen) < 2:
            message = json.loads(await asyncio.wait_for(socket.recv(), 10))
            if message["type"] == "event":
                assert message["method"] == "lifecycle", message
                seen.append(message["params"]["data"]["event"])
            else:
                made = message
        assert made["type"] == "success" and made["id"] == 2, made
        # (How many were replayed depends on how far the server read the
        # thread when the subscription came: LangGraph had read it all.)
        assert isinstance(made["result"]["replayed_events"], int), made
        sub = made["result"]["subscription_id"]
        assert isinstance(sub, str), made
        assert seen == ["running", "completed"], seen
        tree = await answer({"id": 5, "method": "agent.getTree", "params": {}})
        assert tree == {"type": "success", "id": 5, "meta": tree["meta"], "result": {"tree": {
            "namespace": [], "status": "completed", "graph_name": "agent"}}}, tree
        gone = await answer({"id": 3, "method": "subscription.unsubscribe",
                             "params": {"subscription_id": sub}})
        assert gone["type"] == "success" and gone["id"] == 3, gone
        again = await answer({"id": 4, "method": "subscription.unsubscribe",
                              "params": {"subscription_id": sub}})
        assert again["type"] == "error" and again["id"] == 4, again


async def refusals(http, idle):
    """Each refusal as LangGraph's: 400 for a body that is no command, else
    the protocol's error envelope with a 200."""
    nowhere = str(uuid.uuid4())

    async def command(body, status=200, thread=nowhere):
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        r = await http.post(f"/threads/{thread}/commands", content=content,
                            headers={"content-type": "application/json"})
        assert r.status_code == status, (body, r.status_code, r.text)
        return r.json()

    # LangGraph says just "Invalid JSON body"; what follows may say where.
    bad = await command(b"{not json", 400)
    assert bad["detail"].startswith("Invalid JSON body"), bad
    for body, id_ in (({"method": "run.start"}, None), ({"id": "x", "method": "run.start"}, "x"),
                      ({"id": 3}, 3), ([1, 2], None)):
        bad = await command(body, 400)
        assert (bad["type"], bad["id"], bad["error"]) == ("error", id_, "invalid_argument"), bad
        assert isinstance(bad["message"], str), bad

    def error(bad, id_, code):
        assert set(bad) == {"type", "id", "error", "message"}, bad
        assert (bad["type"], bad["id"], bad["error"]) == ("error", id_, code), bad
        return bad["message"]

    error(await command({"id": 3, "method": "state.get", "params": {}}), 3, "unknown_command")
    message = error(await command({"id": 4, "method": "run.start", "params": {"input": PING}}),
                    4, "invalid_argument")
    assert "assistant_id" in message, message
    bad = await command({"id": 5, "method": "run.start",
                         "params": {"assistant_id": "nope", "input": PING}})
    assert bad["type"] == "error" and bad["id"] == 5 and "nope" in bad["message"], bad
    assert (await http.get(f"/threads/{nowhere}")).status_code == 404, "a refused run made a thread"
    respond = {"id": 6, "method": "input.respond",
               "params": {"interrupt_id": "x", "namespace": [], "response": 1}}
    # No interrupt of that id: on an idle thread, and on no thread at all.
    error(await command(respond, thread=idle), 6, "no_such_interrupt")
    error(await command(respond), 6, "no_such_run")
    del respond["params"]["interrupt_id"]
    message = error(await command(respond, thread=idle), 6, "invalid_argument")
    assert "interrupt_id" in message, message

    # A stream's refusals, before any event: 400 with a `detail`.
    for body in ({"channels": []}, {}, {"channels": ["values", "bogus"]},
                 {"channels": ["input.requested"]}):
        r = await http.post(f"/threads/{idle}/stream/events", json=body)
        assert r.status_code == 400 and "channels" in r.json()["detail"], (body, r.text)
    r = await http.post(f"/threads/{idle}/stream/events", content=b"{not json",
                        headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["detail"].startswith("Invalid JSON body"), r.text


asyncio.run(main())
