//! OHMind's graph end to end on a SQLite file: the supervisor's routing
//! through conditional edges, the validation and the plan approval as
//! interrupts answered with `resume` (one from a second store on the same
//! file, as another process), the node path of each run (the same as the
//! hand-written loop's), and the stored log: one step per superstep, its
//! node in the metadata, a `pending` step for each pause; the thread read
//! with `get_state` / `get_state_history`, and a decision written as
//! `human_validation`'s update (`update_state`) before the run goes on.

use crate::openai_server::{chunk, serve};
use serde_json::{Value, json};
use state_agent::openai::ChatOpenAI;
use state_core::{Message, MessageKind, State};
use state_examples::ohmind::graph::{self, ASK_PLAN_APPROVAL, ASK_VALIDATION};
use state_examples::ohmind::{self, AgentState, HUMAN_VALIDATION, Ohmind, PLAN_APPROVAL, Step};
use state_graph::{CompiledGraph, Outcome, START};
use state_store::{StepKind, Store};
use std::path::PathBuf;

const THREAD: &str = "user-123-session-1";
const FIRST: &str = "What is the HOMO-LUMO gap of benzyltrimethylammonium?";

async fn sqlite() -> (tempfile::TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("checkpoints.db");
    let store = Store::sqlite(&path).await.expect("the SQLite store opens");
    (dir, path, store)
}

/// The nodes a run wrote to the log after step `after`.
async fn path_since(store: &Store, thread: &str, after: u64) -> Vec<String> {
    let steps = graph::logged_steps(store, thread, after)
        .await
        .expect("the log decodes");
    steps.into_iter().map(|step| step.node).collect()
}

fn nodes(steps: &[Step]) -> Vec<String> {
    steps.iter().map(|step| step.node.clone()).collect()
}

/// Each logged step as its nodes (`__start__` for the run's input, which
/// starts the turn), or `pending` for a pause. A turn start logged apart
/// from the input, without nodes, is left out.
async fn log(store: &Store, thread: &str) -> Vec<String> {
    let history = store.history(thread, ..).await.expect("the log reads");
    history
        .iter()
        .filter_map(|step| {
            let nodes = step.nodes();
            match step.kind {
                _ if nodes == [START] => Some(START.to_owned()),
                StepKind::Superstep => {
                    assert!(!nodes.is_empty(), "step {} names its nodes", step.seq);
                    Some(nodes.join("+"))
                }
                StepKind::Pending => Some("pending".to_owned()),
                StepKind::BeginTurn if nodes.is_empty() => None,
                kind => panic!("step {}: {kind} {nodes:?}", step.seq),
            }
        })
        .collect()
}

fn last_human(state: &AgentState) -> Option<String> {
    state
        .messages
        .iter()
        .rev()
        .find(|m| m.kind() == MessageKind::Human)
        .map(Message::text)
}

/// The first message's id is random (create_initial_state has none);
/// every other id comes from the app's counter.
fn first_id_blanked(state: &AgentState) -> Value {
    let mut json = state.to_json().unwrap();
    json["messages"][0]["id"] = Value::Null;
    json
}

async fn invoke(
    app: &CompiledGraph<AgentState>,
    sim: &graph::SharedOhmind,
    text: &str,
) -> Outcome<AgentState> {
    app.invoke_thread(THREAD, graph::user_input(sim, text))
        .await
        .expect("the run goes on")
}

#[tokio::test]
async fn validation_pauses_the_run_and_resume_answers_it_on_sqlite() {
    let (_dir, path, store) = sqlite().await;
    let sim = graph::shared(Ohmind::new());
    let app = graph::compile(&sim, store.clone()).unwrap();

    // Turn 1: create_initial_state as the input, supervisor → qm_agent → END.
    let input = graph::state_input(&ohmind::create_initial_state(FIRST)).unwrap();
    let out = app.invoke_thread(THREAD, input).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        path_since(&store, THREAD, 0).await,
        ["supervisor", "qm_agent"]
    );
    assert!(out.state().mcp_results.contains_key("orca_single_point"));
    let mut seq = out.seq();

    // Turn 2: md_agent needs approval; the router sends the run to
    // human_validation, which pauses it.
    let text = "Simulate the hydroxide conductivity of benzyltrimethylammonium with MD";
    let out = invoke(&app, &sim, text).await;
    assert_eq!(
        path_since(&store, THREAD, seq).await,
        ["supervisor", "md_agent"]
    );
    assert!(out.is_interrupted());
    let [interrupt] = out.interrupts() else {
        panic!("one interrupt: {:?}", out.interrupts());
    };
    assert_eq!(interrupt.node, HUMAN_VALIDATION);
    assert_eq!(interrupt.value["kind"], ASK_VALIDATION);
    assert_eq!(
        interrupt.value["message"],
        "md_agent runs gromacs_md (about 6 hours of compute)"
    );
    assert_eq!(interrupt.value["operation"]["tool"], "gromacs_md");
    assert!(ohmind::should_continue_validation(out.state()));
    assert!(!out.state().mcp_results.contains_key("gromacs_md"));
    let history = store.history(THREAD, ..).await.unwrap();
    assert_eq!(history.last().unwrap().kind, StepKind::Pending);
    assert_eq!(out.seq(), history.last().unwrap().seq);
    seq = out.seq();

    // Another process answers: a new store on the same file, the graph
    // compiled again (the simulated app is the same, for its counter).
    let other = Store::sqlite(&path).await.unwrap();
    let worker = graph::compile(&sim, other).unwrap();
    // state = app.get_state(config)
    let snapshot = worker.get_state(THREAD).await.unwrap();
    assert_eq!(snapshot.next(), [HUMAN_VALIDATION]);
    assert_eq!(snapshot.interrupts().len(), 1);
    assert_eq!(snapshot.interrupts()[0].id, interrupt.id);
    assert_eq!(snapshot.state(), out.state());
    let out = worker.resume(THREAD, json!("yes, go ahead")).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        path_since(&store, THREAD, seq).await,
        [HUMAN_VALIDATION, "md_agent"],
        "human_validation ran again, then the approved agent"
    );
    assert!(out.state().mcp_results.contains_key("gromacs_md"));
    assert_eq!(
        out.state().validation_approved,
        None,
        "consumed by md_agent"
    );
    assert!(!out.state().validation_required);
    assert_eq!(last_human(out.state()).as_deref(), Some("yes, go ahead"));
    seq = out.seq();

    // Turn 4: asked again, rejected: back to the supervisor, which ends.
    let out = invoke(&app, &sim, "Run a longer MD simulation").await;
    assert!(out.is_interrupted());
    let mid = out.seq();
    let out = app.resume(THREAD, json!("no, cancel that")).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        path_since(&store, THREAD, seq).await,
        ["supervisor", "md_agent", HUMAN_VALIDATION, "supervisor"]
    );
    assert_eq!(
        path_since(&store, THREAD, mid).await,
        [HUMAN_VALIDATION, "supervisor"]
    );
    assert_eq!(out.state().validation_approved, Some(false));
    let texts: Vec<String> = out.state().messages.iter().map(Message::text).collect();
    assert_eq!(
        texts[texts.len() - 2..],
        [
            "no, cancel that",
            "Cancelled: md_agent runs gromacs_md (about 6 hours of compute)."
        ]
    );
    assert!(
        app.resume(THREAD, json!("yes")).await.is_err(),
        "nothing pending"
    );

    // The log: one step per superstep with its node, the input after each
    // turn start, a pending step per pause.
    assert_eq!(
        log(&store, THREAD).await,
        [
            START,
            "supervisor",
            "qm_agent",
            START,
            "supervisor",
            "md_agent",
            "pending",
            HUMAN_VALIDATION,
            "md_agent",
            START,
            "supervisor",
            "md_agent",
            "pending",
            HUMAN_VALIDATION,
            "supervisor",
        ]
    );

    // The same conversation through the hand-written loop, where each
    // answer is the next turn's message: the same nodes, the same state.
    let mut legacy = Ohmind::new();
    let mut state = ohmind::create_initial_state(FIRST);
    let mut expected = nodes(&legacy.run(&mut state).await.unwrap());
    for text in [
        text,
        "yes, go ahead",
        "Run a longer MD simulation",
        "no, cancel that",
    ] {
        expected.extend(nodes(&legacy.run_turn(&mut state, text).await.unwrap()));
    }
    assert_eq!(path_since(&store, THREAD, 0).await, expected);
    assert_eq!(first_id_blanked(out.state()), first_id_blanked(&state));

    // And the file holds it all: recovered on reconnection.
    let reconnected = graph::compile(&sim, Store::sqlite(&path).await.unwrap()).unwrap();
    let recovered = reconnected.get_state(THREAD).await.unwrap();
    assert_eq!(recovered.state(), out.state());
    assert!(recovered.next().is_empty());

    // Its checkpoints, oldest first: the pauses are there with their
    // interrupts, each answer after its pause.
    let mut history = reconnected.get_state_history(THREAD).await.unwrap();
    history.reverse();
    let paused: Vec<u64> = history
        .iter()
        .filter(|s| !s.interrupts().is_empty())
        .map(|s| s.seq())
        .collect();
    assert_eq!(paused, [7, 13]);
    assert!(history.iter().all(|s| s.metadata()["source"] != "update"));
    assert_eq!(history.last().unwrap().state(), out.state());
}

#[tokio::test]
async fn a_plan_waits_for_approval_then_runs_step_by_step() {
    let (_dir, _path, store) = sqlite().await;
    let sim = graph::shared(Ohmind::new().with_plan_approval());
    let app = graph::compile(&sim, store.clone()).unwrap();

    let request = "Design HEM cations and compute their properties";
    let out = invoke(&app, &sim, request).await;
    assert_eq!(
        path_since(&store, THREAD, 0).await,
        ["supervisor", "task_planner"]
    );
    let [interrupt] = out.interrupts() else {
        panic!("one interrupt: {:?}", out.interrupts());
    };
    assert_eq!(interrupt.node, PLAN_APPROVAL);
    assert_eq!(interrupt.value["kind"], ASK_PLAN_APPROVAL);
    assert_eq!(interrupt.value["path"], "task_plans/plan_1.md");
    assert_eq!(
        interrupt.value["plan"]["steps"].as_array().unwrap().len(),
        2
    );
    let markdown = interrupt.value["markdown"].as_str().unwrap();
    assert!(markdown.contains("- [ ] 2. Compute molecular properties (chemistry_agent)"));
    assert!(out.state().awaiting_plan_approval());
    let paused = out.seq();

    // `true` is a yes.
    let out = app.resume(THREAD, json!(true)).await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        path_since(&store, THREAD, paused).await,
        [
            PLAN_APPROVAL,
            "supervisor",
            "hem_agent",
            "supervisor",
            "chemistry_agent",
            "supervisor",
            "summary"
        ]
    );
    let state = out.state();
    assert_eq!(state.task_plan_approved, Some(true));
    assert_eq!(state.task_plan, None, "cleared by the summary");
    assert!(state.mcp_results.contains_key("hem_design"));
    assert!(state.mcp_results.contains_key("smiles_properties"));
    assert!(
        state
            .messages
            .last()
            .unwrap()
            .text()
            .starts_with("All 2 steps complete.")
    );
    assert_eq!(
        log(&store, THREAD).await,
        [
            START,
            "supervisor",
            "task_planner",
            "pending",
            PLAN_APPROVAL,
            "supervisor",
            "hem_agent",
            "supervisor",
            "chemistry_agent",
            "supervisor",
            "summary",
        ]
    );

    // The hand-written loop, the answer as the next turn: the same path.
    let mut legacy = Ohmind::new().with_plan_approval();
    let mut expected = AgentState::default();
    let mut path = nodes(&legacy.run_turn(&mut expected, request).await.unwrap());
    path.extend(nodes(&legacy.run_turn(&mut expected, "yes").await.unwrap()));
    assert_eq!(path_since(&store, THREAD, 0).await, path);
    assert_eq!(out.state(), &expected);
}

#[tokio::test]
async fn a_failing_tool_is_retried_through_the_supervisor_until_the_limit() {
    let (_dir, _path, store) = sqlite().await;
    let sim = graph::shared(Ohmind::new());
    let app = graph::compile(&sim, store.clone()).unwrap();
    graph::lock(&sim).fail_next("rag_search", 10);
    let out = invoke(&app, &sim, "Find literature on alkaline degradation").await;
    let mut expected = vec!["supervisor"];
    for _ in 0..=ohmind::MAX_RETRIES {
        expected.extend(["rag_agent", "error_handler", "supervisor"]);
    }
    expected.pop();
    assert_eq!(path_since(&store, THREAD, 0).await, expected);
    assert_eq!(out.state().retry_count, ohmind::MAX_RETRIES);
    assert!(out.state().error.is_some());
}

/// The nodes of the supersteps after step `after`, from the thread's
/// snapshots (`source: loop`, not the pauses, the input or an update).
async fn ran_since(app: &CompiledGraph<AgentState>, after: u64) -> Vec<String> {
    let mut history = app.get_state_history(THREAD).await.unwrap();
    history.reverse();
    history
        .iter()
        .filter(|s| s.seq() > after && s.interrupts().is_empty())
        .filter(|s| s.metadata()["source"] == "loop")
        .flat_map(|s| {
            s.metadata()["nodes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|n| n.as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_decision_written_as_human_validation_runs_on_without_asking_again() {
    let (_dir, path, store) = sqlite().await;
    let sim = graph::shared(Ohmind::new());
    let app = graph::compile(&sim, store.clone()).unwrap();
    let err = graph::decide_validation(&app, THREAD, true)
        .await
        .unwrap_err();
    assert!(
        matches!(err, graph::DecisionError::NotPending { .. }),
        "{err}"
    );

    let text = "Simulate the hydroxide conductivity of benzyltrimethylammonium with MD";
    let out = invoke(&app, &sim, text).await;
    assert_eq!(out.next(), [HUMAN_VALIDATION]);

    // A button, from another worker: no message, the decision alone.
    let worker = graph::compile(&sim, Store::sqlite(&path).await.unwrap()).unwrap();
    let edited = graph::decide_validation(&worker, THREAD, true)
        .await
        .unwrap();
    let snapshot = worker.get_state(THREAD).await.unwrap();
    assert_eq!(snapshot.seq(), edited);
    assert_eq!(snapshot.next(), ["md_agent"], "human_validation is done");
    assert!(snapshot.interrupts().is_empty());
    assert_eq!(snapshot.metadata()["source"], "update");
    assert_eq!(snapshot.state().validation_approved, Some(true));
    assert_eq!(snapshot.state().next, "md_agent");

    let done = worker.continue_thread(THREAD).await.unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(
        ran_since(&worker, edited).await,
        ["md_agent"],
        "human_validation does not run again"
    );
    assert!(done.state().mcp_results.contains_key("gromacs_md"));
    assert_eq!(
        done.state().validation_approved,
        None,
        "consumed by md_agent"
    );
    assert_eq!(
        last_human(done.state()).as_deref(),
        Some(text),
        "no answer message: the decision came from a button"
    );

    // Rejected the same way: back to the supervisor, which ends the turn.
    let out = invoke(&app, &sim, "Run a longer MD simulation").await;
    assert!(out.is_interrupted());
    let edited = graph::decide_validation(&app, THREAD, false).await.unwrap();
    assert_eq!(app.get_state(THREAD).await.unwrap().next(), ["supervisor"]);
    let done = app.continue_thread(THREAD).await.unwrap();
    assert_eq!(ran_since(&app, edited).await, ["supervisor"]);
    assert_eq!(done.state().validation_approved, Some(false));
    assert!(!done.is_interrupted());
}

/// The messages after the last human message.
fn after_question(state: &AgentState) -> Vec<Message> {
    let at = state
        .messages
        .iter()
        .rposition(|m| m.kind() == MessageKind::Human)
        .expect("a question");
    state.messages.iter().skip(at + 1).cloned().collect()
}

/// An agent is a ReAct agent on the offline model: it calls its MCP tool
/// (a `#[tool]`) with the request, the `ToolNode` answers, and the model
/// answers from the result; the node records the result in `mcp_results`.
#[tokio::test]
async fn an_agent_calls_its_tool_through_the_tool_node_then_answers() {
    let sim = graph::shared(Ohmind::new());
    let app = graph::compile(&sim, Store::memory()).unwrap();
    let input = graph::state_input(&ohmind::create_initial_state(FIRST)).unwrap();
    let out = app.invoke_thread(THREAD, input).await.unwrap();
    let added = after_question(out.state());
    let kinds: Vec<MessageKind> = added.iter().map(Message::kind).collect();
    assert_eq!(kinds, [MessageKind::Ai, MessageKind::Tool, MessageKind::Ai]);
    let [call] = added[0].tool_calls() else {
        panic!("one call: {:?}", added[0]);
    };
    assert_eq!(call.name, "orca_single_point");
    assert_eq!(call.args, json!({"molecule": FIRST}));
    assert_eq!(added[0].name(), Some("qm_agent"));
    assert_eq!(added[1].tool_call_id(), call.id.as_deref());
    assert_eq!(added[1].name(), Some("orca_single_point"));
    let result: Value = serde_json::from_str(&added[1].text()).unwrap();
    assert_eq!(result["gap_ev"], 5.17);
    assert_eq!(out.state().mcp_results["orca_single_point"], result);
    assert_eq!(
        added[2].text(),
        "HOMO -6.12 eV, LUMO -0.95 eV: a 5.17 eV gap, chemically stable."
    );
    assert_eq!(added[2].name(), Some("qm_agent"));
    assert_eq!(out.state().next, ohmind::FINISH);
    assert!(out.state().artifacts.contains_key("orbital_chart"));
    // The model's replies keep its ids, the tool's answer has one from
    // the app's counter: a run is reproducible.
    let ids: Vec<&str> = added.iter().filter_map(Message::id).collect();
    assert_eq!(ids, ["ai-2", "m1", "ai-3"]);
}

/// A tool that fails is answered by the `ToolNode` with an error tool
/// message; the agent's node makes it OHMind's `error` and routes to the
/// error handler, which retries through the supervisor.
#[tokio::test]
async fn a_failed_tool_call_is_an_error_tool_message_then_a_retry() {
    let sim = graph::shared(Ohmind::new());
    let store = Store::memory();
    let app = graph::compile(&sim, store.clone()).unwrap();
    graph::lock(&sim).fail_next("orca_single_point", 1);
    let input = graph::state_input(&ohmind::create_initial_state(FIRST)).unwrap();
    let out = app.invoke_thread(THREAD, input).await.unwrap();
    assert_eq!(
        path_since(&store, THREAD, 0).await,
        [
            "supervisor",
            "qm_agent",
            "error_handler",
            "supervisor",
            "qm_agent"
        ]
    );
    let failed: Vec<&Message> = out
        .state()
        .messages
        .iter()
        .filter(|m| m.extra().get("status") == Some(&json!("error")))
        .collect();
    assert_eq!(failed.len(), 1, "one failed call");
    assert_eq!(failed[0].name(), Some("orca_single_point"));
    assert!(
        failed[0].text().contains(ohmind::agents::TIMED_OUT),
        "{failed:?}"
    );
    // The retry succeeded: the error is cleared, the result recorded.
    assert_eq!(out.state().error, None);
    assert!(out.state().mcp_results.contains_key("orca_single_point"));
    let steps = graph::logged_steps(&store, THREAD, 0).await.unwrap();
    let error = serde_json::to_value(&steps[1].delta).unwrap()["error"].clone();
    assert_eq!(error, "orca_single_point: MCP server timed out");
}

/// The qm_agent's call as OpenAI streams it: the call's id and name, then
/// its arguments in two pieces.
fn orca_call_reply() -> Vec<Value> {
    let id = "chatcmpl-qm-1";
    vec![
        chunk(id, json!({"role": "assistant", "content": null}), None),
        chunk(
            id,
            json!({"tool_calls": [{"index": 0, "id": "call_orca", "type": "function",
                "function": {"name": "orca_single_point", "arguments": "{\"molecule\":"}}]}),
            None,
        ),
        chunk(
            id,
            json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"C[N+](C)(C)Cc1ccccc1\"}"}}]}),
            None,
        ),
        chunk(id, json!({}), Some("tool_calls")),
    ]
}

/// The qm_agent's answer, a few tokens at a time.
fn orca_answer_reply() -> Vec<Value> {
    let id = "chatcmpl-qm-2";
    let mut chunks = vec![chunk(id, json!({"role": "assistant", "content": ""}), None)];
    for token in ["The", " gap", " is", " 5.17", " eV."] {
        chunks.push(chunk(id, json!({"content": token}), None));
    }
    chunks.push(chunk(id, json!({}), Some("stop")));
    chunks
}

/// The agents on `ChatOpenAI`, against a local server that speaks the
/// Chat Completions wire format: the qm_agent is sent its prompt, the
/// request and its one tool's schema (from the `#[tool]`), then the
/// `ToolNode`'s answer; the model's arguments reach the tool, its answer
/// the conversation. Nothing leaves 127.0.0.1.
#[tokio::test]
async fn online_chat_openai_drives_an_agent_against_a_compatible_server() {
    let (url, script) = serve(vec![orca_call_reply(), orca_answer_reply()]).await;
    let model = ChatOpenAI::new("gpt-4o-mini")
        .base_url(url.as_str())
        .api_key("sk-test-key");
    let sim = graph::shared(Ohmind::with_model(model));
    let store = Store::memory();
    let app = graph::compile(&sim, store.clone()).unwrap();
    let input = graph::state_input(&ohmind::create_initial_state(FIRST)).unwrap();
    let out = app.invoke_thread(THREAD, input).await.unwrap();
    assert_eq!(
        path_since(&store, THREAD, 0).await,
        ["supervisor", "qm_agent"]
    );
    let added = after_question(out.state());
    let texts: Vec<String> = added.iter().map(Message::text).collect();
    assert_eq!(texts[2], "The gap is 5.17 eV.");
    let call = &added[0].tool_calls()[0];
    assert_eq!(call.id.as_deref(), Some("call_orca"));
    assert_eq!(call.args, json!({"molecule": "C[N+](C)(C)Cc1ccccc1"}));
    assert_eq!(added[1].tool_call_id(), Some("call_orca"));
    assert_eq!(out.state().mcp_results["orca_single_point"]["gap_ev"], 5.17);

    let seen = script.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let qm = ohmind::agent_spec("qm_agent").unwrap();
    for request in &seen {
        assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test-key"));
        let messages = request.body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        assert_eq!(messages[0]["content"], ohmind::agents::prompt(qm));
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(messages[1]["content"], FIRST);
        let tools = request.body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1, "the agent's own tool only");
        let function = &tools[0]["function"];
        assert_eq!(function["name"], "orca_single_point");
        assert!(
            function["description"]
                .as_str()
                .unwrap()
                .starts_with("Run a DFT single point with ORCA"),
            "{function}"
        );
        assert_eq!(function["parameters"]["required"], json!(["molecule"]));
    }
    let second = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(second[2]["tool_calls"][0]["id"], "call_orca");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_call_id"], "call_orca");
    let result: Value = serde_json::from_str(second[3]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["homo_ev"], -6.12);
}

/// The model's error fails the agent's node, and the run, naming the
/// provider and never the key.
#[tokio::test]
async fn online_a_failing_server_fails_the_agents_node() {
    let (url, _script) = serve(vec![]).await;
    let model = ChatOpenAI::new("gpt-4o-mini")
        .base_url(url.as_str())
        .api_key("sk-test-key");
    let sim = graph::shared(Ohmind::with_model(model));
    let app = graph::compile(&sim, Store::memory()).unwrap();
    let input = graph::state_input(&ohmind::create_initial_state(FIRST)).unwrap();
    let err = app.invoke_thread(THREAD, input).await.unwrap_err();
    assert_eq!(err.node(), Some("qm_agent"), "{err}");
    let chain = std::iter::successors(Some(&err as &dyn std::error::Error), |e| e.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ");
    assert!(chain.contains("no reply left"), "{chain}");
    assert!(chain.to_lowercase().contains("openai"), "{chain}");
    assert!(!chain.contains("sk-test-key"), "{chain}");
}

/// An agent's subgraph streams into the run: in `StreamMode::MESSAGES`,
/// the model's tokens come under the agent's node and its reply's id,
/// before the node's update, and join into the reply the node writes;
/// that reply is not sent again.
#[tokio::test]
async fn an_agents_tokens_reach_a_messages_stream_under_its_node() {
    use futures::StreamExt;
    use state_graph::{Event, StreamMode};
    let sim = graph::shared(Ohmind::new());
    let app = graph::compile(&sim, Store::memory()).unwrap();
    let input = graph::state_input(&ohmind::create_initial_state(FIRST)).unwrap();
    let mut events = app.stream_thread(THREAD, input, StreamMode::MESSAGES | StreamMode::UPDATES);
    let mut tokens: Vec<(String, String, Option<String>)> = Vec::new();
    let mut order = Vec::new();
    let mut last = None;
    while let Some(event) = events.next().await {
        match event.unwrap() {
            Event::Message { node, chunk, .. } => {
                order.push(format!("token:{node}"));
                tokens.push((node, chunk.text(), chunk.id().map(str::to_owned)));
            }
            Event::Update { node, .. } => order.push(format!("update:{node}")),
            Event::End(outcome) => last = Some(outcome.into_state()),
            _ => {}
        }
    }
    let state = last.unwrap();
    let answer = state.messages.last().unwrap();
    assert_eq!(answer.name(), Some("qm_agent"));
    let pieces: Vec<&str> = tokens
        .iter()
        .filter(|(node, _, id)| node == "qm_agent" && id.as_deref() == answer.id())
        .map(|(_, text, _)| text.as_str())
        .collect();
    assert!(pieces.len() > 5, "a token per word: {pieces:?}");
    assert_eq!(pieces.concat(), answer.text(), "sent once, as tokens");
    order.dedup();
    assert_eq!(
        order,
        ["update:supervisor", "token:qm_agent", "update:qm_agent"]
    );
}
