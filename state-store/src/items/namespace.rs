//! Namespaces: what a caller may pass ([`IntoNamespace`]), LangGraph's
//! rules for them, how they are stored (labels joined by `.`, which no
//! label may contain) and how they match a prefix or a pattern.

use crate::backend::PrefixRange;
use crate::error::StoreError;

/// A namespace, or a namespace prefix: a list of labels, most general
/// first (LangGraph's `tuple[str, ...]`).
///
/// Implemented for references to arrays, slices and vectors of `&str` or
/// `String` (`&["users", "u-7"]`, `&[]` for none, `&item.namespace`), and
/// for `..`, which means every namespace: `store.list_namespaces(..)`,
/// `store.search_items(..)`.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), state_store::StoreError> {
/// use serde_json::json;
/// let store = state_store::Store::memory();
/// store.put_item(&["users", "u-7"], "prefs", json!({"theme": "dark"})).await?;
/// let ns: Vec<String> = vec!["users".into(), "u-7".into()];
/// assert!(store.get_item(&ns, "prefs").await?.is_some());
/// assert_eq!(store.search_items(..).await?.len(), 1);
/// assert_eq!(store.search_items(&[]).await?.len(), 1);
/// # Ok(())
/// # }
/// ```
pub trait IntoNamespace {
    /// The labels.
    fn into_namespace(self) -> Vec<String>;
}

impl<const N: usize> IntoNamespace for &[&str; N] {
    fn into_namespace(self) -> Vec<String> {
        self.iter().map(|label| (*label).to_owned()).collect()
    }
}

impl IntoNamespace for &[&str] {
    fn into_namespace(self) -> Vec<String> {
        self.iter().map(|label| (*label).to_owned()).collect()
    }
}

impl IntoNamespace for &[String] {
    fn into_namespace(self) -> Vec<String> {
        self.to_vec()
    }
}

impl IntoNamespace for &Vec<String> {
    fn into_namespace(self) -> Vec<String> {
        self.clone()
    }
}

impl IntoNamespace for &Vec<&str> {
    fn into_namespace(self) -> Vec<String> {
        self.iter().map(|label| (*label).to_owned()).collect()
    }
}

impl IntoNamespace for std::ops::RangeFull {
    fn into_namespace(self) -> Vec<String> {
        Vec::new()
    }
}

/// Longest namespace accepted by a put, in bytes once joined with `.`,
/// and longest key: together they stay inside a PostgreSQL index entry.
const MAX_LEN: usize = 1024;

/// LangGraph reserves this root label for its own data.
const RESERVED_ROOT: &str = "langgraph";

/// A namespace as the error messages show it: `["users", "u-7"]`.
pub(crate) fn shown(labels: &[String]) -> String {
    format!("{labels:?}")
}

/// A stored namespace (labels joined by `.`) as the error messages show
/// namespaces.
pub(crate) fn shown_text(text: &str) -> String {
    if text.is_empty() {
        return "[]".to_owned();
    }
    format!("{:?}", text.split('.').collect::<Vec<_>>())
}

fn invalid(labels: &[String], reason: String) -> StoreError {
    StoreError::InvalidNamespace {
        namespace: shown(labels),
        reason,
    }
}

/// Every label is a non-empty string without `.` or NUL (LangGraph's
/// `_validate_namespace_labels`).
pub(crate) fn check_labels(labels: &[String]) -> Result<(), StoreError> {
    for label in labels {
        let reason = if label.is_empty() {
            "a label cannot be empty".to_owned()
        } else if label.contains('.') {
            format!(
                "label {label:?} contains a period ('.'); labels are joined with '.' when stored, so none may contain one"
            )
        } else if label.contains('\0') {
            format!("label {label:?} contains a NUL character")
        } else {
            continue;
        };
        return Err(invalid(labels, reason));
    }
    Ok(())
}

/// An item's namespace, for a put: valid labels, at least one, not under
/// the reserved root (LangGraph's `_validate_namespace`), and not longer
/// than this store keeps.
pub(crate) fn check_for_put(labels: &[String]) -> Result<(), StoreError> {
    if labels.is_empty() {
        return Err(invalid(
            labels,
            "an item's namespace needs at least one label, as [\"users\", \"u-7\"]".to_owned(),
        ));
    }
    check_labels(labels)?;
    if labels[0] == RESERVED_ROOT {
        return Err(invalid(
            labels,
            format!(
                "the root label {RESERVED_ROOT:?} is reserved (LangGraph keeps its own data there)"
            ),
        ));
    }
    if to_text(labels).len() > MAX_LEN {
        return Err(invalid(
            labels,
            format!("a namespace is at most {MAX_LEN} bytes, its labels joined with '.'"),
        ));
    }
    Ok(())
}

/// A key any backend can store: no NUL (PostgreSQL's text cannot hold
/// one); a put also keeps it to 1024 bytes.
pub(crate) fn check_key(labels: &[String], key: &str, put: bool) -> Result<(), StoreError> {
    let reason = if key.contains('\0') {
        "a key cannot contain a NUL character"
    } else if put && key.len() > MAX_LEN {
        "a key is at most 1024 bytes"
    } else {
        return Ok(());
    };
    let mut shown_key: String = key.chars().take(40).collect();
    if shown_key.len() < key.len() {
        shown_key.push('…');
    }
    Err(StoreError::InvalidItem {
        what: format!("item {shown_key:?} in namespace {}", shown(labels)),
        reason: reason.to_owned(),
    })
}

/// The stored form: labels joined by `.` (LangGraph's `prefix` column).
pub(crate) fn to_text(labels: &[String]) -> String {
    labels.join(".")
}

/// The labels of a stored namespace; `None` if it is not one (an empty
/// label).
pub(crate) fn from_text(text: &str) -> Option<Vec<String>> {
    let labels: Vec<String> = text.split('.').map(str::to_owned).collect();
    labels
        .iter()
        .all(|label| !label.is_empty())
        .then_some(labels)
}

/// The stored namespaces equal to `labels` or under them; `None` for no
/// label (every namespace).
pub(crate) fn prefix_range(labels: &[String]) -> Option<PrefixRange> {
    if labels.is_empty() {
        return None;
    }
    let exact = to_text(labels);
    Some(PrefixRange {
        dot: format!("{exact}."),
        end: format!("{exact}/"),
        exact,
    })
}

/// Whether `labels` starts (or, for `suffix`, ends) with `pattern`, where
/// a `"*"` label matches any one label (LangGraph's `_does_match`).
pub(crate) fn matches(labels: &[String], pattern: &[String], suffix: bool) -> bool {
    if labels.len() < pattern.len() {
        return false;
    }
    let part = if suffix {
        &labels[labels.len() - pattern.len()..]
    } else {
        &labels[..pattern.len()]
    };
    part.iter()
        .zip(pattern)
        .all(|(label, wanted)| wanted == "*" || label == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(labels: &[&str]) -> Vec<String> {
        labels.into_namespace()
    }

    #[test]
    fn labels_follow_langgraphs_rules_with_messages_that_name_them() {
        assert!(check_labels(&ns(&["users", "u-7", "%_*"])).is_ok());
        assert!(check_labels(&[]).is_ok());
        let dot = check_labels(&ns(&["users", "u.7"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            dot,
            "invalid namespace [\"users\", \"u.7\"]: label \"u.7\" contains a period ('.'); labels are joined with '.' when stored, so none may contain one"
        );
        let empty = check_labels(&ns(&["users", ""])).unwrap_err().to_string();
        assert!(empty.ends_with("a label cannot be empty"), "{empty}");
        assert!(
            check_labels(&ns(&["a\0"]))
                .unwrap_err()
                .to_string()
                .contains("NUL")
        );
    }

    #[test]
    fn a_put_needs_a_namespace_outside_the_reserved_root() {
        let none = check_for_put(&[]).unwrap_err().to_string();
        assert!(none.contains("at least one label"), "{none}");
        let reserved = check_for_put(&ns(&["langgraph", "x"]))
            .unwrap_err()
            .to_string();
        assert!(reserved.contains("\"langgraph\" is reserved"), "{reserved}");
        assert!(check_for_put(&ns(&["users", "langgraph"])).is_ok());
        assert!(check_for_put(&["x".repeat(1025)]).is_err());
    }

    #[test]
    fn keys_cannot_hold_nul_and_puts_keep_them_short() {
        assert!(check_key(&[], "", true).is_ok());
        let nul = check_key(&ns(&["a"]), "k\0", false)
            .unwrap_err()
            .to_string();
        assert_eq!(
            nul,
            "item \"k\\0\" in namespace [\"a\"]: a key cannot contain a NUL character"
        );
        assert!(check_key(&[], &"k".repeat(1025), false).is_ok());
        assert!(check_key(&[], &"k".repeat(1025), true).is_err());
    }

    #[test]
    fn namespaces_are_shown_as_lists_of_labels() {
        assert_eq!(shown(&ns(&["users", "u-7"])), "[\"users\", \"u-7\"]");
        assert_eq!(shown_text("users.u-7"), "[\"users\", \"u-7\"]");
        assert_eq!(shown_text(""), "[]");
    }

    #[test]
    fn stored_text_round_trips() {
        let labels = ns(&["users", "u-7"]);
        assert_eq!(to_text(&labels), "users.u-7");
        assert_eq!(from_text("users.u-7"), Some(labels));
        assert_eq!(from_text("users..x"), None);
        assert_eq!(from_text(""), None);
    }

    #[test]
    fn patterns_match_whole_labels_and_stars_any_one() {
        let labels = ns(&["a", "b", "c"]);
        assert!(matches(&labels, &ns(&["a", "b"]), false));
        assert!(matches(&labels, &ns(&["a", "*", "c"]), false));
        assert!(!matches(&labels, &ns(&["a", "c"]), false));
        assert!(matches(&labels, &ns(&["b", "c"]), true));
        assert!(matches(&labels, &ns(&["*", "c"]), true));
        assert!(!matches(&labels, &ns(&["b"]), true));
        assert!(!matches(&labels, &ns(&["a", "b", "c", "d"]), false));
        assert!(matches(&labels, &[], true));
    }
}
