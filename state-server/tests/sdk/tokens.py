"""A model's tokens over our Agent Server API, as the recorded exchange 58
(`messages-tuple` on the streaming fake chat model) shows LangGraph's:
one `messages` event per chunk, `[chunk, metadata]`, the chunks making the
final message. Run by state-server's test
`agent_sdk::a_models_tokens_reach_the_client` with LANGGRAPH_URL set.
"""

import asyncio
import os

from langgraph_sdk import get_client

TEXT = "Hello from a streaming model!"


async def main() -> None:
    client = get_client(url=os.environ["LANGGRAPH_URL"])
    thread = await client.threads.create()
    parts = [
        p async for p in client.runs.stream(
            thread["thread_id"], "chat",
            input={"messages": [{"role": "user", "content": "ping"}]},
            stream_mode="messages-tuple",
        )
    ]
    assert parts[0].event == "metadata", parts
    tokens = [p.data for p in parts if p.event == "messages"]
    chunks = [chunk for chunk, meta in tokens if chunk.get("type") in ("AIMessageChunk", "ai")]
    assert len(chunks) > 3, tokens
    assert "".join(c["content"] for c in chunks) == TEXT, chunks
    assert all(meta["langgraph_node"] == "agent" for _, meta in tokens), tokens
    assert len({c["id"] for c in chunks}) == 1, chunks
    state = await client.threads.get_state(thread["thread_id"])
    last = state["values"]["messages"][-1]
    assert last["content"] == TEXT and last["id"] == chunks[0]["id"], (last, chunks[0])
    print("tokens: ok")


asyncio.run(main())
