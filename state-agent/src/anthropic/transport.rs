//! One call's HTTP: the request posted with its headers, the retries
//! before a reply begins (rate limits after their `retry-after`, overloaded
//! and other server errors, broken connections and timeouts), the reply
//! read whole or as server-sent events, each wait bounded by the timeout.

use super::error::from_status;
use super::response::from_response;
use super::stream::{StreamState, on_event};
use super::wire::streams_plain_text;
use crate::error::{ModelError, ModelErrorKind};
use crate::model::ChunkStream;
use crate::retry;
use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::pin::Pin;
use std::time::Duration;

/// The API version every request names (`anthropic-version`).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// One call's HTTP: where, with which key, how patiently.
pub(super) struct Call {
    pub(super) client: reqwest::Client,
    pub(super) url: String,
    pub(super) key: String,
    pub(super) timeout: Duration,
    pub(super) max_retries: u32,
}

impl Call {
    /// The reply to `body`: one chunk (non-streamed), or the chunks of its
    /// events.
    pub(super) async fn run(self, body: Value, streaming: bool) -> Result<ChunkStream, ModelError> {
        let plain_text = streams_plain_text(&body);
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| ModelError::new("anthropic", ModelErrorKind::BadRequest).with_source(e))?;
        if streaming {
            let response = self.with_retries(|| self.send(&bytes)).await?;
            return Ok(events(response, StreamState::new(plain_text), self.timeout));
        }
        let chunk = self
            .with_retries(|| async {
                let response = self.send(&bytes).await?;
                let text = within(self.timeout, response.text()).await?;
                let body: Value = serde_json::from_str(&text).map_err(|e| {
                    ModelError::new("anthropic", ModelErrorKind::Decode)
                        .with_message(format!("the reply is not JSON: {e}"))
                })?;
                from_response(body)
            })
            .await?;
        let once: ChunkStream = Box::pin(futures::stream::iter([Ok(chunk)]));
        Ok(once)
    }

    /// Calls `attempt` until it succeeds, fails for good, or no retry is
    /// left; sleeps between tries (the `retry-after` the error carries,
    /// else the backoff).
    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let mut retry = 0;
        loop {
            match attempt().await {
                Err(error) if error.is_retryable() && retry < self.max_retries => {
                    let wait = error.retry_after().unwrap_or_else(|| retry::backoff(retry));
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                done => return done,
            }
        }
    }

    /// One try: the response, if its status is a success.
    async fn send(&self, body: &[u8]) -> Result<reqwest::Response, ModelError> {
        let request = self
            .client
            .post(&self.url)
            .header("x-api-key", &self.key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body.to_vec());
        let response = within(self.timeout, request.send()).await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let wait = retry::retry_after(response.headers());
        let text = within(self.timeout, response.text())
            .await
            .unwrap_or_default();
        let mut error = from_status(status.as_u16(), &retry::scrub(&text, Some(&self.key)));
        if let Some(wait) = wait {
            error = error.with_retry_after(wait);
        }
        Err(error)
    }
}

/// `future`'s output, or a timeout error after `timeout`; reqwest's errors
/// as connection errors (their URL left out).
async fn within<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, reqwest::Error>>,
) -> Result<T, ModelError> {
    match tokio::time::timeout(timeout, future).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(http_error(e)),
        Err(_) => Err(timed_out(timeout)),
    }
}

fn timed_out(timeout: Duration) -> ModelError {
    ModelError::new("anthropic", ModelErrorKind::Timeout)
        .with_message(format!("no answer within {timeout:?}"))
}

fn http_error(e: reqwest::Error) -> ModelError {
    let kind = if e.is_timeout() {
        ModelErrorKind::Timeout
    } else {
        ModelErrorKind::Connection
    };
    ModelError::new("anthropic", kind).with_message(e.without_url().to_string())
}

/// A response's body, chunk by chunk, ending at its first error.
fn body_bytes(
    response: reqwest::Response,
) -> impl Stream<Item = Result<impl AsRef<[u8]>, reqwest::Error>> {
    futures::stream::unfold(Some(response), |response| async move {
        let mut response = response?;
        match response.chunk().await {
            Ok(Some(bytes)) => Some((Ok(bytes), Some(response))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    })
}

type EventStream = Pin<
    Box<
        dyn Stream<
                Item = Result<
                    eventsource_stream::Event,
                    eventsource_stream::EventStreamError<reqwest::Error>,
                >,
            > + Send,
    >,
>;

/// A streamed reply's chunks: each event through [`stream::on_event`],
/// waiting at most `timeout` for each; a stream that breaks or ends before
/// the reply is complete ends with an error.
fn events(response: reqwest::Response, state: StreamState, timeout: Duration) -> ChunkStream {
    let events: EventStream = Box::pin(body_bytes(response).eventsource());
    Box::pin(futures::stream::unfold(
        Some((events, state)),
        move |reading| async move {
            let (mut events, mut state) = reading?;
            loop {
                let event = match tokio::time::timeout(timeout, events.next()).await {
                    Err(_) => return Some((Err(timed_out(timeout)), None)),
                    Ok(None) if state.finished => return None,
                    Ok(None) => {
                        return Some((Err(cut("the stream ended before the reply did")), None));
                    }
                    Ok(Some(Err(e))) => {
                        return Some((Err(cut(&format!("the stream broke: {e}"))), None));
                    }
                    Ok(Some(Ok(event))) => event,
                };
                match on_event(&mut state, &event.event, &event.data) {
                    Ok(Some(chunk)) => return Some((Ok(chunk), Some((events, state)))),
                    Ok(None) => continue,
                    Err(error) => return Some((Err(error), None)),
                }
            }
        },
    ))
}

fn cut(message: &str) -> ModelError {
    ModelError::new("anthropic", ModelErrorKind::Connection).with_message(message)
}
