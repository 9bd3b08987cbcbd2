"""Custom auth on our Agent Server API, driven by LangGraph's official
Python client (langgraph-sdk 0.4.14), whose `api_key` is sent as
`x-api-key`: the server's hook makes "key-ada" and "key-bob" two users
and "key-ops" an admin. One user can neither read, resume nor list the
other's threads and runs (404, as if absent), nor read their store items.
Run by state-server's test `agent_sdk::auth` with LANGGRAPH_URL set.
"""

import asyncio
import json
import os
import uuid

import httpx
import websockets
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

PING = {"messages": [{"role": "user", "content": "ping"}]}


async def status_of(call):
    try:
        await call
    except httpx.HTTPStatusError as error:
        return error.response.status_code
    except NotFoundError:
        return 404
    except Exception as error:  # the SDK's own subclasses carry the response
        response = getattr(error, "response", None)
        if response is not None:
            return response.status_code
        raise
    return 200


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    ada = get_client(url=url, api_key="key-ada")
    bob = get_client(url=url, api_key="key-bob")
    ops = get_client(url=url, api_key="key-ops")
    nobody = get_client(url=url, api_key=None)

    # No key, or a wrong one: 401 before any handler.
    assert await status_of(nobody.assistants.search()) == 401
    assert await status_of(get_client(url=url, api_key="nope").threads.create()) == 401

    # Ada's thread and run.
    thread = await ada.threads.create(metadata={"who": "ada"})
    tid = thread["thread_id"]
    values = await ada.runs.wait(tid, "agent", input=PING)
    assert len(values["messages"]) == 4, values
    runs = await ada.runs.list(tid)
    assert len(runs) == 1, runs

    # Bob sees none of it: every path is a 404, as for a thread not there.
    assert await status_of(bob.threads.get(tid)) == 404
    assert await status_of(bob.threads.get_state(tid)) == 404
    assert await status_of(bob.threads.get_history(tid)) == 404
    assert await status_of(bob.runs.list(tid)) == 404
    assert await status_of(bob.runs.get(tid, runs[0]["run_id"])) == 404
    assert await status_of(bob.runs.create(tid, "agent", input=PING)) == 404
    assert await status_of(bob.threads.update_state(tid, {"messages": []})) == 404
    assert await status_of(bob.threads.update(tid, metadata={"who": "bob"})) == 404
    assert await status_of(bob.threads.delete(tid)) == 404
    assert await status_of(bob.threads.copy(tid)) == 404
    assert [t["thread_id"] for t in await bob.threads.search()] == []
    assert await bob.threads.count() == 0
    # Ada's thread is as it was.
    got = await ada.threads.get(tid)
    assert got["metadata"]["who"] == "ada" and got["status"] == "idle", got
    assert [t["thread_id"] for t in await ada.threads.search()] == [tid]

    # Bob's own thread works, and Ada does not see it.
    mine = await bob.threads.create()
    await bob.runs.wait(mine["thread_id"], "agent", input=PING)
    assert await ada.threads.count() == 1 and await bob.threads.count() == 1
    # The admin sees both.
    assert await ops.threads.count() == 2
    assert (await ops.threads.get(tid))["thread_id"] == tid

    # Crons: Ada's on her thread are hers; Bob can neither make one on
    # her thread nor see, change or delete hers.
    cron = await ada.crons.create_for_thread(tid, "agent", schedule="0 0 1 1 *", input=PING)
    assert cron["user_id"] == "ada", cron
    assert await status_of(bob.crons.create_for_thread(tid, "agent", schedule="0 0 1 1 *")) == 404
    assert await status_of(bob.http.get(f"/runs/crons/{cron['cron_id']}")) == 404
    assert await status_of(bob.crons.update(cron["cron_id"], enabled=False)) == 404
    assert await status_of(bob.crons.delete(cron["cron_id"])) == 404
    assert await bob.crons.search() == [] and await bob.crons.count() == 0
    assert [c["cron_id"] for c in await ada.crons.search()] == [cron["cron_id"]]
    assert await ops.crons.count() == 1
    await ada.crons.delete(cron["cron_id"])

    # The v3 thread protocol: Bob can neither command nor read Ada's thread.
    async with httpx.AsyncClient(base_url=url, timeout=10) as http:
        bob_key = {"x-api-key": "key-bob"}
        ada_key = {"x-api-key": "key-ada"}
        start = {"id": 1, "method": "run.start", "params": {"assistant_id": "agent", "input": PING}}
        refused = await http.post(f"/threads/{tid}/commands", json=start, headers=bob_key)
        assert refused.status_code == 404, refused.text
        refused = await http.post(
            f"/threads/{tid}/stream/events", json={"channels": ["values"]}, headers=bob_key
        )
        assert refused.status_code == 404, refused.text
        # Nor open the protocol's WebSocket on it (the handshake is a 404).
        ws_url = url.replace("http://", "ws://", 1) + f"/threads/{tid}/stream/events"
        try:
            async with websockets.connect(ws_url, additional_headers=bob_key):
                raise AssertionError("Bob's WebSocket on Ada's thread was accepted")
        except websockets.exceptions.InvalidStatus as refused:
            assert refused.response.status_code == 404, refused
        async with websockets.connect(ws_url, additional_headers=ada_key) as socket:
            await socket.send(json.dumps({"id": 1, "method": "subscription.subscribe",
                                          "params": {"channels": ["lifecycle"]}}))
            # Her run's events, replayed (before the answer) or fed (after).
            while (message := json.loads(await asyncio.wait_for(socket.recv(), 10)))[
                    "type"] != "event":
                assert message["type"] == "success", message
            assert message["method"] == "lifecycle", message
        # A stream Bob opens on a thread not there yet, which Ada then
        # makes, ends without showing him anything of hers.
        fresh = str(uuid.uuid4())
        seen = []

        async def bob_reads():
            body = {"channels": ["values", "lifecycle"]}
            async with http.stream(
                "POST", f"/threads/{fresh}/stream/events", json=body, headers=bob_key
            ) as stream:
                assert stream.status_code == 200
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        seen.append(line)

        reader = asyncio.create_task(bob_reads())
        await asyncio.sleep(0.3)
        made = await http.post(f"/threads/{fresh}/commands", json=start, headers=ada_key)
        assert made.json()["type"] == "success", made.text
        await asyncio.wait_for(reader, 10)
        assert seen == [], seen
        assert (await ada.threads.get(fresh))["thread_id"] == fresh

    # Items: an identity's namespaces begin with its id.
    await ada.store.put_item(["ada", "prefs"], "theme", {"color": "dark"})
    assert await status_of(ada.store.put_item(["bob", "prefs"], "theme", {"color": "x"})) == 403
    assert (await ada.store.get_item(["ada", "prefs"], "theme"))["value"] == {"color": "dark"}
    assert await status_of(bob.store.get_item(["ada", "prefs"], "theme")) == 404
    assert (await bob.store.search_items(["ada"]))["items"] == []
    assert (await bob.store.search_items([]))["items"] == []
    assert len((await ada.store.search_items([]))["items"]) == 1
    assert await status_of(bob.store.delete_item(["ada", "prefs"], "theme")) == 403
    assert (await bob.store.list_namespaces())["namespaces"] == []
    assert (await ada.store.list_namespaces())["namespaces"] == [["ada", "prefs"]]

    # The inspector and the list of every thread are for admins.
    async with httpx.AsyncClient(base_url=url) as http:
        assert (await http.get("/", headers={"x-api-key": "key-ada"})).status_code == 403
        assert (await http.get("/threads", headers={"x-api-key": "key-ada"})).status_code == 403
        assert (await http.get("/threads", headers={"x-api-key": "key-ops"})).status_code == 200
        refused = await http.get("/threads/x/state", headers={"x-api-key": "bad"})
        assert refused.status_code == 401 and "detail" in refused.json(), refused.text
    print("auth: ok")


asyncio.run(main())
