//! The messages of any state: its field with the `add_messages` reducer
//! (`MessagesState`'s `messages`, flattened or not, or a state's own),
//! read without JSON and written through the state's delta.

use serde_json::{Value, json};
use state_core::{Delta, Message, MessageKind, Messages, ReducerKind, State, StateError};

/// The key of a state's messages field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MessagesField {
    key: &'static str,
}

impl MessagesField {
    /// The messages field of `S`: the one named `wanted`, or else the
    /// `add_messages` field named `messages`, or else the only
    /// `add_messages` field. The error says what is missing.
    pub fn of<S: State>(wanted: Option<&str>) -> Result<MessagesField, String> {
        let schema = S::schema();
        let fields = || {
            schema
                .fields
                .iter()
                .filter(|f| f.reducer_kind() == ReducerKind::AddingMessages)
        };
        if let Some(wanted) = wanted {
            return match schema.fields.iter().find(|f| f.name == wanted) {
                Some(f) if f.reducer_kind() == ReducerKind::AddingMessages => {
                    Ok(MessagesField { key: f.name })
                }
                Some(_) => Err(format!(
                    "the field `{wanted}` of `{}` does not have the add_messages reducer",
                    schema.name
                )),
                None => Err(format!("`{}` has no field `{wanted}`", schema.name)),
            };
        }
        if let Some(f) = fields().find(|f| f.name == "messages") {
            return Ok(MessagesField { key: f.name });
        }
        let mut found = fields();
        match (found.next(), found.next()) {
            (Some(f), None) => Ok(MessagesField { key: f.name }),
            (None, _) => Err(format!(
                "`{}` has no messages field: give it one with #[reducer(add_messages)], \
                 or flatten MessagesState into it",
                schema.name
            )),
            (Some(_), Some(_)) => Err(format!(
                "`{}` has several add_messages fields, none named `messages`: say which",
                schema.name
            )),
        }
    }

    /// The field's key.
    pub fn key(self) -> &'static str {
        self.key
    }

    /// The messages of `state`, as a slice (a `Messages` or a
    /// `Vec<Message>` field); empty for another message type.
    pub fn read<S: State + 'static>(self, state: &S) -> &[Message] {
        if let Some(messages) = state.field_ref::<Messages>(self.key) {
            return messages.as_slice();
        }
        if let Some(messages) = state.field_ref::<Vec<Message>>(self.key) {
            return messages;
        }
        &[]
    }

    /// The last AI message of `state`, if any.
    pub fn last_ai<S: State + 'static>(self, state: &S) -> Option<&Message> {
        self.read(state)
            .iter()
            .rev()
            .find(|m| m.kind() == MessageKind::Ai)
    }

    /// A delta writing `messages` to the field, through its reducer.
    pub fn delta<S: State>(self, messages: Vec<Message>) -> Result<S::Delta, StateError> {
        let mut update = serde_json::Map::with_capacity(1);
        update.insert(self.key.to_owned(), json!(messages));
        S::Delta::from_json(Value::Object(update))
    }
}

/// Whether `message` asks for tools: tool calls, or calls whose
/// arguments were not JSON (LangChain's `invalid_tool_calls`, which the
/// tool node answers too).
pub(crate) fn asks_for_tools(message: &Message) -> bool {
    !message.tool_calls().is_empty() || !invalid_calls(message).is_empty()
}

/// LangChain's `invalid_tool_calls` of an AI message.
pub(crate) fn invalid_calls(message: &Message) -> &[Value] {
    message
        .extra()
        .get("invalid_tool_calls")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;
    use state_core::{AgentState, MessagesState};

    #[derive(AgentState, Debug, Clone)]
    struct Flat {
        #[state(flatten)]
        base: MessagesState,
        topic: String,
    }

    #[derive(AgentState, Debug, Clone)]
    struct Own {
        #[reducer(add_messages)]
        history: Vec<Message>,
        #[reducer(add_messages)]
        notes: Messages,
    }

    #[derive(AgentState, Debug, Clone)]
    struct NoMessages {
        topic: String,
    }

    #[test]
    fn the_messages_field_is_found_flattened_own_or_named() {
        assert_eq!(
            MessagesField::of::<MessagesState>(None).unwrap().key(),
            "messages"
        );
        assert_eq!(MessagesField::of::<Flat>(None).unwrap().key(), "messages");
        assert!(
            MessagesField::of::<Own>(None)
                .unwrap_err()
                .contains("several")
        );
        assert_eq!(
            MessagesField::of::<Own>(Some("history")).unwrap().key(),
            "history"
        );
        let err = MessagesField::of::<NoMessages>(None).unwrap_err();
        assert!(err.contains("`NoMessages` has no messages field"), "{err}");
        let err = MessagesField::of::<Flat>(Some("topic")).unwrap_err();
        assert!(
            err.contains("does not have the add_messages reducer"),
            "{err}"
        );
    }

    #[test]
    fn messages_are_read_without_json_and_written_through_the_delta() {
        let field = MessagesField::of::<Own>(Some("history")).unwrap();
        let mut s = Own::default();
        s.apply(
            field
                .delta::<Own>(vec![Message::human("hi"), Message::ai("hello")])
                .unwrap(),
        )
        .unwrap();
        assert_eq!(field.read(&s).len(), 2);
        assert_eq!(field.last_ai(&s).unwrap().text(), "hello");
        let flat = MessagesField::of::<Flat>(None).unwrap();
        let mut f = Flat::default();
        f.apply(flat.delta::<Flat>(vec![Message::ai("x")]).unwrap())
            .unwrap();
        assert_eq!(flat.read(&f)[0].text(), "x");
    }
}
