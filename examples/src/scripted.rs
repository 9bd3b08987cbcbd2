//! What the examples' scripted models share: a reply, decided by rule,
//! streamed as a provider streams it. Each model (`react_agent`'s, GAIA's,
//! OHMind's) implements `state_agent::ChatModel` itself: it reads the
//! request (the conversation, the tools offered) and decides its reply;
//! [`stream`] sends that reply in chunks, so that a graph run in
//! `StreamMode::MESSAGES` shows its tokens as they come, and their merge
//! is exactly the reply.

use futures::StreamExt;
use serde_json::{Map, json};
use state_agent::{ChunkStream, MessageChunk, ModelRequest, ToolCallChunk, Usage};
use state_core::Message;
use std::time::Duration;

/// `reply` as a provider streams it: a chunk per word, then each tool
/// call (its id and name, then its arguments' JSON in two pieces), then
/// the last chunk with `response_metadata` (`model_name`, the
/// `finish_reason`) and a rough token count (four characters a token) of
/// what the model read and wrote. Every chunk carries the reply's id.
pub fn chunks(model: &str, reply: &Message, request: &ModelRequest) -> Vec<MessageChunk> {
    let mut out: Vec<MessageChunk> = reply
        .text()
        .split_inclusive(' ')
        .map(MessageChunk::text)
        .collect();
    for (i, call) in reply.tool_calls().iter().enumerate() {
        let args = call.args.to_string();
        let cut = args.char_indices().nth(args.chars().count() / 2);
        let (a, b) = args.split_at(cut.map_or(0, |(at, _)| at));
        let call_id = call.id.clone().unwrap_or_default();
        out.push(MessageChunk::tool_call(
            ToolCallChunk::start(i, call_id, call.name.as_str()).args(a),
        ));
        out.push(MessageChunk::tool_call(ToolCallChunk::more(i).args(b)));
    }
    let read: usize = request.messages.iter().map(|m| m.text().len()).sum();
    let written = reply.text().len() + reply.tool_calls().len() * 16;
    let (input_tokens, output_tokens) = (read.div_ceil(4) as u64, written.div_ceil(4) as u64);
    let mut last = MessageChunk::default().with_usage(Usage {
        input_tokens,
        output_tokens,
        total_tokens: input_tokens + output_tokens,
        ..Usage::default()
    });
    let finish = if reply.tool_calls().is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut metadata = Map::new();
    metadata.insert("model_name".into(), json!(model));
    metadata.insert("finish_reason".into(), json!(finish));
    last.response_metadata = metadata;
    last.last = true;
    out.push(last);
    if let Some(id) = reply.id() {
        for chunk in &mut out {
            chunk.id = Some(id.to_owned());
        }
    }
    out
}

/// [`chunks`] as a model's stream, each chunk after `delay` if one is
/// given (so that a person sees the tokens arrive).
pub fn stream(
    model: &str,
    reply: &Message,
    request: &ModelRequest,
    delay: Option<Duration>,
) -> ChunkStream {
    let chunks = futures::stream::iter(chunks(model, reply, request));
    match delay {
        None => Box::pin(chunks.map(Ok)),
        Some(delay) => Box::pin(chunks.then(move |chunk| async move {
            tokio::time::sleep(delay).await;
            Ok(chunk)
        })),
    }
}
