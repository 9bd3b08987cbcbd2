//! [`ChatOpenAI`]: OpenAI's Chat Completions, and any server that speaks
//! the protocol through [`ChatOpenAI::base_url`]: Ollama, vLLM, llama.cpp's
//! server, LM Studio, Groq, Together, DeepSeek.
//!
//! Built on the `async-openai` client (requests, the SSE framing, the key
//! kept secret); replies are read into our own lenient types ([`wire`]) and
//! converted by pure functions ([`convert`]) pinned against
//! `langchain-openai`'s converters.

pub mod convert;
mod transport;
pub mod wire;

use crate::chunk::MessageChunk;
use crate::error::{ModelError, ModelErrorKind};
use crate::model::{ChatModel, ChunkStream, ModelRequest};
use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::middleware::ReqwestService;
use convert::{PROVIDER, StreamState, WireOptions, from_response, to_wire};
use futures::stream::{self, BoxStream, StreamExt};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use transport::{Policy, Transport, from_openai_error};
use wire::{ChatCompletion, ChatCompletionChunk};

/// OpenAI's API, the default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A chat model behind OpenAI's Chat Completions API (LangChain's
/// `ChatOpenAI`): OpenAI itself, or any compatible server at
/// [`base_url`](ChatOpenAI::base_url).
///
/// - The key: [`api_key`](ChatOpenAI::api_key), else the `OPENAI_API_KEY`
///   environment variable, read at the first call. OpenAI's own API needs
///   one; a compatible server without keys gets none. The key is never in
///   an error or in `Debug` output.
/// - A call that does not stream (an [`invoke`] outside a streamed graph
///   run) asks for the whole reply; otherwise the reply streams, its usage
///   included when [`stream_usage`](ChatOpenAI::stream_usage) is on (by
///   default only for OpenAI's own API, as in LangChain: compatible servers
///   may reject `stream_options`).
/// - 429 (after its `Retry-After`), 5xx, timeouts and connection errors
///   are retried, [`max_retries`](ChatOpenAI::max_retries) times (2), with
///   backoff, only before a reply starts to stream. Each attempt has
///   [`timeout`](ChatOpenAI::timeout) (600 s, the OpenAI SDK's) to answer,
///   and a streamed reply as long between two chunks. Dropping the call (or
///   its stream) closes the connection.
///
/// ```no_run
/// # async fn run() -> Result<(), state_agent::ModelError> {
/// use state_agent::ChatModelExt;
/// use state_agent::openai::ChatOpenAI;
/// use state_core::Message;
///
/// let model = ChatOpenAI::new("llama3.2")
///     .base_url("http://127.0.0.1:11434/v1")   // Ollama
///     .temperature(0.0);
/// let reply = model.invoke(vec![Message::human("Hi!")]).await?;
/// println!("{}", reply.text());
/// # Ok(())
/// # }
/// ```
///
/// [`invoke`]: crate::ChatModelExt::invoke
#[derive(Clone)]
pub struct ChatOpenAI {
    settings: Arc<Settings>,
    /// The client, made at the first call from the settings (a builder
    /// method starts a new one).
    client: Arc<OnceLock<Made>>,
}

/// The client, or why it could not be made.
type Made = Result<Client<OpenAIConfig>, (ModelErrorKind, String)>;

#[derive(Clone)]
struct Settings {
    model: String,
    base_url: Option<String>,
    api_key: Option<Arc<str>>,
    temperature: Option<f64>,
    max_tokens: Option<u32>,
    timeout: Duration,
    max_retries: u32,
    stream_usage: Option<bool>,
}

impl ChatOpenAI {
    /// The model `model` (`"gpt-4o-mini"`) on OpenAI's API, until
    /// [`base_url`](ChatOpenAI::base_url) says otherwise.
    pub fn new(model: impl Into<String>) -> ChatOpenAI {
        ChatOpenAI {
            settings: Arc::new(Settings {
                model: model.into(),
                base_url: None,
                api_key: None,
                temperature: None,
                max_tokens: None,
                timeout: Duration::from_secs(600),
                max_retries: 2,
                stream_usage: None,
            }),
            client: Arc::default(),
        }
    }

    fn set(mut self, change: impl FnOnce(&mut Settings)) -> ChatOpenAI {
        change(Arc::make_mut(&mut self.settings));
        self.client = Arc::default();
        self
    }

    /// The server's base URL, up to the `/chat/completions` path
    /// (`http://127.0.0.1:11434/v1` for Ollama, `http://127.0.0.1:8000/v1`
    /// for vLLM). OpenAI's ([`DEFAULT_BASE_URL`]) by default.
    pub fn base_url(self, url: impl Into<String>) -> ChatOpenAI {
        let url = url.into().trim_end_matches('/').to_owned();
        self.set(|s| s.base_url = Some(url))
    }

    /// The API key, sent as `Authorization: Bearer ...`. Without one, the
    /// `OPENAI_API_KEY` environment variable's.
    pub fn api_key(self, key: impl Into<String>) -> ChatOpenAI {
        let key: Arc<str> = key.into().into();
        self.set(|s| s.api_key = Some(key))
    }

    /// The sampling temperature (the server's default when unset).
    pub fn temperature(self, temperature: f64) -> ChatOpenAI {
        self.set(|s| s.temperature = Some(temperature))
    }

    /// The most tokens a reply may have (sent as `max_completion_tokens`).
    pub fn max_tokens(self, max_tokens: u32) -> ChatOpenAI {
        self.set(|s| s.max_tokens = Some(max_tokens))
    }

    /// How long one attempt may wait for the answer (a whole reply, or a
    /// stream's head), and a stream between two chunks. 600 s by default.
    pub fn timeout(self, timeout: Duration) -> ChatOpenAI {
        self.set(|s| s.timeout = timeout)
    }

    /// How many times a failed attempt is tried again, when trying again
    /// can help (rate limits, server errors, timeouts, broken
    /// connections). 2 by default; 0 for none.
    pub fn max_retries(self, retries: u32) -> ChatOpenAI {
        self.set(|s| s.max_retries = retries)
    }

    /// Whether a streamed reply ends with its token usage
    /// (`stream_options: {"include_usage": true}`). By default on for
    /// OpenAI's own API and off for any other base URL, as in LangChain:
    /// turn it on for a compatible server that supports it (vLLM, Ollama,
    /// llama.cpp's server do).
    pub fn stream_usage(self, on: bool) -> ChatOpenAI {
        self.set(|s| s.stream_usage = Some(on))
    }

    fn client(&self) -> Result<&Client<OpenAIConfig>, ModelError> {
        self.client
            .get_or_init(|| {
                build_client(&self.settings)
                    .map_err(|e| (e.kind(), e.message().unwrap_or_default().to_owned()))
            })
            .as_ref()
            .map_err(|(kind, message)| ModelError::new(PROVIDER, *kind).with_message(message))
    }

    /// The key the calls send: the one given, else `OPENAI_API_KEY`'s.
    fn key(settings: &Settings) -> Option<Arc<str>> {
        settings.api_key.clone().or_else(|| {
            std::env::var("OPENAI_API_KEY")
                .ok()
                .filter(|k| !k.is_empty())
                .map(Into::into)
        })
    }
}

impl fmt::Debug for ChatOpenAI {
    /// The settings; the key only as whether there is one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.settings;
        f.debug_struct("ChatOpenAI")
            .field("model", &s.model)
            .field(
                "base_url",
                &s.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL),
            )
            .field("api_key", &s.api_key.as_ref().map(|_| "[redacted]"))
            .field("temperature", &s.temperature)
            .field("max_tokens", &s.max_tokens)
            .field("timeout", &s.timeout)
            .field("max_retries", &s.max_retries)
            .field("stream_usage", &s.stream_usage)
            .finish()
    }
}

/// The client: reqwest over rustls with ring (set on this client, not
/// installed as the process's default) and the system's certificates,
/// async-openai on it, our transport under it.
fn build_client(settings: &Settings) -> Result<Client<OpenAIConfig>, ModelError> {
    let key = ChatOpenAI::key(settings);
    let base_url = settings.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
    if key.is_none() && settings.base_url.is_none() {
        return Err(ModelError::new(PROVIDER, ModelErrorKind::Auth).with_message(
            "no API key: call .api_key(..) or set OPENAI_API_KEY (only a custom base_url may go without)",
        ));
    }
    if let Some(key) = &key
        && reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err()
    {
        return Err(ModelError::new(PROVIDER, ModelErrorKind::Auth)
            .with_message("the API key has a character an HTTP header cannot carry"));
    }
    let http = crate::http_client::client(PROVIDER)?;
    let config = OpenAIConfig::new()
        .with_api_base(base_url)
        .with_api_key(key.as_deref().unwrap_or_default());
    let transport = Transport {
        http: ReqwestService::new(http.clone()),
        policy: Policy {
            max_retries: settings.max_retries,
            timeout: settings.timeout,
            secret: key,
        },
    };
    Ok(Client::build(http, config).with_http_service(transport))
}

impl ChatModel for ChatOpenAI {
    fn provider(&self) -> &str {
        PROVIDER
    }

    fn model(&self) -> &str {
        &self.settings.model
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        let model = self.clone();
        let settings = &self.settings;
        let streaming = request.streaming;
        let options = {
            let mut o = WireOptions::new(settings.model.clone());
            o.temperature = settings.temperature;
            o.max_tokens = settings.max_tokens;
            o.stream = streaming;
            o.stream_usage = settings.stream_usage.unwrap_or(settings.base_url.is_none());
            o
        };
        let body = to_wire(
            &request.messages,
            &request.tools,
            request.tool_choice.as_ref(),
            &options,
        );
        let reply = async move {
            let client = model.client()?;
            let secret = model
                .settings
                .api_key
                .clone()
                .or_else(|| ChatOpenAI::key(&model.settings));
            let scrub = move |e| from_openai_error(e, secret.as_deref());
            if !streaming {
                let response: ChatCompletion =
                    client.chat().create_byot(body).await.map_err(&scrub)?;
                let message = from_response(&response)?;
                return Ok(stream::iter([Ok(MessageChunk::from_message(message))]).boxed());
            }
            let events = client
                .chat()
                .create_stream_byot::<_, ChatCompletionChunk>(body)
                .await
                .map_err(&scrub)?;
            Ok(chunks(events, model.settings.timeout, scrub))
        };
        Box::pin(
            stream::once(reply)
                .map(|started: Result<ChunkStream, ModelError>| match started {
                    Ok(chunks) => chunks,
                    Err(error) => stream::iter([Err(error)]).boxed(),
                })
                .flatten(),
        )
    }
}

type Events = BoxStream<'static, Result<ChatCompletionChunk, async_openai::error::OpenAIError>>;

/// A stream's events as chunks, each within `gap` of the one before, and
/// an empty last chunk when the server ends it (`[DONE]`).
fn chunks(
    events: Events,
    gap: Duration,
    scrub: impl Fn(async_openai::error::OpenAIError) -> ModelError + Send + Sync + 'static,
) -> ChunkStream {
    struct Reading<F> {
        events: Events,
        state: StreamState,
        scrub: F,
        done: bool,
    }
    let reading = Reading {
        events,
        state: StreamState::new(),
        scrub,
        done: false,
    };
    Box::pin(stream::unfold(reading, move |mut r| async move {
        loop {
            if r.done {
                return None;
            }
            let next = match tokio::time::timeout(gap, r.events.next()).await {
                Err(_) => {
                    r.done = true;
                    let error = ModelError::new(PROVIDER, ModelErrorKind::Timeout)
                        .with_message(format!("no chunk within {gap:?} (the model's timeout)"));
                    return Some((Err(error), r));
                }
                Ok(next) => next,
            };
            match next {
                None => {
                    r.done = true;
                    let last = MessageChunk {
                        last: true,
                        ..MessageChunk::default()
                    };
                    return Some((Ok(last), r));
                }
                Some(Err(error)) => {
                    r.done = true;
                    let error = (r.scrub)(error);
                    return Some((Err(error), r));
                }
                Some(Ok(event)) => {
                    if let Some(chunk) = r.state.on_chunk(event) {
                        return Some((Ok(chunk), r));
                    }
                }
            }
        }
    }))
}
