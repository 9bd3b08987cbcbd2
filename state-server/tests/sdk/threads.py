"""Threads and their state on our Agent Server API, driven by LangGraph's
official Python client (langgraph-sdk 0.4.14), as the recorded exchanges
09-17 and 42-46 drive LangGraph's own server. Run by state-server's test
`agent_sdk::threads` with LANGGRAPH_URL set.
"""

import asyncio
import os
import uuid

from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError

THREAD_KEYS = {
    "thread_id", "created_at", "updated_at", "state_updated_at", "metadata",
    "status", "config", "values",
}
STATE_KEYS = {
    "values", "next", "tasks", "metadata", "created_at", "checkpoint",
    "parent_checkpoint", "interrupts", "checkpoint_id", "parent_checkpoint_id",
}


async def main() -> None:
    client = get_client(url=os.environ["LANGGRAPH_URL"])

    # 09: create; its id a UUID (v7) when not given.
    created = await client.threads.create(metadata={"purpose": "wire-capture"})
    assert set(created) == THREAD_KEYS, created
    assert uuid.UUID(created["thread_id"]).version == 7, created
    assert created["status"] == "idle" and created["values"] is None, created
    assert created["metadata"] == {"purpose": "wire-capture"}, created
    tid = created["thread_id"]

    # 62: if_exists raise is a 409; do_nothing answers the thread as it is.
    try:
        await client.threads.create(thread_id=tid, if_exists="raise")
        raise AssertionError("a thread was created twice")
    except ConflictError as error:
        assert error.response.json()["detail"] == f"Thread with ID {tid} already exists"
    same = await client.threads.create(thread_id=tid, if_exists="do_nothing")
    assert same["metadata"] == {"purpose": "wire-capture"}, same

    # 11: get. No graph yet: no values.
    got = await client.threads.get(tid)
    assert got["thread_id"] == tid and got["values"] is None, got

    # 17: patch merges metadata; naming a graph lets state edits run.
    patched = await client.threads.update(tid, metadata={"graph_id": "agent", "extra": "yes"})
    assert patched["metadata"] == {"purpose": "wire-capture", "graph_id": "agent", "extra": "yes"}, patched

    # 14: update_state as a node; the new checkpoint answered.
    update = await client.threads.update_state(
        tid, {"messages": [{"role": "user", "content": "injected by update_state"}]}, as_node="tools"
    )
    assert set(update) == {"checkpoint", "configurable", "checkpoint_id"}, update
    first = update["checkpoint_id"]
    assert update["checkpoint"]["thread_id"] == tid, update
    await client.threads.update_state(
        tid, {"messages": [{"role": "user", "content": "second"}]}, as_node="agent"
    )

    # 16: the state at a checkpoint (by id, and by a checkpoint object).
    at_first = await client.threads.get_state(tid, checkpoint_id=first)
    assert set(at_first) >= STATE_KEYS, at_first
    assert at_first["checkpoint_id"] == first, at_first
    assert [m["content"] for m in at_first["values"]["messages"]] == ["injected by update_state"]
    assert at_first["next"] == ["agent"], at_first
    assert at_first["tasks"][0]["name"] == "agent", at_first
    by_object = await client.threads.get_state(tid, checkpoint={"checkpoint_id": first})
    assert by_object == at_first, (by_object, at_first)

    # 13: history, newest first, limit and before.
    history = await client.threads.get_history(tid, limit=10)
    assert [len(s["values"]["messages"]) for s in history] == [2, 1], history
    assert history[1] == at_first, history
    assert history[0]["parent_checkpoint_id"] == first, history[0]
    older = await client.threads.get_history(tid, limit=10, before=history[0]["checkpoint_id"])
    assert older == [at_first], older

    # 11 again: values now, through the graph the metadata names.
    got = await client.threads.get(tid)
    assert [m["content"] for m in got["values"]["messages"]] == ["injected by update_state", "second"]
    assert got["interrupts"] == {}, got

    # 42-44: search and count by metadata and values.
    other = await client.threads.create(metadata={"purpose": "other"})
    found = await client.threads.search(metadata={"purpose": "wire-capture"}, limit=5)
    assert [t["thread_id"] for t in found] == [tid], found
    assert await client.threads.search(status="interrupted") == []
    newest = await client.threads.search(limit=1)
    assert [t["thread_id"] for t in newest] == [other["thread_id"]], newest
    oldest = await client.threads.search(limit=1, sort_by="created_at", sort_order="asc")
    assert [t["thread_id"] for t in oldest] == [tid], oldest
    with_values = await client.threads.search(values={"messages": got["values"]["messages"]})
    assert [t["thread_id"] for t in with_values] == [tid], with_values
    assert await client.threads.count() == 2
    assert await client.threads.count(metadata={"purpose": "other"}) == 1

    # Errors.
    try:
        await client.threads.update_state(other["thread_id"], {"messages": []})
        raise AssertionError("a thread without a graph was edited")
    except Exception as error:  # the client raises its 400 as BadRequestError
        assert error.response.status_code == 400, error
        assert "has no assigned graph ID" in error.response.json()["detail"]
    try:
        await client.threads.get_state(tid, checkpoint_id="1f1ea4ee-9854-6729-8003-d5fbd6f4b086")
        raise AssertionError("a checkpoint not ours was found")
    except NotFoundError:
        pass

    # 46: delete; then it is gone.
    await client.threads.delete(other["thread_id"])
    try:
        await client.threads.get(other["thread_id"])
        raise AssertionError("a deleted thread was found")
    except NotFoundError as error:
        assert error.response.json()["detail"] == f"Thread with ID {other['thread_id']} not found"
    assert await client.threads.count() == 1
    print("threads: ok")


asyncio.run(main())
