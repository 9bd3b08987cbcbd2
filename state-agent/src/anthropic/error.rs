//! Anthropic's failures as [`ModelError`]s: an HTTP status and Anthropic's
//! error body (`{"type": "error", "error": {"type", "message"}}`), or an
//! `error` event in a stream, mapped to what kind of failure it is (as
//! langchain-anthropic classifies them), with Anthropic's own message.

use crate::error::{ModelError, ModelErrorKind};
use serde_json::Value;

/// The error for HTTP `status` with the body `text`; the wait the
/// response asked for is added by the caller.
pub(crate) fn from_status(status: u16, text: &str) -> ModelError {
    match serde_json::from_str::<Value>(text) {
        Ok(body) if body["error"].is_object() => from_error_body(Some(status), &body),
        _ => {
            let kind = kind_of_status(status);
            let text = text.trim();
            let error = ModelError::new("anthropic", kind).with_status(status);
            if text.is_empty() {
                error
            } else {
                error.with_message(truncate(text, 500))
            }
        }
    }
}

/// The error Anthropic's error `body` describes (`status` when it came
/// with one; a stream's `error` event has none).
pub(crate) fn from_error_body(status: Option<u16>, body: &Value) -> ModelError {
    let error_type = body["error"]["type"].as_str().unwrap_or_default();
    let message = body["error"]["message"].as_str().unwrap_or(error_type);
    let kind = match status {
        Some(status) => kind_of_status(status),
        None => kind_of_type(error_type),
    };
    let kind = if kind == ModelErrorKind::BadRequest && message.contains("prompt is too long") {
        ModelErrorKind::ContextOverflow
    } else {
        kind
    };
    let mut error = ModelError::new("anthropic", kind);
    if let Some(status) = status {
        error = error.with_status(status);
    }
    if message.is_empty() {
        error
    } else {
        error.with_message(message)
    }
}

/// What kind of failure an HTTP status is.
fn kind_of_status(status: u16) -> ModelErrorKind {
    match status {
        401 | 403 => ModelErrorKind::Auth,
        408 => ModelErrorKind::Timeout,
        // 409: a conflict the SDKs retry.
        409 | 500..=599 => ModelErrorKind::Server,
        429 => ModelErrorKind::RateLimited,
        // 400, 404 (an unknown model), 413 (too large), 422, ...
        _ => ModelErrorKind::BadRequest,
    }
}

/// What kind of failure Anthropic's error `type` is (a stream's error
/// event carries no status).
fn kind_of_type(error_type: &str) -> ModelErrorKind {
    match error_type {
        "authentication_error" | "permission_error" => ModelErrorKind::Auth,
        "rate_limit_error" => ModelErrorKind::RateLimited,
        "invalid_request_error" | "not_found_error" | "request_too_large" => {
            ModelErrorKind::BadRequest
        }
        "timeout_error" => ModelErrorKind::Timeout,
        // overloaded_error, api_error, and types not known yet.
        _ => ModelErrorKind::Server,
    }
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        for (status, kind) in [
            (400, ModelErrorKind::BadRequest),
            (401, ModelErrorKind::Auth),
            (403, ModelErrorKind::Auth),
            (404, ModelErrorKind::BadRequest),
            (413, ModelErrorKind::BadRequest),
            (429, ModelErrorKind::RateLimited),
            (500, ModelErrorKind::Server),
            (529, ModelErrorKind::Server),
        ] {
            assert_eq!(from_status(status, "").kind(), kind, "{status}");
        }
    }

    #[test]
    fn anthropics_message_and_context_overflow() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let err = from_status(400, body);
        assert_eq!(err.kind(), ModelErrorKind::ContextOverflow);
        assert_eq!(
            err.to_string(),
            "anthropic: context window exceeded (HTTP 400): prompt is too long: 210000 tokens > 200000 maximum"
        );
    }

    #[test]
    fn a_body_that_is_not_anthropics_is_kept_short() {
        let err = from_status(502, &"<html>bad gateway</html>".repeat(100));
        assert_eq!(err.kind(), ModelErrorKind::Server);
        assert!(err.message().unwrap().len() < 520);
    }
}
