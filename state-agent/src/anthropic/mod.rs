//! Anthropic's Messages API: [`ChatAnthropic`] (LangChain's
//! `langchain_anthropic.ChatAnthropic`).
//!
//! Anthropic keeps no Rust SDK, so the HTTP is reqwest's (the client
//! async-openai builds on) and the server-sent events eventsource-stream's;
//! the wire format is read leniently from JSON (an event type, a block type
//! or a field Anthropic adds later is ignored, never a failed reply). The
//! conversion both ways is langchain-anthropic's, pinned against its own
//! output: [`wire`] writes the request, [`response`] reads a reply,
//! [`stream`] reads a streamed one event at a time, [`error`] reads
//! failures.

mod error;
mod response;
mod stream;
mod wire;

use crate::chunk::MessageChunk;
use crate::error::{ModelError, ModelErrorKind};
use crate::model::{ChatModel, ChunkStream, ModelRequest};
use crate::retry::{self, RetryPolicy};
use eventsource_stream::Eventsource;
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use stream::StreamState;
use wire::Settings;

/// Where requests go when neither [`ChatAnthropic::base_url`] nor
/// `ANTHROPIC_BASE_URL` says otherwise.
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version every request names (`anthropic-version`).
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// langchain-anthropic's `max_tokens` for a model it has no profile of.
const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The SDKs' timeout: ten minutes.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// The SDKs' retries.
const DEFAULT_MAX_RETRIES: u32 = 2;

/// A Claude model over Anthropic's Messages API (LangChain's
/// `ChatAnthropic`): any model name Anthropic serves, at Anthropic or at a
/// server that speaks the same API (`base_url`).
///
/// The API key is [`api_key`]'s, else `ANTHROPIC_API_KEY`'s; the server
/// [`base_url`]'s, else `ANTHROPIC_BASE_URL`'s, else Anthropic's (both read
/// when the model is made). A reply asks for at most [`max_tokens`] tokens
/// (Anthropic requires a bound: 4096 unless set, langchain-anthropic's for
/// a model it has no profile of). A call that fails with a rate limit
/// (429, after its `retry-after`), an overloaded (529) or other server
/// error, a broken connection or a timeout is tried again up to
/// [`max_retries`] times (2 by default, as the SDKs), waiting 0.5 s
/// doubling to 8 s, but never once its reply has begun to stream. The key
/// is never printed: not by `Debug`, not in errors.
///
/// Messages convert as langchain-anthropic converts them: system messages
/// go to `system`, tool results and the human messages after them merge
/// into one user turn of `tool_result` blocks (`is_error` when the tool
/// message's `status` is `"error"`), tool calls become `tool_use` blocks,
/// images (`image_url` blocks, or LangChain's standard `image` blocks, by
/// URL or base64) become Anthropic's image blocks; names are not sent. A
/// reply of one text block is plain text, else content blocks; its tool
/// calls, `usage_metadata` (cache reads and writes counted in the input
/// tokens) and `response_metadata` (`id`, `model`, `model_name`,
/// `stop_reason`, `stop_sequence`, `usage`, `model_provider`) are where
/// LangChain puts them, streamed or not.
///
/// ```no_run
/// # async fn run() -> Result<(), state_agent::ModelError> {
/// use serde_json::json;
/// use state_agent::anthropic::ChatAnthropic;
/// use state_agent::{ChatModelExt, ToolSpec};
/// use state_core::Message;
/// use std::time::Duration;
///
/// let model = ChatAnthropic::new("claude-sonnet-4-5")
///     .max_tokens(1024)
///     .temperature(0.0)
///     .timeout(Duration::from_secs(60))
///     .bind_tools([ToolSpec::new(
///         "get_weather",
///         "Get the current weather for a city.",
///         json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
///     )]);
/// let reply = model
///     .invoke(vec![Message::system("Be brief."), Message::human("Weather in Oslo?")])
///     .await?;
/// for call in reply.tool_calls() {
///     println!("{} {}", call.name, call.args);
/// }
/// # Ok(())
/// # }
/// ```
///
/// [`api_key`]: ChatAnthropic::api_key
/// [`base_url`]: ChatAnthropic::base_url
/// [`max_tokens`]: ChatAnthropic::max_tokens
/// [`max_retries`]: ChatAnthropic::max_retries
#[derive(Clone)]
pub struct ChatAnthropic {
    settings: Settings,
    base_url: String,
    api_key: Option<String>,
    timeout: Duration,
    max_retries: u32,
    client: Arc<OnceLock<reqwest::Client>>,
}

impl fmt::Debug for ChatAnthropic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatAnthropic")
            .field("model", &self.settings.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("max_tokens", &self.settings.max_tokens)
            .field("temperature", &self.settings.temperature)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish()
    }
}

impl ChatAnthropic {
    /// The model named `model` (`"claude-sonnet-4-5"`), with its key and
    /// server from `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` when set.
    pub fn new(model: impl Into<String>) -> ChatAnthropic {
        ChatAnthropic::with_env(model.into(), |name| std::env::var(name).ok())
    }

    fn with_env(model: String, env: impl Fn(&str) -> Option<String>) -> ChatAnthropic {
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        ChatAnthropic {
            settings: Settings {
                model,
                max_tokens: DEFAULT_MAX_TOKENS,
                temperature: None,
            },
            base_url: set("ANTHROPIC_BASE_URL").unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            api_key: set("ANTHROPIC_API_KEY"),
            timeout: DEFAULT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            client: Arc::default(),
        }
    }

    /// Sends requests to `url` (without `/v1`: the path
    /// `/v1/messages` is added), for a proxy or a server that speaks
    /// Anthropic's API.
    pub fn base_url(mut self, url: impl Into<String>) -> ChatAnthropic {
        self.base_url = url.into();
        self
    }

    /// Authenticates with `key` (sent as `x-api-key`).
    pub fn api_key(mut self, key: impl Into<String>) -> ChatAnthropic {
        self.api_key = Some(key.into());
        self
    }

    /// At most `tokens` tokens in a reply (4096 unless set).
    pub fn max_tokens(mut self, tokens: u32) -> ChatAnthropic {
        self.settings.max_tokens = tokens;
        self
    }

    /// Samples at `temperature` (Anthropic's default unless set).
    pub fn temperature(mut self, temperature: f64) -> ChatAnthropic {
        self.settings.temperature = Some(temperature);
        self
    }

    /// Gives up on a try that waits longer than `timeout` for the answer to
    /// begin, or, once streaming, for its next piece (10 minutes unless
    /// set).
    pub fn timeout(mut self, timeout: Duration) -> ChatAnthropic {
        self.timeout = timeout;
        self
    }

    /// Tries a failed call again at most `retries` times (2 unless set; 0
    /// for none).
    pub fn max_retries(mut self, retries: u32) -> ChatAnthropic {
        self.max_retries = retries;
        self
    }

    fn call(&self) -> Result<Call, ModelError> {
        let key = self.api_key.clone().ok_or_else(|| {
            ModelError::new("anthropic", ModelErrorKind::Auth)
                .with_message("no API key: set ANTHROPIC_API_KEY or call ChatAnthropic::api_key")
        })?;
        let client = match self.client.get() {
            Some(client) => client.clone(),
            None => {
                let client = reqwest::Client::builder()
                    .user_agent(concat!("state-agent/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| {
                        ModelError::new("anthropic", ModelErrorKind::Connection)
                            .with_message("cannot make an HTTP client")
                            .with_source(e)
                    })?;
                self.client.get_or_init(|| client).clone()
            }
        };
        Ok(Call {
            client,
            url: format!("{}/v1/messages", self.base_url.trim_end_matches('/')),
            key,
            timeout: self.timeout,
            retry: RetryPolicy::new(self.max_retries),
        })
    }
}

impl ChatModel for ChatAnthropic {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        let streaming = request.streaming;
        let prepared = wire::request_body(&self.settings, &request, streaming)
            .and_then(|body| Ok((self.call()?, body)));
        let reply = async move {
            let (call, body) = prepared?;
            call.run(body, streaming).await
        };
        Box::pin(futures::stream::once(reply).flat_map(|reply| match reply {
            Ok(chunks) => chunks,
            Err(error) => Box::pin(futures::stream::iter([Err(error)])) as ChunkStream,
        }))
    }
}

/// One call's HTTP: where, with which key, how patiently.
struct Call {
    client: reqwest::Client,
    url: String,
    key: String,
    timeout: Duration,
    retry: RetryPolicy,
}

impl Call {
    /// The reply to `body`: one chunk (non-streamed), or the chunks of its
    /// events.
    async fn run(self, body: Value, streaming: bool) -> Result<ChunkStream, ModelError> {
        let plain_text = wire::streams_plain_text(&body);
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| ModelError::new("anthropic", ModelErrorKind::BadRequest).with_source(e))?;
        if streaming {
            let response = retry::with_retries(self.retry, || self.send(&bytes)).await?;
            return Ok(events(response, StreamState::new(plain_text), self.timeout));
        }
        let chunk = retry::with_retries(self.retry, || async {
            let response = self.send(&bytes).await?;
            let text = within(self.timeout, response.text()).await?;
            let body: Value = serde_json::from_str(&text).map_err(|e| {
                ModelError::new("anthropic", ModelErrorKind::Decode)
                    .with_message(format!("the reply is not JSON: {e}"))
            })?;
            response::from_response(body)
        })
        .await?;
        Ok(Box::pin(futures::stream::iter([Ok::<
            MessageChunk,
            ModelError,
        >(chunk)])))
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
        let mut error = error::from_status(status.as_u16(), &self.redact(&text));
        if let Some(wait) = wait {
            error = error.with_retry_after(wait);
        }
        Err(error)
    }

    /// `text` with the key blanked out, should a server echo it.
    fn redact(&self, text: &str) -> String {
        if self.key.is_empty() {
            text.to_owned()
        } else {
            text.replace(&self.key, "[redacted]")
        }
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
                match stream::on_event(&mut state, &event.event, &event.data) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_gives_key_and_server_and_the_builder_wins() {
        let env = |name: &str| match name {
            "ANTHROPIC_API_KEY" => Some("sk-env".to_owned()),
            "ANTHROPIC_BASE_URL" => Some("http://127.0.0.1:9/".to_owned()),
            _ => None,
        };
        let model = ChatAnthropic::with_env("m".into(), env);
        assert_eq!(model.api_key.as_deref(), Some("sk-env"));
        let call = model.call().unwrap();
        assert_eq!(call.url, "http://127.0.0.1:9/v1/messages");
        let model = ChatAnthropic::with_env("m".into(), env)
            .api_key("sk-mine")
            .base_url("http://127.0.0.1:10");
        assert_eq!(model.call().unwrap().url, "http://127.0.0.1:10/v1/messages");
        assert_eq!(model.call().unwrap().key, "sk-mine");
        let bare = ChatAnthropic::with_env("m".into(), |_| None);
        assert_eq!(bare.base_url, DEFAULT_BASE_URL);
        assert_eq!(bare.call().err().unwrap().kind(), ModelErrorKind::Auth);
    }

    #[test]
    fn debug_hides_the_key() {
        let model = ChatAnthropic::with_env("m".into(), |_| None).api_key("sk-secret-123");
        let shown = format!("{model:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("[redacted]"));
    }
}
