//! `GET /inspect/{id}/events`: what the page of an Agent Server thread
//! follows live. That thread's `GET /threads/{id}/stream` answers the
//! Agent Server's stream of its runs' events; the page only needs to know
//! that a step was committed (by a run, a state update, any process on the
//! database), so this sends `event: step` with the step's seq as `id:` and
//! data, for each step after `?after=` (or `Last-Event-ID`, which a
//! reconnecting `EventSource` sends); `event: end` when the thread is
//! deleted, or rewound below a step sent (`{"reason":"rewound","seq":n}`:
//! a run rolled back).

use crate::error::ApiError;
use crate::extract::{Query, ThreadId};
use crate::routes::App;
use axum::extract::State as Shared;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;
use serde::de::IgnoredAny;
use state_store::StoreError;
use std::convert::Infallible;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EventsQuery {
    after: Option<u64>,
    #[serde(rename = "access_token")]
    _access_token: Option<IgnoredAny>,
}

/// `GET /inspect/{id}/events?after=N`.
pub(crate) async fn events(
    Shared(app): Shared<App>,
    ThreadId(id): ThreadId,
    headers: HeaderMap,
    Query(query): Query<EventsQuery>,
) -> Result<Response, ApiError> {
    let after = match headers.get("last-event-id") {
        Some(value) => {
            let text = value.to_str().unwrap_or("\u{fffd}").trim();
            text.parse().map_err(|_| {
                ApiError::bad_header(format!(
                    "Last-Event-ID must be a step number (the id: of an event of this stream), got {text:?}"
                ))
            })?
        }
        None => query.after.unwrap_or(0),
    };
    // The thread must be there now (a page of it was just shown).
    app.store.thread_info(&id).await?;
    let steps = app.store.watch(&id, after);
    let events = futures::stream::unfold(Some(steps), |steps| async move {
        let mut steps = steps?;
        let event = match steps.next().await? {
            Ok(step) => {
                let seq = step.seq.to_string();
                let event = Event::default().event("step").id(&seq).data(seq);
                return Some((Ok::<_, Infallible>(event), Some(steps)));
            }
            Err(StoreError::ThreadDeleted { .. } | StoreError::ThreadNotFound { .. }) => {
                Event::default()
                    .event("end")
                    .data(r#"{"reason":"deleted"}"#)
            }
            // A run rolled back: the steps shown past `seq` are gone.
            Err(StoreError::ThreadRewound { seq, .. }) => Event::default()
                .event("end")
                .data(format!(r#"{{"reason":"rewound","seq":{seq}}}"#)),
            Err(error) => Event::default()
                .event("error")
                .data(ApiError::from(error).body().to_string()),
        };
        // The last event: the stream ends after it.
        Some((Ok(event), None))
    });
    let keep_alive = KeepAlive::new().interval(app.keep_alive).text("keep-alive");
    Ok(Sse::new(events).keep_alive(keep_alive).into_response())
}
