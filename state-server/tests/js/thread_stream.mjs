// The v3 thread protocol on our Agent Server API, driven by LangGraph's
// official JavaScript client (@langchain/langgraph-sdk, pinned in
// package.json) through `client.threads.stream(...)`: a run of the tool
// loop and its output (recorded exchange 55), the interrupt graph paused,
// its interrupt read and answered with `input.respond`, and the state
// after (exchange 56), a run from an earlier checkpoint (`forkFrom`). Run
// by state-server's test `agent_sdk_js::thread_stream`
// with LANGGRAPH_URL set: `node state-server/tests/js/thread_stream.mjs`.

import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const PING = { messages: [{ role: "user", content: "ping" }] };
const TEXTS = ["ping", "", "echo:ping", "The tool said: echo:ping"];

const url = process.env.LANGGRAPH_URL;
assert.ok(url, "LANGGRAPH_URL names the server");
const client = new Client({ apiUrl: url, apiKey: null });

const within = async (promise, ms, what) => {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} in ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
};

// 55: a thread the client names; run.start makes it; the output is its state.
const agent = client.threads.stream({ assistantId: "agent" });
const started = await agent.run.start({ input: PING });
assert.equal(typeof started.run_id, "string", JSON.stringify(started));
const output = await within(agent.output, 20000, "output");
assert.deepEqual(output.messages.map((m) => m.content), TEXTS, JSON.stringify(output));
assert.equal(agent.interrupted, false);
const state = await client.threads.getState(agent.threadId);
assert.deepEqual(state.next, []);
assert.equal(state.values.messages.length, 4);
await agent.close();

// forkFrom: a run from an earlier checkpoint (the empty thread's, before
// the first input), the thread branched back there; the first run stays
// in its history.
const history = await client.threads.getHistory(agent.threadId, { limit: 50 });
const origin = history[history.length - 1].parent_checkpoint_id;
const again = client.threads.stream(agent.threadId, { assistantId: "agent" });
await again.run.start({ input: { messages: [{ role: "user", content: "pong" }] }, forkFrom: origin });
let forked;
for (let i = 0; i < 200; i++) {
  forked = await client.threads.getState(agent.threadId);
  if (forked.values.messages[0]?.content === "pong" && forked.next.length === 0) break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
assert.deepEqual(
  forked.values.messages.map((m) => m.content),
  ["pong", "", "echo:pong", "The tool said: echo:pong"],
  JSON.stringify(forked),
);
const branched = await client.threads.getHistory(agent.threadId, { limit: 50 });
assert.deepEqual(branched.slice(branched.length - history.length), history);
const fork = branched.find((h) => h.metadata.source === "fork");
assert.equal(fork.parent_checkpoint_id, origin, JSON.stringify(fork));
await again.close();

// 56: the interrupt reaches the client; input.respond answers it.
const hitl = client.threads.stream({ assistantId: "hitl" });
await hitl.run.start({ input: { answer: "" } });
for (let i = 0; i < 200 && !hitl.interrupted; i++) {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
assert.equal(hitl.interrupted, true, "no interrupt reached the client");
assert.equal(hitl.interrupts.length, 1, JSON.stringify(hitl.interrupts));
const [asked] = hitl.interrupts;
assert.deepEqual(asked.payload, { question: "What is your name?" }, JSON.stringify(asked));
assert.deepEqual(asked.namespace, []);
// The JavaScript client's output settles at the pause: the state then.
const paused = await within(hitl.output, 20000, "output at the pause");
assert.equal(paused.answer, "", JSON.stringify(paused));
await hitl.input.respond({ interrupt_id: asked.interruptId, namespace: [], response: "Carol" });
let after;
for (let i = 0; i < 200; i++) {
  after = await client.threads.getState(hitl.threadId);
  if (after.next.length === 0 && after.values.answer === "Carol") break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
assert.equal(after.values.answer, "Carol", JSON.stringify(after));
assert.deepEqual(after.interrupts, []);
await hitl.close();

// The same over the WebSocket transport (commands and events on one socket).
const overSocket = client.threads.stream({ assistantId: "agent", transport: "websocket" });
await overSocket.run.start({ input: PING });
const socketOutput = await within(overSocket.output, 20000, "output over the WebSocket");
assert.deepEqual(socketOutput.messages.map((m) => m.content), TEXTS, JSON.stringify(socketOutput));
await overSocket.close();
const hitlSocket = client.threads.stream({ assistantId: "hitl", transport: "websocket" });
await hitlSocket.run.start({ input: { answer: "" } });
for (let i = 0; i < 200 && !hitlSocket.interrupted; i++) {
  await new Promise((resolve) => setTimeout(resolve, 50));
}
assert.equal(hitlSocket.interrupted, true, "no interrupt over the WebSocket");
const [askedOverSocket] = hitlSocket.interrupts;
await hitlSocket.input.respond({
  interrupt_id: askedOverSocket.interruptId, namespace: [], response: "Dave",
});
let settled;
for (let i = 0; i < 200; i++) {
  settled = await client.threads.getState(hitlSocket.threadId);
  if (settled.next.length === 0 && settled.values.answer === "Dave") break;
  await new Promise((resolve) => setTimeout(resolve, 50));
}
assert.equal(settled.values.answer, "Dave", JSON.stringify(settled));
await hitlSocket.close();

console.log("thread_stream: ok");
