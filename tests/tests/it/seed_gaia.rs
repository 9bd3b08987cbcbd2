//! GAIA (seed 001): the initial state from a request, partial updates,
//! trimming and filtering the history as full replacements, dict-like
//! access, the config beside the state, the memories searched and stored
//! for the run's user, and streaming (updates, values, SSE), run on
//! `state_examples::gaia`.

use serde_json::{Value, json};
use state_core::{Delta, Message, MessageKind, Messages, Scope, State, StateError};
use state_examples::gaia::{
    self, AgentOptions, Checkpointer, FETCH_EVENTS, Gaia, GaiaState, GaiaStateDelta, KEEP_LAST,
    MAX_CONTENT_CHARS, MessageRequestWithHistory, ModelConfig, RunnableConfig, StreamMode,
    UsageMetadataCallbackHandler, User, memory,
};
use state_store::Store;

const NOW: &str = "2024-01-01T09:00:00+00:00";

fn user() -> User {
    User {
        user_id: "u1".into(),
        name: Some("Ada".into()),
        email: None,
        timezone: Some("Asia/Tokyo".into()),
    }
}

fn config() -> RunnableConfig {
    gaia::build_agent_config("thread-1", &user(), NOW, AgentOptions::default())
}

fn request(text: &str) -> MessageRequestWithHistory {
    MessageRequestWithHistory {
        message: text.into(),
    }
}

/// The graph's input for `text`, with the question as the history's last
/// message.
fn input(text: &str, id: &str) -> GaiaStateDelta {
    let history = vec![Message::human(text).with_id(id)];
    gaia::build_initial_state(&request(text), "u1", "thread-1", history, None, NOW)
}

fn numbered(count: usize) -> Vec<Message> {
    (1..=count)
        .map(|i| Message::human(format!("m{i}")).with_id(format!("id{i}")))
        .collect()
}

fn state_with(messages: Vec<Message>) -> GaiaState {
    let mut state = GaiaState::default();
    state.apply(GaiaState::delta().messages(messages)).unwrap();
    state
}

fn ids(messages: &Messages) -> Vec<&str> {
    messages.iter().filter_map(Message::id).collect()
}

/// The store GAIA compiles with, for its memories: in memory, indexed.
fn memories() -> Store {
    memory::indexed(Store::memory())
}

/// Remembers each of `texts` for `user`.
async fn remember(store: &Store, user: &str, texts: &[&str]) {
    for text in texts {
        memory::store_user_message_memory(store, user, text, "old")
            .await
            .unwrap();
    }
}

// --- The schema -------------------------------------------------------------

#[test]
fn the_schema_matches_the_pydantic_model() {
    assert_eq!(
        GaiaState::keys(),
        [
            "query",
            "messages",
            "current_datetime",
            "mem0_user_id",
            "memories",
            "memories_stored",
            "conversation_id"
        ]
    );
    assert_eq!(
        GaiaState::default().to_json().unwrap(),
        json!({
            "query": "",
            "messages": [],
            "current_datetime": null,
            "mem0_user_id": null,
            "memories": [],
            "memories_stored": false,
            "conversation_id": null,
        })
    );
    let schema = GaiaState::schema();
    assert_eq!(schema.field("messages").unwrap().reducer, "add_messages");
    assert_eq!(
        schema.field("memories").unwrap().reducer,
        "replace",
        "memories replace (no reducer)"
    );
    assert_eq!(schema.field("memories_stored").unwrap().scope, Scope::Turn);
    assert_eq!(schema.field("query").unwrap().scope, Scope::Persistent);
    assert_eq!(
        schema.field("query").unwrap().doc,
        "Current user query/message."
    );
}

// --- build_initial_state and partial updates --------------------------------

#[test]
fn build_initial_state_writes_the_seven_keys() {
    let delta = input("Schedule a meeting", "q1");
    assert_eq!(delta.fields(), GaiaState::keys());
    let mut state = GaiaState {
        memories: vec!["stale".into()],
        memories_stored: true,
        ..GaiaState::default()
    };
    state.apply(delta).unwrap();
    assert_eq!(state.query, "Schedule a meeting");
    assert_eq!(state.current_datetime.as_deref(), Some(NOW));
    assert_eq!(state.mem0_user_id.as_deref(), Some("u1"));
    assert_eq!(state.conversation_id.as_deref(), Some("thread-1"));
    assert!(state.memories.is_empty() && !state.memories_stored, "reset");
    assert_eq!(ids(&state.messages), ["q1"]);
}

#[test]
fn resending_the_history_does_not_duplicate_it() {
    let mut state = GaiaState::default();
    state.apply(input("first", "q1")).unwrap();
    state
        .apply(GaiaState::delta().messages(vec![Message::ai("answer").with_id("a1")]))
        .unwrap();
    // The next request carries the whole history again, plus the new question.
    let history = vec![
        Message::human("first").with_id("q1"),
        Message::ai("answer").with_id("a1"),
        Message::human("second").with_id("q2"),
    ];
    let next = gaia::build_initial_state(&request("second"), "u1", "thread-1", history, None, NOW);
    state.apply(next).unwrap();
    assert_eq!(ids(&state.messages), ["q1", "a1", "q2"]);
}

#[tokio::test]
async fn a_node_returns_only_the_fields_it_changed() {
    let store = memories();
    remember(&store, "u1", &["Prefers morning meetings", "Has a cat"]).await;
    remember(&store, "someone-else", &["Prefers evening meetings"]).await;
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    state.apply(input("When are my meetings?", "q1")).unwrap();
    let before = state.clone();

    let update = graph
        .run_node(&store, "memory_retrieval", &state, &config())
        .await
        .unwrap();
    assert_eq!(update.fields(), ["messages", "memories"]);
    state.apply(update).unwrap();
    assert_eq!(state.memories, ["Prefers morning meetings"], "only u1's");
    assert_eq!(
        state.messages.last().map(Message::text).as_deref(),
        Some("Found 1 relevant memories")
    );
    assert_eq!(state.messages.len(), before.messages.len() + 1, "appended");
    assert_eq!(
        (
            state.query.as_str(),
            &state.current_datetime,
            state.memories_stored
        ),
        (before.query.as_str(), &before.current_datetime, false),
        "untouched"
    );
}

#[tokio::test]
async fn memory_search_ranks_by_meaning_and_respects_the_limit() {
    let store = memories();
    let notes: Vec<String> = (0..7).map(|i| format!("note {i} about lunch")).collect();
    let notes: Vec<&str> = notes.iter().map(String::as_str).collect();
    remember(&store, "u", &notes).await;
    remember(&store, "u", &["lunch with the design team", "Has a cat"]).await;
    let search = |query: &'static str, user: &'static str, limit| {
        let store = store.clone();
        async move {
            memory::search_memories(&store, user, query, limit)
                .await
                .unwrap()
        }
    };

    let hits = search("design lunch", "u", gaia::MEMORY_LIMIT).await;
    assert_eq!(hits.len(), gaia::MEMORY_LIMIT);
    assert_eq!(hits[0], "lunch with the design team", "two words shared");
    assert_eq!(hits[1], "note 6 about lunch", "ties: the newest first");
    // Only what shares a word with the query, however high the limit.
    assert_eq!(search("design lunch", "u", 20).await.len(), 8);
    assert!(search("green tea", "u", 20).await.is_empty());
    assert!(search("design lunch", "nobody", 5).await.is_empty());
    assert!(search("design lunch", "", 5).await.is_empty(), "no user");

    // Saying it again keeps one memory, its first time kept.
    let namespace = memory::namespace("u");
    let key = memory::key("Has a cat");
    let first = store.get_item(&namespace, &key).await.unwrap().unwrap();
    remember(&store, "u", &["Has a cat"]).await;
    let again = store.get_item(&namespace, &key).await.unwrap().unwrap();
    assert_eq!(again.created_at, first.created_at);
    assert_eq!(
        store
            .search_items(&namespace)
            .limit(20)
            .await
            .unwrap()
            .len(),
        9
    );
}

// --- Accumulation vs. replacement ---------------------------------------------

#[test]
fn add_messages_accumulates() {
    let mut state = state_with(vec![Message::human("Hello")]);
    state
        .apply(GaiaState::delta().messages(vec![Message::ai("Hi there")]))
        .unwrap();
    let kinds: Vec<MessageKind> = state.messages.iter().map(Message::kind).collect();
    assert_eq!(kinds, [MessageKind::Human, MessageKind::Ai]);
}

#[test]
fn trim_keeps_the_last_ten_as_an_overwrite() {
    let state = state_with(numbered(15));
    let delta = gaia::trim_messages_node(&state);
    let json = serde_json::to_value(&delta).unwrap();
    assert_eq!(
        json["messages"]["__overwrite__"].as_array().map(Vec::len),
        Some(KEEP_LAST)
    );

    let mut trimmed = state.clone();
    trimmed.apply(delta).unwrap();
    let expected: Vec<String> = (6..=15).map(|i| format!("id{i}")).collect();
    assert_eq!(ids(&trimmed.messages), expected);

    let mut short = state_with(numbered(4));
    short.apply(gaia::trim_messages_node(&short)).unwrap();
    assert_eq!(short.messages.len(), 4, "fewer than ten: all kept");
}

#[test]
fn the_documents_trim_through_add_messages_removes_nothing() {
    let mut state = state_with(numbered(15));
    let before = state.clone();
    state.apply(gaia::trim_messages_as_written(&state)).unwrap();
    assert_eq!(state, before, "ids already present are updated in place");
}

#[test]
fn filter_drops_messages_of_ten_thousand_characters_or_more() {
    let mut messages = numbered(2);
    messages.push(Message::ai("x".repeat(MAX_CONTENT_CHARS)).with_id("big"));
    // 9,999 characters but 19,998 bytes: Python's len counts characters.
    messages.push(Message::ai("é".repeat(MAX_CONTENT_CHARS - 1)).with_id("accented"));
    let mut state = state_with(messages);
    state.apply(gaia::filter_messages_node(&state)).unwrap();
    assert_eq!(ids(&state.messages), ["id1", "id2", "accented"]);
}

#[test]
fn an_overwrite_wins_over_an_append_in_the_same_step() {
    // As LangGraph's Overwrite: in one superstep the overwrite replaces the
    // field and the step's other writes to it are dropped, in either order.
    // So trimming runs as its own node, never beside one that adds messages.
    let state = state_with(numbered(12));
    let reply = || GaiaState::delta().messages(vec![Message::ai("new").with_id("new")]);
    for trim_first in [true, false] {
        let trim = gaia::trim_messages_node(&state);
        let step = if trim_first {
            [trim, reply()]
        } else {
            [reply(), trim]
        };
        let mut after = state.clone();
        after.apply_all(step).unwrap();
        assert_eq!(after.messages.len(), KEEP_LAST, "trim first: {trim_first}");
        assert!(
            !after.messages.contains_id("new"),
            "trim first: {trim_first}"
        );
        assert_eq!(after.messages.first().and_then(Message::id), Some("id3"));
    }
}

// --- Dict-like access -------------------------------------------------------------

#[test]
fn dict_access_and_attribute_access_agree() {
    let mut state = GaiaState::default();
    state.apply(input("Hello", "q1")).unwrap();
    assert_eq!(state.get("query").unwrap(), json!(state.query));
    assert_eq!(state.field_ref::<String>("query"), Some(&state.query));
    assert_eq!(
        state.get("messages").unwrap(),
        serde_json::to_value(&state.messages).unwrap()
    );

    // state["memories"] = [...] and state.memories = [...]
    state.set("memories", json!(["a", "b"])).unwrap();
    assert_eq!(state.memories, ["a", "b"]);
    state.memories = vec!["c".into()];
    assert_eq!(state.get("memories").unwrap(), json!(["c"]));
    *state.field_mut::<bool>("memories_stored").unwrap() = true;
    assert!(state.memories_stored);

    // state.messages = [HumanMessage("Hi")]; state["messages"] is the same list.
    state
        .set(
            "messages",
            json!([{"type": "human", "content": "Hi", "id": "x"}]),
        )
        .unwrap();
    assert_eq!(ids(&state.messages), ["x"]);

    // len(state), "key" in state, iteration.
    assert_eq!(GaiaState::keys().len(), 7);
    assert!(state.contains_key("conversation_id") && !state.contains_key("user_id"));
}

#[test]
fn dict_access_checks_keys_and_types() {
    let mut state = GaiaState::default();
    let before = state.clone();
    assert_eq!(
        state.get("querry").unwrap_err().to_string(),
        "`GaiaState` has no field `querry`; did you mean `query`?"
    );
    assert!(matches!(
        state.set("memories", json!("not a list")),
        Err(StateError::Type { .. })
    ));
    assert!(state.set("mem0_user_id", json!(42)).is_err());
    assert_eq!(state, before, "refused writes change nothing");
    state.set("mem0_user_id", Value::Null).unwrap();
    assert_eq!(state.mem0_user_id, None);
}

// --- The config beside the state ------------------------------------------------------

#[test]
fn build_agent_config_fills_the_documents_defaults() {
    let bare = User {
        user_id: "u9".into(),
        ..User::default()
    };
    let config = gaia::build_agent_config("t9", &bare, NOW, AgentOptions::default());
    assert_eq!(
        serde_json::to_value(&config).unwrap(),
        json!({
            "configurable": {
                "thread_id": "t9",
                "user_id": "u9",
                "user_name": null,
                "user_email": null,
                "user_time": NOW,
                "user_timezone": "UTC",
                "agent_name": "comms_agent",
                "selected_tool": null,
                "tool_category": null,
                "model": null,
            },
            "callbacks": [],
        })
    );
    let options = AgentOptions {
        user_model_config: Some(ModelConfig {
            model_name: "m".into(),
        }),
        usage_metadata_callback: Some(UsageMetadataCallbackHandler { name: "u".into() }),
        agent_name: "mail_agent".into(),
        ..AgentOptions::default()
    };
    let config = gaia::build_agent_config("t9", &user(), NOW, options);
    assert_eq!(config.configurable.model.as_deref(), Some("m"));
    assert_eq!(config.configurable.user_timezone, "Asia/Tokyo");
    assert_eq!(config.configurable.agent_name, "mail_agent");
    assert_eq!(config.callbacks.len(), 1);
}

#[tokio::test]
async fn nodes_read_the_config_which_never_enters_the_state() {
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    graph
        .run(
            &store,
            &mut state,
            input("Schedule a meeting", "q1"),
            &config(),
        )
        .await
        .unwrap();
    let answer = state.messages.last().unwrap().text();
    assert!(
        answer.contains("Asia/Tokyo"),
        "timezone from the config: {answer}"
    );
    let json = state.to_json().unwrap();
    for key in ["configurable", "user_timezone", "thread_id", "callbacks"] {
        assert!(json.get(key).is_none(), "{key} is not state");
    }

    // A tool picked in the UI (config, not state) changes the node's choice.
    let mut picked = config();
    picked.configurable.selected_tool = Some("CUSTOM_SEND_EMAIL".into());
    let mut state = GaiaState::default();
    let run = graph
        .run(
            &store,
            &mut state,
            input("Schedule a meeting", "q1"),
            &picked,
        )
        .await
        .unwrap();
    assert!(run.steps.iter().all(|step| step.node != "tools"));
}

// --- A run and its streams -------------------------------------------------------------------

#[tokio::test]
async fn a_calendar_query_runs_through_the_tool_and_back() {
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    let run = graph
        .run(
            &store,
            &mut state,
            input("Schedule a meeting for tomorrow", "q1"),
            &config(),
        )
        .await
        .unwrap();
    let nodes: Vec<&str> = run.steps.iter().map(|s| s.node).collect();
    assert_eq!(
        nodes,
        [
            "memory_retrieval",
            "agent",
            "tools",
            "agent",
            "store_memory"
        ]
    );
    let call = &state.messages[2];
    assert_eq!(call.tool_calls()[0].name, FETCH_EVENTS);
    assert_eq!(call.tool_calls()[0].args, json!({"time_min": NOW}));
    let result = &state.messages[3];
    assert_eq!(result.kind(), MessageKind::Tool);
    assert_eq!(result.tool_call_id(), call.tool_calls()[0].id.as_deref());
    assert!(state.memories_stored);
    // Stored for the run's user, and found by their next question.
    let found = memory::search_memories(&store, "u1", "Which meeting?", 5)
        .await
        .unwrap();
    assert_eq!(found, ["Schedule a meeting for tomorrow"]);
}

#[tokio::test]
async fn updates_are_one_json_delta_per_node_and_replay_to_the_final_state() {
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    let start = input("Schedule a meeting", "q1");
    let run = graph
        .run(&store, &mut state, start.clone(), &config())
        .await
        .unwrap();
    let updates = run.stream(StreamMode::Updates).unwrap();
    assert_eq!(updates.len(), run.steps.len());

    let mut replay = GaiaState::default();
    replay.apply(start).unwrap();
    for (chunk, step) in updates.iter().zip(&run.steps) {
        let object = chunk.as_object().unwrap();
        assert_eq!(object.len(), 1, "one node per chunk");
        let delta = GaiaStateDelta::from_json(object[step.node].clone()).unwrap();
        assert_eq!(delta, step.delta, "the JSON line round-trips");
        replay.apply_json(object[step.node].clone()).unwrap();
    }
    assert_eq!(replay, state);
    assert_eq!(
        updates.last().unwrap(),
        &json!({"store_memory": {"memories_stored": true}})
    );
}

#[tokio::test]
async fn values_are_the_full_state_after_the_input_and_after_each_node() {
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    let run = graph
        .run(&store, &mut state, input("Hello", "q1"), &config())
        .await
        .unwrap();
    let values = run.stream(StreamMode::Values).unwrap();
    assert_eq!(values.len(), run.steps.len() + 1);
    assert_eq!(values[0]["messages"].as_array().map(Vec::len), Some(1));
    assert_eq!(values.last().unwrap(), &state.to_json().unwrap());
    // Each chunk is the previous one with that node's update applied.
    for (i, step) in run.steps.iter().enumerate() {
        let mut expected = GaiaState::from_json(values[i].clone()).unwrap();
        expected.apply(step.delta.clone()).unwrap();
        assert_eq!(
            expected.to_json().unwrap(),
            values[i + 1],
            "after {}",
            step.node
        );
    }
}

#[tokio::test]
async fn sse_events_stream_ai_content_and_tool_calls_then_done() {
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    let events = graph
        .execute_graph_streaming(
            &store,
            &mut state,
            input("Schedule a meeting", "q1"),
            &config(),
        )
        .await
        .unwrap();
    let call_id = state.messages[2].tool_calls()[0].id.clone();
    assert_eq!(
        events,
        [
            "data: {\"content\":\"I'll check your calendar\"}\n\n".to_owned(),
            format!(
                "data: {}\n\n",
                json!({"tool_calls": [{"id": call_id, "name": FETCH_EVENTS, "args": {"time_min": NOW}}]})
            ),
            "data: {\"content\":\"You have 2 events tomorrow; I'll suggest a free slot in Asia/Tokyo.\"}\n\n"
                .to_owned(),
            "data: [DONE]\n\n".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_long_history_is_filtered_then_trimmed_before_the_agent() {
    let mut history = numbered(13);
    history.insert(
        0,
        Message::ai("y".repeat(MAX_CONTENT_CHARS)).with_id("huge"),
    );
    let delta = gaia::build_initial_state(&request("m13"), "u1", "t", history, None, NOW);
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    let run = graph
        .run(&store, &mut state, delta, &config())
        .await
        .unwrap();
    let nodes: Vec<&str> = run.steps.iter().map(|s| s.node).collect();
    assert_eq!(
        nodes[..3],
        ["filter_messages", "trim_messages", "memory_retrieval"]
    );
    assert_eq!(
        run.steps[0].values["messages"].as_array().map(Vec::len),
        Some(13)
    );
    assert_eq!(
        run.steps[1].values["messages"].as_array().map(Vec::len),
        Some(KEEP_LAST)
    );
    assert!(!state.messages.contains_id("huge"));
    assert!(!state.messages.contains_id("id3"));
    // The trim streams no SSE event: it adds no new message.
    assert_eq!(run.sse_events().len(), 2);
}

// --- Checkpoints and turns ---------------------------------------------------------------------------

#[tokio::test]
async fn a_thread_resumes_from_its_checkpoint_with_a_partial_input() {
    let store = memories();
    let mut graph = Gaia::default();
    let mut state = GaiaState::default();
    graph
        .run(
            &store,
            &mut state,
            input("Schedule a meeting", "q1"),
            &config(),
        )
        .await
        .unwrap();
    let mut checkpoints = Checkpointer::default();
    checkpoints.put("thread-1", &state).unwrap();
    assert_eq!(
        checkpoints.values("thread-1"),
        Some(&state.to_json().unwrap())
    );

    let mut resumed = checkpoints.get("thread-1").unwrap().unwrap();
    assert_eq!(resumed, state);
    resumed.begin_turn();
    assert!(!resumed.memories_stored, "turn-scoped flag reset");
    assert_eq!(resumed.query, state.query, "persistent fields kept");
    assert_eq!(resumed.messages, state.messages);

    let partial = GaiaStateDelta::from_json(
        json!({"messages": [{"role": "user", "content": "Continue from where we left off"}]}),
    )
    .unwrap();
    assert_eq!(partial.fields(), ["messages"]);
    let run = graph
        .run(&store, &mut resumed, partial, &config())
        .await
        .unwrap();
    assert_eq!(
        run.values()[0]["messages"].as_array().map(Vec::len),
        Some(state.messages.len() + 1)
    );
    assert!(resumed.memories_stored);
    assert_eq!(
        resumed.memories,
        ["Schedule a meeting"],
        "turn 1's memory, found by the resumed turn"
    );
    assert!(checkpoints.get("missing").unwrap().is_none());
}
