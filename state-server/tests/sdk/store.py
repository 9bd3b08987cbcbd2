"""The long-term store and threads.copy on our Agent Server API, driven by
LangGraph's official Python client (langgraph-sdk 0.4.14), as the recorded
exchanges 45 and 49-53 drive LangGraph's own server. Run by state-server's
test `agent_sdk::store_and_copy` with LANGGRAPH_URL set.
"""

import asyncio
import os

from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError


async def main() -> None:
    client = get_client(url=os.environ["LANGGRAPH_URL"])

    # 49-53: put, get, search with a filter, namespaces, delete.
    await client.store.put_item(["users", "u1"], "prefs", {"theme": "dark", "lang": "en"})
    await client.store.put_item(["users", "u2"], "prefs", {"theme": "light"})
    item = await client.store.get_item(["users", "u1"], "prefs")
    assert item["namespace"] == ["users", "u1"] and item["key"] == "prefs", item
    assert item["value"] == {"theme": "dark", "lang": "en"}, item
    assert set(item) >= {"created_at", "updated_at"}, item
    found = await client.store.search_items(["users"], filter={"theme": "dark"}, limit=10, offset=0)
    assert [(i["namespace"], i["key"], i["score"]) for i in found["items"]] == [(["users", "u1"], "prefs", None)], found
    spaces = await client.store.list_namespaces(prefix=["users"], limit=100, offset=0)
    assert sorted(spaces["namespaces"]) == [["users", "u1"], ["users", "u2"]], spaces
    await client.store.delete_item(["users", "u1"], "prefs")
    try:
        await client.store.get_item(["users", "u1"], "prefs")
        raise AssertionError("a deleted item was found")
    except NotFoundError:
        pass

    # 45: copy a thread: its metadata, and its state.
    thread = await client.threads.create(metadata={"purpose": "copy"})
    await client.runs.wait(thread["thread_id"], "agent", input={"messages": [{"role": "user", "content": "ping"}]})
    copied = await client.threads.copy(thread["thread_id"])
    assert copied["thread_id"] != thread["thread_id"], copied
    assert copied["metadata"]["purpose"] == "copy", copied
    original = await client.threads.get_state(thread["thread_id"])
    copy_state = await client.threads.get_state(copied["thread_id"])
    assert copy_state["values"] == original["values"], (copy_state, original)
    print("store: ok")


asyncio.run(main())
