// A tool is not generic: the model is given one schema.
use state_agent::tool;

/// Echoes.
#[tool]
fn echo<T: serde::de::DeserializeOwned + schemars::JsonSchema + serde::Serialize + Send + 'static>(
    value: T,
) -> T {
    value
}

fn main() {}
