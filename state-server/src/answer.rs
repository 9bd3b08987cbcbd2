//! Answering a pending interrupt from the inspector: the graph that paused
//! the thread, behind a plain function so that the server stays untyped
//! (a state type is checked once, when the router is made).

use crate::error::ApiError;
use futures::future::BoxFuture;
use serde_json::Value;
use std::any::TypeId;
use std::sync::Arc;

/// Answers interrupt `.1` of thread `.0` with `.2`: checks it is pending,
/// then resumes the run in the background (a run may take long; the page
/// follows it live).
pub(crate) type AnswerFn =
    Arc<dyn Fn(String, String, Value) -> BoxFuture<'static, Result<(), ApiError>> + Send + Sync>;

/// A graph that answers interrupts, and the state type it runs.
#[derive(Clone)]
pub(crate) struct Answerer {
    pub state: TypeId,
    pub state_name: &'static str,
    pub answer: AnswerFn,
}

#[cfg(feature = "graph")]
impl Answerer {
    /// Answers with `graph` (which must have a store: the server's).
    pub(crate) fn of<S>(graph: state_graph::CompiledGraph<S>) -> Answerer
    where
        S: state_core::State + Clone + serde::Serialize + Send + Sync + 'static,
        S::Delta: serde::Serialize + Clone + Send + Sync + 'static,
    {
        let answer: AnswerFn = Arc::new(move |thread, id, value| {
            let graph = graph.clone();
            Box::pin(async move {
                let pending = graph
                    .pending_interrupts(&thread)
                    .await
                    .map_err(ApiError::graph)?;
                if !pending.iter().any(|interrupt| interrupt.id == id) {
                    return Err(ApiError::not_pending(&thread, &id));
                }
                // The run goes on after the answer is sent: its steps reach
                // the page through the event stream; a failure is logged on
                // the thread by the runner (a `pending` step naming it).
                tokio::spawn(async move {
                    let _ = graph
                        .resume(&thread, state_graph::Resume::by_id([(id, value)]))
                        .await;
                });
                Ok(())
            })
        });
        Answerer {
            state: TypeId::of::<S>(),
            state_name: std::any::type_name::<S>(),
            answer,
        }
    }
}

/// What a person typed as an answer: JSON when it parses as JSON (`true`,
/// `42`, `{"ok": true}`, `"yes"`), else the text itself.
pub(crate) fn parse_answer(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_is_json_when_it_parses_and_text_otherwise() {
        assert_eq!(parse_answer("yes"), json!("yes"));
        assert_eq!(parse_answer(" true "), json!(true));
        assert_eq!(parse_answer("42"), json!(42));
        assert_eq!(parse_answer(r#"{"ok": true}"#), json!({"ok": true}));
        assert_eq!(parse_answer(r#""quoted""#), json!("quoted"));
        assert_eq!(parse_answer("yes, book it"), json!("yes, book it"));
    }
}
