//! The middleware in front of every route: the bearer token (when one is
//! set), the request body limit, and the headers every answer carries.

use crate::error::ApiError;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// What the guard checks.
pub(crate) struct Guard {
    /// The bearer token every request must carry, if any.
    pub token: Option<Box<[u8]>>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// Whether the token may also come as `?access_token=` (the event
    /// stream only: a browser's `EventSource` cannot send a header).
    pub query_token: bool,
}

/// The query parameter that may carry the token where `query_token` is set.
#[derive(serde::Deserialize)]
struct TokenQuery {
    access_token: Option<String>,
}

/// Refuses a request without the token (401) or with a declared body over
/// the limit (413), before any handler runs; marks every answer as not to
/// be sniffed or cached.
pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = match check(&guard, request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    };
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn check(guard: &Guard, uri: &Uri, headers: &HeaderMap) -> Result<(), ApiError> {
    if let Some(token) = &guard.token {
        let in_query = || {
            let Query(query) = Query::<TokenQuery>::try_from_uri(uri).ok()?;
            query.access_token
        };
        match headers.get(header::AUTHORIZATION) {
            None if guard.query_token
                && let Some(given) = in_query() =>
            {
                if !same_bytes(given.as_bytes(), token) {
                    return Err(ApiError::unauthorized(
                        "the access_token is wrong",
                        "Bearer realm=\"state-server\", error=\"invalid_token\"",
                    ));
                }
            }
            None => {
                return Err(ApiError::unauthorized(
                    "this server requires a bearer token: send `Authorization: Bearer <token>`",
                    "Bearer realm=\"state-server\"",
                ));
            }
            Some(value) if !bearer_matches(value.as_bytes(), token) => {
                return Err(ApiError::unauthorized(
                    "the bearer token is wrong",
                    "Bearer realm=\"state-server\", error=\"invalid_token\"",
                ));
            }
            Some(_) => {}
        }
    }
    // Handlers read no body; one declared over the limit is refused before
    // it is read (and `DefaultBodyLimit` bounds any extractor that reads).
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > guard.body_limit as u64 => {
            Err(ApiError::too_large(length, guard.body_limit))
        }
        _ => Ok(()),
    }
}

/// Whether `Authorization: <value>` is `Bearer <token>` (the scheme in any
/// case), comparing the token in time independent of where it differs.
fn bearer_matches(value: &[u8], token: &[u8]) -> bool {
    let Some(space) = value.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (scheme, given) = value.split_at(space);
    // An empty token never matches (the builder refuses one anyway).
    !token.is_empty()
        && scheme.eq_ignore_ascii_case(b"bearer")
        && same_bytes(given.trim_ascii(), token)
}

/// Constant-time equality (the length is not secret).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bearer_scheme_with_the_exact_token_matches() {
        assert!(bearer_matches(b"Bearer s3cret", b"s3cret"));
        assert!(bearer_matches(b"bearer   s3cret ", b"s3cret"));
        assert!(!bearer_matches(b"Bearer s3cre", b"s3cret"));
        assert!(!bearer_matches(b"Bearer s3cret2", b"s3cret"));
        assert!(!bearer_matches(b"Basic s3cret", b"s3cret"));
        assert!(!bearer_matches(b"Bearers3cret", b"s3cret"));
        assert!(!bearer_matches(b"Bearer", b"s3cret"));
        assert!(!bearer_matches(b"Bearer ", b""));
    }
}
