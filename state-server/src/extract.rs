//! Extractors whose rejections are this server's JSON errors: axum's own
//! answer a bad path or query with plain text.

use crate::error::ApiError;
use axum::extract::{FromRequestParts, Path as AxumPath};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// The name of the thread id in the routes' paths. Not `id`: an app may
/// nest the router under a path of its own that captures `{id}`.
pub(crate) const THREAD_ID: &str = "thread_id";

/// The thread id of the path, percent-decoded: data, never interpreted
/// (the store refuses the ids it cannot hold, with a reason).
pub(crate) struct ThreadId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ThreadId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // Every capture, by name: the app's prefix may capture some too.
        let AxumPath(captures) =
            AxumPath::<Vec<(String, String)>>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| ApiError::bad_path(rejection.body_text()))?;
        captures
            .into_iter()
            .find_map(|(name, value)| (name == THREAD_ID).then_some(ThreadId(value)))
            .ok_or_else(|| ApiError::bad_path("the path has no thread id"))
    }
}

/// The path's captures, deserialized (axum's `Path`, whose rejection is
/// this server's JSON: a 400 naming the capture, as `Invalid UTF-8 in
/// `thread_id``).
pub(crate) struct Path<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        AxumPath::<T>::from_request_parts(parts, state)
            .await
            .map(|AxumPath(value)| Path(value))
            .map_err(|rejection| ApiError::bad_path(rejection.body_text()))
    }
}

/// The query string, deserialized; a bad one is a 400 that says why.
pub(crate) struct Query<T>(pub T);

impl<T: DeserializeOwned> Query<T> {
    /// The query of `uri` (for a handler that reads it after deciding
    /// what the request is).
    pub(crate) fn of(uri: &axum::http::Uri) -> Result<Query<T>, ApiError> {
        axum::extract::Query::<T>::try_from_uri(uri)
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|rejection| ApiError::bad_query(rejection.body_text()))
    }
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|rejection| ApiError::bad_query(rejection.body_text()))
    }
}
