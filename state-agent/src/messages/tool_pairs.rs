//! What [`trim_messages`](super::trim_messages) adds to LangChain's cut: a
//! tool call and its results stay together, since providers refuse a tool
//! result without its call, and a call whose results were in the history
//! but cut off.

use state_core::{Message, MessageKind};
use std::collections::HashSet;

/// `kept` (a trim of `input`) without the pieces of split tool calls: tool
/// messages whose call was cut, and AI messages (with the results kept of
/// them) some of whose results are in `input` but were cut. A call whose
/// results are nowhere in `input` (the model's latest turn, its tools not
/// run yet) is whole as it is.
pub(crate) fn keep_tool_calls_whole(kept: Vec<Message>, input: &[Message]) -> Vec<Message> {
    let called: HashSet<&str> = ids_called(&kept);
    let answered_in_kept: HashSet<&str> = kept.iter().filter_map(Message::tool_call_id).collect();
    let answered_in_input: HashSet<&str> = input.iter().filter_map(Message::tool_call_id).collect();
    // An AI message is split when a call of it was answered in the input
    // and that answer was cut.
    let split_calls: HashSet<String> = kept
        .iter()
        .filter(|m| {
            m.tool_calls().iter().any(|call| {
                call.id.as_deref().is_some_and(|id| {
                    answered_in_input.contains(id) && !answered_in_kept.contains(id)
                })
            })
        })
        .flat_map(|m| m.tool_calls().iter().filter_map(|c| c.id.clone()))
        .collect();
    if split_calls.is_empty() && kept.iter().all(|m| answers(m, &called)) {
        return kept;
    }
    let keep: Vec<bool> = kept
        .iter()
        .map(|m| {
            let split_ai = m
                .tool_calls()
                .iter()
                .any(|c| c.id.as_deref().is_some_and(|id| split_calls.contains(id)));
            let split_result = m
                .tool_call_id()
                .is_some_and(|id| split_calls.contains(id) || !called.contains(id));
            !(split_ai || (m.kind() == MessageKind::Tool && split_result))
        })
        .collect();
    kept.into_iter()
        .zip(keep)
        .filter_map(|(m, keep)| keep.then_some(m))
        .collect()
}

fn ids_called(messages: &[Message]) -> HashSet<&str> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls().iter().filter_map(|c| c.id.as_deref()))
        .collect()
}

/// Whether `m` is not a tool result, or answers a call in `called`.
fn answers(m: &Message, called: &HashSet<&str>) -> bool {
    m.kind() != MessageKind::Tool || m.tool_call_id().is_some_and(|id| called.contains(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use state_core::ToolCall;

    fn call(id: &str) -> Message {
        Message::ai("").with_tool_calls(vec![ToolCall::new("f", serde_json::json!({})).with_id(id)])
    }

    #[test]
    fn a_result_without_its_call_goes_and_a_call_cut_from_its_results_goes() {
        let input = vec![
            Message::human("q"),
            call("a"),
            Message::tool("1", "a"),
            Message::human("again"),
            call("b"),
            Message::tool("2", "b"),
        ];
        // LangChain's "last" cut starting at a's result.
        let kept = keep_tool_calls_whole(input[2..].to_vec(), &input);
        assert_eq!(kept, input[3..].to_vec());
        // A "first" cut between b and its result.
        let kept = keep_tool_calls_whole(input[..5].to_vec(), &input);
        assert_eq!(kept, input[..4].to_vec());
        // The latest call, not run yet, stays.
        let kept = keep_tool_calls_whole(input[3..5].to_vec(), &input[..5]);
        assert_eq!(kept, input[3..5].to_vec());
    }
}
