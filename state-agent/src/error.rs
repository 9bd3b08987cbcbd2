//! [`ModelError`]: what a chat model call returns when it fails, one error
//! for every provider, that says whether trying again can help.

use std::fmt;
use std::time::Duration;

/// A boxed error, kept as a [`ModelError`]'s source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A chat model call that failed: which provider, what kind of failure,
/// the HTTP status and the provider's own message when there is one.
/// Never holds the API key (providers redact it before building one).
///
/// ```
/// use state_agent::{ModelError, ModelErrorKind};
///
/// let err = ModelError::new("openai", ModelErrorKind::RateLimited)
///     .with_status(429)
///     .with_message("Rate limit reached for gpt-4o-mini");
/// assert!(err.is_retryable());
/// assert_eq!(
///     err.to_string(),
///     "openai: rate limited (HTTP 429): Rate limit reached for gpt-4o-mini"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
pub struct ModelError {
    provider: String,
    kind: ModelErrorKind,
    status: Option<u16>,
    message: Option<String>,
    retry_after: Option<Duration>,
    #[source]
    source: Option<BoxError>,
}

/// What kind of failure a [`ModelError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// HTTP 429: too many requests or tokens; retried, after `Retry-After`.
    RateLimited,
    /// HTTP 5xx, or the provider's overloaded answer: retried.
    Server,
    /// The connection failed or broke: retried.
    Connection,
    /// The call took longer than its timeout: retried.
    Timeout,
    /// HTTP 401/403: the key is wrong or lacks the permission.
    Auth,
    /// The account is out of credits (OpenAI's 429 `insufficient_quota`):
    /// not retried, unlike a rate limit.
    Quota,
    /// HTTP 400/404/422: the request is wrong (an unknown model, a bad
    /// tool schema).
    BadRequest,
    /// The messages do not fit the model's context window.
    ContextOverflow,
    /// The provider answered something this library cannot read.
    Decode,
    /// The model was asked for structured output and gave none that fits.
    Parse,
}

impl ModelErrorKind {
    /// Whether trying the same call again can help.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ModelErrorKind::RateLimited
                | ModelErrorKind::Server
                | ModelErrorKind::Connection
                | ModelErrorKind::Timeout
        )
    }

    fn describe(self) -> &'static str {
        match self {
            ModelErrorKind::RateLimited => "rate limited",
            ModelErrorKind::Server => "server error",
            ModelErrorKind::Connection => "connection failed",
            ModelErrorKind::Timeout => "timed out",
            ModelErrorKind::Auth => "not authorized",
            ModelErrorKind::Quota => "quota exceeded",
            ModelErrorKind::BadRequest => "bad request",
            ModelErrorKind::ContextOverflow => "context window exceeded",
            ModelErrorKind::Decode => "unreadable answer",
            ModelErrorKind::Parse => "no structured output",
        }
    }
}

impl ModelError {
    /// A failure of `provider`'s call, of `kind`.
    pub fn new(provider: impl Into<String>, kind: ModelErrorKind) -> ModelError {
        ModelError {
            provider: provider.into(),
            kind,
            status: None,
            message: None,
            retry_after: None,
            source: None,
        }
    }

    /// With the HTTP status.
    pub fn with_status(mut self, status: u16) -> ModelError {
        self.status = Some(status);
        self
    }

    /// With the provider's message (or ours).
    pub fn with_message(mut self, message: impl Into<String>) -> ModelError {
        self.message = Some(message.into());
        self
    }

    /// With how long the provider asked to wait (`Retry-After`).
    pub fn with_retry_after(mut self, wait: Duration) -> ModelError {
        self.retry_after = Some(wait);
        self
    }

    /// With the error underneath.
    pub fn with_source(mut self, source: impl Into<BoxError>) -> ModelError {
        self.source = Some(source.into());
        self
    }

    /// The provider (`"openai"`, `"anthropic"`).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// What kind of failure it is.
    pub fn kind(&self) -> ModelErrorKind {
        self.kind
    }

    /// The HTTP status, when the provider answered.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// The provider's message, when it gave one.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// How long the provider asked to wait before trying again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// Whether trying the same call again can help.
    pub fn is_retryable(&self) -> bool {
        self.kind.is_retryable()
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.provider, self.kind.describe())?;
        if let Some(status) = self.status {
            write!(f, " (HTTP {status})")?;
        }
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}
