//! The run workers: tasks of the serving process that claim the store's
//! pending runs (the first run created starts them), run each on its
//! graph, and store its events and its end, so that every API process
//! reading the same database streams them.

use super::assistants::Assistants;
use super::served::{RunRequest, Streamed};
use super::stream_mode::{StreamModeField, modes};
use futures::StreamExt;
use serde_json::{Value, json};
use state_store::{Claim, LeaseState, RunEventIn, RunStatus, Store, ThreadStatus};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long a claim holds a run without a renewal; renewed at a third of
/// it, so a worker that dies frees its runs within this.
const LEASE: Duration = Duration::from_secs(30);

/// How many runs the serving process runs at once.
const WORKERS: usize = 8;

/// The workers of one server, started once.
#[derive(Default)]
pub(crate) struct Workers {
    started: OnceLock<()>,
}

impl Workers {
    /// Starts the workers, the first time only (from a request: inside
    /// the server's runtime).
    pub(crate) fn start(&self, store: &Store, assistants: &Arc<Assistants>) {
        self.started.get_or_init(|| {
            for n in 0..WORKERS {
                let (store, assistants) = (store.clone(), assistants.clone());
                let name = format!("{}-{n}", uuid::Uuid::new_v4());
                tokio::spawn(async move { work(store, assistants, name).await });
            }
        });
    }
}

/// Claims and runs runs until the store is gone; a store error waits a
/// second and tries again (the database may come back).
async fn work(store: Store, assistants: Arc<Assistants>, name: String) {
    let mut wakeups = store.run_wakeups();
    loop {
        match store.claim_run(&name, LEASE).await {
            Ok(Some(claim)) => {
                execute(&store, &assistants, claim).await;
                continue;
            }
            Ok(None) => {}
            Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
        }
        if wakeups.next().await.is_err() {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}

/// What the run asked for, from its stored request.
fn request_of(kwargs: &Value) -> Result<RunRequest, String> {
    let field: Option<StreamModeField> = match kwargs.get("stream_mode") {
        None | Some(Value::Null) => None,
        Some(value) => {
            Some(serde_json::from_value(value.clone()).map_err(|e| format!("stream_mode: {e}"))?)
        }
    };
    Ok(RunRequest {
        input: kwargs.get("input").filter(|v| !v.is_null()).cloned(),
        resume: kwargs
            .get("command")
            .and_then(|c| c.get("resume"))
            .filter(|v| !v.is_null())
            .cloned(),
        modes: modes(field.as_ref()).map_err(|e| e.message().to_owned())?,
        subgraphs: kwargs.get("stream_subgraphs") == Some(&Value::Bool(true)),
    })
}

/// Runs one claimed run to its end: the `metadata` event, the graph's
/// events, then `error` if it failed; the run finished as success,
/// interrupted or error. A lost lease stops it writing.
async fn execute(store: &Store, assistants: &Assistants, claim: Claim) {
    let run = claim.run().clone();
    let thread = run.thread_id.clone().unwrap_or_else(|| run.run_id.clone());
    let append = |event: &str, data: Value| {
        let batch = [RunEventIn::new(event, data)];
        let store = store.clone();
        let claim = &claim;
        async move { store.append_run_events(claim, &batch).await }
    };
    let fail = |message: String| json!({"error": "Error", "message": message});
    let metadata = json!({"run_id": run.run_id, "attempt": claim.attempt()});
    if !matches!(append("metadata", metadata).await, Ok(Some(_))) {
        return;
    }
    let assistant = assistants.find(&run.assistant_id);
    let (status, thread_status) = match (assistant, request_of(&run.kwargs)) {
        (None, _) => {
            let message = format!("assistant {} is not served here", run.assistant_id);
            let _ = append("error", fail(message)).await;
            (RunStatus::Error, None)
        }
        (_, Err(message)) => {
            let _ = append("error", fail(message)).await;
            (RunStatus::Error, None)
        }
        (Some(assistant), Ok(request)) => {
            // The graph runs in a task of its own: storing an event must
            // not hold up its next step (on SQLite both write).
            let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
            let mut graph = assistant.served.run(thread.clone(), request);
            let driver = tokio::spawn(async move {
                while let Some(item) = graph.next().await {
                    if tx.send(item).is_err() {
                        break;
                    }
                }
            });
            let mut renewed = Instant::now();
            let mut end = (RunStatus::Error, None);
            // A cancel is seen at once: the run's watch wakes on it (and on
            // the run's own events, when the read finds none).
            let mut watch = store.watch_run(&run.run_id);
            loop {
                let item = tokio::select! {
                    item = events.recv() => match item {
                        Some(item) => item,
                        None => break,
                    },
                    () = watch.changed() => {
                        match store.get_run(&run.run_id, None).await {
                            Ok(Some(now)) if now.cancel.is_none() => continue,
                            // Cancelled, or deleted with its thread.
                            _ => {
                                end = (RunStatus::Interrupted, None);
                                break;
                            }
                        }
                    }
                };
                if renewed.elapsed() > LEASE / 3 {
                    match store.renew_run(&claim, LEASE).await {
                        Ok(LeaseState::Held) => renewed = Instant::now(),
                        Ok(LeaseState::Cancel(_)) => {
                            end = (RunStatus::Interrupted, None);
                            break;
                        }
                        Ok(LeaseState::Lost) | Err(_) => {
                            driver.abort();
                            return;
                        }
                    }
                }
                match item {
                    Ok(Streamed::Event(name, data)) => match append(&name, data).await {
                        Ok(Some(_)) => {}
                        Ok(None) => {
                            // The lease was lost: another worker has the run.
                            driver.abort();
                            return;
                        }
                        Err(error) => {
                            let _ = append("error", fail(error.to_string())).await;
                            end = (RunStatus::Error, None);
                            break;
                        }
                    },
                    Ok(Streamed::Paused) => {
                        end = (RunStatus::Interrupted, Some(ThreadStatus::Interrupted));
                    }
                    Ok(Streamed::Done) => end = (RunStatus::Success, None),
                    Err(error) => {
                        let data = json!({"error": error.kind(), "message": error.message()});
                        let _ = append("error", data).await;
                        end = (RunStatus::Error, None);
                    }
                }
            }
            driver.abort();
            end
        }
    };
    let _ = store.finish_run(&claim, status, thread_status).await;
    if run.thread_id.is_none() {
        // A stateless run's thread is its own, gone with it (LangGraph's
        // `on_completion="delete"`).
        let _ = store.delete_thread(&thread).await;
    }
}
