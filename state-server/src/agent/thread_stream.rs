//! `GET /threads/{id}/stream` on an Agent Server thread (`join_stream` of
//! a thread, in the SDK): the events of the thread's runs, one run after
//! the other, each ended by `metadata` `{"status": "run_done", "run_id"}`,
//! every event with its `id:`; the stream stays open for the runs to come.
//!
//! Without `Last-Event-ID` it starts with the runs pending or running;
//! with one, it replays what came after that event (`-1` or `-`: every
//! run of the thread, as far as its latest 100). Ids are `<epoch-ms>-<n>`,
//! `n` the event's number in its run: a thread runs one run at a time,
//! so the millisecond orders events across runs (two runs' events stored
//! in the same millisecond are the one case it cannot tell apart).

use super::follow::{DoneFrame, Frames, event_id, event_key, follow};
use super::sse;
use crate::error::ApiError;
use crate::routes::App;
use axum::body::Bytes;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use futures::{Stream, StreamExt};
use serde_json::json;
use state_store::{RunFilter, RunWakeups};
use std::collections::HashSet;
use std::convert::Infallible;
use std::pin::Pin;

/// How many of a thread's runs the stream looks at: its latest.
const RUNS: usize = 100;

/// Which events a thread stream sends (`stream_mode`, one or several).
fn keep_of(uri: &Uri) -> Result<fn(&str) -> bool, ApiError> {
    let crate::extract::Query(pairs) = crate::extract::Query::<Vec<(String, String)>>::of(uri)?;
    let (mut lifecycle, mut run_modes, mut state_update) = (false, false, false);
    for (name, value) in &pairs {
        match name.as_str() {
            "stream_mode" | "stream_modes" => {}
            // The token of a browser's `EventSource` (the guard reads it).
            "access_token" => continue,
            other => {
                return Err(ApiError::bad_query(format!(
                    "unknown query parameter {other:?}; expected stream_mode"
                )));
            }
        }
        match value.as_str() {
            "lifecycle" => lifecycle = true,
            "run_modes" => run_modes = true,
            "state_update" => state_update = true,
            other => {
                return Err(ApiError::bad_query(format!(
                    "stream_mode: expected lifecycle, run_modes or state_update, got {other:?}"
                )));
            }
        }
    }
    Ok(match (lifecycle, run_modes, state_update) {
        (_, true, _) | (false, false, false) => |_| true,
        (true, false, false) => |event| event == "metadata",
        (false, false, true) => |event| event == "values" || event == "updates",
        (true, false, true) => |event| matches!(event, "metadata" | "values" | "updates"),
    })
}

/// The stream's answer (the thread is one of the Agent Server's).
pub(crate) async fn open(
    app: App,
    thread: String,
    uri: &Uri,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let keep = keep_of(uri)?;
    let header = headers.get("last-event-id");
    let after_key = event_key(header)?;
    let permit = app.streams.acquire()?;
    let from_start = header.is_some() && after_key.is_none();
    // The runs already over are not streamed again, but for a resumed
    // stream those that ended after its last event.
    let runs = app
        .store
        .list_runs(Some(&thread), RunFilter::default().limit(RUNS))
        .await?;
    let seen: HashSet<String> = runs
        .into_iter()
        .filter(|run| {
            !from_start
                && run.status.is_final()
                && after_key.is_none_or(|(ms, _)| crate::json::millis(run.updated_at) < ms)
        })
        .map(|run| run.run_id)
        .collect();
    let start = Following {
        wakeups: app.store.run_wakeups(),
        app,
        thread,
        seen,
        frames: Frames {
            ids: true,
            after_key,
            keep,
        },
        current: None,
    };
    Ok(sse::response(events(start), permit))
}

/// One run's frames.
type RunFrames = Pin<Box<dyn Stream<Item = Result<Bytes, Infallible>> + Send>>;

/// Where a thread stream is.
struct Following {
    app: App,
    thread: String,
    /// The runs streamed (or skipped) already.
    seen: HashSet<String>,
    frames: Frames,
    /// The run being streamed.
    current: Option<RunFrames>,
    /// Wakes the stream when a run is created.
    wakeups: RunWakeups,
}

/// The frames of the thread's runs, oldest first, then of each new one.
fn events(start: Following) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    futures::stream::unfold(Some(start), |at| async move {
        let mut at = at?;
        loop {
            if let Some(current) = at.current.as_mut() {
                match current.next().await {
                    Some(frame) => return Some((frame, Some(at))),
                    None => at.current = None,
                }
            }
            let runs = at
                .app
                .store
                .list_runs(Some(&at.thread), RunFilter::default().limit(RUNS))
                .await;
            let runs = match runs {
                Ok(runs) => runs,
                Err(error) => {
                    let data = json!({"error": "StoreError", "message": error.to_string()});
                    return Some((Ok(sse::frame("error", &data, None)), None));
                }
            };
            if let Some(run) = runs.iter().rev().find(|run| !at.seen.contains(&run.run_id)) {
                at.seen.insert(run.run_id.clone());
                at.current = Some(Box::pin(follow(
                    at.app.clone(),
                    run.run_id.clone(),
                    0,
                    at.frames,
                    Some(run_done(run.run_id.clone(), at.frames)),
                )));
                continue;
            }
            // The thread was deleted (a failed read is not taken for that:
            // the stream waits and reads again).
            if runs.is_empty()
                && matches!(at.app.store.thread_record(&at.thread, None).await, Ok(None))
            {
                return None;
            }
            match tokio::time::timeout(sse::HEARTBEAT, at.wakeups.next()).await {
                Err(_) => return Some((Ok(Bytes::from_static(sse::HEARTBEAT_FRAME)), Some(at))),
                Ok(Ok(_)) => {}
                // The store's notifications failed: look again in a while.
                Ok(Err(_)) => tokio::time::sleep(sse::HEARTBEAT).await,
            }
        }
    })
}

/// The frame that ends a run in the thread stream, its id after the
/// run's last event.
fn run_done(run_id: String, frames: Frames) -> DoneFrame {
    Box::new(move |last| {
        let key = match last {
            Some((ms, seq)) => (ms, seq + 1),
            None => (crate::json::millis(std::time::SystemTime::now()), 0),
        };
        let sent = (frames.keep)("metadata") && frames.after_key.is_none_or(|after| key > after);
        sent.then(|| {
            let data = json!({"status": "run_done", "run_id": run_id});
            sse::frame("metadata", &data, Some(&event_id(key)))
        })
    })
}
