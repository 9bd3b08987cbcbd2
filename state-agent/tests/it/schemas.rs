//! The JSON Schemas `#[tool]` gives the model, pinned: parameters from
//! the signature, descriptions from doc comments, `Option` not required,
//! enums as enums, nested structs inlined.

use serde::Deserialize;
use state_agent::{Tool, schemars, tool};
use state_core::MessagesState;
use state_graph::Ctx;

/// Temperature units.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    Celsius,
    Fahrenheit,
}

/// A range of days.
#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Days {
    /// The first day, 0 for today.
    start: u32,
    /// How many days.
    count: Option<u32>,
}

/// Get the forecast for a city.
///
/// Days are counted from today.
///
/// # Errors
///
/// When the weather service is down: people read this, not the model.
#[tool]
async fn forecast(
    /// The city name.
    city: String,
    /// The units of temperatures; Celsius by default.
    units: Option<Units>,
    /// Which days.
    days: Days,
    /// Cities nearby to include.
    also: Vec<String>,
    _ctx: Ctx,
) -> Result<String, std::io::Error> {
    let _ = (units, days, also);
    Ok(city)
}

/// Takes nothing.
#[tool(name = "now", description = "The current time, as RFC 3339.")]
fn current_time() -> String {
    "2026-01-01T00:00:00Z".into()
}

/// The spec as JSON, its keys sorted: the order of a JSON object's keys
/// depends on serde_json's `preserve_order`, which another crate of the
/// build may turn on.
fn pretty<T: Tool<MessagesState>>(tool: &T) -> String {
    fn sorted(value: serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let map: std::collections::BTreeMap<String, serde_json::Value> =
                    map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
                serde_json::to_value(map).unwrap()
            }
            serde_json::Value::Array(items) => items.into_iter().map(sorted).collect(),
            other => other,
        }
    }
    let spec = sorted(serde_json::to_value(tool.spec()).unwrap());
    serde_json::to_string_pretty(&spec).unwrap()
}

#[test]
fn forecast_schema() {
    insta::assert_snapshot!(pretty(forecast));
}

#[test]
fn a_tool_without_parameters() {
    insta::assert_snapshot!(pretty(current_time));
}
