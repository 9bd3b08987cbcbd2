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
    /// Whether the token may also come as `?access_token=`.
    pub query_token: QueryToken,
}

/// Where a route takes the token besides `Authorization` and the cookie.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum QueryToken {
    /// Nowhere else (the JSON routes).
    No,
    /// `?access_token=` too (the event stream: a browser's `EventSource`
    /// cannot send a header).
    Accepted,
    /// `?access_token=` too, and the answer keeps it as a cookie (the
    /// inspector's pages: a browser opens the first page by its URL, and
    /// its links, script and forms then carry the cookie).
    KeptAsCookie,
}

/// The cookie that carries the token for a browser, as named where the
/// request names no port; where it does, the port follows
/// (`state_server_token_8080`): a browser keeps one set of cookies per
/// host, whatever the port, so two servers on one host would otherwise
/// overwrite each other's (see [`cookie_name`]).
pub(crate) const TOKEN_COOKIE: &str = "state_server_token";

/// The token cookie's name for a request: [`TOKEN_COOKIE`], then `_` and
/// the port the request was sent to (its `Host`, or the URI's authority
/// in HTTP/2) when it names one.
fn cookie_name(uri: &Uri, headers: &HeaderMap) -> String {
    let host = uri.authority().cloned().or_else(|| {
        let host = headers.get(header::HOST)?.to_str().ok()?;
        host.parse::<axum::http::uri::Authority>().ok()
    });
    match host.and_then(|host| host.port_u16()) {
        Some(port) => format!("{TOKEN_COOKIE}_{port}"),
        None => TOKEN_COOKIE.to_owned(),
    }
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
        Ok(via) => {
            let name = cookie_name(request.uri(), request.headers());
            let mut response = next.run(request).await;
            if via == Via::Query
                && guard.query_token == QueryToken::KeptAsCookie
                && let Some(token) = &guard.token
                && let Ok(cookie) = HeaderValue::try_from(format!(
                    "{name}={}; Path=/; HttpOnly; SameSite=Strict",
                    String::from_utf8_lossy(token)
                ))
            {
                response.headers_mut().append(header::SET_COOKIE, cookie);
            }
            response
        }
        // Refused before the body was read.
        Err(error) => crate::error::closing(error.into_response()),
    };
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// How a request carried the token.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// No token is needed, or it came in a header or the cookie.
    Other,
    /// As `?access_token=`.
    Query,
}

fn check(guard: &Guard, uri: &Uri, headers: &HeaderMap) -> Result<Via, ApiError> {
    let mut via = Via::Other;
    if let Some(token) = &guard.token {
        let in_query = || {
            let Query(query) = Query::<TokenQuery>::try_from_uri(uri).ok()?;
            query.access_token
        };
        match headers.get(header::AUTHORIZATION) {
            None if guard.query_token != QueryToken::No
                && let Some(given) = in_query() =>
            {
                if !same_bytes(given.as_bytes(), token) {
                    return Err(ApiError::unauthorized(
                        "the access_token is wrong",
                        "Bearer realm=\"state-server\", error=\"invalid_token\"",
                    ));
                }
                via = Via::Query;
            }
            // The cookie named for this port, or one named without a port
            // (a client's own); any that holds the token will do.
            None if [cookie_name(uri, headers).as_str(), TOKEN_COOKIE]
                .into_iter()
                .any(|name| cookies(headers, name).any(|given| same_bytes(given, token))) => {}
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
    // Few handlers read a body (the inspector's forms); one declared over
    // the limit is refused before it is read (and `DefaultBodyLimit`
    // bounds any extractor that reads).
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.trim().parse::<u64>().ok());
    match declared {
        Some(length) if length > guard.body_limit as u64 => {
            Err(ApiError::too_large(length, guard.body_limit))
        }
        _ => Ok(via),
    }
}

/// The values of the cookies named `name` that the request carries.
fn cookies<'h>(headers: &'h HeaderMap, name: &str) -> impl Iterator<Item = &'h [u8]> {
    let name = name.as_bytes().to_vec();
    headers
        .get_all(header::COOKIE)
        .iter()
        .flat_map(|value| value.as_bytes().split(|&b| b == b';'))
        .filter_map(move |pair| {
            let pair = pair.trim_ascii();
            let value = pair.strip_prefix(name.as_slice())?;
            value.strip_prefix(b"=")
        })
}

/// The first token cookie without a port in its name, if any.
#[cfg(test)]
fn cookie(headers: &HeaderMap) -> Option<&[u8]> {
    cookies(headers, TOKEN_COOKIE).next()
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
    fn the_token_cookie_is_found_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; state_server_token=s3cret; b=2"),
        );
        assert_eq!(cookie(&headers), Some(&b"s3cret"[..]));
        let mut other = HeaderMap::new();
        other.append(
            header::COOKIE,
            HeaderValue::from_static("state_server_token_x=1"),
        );
        assert_eq!(cookie(&other), None);
        assert_eq!(cookie(&HeaderMap::new()), None);
    }

    #[test]
    fn the_cookie_is_named_for_the_port_the_request_was_sent_to() {
        let host = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_static(value));
            headers
        };
        let uri = Uri::from_static("/");
        assert_eq!(
            cookie_name(&uri, &host("127.0.0.1:8080")),
            "state_server_token_8080"
        );
        assert_eq!(
            cookie_name(&uri, &host("[::1]:3000")),
            "state_server_token_3000"
        );
        assert_eq!(
            cookie_name(&uri, &host("example.com")),
            "state_server_token"
        );
        assert_eq!(cookie_name(&uri, &HeaderMap::new()), "state_server_token");
        let absolute = Uri::from_static("http://localhost:9000/");
        assert_eq!(
            cookie_name(&absolute, &host("localhost:1")),
            "state_server_token_9000"
        );
        // Two servers' cookies side by side: each finds its own.
        let mut both = HeaderMap::new();
        both.append(
            header::COOKIE,
            HeaderValue::from_static("state_server_token_8080=a; state_server_token_8081=b"),
        );
        assert_eq!(
            cookies(&both, "state_server_token_8081").collect::<Vec<_>>(),
            [&b"b"[..]]
        );
        assert_eq!(cookies(&both, TOKEN_COOKIE).count(), 0);
    }

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
