//! A run's stored events, read from the store until the run has ended
//! ([`run_events`]: what the v3 thread protocol shapes), and as SSE frames
//! ([`follow`]: what `runs/stream`, `join_stream` and the thread stream
//! send). The events come from the store, not from the worker, so any
//! process serving the database streams any run, and a client that
//! reconnects with `Last-Event-ID` gets what it missed.

use super::sse;
use crate::error::ApiError;
use crate::routes::App;
use axum::body::Bytes;
use axum::http::HeaderValue;
use futures::StreamExt;
use serde_json::json;
use state_store::RunEvent;
use std::convert::Infallible;

/// Where an event stands in the stream: the millisecond it was stored,
/// then its number in its run. Within a run the number orders events;
/// across a thread's runs (one at a time) the millisecond does.
pub(crate) type EventKey = (u64, u64);

/// An event's key.
pub(crate) fn key_of(event: &RunEvent) -> EventKey {
    (crate::json::millis(event.recorded_at), event.seq)
}

/// An event's SSE id: `<epoch-ms>-<seq>` (the Agent Server's form; read
/// back by [`event_key`]).
pub(crate) fn event_id((ms, seq): EventKey) -> String {
    format!("{ms}-{seq}")
}

/// The key a `Last-Event-ID` names; `None` without one, or for `-1` or
/// `-` (the Agent Server's "from the start").
pub(crate) fn event_key(header: Option<&HeaderValue>) -> Result<Option<EventKey>, ApiError> {
    let Some(value) = header else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| ApiError::bad_header("Last-Event-ID is not text"))?
        .trim();
    if text == "-1" || text == "-" || text.is_empty() {
        return Ok(None);
    }
    text.split_once('-')
        .and_then(|(ms, seq)| Some((ms.parse().ok()?, seq.parse().ok()?)))
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_header(format!(
                "Last-Event-ID \"{text}\" is not an event id (<ms>-<seq>) or -1"
            ))
        })
}

/// Makes the frame that ends a run's part of a stream, from its last
/// event's key (`None` when it stored none); `None` sends nothing.
pub(crate) type DoneFrame = Box<dyn FnOnce(Option<EventKey>) -> Option<Bytes> + Send>;

/// Which of a run's events a stream sends, and how.
#[derive(Clone, Copy)]
pub(crate) struct Frames {
    /// Whether each event carries its `id:` (a resumable run, a join, the
    /// thread stream).
    pub ids: bool,
    /// Only events after this one (a resumed thread stream).
    pub after_key: Option<EventKey>,
    /// Whether an event of this name is sent.
    pub keep: fn(&str) -> bool,
}

impl Frames {
    /// Every event, with ids or without.
    pub(crate) fn all(ids: bool) -> Frames {
        Frames {
            ids,
            after_key: None,
            keep: |_| true,
        }
    }

    /// Whether `event` is sent.
    fn sends(&self, event: &RunEvent) -> bool {
        (self.keep)(&event.event) && self.after_key.is_none_or(|after| key_of(event) > after)
    }
}

/// What following a run's events yields.
pub(crate) enum Followed {
    /// The events stored since the last read, in order.
    Events(Vec<RunEvent>),
    /// Nothing for [`sse::HEARTBEAT`]: time for a heartbeat.
    Silent,
    /// The store failed; nothing follows.
    Failed(String),
}

/// Where a stream of a run's events is: the last event read, and the
/// watch that wakes it (made before the first read, so that no event
/// stored between a read and the wait is missed).
struct Following {
    app: App,
    run_id: String,
    after: u64,
    watch: state_store::RunWatch,
    ended: bool,
    /// Whether the run's row was read since it last changed (its events
    /// do not change it), and whether it had ended then.
    row_read: Option<bool>,
}

/// The run's events after the `after`-th, from the store, in batches as
/// they are stored, until it has ended and every event is read.
pub(crate) fn run_events(
    app: App,
    run_id: String,
    after: u64,
) -> impl futures::Stream<Item = Followed> + Send {
    let watch = app.store.watch_run(&run_id);
    let start = Following {
        app,
        run_id,
        after,
        watch,
        ended: false,
        row_read: None,
    };
    futures::stream::unfold(start, |mut at| async move {
        if at.ended {
            return None;
        }
        loop {
            // The status first: events stored before it ended are read
            // after, so none is left behind. Read again only when the
            // row changed (marked seen before the read: a change after it
            // is seen at the next turn), not at every event.
            if at.watch.row_changed() {
                at.row_read = None;
            }
            let ended = match at.row_read {
                Some(ended) => ended,
                None => match at.app.store.get_run(&at.run_id, None).await {
                    Ok(Some(run)) => *at.row_read.insert(run.status.is_final()),
                    Ok(None) => *at.row_read.insert(true),
                    Err(_) => false,
                },
            };
            match at.app.store.run_events(&at.run_id, at.after, 256).await {
                Ok(events) if !events.is_empty() => {
                    at.after = events.last().map_or(at.after, |event| event.seq);
                    return Some((Followed::Events(events), at));
                }
                Ok(_) if ended => return None,
                Ok(_) => {}
                Err(error) => {
                    at.ended = true;
                    return Some((Followed::Failed(error.to_string()), at));
                }
            }
            if tokio::time::timeout(sse::HEARTBEAT, at.watch.changed())
                .await
                .is_err()
            {
                return Some((Followed::Silent, at));
            }
        }
    })
}

/// The run's events after the `after`-th, from the store, as SSE frames,
/// until it has ended and every event is sent; a heartbeat while it is
/// silent. With `done`, a last frame made from the last event's key
/// (`None` when the run stored none).
pub(crate) fn follow(
    app: App,
    run_id: String,
    after: u64,
    frames: Frames,
    done: Option<DoneFrame>,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send {
    let events = Box::pin(run_events(app, run_id, after));
    // The key of the last event read (the thread stream's `run_done`
    // follows it).
    let last: Option<EventKey> = None;
    futures::stream::unfold(Some((events, done, last)), move |at| async move {
        let (mut events, mut done, mut last) = at?;
        loop {
            match events.next().await {
                Some(Followed::Events(batch)) => {
                    let mut out = Vec::new();
                    for event in &batch {
                        if frames.sends(event) {
                            let id = frames.ids.then(|| event_id(key_of(event)));
                            out.extend_from_slice(&sse::frame(
                                &event.event,
                                &event.data,
                                id.as_deref(),
                            ));
                        }
                        last = Some(key_of(event));
                    }
                    if !out.is_empty() {
                        return Some((Ok(Bytes::from(out)), Some((events, done, last))));
                    }
                }
                Some(Followed::Silent) => {
                    let heartbeat = Bytes::from_static(sse::HEARTBEAT_FRAME);
                    return Some((Ok(heartbeat), Some((events, done, last))));
                }
                Some(Followed::Failed(message)) => {
                    let data = json!({"error": "StoreError", "message": message});
                    return Some((Ok(sse::frame("error", &data, None)), None));
                }
                None => {
                    let frame = done.take().and_then(|done| done(last))?;
                    return Some((Ok(frame), None));
                }
            }
        }
    })
}
