"""The v3 thread protocol's event stream read raw (`POST
/threads/{id}/stream/events`), for the scripts that check its wire
(`v3_stream.py`, `v3_channels.py`)."""

import json


async def sse(http, thread_id, body):
    """A raw event stream, each frame's SSE name its method and its id its seq."""
    async with http.stream("POST", f"/threads/{thread_id}/stream/events", json=body) as r:
        assert r.status_code == 200, await r.aread()
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        frame = {}
        async for line in r.aiter_lines():
            if line.startswith(":"):  # a comment (LangGraph's ": heartbeat")
                continue
            if line:
                field, _, value = line.partition(":")
                frame[field] = value.removeprefix(" ")
                continue
            if "data" in frame:
                event = json.loads(frame["data"])
                assert frame.get("event") == event["method"], frame
                assert frame.get("id") == str(event["seq"]), frame
                yield event
            frame = {}
