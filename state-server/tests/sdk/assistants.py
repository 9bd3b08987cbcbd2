"""The assistants of our Agent Server API, driven by LangGraph's official
Python client (langgraph-sdk 0.4.14), as the recorded exchanges 01-08 drive
LangGraph's own server. Run by state-server's test `agent_sdk::assistants`
with LANGGRAPH_URL set; any failed assertion exits non-zero.
"""

import asyncio
import os
import uuid

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

NAMESPACE_GRAPH = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
ASSISTANT_KEYS = {
    "assistant_id", "graph_id", "config", "context", "metadata", "name",
    "created_at", "updated_at", "version", "description",
}


async def main() -> None:
    client = get_client(url=os.environ["LANGGRAPH_URL"])

    # 01: /info answers; /ok too.
    info = await client.http.get("/info")
    assert info["flags"]["assistants"] is True, info
    assert await client.http.get("/ok") == {"ok": True}

    # 02: every assistant, newest first, LangGraph's ids and shape.
    found = await client.assistants.search(limit=10, offset=0)
    assert [a["graph_id"] for a in found] == ["slow", "fail", "hitl", "agent"], found
    for a in found:
        assert set(a) == ASSISTANT_KEYS, a
        assert a["assistant_id"] == str(uuid.uuid5(NAMESPACE_GRAPH, a["graph_id"])), a
        assert a["metadata"] == {"created_by": "system"}, a
        assert a["name"] == a["graph_id"] and a["version"] == 1, a

    # 03: filtered by graph id; paged.
    hitl = await client.assistants.search(graph_id="hitl", limit=5, offset=0)
    assert [a["graph_id"] for a in hitl] == ["hitl"], hitl
    second = await client.assistants.search(limit=1, offset=3)
    assert [a["graph_id"] for a in second] == ["agent"], second
    by_name = await client.assistants.search(sort_by="name", sort_order="asc")
    assert [a["graph_id"] for a in by_name] == ["agent", "fail", "hitl", "slow"], by_name
    picked = await client.assistants.search(select=["assistant_id", "graph_id"])
    assert all(set(a) == {"assistant_id", "graph_id"} for a in picked), picked

    # 04: by id, and by graph id.
    agent_id = str(uuid.uuid5(NAMESPACE_GRAPH, "agent"))
    agent = await client.assistants.get(agent_id)
    assert agent["graph_id"] == "agent", agent
    assert (await client.assistants.get("agent"))["assistant_id"] == agent_id

    # 05: the graph, as LangGraph's get_graph().to_json().
    graph = await client.assistants.get_graph(agent_id)
    assert graph == {
        "nodes": [
            {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
            {"id": "agent", "type": "runnable", "data": {"name": "agent"}},
            {"id": "tools", "type": "runnable", "data": {"name": "tools"}},
            {"id": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": "agent"},
            {"source": "agent", "target": "__end__", "conditional": True},
            {"source": "agent", "target": "tools", "conditional": True},
            {"source": "tools", "target": "agent"},
        ],
    }, graph

    # 06: the schemas.
    schemas = await client.assistants.get_schemas(agent_id)
    assert set(schemas) == {
        "graph_id", "input_schema", "output_schema", "state_schema",
        "config_schema", "context_schema",
    }, schemas
    assert list(schemas["state_schema"]["properties"]) == ["messages"], schemas
    assert schemas["state_schema"]["properties"]["messages"]["description"] == "The conversation."

    # 08: counts.
    assert await client.assistants.count() == 4
    assert await client.assistants.count(graph_id="hitl") == 1

    # Errors: the client's own exceptions, from our {"detail": ..}.
    try:
        await client.assistants.get("nope")
        raise AssertionError("an unknown assistant was found")
    except NotFoundError as error:
        assert error.response.status_code == 404, error
        assert error.response.json()["detail"] == "Assistant nope not found"
    try:
        await client.assistants.search(graph_id="nope")
        raise AssertionError("an unknown graph was searched")
    except NotFoundError as error:
        assert error.response.status_code == 404, error
        assert "Graph 'nope' not found" in error.response.json()["detail"]
    print("assistants: ok")


asyncio.run(main())
