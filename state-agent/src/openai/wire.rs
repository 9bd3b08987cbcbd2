//! What an OpenAI-compatible server answers, read leniently: every field
//! optional, `finish_reason` a plain string, unknown fields ignored, so a
//! compatible server's `finish_reason: ""` or `"eos_token"`, a missing
//! `index` or an extra field never fails a reply (the breakage users of
//! strict typed clients report most).
//!
//! ```
//! use state_agent::openai::wire::ChatCompletionChunk;
//!
//! let chunk: ChatCompletionChunk = serde_json::from_str(
//!     r#"{"id": "c1", "choices": [{"delta": {"content": "Hi"}, "finish_reason": "eos_token"}]}"#,
//! )
//! .unwrap();
//! assert_eq!(chunk.choices[0].finish_reason.as_deref(), Some("eos_token"));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A chat completion (`POST /chat/completions` without `stream`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletion {
    /// The completion's id (`chatcmpl-...`).
    #[serde(default)]
    pub id: Option<String>,
    /// The model that answered.
    #[serde(default)]
    pub model: Option<String>,
    /// The answers; `null` from some compatible servers on failure.
    #[serde(default)]
    pub choices: Option<Vec<Choice>>,
    /// Token usage, as the server sent it.
    #[serde(default)]
    pub usage: Option<Value>,
    /// The backend configuration's fingerprint.
    #[serde(default)]
    pub system_fingerprint: Option<String>,
    /// The service tier that served the request.
    #[serde(default)]
    pub service_tier: Option<String>,
    /// An error some compatible servers put in a 200 answer.
    #[serde(default)]
    pub error: Option<Value>,
}

/// One answer of a [`ChatCompletion`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Choice {
    /// Its place among the answers.
    #[serde(default)]
    pub index: Option<u64>,
    /// The assistant's message.
    #[serde(default)]
    pub message: Option<WireMessage>,
    /// Why it stopped: `stop`, `length`, `tool_calls`, ... or anything a
    /// compatible server says.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Log probabilities, when asked for.
    #[serde(default)]
    pub logprobs: Option<Value>,
}

/// An assistant message as the server sends it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WireMessage {
    /// `assistant`, usually.
    #[serde(default)]
    pub role: Option<String>,
    /// The text (a string; `null` when the model only calls tools).
    #[serde(default)]
    pub content: Option<Value>,
    /// The author's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
    /// A legacy function call.
    #[serde(default)]
    pub function_call: Option<Value>,
    /// The model's refusal, when it refused.
    #[serde(default)]
    pub refusal: Option<Value>,
    /// Audio output.
    #[serde(default)]
    pub audio: Option<Value>,
}

/// A tool call, whole (in a [`WireMessage`]) or a piece of one (in a
/// [`Delta`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WireToolCall {
    /// Which call a streamed piece belongs to.
    #[serde(default)]
    pub index: Option<u64>,
    /// The call's id (only in its first piece, when streamed).
    #[serde(default)]
    pub id: Option<String>,
    /// `function`.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// The function called.
    #[serde(default)]
    pub function: Option<WireFunction>,
}

/// The function of a [`WireToolCall`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WireFunction {
    /// The tool's name (only in the first piece, when streamed).
    #[serde(default)]
    pub name: Option<String>,
    /// The arguments as JSON text (in pieces, when streamed).
    #[serde(default)]
    pub arguments: Option<String>,
}

/// One server-sent event of a streamed chat completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletionChunk {
    /// The completion's id, the same in every chunk.
    #[serde(default)]
    pub id: Option<String>,
    /// The model that answers.
    #[serde(default)]
    pub model: Option<String>,
    /// The pieces; empty in the last chunk that carries `usage`.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub choices: Vec<ChunkChoice>,
    /// Token usage, in the last chunk when `stream_options.include_usage`.
    #[serde(default)]
    pub usage: Option<Value>,
    /// The backend configuration's fingerprint.
    #[serde(default)]
    pub system_fingerprint: Option<String>,
    /// The service tier that serves the request.
    #[serde(default)]
    pub service_tier: Option<String>,
}

/// One answer's piece in a [`ChatCompletionChunk`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChunkChoice {
    /// Which answer.
    #[serde(default)]
    pub index: Option<u64>,
    /// What this piece adds.
    #[serde(default)]
    pub delta: Option<Delta>,
    /// Why it stopped, in the answer's last piece.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Log probabilities, when asked for.
    #[serde(default)]
    pub logprobs: Option<Value>,
}

/// What a streamed piece adds to the assistant's message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Delta {
    /// `assistant`, in the first piece.
    #[serde(default)]
    pub role: Option<String>,
    /// Some text.
    #[serde(default)]
    pub content: Option<String>,
    /// Pieces of tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
    /// A piece of a legacy function call.
    #[serde(default)]
    pub function_call: Option<Value>,
    /// A piece of a refusal.
    #[serde(default)]
    pub refusal: Option<String>,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}
