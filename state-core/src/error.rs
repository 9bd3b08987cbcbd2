//! The errors of this crate: [`StateError`] for whole-state operations and
//! [`ReduceError`] for a single reducer.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a state operation failed. Every variant names the field (or dotted
/// path) it concerns; on any error the state is left exactly as it was.
///
/// ```
/// use serde_json::json;
/// use state_core::{AgentState, State, StateError};
///
/// #[derive(AgentState)]
/// struct Chat {
///     next: String,
/// }
///
/// let mut chat = Chat::default();
/// match chat.apply_json(json!({"nxt": "tools"})) {
///     Err(StateError::UnknownField { field, suggestion, .. }) => {
///         assert_eq!((field.as_str(), suggestion.as_deref()), ("nxt", Some("next")));
///     }
///     other => panic!("expected an unknown field, got {other:?}"),
/// }
/// let err = chat.set("next", json!(3)).unwrap_err();
/// assert_eq!(err.field(), Some("next"));
/// assert_eq!(err.to_string(), r#"field "next": expected String, got integer `3`"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StateError {
    /// A key that is not a field of the state.
    UnknownField {
        /// The state the key was looked up in (for a dotted path, the state
        /// the path starts from).
        state: String,
        /// The key as given.
        field: String,
        /// The nearest real field name, when one is close.
        suggestion: Option<String>,
    },
    /// Two writes to a last-write-wins field in one step (LangGraph's
    /// `InvalidUpdateError` for a key without a reducer).
    ConcurrentWrite {
        /// The field written twice.
        field: String,
    },
    /// Two overwrites of one field in one step.
    ConcurrentOverwrite {
        /// The field overwritten twice.
        field: String,
    },
    /// A field's reducer refused an update. What it said is the error's
    /// [`source`](Error::source), not part of this message, so a report
    /// that prints the chain prints it once. A custom reducer's own error
    /// is itself the source, so walking the chain with `downcast_ref`
    /// (as `anyhow` and error reporters do) finds it:
    ///
    /// ```
    /// use state_core::{ReduceError, StateError};
    /// use std::error::Error;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("would go negative")]
    /// struct BudgetError;
    ///
    /// let err = StateError::Reduce {
    ///     field: "budget".into(),
    ///     source: ReduceError::custom(BudgetError),
    /// };
    /// assert_eq!(err.to_string(), r#"field "budget": the reducer refused the update"#);
    /// let source = err.source().unwrap();
    /// assert_eq!(source.to_string(), "would go negative");
    /// assert!(source.downcast_ref::<BudgetError>().is_some());
    /// ```
    Reduce {
        /// The field whose reducer failed.
        field: String,
        /// What the reducer said.
        source: ReduceError,
    },
    /// A value of the wrong shape for a field.
    Type {
        /// The field (or dotted path).
        field: String,
        /// What the field accepts.
        expected: String,
        /// What was given, described briefly.
        got: String,
    },
    /// A dotted path that does not lead anywhere inside a field's value.
    Path {
        /// The whole dotted path as given.
        path: String,
        /// Why it could not be followed.
        reason: String,
    },
    /// A field whose value cannot be written as JSON (e.g. a map with
    /// non-string keys).
    Serialize {
        /// The field.
        field: String,
        /// serde's explanation.
        message: String,
    },
    /// A state with `#[state(serde = "user")]` whose own `Serialize` or
    /// `Deserialize` refused: serde's message, which names the field when
    /// serde knows it.
    UserSerde {
        /// The state.
        state: String,
        /// serde's explanation.
        message: String,
    },
    /// A state or delta given as JSON that is not a JSON object.
    NotAnObject {
        /// What was given, described briefly.
        got: String,
    },
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::UnknownField {
                state,
                field,
                suggestion,
            } => write!(
                f,
                "`{state}` has no field `{field}`{}",
                Suggestion(suggestion.as_deref())
            ),
            StateError::ConcurrentWrite { field } => write!(
                f,
                "concurrent writes to \"{field}\" in one step; give the field a reducer"
            ),
            StateError::ConcurrentOverwrite { field } => write!(
                f,
                "concurrent overwrites of \"{field}\" in one step; only one overwrite per step is allowed"
            ),
            StateError::Reduce { field, .. } => {
                write!(f, "field \"{field}\": the reducer refused the update")
            }
            StateError::Type {
                field,
                expected,
                got,
            } => write!(f, "field \"{field}\": expected {expected}, got {got}"),
            StateError::Path { path, reason } => write!(f, "path \"{path}\": {reason}"),
            StateError::Serialize { field, message } => {
                write!(f, "field \"{field}\": cannot be written as JSON: {message}")
            }
            StateError::UserSerde { state, message } => {
                write!(f, "`{state}` (its own serde impls): {message}")
            }
            StateError::NotAnObject { got } => {
                write!(f, "expected a JSON object of fields, got {got}")
            }
        }
    }
}

/// Written by hand for one reason: a custom reducer's error is the source
/// itself, not the [`ReduceError`] around it, so the standard chain walk
/// finds the user's type.
impl Error for StateError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            StateError::Reduce {
                source: ReduceError::Custom(custom),
                ..
            } => Some(custom.get_ref()),
            StateError::Reduce { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Renders ``; did you mean `x`?`` when there is a suggestion.
struct Suggestion<'a>(Option<&'a str>);

impl fmt::Display for Suggestion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(name) => write!(f, "; did you mean `{name}`?"),
            None => Ok(()),
        }
    }
}

impl StateError {
    /// An [`StateError::UnknownField`] for `field` of the state `state`,
    /// suggesting the closest of `known` when it is close enough to be a
    /// likely typo.
    ///
    /// ```
    /// use state_core::StateError;
    /// let err = StateError::unknown_field("ChatState", "mesages", &["messages", "next"]);
    /// assert_eq!(err.to_string(), "`ChatState` has no field `mesages`; did you mean `messages`?");
    /// ```
    pub fn unknown_field(state: &str, field: &str, known: &[&str]) -> Self {
        StateError::UnknownField {
            state: state.to_owned(),
            field: field.to_owned(),
            suggestion: closest(field, known).map(str::to_owned),
        }
    }

    /// The same error, seen from the state `state`: an unknown field found
    /// below one of its fields or bases is reported as `state`'s, since the
    /// path names it from there. Other errors are unchanged.
    pub(crate) fn seen_from(self, state: &str) -> StateError {
        match self {
            StateError::UnknownField {
                state: inner,
                field,
                suggestion,
            } if inner != state => StateError::UnknownField {
                state: state.to_owned(),
                field,
                suggestion,
            },
            other => other,
        }
    }

    /// The same error about a field of the nested state at `prefix`: its
    /// field (or path) becomes `prefix.field`, and a suggestion likewise.
    ///
    /// ```
    /// use state_core::StateError;
    /// let inner = StateError::ConcurrentWrite { field: "route".into() };
    /// assert_eq!(
    ///     inner.within("routing").to_string(),
    ///     r#"concurrent writes to "routing.route" in one step; give the field a reducer"#
    /// );
    /// ```
    #[must_use]
    pub fn within(self, prefix: &str) -> StateError {
        let join = |field: String| format!("{prefix}.{field}");
        match self {
            StateError::UnknownField {
                state,
                field,
                suggestion,
            } => StateError::UnknownField {
                state,
                field: join(field),
                suggestion: suggestion.map(join),
            },
            StateError::ConcurrentWrite { field } => {
                StateError::ConcurrentWrite { field: join(field) }
            }
            StateError::ConcurrentOverwrite { field } => {
                StateError::ConcurrentOverwrite { field: join(field) }
            }
            StateError::Reduce { field, source } => StateError::Reduce {
                field: join(field),
                source,
            },
            StateError::Type {
                field,
                expected,
                got,
            } => StateError::Type {
                field: join(field),
                expected,
                got,
            },
            StateError::Path { path, reason } => StateError::Path {
                path: join(path),
                reason,
            },
            StateError::Serialize { field, message } => StateError::Serialize {
                field: join(field),
                message,
            },
            StateError::UserSerde { state, message } => StateError::UserSerde {
                state,
                message: format!("in \"{prefix}\": {message}"),
            },
            StateError::NotAnObject { got } => StateError::Type {
                field: prefix.to_owned(),
                expected: "a JSON object of the nested state's fields".to_owned(),
                got,
            },
        }
    }

    /// The error of a reducer on `field`: a nested state's own error is
    /// lifted with its path under `field`.
    pub(crate) fn reduce(field: &str, source: ReduceError) -> StateError {
        match source {
            ReduceError::Nested(inner) => inner.within(field),
            source => StateError::Reduce {
                field: field.to_owned(),
                source,
            },
        }
    }

    /// The field (or dotted path) this error is about, when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            StateError::UnknownField { field, .. }
            | StateError::ConcurrentWrite { field }
            | StateError::ConcurrentOverwrite { field }
            | StateError::Reduce { field, .. }
            | StateError::Type { field, .. }
            | StateError::Serialize { field, .. } => Some(field),
            StateError::Path { path, .. } => Some(path),
            StateError::NotAnObject { .. } | StateError::UserSerde { .. } => None,
        }
    }
}

/// The name in `known` nearest to `name`, if it is a plausible typo of it.
pub(crate) fn closest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::jaro_winkler(name, k), *k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// Why a reducer refused an update. The target is unchanged when a reducer
/// returns one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReduceError {
    /// A removal named a message id that is not in the history (LangGraph:
    /// `Attempting to delete a message with an ID that doesn't exist`).
    #[error("cannot remove message \"{id}\": no message has that id")]
    MissingMessageId {
        /// The id that was not found.
        id: String,
    },
    /// A custom reducer's own error, kept whole: its message is this
    /// error's, and [`CustomError::downcast_ref`] gives back its type.
    #[error(transparent)]
    Custom(CustomError),
    /// A nested state refused its delta: the inner error, whose field path
    /// is relative to the nested state.
    #[error("{0}")]
    Nested(Box<StateError>),
}

impl ReduceError {
    /// A [`ReduceError::Custom`] from any error, or from a message (`&str`
    /// or `String`).
    ///
    /// ```
    /// use state_core::ReduceError;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("{have} is over the budget of {max}")]
    /// struct OverBudget {
    ///     have: u32,
    ///     max: u32,
    /// }
    ///
    /// let err = ReduceError::custom(OverBudget { have: 11, max: 10 });
    /// assert_eq!(err.to_string(), "11 is over the budget of 10");
    /// let ReduceError::Custom(custom) = &err else { unreachable!() };
    /// assert_eq!(custom.downcast_ref::<OverBudget>().map(|e| e.have), Some(11));
    /// assert_eq!(ReduceError::custom("too big").to_string(), "too big");
    /// ```
    pub fn custom(error: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        ReduceError::Custom(CustomError::new(error))
    }
}

/// A custom reducer's error, of the reducer's own type: `Display` and
/// [`source`](Error::source) are its own, and [`downcast_ref`] gives it
/// back. Cloning shares it; two are equal when their messages are, so that
/// errors compare in tests.
///
/// [`downcast_ref`]: CustomError::downcast_ref
#[derive(Clone)]
pub struct CustomError(Arc<dyn Error + Send + Sync>);

impl CustomError {
    /// Wraps `error` (an error, or a message as `&str` or `String`).
    pub fn new(error: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        CustomError(Arc::from(error.into()))
    }

    /// The error as its own type `E`, when it is one.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref()
    }

    /// The error itself.
    pub fn get_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Debug for CustomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for CustomError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl Error for CustomError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for CustomError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.to_string() == other.to_string()
    }
}

impl Eq for CustomError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_field_suggests_nearest_name() {
        let err = StateError::unknown_field("Chat", "nxt", &["messages", "next", "error"]);
        assert_eq!(
            err.to_string(),
            "`Chat` has no field `nxt`; did you mean `next`?"
        );
        assert_eq!(err.field(), Some("nxt"));
    }

    #[test]
    fn unknown_field_without_close_name_has_no_suggestion() {
        let err = StateError::unknown_field("Chat", "zzzz", &["messages", "next"]);
        assert_eq!(err.to_string(), "`Chat` has no field `zzzz`");
    }

    #[test]
    fn messages_name_the_field() {
        let err = StateError::ConcurrentWrite {
            field: "next".into(),
        };
        assert_eq!(
            err.to_string(),
            r#"concurrent writes to "next" in one step; give the field a reducer"#
        );
        let err = StateError::Reduce {
            field: "messages".into(),
            source: ReduceError::MissingMessageId { id: "9".into() },
        };
        assert_eq!(
            err.to_string(),
            r#"field "messages": the reducer refused the update"#
        );
        let source = err.source().map(ToString::to_string);
        assert_eq!(
            source.as_deref(),
            Some(r#"cannot remove message "9": no message has that id"#)
        );
    }

    /// A report chain prints a reducer's message once.
    #[test]
    fn a_chain_prints_the_reducers_message_once() {
        let err = StateError::Reduce {
            field: "budget".into(),
            source: ReduceError::custom("would go negative"),
        };
        let mut chain = vec![err.to_string()];
        let mut next = err.source();
        while let Some(cause) = next {
            chain.push(cause.to_string());
            next = cause.source();
        }
        assert_eq!(
            chain,
            [
                r#"field "budget": the reducer refused the update"#,
                "would go negative"
            ]
        );
    }
}
