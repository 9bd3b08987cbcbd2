//! Structured output, for every provider (LangChain's default
//! `with_structured_output`): the model is made to call one tool whose
//! arguments are the wanted type's JSON Schema, and the call's arguments
//! are parsed into the type.

use crate::error::{ModelError, ModelErrorKind};
use crate::model::{ChatModel, ChatModelExt, ModelRequest};
use crate::tool_spec::{ToolChoice, ToolSpec};
use serde::de::DeserializeOwned;
use serde_json::Value;
use state_core::Message;
use std::marker::PhantomData;

/// A model whose replies are parsed into `T`: see
/// [`ChatModelExt::with_structured_output`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_agent::ModelError> {
/// use serde::Deserialize;
/// use serde_json::json;
/// use state_agent::{ChatModelExt, FakeChatModel};
/// use state_core::{Message, ToolCall};
///
/// /// A city's weather.
/// #[derive(Debug, Deserialize, schemars::JsonSchema)]
/// struct Weather {
///     /// The city.
///     city: String,
///     /// Degrees Celsius.
///     celsius: f64,
/// }
///
/// let model = FakeChatModel::new([Message::ai("").with_tool_calls([
///     ToolCall::new("Weather", json!({"city": "Oslo", "celsius": 7.5})).with_id("c1"),
/// ])]);
/// let weather: Weather = model
///     .clone()
///     .with_structured_output::<Weather>()
///     .invoke(vec![Message::human("Oslo's weather?")])
///     .await?;
/// assert_eq!(weather.city, "Oslo");
/// // The model was offered one tool, Weather, and made to call it.
/// let asked = &model.requests()[0];
/// assert_eq!(asked.tools[0].name, "Weather");
/// assert_eq!(asked.tools[0].description, "A city's weather.");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Structured<M, T> {
    model: M,
    tool: ToolSpec,
    _output: PhantomData<fn() -> T>,
}

/// What [`Structured::invoke_raw`] returns (LangChain's `include_raw=True`):
/// the model's reply, what it parsed into, and the parse error as data.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_agent::ModelError> {
/// use state_agent::{ChatModelExt, FakeChatModel, ModelErrorKind};
/// use state_core::Message;
///
/// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
/// struct Answer {
///     value: i64,
/// }
///
/// // The model answers in prose instead of calling the tool.
/// let model = FakeChatModel::new([Message::ai("It is 4.")]);
/// let reply = model.with_structured_output::<Answer>().invoke_raw(vec![Message::human("2 + 2?")]).await?;
/// assert!(reply.parsed.is_none());
/// assert_eq!(reply.raw.text(), "It is 4.");
/// assert_eq!(reply.parsing_error.unwrap().kind(), ModelErrorKind::Parse);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct StructuredReply<T> {
    /// The model's reply as it came.
    pub raw: Message,
    /// The value, when the reply had one that fits.
    pub parsed: Option<T>,
    /// Why there is no value, when there is none.
    pub parsing_error: Option<ModelError>,
}

impl<M: ChatModel, T: DeserializeOwned + schemars::JsonSchema> Structured<M, T> {
    pub(crate) fn new(model: M) -> Structured<M, T> {
        Structured {
            model,
            tool: tool_for::<T>(),
            _output: PhantomData,
        }
    }

    /// The tool the model is made to call: `T`'s name, its doc comment, and
    /// its JSON Schema.
    pub fn tool(&self) -> &ToolSpec {
        &self.tool
    }

    /// The reply to `messages`, parsed into `T`. A reply without the call,
    /// or whose arguments do not fit `T`, is an error of kind
    /// [`ModelErrorKind::Parse`]; so is a failed call's error, as it was.
    pub async fn invoke(&self, messages: impl Into<Vec<Message>>) -> Result<T, ModelError> {
        let reply = self.invoke_raw(messages).await?;
        match (reply.parsed, reply.parsing_error) {
            (Some(value), _) => Ok(value),
            (None, Some(error)) => Err(error),
            (None, None) => Err(self.error("no value")),
        }
    }

    /// The reply to `messages`, with what it parsed into or why it did not
    /// (LangChain's `include_raw=True`): only a failed call is an `Err`.
    pub async fn invoke_raw(
        &self,
        messages: impl Into<Vec<Message>>,
    ) -> Result<StructuredReply<T>, ModelError> {
        let mut request = ModelRequest::new(messages);
        request.tools = vec![self.tool.clone()];
        request.tool_choice = Some(ToolChoice::Tool(self.tool.name.clone()));
        let raw = self.model.invoke_request(request).await?;
        let (parsed, parsing_error) = match self.parse(&raw) {
            Ok(value) => (Some(value), None),
            Err(error) => (None, Some(error)),
        };
        Ok(StructuredReply {
            raw,
            parsed,
            parsing_error,
        })
    }

    /// The value in `reply`: the arguments of its first call of the tool.
    pub fn parse(&self, reply: &Message) -> Result<T, ModelError> {
        let name = &self.tool.name;
        if let Some(call) = reply.tool_calls().iter().find(|c| &c.name == name) {
            return serde_json::from_value::<T>(call.args.clone()).map_err(|e| {
                self.error(format!("the arguments of {name} do not fit: {e}"))
                    .with_source(e)
            });
        }
        let invalid = reply
            .extra()
            .get("invalid_tool_calls")
            .and_then(Value::as_array)
            .and_then(|calls| {
                calls
                    .iter()
                    .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
            });
        match invalid {
            Some(call) => Err(self.error(format!(
                "the arguments of {name} are not JSON: {}",
                call.get("args").and_then(Value::as_str).unwrap_or_default()
            ))),
            None => Err(self.error(format!("the reply does not call {name}"))),
        }
    }

    fn error(&self, message: impl Into<String>) -> ModelError {
        ModelError::new(self.model.provider(), ModelErrorKind::Parse).with_message(message)
    }
}

/// The tool for `T`: its schema's title as the name, its description (the
/// doc comment) as the description, the rest as the parameters.
fn tool_for<T: schemars::JsonSchema>() -> ToolSpec {
    let schema = schemars::schema_for!(T);
    let mut parameters = schema.to_value();
    let mut name = T::schema_name().into_owned();
    let mut description = String::new();
    if let Value::Object(fields) = &mut parameters {
        fields.remove("$schema");
        if let Some(Value::String(title)) = fields.remove("title") {
            name = title;
        }
        if let Some(Value::String(text)) = fields.remove("description") {
            description = text;
        }
    }
    ToolSpec::new(name, description, parameters)
}
