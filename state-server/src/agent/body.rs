//! [`Body`]: a JSON request body, deserialized; one that does not fit is a
//! 422 naming the field and what was expected, as the Agent Server answers
//! a body its schema refuses.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use serde::de::{DeserializeOwned, IgnoredAny};

/// The request's JSON body, an object, as a `T`. An empty body reads as
/// `{}` (a client may send none for a search with no filter).
pub(crate) struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        let json = request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(is_json);
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|rejection| {
                // A chunked body past `DefaultBodyLimit` (a declared
                // length over it was refused by the guard already).
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::too_large_read()
                } else {
                    ApiError::invalid_body(format!("the request body: {}", rejection.body_text()))
                }
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return parse(b"{}").map(Body);
        }
        // A browser posts `text/plain`, a form or a typeless blob to any
        // site without asking it first; JSON it must ask for (CORS), so a
        // page on another site cannot start runs on a server without a
        // token.
        if !json {
            return Err(ApiError::unsupported_media_type());
        }
        parse(&bytes).map(Body)
    }
}

/// Refuses (415) a body not sent as JSON: a page on another site cannot
/// post JSON without asking first (CORS), so it cannot start runs with a
/// browser's cookies or its network position.
pub(crate) fn require_json(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let json = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(is_json);
    if json {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type())
    }
}

/// Whether a `Content-Type` is JSON: `application/json` or a `+json`
/// type, any parameters after.
pub(crate) fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

#[cfg(test)]
mod content_type_tests {
    #[test]
    fn json_types_are_told_apart() {
        for json in [
            "application/json",
            "Application/JSON; charset=utf-8",
            "application/merge-patch+json",
        ] {
            assert!(super::is_json(json), "{json}");
        }
        for other in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "",
            "json",
        ] {
            assert!(!super::is_json(other), "{other}");
        }
    }
}

/// `bytes` as a `T`, or a 422 that names the field (`limit: invalid type:
/// string "ten", expected u64`).
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Every body of the API is an object; serde would read a struct from
    // an array too, and name an index where the field is missing.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::invalid_body(
            "the request body: expected a JSON object",
        ));
    }
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut json).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        let whole = path == "." || path == "?";
        // Not JSON (cut short, nested too deep): the body is at fault, not
        // the key it broke under (which may be no field at all). serde's
        // error category cannot tell: a number where an enum goes is a
        // "syntax" error too.
        let well_formed = serde_json::from_slice::<IgnoredAny>(bytes).is_ok();
        ApiError::invalid_body(match (whole, well_formed) {
            (true, _) => format!("the request body: {inner}"),
            // serde_json's words for a number or a list where one of an
            // enum's names goes.
            (false, true) if inner.to_string().starts_with("expected value at") => {
                format!("{path}: expected one of its names, as a string")
            }
            (false, true) => format!("{path}: {inner}"),
            (false, false) => format!("the request body: {inner} (in `{path}`)"),
        })
    })?;
    json.end()
        .map_err(|error| ApiError::invalid_body(format!("the request body: {error}")))?;
    Ok(value)
}

/// A page's size as a request names it (`limit`): `default` when it names
/// none, else 1 to 1,000 (the Agent Server's bounds), or a 422 naming it.
pub(crate) fn page_limit(limit: Option<u64>, default: u64) -> Result<usize, ApiError> {
    let limit = limit.unwrap_or(default);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid_body(format!(
            "limit: must be between 1 and 1000, got {limit}"
        )));
    }
    Ok(limit as usize)
}

/// A search's `sort_order` (newest first when not given, as the Agent
/// Server's).
#[derive(serde::Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SortOrder {
    Asc,
    Desc,
}

/// A search's answer with only the `select`ed fields of `found`, if the
/// request named any.
pub(crate) fn selected(found: serde_json::Value, select: Option<&[String]>) -> serde_json::Value {
    match (select, found) {
        (Some(fields), serde_json::Value::Object(all)) => serde_json::Value::Object(
            all.into_iter()
                .filter(|(k, _)| fields.contains(k))
                .collect(),
        ),
        (_, found) => found,
    }
}

/// A page of a search as the Agent Server answers it: the JSON list, with
/// `X-Pagination-Total` (and `X-Pagination-Next` when `more` follow),
/// `end` being the offset just past the page.
pub(crate) fn paged(
    page: Vec<serde_json::Value>,
    end: usize,
    more: bool,
) -> axum::response::Response {
    use axum::http::HeaderValue;
    use axum::response::IntoResponse;
    let mut response = axum::Json(page).into_response();
    let headers = response.headers_mut();
    if more {
        headers.insert("x-pagination-total", HeaderValue::from(end + 1));
        headers.insert("x-pagination-next", HeaderValue::from(end));
    } else {
        headers.insert("x-pagination-total", HeaderValue::from(end));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Search {
        limit: Option<u64>,
    }

    #[test]
    fn a_bad_field_is_named() {
        let error = parse::<Search>(br#"{"limit": "ten"}"#).unwrap_err();
        assert_eq!(error.status(), 422);
        assert!(
            error.message().starts_with("limit: invalid type"),
            "{}",
            error.message()
        );
        let error = parse::<Search>(b"[1]").unwrap_err();
        assert_eq!(error.message(), "the request body: expected a JSON object");
        // Not JSON: the body is at fault, not the key it broke under.
        let error = parse::<Search>(br#"{"agent": ["#).unwrap_err();
        assert!(
            error
                .message()
                .starts_with("the request body: EOF while parsing a list")
                && error.message().ends_with("(in `agent`)"),
            "{}",
            error.message()
        );
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Sorted {
            order: Order,
        }
        #[derive(Deserialize, Debug)]
        #[serde(rename_all = "lowercase")]
        enum Order {
            Asc,
        }
        let error = parse::<Sorted>(br#"{"order": 2}"#).unwrap_err();
        assert_eq!(
            error.message(),
            "order: expected one of its names, as a string"
        );
        let error = parse::<Sorted>(br#"{"order": "up"}"#).unwrap_err();
        assert!(
            error.message().starts_with("order: unknown variant `up`"),
            "{}",
            error.message()
        );
        // Well-formed JSON that does not fit: the field is named.
        let error = parse::<Search>(br#"{"limit": 1e400}"#).unwrap_err();
        assert!(
            error.message().starts_with("limit: number out of range"),
            "{}",
            error.message()
        );
        let error = parse::<Search>(b"{} x").unwrap_err();
        assert!(
            error.message().starts_with("the request body: trailing"),
            "{}",
            error.message()
        );
    }
}
