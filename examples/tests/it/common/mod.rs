//! What the graph tests share: the stored log of a thread, one line per
//! step.

use state_store::{StepKind, Store};

/// The steps of `thread` from `from`, one line each: a new run's turn
/// reset with its input (`begin_turn __start__`), a node's superstep (its
/// name, from the metadata), a pause (`pending`).
pub async fn log(store: &Store, thread: &str, from: u64) -> Vec<String> {
    let steps = store.history(thread, from..).await.expect("the log reads");
    steps
        .iter()
        .map(|step| {
            let names = step.nodes();
            match step.kind {
                // A new run: the turn reset and the input, one step.
                StepKind::BeginTurn => format!("begin_turn {}", names.join(",")),
                StepKind::Pending => "pending".to_owned(),
                _ => {
                    assert_eq!(names.len(), 1, "one node per superstep: {step:?}");
                    names.join(",")
                }
            }
        })
        .collect()
}
