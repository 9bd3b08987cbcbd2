//! A run's `stream_mode`: one mode or a list, each one of the Agent
//! Server's names, refused with a 422 naming it otherwise.

use crate::error::ApiError;
use serde::Deserialize;

/// Every mode the Agent Server names (`RunCreateStateful.stream_mode`).
const MODES: [&str; 9] = [
    "values",
    "messages",
    "messages-tuple",
    "updates",
    "events",
    "debug",
    "custom",
    "tasks",
    "checkpoints",
];

/// `stream_mode` as a request sends it.
#[derive(Deserialize, Debug, Clone)]
#[serde(
    untagged,
    expecting = "a stream mode or a list of them, as \"values\" or [\"values\", \"updates\"]"
)]
pub(crate) enum StreamModeField {
    One(String),
    Many(Vec<String>),
}

/// The modes a run streams, each once, in the order asked for; `values`
/// when none is given (the Agent Server's default).
pub(crate) fn modes(field: Option<&StreamModeField>) -> Result<Vec<String>, ApiError> {
    let asked: Vec<&str> = match field {
        None => vec!["values"],
        Some(StreamModeField::One(mode)) => vec![mode.as_str()],
        Some(StreamModeField::Many(modes)) => modes.iter().map(String::as_str).collect(),
    };
    let mut modes: Vec<String> = Vec::with_capacity(asked.len());
    for mode in asked {
        if !MODES.contains(&mode) {
            return Err(ApiError::invalid_body(format!(
                "stream_mode: \"{mode}\" is not one of {MODES:?}"
            )));
        }
        if !modes.iter().any(|m| m == mode) {
            modes.push(mode.to_owned());
        }
    }
    Ok(modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_checked_and_deduplicated() {
        assert_eq!(modes(None).unwrap(), ["values"]);
        let many = StreamModeField::Many(vec!["updates".into(), "values".into(), "updates".into()]);
        assert_eq!(modes(Some(&many)).unwrap(), ["updates", "values"]);
        // Neither a string nor a list: the error says what goes there.
        let error = serde_json::from_value::<StreamModeField>(serde_json::json!(3)).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("a stream mode or a list of them"),
            "{error}"
        );
        let bogus = StreamModeField::One("bogus".into());
        let error = modes(Some(&bogus)).unwrap_err();
        assert_eq!(error.status(), 422);
        assert!(
            error
                .message()
                .starts_with("stream_mode: \"bogus\" is not one of")
        );
    }
}
