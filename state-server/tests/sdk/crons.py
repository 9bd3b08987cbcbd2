"""Crons on our Agent Server API, driven by LangGraph's official Python
client (langgraph-sdk 0.4.14): the recorded exchange 54 (a search with no
crons), then every cron call of the client, and the runs a cron makes on
its schedule. Run by state-server's tests `agent_sdk::crons*` with
LANGGRAPH_URL set; any failed assertion exits non-zero.
"""

import asyncio
import os
import time
import uuid

import httpx
from langgraph_sdk import get_client
from langgraph_sdk.errors import NotFoundError

PING = {"messages": [{"role": "user", "content": "ping"}]}
CRON_KEYS = {
    "cron_id", "assistant_id", "thread_id", "on_run_completed", "end_time", "schedule", "timezone",
    "created_at", "updated_at", "user_id", "payload", "next_run_date", "metadata", "enabled",
}
# Every second (croniter's sixth field is seconds).
EVERY_SECOND = "* * * * * *"


async def refused(call, status, words):
    try:
        await call
    except httpx.HTTPStatusError as error:
        assert error.response.status_code == status, (error, error.response.text)
        detail = error.response.json()["detail"]
        assert words in detail, detail
    else:
        raise AssertionError(f"not refused: expected {status} saying {words!r}")


async def eventually(check, seconds=15.0):
    """Polls `check` (an async function) until it returns a true value."""
    deadline = time.monotonic() + seconds
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.2)


async def main() -> None:
    url = os.environ["LANGGRAPH_URL"]
    client = get_client(url=url)

    # 54: no crons yet: an empty page, X-Pagination-Total 0.
    info = await client.http.get("/info")
    assert info["flags"]["crons"] is True, info
    async with httpx.AsyncClient(base_url=url) as raw:
        page = await raw.post("/runs/crons/search", json={"limit": 10, "offset": 0})
        assert page.status_code == 200 and page.json() == [], page.text
        assert page.headers["x-pagination-total"] == "0", page.headers
    assert await client.crons.search() == []
    assert await client.crons.count() == 0

    # A cron on a thread: its shape, then its runs on the thread.
    thread = (await client.threads.create())["thread_id"]
    cron = await client.crons.create_for_thread(
        thread, "agent", schedule=EVERY_SECOND, input=PING, metadata={"team": "a"},
    )
    assert set(cron) == CRON_KEYS, cron
    assert cron["thread_id"] == thread and cron["schedule"] == EVERY_SECOND, cron
    assert cron["enabled"] is True and cron["metadata"] == {"team": "a"}, cron
    assert cron["payload"]["input"] == PING and cron["end_time"] is None, cron
    assert cron["next_run_date"] is not None, cron
    # The assistant named by its graph is stored by its id, as LangGraph's.
    agent = (await client.assistants.get("agent"))["assistant_id"]
    assert cron["assistant_id"] == agent, cron
    cron_id = cron["cron_id"]
    found = await client.crons.search(thread_id=thread, assistant_id=agent)
    assert [c["cron_id"] for c in found] == [cron_id], found
    assert await client.crons.search(thread_id=str(uuid.uuid4())) == []
    assert await client.crons.count(thread_id=thread) == 1

    async def a_run_done():
        runs = await client.runs.list(thread)
        return [r for r in runs if r["status"] == "success"]

    done = await eventually(a_run_done)
    assert done[0]["assistant_id"] == agent, done[0]
    state = await client.threads.get_state(thread)
    assert state["values"]["messages"][-1]["content"] == "The tool said: echo:ping", state

    # The cron moved on; patched, it stops; deleted, it is gone.
    now = await client.http.get(f"/runs/crons/{cron_id}")
    assert now["next_run_date"] >= cron["next_run_date"], (now, cron)
    off = await client.crons.update(cron_id, enabled=False)
    assert off["enabled"] is False and off["cron_id"] == cron_id, off
    await asyncio.sleep(1.5)  # a run made as it was patched ends
    settled = len(await client.runs.list(thread, limit=100))
    await asyncio.sleep(2.5)
    assert len(await client.runs.list(thread, limit=100)) == settled
    assert await client.crons.search(enabled=False) != []
    await client.crons.delete(cron_id)
    await refused(client.crons.delete(cron_id), 404, "not found")
    await refused(client.http.get(f"/runs/crons/{cron_id}"), 404, "not found")
    assert await client.crons.count() == 0

    # A cron without a thread, keeping each run's thread.
    before = {t["thread_id"] for t in await client.threads.search(limit=100)}
    kept = await client.crons.create(
        "agent", schedule=EVERY_SECOND, input=PING, on_run_completed="keep",
    )
    assert kept["thread_id"] is None and kept["on_run_completed"] == "keep", kept

    async def a_kept_thread():
        threads = await client.threads.search(limit=100)
        return [t for t in threads if t["thread_id"] not in before and t["status"] == "idle"
                and t["values"]]

    new = await eventually(a_kept_thread)
    assert new[0]["values"]["messages"][-1]["content"] == "The tool said: echo:ping", new[0]
    await client.crons.delete(kept["cron_id"])

    # Search: filters, sort, paging, select.
    made = []
    for n in range(3):
        made.append(await client.crons.create(
            "agent", schedule=f"{n} 0 1 1 *", input=PING, metadata={"n": n},
        ))
    page = await client.crons.search(limit=2, sort_by="created_at", sort_order="asc")
    assert [c["cron_id"] for c in page] == [c["cron_id"] for c in made[:2]], page
    rest = await client.crons.search(limit=2, offset=2, sort_by="created_at", sort_order="asc")
    assert [c["cron_id"] for c in rest] == [made[2]["cron_id"]], rest
    picked = await client.crons.search(select=["cron_id", "schedule"])
    assert all(set(c) == {"cron_id", "schedule"} for c in picked), picked
    assert await client.crons.count() == 3
    for cron in made:
        await client.crons.delete(cron["cron_id"])

    # Refusals, each naming what is wrong; nothing is made.
    await refused(client.crons.create("agent", schedule="every minute"), 422, "schedule")
    await refused(client.crons.create("agent", schedule="* * * * *", timezone="Mars/Olympus"),
                  422, "timezone")
    await refused(client.crons.create("nobody", schedule="* * * * *"), 422, "Invalid assistant")
    await refused(client.crons.create_for_thread(str(uuid.uuid4()), "agent", schedule="* * * * *"),
                  404, "not found")
    await refused(client.crons.update(str(uuid.uuid4()), enabled=False), 404, "not found")
    await refused(client.http.get("/runs/crons/not-a-uuid"), 422, "UUID")
    await refused(client.crons.search(sort_by="colour"), 422, "sort_by")
    assert await client.crons.count() == 0


asyncio.run(main())
