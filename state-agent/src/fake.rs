//! [`FakeChatModel`]: a model that answers from a script, for tests and
//! examples (LangChain's `GenericFakeChatModel`): no network, the same
//! replies every run.

use crate::chunk::MessageChunk;
use crate::error::{ModelError, ModelErrorKind};
use crate::model::{ChatModel, ChunkStream, ModelRequest};
use state_core::{Content, Message};
use std::sync::{Arc, Mutex};

/// A model that answers each call with the next message of its script,
/// streamed in chunks of `chunk_size` characters (its tool calls in the
/// last chunk). What it was asked is kept ([`requests`]). An exhausted
/// script is an error.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_agent::ModelError> {
/// use state_agent::{ChatModelExt, FakeChatModel};
/// use state_core::Message;
///
/// let model = FakeChatModel::new([Message::ai("Hello!")]);
/// let reply = model.invoke(vec![Message::human("hi")]).await?;
/// assert_eq!(reply.text(), "Hello!");
/// assert_eq!(model.requests()[0].messages[0].text(), "hi");
/// # Ok(())
/// # }
/// ```
///
/// [`requests`]: FakeChatModel::requests
#[derive(Debug, Clone)]
pub struct FakeChatModel {
    inner: Arc<Mutex<Script>>,
    chunk_size: usize,
}

#[derive(Debug, Default)]
struct Script {
    replies: std::collections::VecDeque<Message>,
    requests: Vec<ModelRequest>,
}

impl FakeChatModel {
    /// A model answering with `replies`, one per call, in order.
    pub fn new(replies: impl IntoIterator<Item = Message>) -> FakeChatModel {
        FakeChatModel {
            inner: Arc::new(Mutex::new(Script {
                replies: replies.into_iter().collect(),
                requests: Vec::new(),
            })),
            chunk_size: 4,
        }
    }

    /// Streams its text `size` characters at a time (4 by default).
    pub fn chunk_size(mut self, size: usize) -> FakeChatModel {
        self.chunk_size = size.max(1);
        self
    }

    /// What it was asked so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.script().requests.clone()
    }

    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ChatModel for FakeChatModel {
    fn provider(&self) -> &str {
        "fake"
    }

    fn model(&self) -> &str {
        "fake-chat-model"
    }

    fn stream_reply(&self, request: ModelRequest) -> ChunkStream {
        let mut script = self.script();
        script.requests.push(request);
        let Some(reply) = script.replies.pop_front() else {
            let error = ModelError::new("fake", ModelErrorKind::BadRequest)
                .with_message("the script has no reply left");
            return Box::pin(futures::stream::once(async move { Err(error) }));
        };
        Box::pin(futures::stream::iter(
            chunks(reply, self.chunk_size).into_iter().map(Ok),
        ))
    }
}

/// `reply` in chunks: its text `size` characters at a time, then its tool
/// calls, each a whole piece, in the last chunk.
fn chunks(reply: Message, size: usize) -> Vec<MessageChunk> {
    let id = reply.id().map(str::to_owned);
    let mut out = Vec::new();
    match reply.content() {
        Content::Text(text) => {
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(size) {
                out.push(MessageChunk::text(piece.iter().collect::<String>()));
            }
        }
        blocks => out.push(MessageChunk {
            content: Some(blocks.clone()),
            ..MessageChunk::default()
        }),
    }
    let mut last = MessageChunk::default();
    for (index, call) in reply.tool_calls().iter().enumerate() {
        last.tool_call_chunks.push(crate::chunk::ToolCallChunk {
            index: Some(index),
            id: call.id.clone(),
            name: Some(call.name.clone()),
            args: Some(call.args.to_string()),
        });
    }
    last.last = true;
    out.push(last);
    if let Some(id) = id {
        for chunk in &mut out {
            chunk.id = Some(id.clone());
        }
    }
    out
}
