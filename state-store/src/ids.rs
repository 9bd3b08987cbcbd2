//! Thread ids: which the store accepts. Every public method that takes an
//! id checks it here first (the store's, a thread's, a watcher's).

use crate::error::StoreError;

/// Longest thread id accepted, in bytes (index entries stay small).
const MAX_ID_LEN: usize = 512;

/// Refuses thread ids that cannot be stored faithfully.
pub(crate) fn check_id(id: &str) -> Result<(), StoreError> {
    let reason = if id.is_empty() {
        "a thread id cannot be empty"
    } else if id.len() > MAX_ID_LEN {
        "a thread id is at most 512 bytes"
    } else if id.contains('\0') {
        "a thread id cannot contain a NUL character"
    } else {
        return Ok(());
    };
    let mut shown: String = id.chars().take(40).collect();
    if shown.len() < id.len() {
        shown.push('…');
    }
    Err(StoreError::InvalidThreadId {
        shown: format!("{shown:?}"),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_cannot_be_stored_are_refused_with_a_reason() {
        assert!(check_id("user-42").is_ok());
        assert!(check_id("'; DROP TABLE x; --").is_ok());
        let empty = check_id("").unwrap_err().to_string();
        assert_eq!(empty, "invalid thread id \"\": a thread id cannot be empty");
        let long = check_id(&"x".repeat(513)).unwrap_err().to_string();
        assert!(
            long.contains("at most 512 bytes") && long.contains('…'),
            "{long}"
        );
        assert!(check_id("a\0b").unwrap_err().to_string().contains("NUL"));
    }
}
