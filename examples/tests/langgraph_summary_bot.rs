//! The summary bot: after a scripted conversation, the summary and the ids
//! of the messages left; the system message carrying the summary; and
//! `RemoveMessage` as a delta.

use state_core::{Message, MessageKind, State};
use state_examples::langgraph::summary_bot::{
    CONVERSATION, CannedModel, SummaryState, call_model, run, summarize_conversation,
};

fn ids(state: &SummaryState) -> Vec<&str> {
    state.base.messages.iter().filter_map(Message::id).collect()
}

#[test]
fn the_scripted_run_summarizes_twice_and_keeps_the_last_two() {
    let mut model = CannedModel::default();
    let mut state = SummaryState::default();
    let mut summarized_at = vec![];
    for (turn, (id, text)) in CONVERSATION.into_iter().enumerate() {
        let steps = run(&mut model, &mut state, id, text).unwrap();
        if steps.iter().any(|s| s.node == "summarize_conversation") {
            summarized_at.push(turn + 1);
        }
        if turn + 1 == 4 {
            // Eight messages: all but the last two are deleted.
            assert_eq!(ids(&state), ["h-4", "ai-4"]);
            assert_eq!(
                state.summary,
                "The user said: hi! I'm bob / what's my name? / i like the celtics! / \
                 i like how much they win"
            );
        }
    }
    assert_eq!(summarized_at, [4, 7]);
    // The summary's own call took id ai-5; replies resumed at ai-6.
    assert_eq!(ids(&state), ["h-7", "ai-8"]);
    // Extended, not replaced: it starts with the first summary, and adds
    // the human messages since (h-4 was kept, so it is counted again).
    assert!(
        state.summary.starts_with("The user said: hi! I'm bob"),
        "{}",
        state.summary
    );
    assert!(
        state
            .summary
            .ends_with("/ i like how much they win / and their defense / who should I watch next? / thanks, that's all"),
        "{}",
        state.summary
    );
    // The second summary request carried the first summary.
    let request = model.inputs[8].last().unwrap().text();
    assert!(
        request.starts_with("This is summary of the conversation to date: The user said:"),
        "{request}"
    );
}

#[test]
fn call_model_puts_the_summary_first_when_there_is_one() {
    let mut model = CannedModel::default();
    let mut state = SummaryState::default();
    state
        .apply(SummaryState::delta().messages(Message::human("hello").with_id("h")))
        .unwrap();
    state.apply(call_model(&mut model, &state)).unwrap();
    assert_eq!(model.inputs[0].len(), 1, "no summary, no system message");

    state
        .apply(SummaryState::delta().summary("Bob likes the Celtics."))
        .unwrap();
    let delta = call_model(&mut model, &state);
    let sent = &model.inputs[1];
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].kind(), MessageKind::System);
    assert_eq!(
        sent[0].text(),
        "Summary of conversation earlier: Bob likes the Celtics."
    );
    // The system message is only the model's input, never the state's.
    state.apply(delta).unwrap();
    assert_eq!(ids(&state), ["h", "ai-1", "ai-2"]);
}

#[test]
fn summarize_on_a_short_history_deletes_nothing_it_must_keep() {
    let mut model = CannedModel::default();
    let mut state = SummaryState::default();
    state
        .apply(SummaryState::delta().messages([Message::human("only").with_id("h-1")]))
        .unwrap();
    let delta = summarize_conversation(&mut model, &state);
    assert_eq!(
        delta.get_messages().and_then(|w| w.update()).map(Vec::len),
        Some(0)
    );
    state.apply(delta).unwrap();
    assert_eq!(ids(&state), ["h-1"]);
    assert_eq!(state.summary, "The user said: only");
}

#[test]
fn remove_message_travels_as_json_too() {
    let mut state = SummaryState::default();
    state
        .apply(SummaryState::delta().messages([
            Message::human("a").with_id("1"),
            Message::ai("b").with_id("2"),
            Message::human("c").with_id("3"),
        ]))
        .unwrap();
    state
        .apply_json(serde_json::json!({
            "messages": [{"type": "remove", "id": "2", "content": ""}],
            "summary": "a, then c"
        }))
        .unwrap();
    assert_eq!(ids(&state), ["1", "3"]);
    // RemoveMessage(id=REMOVE_ALL_MESSAGES): the history restarts.
    state
        .apply(
            SummaryState::delta()
                .messages([Message::remove_all(), Message::ai("fresh").with_id("4")]),
        )
        .unwrap();
    assert_eq!(ids(&state), ["4"]);
    assert_eq!(state.summary, "a, then c");
}
