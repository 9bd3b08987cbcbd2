"""What deleting an assistant does, and what a run is made of, driven by
LangGraph's official Python client (langgraph-sdk 0.4.14) against our
Agent Server API, as LangGraph's server does them (langgraph-api 0.16.7,
`langgraph_runtime_inmem.ops`: `Assistants.delete`, `Runs.put`):

- a run's `metadata` is its assistant's, its thread's, its config's and
  its own, merged, with `graph_id` and `assistant_id`; its
  `kwargs.config` is the assistant's config under the run's, the
  configurable given the run's ids, the metadata as `metadata` (the
  recorded exchanges 18 and 20);
- deleting an assistant cancels its runs in flight (`action=interrupt`):
  a running one ends interrupted, a pending one never runs; its threads
  stay, unless `delete_threads=true`, which deletes those whose metadata
  names the assistant, with their runs (another user's threads, and the
  threads of other assistants, stay);
- the context schema of a graph served with one (`GET
  /assistants/{id}/schemas`).

Run by state-server's tests `agent_sdk::deleted_assistants*` with
LANGGRAPH_URL set (the server with the auth hook: `key-ada`, `key-bob`);
any failed assertion exits non-zero.
"""

import asyncio
import os
import uuid

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

PING = {"messages": [{"role": "user", "content": "ping"}]}
AGENT_ID = "fe096781-5601-53d2-b2f6-0d3403f7e9ca"  # uuid5(NAMESPACE_GRAPH, "agent")


async def gone(call):
    try:
        await call
    except NotFoundError:
        return
    raise AssertionError("still there")


async def status_of(client, thread_id, run_id):
    return (await client.runs.get(thread_id, run_id))["status"]


async def until_running(client, thread_id, run_id):
    for _ in range(200):
        if await status_of(client, thread_id, run_id) == "running":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} never started")


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    ada = get_client(url=url, api_key="key-ada")
    bob = get_client(url=url, api_key="key-bob")

    # 18/20: a run on a graph's own assistant, on a thread with metadata:
    # the recorded run's metadata keys and values, and its config's.
    thread = await ada.threads.create(metadata={"purpose": "wire-capture"})
    tid = thread["thread_id"]
    run = await ada.runs.create(tid, "agent", input=PING, metadata={"extra": "yes"})
    assert run["metadata"] == {
        "created_by": "system", "purpose": "wire-capture", "graph_id": "agent",
        "assistant_id": AGENT_ID, "extra": "yes",
    }, run["metadata"]
    config = run["kwargs"]["config"]
    assert config["metadata"] == run["metadata"], config
    configurable = config["configurable"]
    assert {k: configurable[k] for k in ("run_id", "thread_id", "graph_id", "assistant_id")} == {
        "run_id": run["run_id"], "thread_id": tid, "graph_id": "agent", "assistant_id": AGENT_ID,
    }, configurable
    # (LangGraph's user_id is its auth user's id: ours is the identity's.)
    assert configurable["user_id"] == "ada", configurable
    assert run["kwargs"]["context"] == {}, run["kwargs"]
    await ada.runs.join(tid, run["run_id"])
    fetched = await ada.runs.get(tid, run["run_id"])
    assert (fetched["metadata"], fetched["kwargs"]["config"]) == (run["metadata"], config), fetched
    # 11: the thread after the run names the graph and the assistant.
    got = await ada.threads.get(tid)
    assert got["metadata"] == {
        "purpose": "wire-capture", "graph_id": "agent", "assistant_id": AGENT_ID,
    }, got["metadata"]

    # 24: a message's metadata carries the run's (created_by among them).
    parts = [p async for p in ada.runs.stream(tid, "agent", input=PING, stream_mode="messages-tuple")]
    _, meta = next(p.data for p in parts if p.event == "messages")
    assert (meta["created_by"], meta["graph_id"], meta["assistant_id"]) == ("system", "agent", AGENT_ID), meta
    assert meta["purpose"] == "wire-capture" and meta["langgraph_node"] == "agent", meta

    # A thread made by its first run (if_not_exists="create") gets the
    # run's metadata (its config's, then its own) with its graph's ids.
    fresh = str(uuid.uuid4())
    run = await ada.runs.create(
        fresh, "agent", input=PING, if_not_exists="create",
        config={"metadata": {"from": "config", "extra": "no"}},
        metadata={"extra": "yes", "graph_id": "spoofed"},
    )
    await ada.runs.join(fresh, run["run_id"])
    assert (await ada.threads.get(fresh))["metadata"] == {
        "from": "config", "extra": "yes", "graph_id": "agent", "assistant_id": AGENT_ID,
    }
    assert run["metadata"] == {
        "created_by": "system", "from": "config", "extra": "yes", "graph_id": "agent",
        "assistant_id": AGENT_ID,
    }, run["metadata"]

    # A created assistant's metadata and config under the run's.
    made = await ada.assistants.create(
        graph_id="slow",
        config={"tags": ["nap"], "configurable": {"model": "m1", "user_id": "u-7"}},
        metadata={"team": "red", "purpose": "assistant's"},
    )
    aid = made["assistant_id"]
    busy = await ada.threads.create(metadata={"purpose": "thread's"})
    busy_id = busy["thread_id"]
    running = await ada.runs.create(
        busy_id, aid, input={},
        config={"recursion_limit": 7, "configurable": {"model": "m2"}},
        metadata={"extra": 1},
    )
    assert running["metadata"] == {
        "team": "red", "purpose": "thread's", "extra": 1, "graph_id": "slow", "assistant_id": aid,
    }, running["metadata"]
    config = running["kwargs"]["config"]
    assert (config["tags"], config["recursion_limit"]) == (["nap"], 7), config
    assert config["configurable"] == {
        "model": "m2", "user_id": "u-7", "run_id": running["run_id"], "thread_id": busy_id,
        "graph_id": "slow", "assistant_id": aid,
    }, config

    # Deleting it: the running run ends interrupted (long before its 20 s
    # node would), the one queued behind it never runs; the thread stays.
    await until_running(ada, busy_id, running["run_id"])
    queued = await ada.runs.create(busy_id, aid, input={}, multitask_strategy="enqueue")
    assert await status_of(ada, busy_id, queued["run_id"]) == "pending"
    elsewhere = await ada.threads.create()
    later = await ada.runs.create(elsewhere["thread_id"], aid, input={}, after_seconds=60)
    # Another user's delete is a 404, and cancels nothing.
    await gone(bob.assistants.delete(aid))
    assert await status_of(ada, busy_id, running["run_id"]) == "running"
    await ada.assistants.delete(aid)
    await gone(ada.assistants.get(aid))
    await asyncio.wait_for(ada.runs.join(busy_id, running["run_id"]), timeout=10)
    assert await status_of(ada, busy_id, running["run_id"]) == "interrupted"
    assert await status_of(ada, busy_id, queued["run_id"]) == "interrupted"
    assert await status_of(ada, elsewhere["thread_id"], later["run_id"]) == "interrupted"
    await asyncio.sleep(0.5)
    assert await status_of(ada, busy_id, queued["run_id"]) == "interrupted", "it ran"
    kept = await ada.threads.get(busy_id)
    assert kept["status"] == "idle" and kept["metadata"]["assistant_id"] == aid, kept
    # (The nap, had it ended, would have approved.)
    assert not (kept["values"] or {}).get("approved"), kept
    # A deleted assistant takes no run.
    try:
        await ada.runs.create(busy_id, aid, input={})
        raise AssertionError("a run on a deleted assistant was created")
    except UnprocessableEntityError as error:
        assert f"Invalid assistant: '{aid}'" in error.response.json()["detail"], error

    # delete_threads=true: the threads whose metadata names the assistant
    # go, with their runs; a thread of another assistant stays, and so
    # does a thread of another user's that names it.
    made = await ada.assistants.create(graph_id="agent", name="to-delete")
    aid = made["assistant_id"]
    mine = []
    for _ in range(3):
        t = await ada.threads.create()
        await ada.runs.wait(t["thread_id"], aid, input=PING)
        mine.append(t["thread_id"])
    pending_thread = await ada.threads.create()
    pending = await ada.runs.create(pending_thread["thread_id"], aid, input=PING, after_seconds=60)
    mine.append(pending_thread["thread_id"])
    other = await ada.threads.create()
    await ada.runs.wait(other["thread_id"], "agent", input=PING)
    bobs = await bob.threads.create(metadata={"assistant_id": aid})
    await ada.assistants.delete(aid, delete_threads=True)
    for t in mine:
        await gone(ada.threads.get(t))
    await gone(ada.runs.get(pending_thread["thread_id"], pending["run_id"]))
    assert (await ada.threads.get(other["thread_id"]))["metadata"]["assistant_id"] == AGENT_ID
    assert (await bob.threads.get(bobs["thread_id"]))["metadata"] == {"assistant_id": aid}
    assert await ada.threads.search(metadata={"assistant_id": aid}) == []

    # A created assistant's run rolled back with wait: the answer is the
    # thread's values as they are again (its graph found by the run).
    made = await ada.assistants.create(graph_id="slow")
    rolled = await ada.threads.create(graph_id="slow")
    await ada.threads.update_state(rolled["thread_id"], {"answer": "kept"})
    run = await ada.runs.create(rolled["thread_id"], made["assistant_id"], input={"answer": "gone"})
    await until_running(ada, rolled["thread_id"], run["run_id"])
    await asyncio.sleep(0.3)
    answer = await asyncio.wait_for(
        ada.runs.cancel(rolled["thread_id"], run["run_id"], wait=True, action="rollback"), timeout=10)
    assert answer == {"answer": "kept", "approved": False}, answer

    # The schemas of a graph served with its context's JSON Schema.
    schemas = await ada.assistants.get_schemas("greeter")
    context = schemas["context_schema"]
    assert context["title"] == "Visitor" and context["type"] == "object", context
    assert context["required"] == ["name"], context
    assert context["properties"]["name"]["type"] == "string", context
    assert "$schema" not in context, context
    assert (await ada.assistants.get_schemas("agent"))["context_schema"] is None


asyncio.run(main())
