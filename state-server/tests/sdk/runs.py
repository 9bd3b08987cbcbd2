"""Runs on our Agent Server API, driven by LangGraph's official Python
client (langgraph-sdk 0.4.14), as the recorded exchanges 10, 18-22, 25, 31,
32, 35-41, 61, 64, 70 and 71 drive LangGraph's own server. Run by
state-server's test `agent_sdk::runs` with LANGGRAPH_URL set.
"""

import asyncio
import os

from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError

PING = {"messages": [{"role": "user", "content": "ping"}]}
RUN_KEYS = {"run_id", "thread_id", "assistant_id", "status", "metadata", "kwargs", "multitask_strategy", "created_at", "updated_at"}
# A run's kwargs as recorded (exchange 20), under LangGraph's names.
KWARGS_KEYS = {"input", "command", "config", "context", "stream_mode", "interrupt_before", "interrupt_after",
               "webhook", "feedback_keys", "temporary", "subgraphs", "resumable", "checkpoint_during", "durability"}


def contents(values):
    return [(m["type"], m["content"]) for m in values["messages"]]


async def main() -> None:
    client = get_client(url=os.environ["LANGGRAPH_URL"])

    # 10: wait on the tool loop: the final values.
    thread = await client.threads.create()
    tid = thread["thread_id"]
    values = await client.runs.wait(tid, "agent", input=PING)
    assert contents(values) == [
        ("human", "ping"), ("ai", ""), ("tool", "echo:ping"), ("ai", "The tool said: echo:ping"),
    ], values
    assert values["messages"][1]["tool_calls"][0]["args"] == {"text": "ping"}, values

    # 11/12: the thread now names its graph and holds the values.
    got = await client.threads.get(tid)
    assert got["metadata"]["graph_id"] == "agent" and got["status"] == "idle", got
    assert contents(got["values"]) == contents(values), got

    # 18-20: create, join, list, get.
    run = await client.runs.create(tid, "agent", input=PING)
    assert RUN_KEYS <= set(run), run
    assert set(run["kwargs"]) == KWARGS_KEYS, sorted(run["kwargs"])
    assert run["status"] in ("pending", "running", "success"), run
    joined = await client.runs.join(tid, run["run_id"])
    assert len(joined["messages"]) == 8, joined
    listed = await client.runs.list(tid, limit=5)
    assert [r["run_id"] for r in listed][0] == run["run_id"], listed
    assert all(r["status"] == "success" for r in listed), listed

    # A run's own breakpoints (Studio's): paused before `tools`, then on.
    bp = (await client.threads.create())["thread_id"]
    paused = await client.runs.wait(bp, "agent", input=PING, interrupt_before=["tools"])
    assert contents(paused) == [("human", "ping"), ("ai", "")], paused
    assert (await client.threads.get_state(bp))["next"] == ["tools"]
    done = await client.runs.wait(bp, "agent", input=None)
    assert len(done["messages"]) == 4, done
    assert (await client.threads.get_state(bp))["next"] == []
    assert len(await client.runs.list(tid, limit=1)) == 1
    fetched = await client.runs.get(tid, run["run_id"])
    assert fetched["status"] == "success" and fetched["assistant_id"] == run["assistant_id"], fetched

    # 21/22: stream values, then updates; metadata first.
    thread = await client.threads.create()
    parts = [p async for p in client.runs.stream(thread["thread_id"], "agent", input=PING, stream_mode="updates")]
    assert parts[0].event == "metadata" and parts[0].data["attempt"] == 1, parts[0]
    updates = [p for p in parts if p.event == "updates"]
    assert [list(p.data) for p in updates] == [["agent"], ["tools"], ["agent"]], updates
    assert updates[1].data["tools"]["messages"][0]["content"] == "echo:ping", updates
    parts = [p async for p in client.runs.stream(thread["thread_id"], "agent", input=PING, stream_mode=["values"])]
    values_events = [p for p in parts if p.event == "values"]
    assert len(values_events[-1].data["messages"]) == 8, values_events[-1]

    # 23, 27-29: the legacy messages mode, debug, tasks, checkpoints.
    thread = await client.threads.create()
    tid_m = thread["thread_id"]
    parts = [p async for p in client.runs.stream(tid_m, "agent", input=PING, stream_mode="messages")]
    names = [p.event for p in parts]
    # As recorded: a node's returned messages arrive complete, each after
    # its metadata.
    assert names == ["metadata"] + ["messages/metadata", "messages/complete"] * 3, names
    nodes = [next(iter(p.data.values()))["metadata"]["langgraph_node"] for p in parts if p.event == "messages/metadata"]
    assert nodes == ["agent", "tools", "agent"], nodes
    completes = [p.data[0] for p in parts if p.event == "messages/complete"]
    assert [m["type"] for m in completes] == ["ai", "tool", "ai"], completes
    assert list(parts[1].data) == [completes[0]["id"]], parts[1]
    assert completes[-1]["content"] == "The tool said: echo:ping", completes
    # tasks: a start then a result per node, the result the node's write.
    parts = [p async for p in client.runs.stream(tid_m, "agent", input=PING, stream_mode="tasks")]
    tasks = [p.data for p in parts if p.event == "tasks"]
    assert [(t["name"], "input" in t) for t in tasks] == [
        ("agent", True), ("agent", False), ("tools", True), ("tools", False), ("agent", True), ("agent", False),
    ], tasks
    assert set(tasks[0]) == {"id", "name", "input", "triggers", "metadata"}, tasks[0]
    assert set(tasks[1]) == {"id", "name", "error", "result", "interrupts"}, tasks[1]
    assert tasks[0]["id"] == tasks[1]["id"] and tasks[0]["triggers"] == ["branch:to:agent"], tasks
    assert tasks[3]["result"]["messages"][0]["content"] == "echo:ping", tasks[3]
    assert len(tasks[2]["input"]["messages"]) == 6, tasks[2]  # 4 of the first run, its new human, the AI's call
    # checkpoints: one per step, each as the history shows it.
    parts = [p async for p in client.runs.stream(tid_m, "agent", input=PING, stream_mode="checkpoints")]
    checkpoints = [p.data for p in parts if p.event == "checkpoints"]
    assert len(checkpoints) == 4, checkpoints
    assert set(checkpoints[0]) == {"config", "parent_config", "values", "metadata", "next", "tasks"}, checkpoints[0]
    assert [c["next"] for c in checkpoints] == [["agent"], ["tools"], ["agent"], []], checkpoints
    history = await client.threads.get_history(tid_m, limit=4)
    assert [h["checkpoint"]["checkpoint_id"] for h in reversed(history)] == [
        c["config"]["configurable"]["checkpoint_id"] for c in checkpoints], (history, checkpoints)
    assert checkpoints[-1]["values"] == history[0]["values"]
    # Each checkpoint's metadata names its run, as LangGraph's (exchange
    # 13): the same in the stream and in the history.
    run_id = parts[0].data["run_id"]
    assert all(c["metadata"]["run_id"] == run_id for c in checkpoints), checkpoints
    assert [c["metadata"] for c in checkpoints] == [h["metadata"] for h in reversed(history)], history
    meta = history[0]["metadata"]
    assert (meta["graph_id"], meta["thread_id"], meta["run_attempt"], meta["source"]) == (
        "agent", tid_m, 1, "loop"), meta
    assert meta["assistant_id"] and meta["created_by"] == "system", meta
    # Filtered by a run's key: that run's steps only, newest first.
    of_run = await client.threads.get_history(tid_m, limit=10, metadata={"run_id": run_id})
    assert [h["checkpoint_id"] for h in of_run] == [h["checkpoint_id"] for h in history], of_run
    inputs = await client.threads.get_history(tid_m, limit=10, metadata={"run_id": run_id, "source": "input"})
    assert [h["metadata"]["step"] for h in inputs] == [history[-1]["metadata"]["step"]], inputs
    # debug: checkpoints and tasks, wrapped.
    parts = [p async for p in client.runs.stream(tid_m, "agent", input=PING, stream_mode="debug")]
    debug = [p.data for p in parts if p.event == "debug"]
    assert [d["type"] for d in debug] == ["checkpoint"] + ["task", "task_result", "checkpoint"] * 3, debug
    assert all(set(d) == {"step", "timestamp", "type", "payload"} for d in debug), debug
    assert debug[1]["step"] == debug[0]["step"] + 1 and debug[3]["step"] == debug[1]["step"], debug
    # A pause: the interrupted task's result carries the interrupt.
    paused = await client.threads.create()
    parts = [p async for p in client.runs.stream(paused["thread_id"], "hitl", input={}, stream_mode="tasks")]
    tasks = [p.data for p in parts if p.event == "tasks"]
    assert [t["name"] for t in tasks] == ["ask", "ask"], tasks
    assert tasks[1]["interrupts"][0]["value"] == {"question": "What is your name?"}, tasks
    parts = [p async for p in client.runs.stream(
        paused["thread_id"], "hitl", command={"resume": "Ada"}, stream_mode="tasks")]
    tasks = [p.data for p in parts if p.event == "tasks"]
    assert [(t["name"], t.get("result")) for t in tasks] == [
        ("ask", None), ("ask", {"answer": "Ada"}), ("finish", None), ("finish", {"approved": True}),
    ], tasks

    # 35-40: wait until the interrupt, resume it by wait.
    hitl = await client.threads.create()
    paused = await client.runs.wait(hitl["thread_id"], "hitl", input={})
    interrupt = paused["__interrupt__"][0]
    assert interrupt["value"] == {"question": "What is your name?"}, paused
    assert set(interrupt) == {"value", "id", "response_schema"}, interrupt
    state = await client.threads.get_state(hitl["thread_id"])
    assert state["next"] == ["ask"], state
    assert state["interrupts"][0]["id"] == interrupt["id"], state
    got = await client.threads.get(hitl["thread_id"])
    assert got["status"] == "interrupted", got
    done = await client.runs.wait(hitl["thread_id"], "hitl", command={"resume": "Bob"})
    assert done == {"answer": "Bob", "approved": True}, done
    assert (await client.threads.get(hitl["thread_id"]))["status"] == "idle"

    # 41: the same by stream, resumed by interrupt id.
    hitl = await client.threads.create()
    parts = [p async for p in client.runs.stream(hitl["thread_id"], "hitl", input={}, stream_mode=["updates", "values"])]
    pause = [p for p in parts if p.event == "updates" and "__interrupt__" in p.data]
    assert len(pause) == 1, parts
    assert "__interrupt__" in [p for p in parts if p.event == "values"][-1].data, parts
    interrupt_id = pause[0].data["__interrupt__"][0]["id"]
    parts = [p async for p in client.runs.stream(
        hitl["thread_id"], "hitl", command={"resume": {interrupt_id: "Ada"}}, stream_mode="updates")]
    assert [p.data for p in parts if p.event == "updates"] == [
        {"ask": {"answer": "Ada"}}, {"finish": {"approved": True}},
    ], parts

    # Time travel in place, as LangGraph's: the paused checkpoint answered
    # again (a branch from it; the first answer stays in the history),
    # then a fork: update_state at the input checkpoint as `ask`, and on.
    tt = (await client.threads.create())["thread_id"]
    await client.runs.wait(tt, "hitl", input={})
    assert await client.runs.wait(tt, "hitl", command={"resume": "Ada"}) == {"answer": "Ada", "approved": True}
    history = await client.threads.get_history(tt, limit=50)
    at_pause = next(h for h in history if h["interrupts"])
    assert at_pause["next"] == ["ask"], at_pause
    again = await client.runs.wait(tt, "hitl", command={"resume": "Bob"}, checkpoint_id=at_pause["checkpoint_id"])
    assert again == {"answer": "Bob", "approved": True}, again
    branched = await client.threads.get_history(tt, limit=50)
    assert branched[len(branched) - len(history):] == history, branched
    fork = next(h for h in branched if h["metadata"]["source"] == "fork")
    assert fork["parent_checkpoint_id"] == at_pause["checkpoint_id"], fork
    assert fork["next"] == ["ask"] and fork["interrupts"] == at_pause["interrupts"], fork
    at_input = next(h for h in history if h["metadata"]["source"] == "input")
    edit = await client.threads.update_state(tt, {"answer": "Eve"}, as_node="ask", checkpoint_id=at_input["checkpoint_id"])
    state = await client.threads.get_state(tt)
    assert state["checkpoint_id"] == edit["checkpoint_id"] and state["next"] == ["finish"], state
    assert await client.runs.wait(tt, "hitl", input=None) == {"answer": "Eve", "approved": True}
    try:
        await client.runs.wait(tt, "hitl", input=None, checkpoint_id="00000000-0000-6000-8000-0000000003e7")
        raise AssertionError("a run from a checkpoint the thread does not have")
    except Exception as error:
        assert error.response.status_code == 404, error

    # 31/32: stateless runs.
    parts = [p async for p in client.runs.stream(None, "agent", input=PING, stream_mode="updates")]
    assert [list(p.data) for p in parts if p.event == "updates"] == [["agent"], ["tools"], ["agent"]], parts
    values = await client.runs.wait(None, "agent", input=PING)
    assert len(values["messages"]) == 4, values

    # 70/71: a failing node: an error event, an __error__ body.
    failing = await client.threads.create()
    parts = [p async for p in client.runs.stream(failing["thread_id"], "fail", input={}, stream_mode="updates")]
    assert parts[-1].event == "error", parts
    assert "boom: deliberate failure" in parts[-1].data["message"], parts[-1]
    result = await client.runs.wait(failing["thread_id"], "fail", input={}, raise_error=False)
    assert "boom: deliberate failure" in result["__error__"]["message"], result
    assert (await client.threads.get(failing["thread_id"]))["status"] == "error"

    # 61/63: an unknown assistant, a bad stream mode: 422s.
    for kwargs in ({"assistant_id": "no-such-graph"}, {"assistant_id": "agent", "stream_mode": "bogus"}):
        try:
            await client.runs.create(tid, input=PING, **kwargs)
            raise AssertionError(f"a run was created with {kwargs}")
        except Exception as error:
            assert error.response.status_code == 422, error
    # 404: a run on a thread that is not there.
    try:
        await client.runs.create("7715a493-ece8-4351-8231-ccf549845f71", "agent", input=PING)
        raise AssertionError("a run was created on no thread")
    except NotFoundError:
        pass

    # 64: reject while the thread is busy.
    # (The first run's node takes 20 s: it is in flight for sure.)
    busy = await client.threads.create()
    first = await client.runs.create(busy["thread_id"], "slow", input={})
    try:
        await client.runs.create(busy["thread_id"], "hitl", input={}, multitask_strategy="reject")
        raise AssertionError("a second run was accepted while the first was in flight")
    except ConflictError as error:
        assert "Thread is already running a task" in error.response.json()["detail"], error
    # (Cancelled at once, within milliseconds of its start: its worker's
    # read of the thread is cut, and later reads still see the latest.)
    await client.runs.cancel(busy["thread_id"], first["run_id"], wait=True)
    # 33: a resumable run joined from the start (Last-Event-ID -1), then
    # after an event: the rest, each with its <ms>-<seq> id.
    joined = await client.threads.create()
    run = await client.runs.create(
        joined["thread_id"], "agent", input=PING, stream_mode=["values", "updates"], stream_resumable=True)
    parts = [p async for p in client.runs.join_stream(joined["thread_id"], run["run_id"], last_event_id="-1")]
    assert parts[0].event == "metadata", parts
    assert [p.event for p in parts[1:]] == ["values", "updates", "values", "updates", "values", "updates", "values"], parts
    assert all(p.id and p.id.split("-")[0].isdigit() and p.id.split("-")[1].isdigit() for p in parts), parts
    rest = [p async for p in client.runs.join_stream(joined["thread_id"], run["run_id"], last_event_id=parts[2].id)]
    assert [(p.event, p.data) for p in rest] == [(p.event, p.data) for p in parts[3:]], rest

    # 47: the thread stream (join_stream of a thread): it carries the run's
    # events, each with its id, then run_done.
    followed = await client.threads.create()
    tid_f = followed["thread_id"]

    async def first_run_of_thread():
        parts = []
        # From the thread's first run ("-1"): whether the stream opens
        # before the run starts or after it ends, it sees the whole run.
        async for part in await client.threads.join_stream(tid_f, last_event_id="-1"):
            parts.append(part)
            if part.event == "metadata" and part.data.get("status") == "run_done":
                return parts
        raise AssertionError(f"the thread stream ended early: {parts}")

    reader = asyncio.create_task(first_run_of_thread())
    await asyncio.sleep(0.3)
    await client.runs.wait(tid_f, "agent", input=PING)
    parts = await asyncio.wait_for(reader, timeout=10)
    assert [p.event for p in parts] == ["metadata", "values", "values", "values", "values", "metadata"], parts
    assert parts[0].data["attempt"] == 1 and parts[-1].data["run_id"] == parts[0].data["run_id"], parts
    assert all(p.id and p.id.split("-")[0].isdigit() for p in parts), parts
    assert len(parts[-2].data["messages"]) == 4, parts[-2]
    # Resumed after its third event: the rest of that run, from the store.
    async def rest_of_thread(last_event_id, stream_mode="run_modes"):
        parts = []
        async for part in await client.threads.join_stream(tid_f, last_event_id=last_event_id, stream_mode=stream_mode):
            parts.append(part)
            if part.event == "metadata" and part.data.get("status") == "run_done":
                return parts
    rest = await asyncio.wait_for(rest_of_thread(parts[2].id), timeout=10)
    assert [(p.event, p.data, p.id) for p in rest] == [(p.event, p.data, p.id) for p in parts[3:]], rest
    # lifecycle: the run's start and end only.
    ends = await asyncio.wait_for(rest_of_thread("-1", stream_mode="lifecycle"), timeout=10)
    assert [p.event for p in ends] == ["metadata", "metadata"], ends
    # GET history on an Agent Server thread: its states, newest first.
    http = client.http
    history = await http.get(f"/threads/{tid_f}/history", params={"limit": 2})
    assert len(history) == 2 and len(history[0]["values"]["messages"]) == 4, history
    assert history[0]["parent_checkpoint"]["checkpoint_id"] == history[1]["checkpoint"]["checkpoint_id"], history
    older = await http.get(f"/threads/{tid_f}/history", params={"before": history[0]["checkpoint"]["checkpoint_id"], "limit": 1})
    assert older == history[1:], older

    # 48: cancel a running run: it ends interrupted, long before its node would.
    sleepy = await client.threads.create()
    run = await client.runs.create(sleepy["thread_id"], "slow", input={})
    await asyncio.sleep(0.3)
    await client.runs.cancel(sleepy["thread_id"], run["run_id"], wait=False)
    ended = await asyncio.wait_for(client.runs.join(sleepy["thread_id"], run["run_id"]), timeout=10)
    fetched = await client.runs.get(sleepy["thread_id"], run["run_id"])
    assert fetched["status"] == "interrupted", fetched
    assert (await client.threads.get(sleepy["thread_id"]))["status"] == "idle"
    try:
        await client.runs.cancel(sleepy["thread_id"], "01a21c97-0000-7000-8000-000000000000")
        raise AssertionError("an unknown run was cancelled")
    except NotFoundError:
        pass

    # Cancel with action="rollback": the run is deleted (404) with what it
    # wrote; the thread's state and history are as before it.
    rolled = await client.threads.create(graph_id="slow")
    tid_r = rolled["thread_id"]
    await client.threads.update_state(tid_r, {"answer": "kept"})
    state_before = await client.threads.get_state(tid_r)
    history_before = await client.threads.get_history(tid_r)
    run = await client.runs.create(tid_r, "slow", input={"answer": "gone"})
    # (Cancelled once it runs its node: see the note of 64 above.)
    while (await client.runs.get(tid_r, run["run_id"]))["status"] != "running":
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    answer = await asyncio.wait_for(
        client.runs.cancel(tid_r, run["run_id"], wait=True, action="rollback"), timeout=10)
    assert answer == state_before["values"], answer
    try:
        await client.runs.get(tid_r, run["run_id"])
        raise AssertionError("a rolled back run is still there")
    except NotFoundError:
        pass
    assert await client.runs.list(tid_r) == [], "its row is gone"
    assert await client.threads.get_state(tid_r) == state_before
    assert await client.threads.get_history(tid_r) == history_before
    assert (await client.threads.get(tid_r))["status"] == "idle"
    # A pending run (due in a minute) rolled back: deleted at once.
    later = await client.runs.create(tid_r, "slow", input={}, after_seconds=60)
    await client.runs.cancel(tid_r, later["run_id"], action="rollback")
    try:
        await client.runs.get(tid_r, later["run_id"])
        raise AssertionError("a rolled back pending run is still there")
    except NotFoundError:
        pass

    # multitask_strategy="rollback" on a busy thread: the run in flight is
    # rolled back, the new one runs on the thread as it was before it.
    busy_run = await client.runs.create(tid_r, "slow", input={"answer": "gone"})
    while (await client.runs.get(tid_r, busy_run["run_id"]))["status"] != "running":
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    asked = await client.runs.create(tid_r, "hitl", input={}, multitask_strategy="rollback")
    values = await asyncio.wait_for(client.runs.join(tid_r, asked["run_id"]), timeout=10)
    assert values["__interrupt__"][0]["value"] == {"question": "What is your name?"}, values
    assert values["answer"] == "kept", values
    try:
        await client.runs.get(tid_r, busy_run["run_id"])
        raise AssertionError("the run in flight was not rolled back")
    except NotFoundError:
        pass
    runs = await client.runs.list(tid_r)
    assert [r["run_id"] for r in runs] == [asked["run_id"]], runs
    history = await client.threads.get_history(tid_r)
    # (The old states, seen through the new run's graph now.)
    kept = [(h["checkpoint_id"], h["values"]) for h in history[-len(history_before):]]
    assert kept == [(h["checkpoint_id"], h["values"]) for h in history_before], history
    assert all(h["values"].get("answer") != "gone" for h in history), history
    print("runs: ok")


asyncio.run(main())
