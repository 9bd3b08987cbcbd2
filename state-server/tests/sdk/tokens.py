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
    # Who runs it, as exchange 24's metadata says (ids, graph, attempt).
    run_id = parts[0].data["run_id"]
    for _, meta in tokens:
        assert meta["run_id"] == run_id and meta["thread_id"] == thread["thread_id"], meta
        assert meta["graph_id"] == "chat" and meta["run_attempt"] == 1, meta
        assert meta["assistant_id"] and meta["ls_integration"] == "langgraph", meta
    assert len({c["id"] for c in chunks}) == 1, chunks
    state = await client.threads.get_state(thread["thread_id"])
    last = state["values"]["messages"][-1]
    assert last["content"] == TEXT and last["id"] == chunks[0]["id"], (last, chunks[0])
    # The legacy messages mode: the message so far at each token
    # (messages/partial), then the whole (messages/complete), as exchange 23
    # and the streaming model of the reference app show LangGraph's.
    parts = [
        p async for p in client.runs.stream(
            thread["thread_id"], "chat",
            input={"messages": [{"role": "user", "content": "again"}]},
            stream_mode="messages",
        )
    ]
    names = [p.event for p in parts]
    assert names[:2] == ["metadata", "messages/metadata"], parts
    partial = [p.data[0]["content"] for p in parts if p.event == "messages/partial"]
    assert len(partial) > 3 and partial[-1] == TEXT, partial
    assert all(TEXT.startswith(text) for text in partial), partial
    assert all(len(a) <= len(b) for a, b in zip(partial, partial[1:])), partial
    assert names[-1] == "messages/complete" and parts[-1].data[0]["content"] == TEXT, parts[-1]
    assert names.count("messages/metadata") == 1, names
    print("tokens: ok")


asyncio.run(main())
