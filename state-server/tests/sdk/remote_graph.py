"""Python LangGraph's RemoteGraph (langgraph 1.2.24) on our Agent Server
API: our Rust tool loop called directly (invoke, stream, get_state,
history, sync and async), as the node of a Python StateGraph, and our
interrupt graph paused and resumed with a Command. Run by state-server's
test `agent_sdk::remote_graph` with LANGGRAPH_URL set.
"""

import asyncio
import os
import uuid

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel.remote import RemoteGraph
from langgraph.types import Command

URL = os.environ["LANGGRAPH_URL"]
PING = {"messages": [{"role": "user", "content": "ping"}]}
LOOP = [("human", "ping"), ("ai", ""), ("tool", "echo:ping"), ("ai", "The tool said: echo:ping")]


def contents(messages):
    """(type, content) of LangChain messages or of their JSON."""
    return [
        (m["type"], m["content"]) if isinstance(m, dict) else (m.type, m.content)
        for m in messages
    ]


def thread():
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def direct(agent: RemoteGraph) -> None:
    # Stateless (no thread id): POST /runs/stream; invoke is the last values.
    values = agent.invoke(PING)
    assert contents(values["messages"]) == LOOP, values
    assert values["messages"][1]["tool_calls"][0]["args"] == {"text": "ping"}, values

    # A thread id the server has not seen: created (if_not_exists=create).
    config = thread()
    values = agent.invoke(PING, config)
    assert contents(values["messages"]) == LOOP, values
    chunks = list(agent.stream(PING, config, stream_mode="updates"))
    assert [list(c) for c in chunks] == [["agent"], ["tools"], ["agent"]], chunks
    assert chunks[1]["tools"]["messages"][0]["content"] == "echo:ping", chunks
    # Several modes: (mode, data) parts; messages as (message, metadata).
    parts = list(agent.stream(PING, config, stream_mode=["values", "messages"]))
    modes = [p.event for p in parts]
    assert modes == ["values", "messages", "values", "messages", "values", "messages", "values"], modes
    message, metadata = parts[1].data
    assert message["type"] == "ai" and metadata["langgraph_node"] == "agent", parts[1]
    assert len(parts[-1].data["messages"]) == 12, parts[-1]

    # get_state: a StateSnapshot of our thread.
    state = agent.get_state(config)
    assert contents(state.values["messages"])[-4:] == LOOP, state
    assert len(state.values["messages"]) == 12, state
    assert state.next == () and state.tasks == () and state.interrupts == (), state
    assert state.config["configurable"]["thread_id"] == config["configurable"]["thread_id"], state.config
    assert state.parent_config["configurable"]["checkpoint_id"], state.parent_config
    # The state at that snapshot's checkpoint, and the history before it.
    again = agent.get_state(state.config)
    assert again.values == state.values and again.config == state.config, again
    history = list(agent.get_state_history(config, limit=3))
    assert [len(s.values["messages"]) for s in history] == [12, 11, 10], history
    assert history[0].config == state.config, history[0]
    assert history[1].config == state.parent_config, history[1]


async def direct_async(agent: RemoteGraph) -> None:
    config = thread()
    values = await agent.ainvoke(PING, config)
    assert contents(values["messages"]) == LOOP, values
    chunks = [c async for c in agent.astream(PING, config, stream_mode="updates")]
    assert [list(c) for c in chunks] == [["agent"], ["tools"], ["agent"]], chunks
    state = await agent.aget_state(config)
    assert len(state.values["messages"]) == 8, state


def interrupt_and_resume(hitl: RemoteGraph) -> None:
    config = thread()
    paused = hitl.invoke({}, config)
    interrupts = paused["__interrupt__"]
    assert [i["value"] for i in interrupts] == [{"question": "What is your name?"}], paused
    state = hitl.get_state(config)
    assert state.next == ("ask",), state
    assert [(i.id, i.value) for i in state.interrupts] == [(interrupts[0]["id"], interrupts[0]["value"])], state
    done = hitl.invoke(Command(resume="Ada"), config)
    assert done == {"answer": "Ada", "approved": True}, done
    assert hitl.get_state(config).next == ()


def as_a_node(agent: RemoteGraph) -> None:
    # The parent's state is the remote graph's input as it is: our server
    # refuses keys its state does not have (LangGraph drops them).
    def after(state: MessagesState):
        last = state["messages"][-1]
        return {"messages": [AIMessage(f"python saw: {last.content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("remote_agent", agent)
    builder.add_node("after", after)
    builder.add_edge(START, "remote_agent")
    builder.add_edge("remote_agent", "after")
    builder.add_edge("after", END)
    graph = builder.compile()

    result = graph.invoke({"messages": [HumanMessage("ping")]})
    # The remote graph's messages replace and extend the parent's (the
    # human's went to our server with its id and came back with it).
    assert contents(result["messages"]) == LOOP + [("ai", "python saw: The tool said: echo:ping")], result
    assert result["messages"][2].tool_call_id == "call_1", result

    # Streamed with subgraphs: our graph's updates arrive under the node's
    # namespace, before the parent's update of that node.
    chunks = list(graph.stream({"messages": [HumanMessage("ping")]}, stream_mode="updates", subgraphs=True))
    outer = [list(update) for ns, update in chunks if ns == ()]
    assert outer == [["remote_agent"], ["after"]], chunks
    inner = [(ns, list(update)) for ns, update in chunks if ns != ()]
    assert [nodes for _, nodes in inner] == [["agent"], ["tools"], ["agent"]], chunks
    assert all(ns[0].startswith("remote_agent:") for ns, _ in inner), chunks


def main() -> None:
    agent = RemoteGraph("agent", url=URL)
    direct(agent)
    asyncio.run(direct_async(agent))
    interrupt_and_resume(RemoteGraph("hitl", url=URL))
    as_a_node(agent)
    print("remote_graph: ok")


main()
