//! [`ToolSpec`]: a tool as a model sees it: its name, what it does, and
//! the JSON Schema of its arguments.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as a model sees it (LangChain's `tool_call_schema`, OpenAI's
/// `function`): what `bind_tools` sends. Made by `#[tool]` from a
/// function's signature and doc comments, or by hand.
///
/// ```
/// use serde_json::json;
/// use state_agent::ToolSpec;
///
/// let spec = ToolSpec::new(
///     "get_weather",
///     "Get the current weather for a city.",
///     json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
/// );
/// assert_eq!(spec.name, "get_weather");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model to decide when to call it.
    pub description: String,
    /// The JSON Schema of its arguments (an object).
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool named `name` that does `description`, taking arguments of
    /// the JSON Schema `parameters`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
    ) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// Which tool the model must call, if any (LangChain's `tool_choice`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the default).
    Auto,
    /// The model must call some tool (`"any"` / `"required"`).
    Required,
    /// The model must not call a tool.
    None,
    /// The model must call this tool.
    Tool(String),
}
