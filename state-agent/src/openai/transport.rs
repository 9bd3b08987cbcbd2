//! ChatOpenAI's transport: the tower service async-openai sends each
//! request through (its `middleware` hook). One place decides what
//! async-openai's own retry layer decides elsewhere, with what we need on
//! top: retries of 429 (honouring `Retry-After`), 5xx, timeouts and
//! connection errors, with backoff, only before a stream starts; a deadline
//! per attempt (a non-streamed body is read within it); and an error that
//! keeps the status, the provider's message and `Retry-After`, without the
//! key.

use super::convert::PROVIDER;
use crate::error::{ModelError, ModelErrorKind};
use crate::retry::{backoff, retry_after, scrub};
use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, timeout_at};
use tower::ServiceExt;

/// How the transport sends: retries, the deadline of one attempt, and the
/// key no error may show.
#[derive(Clone)]
pub(crate) struct Policy {
    pub(crate) max_retries: u32,
    pub(crate) timeout: Duration,
    pub(crate) secret: Option<Arc<str>>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The service: reqwest underneath, the [`Policy`] around it.
#[derive(Clone, Debug)]
pub(crate) struct Transport {
    pub(crate) http: ReqwestService,
    pub(crate) policy: Policy,
}

type Answer = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: HttpRequestFactory) -> Answer {
        let http = self.http.clone();
        let policy = self.policy.clone();
        Box::pin(async move {
            let mut retry = 0;
            loop {
                let error = match attempt(&http, &request, &policy).await {
                    Ok(response) => return Ok(response),
                    Err(error) => error,
                };
                if !error.is_retryable() || retry >= policy.max_retries {
                    return Err(OpenAIError::Boxed(Box::new(error)));
                }
                let wait = error.retry_after().unwrap_or_else(|| backoff(retry));
                retry += 1;
                tokio::time::sleep(wait).await;
            }
        })
    }
}

/// One attempt: the answer's head within the deadline, and for an answer
/// that is not an event stream, its whole body too.
async fn attempt(
    http: &ReqwestService,
    request: &HttpRequestFactory,
    policy: &Policy,
) -> Result<reqwest::Response, ModelError> {
    let deadline = Instant::now() + policy.timeout;
    let secret = policy.secret.as_deref();
    let timed_out = || {
        ModelError::new(PROVIDER, ModelErrorKind::Timeout).with_message(format!(
            "no answer within {:?} (the model's timeout)",
            policy.timeout
        ))
    };
    let response = match timeout_at(deadline, http.clone().oneshot(request.clone())).await {
        Err(_) => return Err(timed_out()),
        Ok(Err(error)) => return Err(from_openai_error(error, secret)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    let streaming = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if status.is_success() && streaming {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let version = response.version();
    let body = match timeout_at(deadline, response.bytes()).await {
        Err(_) => return Err(timed_out()),
        Ok(Err(error)) => return Err(from_reqwest_error(&error, secret).with_source(error)),
        Ok(Ok(body)) => body,
    };
    if !status.is_success() {
        return Err(from_status(status.as_u16(), &headers, &body, secret));
    }
    let mut rebuilt = http::Response::new(body);
    *rebuilt.status_mut() = status;
    *rebuilt.version_mut() = version;
    *rebuilt.headers_mut() = headers;
    Ok(reqwest::Response::from(rebuilt))
}

/// The error an HTTP error answer makes: its kind from the status (and
/// OpenAI's codes: `insufficient_quota`, `context_length_exceeded`), the
/// provider's message (OpenAI's `error.message`, a compatible server's
/// `error`, `message` or `detail`, else the body's text), `Retry-After`.
pub(crate) fn from_status(
    status: u16,
    headers: &http::HeaderMap,
    body: &[u8],
    secret: Option<&str>,
) -> ModelError {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let error = json.as_ref().and_then(|j| j.get("error"));
    let text_of = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    let message = text_of(error.and_then(|e| e.get("message")))
        .or_else(|| text_of(error.filter(|e| e.is_string())))
        .or_else(|| text_of(json.as_ref().and_then(|j| j.get("message"))))
        .or_else(|| text_of(json.as_ref().and_then(|j| j.get("detail"))))
        .unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            match text.char_indices().nth(500) {
                Some((end, _)) => format!("{}...", &text[..end]),
                None => text.to_owned(),
            }
        });
    let code = |key: &str| error.and_then(|e| e.get(key)).and_then(Value::as_str);
    let said = |what: &str| code("code") == Some(what) || code("type") == Some(what);
    let kind = match status {
        429 if said("insufficient_quota") => ModelErrorKind::Quota,
        429 => ModelErrorKind::RateLimited,
        400 | 413
            if said("context_length_exceeded")
                || message.contains("context_length_exceeded")
                || message.contains("maximum context length") =>
        {
            ModelErrorKind::ContextOverflow
        }
        401 | 403 => ModelErrorKind::Auth,
        408 => ModelErrorKind::Timeout,
        500..=599 => ModelErrorKind::Server,
        _ => ModelErrorKind::BadRequest,
    };
    let mut error = ModelError::new(PROVIDER, kind).with_status(status);
    if !message.is_empty() {
        error = error.with_message(scrub(&message, secret));
    }
    if let Some(wait) = retry_after(headers) {
        error = error.with_retry_after(wait);
    }
    error
}

/// A reqwest failure: a timeout, or a connection that failed or broke.
fn from_reqwest_error(error: &reqwest::Error, secret: Option<&str>) -> ModelError {
    let kind = if error.is_timeout() {
        ModelErrorKind::Timeout
    } else {
        ModelErrorKind::Connection
    };
    ModelError::new(PROVIDER, kind).with_message(scrub(&error.to_string(), secret))
}

/// Any async-openai error as a [`ModelError`] (the transport's own come
/// back as they were).
pub(crate) fn from_openai_error(error: OpenAIError, secret: Option<&str>) -> ModelError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<ModelError>() {
            Ok(error) => *error,
            Err(other) => ModelError::new(PROVIDER, ModelErrorKind::Connection)
                .with_message(scrub(&other.to_string(), secret))
                .with_source(other),
        },
        OpenAIError::Reqwest(error) => from_reqwest_error(&error, secret).with_source(error),
        OpenAIError::ApiError(api) => {
            let body = serde_json::json!({"error": api.api_error});
            from_status(
                api.status_code.as_u16(),
                &http::HeaderMap::new(),
                body.to_string().as_bytes(),
                secret,
            )
        }
        OpenAIError::JSONDeserialize(error, content) => {
            let mut shown: String = content.chars().take(200).collect();
            if shown.len() < content.len() {
                shown.push_str("...");
            }
            ModelError::new(PROVIDER, ModelErrorKind::Decode)
                .with_message(scrub(
                    &format!("the answer is not a chat completion ({error}): {shown}"),
                    secret,
                ))
                .with_source(error)
        }
        OpenAIError::StreamError(error) => {
            let kind = match *error {
                async_openai::error::StreamError::UnknownEvent(_) => ModelErrorKind::Decode,
                _ => ModelErrorKind::Connection,
            };
            ModelError::new(PROVIDER, kind)
                .with_message(scrub(&format!("the stream broke: {error}"), secret))
        }
        OpenAIError::InvalidArgument(message) => {
            ModelError::new(PROVIDER, ModelErrorKind::BadRequest)
                .with_message(scrub(&message, secret))
        }
        other => ModelError::new(PROVIDER, ModelErrorKind::Decode)
            .with_message(scrub(&other.to_string(), secret)),
    }
}
