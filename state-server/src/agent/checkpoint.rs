//! Checkpoint ids: LangGraph names a thread's states by checkpoint id (a
//! UUID); we name them by step. The state after step `seq` of a thread is
//! checkpoint `00000000-0000-6000-8000-<seq in 12 hex digits>` (version 6
//! and variant bits set, as LangGraph's `uuid6` ids; step 3 is
//! `00000000-0000-6000-8000-000000000003`): UUID-shaped, so clients that
//! check the form accept it, and read back without a lookup. Ids are per
//! thread, as LangGraph's are (a fork shares its source's up to the fork).
//! The state before the first step is step 0's.

use crate::error::ApiError;
use serde_json::Value;

/// The checkpoint id of the state after step `seq`.
pub(crate) fn id(seq: u64) -> String {
    format!(
        "{:08x}-0000-6000-8000-{:012x}",
        seq >> 48,
        seq & 0xffff_ffff_ffff
    )
}

/// The step a checkpoint id names, if it is one of ours.
pub(crate) fn parse(id: &str) -> Option<u64> {
    let bytes = id.as_bytes();
    let hex = |s: &[u8]| s.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if bytes.len() != 36
        || !hex(&bytes[..8])
        || &bytes[8..24] != b"-0000-6000-8000-"
        || !hex(&bytes[24..])
    {
        return None;
    }
    let high = u64::from_str_radix(&id[..8], 16).ok()?;
    let low = u64::from_str_radix(&id[24..], 16).ok()?;
    high.checked_mul(1 << 48)?.checked_add(low)
}

/// A checkpoint as a request names it: its id, `{"checkpoint_id": ..}` or
/// `{"configurable": {"checkpoint_id": ..}}`; `None` when it names none,
/// an object without an id included: LangGraph reads such a checkpoint
/// (RemoteGraph's `get_state` sends `{"thread_id": ..}`) as the latest.
pub(crate) fn named(field: &str, value: Option<&Value>) -> Result<Option<u64>, ApiError> {
    let id = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(id)) => Some(id.as_str()),
        Some(Value::Object(map)) => {
            let named = map
                .get("checkpoint_id")
                .or_else(|| map.get("configurable").and_then(|c| c.get("checkpoint_id")));
            match named {
                None | Some(Value::Null) => return Ok(None),
                Some(id) => id.as_str(),
            }
        }
        Some(_) => None,
    };
    let Some(id) = id else {
        return Err(ApiError::invalid_body(format!(
            "{field}: expected a checkpoint id or {{\"checkpoint_id\": ..}}"
        )));
    };
    parse(id)
        .map(Some)
        .ok_or_else(|| ApiError::missing(format!("Checkpoint {id} not found")))
}

/// The checkpoint the first of `fields` that names one names (a request's
/// `checkpoint_id`, then its `checkpoint`, say); `None` when none does.
/// Each is read as [`named`] reads it.
pub(crate) fn first_named(fields: &[(&str, Option<&Value>)]) -> Result<Option<u64>, ApiError> {
    for (field, value) in fields {
        if let Some(seq) = named(field, *value)? {
            return Ok(Some(seq));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_steps_both_ways() {
        assert_eq!(id(3), "00000000-0000-6000-8000-000000000003");
        for seq in [0, 1, 255, 1 << 40, (1 << 48) - 1, 1 << 48, u64::MAX] {
            assert_eq!(parse(&id(seq)), Some(seq), "{seq}");
            assert!(uuid::Uuid::parse_str(&id(seq)).is_ok());
        }
        for other in [
            "",
            "1f1ea4ee-9854-6729-8003-d5fbd6f4b086",
            "00000000-0000-6000-8000-00000000000G",
            "00000000-0000-6000-8000-0000000000003",
            "00000000-0000-6000-8000-00000000000A",
            "ffffffff-0000-6000-8000-000000000000",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
