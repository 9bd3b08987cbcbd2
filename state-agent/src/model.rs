//! [`ChatModel`]: the trait every provider implements, and [`ChatModelExt`],
//! what a node calls on any model: `invoke`, `stream`, `bind_tools`.

use crate::chunk::MessageChunk;
use crate::error::ModelError;
use crate::structured::Structured;
use crate::tool_spec::{ToolChoice, ToolSpec};
use futures::StreamExt;
use futures::stream::BoxStream;
use state_core::Message;

/// A reply as it streams: chunks, or the error that ended it.
pub type ChunkStream = BoxStream<'static, Result<MessageChunk, ModelError>>;

/// What a model is asked: the conversation, the tools it may call, and
/// whether its tokens are wanted as they come.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The conversation so far, system message first.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Which tool it must call, if any.
    pub tool_choice: Option<ToolChoice>,
    /// Whether anybody reads the tokens as they come (a provider may send
    /// a non-streaming request when not).
    pub streaming: bool,
}

impl ModelRequest {
    /// A request for a reply to `messages`.
    pub fn new(messages: impl Into<Vec<Message>>) -> ModelRequest {
        ModelRequest {
            messages: messages.into(),
            ..ModelRequest::default()
        }
    }
}

/// A chat model (LangChain's `BaseChatModel`): the trait every provider
/// implements. Streaming is the primitive: a reply is the merge of its
/// chunks ([`MessageChunk`]'s `+=`). Call models through
/// [`ChatModelExt`] (`invoke`, `stream`, `bind_tools`), implemented for
/// every `ChatModel`.
pub trait ChatModel: Send + Sync + 'static {
    /// The provider (`"openai"`, `"anthropic"`), as errors and metadata
    /// name it.
    fn provider(&self) -> &str;

    /// The model's name (`"gpt-4o-mini"`).
    fn model(&self) -> &str;

    /// The reply to `request`, as a stream of chunks.
    fn stream_reply(&self, request: ModelRequest) -> ChunkStream;
}

/// What a node calls on any [`ChatModel`].
pub trait ChatModelExt: ChatModel {
    /// The reply to `messages`: an AI message with its text, tool calls,
    /// usage and metadata. Inside a graph's node whose run is streamed in
    /// `StreamMode::MESSAGES`, its tokens reach the stream as they come,
    /// on their own (LangGraph's callbacks), under the reply's id, which
    /// the returned message keeps, so the stream does not send it again.
    fn invoke(
        &self,
        messages: impl Into<Vec<Message>>,
    ) -> impl Future<Output = Result<Message, ModelError>> + Send {
        self.invoke_request(ModelRequest::new(messages))
    }

    /// The reply to `request` (its messages, and tools and a tool choice on
    /// top of those bound), as [`invoke`](ChatModelExt::invoke) gives it;
    /// `request.streaming` is set here (whether a graph's stream listens).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), state_agent::ModelError> {
    /// use state_agent::{ChatModelExt, FakeChatModel, ModelRequest, ToolChoice};
    /// use state_core::Message;
    ///
    /// let model = FakeChatModel::new([Message::ai("No tools, then.")]);
    /// let mut request = ModelRequest::new(vec![Message::human("hi")]);
    /// request.tool_choice = Some(ToolChoice::None);
    /// model.invoke_request(request).await?;
    /// assert_eq!(model.requests()[0].tool_choice, Some(ToolChoice::None));
    /// # Ok(())
    /// # }
    /// ```
    fn invoke_request(
        &self,
        mut request: ModelRequest,
    ) -> impl Future<Output = Result<Message, ModelError>> + Send {
        let listener = state_graph::message_stream();
        request.streaming = listener.is_some();
        let mut chunks = self.stream_reply(request);
        async move {
            let mut reply = MessageChunk::default();
            let mut id: Option<String> = None;
            while let Some(chunk) = chunks.next().await {
                let mut chunk = chunk?;
                if let Some(listener) = &listener {
                    // One id for every chunk: the provider's first, or one
                    // minted before the first chunk.
                    let id = id.get_or_insert_with(|| {
                        chunk
                            .id
                            .clone()
                            .unwrap_or_else(|| format!("lc_run-{}", uuid::Uuid::new_v4()))
                    });
                    chunk.id = Some(id.clone());
                    listener.send(chunk.as_message());
                }
                reply += chunk;
            }
            if let Some(id) = id {
                reply.id = Some(id);
            }
            Ok(reply.into_message())
        }
    }

    /// The reply to `messages`, as a stream of chunks (not sent to a
    /// graph's stream: the caller reads them).
    fn stream(&self, messages: impl Into<Vec<Message>>) -> ChunkStream {
        let mut request = ModelRequest::new(messages);
        request.streaming = true;
        self.stream_reply(request)
    }

    /// This model with its replies parsed into `T` (LangChain's
    /// `with_structured_output`, its `function_calling` method, for every
    /// provider): each call offers one tool, named after `T`, described by
    /// its doc comment, taking `T`'s JSON Schema, and forces the model to
    /// call it; the call's arguments are parsed into `T`.
    /// [`Structured::invoke_raw`] also returns the raw reply and the parse
    /// error as data (LangChain's `include_raw=True`). See [`Structured`].
    fn with_structured_output<T>(self) -> Structured<Self, T>
    where
        Self: Sized,
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        Structured::new(self)
    }

    /// This model with `tools` bound (LangChain's `bind_tools`): each call
    /// offers them to the model.
    fn bind_tools(self, tools: impl IntoIterator<Item = ToolSpec>) -> Bound<Self>
    where
        Self: Sized,
    {
        Bound {
            model: self,
            tools: tools.into_iter().collect(),
            tool_choice: None,
        }
    }
}

impl<M: ChatModel + ?Sized> ChatModelExt for M {}

/// A model with tools bound: see [`ChatModelExt::bind_tools`].
#[derive(Debug, Clone)]
pub struct Bound<M> {
    model: M,
    tools: Vec<ToolSpec>,
    tool_choice: Option<ToolChoice>,
}

impl<M> Bound<M> {
    /// With `choice` of tool forced on every call.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// The tools bound.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }
}

impl<M: ChatModel> ChatModel for Bound<M> {
    fn provider(&self) -> &str {
        self.model.provider()
    }

    fn model(&self) -> &str {
        self.model.model()
    }

    fn stream_reply(&self, mut request: ModelRequest) -> ChunkStream {
        request.tools.extend(self.tools.iter().cloned());
        if request.tool_choice.is_none() {
            request.tool_choice = self.tool_choice.clone();
        }
        self.model.stream_reply(request)
    }
}
