"""Assistants created through LangGraph's official Python client
(langgraph-sdk 0.4.14) against our Agent Server API: create (the recorded
exchange 07's shape), get, search, count, update (a new version),
versions, set_latest, delete, each user seeing only their own; and runs
on a created assistant whose context (merged with the run's) reaches the
graph's node. Run by state-server's test `agent_sdk::created_assistants`
with LANGGRAPH_URL set (a server with the auth hook: `key-ada`,
`key-bob`); any failed assertion exits non-zero.
"""

import asyncio
import os
import uuid

from langgraph_sdk import get_client
from langgraph_sdk.errors import (
    BadRequestError,
    ConflictError,
    NotFoundError,
    UnprocessableEntityError,
)

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
ASSISTANT_KEYS = {
    "assistant_id", "graph_id", "config", "context", "metadata", "name",
    "created_at", "updated_at", "version", "description",
}
VERSION_KEYS = ASSISTANT_KEYS - {"updated_at"}
SYSTEM = 5  # agent, hitl, fail, slow, greeter


async def refused(call, error, status, detail=None, contains=None):
    """`call` fails with the SDK's `error`, our status and detail."""
    try:
        await call
    except error as e:
        assert e.response.status_code == status, (e, e.response.text)
        got = e.response.json()["detail"]
        if detail is not None:
            assert got == detail, got
        if contains is not None:
            assert contains in got, got
        return got
    raise AssertionError(f"not refused: expected {error.__name__}")


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    ada = get_client(url=url, api_key="key-ada")
    bob = get_client(url=url, api_key="key-bob")

    # 07: created as the recorded exchange shows: a random UUID, the
    # config's configurable mirrored as the context, version 1.
    copy = await ada.assistants.create(
        graph_id="agent", config={"configurable": {"x": 1}}, name="agent-copy"
    )
    assert set(copy) == ASSISTANT_KEYS, copy
    copy_id = copy["assistant_id"]
    assert uuid.UUID(copy_id).version == 4, copy
    assert copy["config"] == {"configurable": {"x": 1}}, copy
    assert copy["context"] == {"x": 1}, copy
    assert (copy["metadata"], copy["version"], copy["description"]) == ({}, 1, None), copy
    assert copy["name"] == "agent-copy" and copy["graph_id"] == "agent", copy
    assert copy["created_at"] == copy["updated_at"], copy
    assert await ada.assistants.get(copy_id) == copy
    untitled = await ada.assistants.create(graph_id="hitl")
    assert untitled["name"] == "Untitled", untitled

    # if_exists: raise (409) or the one there.
    await refused(
        ada.assistants.create(graph_id="agent", assistant_id=copy_id),
        ConflictError, 409, f"Assistant {copy_id} already exists",
    )
    same = await ada.assistants.create(
        graph_id="agent", assistant_id=copy_id, if_exists="do_nothing", name="other"
    )
    assert same == copy, same

    # A context, for a graph served to take one.
    greeter = await ada.assistants.create(
        graph_id="greeter", context={"name": "Ada"}, metadata={"team": "x"},
        name="Greeter", description="greets",
    )
    gid = greeter["assistant_id"]
    assert greeter["context"] == {"name": "Ada"}, greeter
    assert greeter["config"] == {"configurable": {"name": "Ada"}}, greeter
    assert greeter["description"] == "greets", greeter

    # Search and count see both kinds; bob sees only the system ones.
    found = await ada.assistants.search(limit=20)
    assert [a["assistant_id"] for a in found[:3]] == [gid, untitled["assistant_id"], copy_id], found
    assert len(found) == SYSTEM + 3, found
    assert all(set(a) == ASSISTANT_KEYS for a in found), found
    assert await ada.assistants.count() == SYSTEM + 3
    assert await bob.assistants.count() == SYSTEM
    assert all(a["metadata"] == {"created_by": "system"} for a in await bob.assistants.search(limit=20))
    by_meta = await ada.assistants.search(metadata={"team": "x"})
    assert [a["assistant_id"] for a in by_meta] == [gid], by_meta
    on_greeter = await ada.assistants.search(graph_id="greeter")
    assert [a["assistant_id"] for a in on_greeter] == [
        gid, str(uuid.uuid5(NAMESPACE_GRAPH, "greeter"))
    ], on_greeter
    assert await ada.assistants.count(graph_id="agent") == 2
    assert await ada.assistants.count(name="copy") == 1
    picked = await ada.assistants.search(graph_id="agent", select=["assistant_id", "name"])
    assert picked == [
        {"assistant_id": copy_id, "name": "agent-copy"},
        {"assistant_id": str(uuid.uuid5(NAMESPACE_GRAPH, "agent")), "name": "agent"},
    ], picked
    by_name = await ada.assistants.search(sort_by="name", sort_order="asc", limit=20)
    names = [a["name"].lower() for a in by_name]
    assert names == sorted(names), names
    await refused(bob.assistants.get(gid), NotFoundError, 404, f"Assistant {gid} not found")

    # Update: a new version, made current; metadata merged, the rest kept.
    updated = await ada.assistants.update(
        gid, context={"name": "Bo", "lang": "fr"}, metadata={"stage": "beta"}, name="Greeter 2"
    )
    assert updated["version"] == 2, updated
    assert updated["context"] == {"name": "Bo", "lang": "fr"}, updated
    assert updated["config"] == {"configurable": {"name": "Bo", "lang": "fr"}}, updated
    assert updated["metadata"] == {"team": "x", "stage": "beta"}, updated
    assert (updated["name"], updated["description"]) == ("Greeter 2", "greets"), updated
    assert updated["created_at"] == greeter["created_at"], updated
    assert updated["updated_at"] > greeter["updated_at"], updated
    assert await ada.assistants.get(gid) == updated

    # Versions, newest first; by metadata; paged.
    versions = await ada.assistants.get_versions(gid)
    assert [v["version"] for v in versions] == [2, 1], versions
    assert all(set(v) == VERSION_KEYS for v in versions), versions
    assert versions[1]["context"] == {"name": "Ada"}, versions
    beta = await ada.assistants.get_versions(gid, metadata={"stage": "beta"})
    assert [v["version"] for v in beta] == [2], beta
    page = await ada.assistants.get_versions(gid, limit=1, offset=1)
    assert [v["version"] for v in page] == [1], page
    await refused(bob.assistants.get_versions(gid), NotFoundError, 404)

    # Runs on it: the assistant's context, the run's merged over it (its
    # `context`, or its `config.configurable`), reach the node.
    thread = await ada.threads.create()
    tid = thread["thread_id"]
    out = await ada.runs.wait(tid, gid, input={})
    assert out == {"greeting": "fr:Bo"}, out
    out = await ada.runs.wait(tid, gid, input={}, context={"lang": "de"})
    assert out == {"greeting": "de:Bo"}, out
    out = await ada.runs.wait(tid, gid, input={}, config={"configurable": {"name": "Cy"}})
    assert out == {"greeting": "fr:Cy"}, out
    runs = await ada.runs.list(tid)
    assert len(runs) == 3 and all(r["assistant_id"] == gid for r in runs), runs
    assert (await ada.threads.get(tid))["metadata"]["assistant_id"] == gid

    # Back to version 1: its context again.
    latest = await ada.assistants.set_latest(gid, 1)
    assert (latest["version"], latest["name"]) == (1, "Greeter"), latest
    assert latest["context"] == {"name": "Ada"} and latest["metadata"] == {"team": "x"}, latest
    assert (await ada.assistants.get(gid))["version"] == 1
    out = await ada.runs.wait(tid, gid, input={})
    assert out == {"greeting": "en:Ada"}, out
    await refused(
        ada.assistants.set_latest(gid, 9), NotFoundError, 404,
        f"Version 9 not found for assistant {gid}",
    )
    after_v3 = await ada.assistants.update(gid, name="Greeter 3")
    assert after_v3["version"] == 3 and after_v3["context"] == {"name": "Ada"}, after_v3

    # A context that does not decode, or that a graph cannot take, is
    # refused before a run is created.
    before = len(await ada.runs.list(tid))
    await refused(
        ada.runs.create(tid, gid, input={}, context={"name": 5}),
        UnprocessableEntityError, 422, contains="context.name: invalid type: integer `5`",
    )
    await refused(
        ada.runs.create(tid, "greeter", input={}),
        UnprocessableEntityError, 422, "context: missing field `name`",
    )
    other = (await ada.threads.create())["thread_id"]
    await refused(
        ada.runs.create(other, "agent", input={}, context={"x": 1}),
        UnprocessableEntityError, 422, contains='graph "agent" takes no context from a request',
    )
    await refused(
        ada.runs.create(tid, gid, input={}, context={"lang": "x"}, config={"configurable": {"a": 1}}),
        BadRequestError, 400, contains="Cannot specify both configurable and context",
    )
    assert len(await ada.runs.list(tid)) == before
    await refused(
        ada.assistants.create(graph_id="agent", context={"x": 1}),
        UnprocessableEntityError, 422, contains='graph "agent" takes no context',
    )

    # Bad ids and graphs.
    await refused(
        ada.assistants.create(graph_id="agent", assistant_id="not-a-uuid"),
        UnprocessableEntityError, 422, "Invalid assistant ID: must be a UUID",
    )
    await refused(
        ada.assistants.create(graph_id="nope"), NotFoundError, 404, contains="Graph 'nope' not found"
    )

    # The system assistants (given in code) cannot change.
    system = str(uuid.uuid5(NAMESPACE_GRAPH, "agent"))
    await refused(ada.assistants.delete(system), ConflictError, 409, contains="cannot be deleted")
    await refused(ada.assistants.update("agent", name="x"), ConflictError, 409, contains="cannot be changed")
    assert [v["version"] for v in await ada.assistants.get_versions(system)] == [1]

    # Another user can neither change nor delete it; its owner deletes it.
    await refused(bob.assistants.update(gid, name="taken"), NotFoundError, 404)
    await refused(bob.assistants.delete(gid), NotFoundError, 404)
    await refused(bob.assistants.set_latest(gid, 2), NotFoundError, 404)
    await ada.assistants.delete(gid)
    await refused(ada.assistants.get(gid), NotFoundError, 404)
    await refused(ada.assistants.delete(gid), NotFoundError, 404)
    assert await ada.assistants.count() == SYSTEM + 2
    print("assistants_created: ok")


asyncio.run(main())
