//! The auth hook (LangGraph's custom auth, `@auth.authenticate`): a
//! function from a request to an [`Identity`] or a [`Refusal`], run
//! before every handler. An identity owns the threads and runs it
//! creates; it sees only those (another's are a 404, as if absent, not a
//! 403 that would say they exist), and the long-term store's namespaces
//! that begin with its id. An [`admin`](Identity::admin) identity sees
//! everything: the inspector, this crate's own JSON routes, every thread.

use crate::error::{ApiError, closing};
use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use state_store::Store;
use std::fmt;
use std::sync::Arc;

/// Who a request comes from, as the auth hook says.
///
/// ```
/// use state_server::Identity;
/// let ada = Identity::new("ada");
/// assert_eq!(ada.id(), "ada");
/// assert!(!ada.is_admin());
/// assert!(Identity::new("ops").admin().is_admin());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    id: String,
    admin: bool,
}

impl Identity {
    /// An identity named `id`: the owner of the threads and runs it
    /// creates (LangGraph's `MinimalUserDict.identity`).
    ///
    /// ```
    /// let user = state_server::Identity::new("user-7");
    /// ```
    pub fn new(id: impl Into<String>) -> Identity {
        Identity {
            id: id.into(),
            admin: false,
        }
    }

    /// This identity sees every thread, run and item, and may open the
    /// inspector and this crate's own JSON routes (which read any
    /// thread).
    ///
    /// ```
    /// let ops = state_server::Identity::new("ops").admin();
    /// ```
    #[must_use]
    pub fn admin(mut self) -> Identity {
        self.admin = true;
        self
    }

    /// Its id.
    ///
    /// ```
    /// assert_eq!(state_server::Identity::new("ada").id(), "ada");
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether it sees everything.
    ///
    /// ```
    /// assert!(!state_server::Identity::new("ada").is_admin());
    /// ```
    pub fn is_admin(&self) -> bool {
        self.admin
    }
}

/// Why the auth hook refuses a request: a 401 (no credentials, or bad
/// ones) or a 403 (known, but not allowed here), with a message for the
/// client (the body's `detail`).
///
/// ```
/// use state_server::Refusal;
/// let refusal = Refusal::unauthorized("no API key");
/// assert_eq!(refusal.to_string(), "401: no API key");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    /// A 401: the request carries no credentials, or bad ones.
    ///
    /// ```
    /// let refusal = state_server::Refusal::unauthorized("the API key is wrong");
    /// ```
    pub fn unauthorized(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::UNAUTHORIZED,
            message: message.into(),
        }
    }

    /// A 403: the caller is known but may not do this.
    ///
    /// ```
    /// let refusal = state_server::Refusal::forbidden("read-only key");
    /// ```
    pub fn forbidden(message: impl Into<String>) -> Refusal {
        Refusal {
            status: StatusCode::FORBIDDEN,
            message: message.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for Refusal {}

/// The hook, boxed: called with the request's method, URI and headers.
pub(crate) type AuthFn = Arc<
    dyn Fn(axum::http::Request<()>) -> BoxFuture<'static, Result<Identity, Refusal>> + Send + Sync,
>;

/// Runs the hook (when one is set): a refusal answers at once; an
/// identity goes with the request to its handler.
pub(crate) async fn authenticate(
    State(hook): State<AuthFn>,
    mut request: Request,
    next: Next,
) -> Response {
    let mut head = axum::http::Request::new(());
    *head.method_mut() = request.method().clone();
    *head.uri_mut() = request.uri().clone();
    *head.headers_mut() = request.headers().clone();
    match hook(head).await {
        Ok(identity) => {
            request.extensions_mut().insert(identity);
            next.run(request).await
        }
        Err(refusal) => {
            let error = match refusal.status {
                StatusCode::FORBIDDEN => ApiError::forbidden(refusal.message),
                _ => ApiError::unauthorized(&refusal.message, "Bearer realm=\"state-server\""),
            };
            closing(error.into_response())
        }
    }
}

/// The owner a request acts as: its identity's id, or `None` (any owner)
/// without an auth hook or for an admin.
pub(crate) struct Owner(pub Option<String>);

impl Owner {
    /// As the store's `owner` argument.
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Owner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        Ok(Owner(
            parts
                .extensions
                .get::<Identity>()
                .filter(|identity| !identity.is_admin())
                .map(|identity| identity.id.clone()),
        ))
    }
}

/// Keeps an identity to what it owns, before the handler runs: a thread
/// another owns is a 404 on every `/threads/{id}/...` path; a thread with
/// no record (written outside the API) is read by admins only; the
/// inspector and `GET /threads` (every thread) are for admins.
pub(crate) async fn gate(State(store): State<Store>, request: Request, next: Next) -> Response {
    let Some(identity) = request.extensions().get::<Identity>().cloned() else {
        return next.run(request).await;
    };
    if identity.is_admin() {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    // None on a path without captures.
    let params = RawPathParams::from_request_parts(&mut parts, &())
        .await
        .ok();
    let request = Request::from_parts(parts, body);
    let path = request.uri().path();
    let whole_store = path == "/"
        || path.starts_with("/inspect")
        || path.starts_with("/inspector.")
        || (path == "/threads" && request.method() == Method::GET);
    if whole_store {
        return closing(
            ApiError::forbidden(format!(
                "{path} reads every thread: it is for admin identities"
            ))
            .into_response(),
        );
    }
    let thread = params.as_ref().and_then(|params| {
        params
            .iter()
            .find(|(name, _)| *name == crate::extract::THREAD_ID)
            .map(|(_, value)| value.to_owned())
    });
    if let Some(thread) = thread {
        let visible = match store.thread_record(&thread, None).await {
            Ok(Some(record)) => record.owner.as_deref() == Some(identity.id()),
            // No record: what creates one may go on (a run with
            // `if_not_exists`); what reads a thread may not.
            Ok(None) => request.method() != Method::GET,
            // The handler answers the store's error.
            Err(_) => true,
        };
        if !visible {
            return closing(
                ApiError::missing(format!("Thread with ID {thread} not found")).into_response(),
            );
        }
    }
    next.run(request).await
}
