//! Time travel, end to end: the thread's history newest first (the
//! snapshot the how-to replays from is `all_states[2]` here too), a replay
//! that runs on from a past step without redoing the step itself, two
//! branches edited at that step (another tool; no tool), and the original
//! thread untouched by all three: its log, its head and its state.

use crate::stores::TestStore;
use state_core::{Message, MessageKind, MessagesState, State};
use state_examples::langgraph::snapshots_since;
use state_examples::langgraph::time_travel::{
    QUIET_HOURS, REQUEST, SONG, branch, build_graph, replay, with_tool,
};
use state_graph::{CompiledGraph, Snapshot};

/// The how-to's first run, on thread "1".
async fn first_run(app: &CompiledGraph<MessagesState>) -> MessagesState {
    let input = MessagesState::delta().messages(vec![Message::human(REQUEST)]);
    app.invoke_thread("1", input).await.unwrap().into_state()
}

/// The nodes each snapshot after `after` was written by.
async fn ran(app: &CompiledGraph<MessagesState>, thread: &str, after: u64) -> Vec<String> {
    snapshots_since(app, thread, after)
        .await
        .unwrap()
        .iter()
        .map(|s: &Snapshot<MessagesState>| s.metadata()["nodes"][0].as_str().unwrap().to_owned())
        .collect()
}

async fn the_history_lists_every_step_newest_first(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    let end = first_run(&app).await;
    let all_states = app.get_state_history("1").await.unwrap();
    let shape: Vec<(u64, usize, Vec<String>)> = all_states
        .iter()
        .map(|s| (s.seq(), s.state().messages.len(), s.next().to_vec()))
        .collect();
    assert_eq!(
        shape,
        [
            (4, 4, vec![]),
            (3, 3, vec!["agent".to_owned()]),
            (2, 2, vec!["action".to_owned()]),
            (1, 1, vec!["agent".to_owned()]),
        ],
        "{}",
        ts.name
    );
    assert_eq!(all_states[0].state(), &end);
    assert_eq!(all_states[3].metadata()["source"], "input");
    let to_replay = &all_states[2];
    let call = &to_replay.state().messages.last().unwrap().tool_calls()[0];
    assert_eq!(call.name, "play_song_on_apple");
    assert_eq!(call.args["song"], SONG);
}

async fn a_replay_goes_on_from_the_step_and_leaves_the_thread(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    let end = first_run(&app).await;
    let log = ts.store.history("1", ..).await.unwrap();
    let to_replay = app.get_state_history("1").await.unwrap().remove(2);

    let other = build_graph(ts.another_worker().await).unwrap();
    let out = replay(&other, "1", to_replay.seq(), "1-replay")
        .await
        .unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(
        ran(&app, "1-replay", to_replay.seq()).await,
        ["action", "agent"],
        "{}: the model's call at the step is not made again",
        ts.name
    );
    assert_eq!(out.state(), &end, "the canned model replays the same");
    let info = ts.store.thread_info("1-replay").await.unwrap();
    assert_eq!(info.forked_from, Some(("1".to_owned(), to_replay.seq())));

    assert_eq!(ts.store.history("1", ..).await.unwrap(), log, "{}", ts.name);
    let head = app.get_state("1").await.unwrap();
    assert_eq!((head.seq(), head.state()), (4, &end));
}

async fn a_branch_with_another_tool_plays_it_there(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    let end = first_run(&app).await;
    let log = ts.store.history("1", ..).await.unwrap();
    let to_replay = app.get_state_history("1").await.unwrap().remove(2);
    let last_message = to_replay.state().messages.last().unwrap();
    let last_message = with_tool(last_message, "play_song_on_spotify");

    let edited = branch(
        &app,
        "1",
        to_replay.seq(),
        "1-spotify",
        MessagesState::delta().messages(vec![last_message.clone()]),
    )
    .await
    .unwrap();
    let snapshot = app.get_state("1-spotify").await.unwrap();
    assert_eq!(snapshot.seq(), edited);
    assert_eq!(
        snapshot.next(),
        ["action"],
        "{}: as written by the model",
        ts.name
    );
    assert_eq!(
        snapshot.state().messages.len(),
        2,
        "the call replaced, by id"
    );

    let out = app.continue_thread("1-spotify").await.unwrap();
    let messages = &out.state().messages;
    assert_eq!(messages[1].id(), last_message.id());
    assert_eq!(messages[1].tool_calls()[0].name, "play_song_on_spotify");
    assert_eq!(
        messages[2].text(),
        format!("Successfully played {SONG} on Spotify!")
    );
    assert!(
        messages[3].text().contains("on Spotify"),
        "{:?}",
        messages[3]
    );
    assert_eq!(ran(&app, "1-spotify", edited).await, ["action", "agent"]);

    assert_eq!(ts.store.history("1", ..).await.unwrap(), log, "{}", ts.name);
    assert_eq!(app.get_state("1").await.unwrap().state(), &end);
}

async fn a_branch_without_a_tool_call_ends_there(ts: TestStore) {
    let app = build_graph(ts.store.clone()).unwrap();
    let end = first_run(&app).await;
    let to_replay = app.get_state_history("1").await.unwrap().remove(2);
    let id = to_replay
        .state()
        .messages
        .last()
        .unwrap()
        .id()
        .unwrap()
        .to_owned();
    let new_message = Message::ai(QUIET_HOURS).with_id(id.as_str());

    branch(
        &app,
        "1",
        to_replay.seq(),
        "1-quiet",
        MessagesState::delta().messages(vec![new_message]),
    )
    .await
    .unwrap();
    let branch_state = app.get_state("1-quiet").await.unwrap();
    assert!(
        branch_state.next().is_empty(),
        "{}: no tool call, nothing next: {:?}",
        ts.name,
        branch_state.next()
    );
    let messages = &branch_state.state().messages;
    assert_eq!(messages.len(), 2);
    assert_eq!(
        (
            messages[1].kind(),
            messages[1].id(),
            messages[1].text().as_str()
        ),
        (MessageKind::Ai, Some(id.as_str()), QUIET_HOURS)
    );
    // Going on changes nothing: the branch has ended.
    let out = app.continue_thread("1-quiet").await.unwrap();
    assert_eq!(out.state(), branch_state.state());
    assert_eq!(app.get_state("1").await.unwrap().state(), &end);
}

on_both_stores!(
    the_history_lists_every_step_newest_first,
    a_replay_goes_on_from_the_step_and_leaves_the_thread,
    a_branch_with_another_tool_plays_it_there,
    a_branch_without_a_tool_call_ends_there,
);
