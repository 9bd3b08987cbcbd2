//! An error said in one line with its causes: what the JSON errors (the
//! driver's words tell an operator why the database failed) and the
//! binary's last words both print. One file, compiled into the library
//! and the binary (`mod report;` in each).

use std::error::Error;

/// `error` and its sources, `: `-separated, each said once (drivers often
/// repeat their source's words in their own).
pub(crate) fn chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let words = cause.to_string();
        if !text.contains(&words) {
            text.push_str(": ");
            text.push_str(&words);
        }
        source = cause.source();
    }
    text
}
