//! Anthropic's Messages API: [`ChatAnthropic`] (LangChain's
//! `langchain_anthropic.ChatAnthropic`).
//!
//! Anthropic keeps no Rust SDK, so the HTTP is reqwest's (the client
//! async-openai builds on) and the server-sent events eventsource-stream's;
//! the wire format is read leniently from JSON (an event type, a block type
//! or a field Anthropic adds later is ignored, never a failed reply). The
//! conversion both ways is langchain-anthropic's, pinned against its own
//! output: `wire.rs` writes the request, `response.rs` reads a reply,
//! `stream.rs` reads a streamed one event at a time, `error.rs` reads
//! failures.

mod error;
mod response;
mod stream;
mod transport;
mod wire;

use crate::error::{ModelError, ModelErrorKind};
use crate::model::{ChatModel, ChunkStream, ModelRequest};
use futures::StreamExt;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use transport::Call;
use wire::Settings;

/// Where requests go when neither [`ChatAnthropic::base_url`] nor
/// `ANTHROPIC_BASE_URL` says otherwise.
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
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
        if reqwest::header::HeaderValue::from_str(&key).is_err() {
            return Err(ModelError::new("anthropic", ModelErrorKind::Auth)
                .with_message("the API key has a character an HTTP header cannot carry"));
        }
        let client = match self.client.get() {
            Some(client) => client.clone(),
            None => {
                let client = crate::http_client::client("anthropic")?;
                self.client.get_or_init(|| client).clone()
            }
        };
        Ok(Call {
            client,
            url: format!("{}/v1/messages", self.base_url.trim_end_matches('/')),
            key,
            timeout: self.timeout,
            max_retries: self.max_retries,
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
