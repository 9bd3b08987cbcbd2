// Runs on our Agent Server API, driven by LangGraph's official JavaScript
// client (@langchain/langgraph-sdk, pinned in package.json): create a
// thread, stream a run of the tool loop in the modes a chat front end uses,
// run the interrupt graph until it pauses, read the pause from the thread's
// state, resume it with a command, wait, list. Each assertion is a shape the
// recorded contract shows (../shared/langgraph-server/wire: exchanges 10-12,
// 18-24, 30, 35-41, 70). Run by state-server's test `agent_sdk_js::runs`
// with LANGGRAPH_URL set: `node state-server/tests/js/runs.mjs`.

import assert from "node:assert/strict";
import { Client } from "@langchain/langgraph-sdk";

const PING = { messages: [{ role: "user", content: "ping" }] };
const RUN_KEYS = [
  "run_id", "thread_id", "assistant_id", "status", "metadata", "kwargs",
  "multitask_strategy", "created_at", "updated_at",
];
// <epoch-ms>-<seq>, the Agent Server's event ids.
const EVENT_ID = /^\d+-\d+$/;

const url = process.env.LANGGRAPH_URL;
assert.ok(url, "LANGGRAPH_URL names the server");
// apiKey null: no x-api-key from the environment (LANGSMITH_API_KEY, ...).
const client = new Client({ apiUrl: url, apiKey: null });

const contents = (values) => values.messages.map((m) => [m.type, m.content]);
const collect = async (stream) => {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
};
const events = (parts, name) => parts.filter((p) => p.event === name).map((p) => p.data);

// 09: a new thread, idle, empty.
const thread = await client.threads.create({ metadata: { client: "js" } });
const tid = thread.thread_id;
assert.equal(thread.status, "idle", JSON.stringify(thread));
assert.deepEqual(thread.metadata, { client: "js" });

// 21/22/24/30: stream the tool loop in the modes a chat UI asks for.
let created;
const parts = await collect(
  client.runs.stream(tid, "agent", {
    input: PING,
    streamMode: ["values", "updates", "messages-tuple"],
    onRunCreated: (meta) => { created = meta; },
  }),
);
assert.equal(parts[0].event, "metadata", JSON.stringify(parts[0]));
assert.equal(parts[0].data.attempt, 1);
const runId = parts[0].data.run_id;
// Content-Location names the run before its first event.
assert.deepEqual(created, { run_id: runId, thread_id: tid });
assert.deepEqual(
  parts.slice(1).map((p) => p.event),
  ["values", "messages", "updates", "values", "messages", "updates", "values", "messages", "updates", "values"],
  JSON.stringify(parts.map((p) => p.event)),
);
assert.ok(parts.every((p) => p.id === undefined), "no ids on a stream that is not resumable");
assert.deepEqual(events(parts, "updates").map(Object.keys), [["agent"], ["tools"], ["agent"]]);
assert.deepEqual(events(parts, "updates")[1].tools.messages[0].content, "echo:ping");
const finalValues = events(parts, "values").at(-1);
assert.deepEqual(contents(finalValues), [
  ["human", "ping"], ["ai", ""], ["tool", "echo:ping"], ["ai", "The tool said: echo:ping"],
]);
// messages-tuple: `messages` events of [message, metadata], one a node.
const tuples = events(parts, "messages");
assert.ok(tuples.every((t) => Array.isArray(t) && t.length === 2), JSON.stringify(tuples));
assert.deepEqual(tuples.map(([m]) => [m.type, m.content]), contents(finalValues).slice(1));
assert.deepEqual(tuples.map(([, meta]) => meta.langgraph_node), ["agent", "tools", "agent"]);
// Three supersteps in a row (LangGraph numbers them from 1; we number
// them as the thread's steps, after the input's).
const [step] = tuples.map(([, meta]) => meta.langgraph_step);
assert.ok(Number.isInteger(step) && step >= 1, JSON.stringify(tuples[0][1]));
assert.deepEqual(tuples.map(([, meta]) => meta.langgraph_step), [step, step + 1, step + 2]);
assert.ok(tuples.every(([, meta]) => meta.thread_id === tid), JSON.stringify(tuples[0][1]));
// What the client's stream manager reads to tell a subgraph's messages.
assert.ok(tuples.every(([, meta]) => meta.langgraph_checkpoint_ns.startsWith(`${meta.langgraph_node}:`)));
assert.deepEqual(tuples[0][0].tool_calls[0], { name: "echo", args: { text: "ping" }, id: "call_1", type: "tool_call" });
assert.equal(tuples[1][0].tool_call_id, "call_1");
assert.equal(tuples[1][0].name, "echo");

// 10: wait on the same thread: the messages of both runs.
const waited = await client.runs.wait(tid, "agent", { input: PING });
assert.equal(waited.messages.length, 8, JSON.stringify(waited));
assert.deepEqual(contents(waited).slice(4), contents(finalValues));

// 11/12: the thread and its state.
const got = await client.threads.get(tid);
assert.equal(got.status, "idle");
assert.equal(got.metadata.graph_id, "agent");
assert.equal(got.metadata.client, "js");
const state = await client.threads.getState(tid);
assert.deepEqual(state.values, waited);
assert.deepEqual(state.next, []);
assert.deepEqual(state.tasks, []);
assert.deepEqual(state.interrupts, []);
assert.equal(state.checkpoint.thread_id, tid);
assert.equal(typeof state.checkpoint.checkpoint_id, "string");
assert.equal(state.checkpoint.checkpoint_id, state.checkpoint_id);
assert.equal(state.parent_checkpoint.checkpoint_id, state.parent_checkpoint_id);
// The state at its own checkpoint is the same state.
const atCheckpoint = await client.threads.getState(tid, state.checkpoint.checkpoint_id);
assert.deepEqual(atCheckpoint.values, state.values);

// 19/20: the thread's runs, newest first, both done.
const runs = await client.runs.list(tid);
assert.equal(runs.length, 2, JSON.stringify(runs));
assert.equal(runs[1].run_id, runId);
for (const run of runs) {
  assert.deepEqual(RUN_KEYS.filter((k) => !(k in run)), [], JSON.stringify(run));
  assert.equal(run.status, "success");
  assert.equal(run.thread_id, tid);
}
assert.equal((await client.runs.list(tid, { limit: 1 })).length, 1);
const fetched = await client.runs.get(tid, runId);
assert.equal(fetched.status, "success");
assert.equal(fetched.assistant_id, runs[0].assistant_id);

// 41: stream the interrupt graph until it pauses.
const hitl = (await client.threads.create()).thread_id;
const paused = await collect(
  client.runs.stream(hitl, "hitl", { input: {}, streamMode: ["updates", "values"] }),
);
assert.deepEqual(paused.map((p) => p.event), ["metadata", "values", "updates", "values"], JSON.stringify(paused));
const [pause] = events(paused, "updates");
assert.deepEqual(Object.keys(pause), ["__interrupt__"]);
const interrupt = pause.__interrupt__[0];
assert.deepEqual(interrupt.value, { question: "What is your name?" });
// An opaque string to the client (LangGraph's are 32 hex digits).
assert.ok(typeof interrupt.id === "string" && interrupt.id.length > 0, JSON.stringify(interrupt));
assert.deepEqual(Object.keys(interrupt).sort(), ["id", "response_schema", "value"]);
assert.deepEqual(events(paused, "values").at(-1).__interrupt__, pause.__interrupt__);

// 37/38: the pause in the thread's state and status.
const pausedState = await client.threads.getState(hitl);
assert.deepEqual(pausedState.next, ["ask"]);
assert.deepEqual(pausedState.interrupts, [{ id: interrupt.id, value: interrupt.value }]);
assert.equal(pausedState.tasks.length, 1);
assert.equal(pausedState.tasks[0].name, "ask");
assert.deepEqual(pausedState.tasks[0].interrupts, pausedState.interrupts);
const pausedThread = await client.threads.get(hitl);
assert.equal(pausedThread.status, "interrupted");
assert.deepEqual(pausedThread.interrupts[Object.keys(pausedThread.interrupts)[0]][0].value, interrupt.value);

// 41: resume by stream with `command: {resume}`, keyed by the interrupt id.
const resumed = await collect(
  client.runs.stream(hitl, "hitl", {
    command: { resume: { [interrupt.id]: "Ada" } },
    streamMode: "updates",
  }),
);
assert.deepEqual(events(resumed, "updates"), [{ ask: { answer: "Ada" } }, { finish: { approved: true } }]);
const done = await client.threads.getState(hitl);
assert.deepEqual(done.values, { answer: "Ada", approved: true });
assert.deepEqual(done.next, []);
assert.deepEqual(done.interrupts, []);
assert.equal((await client.threads.get(hitl)).status, "idle");
assert.deepEqual((await client.runs.list(hitl)).map((r) => r.status), ["success", "interrupted"]);

// 36/39: the same by wait: the pause in `__interrupt__`, a plain resume.
const hitl2 = (await client.threads.create()).thread_id;
const waitedPause = await client.runs.wait(hitl2, "hitl", { input: {} });
assert.deepEqual(waitedPause.__interrupt__.map((i) => i.value), [{ question: "What is your name?" }]);
const waitedDone = await client.runs.wait(hitl2, "hitl", { command: { resume: "Bob" } });
assert.deepEqual(waitedDone, { answer: "Bob", approved: true });

// 33: a resumable run joined from the start: ids <ms>-<seq>, the same events.
const joined = (await client.threads.create()).thread_id;
const background = await client.runs.create(joined, "agent", {
  input: PING, streamMode: ["updates"], streamResumable: true,
});
assert.deepEqual(RUN_KEYS.filter((k) => !(k in background)), [], JSON.stringify(background));
const replay = await collect(client.runs.joinStream(joined, background.run_id, { lastEventId: "-1" }));
assert.deepEqual(replay.map((p) => p.event), ["metadata", "updates", "updates", "updates"], JSON.stringify(replay));
assert.ok(replay.every((p) => EVENT_ID.test(p.id)), JSON.stringify(replay.map((p) => p.id)));
assert.equal((await client.runs.join(joined, background.run_id)).messages.length, 4);

// 70/71: a failing node: an `error` event, and wait throws its message.
const failing = (await client.threads.create()).thread_id;
const failed = await collect(client.runs.stream(failing, "fail", { input: {}, streamMode: "updates" }));
assert.equal(failed.at(-1).event, "error", JSON.stringify(failed));
assert.match(failed.at(-1).data.message, /boom: deliberate failure/);
await assert.rejects(client.runs.wait(failing, "fail", { input: {} }), /boom: deliberate failure/);
const result = await client.runs.wait(failing, "fail", { input: {}, raiseError: false });
assert.match(result.__error__.message, /boom: deliberate failure/);
assert.equal((await client.threads.get(failing)).status, "error");

// 31/32: stateless runs.
const stateless = await collect(client.runs.stream(null, "agent", { input: PING, streamMode: "updates" }));
assert.deepEqual(events(stateless, "updates").map(Object.keys), [["agent"], ["tools"], ["agent"]]);
assert.equal((await client.runs.wait(null, "agent", { input: PING })).messages.length, 4);

console.log("js runs: ok");
